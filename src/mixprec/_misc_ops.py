"""Small TensorFlow names that are compositions of existing ops: fixed-width histograms,
``grad_pass_through``, ``guarantee_const``, ``parallel_stack``, ``is_symbolic_tensor``,
``space_to_batch``, and the tf.nn extras (local response normalization, atrous and generic
transposed convolutions, ``pool``, ``batch_norm_with_global_normalization``). TensorFlow's
formulas; the arithmetic is the core's ops."""

from mixprec import _core

__all__ = ["histogram_fixed_width", "histogram_fixed_width_bins", "grad_pass_through",
           "guarantee_const", "parallel_stack", "is_symbolic_tensor", "space_to_batch",
           "local_response_normalization", "lrn", "atrous_conv2d", "atrous_conv2d_transpose",
           "conv_transpose", "pool", "batch_norm_with_global_normalization"]


def histogram_fixed_width_bins(values, value_range, nbins=100, dtype="int32", name=None):
    """The bin of each value: ``nbins`` equal bins over ``value_range``, values below in
    the first, values at or above the top in the last (TensorFlow's double arithmetic)."""
    import mixprec as tf
    v = _core.convert_to_tensor(values)
    rng = _core.cast(_core.convert_to_tensor(value_range), v.dtype)
    nb = int(_core.convert_to_tensor(nbins).numpy()) if hasattr(nbins, "numpy") else int(nbins)
    if nb <= 0:
        from mixprec import errors
        raise errors.InvalidArgumentError(None, None, "nbins should be a positive number, but "
                                          "got '%d'" % nb)
    lo, hi = rng[0], rng[1]
    step = (_core.cast(hi, "float64") - _core.cast(lo, "float64")) / float(nb)
    scaled = _core.cast(_core.maximum(v, lo) - lo, "float64") / step
    idx = _core.minimum(scaled, float(nb - 1))
    return _core.cast(idx, tf.as_dtype(dtype).name)


def histogram_fixed_width(values, value_range, nbins=100, dtype="int32", name=None):
    """Counts of ``values`` in ``nbins`` equal bins over ``value_range``."""
    import mixprec as tf
    nb = int(_core.convert_to_tensor(nbins).numpy()) if hasattr(nbins, "numpy") else int(nbins)
    bins = _core.reshape(histogram_fixed_width_bins(values, value_range, nb, "int32"), [-1])
    ones = _core.cast(tf.ones_like(bins), tf.as_dtype(dtype).name)
    return tf.math.unsorted_segment_sum(ones, bins, nb)


def grad_pass_through(f):
    """``f`` in the forward pass, the identity in the backward pass."""
    from mixprec._custom_gradient import custom_gradient

    @custom_gradient
    def wrapped(*args):
        out = f(*args)

        def grad(*dy):
            return dy[0] if len(args) == 1 else tuple(dy[0] for _ in args)
        return out, grad
    return wrapped


def guarantee_const(input, name=None):  # noqa: A002 - TensorFlow's name
    return _core.identity(_core.convert_to_tensor(input))


def parallel_stack(values, name="parallel_stack"):
    """``tf.stack`` along a new first axis; only inside a traced function (TensorFlow's
    RuntimeError eagerly)."""
    if _core.graph_recording() is None:
        raise RuntimeError("tf.parallel_stack() is not compatible with eager execution.")
    return _core.stack([_core.convert_to_tensor(v) for v in values], 0)


def is_symbolic_tensor(tensor):
    """True for a tensor made by a function while it traces (TensorFlow's graph tensors)."""
    return isinstance(tensor, _core.Tensor) and _core.graph_recording() is not None and \
        bool(_core.graph_is_traced(tensor))


def space_to_batch(input, block_shape, paddings, name=None):  # noqa: A002
    import mixprec as tf
    return tf.space_to_batch_nd(input, block_shape, paddings)


def local_response_normalization(input, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5,  # noqa: A002
                                 name=None):
    """``input / (bias + alpha * sum of squares over 2r+1 channels) ** beta``."""
    from mixprec import _array_ops
    x = _core.convert_to_tensor(input)
    if x.ndim != 4:
        raise ValueError("Shape must be rank 4 but is rank %d for LRN" % x.ndim)
    r = int(depth_radius)
    c = x.shape[-1]
    sq = _array_ops.pad(_core.square(x), [[0, 0], [0, 0], [0, 0], [r, r]])
    total = sq[..., 0:c]
    for k in range(1, 2 * r + 1):
        total = total + sq[..., k:k + c]
    return x / _core.pow(float(bias) + float(alpha) * total,
                         _core.constant(float(beta), x.dtype.name))


lrn = local_response_normalization


def atrous_conv2d(value, filters, rate, padding, name=None):
    from mixprec import nn
    return nn.conv2d(value, filters, strides=1, padding=padding, dilations=int(rate))


def atrous_conv2d_transpose(value, filters, output_shape, rate, padding, name=None):
    from mixprec import nn
    return nn.conv2d_transpose(value, filters, output_shape, strides=1, padding=padding,
                               dilations=int(rate))


def conv_transpose(input, filters, output_shape, strides, padding="SAME",  # noqa: A002
                   data_format=None, dilations=None, name=None):
    """conv1d/conv2d transposed by the input's rank (3 or 4)."""
    from mixprec import nn
    x = _core.convert_to_tensor(input)
    if x.ndim == 3:
        return nn.conv1d_transpose(x, filters, output_shape, strides, padding,
                                   data_format or "NWC", dilations)
    if x.ndim == 4:
        return nn.conv2d_transpose(x, filters, output_shape, strides, padding,
                                   data_format or "NHWC", dilations)
    raise NotImplementedError("tf.nn.conv_transpose of a rank-%d input is not implemented by "
                              "mixprec (1-D and 2-D are); use keras.layers.Conv3DTranspose"
                              % x.ndim)


def pool(input, window_shape, pooling_type, strides=None, padding="VALID",  # noqa: A002
         data_format=None, dilations=None, name=None):
    """tf.nn.pool: max or average pooling of any supported rank (no dilation)."""
    from mixprec import nn
    if pooling_type not in ("MAX", "AVG"):
        raise ValueError("Invalid pooling_type: %s" % (pooling_type,))
    if dilations is not None and any(int(d) != 1 for d in _seq(dilations)):
        raise NotImplementedError("tf.nn.pool with dilation_rate > 1 is not implemented by "
                                  "mixprec")
    window = list(_seq(window_shape))
    strides = [1] * len(window) if strides is None else list(_seq(strides))
    if len(strides) != len(window):
        raise ValueError("strides must have the same length as window_shape")
    f = nn.max_pool if pooling_type == "MAX" else nn.avg_pool
    return f(input, window, strides, padding, data_format)


def _seq(v):
    return v if isinstance(v, (list, tuple)) else [v]


def batch_norm_with_global_normalization(t=None, m=None, v=None, beta=None, gamma=None,
                                         variance_epsilon=None, scale_after_normalization=None,
                                         name=None, input=None, mean=None, variance=None):  # noqa: A002
    from mixprec import nn
    t = input if t is None else t
    m = mean if m is None else m
    v = variance if v is None else v
    return nn.batch_normalization(t, m, v, beta, gamma if scale_after_normalization else None,
                                  variance_epsilon)
