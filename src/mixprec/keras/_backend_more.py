"""More of ``tf.keras.backend``'s legacy functional API: transposed, separable and 3-D
convolutions, 3-D pooling and padding, resizing images and volumes, and ``rnn`` (a step
function over time with masks, as tf-keras' backend.rnn). Thin wrappers over tf.nn /
tf.image / the core's ops; the time loop calls the user's step function once per step."""

__all__ = ["conv2d_transpose", "separable_conv2d", "conv3d", "pool3d", "spatial_3d_padding",
           "resize_images", "resize_volumes", "rnn"]


def _tf():
    import mixprec
    return mixprec


def _data_format(data_format):
    from mixprec.keras.backend import image_data_format
    data_format = data_format or image_data_format()
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError("Unknown data_format: " + str(data_format))
    return data_format


def _padding(padding, allowed=("valid", "same")):
    if padding not in allowed:
        raise ValueError("Unknown padding: " + str(padding))
    return padding.upper()


def conv2d_transpose(x, kernel, output_shape, strides=(1, 1), padding="valid",
                     data_format=None, dilation_rate=(1, 1)):
    """2-D transposed convolution; kernel (kh, kw, out_channels, in_channels)."""
    tf = _tf()
    fmt = _data_format(data_format)
    pad = _padding(padding)
    out = list(output_shape.numpy() if hasattr(output_shape, "numpy") else output_shape)
    if fmt == "channels_first":
        x = tf.transpose(x, (0, 2, 3, 1))
        out = [out[0], out[2], out[3], out[1]]
    if out[0] is None:
        out[0] = int(tf.shape(x)[0])
    y = tf.nn.conv2d_transpose(x, kernel, out, list(strides), pad,
                               dilations=list(dilation_rate))
    return tf.transpose(y, (0, 3, 1, 2)) if fmt == "channels_first" else y


def separable_conv2d(x, depthwise_kernel, pointwise_kernel, strides=(1, 1), padding="valid",
                     data_format=None, dilation_rate=(1, 1)):
    tf = _tf()
    fmt = _data_format(data_format)
    if len(strides) != 2:
        raise ValueError("`strides` must be a tuple of 2 integers.")
    nchw = fmt == "channels_first"
    s = [1, 1] + list(strides) if nchw else [1] + list(strides) + [1]
    return tf.nn.separable_conv2d(x, depthwise_kernel, pointwise_kernel, s, _padding(padding),
                                  data_format="NCHW" if nchw else "NHWC",
                                  dilations=list(dilation_rate))


def conv3d(x, kernel, strides=(1, 1, 1), padding="valid", data_format=None,
           dilation_rate=(1, 1, 1)):
    tf = _tf()
    fmt = _data_format(data_format)
    if fmt == "channels_first":
        x = tf.transpose(x, (0, 2, 3, 4, 1))
    y = tf.nn.conv3d(x, kernel, [1] + list(strides) + [1], _padding(padding),
                     dilations=[1] + list(dilation_rate) + [1])
    return tf.transpose(y, (0, 4, 1, 2, 3)) if fmt == "channels_first" else y


def pool3d(x, pool_size, strides=(1, 1, 1), padding="valid", data_format=None,
           pool_mode="max"):
    """3-D max/average pooling (keras.layers' 3-D pooling, tf-keras' padding rules)."""
    from mixprec.keras import layers
    if pool_mode not in ("max", "avg"):
        raise ValueError("Invalid pooling mode: " + str(pool_mode))
    _padding(padding)
    cls = layers.MaxPooling3D if pool_mode == "max" else layers.AveragePooling3D
    return cls(pool_size, strides, padding, _data_format(data_format))(x)


def spatial_3d_padding(x, padding=((1, 1), (1, 1), (1, 1)), data_format=None):
    assert len(padding) == 3 and all(len(p) == 2 for p in padding)
    fmt = _data_format(data_format)
    pads = [list(p) for p in padding]
    pattern = [[0, 0], [0, 0]] + pads if fmt == "channels_first" else \
        [[0, 0]] + pads + [[0, 0]]
    return _tf().pad(x, pattern)


def resize_images(x, height_factor, width_factor, data_format, interpolation="nearest"):
    """Spatial dimensions multiplied by integer factors (tf.image.resize)."""
    tf = _tf()
    fmt = _data_format(data_format)
    methods = ("area", "bicubic", "bilinear", "gaussian", "lanczos3", "lanczos5",
               "mitchellcubic", "nearest")
    if interpolation not in methods:
        raise ValueError('`interpolation` argument should be one of: "%s". Received: "%s".'
                         % ('", "'.join(methods), interpolation))
    if fmt == "channels_first":
        x = tf.transpose(x, (0, 2, 3, 1))
    size = [int(x.shape[1]) * int(height_factor), int(x.shape[2]) * int(width_factor)]
    y = tf.image.resize(x, size, method=interpolation)
    return tf.transpose(y, (0, 3, 1, 2)) if fmt == "channels_first" else y


def resize_volumes(x, depth_factor, height_factor, width_factor, data_format):
    """Each voxel repeated along depth, height and width (nearest upsampling)."""
    from mixprec.keras.backend import repeat_elements
    fmt = _data_format(data_format)
    first = 2 if fmt == "channels_first" else 1
    for axis, k in zip((first, first + 1, first + 2),
                       (depth_factor, height_factor, width_factor)):
        x = repeat_elements(x, int(k), axis=axis)
    return x


def rnn(step_function, inputs, initial_states, go_backwards=False, mask=None, constants=None,
        unroll=False, input_length=None, time_major=False, zero_output_for_mask=False,
        return_all_outputs=True):
    """Runs ``step_function(input_t, states [+ constants]) -> (output_t, new_states)``
    over time. Returns ``(last_output, outputs, new_states)``; where ``mask`` is False a
    step keeps the previous states (and the previous output, or zeros with
    ``zero_output_for_mask``)."""
    tf = _tf()
    x = tf.convert_to_tensor(inputs)
    if x.shape.rank < 3:
        raise ValueError("Input should be at least 3D.")
    if not time_major:
        x = tf.transpose(x, [1, 0] + list(range(2, x.shape.rank)))
    steps = x.shape[0]
    if mask is not None:
        m = tf.cast(tf.convert_to_tensor(mask), "bool")
        if m.shape.rank == 2 and not time_major:
            m = tf.transpose(m, [1, 0])
    order = range(steps - 1, -1, -1) if go_backwards else range(steps)
    states = list(initial_states)
    consts = list(constants or [])
    outputs, last = [], None
    for t in order:
        out, new_states = step_function(x[t], states + consts)
        new_states = list(new_states) if isinstance(new_states, (list, tuple)) else [new_states]
        if mask is not None:
            mt = m[t]

            def keep(new, old):
                mm = tf.reshape(mt, [-1] + [1] * (new.shape.rank - 1))
                return tf.where(mm, new, old)
            prev = last if last is not None else tf.zeros_like(out)
            out = keep(out, tf.zeros_like(out) if zero_output_for_mask else prev)
            new_states = [keep(n, o) for n, o in zip(new_states, states)]
        states, last = new_states, out
        outputs.append(out)
    if not outputs:
        raise ValueError("rnn needs at least one time step")
    if return_all_outputs:
        stacked = tf.stack(outputs, 0)
    else:
        stacked = tf.expand_dims(last, 0)
    if not time_major:
        stacked = tf.transpose(stacked, [1, 0] + list(range(2, stacked.shape.rank)))
    return last, stacked, states
