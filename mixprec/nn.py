"""``tf.nn``: activations and (later) losses' building blocks."""

from mixprec import _core
from mixprec._ops import _int_axis

relu = _core.relu
sigmoid = _core.sigmoid
tanh = _core.tanh
softplus = _core.softplus
softmax = _core.softmax
log_softmax = _core.log_softmax


def elu(features, name=None):
    return _core.elu(features, alpha=1.0)


def leaky_relu(features, alpha=0.2, name=None):
    return _core.leaky_relu(features, alpha=float(alpha))


def gelu(features, approximate=False, name=None):
    return _core.gelu(features, approximate=bool(approximate))


def relu6(features, name=None):
    return _core.minimum(_core.relu(features), 6)


def silu(features, beta=1.0, name=None):
    x = _core.convert_to_tensor(features)
    return x * _core.sigmoid(x * beta if beta != 1.0 else x)


swish = silu


def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Per-example -log softmax(logits)[labels], from one fused, stable op."""
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")
    return _core.sparse_softmax_cross_entropy_with_logits(labels, logits)


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    """Per-example -sum(labels * log_softmax(logits)) over ``axis``; the other dimensions
    keep their order."""
    logits = _core.convert_to_tensor(logits)
    if axis != -1:
        rank = logits.ndim
        axis = _int_axis(axis, "softmax_cross_entropy_with_logits")
        if not -rank <= axis < rank:
            raise _core.InvalidArgumentError(
                "softmax_cross_entropy_with_logits: axis %d is out of range [%d, %d) for "
                "logits of rank %d" % (axis, -rank, rank, rank))
        axis %= rank
        if axis != rank - 1:  # moved to the end, not swapped with it (TensorFlow's order)
            perm = [d for d in range(rank) if d != axis] + [axis]
            logits = _core.transpose(logits, perm)
            labels = _core.transpose(labels, perm)
    return _core.softmax_cross_entropy_with_logits(labels, logits)


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    x = _core.convert_to_tensor(logits)
    z = _core.cast(_core.convert_to_tensor(labels), x.dtype)
    return _core.relu(x) - x * z + _core.log1p(_core.exp(-_core.abs(x)))


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """sum(per_example_loss * sample_weight) / global_batch_size (the batch size summed over
    replicas; defaults to this replica's batch times the number of replicas)."""
    losses = _core.convert_to_tensor(per_example_loss)
    if sample_weight is not None:
        losses = losses * _core.cast(_core.convert_to_tensor(sample_weight), losses.dtype)
    if global_batch_size is None:
        from mixprec import distribute

        n = losses.shape[0] if losses.ndim else 1
        global_batch_size = n * distribute.get_replica_context_num_replicas()
    if isinstance(global_batch_size, float) or getattr(global_batch_size, "dtype", None) is not \
            None and global_batch_size.dtype.is_floating:
        raise TypeError("global_batch_size must be an integer, got %r" % (global_batch_size,))
    return _core.reduce_sum(losses) / _core.cast(_core.constant(int(global_batch_size)),
                                                 losses.dtype)


def scale_regularization_loss(regularization_loss):
    from mixprec import distribute

    loss = _core.convert_to_tensor(regularization_loss)
    return loss / distribute.get_replica_context_num_replicas()

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
