"""``keras.applications.mobilenet_v2``: MobileNetV2 (inverted residual blocks with linear
bottlenecks, ReLU6, width ``alpha``), tf-keras 2.21's names (block_N_expand, ...,
expanded_conv_*); tf-mode preprocessing. Builds a functional Model only."""

from mixprec.keras.applications import imagenet_utils

__all__ = ["MobileNetV2", "preprocess_input", "decode_predictions"]

# (filters, stride, expansion) of blocks 0..16
_BLOCKS = [(16, 1, 1), (24, 2, 6), (24, 1, 6), (32, 2, 6), (32, 1, 6), (32, 1, 6), (64, 2, 6),
           (64, 1, 6), (64, 1, 6), (64, 1, 6), (96, 1, 6), (96, 1, 6), (96, 1, 6),
           (160, 2, 6), (160, 1, 6), (160, 1, 6), (320, 1, 6)]
_SIZES = (96, 128, 160, 192, 224)


def make_divisible(v, divisor, min_value=None):
    """``v`` rounded to the nearest multiple of ``divisor`` (never below 90% of ``v``)."""
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def _inverted_res_block(inputs, expansion, stride, alpha, filters, block_id):
    from mixprec.keras import backend, layers as L

    ax = 1 if backend.image_data_format() == "channels_first" else -1
    in_channels = inputs.shape[ax]
    pointwise_filters = make_divisible(int(filters * alpha), 8)
    x = inputs
    prefix = "block_%d_" % block_id
    if block_id:
        x = L.Conv2D(expansion * in_channels, kernel_size=1, padding="same", use_bias=False,
                     activation=None, name=prefix + "expand")(x)
        x = L.BatchNormalization(axis=ax, epsilon=1e-3, momentum=0.999,
                                 name=prefix + "expand_BN")(x)
        x = L.ReLU(6.0, name=prefix + "expand_relu")(x)
    else:
        prefix = "expanded_conv_"
    if stride == 2:
        x = L.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, 3), name=prefix + "pad")(x)
    x = L.DepthwiseConv2D(kernel_size=3, strides=stride, activation=None, use_bias=False,
                          padding="same" if stride == 1 else "valid",
                          name=prefix + "depthwise")(x)
    x = L.BatchNormalization(axis=ax, epsilon=1e-3, momentum=0.999,
                             name=prefix + "depthwise_BN")(x)
    x = L.ReLU(6.0, name=prefix + "depthwise_relu")(x)
    x = L.Conv2D(pointwise_filters, kernel_size=1, padding="same", use_bias=False,
                 activation=None, name=prefix + "project")(x)
    x = L.BatchNormalization(axis=ax, epsilon=1e-3, momentum=0.999,
                             name=prefix + "project_BN")(x)
    if in_channels == pointwise_filters and stride == 1:
        return L.Add(name=prefix + "add")([inputs, x])
    return x


def MobileNetV2(input_shape=None, alpha=1.0, include_top=True, weights="imagenet",
                input_tensor=None, pooling=None, classes=1000, classifier_activation="softmax",
                **kwargs):
    """Instantiates MobileNetV2 (``weights=None`` or a local .h5 path)."""
    from mixprec.keras import backend, layers as L

    kwargs.pop("layers", None)
    if kwargs:
        raise ValueError("Unknown argument(s): %s" % (kwargs,))
    imagenet_utils.check_weights(weights, include_top, classes)
    first = backend.image_data_format() == "channels_first"
    if input_tensor is not None and not backend.is_keras_tensor(input_tensor):
        raise ValueError("input_tensor: %r is not type input_tensor." % (input_tensor,))
    if input_shape is not None and input_tensor is not None:
        t_shape = tuple(input_tensor.shape)
        if t_shape[1 if first else 2] != input_shape[1]:
            raise ValueError("input_shape[1] must equal shape(input_tensor)[%d] when "
                             "input_shape and input_tensor are both provided. Received: "
                             "input_shape=%s, input_tensor.shape=%s"
                             % (1 if first else 2, input_shape, t_shape))
    default_size = 224
    if input_shape is None and input_tensor is not None:
        t_shape = tuple(input_tensor.shape)
        rows, cols = (t_shape[2], t_shape[3]) if first else (t_shape[1], t_shape[2])
        if rows == cols and rows in _SIZES:
            default_size = rows
    elif input_shape is not None:
        rows, cols = (input_shape[1], input_shape[2]) if first else (input_shape[0],
                                                                     input_shape[1])
        if rows == cols and rows in _SIZES:
            default_size = rows
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, default_size=default_size, min_size=32,
        data_format=backend.image_data_format(), require_flatten=include_top, weights=weights)
    rows, cols = (input_shape[1], input_shape[2]) if first else (input_shape[0], input_shape[1])
    if weights == "imagenet":
        if alpha not in (0.35, 0.5, 0.75, 1.0, 1.3, 1.4):
            raise ValueError("If imagenet weights are being loaded, alpha must be one of "
                             "`0.35`, `0.50`, `0.75`, `1.0`, `1.3` or `1.4` only; Received "
                             "`alpha=%s`" % (alpha,))
        if rows != cols or rows not in _SIZES:
            rows = 224
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    ax = 1 if first else -1
    x = L.Conv2D(make_divisible(32 * alpha, 8), kernel_size=3, strides=(2, 2), padding="same",
                 use_bias=False, name="Conv1")(img_input)
    x = L.BatchNormalization(axis=ax, epsilon=1e-3, momentum=0.999, name="bn_Conv1")(x)
    x = L.ReLU(6.0, name="Conv1_relu")(x)
    for block_id, (filters, stride, expansion) in enumerate(_BLOCKS):
        x = _inverted_res_block(x, filters=filters, alpha=alpha, stride=stride,
                                expansion=expansion, block_id=block_id)
    last = make_divisible(1280 * alpha, 8) if alpha > 1.0 else 1280
    x = L.Conv2D(last, kernel_size=1, use_bias=False, name="Conv_1")(x)
    x = L.BatchNormalization(axis=ax, epsilon=1e-3, momentum=0.999, name="Conv_1_bn")(x)
    x = L.ReLU(6.0, name="out_relu")(x)
    if include_top:
        x = L.GlobalAveragePooling2D()(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = L.Dense(classes, activation=classifier_activation, name="predictions")(x)
    elif pooling == "avg":
        x = L.GlobalAveragePooling2D()(x)
    elif pooling == "max":
        x = L.GlobalMaxPooling2D()(x)
    fname = "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_%s_%s%s.h5" % (
        float(alpha), rows, "" if include_top else "_no_top")
    return imagenet_utils.finish_model(input_tensor, img_input, x,
                                       "mobilenetv2_%0.2f_%s" % (alpha, rows), weights, fname)


def preprocess_input(x, data_format=None):
    """tf mode: scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5, **kwargs):
    return imagenet_utils.decode_predictions(preds, top=top, **kwargs)
