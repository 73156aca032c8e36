"""``keras.applications.efficientnet``: EfficientNetB0-B7 (MBConv blocks with
squeeze-and-excitation, swish, stochastic-depth dropout; width/depth scaled per variant),
tf-keras 2.21's names (block1a_..., stem_*, top_*); the model rescales its own inputs
(``preprocess_input`` is the identity). Builds a functional Model only."""

import copy
import math

from mixprec.keras.applications import imagenet_utils

__all__ = ["EfficientNetB%d" % i for i in range(8)] + ["preprocess_input",
                                                        "decode_predictions"]

_BLOCKS_ARGS = [
    dict(kernel_size=3, repeats=1, filters_in=32, filters_out=16, expand_ratio=1, strides=1),
    dict(kernel_size=3, repeats=2, filters_in=16, filters_out=24, expand_ratio=6, strides=2),
    dict(kernel_size=5, repeats=2, filters_in=24, filters_out=40, expand_ratio=6, strides=2),
    dict(kernel_size=3, repeats=3, filters_in=40, filters_out=80, expand_ratio=6, strides=2),
    dict(kernel_size=5, repeats=3, filters_in=80, filters_out=112, expand_ratio=6, strides=1),
    dict(kernel_size=5, repeats=4, filters_in=112, filters_out=192, expand_ratio=6, strides=2),
    dict(kernel_size=3, repeats=1, filters_in=192, filters_out=320, expand_ratio=6, strides=1),
]
for _a in _BLOCKS_ARGS:
    _a.update(id_skip=True, se_ratio=0.25)

CONV_KERNEL_INITIALIZER = {"class_name": "VarianceScaling",
                           "config": {"scale": 2.0, "mode": "fan_out",
                                      "distribution": "truncated_normal"}}
DENSE_KERNEL_INITIALIZER = {"class_name": "VarianceScaling",
                            "config": {"scale": 1.0 / 3.0, "mode": "fan_out",
                                       "distribution": "uniform"}}
IMAGENET_STDDEV_RGB = [0.229, 0.224, 0.225]


def _init(spec):
    from mixprec.keras import initializers

    return initializers.get(copy.deepcopy(spec))


def _mbconv(inputs, activation, drop_rate, name, filters_in, filters_out, kernel_size, strides,
            expand_ratio, se_ratio, id_skip):
    from mixprec.keras import backend, layers as L

    ax = 3 if backend.image_data_format() == "channels_last" else 1
    filters = filters_in * expand_ratio
    x = inputs
    if expand_ratio != 1:
        x = L.Conv2D(filters, 1, padding="same", use_bias=False,
                     kernel_initializer=_init(CONV_KERNEL_INITIALIZER),
                     name=name + "expand_conv")(x)
        x = L.BatchNormalization(axis=ax, name=name + "expand_bn")(x)
        x = L.Activation(activation, name=name + "expand_activation")(x)
    if strides == 2:
        x = L.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, kernel_size),
                            name=name + "dwconv_pad")(x)
    x = L.DepthwiseConv2D(kernel_size, strides=strides,
                          padding="valid" if strides == 2 else "same", use_bias=False,
                          depthwise_initializer=_init(CONV_KERNEL_INITIALIZER),
                          name=name + "dwconv")(x)
    x = L.BatchNormalization(axis=ax, name=name + "bn")(x)
    x = L.Activation(activation, name=name + "activation")(x)
    if 0 < se_ratio <= 1:
        filters_se = max(1, int(filters_in * se_ratio))
        se = L.GlobalAveragePooling2D(name=name + "se_squeeze")(x)
        se = L.Reshape((filters, 1, 1) if ax == 1 else (1, 1, filters),
                       name=name + "se_reshape")(se)
        se = L.Conv2D(filters_se, 1, padding="same", activation=activation,
                      kernel_initializer=_init(CONV_KERNEL_INITIALIZER),
                      name=name + "se_reduce")(se)
        se = L.Conv2D(filters, 1, padding="same", activation="sigmoid",
                      kernel_initializer=_init(CONV_KERNEL_INITIALIZER),
                      name=name + "se_expand")(se)
        x = L.multiply([x, se], name=name + "se_excite")
    x = L.Conv2D(filters_out, 1, padding="same", use_bias=False,
                 kernel_initializer=_init(CONV_KERNEL_INITIALIZER),
                 name=name + "project_conv")(x)
    x = L.BatchNormalization(axis=ax, name=name + "project_bn")(x)
    if id_skip and strides == 1 and filters_in == filters_out:
        if drop_rate > 0:
            x = L.Dropout(drop_rate, noise_shape=(None, 1, 1, 1), name=name + "drop")(x)
        x = L.add([x, inputs], name=name + "add")
    return x


def EfficientNet(width_coefficient, depth_coefficient, default_size, dropout_rate=0.2,
                 drop_connect_rate=0.2, depth_divisor=8, activation="swish",
                 blocks_args="default", model_name="efficientnet", include_top=True,
                 weights="imagenet", input_tensor=None, input_shape=None, pooling=None,
                 classes=1000, classifier_activation="softmax"):
    """The scaled EfficientNet family builder (tf-keras' ``efficientnet.EfficientNet``)."""
    import mixprec as tf
    from mixprec.keras import backend, layers as L

    if blocks_args == "default":
        blocks_args = _BLOCKS_ARGS
    imagenet_utils.check_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, default_size=default_size, min_size=32,
        data_format=backend.image_data_format(), require_flatten=include_top, weights=weights)
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    ax = 3 if backend.image_data_format() == "channels_last" else 1

    def round_filters(filters, divisor=depth_divisor):
        filters *= width_coefficient
        new_filters = max(divisor, int(filters + divisor / 2) // divisor * divisor)
        if new_filters < 0.9 * filters:
            new_filters += divisor
        return int(new_filters)

    def round_repeats(repeats):
        return int(math.ceil(depth_coefficient * repeats))

    x = L.Rescaling(1.0 / 255.0)(img_input)
    x = L.Normalization(axis=ax)(x)
    if weights == "imagenet":
        # the published weights expect this extra per-channel scaling (as tf-keras applies)
        shape = [1, 3, 1, 1] if ax == 1 else [1, 1, 1, 3]
        x = tf.math.multiply(x, tf.reshape([1.0 / math.sqrt(s) for s in IMAGENET_STDDEV_RGB],
                                           shape))
    x = L.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, 3), name="stem_conv_pad")(x)
    x = L.Conv2D(round_filters(32), 3, strides=2, padding="valid", use_bias=False,
                 kernel_initializer=_init(CONV_KERNEL_INITIALIZER), name="stem_conv")(x)
    x = L.BatchNormalization(axis=ax, name="stem_bn")(x)
    x = L.Activation(activation, name="stem_activation")(x)
    blocks_args = copy.deepcopy(blocks_args)
    b = 0
    total = float(sum(round_repeats(a["repeats"]) for a in blocks_args))
    for i, args in enumerate(blocks_args):
        args["filters_in"] = round_filters(args["filters_in"])
        args["filters_out"] = round_filters(args["filters_out"])
        for j in range(round_repeats(args.pop("repeats"))):
            if j > 0:
                args["strides"] = 1
                args["filters_in"] = args["filters_out"]
            x = _mbconv(x, activation, drop_connect_rate * b / total,
                        name="block%d%s_" % (i + 1, chr(j + 97)), **args)
            b += 1
    x = L.Conv2D(round_filters(1280), 1, padding="same", use_bias=False,
                 kernel_initializer=_init(CONV_KERNEL_INITIALIZER), name="top_conv")(x)
    x = L.BatchNormalization(axis=ax, name="top_bn")(x)
    x = L.Activation(activation, name="top_activation")(x)
    if include_top:
        x = L.GlobalAveragePooling2D(name="avg_pool")(x)
        if dropout_rate > 0:
            x = L.Dropout(dropout_rate, name="top_dropout")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = L.Dense(classes, activation=classifier_activation,
                    kernel_initializer=_init(DENSE_KERNEL_INITIALIZER), name="predictions")(x)
    elif pooling == "avg":
        x = L.GlobalAveragePooling2D(name="avg_pool")(x)
    elif pooling == "max":
        x = L.GlobalMaxPooling2D(name="max_pool")(x)
    fname = model_name + (".h5" if include_top else "_notop.h5")
    return imagenet_utils.finish_model(input_tensor, img_input, x, model_name, weights, fname)


def _variant(i, width, depth, size, dropout):
    def build(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
              pooling=None, classes=1000, classifier_activation="softmax", **kwargs):
        return EfficientNet(width, depth, size, dropout, model_name="efficientnetb%d" % i,
                            include_top=include_top, weights=weights, input_tensor=input_tensor,
                            input_shape=input_shape, pooling=pooling, classes=classes,
                            classifier_activation=classifier_activation, **kwargs)

    build.__name__ = build.__qualname__ = "EfficientNetB%d" % i
    build.__doc__ = ("Instantiates EfficientNetB%d (default input %dx%d; ``weights=None`` or "
                     "a local .h5 path)." % (i, size, size))
    return build


EfficientNetB0 = _variant(0, 1.0, 1.0, 224, 0.2)
EfficientNetB1 = _variant(1, 1.0, 1.1, 240, 0.2)
EfficientNetB2 = _variant(2, 1.1, 1.2, 260, 0.3)
EfficientNetB3 = _variant(3, 1.2, 1.4, 300, 0.3)
EfficientNetB4 = _variant(4, 1.4, 1.8, 380, 0.4)
EfficientNetB5 = _variant(5, 1.6, 2.2, 456, 0.4)
EfficientNetB6 = _variant(6, 1.8, 2.6, 528, 0.5)
EfficientNetB7 = _variant(7, 2.0, 3.1, 600, 0.5)


def preprocess_input(x, data_format=None):
    """The identity: EfficientNet models rescale and normalise their inputs themselves."""
    return x


def decode_predictions(preds, top=5, **kwargs):
    return imagenet_utils.decode_predictions(preds, top=top, **kwargs)
