"""``keras.applications.densenet``: DenseNet121/169/201 (dense blocks of BN-ReLU-1x1-BN-
ReLU-3x3 concatenations, transition blocks halving channels), tf-keras 2.21's names
(conv2_block1_0_bn, pool2_conv, ...); torch-mode preprocessing. Builds a Model only."""

from mixprec.keras.applications import imagenet_utils

__all__ = ["DenseNet121", "DenseNet169", "DenseNet201", "preprocess_input",
           "decode_predictions"]

_EPS = 1.001e-5
_NAMES = {(6, 12, 24, 16): "densenet121", (6, 12, 32, 32): "densenet169",
          (6, 12, 48, 32): "densenet201"}


def _ax():
    from mixprec.keras import backend

    return 3 if backend.image_data_format() == "channels_last" else 1


def _conv_block(x, growth_rate, name):
    from mixprec.keras import layers as L

    ax = _ax()
    y = L.BatchNormalization(axis=ax, epsilon=_EPS, name=name + "_0_bn")(x)
    y = L.Activation("relu", name=name + "_0_relu")(y)
    y = L.Conv2D(4 * growth_rate, 1, use_bias=False, name=name + "_1_conv")(y)
    y = L.BatchNormalization(axis=ax, epsilon=_EPS, name=name + "_1_bn")(y)
    y = L.Activation("relu", name=name + "_1_relu")(y)
    y = L.Conv2D(growth_rate, 3, padding="same", use_bias=False, name=name + "_2_conv")(y)
    return L.Concatenate(axis=ax, name=name + "_concat")([x, y])


def _transition(x, reduction, name):
    from mixprec.keras import layers as L

    ax = _ax()
    x = L.BatchNormalization(axis=ax, epsilon=_EPS, name=name + "_bn")(x)
    x = L.Activation("relu", name=name + "_relu")(x)
    x = L.Conv2D(int(x.shape[ax] * reduction), 1, use_bias=False, name=name + "_conv")(x)
    return L.AveragePooling2D(2, strides=2, name=name + "_pool")(x)


def DenseNet(blocks, include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
             pooling=None, classes=1000, classifier_activation="softmax"):
    """A DenseNet with ``blocks`` conv blocks in each of its four dense blocks."""
    from mixprec.keras import backend, layers as L

    imagenet_utils.check_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, default_size=224, min_size=32, data_format=backend.image_data_format(),
        require_flatten=include_top, weights=weights)
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    ax = _ax()
    x = L.ZeroPadding2D(padding=((3, 3), (3, 3)))(img_input)
    x = L.Conv2D(64, 7, strides=2, use_bias=False, name="conv1/conv")(x)
    x = L.BatchNormalization(axis=ax, epsilon=_EPS, name="conv1/bn")(x)
    x = L.Activation("relu", name="conv1/relu")(x)
    x = L.ZeroPadding2D(padding=((1, 1), (1, 1)))(x)
    x = L.MaxPooling2D(3, strides=2, name="pool1")(x)
    for stage, n in enumerate(blocks, 2):
        for i in range(n):
            x = _conv_block(x, 32, name="conv%d_block%d" % (stage, i + 1))
        if stage < 5:
            x = _transition(x, 0.5, name="pool%d" % stage)
    x = L.BatchNormalization(axis=ax, epsilon=_EPS, name="bn")(x)
    x = L.Activation("relu", name="relu")(x)
    if include_top:
        x = L.GlobalAveragePooling2D(name="avg_pool")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = L.Dense(classes, activation=classifier_activation, name="predictions")(x)
    elif pooling == "avg":
        x = L.GlobalAveragePooling2D(name="avg_pool")(x)
    elif pooling == "max":
        x = L.GlobalMaxPooling2D(name="max_pool")(x)
    name = _NAMES.get(tuple(blocks), "densenet")
    fname = "%s_weights_tf_dim_ordering_tf_kernels%s.h5" % (name,
                                                           "" if include_top else "_notop")
    return imagenet_utils.finish_model(input_tensor, img_input, x, name, weights, fname)


def _variant(blocks):
    def build(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
              pooling=None, classes=1000, classifier_activation="softmax"):
        return DenseNet(list(blocks), include_top, weights, input_tensor, input_shape, pooling,
                        classes, classifier_activation)

    build.__name__ = build.__qualname__ = _NAMES[blocks].replace("densenet", "DenseNet")
    build.__doc__ = "Instantiates %s (``weights=None`` or a local .h5 path)." % build.__name__
    return build


DenseNet121 = _variant((6, 12, 24, 16))
DenseNet169 = _variant((6, 12, 32, 32))
DenseNet201 = _variant((6, 12, 48, 32))


def preprocess_input(x, data_format=None):
    """torch mode: scaled to [0, 1], then normalised with the ImageNet means and stds."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="torch")


def decode_predictions(preds, top=5, **kwargs):
    return imagenet_utils.decode_predictions(preds, top=top, **kwargs)
