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


def _num_replicas_or_raise(what):
    from mixprec.distribute import _context

    if _context.in_cross_replica_context():
        raise RuntimeError("You are calling `%s` in cross replica context, while it was "
                           "expected to be called in replica context." % what)
    return _context._num_replicas_in_sync()


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """``sum(per_example_loss * sample_weight) / global_batch_size`` (0 when the batch size
    is 0). ``global_batch_size`` defaults to this replica's batch times the number of
    replicas in sync (in a replica of a strategy), so summing the replicas' results gives
    the mean over the global batch; outside a strategy, the plain mean."""
    losses = _core.convert_to_tensor(per_example_loss)
    dtype = losses.dtype
    if losses.ndim == 0:
        raise ValueError("Invalid value passed for `per_example_loss`. Expected a tensor with "
                         "at least rank 1. Received: %r" % (losses,))
    if sample_weight is not None:
        w = _core.cast(_core.convert_to_tensor(sample_weight), "float32")
        lf = _core.cast(losses, "float32")
        # squeeze or expand the weight to the loss's rank, then broadcast (TensorFlow's rule)
        if w.ndim == lf.ndim + 1 and w.shape[-1] == 1:
            w = _core.reshape(w, list(w.shape[:-1]))
        elif w.ndim == lf.ndim - 1 and w.ndim > 0:
            w = _core.reshape(w, list(w.shape) + [1])
        losses = _core.cast(lf * w, dtype)
    if global_batch_size is None:
        n = _num_replicas_or_raise("compute_average_loss")
        global_batch_size = int(losses.shape[0]) * n
    if isinstance(global_batch_size, bool) or isinstance(global_batch_size, float) or \
            getattr(global_batch_size, "dtype", None) is not None and \
            not getattr(global_batch_size.dtype, "is_integer", False):
        raise TypeError("global_batch_size must be an int, got %r" % (global_batch_size,))
    if isinstance(global_batch_size, (_core.Tensor, list, tuple)) or hasattr(global_batch_size,
                                                                           "shape"):
        g = _core.convert_to_tensor(global_batch_size)
        if g.ndim != 0:
            raise ValueError("Invalid value passed for `global_batch_size`. Expected a scalar "
                             "integer, got shape %s: the global_batch_size must be scalar"
                             % (tuple(g.shape),))
        global_batch_size = int(g.numpy())
    global_batch_size = int(global_batch_size)
    if global_batch_size < 0:
        raise _core.InvalidArgumentError(
            "global_batch_size must be non-negative, got %d" % global_batch_size)
    total = _core.reduce_sum(losses)
    if global_batch_size == 0:  # div_no_nan
        return _core.fill([], 0, dtype)
    return total / _core.cast(_core.constant(global_batch_size), dtype)


def scale_regularization_loss(regularization_loss):
    """``sum(regularization_loss) / num_replicas_in_sync`` (in a replica; the plain sum
    outside any strategy)."""
    n = _num_replicas_or_raise("scale_regularization_loss")
    loss = _core.reduce_sum(_core.convert_to_tensor(regularization_loss))
    return loss / _core.cast(_core.constant(n), loss.dtype)


from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
