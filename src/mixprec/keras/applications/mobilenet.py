"""``keras.applications.mobilenet``: MobileNet v1 (depthwise-separable blocks with ReLU6,
width ``alpha``, ``depth_multiplier``), tf-keras 2.21's names (conv_dw_N, conv_pw_N, ...);
tf-mode preprocessing. Builds a functional Model only."""

from mixprec.keras.applications import imagenet_utils

__all__ = ["MobileNet", "preprocess_input", "decode_predictions"]

# (pointwise filters, stride) of blocks 1..13
_BLOCKS = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1),
           (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1)]


def _channel_axis():
    from mixprec.keras import backend

    return 1 if backend.image_data_format() == "channels_first" else -1


def _sep_block(x, filters, alpha, depth_multiplier, stride, block_id):
    from mixprec.keras import layers as L

    ax = _channel_axis()
    if stride != 1:
        x = L.ZeroPadding2D(((0, 1), (0, 1)), name="conv_pad_%d" % block_id)(x)
    x = L.DepthwiseConv2D((3, 3), padding="same" if stride == 1 else "valid",
                          depth_multiplier=depth_multiplier, strides=(stride, stride),
                          use_bias=False, name="conv_dw_%d" % block_id)(x)
    x = L.BatchNormalization(axis=ax, name="conv_dw_%d_bn" % block_id)(x)
    x = L.ReLU(6.0, name="conv_dw_%d_relu" % block_id)(x)
    x = L.Conv2D(int(filters * alpha), (1, 1), padding="same", use_bias=False,
                 strides=(1, 1), name="conv_pw_%d" % block_id)(x)
    x = L.BatchNormalization(axis=ax, name="conv_pw_%d_bn" % block_id)(x)
    return L.ReLU(6.0, name="conv_pw_%d_relu" % block_id)(x)


def MobileNet(input_shape=None, alpha=1.0, depth_multiplier=1, dropout=1e-3, include_top=True,
              weights="imagenet", input_tensor=None, pooling=None, classes=1000,
              classifier_activation="softmax", **kwargs):
    """Instantiates MobileNet (``weights=None`` or a local .h5 path)."""
    from mixprec.keras import backend, layers as L

    kwargs.pop("layers", None)
    if kwargs:
        raise ValueError("Unknown argument(s): %s" % (kwargs,))
    imagenet_utils.check_weights(weights, include_top, classes)
    first = backend.image_data_format() == "channels_first"
    default_size = 224
    if input_shape is not None:
        rows, cols = (input_shape[1], input_shape[2]) if first else (input_shape[0],
                                                                     input_shape[1])
        if rows == cols and rows in (128, 160, 192, 224):
            default_size = rows
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, default_size=default_size, min_size=32,
        data_format=backend.image_data_format(), require_flatten=include_top, weights=weights)
    rows, cols = (input_shape[1], input_shape[2]) if first else (input_shape[0], input_shape[1])
    if weights == "imagenet":
        if depth_multiplier != 1:
            raise ValueError("If imagenet weights are being loaded, depth multiplier must be "
                             "1.  Received depth_multiplier=%s" % (depth_multiplier,))
        if alpha not in (0.25, 0.5, 0.75, 1.0):
            raise ValueError("If imagenet weights are being loaded, alpha can be one of"
                             "`0.25`, `0.50`, `0.75` or `1.0` only.  Received alpha=%s"
                             % (alpha,))
        if rows != cols or rows not in (128, 160, 192, 224):
            rows = 224
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    x = L.Conv2D(int(32 * alpha), (3, 3), padding="same", use_bias=False, strides=(2, 2),
                 name="conv1")(img_input)
    x = L.BatchNormalization(axis=_channel_axis(), name="conv1_bn")(x)
    x = L.ReLU(6.0, name="conv1_relu")(x)
    for block_id, (filters, stride) in enumerate(_BLOCKS, 1):
        x = _sep_block(x, filters, alpha, depth_multiplier, stride, block_id)
    if include_top:
        x = L.GlobalAveragePooling2D(keepdims=True)(x)
        x = L.Dropout(dropout, name="dropout")(x)
        x = L.Conv2D(classes, (1, 1), padding="same", name="conv_preds")(x)
        x = L.Reshape((classes,), name="reshape_2")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = L.Activation(activation=classifier_activation, name="predictions")(x)
    elif pooling == "avg":
        x = L.GlobalAveragePooling2D()(x)
    elif pooling == "max":
        x = L.GlobalMaxPooling2D()(x)
    alpha_text = {1.0: "1_0", 0.75: "7_5", 0.5: "5_0"}.get(alpha, "2_5")
    fname = "mobilenet_%s_%d_tf%s.h5" % (alpha_text, rows or 224,
                                         "" if include_top else "_no_top")
    return imagenet_utils.finish_model(input_tensor, img_input, x,
                                       "mobilenet_%0.2f_%s" % (alpha, rows), weights, fname)


def preprocess_input(x, data_format=None):
    """tf mode: scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5, **kwargs):
    return imagenet_utils.decode_predictions(preds, top=top, **kwargs)
