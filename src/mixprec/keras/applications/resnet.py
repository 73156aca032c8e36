"""``keras.applications.resnet``: ResNet50/101/152 (v1 bottleneck blocks) and the builder
shared with resnet_v2 (pre-activation blocks), with tf-keras 2.21's layer names, order and
parameter counts. Builds a functional Model only; no numbers are computed here."""

from mixprec.keras.applications import imagenet_utils

__all__ = ["ResNet50", "ResNet101", "ResNet152", "preprocess_input", "decode_predictions"]

_EPS = 1.001e-5


def _layers():
    from mixprec.keras import layers

    return layers


def _bn_axis():
    from mixprec.keras import backend

    return 3 if backend.image_data_format() == "channels_last" else 1


def _bottleneck(x, filters, stride=1, conv_shortcut=True, name=None):
    """v1 block: 1x1 -> 3x3 -> 1x1 (x4 filters), BN after each conv, ReLU after the add."""
    L, ax = _layers(), _bn_axis()
    if conv_shortcut:
        shortcut = L.Conv2D(4 * filters, 1, strides=stride, name=name + "_0_conv")(x)
        shortcut = L.BatchNormalization(axis=ax, epsilon=_EPS, name=name + "_0_bn")(shortcut)
    else:
        shortcut = x
    x = L.Conv2D(filters, 1, strides=stride, name=name + "_1_conv")(x)
    x = L.BatchNormalization(axis=ax, epsilon=_EPS, name=name + "_1_bn")(x)
    x = L.Activation("relu", name=name + "_1_relu")(x)
    x = L.Conv2D(filters, 3, padding="SAME", name=name + "_2_conv")(x)
    x = L.BatchNormalization(axis=ax, epsilon=_EPS, name=name + "_2_bn")(x)
    x = L.Activation("relu", name=name + "_2_relu")(x)
    x = L.Conv2D(4 * filters, 1, name=name + "_3_conv")(x)
    x = L.BatchNormalization(axis=ax, epsilon=_EPS, name=name + "_3_bn")(x)
    x = L.Add(name=name + "_add")([shortcut, x])
    return L.Activation("relu", name=name + "_out")(x)


def stack_v1(x, filters, blocks, stride1=2, name=None):
    x = _bottleneck(x, filters, stride=stride1, name=name + "_block1")
    for i in range(2, blocks + 1):
        x = _bottleneck(x, filters, conv_shortcut=False, name="%s_block%d" % (name, i))
    return x


def _preact_block(x, filters, stride=1, conv_shortcut=False, name=None):
    """v2 block: BN-ReLU first; the stride sits on the 3x3 conv; no activation after add."""
    L, ax = _layers(), _bn_axis()
    pre = L.BatchNormalization(axis=ax, epsilon=_EPS, name=name + "_preact_bn")(x)
    pre = L.Activation("relu", name=name + "_preact_relu")(pre)
    if conv_shortcut:
        shortcut = L.Conv2D(4 * filters, 1, strides=stride, name=name + "_0_conv")(pre)
    else:
        shortcut = L.MaxPooling2D(1, strides=stride)(x) if stride > 1 else x
    x = L.Conv2D(filters, 1, strides=1, use_bias=False, name=name + "_1_conv")(pre)
    x = L.BatchNormalization(axis=ax, epsilon=_EPS, name=name + "_1_bn")(x)
    x = L.Activation("relu", name=name + "_1_relu")(x)
    x = L.ZeroPadding2D(padding=((1, 1), (1, 1)), name=name + "_2_pad")(x)
    x = L.Conv2D(filters, 3, strides=stride, use_bias=False, name=name + "_2_conv")(x)
    x = L.BatchNormalization(axis=ax, epsilon=_EPS, name=name + "_2_bn")(x)
    x = L.Activation("relu", name=name + "_2_relu")(x)
    x = L.Conv2D(4 * filters, 1, name=name + "_3_conv")(x)
    return L.Add(name=name + "_out")([shortcut, x])


def stack_v2(x, filters, blocks, stride1=2, name=None):
    x = _preact_block(x, filters, conv_shortcut=True, name=name + "_block1")
    for i in range(2, blocks):
        x = _preact_block(x, filters, name="%s_block%d" % (name, i))
    return _preact_block(x, filters, stride=stride1, name="%s_block%d" % (name, blocks))


def ResNet(stack_fn, preact, use_bias, model_name="resnet", include_top=True,
           weights="imagenet", input_tensor=None, input_shape=None, pooling=None,
           classes=1000, classifier_activation="softmax", **kwargs):
    """The ResNet stem, ``stack_fn``'s stages and the top (tf-keras' ``resnet.ResNet``)."""
    kwargs.pop("layers", None)
    if kwargs:
        raise ValueError("Unknown argument(s): %s" % (kwargs,))
    imagenet_utils.check_weights(weights, include_top, classes)
    from mixprec.keras import backend

    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, default_size=224, min_size=32, data_format=backend.image_data_format(),
        require_flatten=include_top, weights=weights)
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    L, ax = _layers(), _bn_axis()
    x = L.ZeroPadding2D(padding=((3, 3), (3, 3)), name="conv1_pad")(img_input)
    x = L.Conv2D(64, 7, strides=2, use_bias=use_bias, name="conv1_conv")(x)
    if not preact:
        x = L.BatchNormalization(axis=ax, epsilon=_EPS, name="conv1_bn")(x)
        x = L.Activation("relu", name="conv1_relu")(x)
    x = L.ZeroPadding2D(padding=((1, 1), (1, 1)), name="pool1_pad")(x)
    x = L.MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    x = stack_fn(x)
    if preact:
        x = L.BatchNormalization(axis=ax, epsilon=_EPS, name="post_bn")(x)
        x = L.Activation("relu", name="post_relu")(x)
    x = top(x, include_top, pooling, classes, classifier_activation, weights)
    suffix = "" if include_top else "_notop"
    return imagenet_utils.finish_model(
        input_tensor, img_input, x, model_name, weights,
        model_name + "_weights_tf_dim_ordering_tf_kernels%s.h5" % suffix)


def top(x, include_top, pooling, classes, classifier_activation, weights,
        pool_names=("avg_pool", "max_pool")):
    """Global average pooling + the ``predictions`` Dense, or the optional feature pooling."""
    L = _layers()
    if include_top:
        x = L.GlobalAveragePooling2D(name=pool_names[0])(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        return L.Dense(classes, activation=classifier_activation, name="predictions")(x)
    if pooling == "avg":
        return L.GlobalAveragePooling2D(name=pool_names[0])(x)
    if pooling == "max":
        return L.GlobalMaxPooling2D(name=pool_names[1])(x)
    return x


def _v1(depths, name):
    def stack_fn(x):
        x = stack_v1(x, 64, depths[0], stride1=1, name="conv2")
        x = stack_v1(x, 128, depths[1], name="conv3")
        x = stack_v1(x, 256, depths[2], name="conv4")
        return stack_v1(x, 512, depths[3], name="conv5")

    def build(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
              pooling=None, classes=1000, **kwargs):
        return ResNet(stack_fn, False, True, name, include_top, weights, input_tensor,
                      input_shape, pooling, classes, **kwargs)

    build.__name__ = build.__qualname__ = name.replace("resnet", "ResNet")
    build.__doc__ = ("Instantiates the %s architecture (tf-keras' keras.applications.%s; "
                     "``weights=None`` or a local .h5 path)." % (build.__name__, build.__name__))
    return build


ResNet50 = _v1((3, 4, 6, 3), "resnet50")
ResNet101 = _v1((3, 4, 23, 3), "resnet101")
ResNet152 = _v1((3, 8, 36, 3), "resnet152")


def preprocess_input(x, data_format=None):
    """caffe mode: RGB -> BGR, then minus the ImageNet BGR means (no scaling)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")


def decode_predictions(preds, top=5, **kwargs):
    return imagenet_utils.decode_predictions(preds, top=top, **kwargs)
