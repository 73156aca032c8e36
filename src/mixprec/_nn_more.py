"""tf.nn's transposed, separable and 3-D convolutions and tf.math/tf.nn.l2_normalize, as
TensorFlow 2.21 spells them, written with the core's convolution ops (a transposed
convolution is Conv2DBackpropInput; separable is depthwise then 1x1; 3-D is one 2-D
convolution over folded depth slices, keras/layers/conv3d.py). Argument forms only here."""

from mixprec import _core

__all__ = ["l2_normalize", "conv2d_transpose", "conv1d_transpose", "separable_conv2d",
           "conv3d"]


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """x / sqrt(max(sum(x**2, axis), epsilon)); axis None normalizes over every axis."""
    if dim is not None:
        axis = dim
    x = _core.convert_to_tensor(x)
    if axis is None:
        axes = list(range(x.ndim))
    else:
        axes = [int(a) % max(x.ndim, 1) for a in (axis if isinstance(axis, (list, tuple))
                                                  else [axis])]
    square_sum = _core.reduce_sum(_core.square(x), axes, True)
    eps = _core.cast(_core.constant(float(epsilon)), x.dtype)
    return x * _core.rsqrt(_core.maximum(square_sum, eps))


def _sizes(output_shape):
    if hasattr(output_shape, "numpy"):
        output_shape = output_shape.numpy().tolist()
    return [int(v) for v in output_shape]


def conv2d_transpose(input, filters, output_shape, strides, padding="SAME",  # noqa: A002
                     data_format="NHWC", dilations=None, name=None):
    """The gradient of conv2d with respect to its input: filters (kh, kw, out_channels,
    in_channels), output_shape the full (N, H, W, C) (or NCHW) result shape."""
    from mixprec import nn

    return nn.conv2d_backprop_input(_sizes(output_shape), filters, input, strides, padding,
                                    data_format=data_format, dilations=dilations)


def conv1d_transpose(input, filters, output_shape, strides, padding="SAME",  # noqa: A002
                     data_format="NWC", dilations=None, name=None):
    """1-D conv2d_transpose: filters (kw, out_channels, in_channels)."""
    from mixprec import nn

    if data_format not in ("NWC", "NCW", None):
        raise ValueError("data_format must be 'NWC' or 'NCW', got %r" % (data_format,))
    nchw = data_format == "NCW"
    x = _core.convert_to_tensor(input)
    if x.ndim != 3:
        raise ValueError("input must be 3-dimensional, got shape %s" % (list(x.shape),))
    f = _core.convert_to_tensor(filters)
    sizes = _sizes(output_shape)
    x = _core.reshape(x, [x.shape[0], x.shape[1], 1, x.shape[2]] if nchw
                      else [x.shape[0], 1, x.shape[1], x.shape[2]])
    f = _core.reshape(f, [1] + list(f.shape))
    out4 = [sizes[0], sizes[1], 1, sizes[2]] if nchw else [sizes[0], 1, sizes[1], sizes[2]]
    s = nn._sequence(strides, 1, "strides", nchw)
    d = nn._sequence(dilations, 1, "dilations", nchw)
    y = nn.conv2d_backprop_input(out4, f, x, [1, s[0]], padding,
                                 data_format="NCHW" if nchw else "NHWC", dilations=[1, d[0]])
    return _core.reshape(y, sizes)


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding,  # noqa: A002
                     data_format=None, dilations=None, name=None):
    """depthwise_conv2d(input, depthwise_filter) then a 1x1 convolution with
    pointwise_filter (1, 1, C * M, out)."""
    from mixprec import nn

    y = nn.depthwise_conv2d(input, depthwise_filter, strides, padding,
                            data_format=data_format, dilations=dilations)
    return nn.conv2d(y, pointwise_filter, [1, 1], "VALID", data_format=data_format or "NHWC")


def conv3d(input, filters, strides, padding, data_format="NDHWC",  # noqa: A002
           dilations=None, name=None):
    """tf.nn.conv3d: input (N, D, H, W, C) or NCDHW, filters (kd, kh, kw, C / groups, O);
    strides and dilations lists of 5 (1 at the batch and channel positions)."""
    from mixprec.keras.layers.conv3d import conv3d_as_2d

    if data_format not in ("NDHWC", "NCDHW"):
        raise ValueError("data_format must be 'NDHWC' or 'NCDHW', got %r" % (data_format,))
    nc = data_format == "NCDHW"

    def five(v, what):
        if v is None:
            return [1, 1, 1]
        v = [int(a) for a in v]
        if len(v) != 5:
            raise ValueError("%s must be a list of 5 ints, got %s" % (what, v))
        outer = (v[0], v[1]) if nc else (v[0], v[4])
        if outer != (1, 1):
            raise _core.InvalidArgumentError(
                "Current implementation does not yet support %s in the batch and depth "
                "dimensions." % what)
        return v[2:] if nc else v[1:4]

    if padding not in ("SAME", "VALID"):
        raise _core.InvalidArgumentError(
            "Value for attr 'padding' of %r is not in the list of allowed values: \"SAME\", "
            "\"VALID\"" % (padding,))
    x = _core.convert_to_tensor(input)
    f = _core.convert_to_tensor(filters)
    if x.ndim != 5 or f.ndim != 5:
        raise ValueError("conv3d needs a 5-D input and 5-D filters, got shapes %s and %s"
                         % (list(x.shape), list(f.shape)))
    return conv3d_as_2d(x, f, five(strides, "strides"), padding.lower(),
                        five(dilations, "dilations"), nc)
