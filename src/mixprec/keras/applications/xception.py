"""``keras.applications.xception``: Xception (entry flow of strided residual blocks of
separable convolutions, eight middle-flow blocks, exit flow), tf-keras 2.21's names (its
unnamed shortcut convolutions included) and parameter counts; tf-mode preprocessing; inputs
of at least 71x71 (default 299). Builds a functional Model only."""

from mixprec.keras.applications import imagenet_utils

__all__ = ["Xception", "preprocess_input", "decode_predictions"]


def _sep(x, filters, name, L, ax, act_first=True, act_name=None):
    if act_first:
        x = L.Activation("relu", name=act_name or name + "_act")(x)
    x = L.SeparableConv2D(filters, (3, 3), padding="same", use_bias=False, name=name)(x)
    return L.BatchNormalization(axis=ax, name=name + "_bn")(x)


def _entry_block(x, filters, block, L, ax, first):
    residual = L.Conv2D(filters, (1, 1), strides=(2, 2), padding="same", use_bias=False)(x)
    residual = L.BatchNormalization(axis=ax)(residual)
    name = "block%d_sepconv" % block
    # block 2 starts right after the stem's ReLU (tf-keras names its one activation sepconv2)
    x = _sep(x, filters, name + "1", L, ax, act_first=not first)
    if first:
        x = L.Activation("relu", name=name + "2_act")(x)
        x = L.SeparableConv2D(filters, (3, 3), padding="same", use_bias=False,
                              name=name + "2")(x)
        x = L.BatchNormalization(axis=ax, name=name + "2_bn")(x)
    else:
        x = _sep(x, filters, name + "2", L, ax)
    x = L.MaxPooling2D((3, 3), strides=(2, 2), padding="same", name="block%d_pool" % block)(x)
    return L.add([x, residual])


def Xception(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
             pooling=None, classes=1000, classifier_activation="softmax"):
    """Instantiates Xception (``weights=None`` or a local .h5 path)."""
    from mixprec.keras import backend, layers as L

    imagenet_utils.check_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, default_size=299, min_size=71, data_format=backend.image_data_format(),
        require_flatten=include_top, weights=weights)
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    ax = 1 if backend.image_data_format() == "channels_first" else -1
    x = L.Conv2D(32, (3, 3), strides=(2, 2), use_bias=False, name="block1_conv1")(img_input)
    x = L.BatchNormalization(axis=ax, name="block1_conv1_bn")(x)
    x = L.Activation("relu", name="block1_conv1_act")(x)
    x = L.Conv2D(64, (3, 3), use_bias=False, name="block1_conv2")(x)
    x = L.BatchNormalization(axis=ax, name="block1_conv2_bn")(x)
    x = L.Activation("relu", name="block1_conv2_act")(x)
    for block, filters in ((2, 128), (3, 256), (4, 728)):
        x = _entry_block(x, filters, block, L, ax, first=block == 2)
    for i in range(5, 13):
        residual = x
        for k in (1, 2, 3):
            x = _sep(x, 728, "block%d_sepconv%d" % (i, k), L, ax)
        x = L.add([x, residual])
    residual = L.Conv2D(1024, (1, 1), strides=(2, 2), padding="same", use_bias=False)(x)
    residual = L.BatchNormalization(axis=ax)(residual)
    x = _sep(x, 728, "block13_sepconv1", L, ax)
    x = _sep(x, 1024, "block13_sepconv2", L, ax)
    x = L.MaxPooling2D((3, 3), strides=(2, 2), padding="same", name="block13_pool")(x)
    x = L.add([x, residual])
    for k, filters in ((1, 1536), (2, 2048)):
        name = "block14_sepconv%d" % k
        x = L.SeparableConv2D(filters, (3, 3), padding="same", use_bias=False, name=name)(x)
        x = L.BatchNormalization(axis=ax, name=name + "_bn")(x)
        x = L.Activation("relu", name=name + "_act")(x)
    if include_top:
        x = L.GlobalAveragePooling2D(name="avg_pool")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = L.Dense(classes, activation=classifier_activation, name="predictions")(x)
    elif pooling == "avg":
        x = L.GlobalAveragePooling2D()(x)
    elif pooling == "max":
        x = L.GlobalMaxPooling2D()(x)
    fname = "xception_weights_tf_dim_ordering_tf_kernels%s.h5" % ("" if include_top
                                                                 else "_notop")
    return imagenet_utils.finish_model(input_tensor, img_input, x, "xception", weights, fname)


def preprocess_input(x, data_format=None):
    """tf mode: scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5, **kwargs):
    return imagenet_utils.decode_predictions(preds, top=top, **kwargs)
