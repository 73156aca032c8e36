"""``tf.nn``: activations, losses' building blocks, convolution, pooling and batch
normalization (TensorFlow's signatures; the numbers are the core's ops)."""

import builtins

import numpy as np

from mixprec import _core
from mixprec._ops import _int_axis

builtins_range = builtins.range

from mixprec._array_ops import embedding_lookup  # noqa: E402,F401 - tf.nn.embedding_lookup
from mixprec._math_extra import (  # noqa: E402,F401 - tf.nn's small losses and statistics
    crelu, in_top_k, l2_loss, l2_normalize, log_poisson_loss, normalize_moments, selu, softsign,
    sufficient_statistics, weighted_cross_entropy_with_logits, weighted_moments, zero_fraction)
from mixprec._array_extra import depth_to_space, space_to_depth, top_k  # noqa: E402,F401

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
                         "at least rank 1. Received per_example_loss=%s with rank 0"
                         % (losses.numpy(),))
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
        raise TypeError("global_batch_size must be an integer. Expected \"x\" to be integer "
                        "type. Found: %r" % (global_batch_size,))
    if isinstance(global_batch_size, (_core.Tensor, list, tuple)) or hasattr(global_batch_size,
                                                                           "shape"):
        g = _core.convert_to_tensor(global_batch_size)
        if g.ndim != 0:
            raise ValueError("global_batch_size must be scalar. Expected scalar shape, saw "
                             "shape: %s." % (tuple(g.shape),))
        global_batch_size = int(g.numpy())
    global_batch_size = int(global_batch_size)
    if global_batch_size < 0:
        raise _core.InvalidArgumentError(
            "global_batch_size must be non-negative. Condition x >= 0 did not hold "
            "element-wise: x = %d" % global_batch_size)
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



# ------------------------------------------------------------------ convolution and pooling
# TensorFlow's argument forms are resolved here; the ops (csrc/ops_window.c) own the
# shapes, padding arithmetic and errors. 1-D ops are 2-D ops with height 1 (as TensorFlow).

_OP_CODES = {row[2]: row[0] for row in _core.op_table()}
_PADDING_CODES = {"VALID": 0, "SAME": 1, "EXPLICIT": 2}


def _sequence(value, n, name, nchw):
    """TensorFlow's _get_sequence: an int, or a list of 1, n or n + 2 ints (the batch and
    channel entries of the n + 2 form must be 1) -> n spatial values."""
    if value is None:
        return [1] * n
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return [int(value)] * n
    if hasattr(value, "numpy"):
        value = value.numpy().tolist()
    try:
        vals = [int(v) for v in value]
    except TypeError:
        raise TypeError("%s should be an int or a list of ints, got %r" % (name, value)) from None
    if len(vals) == 1:
        return vals * n
    if len(vals) == n:
        return vals
    if len(vals) == n + 2:
        outer = (vals[0], vals[1]) if nchw else (vals[0], vals[-1])
        if outer != (1, 1):
            raise _core.InvalidArgumentError(
                "Current implementation does not yet support %s in the batch and depth "
                "dimensions." % name)
        return vals[2:] if nchw else vals[1:-1]
    raise ValueError("%s should be of length 1, %d or %d. Received: %s=%s of length %d"
                     % (name, n, n + 2, name, value, len(vals)))


def _padding(padding, n, nchw):
    """-> (code, (top, bottom, left, right)) for a 2-D op."""
    if isinstance(padding, (list, tuple)):
        pads = [list(p) for p in padding]
        if len(pads) != n + 2 or any(len(p) != 2 for p in pads):
            raise ValueError("When padding is explicit, it must be a list of %d pairs of "
                             "ints, got %r" % (n + 2, padding))
        outer = (pads[0], pads[1]) if nchw else (pads[0], pads[-1])
        if any(v != 0 for p in outer for v in p):
            raise ValueError("Padding in the batch or depth dimension must be zero, got %r"
                             % (padding,))
        spatial = pads[2:] if nchw else pads[1:-1]
        if n == 1:
            spatial = [[0, 0]] + spatial
        return 2, (int(spatial[0][0]), int(spatial[0][1]), int(spatial[1][0]),
                   int(spatial[1][1]))
    if not isinstance(padding, str) or padding not in ("SAME", "VALID"):
        # TensorFlow's op-attribute check (an InvalidArgumentError, which is a ValueError)
        raise _core.InvalidArgumentError(
            "Value for attr 'padding' of %r is not in the list of allowed values: \"SAME\", "
            "\"VALID\", \"EXPLICIT\" (explicit padding is a list of pairs; TensorFlow spells "
            "the names in capitals)" % (padding,))
    return _PADDING_CODES[padding], (0, 0, 0, 0)


def _data_format_2d(data_format, allowed=("NHWC", "NCHW")):
    if data_format is None:
        return False
    if data_format not in allowed:
        raise ValueError("data_format must be one of %s, got %r" % (allowed, data_format))
    return data_format.startswith("NC")


def _window(opname, inputs, strides, window, padding, nchw, shape=None):
    code, pads = padding
    return _core.window_op(_OP_CODES[opname], tuple(inputs), tuple(strides), tuple(window),
                           code, pads, nchw, shape)


def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None,  # noqa: A002
           name=None):
    """tf.nn.conv2d: input (N, H, W, C) or (N, C, H, W), filters (kh, kw, C / groups, O)."""
    nchw = _data_format_2d(data_format)
    x = _core.convert_to_tensor(input)
    if x.ndim > 4:  # extra leading batch dimensions (TensorFlow allows them)
        lead = list(x.shape[:-3])
        y = conv2d(_core.reshape(x, [-1] + list(x.shape[-3:])), filters, strides, padding,
                   data_format, dilations)
        return _core.reshape(y, lead + list(y.shape[1:]))
    return _window("conv2d", (x, filters), _sequence(strides, 2, "strides", nchw),
                   _sequence(dilations, 2, "dilations", nchw), _padding(padding, 2, nchw), nchw)


def _conv2d_bias_act(input, filters, bias, strides, padding, data_format, dilations,  # noqa: A002
                     relu):
    """relu?(conv2d(input, filters) + bias) as one op (Conv2D with its bias and ReLU fused as
    oneDNN post-ops on the CPU: TensorFlow's _FusedConv2D); what the Keras Conv2D layer calls."""
    nchw = _data_format_2d(data_format)
    code, pads = _padding(padding, 2, nchw)
    return _core.window_op(_OP_CODES["conv2d_bias_act"], (input, filters, bias),
                           tuple(_sequence(strides, 2, "strides", nchw)),
                           tuple(_sequence(dilations, 2, "dilations", nchw)), code, pads, nchw,
                           None, 1 if relu else 0)


def conv2d_backprop_input(input_sizes, filters, out_backprop, strides, padding,  # noqa: D401
                          data_format="NHWC", dilations=None, name=None):
    nchw = _data_format_2d(data_format)
    sizes = [int(v) for v in (input_sizes.numpy() if hasattr(input_sizes, "numpy")
                              else input_sizes)]
    return _window("conv2d_backprop_input", (filters, out_backprop),
                   _sequence(strides, 2, "strides", nchw),
                   _sequence(dilations, 2, "dilations", nchw),
                   _padding(padding, 2, nchw), nchw, sizes)


def conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding,  # noqa: A002
                           data_format="NHWC", dilations=None, name=None):
    nchw = _data_format_2d(data_format)
    sizes = [int(v) for v in (filter_sizes.numpy() if hasattr(filter_sizes, "numpy")
                              else filter_sizes)]
    return _window("conv2d_backprop_filter", (input, out_backprop),
                   _sequence(strides, 2, "strides", nchw),
                   _sequence(dilations, 2, "dilations", nchw),
                   _padding(padding, 2, nchw), nchw, sizes)


def _rank_of(x, name):
    x = _core.convert_to_tensor(x)
    return x, x.ndim


def _to_2d_input(x, nchw):
    """(N, W, C) -> (N, 1, W, C); (N, C, W) -> (N, C, 1, W)."""
    if x.ndim != 3:
        raise ValueError("input must be 3-dimensional (batch, width, channels) for a 1-D op, "
                         "got shape %s" % (list(x.shape),))
    return _core.reshape(x, [x.shape[0], x.shape[1], 1, x.shape[2]] if nchw
                         else [x.shape[0], 1, x.shape[1], x.shape[2]])


def _from_2d_output(y, nchw):
    s = list(y.shape)
    return _core.reshape(y, [s[0], s[1], s[3]] if nchw else [s[0], s[2], s[3]])


def conv1d(input, filters, stride, padding, data_format="NWC", dilations=None,  # noqa: A002
           name=None):
    """tf.nn.conv1d: input (N, W, C) or (N, C, W), filters (kw, C / groups, O)."""
    if data_format not in ("NWC", "NCW", None):
        raise ValueError("data_format must be 'NWC' or 'NCW', got %r" % (data_format,))
    nchw = data_format == "NCW"
    x = _to_2d_input(_core.convert_to_tensor(input), nchw)
    f = _core.convert_to_tensor(filters)
    if f.ndim != 3:
        raise ValueError("filters must be 3-dimensional (width, in_channels, out_channels), "
                         "got shape %s" % (list(f.shape),))
    f = _core.reshape(f, [1] + list(f.shape))
    s = _sequence(stride, 1, "stride", nchw)
    d = _sequence(dilations, 1, "dilations", nchw)
    y = _window("conv2d", (x, f), [1, s[0]], [1, d[0]], _padding(padding, 1, nchw), nchw)
    return _from_2d_output(y, nchw)


def convolution(input, filters, strides=None, padding="VALID", data_format=None,  # noqa: A002
                dilations=None, name=None):
    """tf.nn.convolution: 1-D, 2-D or 3-D by the input's rank (3, 4 or 5)."""
    x = _core.convert_to_tensor(input)
    nchw = data_format is not None and str(data_format).startswith("NC")
    if x.ndim == 3:
        return conv1d(x, filters, 1 if strides is None else strides, padding,
                      "NCW" if nchw else "NWC", dilations)
    if x.ndim == 4:
        return conv2d(x, filters, 1 if strides is None else strides, padding,
                      "NCHW" if nchw else "NHWC", dilations)
    if x.ndim == 5:
        from mixprec._nn_more import conv3d

        s = _sequence(1 if strides is None else strides, 3, "strides", nchw)
        d = _sequence(dilations, 3, "dilations", nchw)
        wrap = (lambda v: [1, 1] + v) if nchw else (lambda v: [1] + v + [1])
        return conv3d(x, filters, wrap(s), padding, "NCDHW" if nchw else "NDHWC", wrap(d))
    raise ValueError("`input` must have rank 3 (1-D), 4 (2-D) or 5 (3-D) for convolution, got "
                     "rank %d" % x.ndim)


convolution_v2 = convolution


def depthwise_conv2d(input, filter, strides, padding, data_format=None,  # noqa: A002
                     dilations=None, name=None):
    """tf.nn.depthwise_conv2d: filter (kh, kw, C, M) -> C * M output channels (channel
    c * M + m), as a convolution with C groups of one channel."""
    nchw = _data_format_2d(data_format)
    f = _core.convert_to_tensor(filter)
    x = _core.convert_to_tensor(input)
    if f.ndim != 4:
        raise ValueError("filter must be 4-dimensional (height, width, in_channels, "
                         "channel_multiplier), got shape %s" % (list(f.shape),))
    c = x.shape[1] if nchw else x.shape[-1]
    if x.ndim == 4 and f.shape[2] != c:
        raise ValueError("depthwise_conv2d: the filter's in_channels (%d) must equal the "
                         "input's channels (%d)" % (f.shape[2], c))
    f = _core.reshape(f, [f.shape[0], f.shape[1], 1, f.shape[2] * f.shape[3]])
    return _window("conv2d", (x, f), _sequence(strides, 2, "strides", nchw),
                   _sequence(dilations, 2, "dilations", nchw), _padding(padding, 2, nchw), nchw)


def _pool2d(opname, input, ksize, strides, padding, data_format):  # noqa: A002
    nchw = _data_format_2d(data_format)
    return _window(opname, (input,), _sequence(strides, 2, "strides", nchw),
                   _sequence(ksize, 2, "ksize", nchw), _padding(padding, 2, nchw), nchw)


def _pool1d(opname, input, ksize, strides, padding, data_format):  # noqa: A002
    if data_format not in ("NWC", "NCW", None):
        raise ValueError("data_format must be 'NWC' or 'NCW', got %r" % (data_format,))
    nchw = data_format == "NCW"
    x = _to_2d_input(_core.convert_to_tensor(input), nchw)
    k = _sequence(ksize, 1, "ksize", nchw)
    s = _sequence(strides, 1, "strides", nchw)
    y = _window(opname, (x,), [1, s[0]], [1, k[0]], _padding(padding, 1, nchw), nchw)
    return _from_2d_output(y, nchw)


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    return _pool2d("max_pool", input, ksize, strides, padding, data_format)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """Average pooling; with 'SAME' each window divides by its non-padded elements."""
    return _pool2d("avg_pool", input, ksize, strides, padding, data_format)


def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    return _pool1d("max_pool", input, ksize, strides, padding, data_format)


def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    return _pool1d("avg_pool", input, ksize, strides, padding, data_format)


def _pool_nd(kind, input, ksize, strides, padding, data_format):  # noqa: A002
    x = _core.convert_to_tensor(input)
    nchw = data_format is not None and str(data_format).startswith("NC")
    if x.ndim == 3:
        return _pool1d(kind, x, ksize, strides, padding, "NCW" if nchw else "NWC")
    if x.ndim == 4:
        return _pool2d(kind, x, ksize, strides, padding, "NCHW" if nchw else "NHWC")
    raise ValueError("`input` must have rank 3 or 4 for pooling, got rank %d (3-D pooling is "
                     "not implemented)" % x.ndim)


def max_pool(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    return _pool_nd("max_pool", input, ksize, strides, padding, data_format)


def avg_pool(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    return _pool_nd("avg_pool", input, ksize, strides, padding, data_format)


max_pool_v2 = max_pool
avg_pool_v2 = avg_pool


# ------------------------------------------------------------------ normalization

def bias_add(value, bias, data_format=None, name=None):
    """value + bias along the channel axis: the last one, or axis 1 for 'NC...' formats."""
    x = _core.convert_to_tensor(value)
    b = _core.convert_to_tensor(bias) if isinstance(bias, _core.Tensor) or hasattr(bias, "dtype") \
        and not isinstance(bias, np.ndarray) else _core.constant(np.asarray(bias), dtype=x.dtype)
    if b.ndim != 1:
        raise ValueError("bias must be 1-D, got shape %s" % (list(b.shape),))
    if x.ndim < 2:
        raise ValueError("Shape must be at least rank 2 but is rank %d for 'BiasAdd'" % x.ndim)
    if b.dtype != x.dtype:
        raise _core.InvalidArgumentError(
            "cannot compute BiasAdd as input #1(zero-based) was expected to be a %s tensor but "
            "is a %s tensor" % (x.dtype.name, b.dtype.name))
    if data_format is not None and str(data_format).startswith("NC"):
        if x.shape[1] != b.shape[0]:
            raise _core.InvalidArgumentError(
                "Must provide as many biases as the channel dimension of the input tensor: "
                "%s vs. %s" % (list(b.shape), list(x.shape)))
        return x + _core.reshape(b, [b.shape[0]] + [1] * (x.ndim - 2))
    if x.shape[-1] != b.shape[0]:
        raise _core.InvalidArgumentError(
            "Must provide as many biases as the last dimension of the input tensor: %s vs. %s"
            % (list(b.shape), list(x.shape)))
    return x + b


def _batch_moments(x, axes, keepdims):
    """(mean, variance) through the one-pass BatchMoments op when axes leave exactly one
    channel axis (the last, or axis 1) of a float32/float16/float64 x; else None. bfloat16
    keeps the composition (TensorFlow computes its moments in bfloat16)."""
    if x.dtype.name not in ("float32", "float16", "float64") or x.ndim < 1:
        return None
    try:
        red = sorted({int(a) % x.ndim for a in axes})
    except (TypeError, ValueError):
        return None
    kept = [d for d in builtins_range(x.ndim) if d not in red]
    if len(kept) != 1 or kept[0] not in (1, x.ndim - 1) or len(red) != len(axes):
        return None
    cf = kept[0] != x.ndim - 1
    try:
        stats = _core.batch_stats(_OP_CODES["batch_moments"], (x,), cf)
    except NotImplementedError:  # a backend without the batch_stats slot
        return None
    mean, variance = stats[0], stats[1]
    if keepdims:
        shape = [x.shape[d] if d == kept[0] else 1 for d in builtins_range(x.ndim)]
        mean, variance = _core.reshape(mean, shape), _core.reshape(variance, shape)
    if x.dtype.name == "float16":
        return _core.cast(mean, "float16"), _core.cast(variance, "float16")
    return mean, variance


def moments(x, axes, shift=None, keepdims=False, name=None):
    """(mean, variance) over axes; float16 is computed in float32 and rounded once, as
    TensorFlow does. Per-channel statistics (every axis but the last, or but axis 1) take
    one op (BatchMoments: float64 sums, one pass each for the mean and the variance)."""
    x = _core.convert_to_tensor(x)
    fused = _batch_moments(x, axes if isinstance(axes, (list, tuple)) else [axes], keepdims)
    if fused is not None:
        return fused
    y = _core.cast(x, "float32") if x.dtype.name == "float16" else x
    axes = [int(a) for a in (axes if isinstance(axes, (list, tuple)) else [axes])]
    mean = _core.reduce_mean(y, axes, keepdims=True)
    variance = _core.reduce_mean(_core.squared_difference(y, _core.stop_gradient(mean)), axes,
                                 keepdims=True)
    if not keepdims:
        keep = [d for d in builtins_range(x.ndim) if d not in [a % max(x.ndim, 1) for a in axes]]
        mean = _core.reshape(mean, [x.shape[d] for d in keep])
        variance = _core.reshape(variance, [x.shape[d] for d in keep])
    if x.dtype.name == "float16":
        return _core.cast(mean, "float16"), _core.cast(variance, "float16")
    return mean, variance


def _stats_vector(t, c, dt):
    """t as a (c,) tensor of dtype dt, or None when it is not one (then the composition runs)."""
    t = _core.convert_to_tensor(t) if not isinstance(t, (int, float)) else None
    if t is None or t.dtype.name != dt:
        return None
    shape = list(t.shape)
    if shape == [c] or (len(shape) > 1 and shape[-1] == c and all(d == 1 for d in shape[:-1])):
        return _core.reshape(t, [c])
    return None


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) * scale / sqrt(variance + epsilon) + offset, as TensorFlow composes it: the
    factor and shift are computed in the statistics' dtype and cast to x's once. Statistics
    of x's channels (the last axis) in float32 (float64 for float64 x) take one fused pass
    (the BatchNorm op; 16-bit x is then computed in float32 and rounded once, as
    TensorFlow's fused kernel)."""
    x = _core.convert_to_tensor(x)
    mean = _core.convert_to_tensor(mean)
    variance = _core.convert_to_tensor(variance)
    if x.dtype.is_floating and x.ndim >= 1 and x.shape[-1] > 0:
        c = x.shape[-1]
        sdt = "float64" if x.dtype.name == "float64" else "float32"
        m, v = _stats_vector(mean, c, sdt), _stats_vector(variance, c, sdt)
        o = _core.fill([c], 0.0, sdt) if offset is None else _stats_vector(offset, c, sdt)
        s = _core.fill([c], 1.0, sdt) if scale is None else _stats_vector(scale, c, sdt)
        if all(t is not None for t in (m, v, o, s)) and float(variance_epsilon) >= 0:
            return _core.batch_norm(x, s, o, m, v, float(variance_epsilon), False)
    inv = _core.rsqrt(variance + _core.cast(_core.constant(variance_epsilon), variance.dtype))
    if scale is not None:
        inv = inv * _core.cast(_core.convert_to_tensor(scale), inv.dtype)
    shift = -mean * inv if offset is None else \
        _core.cast(_core.convert_to_tensor(offset), inv.dtype) - mean * inv
    return x * _core.cast(inv, x.dtype) + _core.cast(shift, x.dtype)


def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001,
                     data_format="NHWC", is_training=True, exponential_avg_factor=1.0,
                     name=None):
    """-> (y, batch_mean, batch_variance). Training normalises with the batch's biased
    variance and returns the unbiased one (n / (n - 1)), blended into `variance` by
    exponential_avg_factor, as TensorFlow's FusedBatchNormV3; statistics are float32."""
    x = _core.convert_to_tensor(x)
    if x.ndim != 4:
        raise ValueError("fused_batch_norm: input must be 4-dimensional, got shape %s"
                         % (list(x.shape),))
    nchw = _data_format_2d(data_format)
    axes = [0, 2, 3] if nchw else [0, 1, 2]
    shape = [1, x.shape[1], 1, 1] if nchw else [x.shape[3]]
    sdt = "float64" if x.dtype.name == "float64" else "float32"
    f32 = lambda t: _core.cast(_core.convert_to_tensor(t), sdt)  # noqa: E731
    scale, offset = f32(scale), f32(offset)
    if is_training:
        xf = _core.cast(x, sdt)
        m = _core.reduce_mean(xf, axes)
        v = _core.reduce_mean(_core.squared_difference(xf, _core.stop_gradient(
            _core.reshape(m, shape))), axes)
        n = int(np.prod([x.shape[a] for a in axes]))
        unbiased = v * (n / max(n - 1, 1))
        y = _core.batch_norm(x, scale, offset, m, v, float(epsilon), nchw)
        if exponential_avg_factor != 1.0 and mean is not None and variance is not None:
            fa = float(exponential_avg_factor)
            m = f32(mean) * (1.0 - fa) + m * fa
            unbiased = f32(variance) * (1.0 - fa) + unbiased * fa
        return y, m, unbiased
    if mean is None or variance is None:
        raise ValueError("fused_batch_norm: mean and variance are required when is_training "
                         "is False")
    m, v = f32(mean), f32(variance)
    return _core.batch_norm(x, scale, offset, m, v, float(epsilon), nchw), m, v


def dropout(x, rate, noise_shape=None, seed=None, name=None):
    """Zeroes each element (or each ``noise_shape`` slice) with probability ``rate`` and
    scales the kept ones by 1 / (1 - rate), as ``tf.nn.dropout`` (the draw is
    ``random.uniform`` >= rate, as keras.layers.Dropout's)."""
    import numbers
    from mixprec import random as _random
    is_number = isinstance(rate, numbers.Real)
    if is_number and (rate < 0 or rate >= 1):
        raise ValueError("`rate` must be a scalar tensor or a float in the range [0, 1). "
                         "Received: rate=%s" % (rate,))
    x = x.value() if isinstance(x, _core.Variable) else _core.convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise ValueError("`x.dtype` must be a floating point tensor as `x` will be scaled. "
                         "Received: x_dtype=<dtype: '%s'>" % x.dtype.name)
    if is_number and rate == 0:
        return x
    if is_number:
        ret = x * _core.cast(_core.constant(1.0 / (1.0 - rate)), x.dtype)
        rate_t = _core.constant(float(rate))
    else:
        rate_t = _core.convert_to_tensor(rate)
        if len(rate_t.shape) != 0:
            raise ValueError("`rate` must be a scalar tensor; got shape %s" % (rate_t.shape,))
        ret = x / (1 - _core.cast(rate_t, x.dtype))
        rate_t = _core.cast(rate_t, "float32")
    if noise_shape is None:
        shape = list(x.shape)
    else:
        shape = [int(d) if d is not None else None
                 for d in (noise_shape.numpy().tolist() if hasattr(noise_shape, "numpy")
                           else list(noise_shape))]
        if len(shape) == len(x.shape):
            shape = [x.shape[i] if d is None else d for i, d in enumerate(shape)]
    keep = _random.uniform(shape, 0, 1, "float32", seed) >= rate_t
    return ret * _core.cast(keep, x.dtype)


from mixprec._nn_more import (  # noqa: E402,F401
    conv1d_transpose, conv2d_transpose, conv3d, l2_normalize, separable_conv2d)

from mixprec._misc_ops import (  # noqa: E402,F401  (tf.nn extras as compositions)
    atrous_conv2d, atrous_conv2d_transpose, batch_norm_with_global_normalization,
    conv_transpose, local_response_normalization, lrn, pool)

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
