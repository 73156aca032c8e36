"""``keras.applications.vgg16`` (and the builder vgg19 shares): stacks of 3x3 'same' ReLU
convolutions and 2x2 max pools, Flatten + fc1/fc2/predictions on top, with tf-keras 2.21's
names; caffe-mode preprocessing. Builds a functional Model only."""

from mixprec.keras.applications import imagenet_utils

__all__ = ["VGG16", "preprocess_input", "decode_predictions"]


def build_vgg(convs_per_block, name, include_top, weights, input_tensor, input_shape, pooling,
              classes, classifier_activation):
    from mixprec.keras import backend, layers as L

    imagenet_utils.check_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, default_size=224, min_size=32, data_format=backend.image_data_format(),
        require_flatten=include_top, weights=weights)
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    x = img_input
    for b, (filters, n) in enumerate(zip((64, 128, 256, 512, 512), convs_per_block), 1):
        for c in range(1, n + 1):
            x = L.Conv2D(filters, (3, 3), activation="relu", padding="same",
                         name="block%d_conv%d" % (b, c))(x)
        x = L.MaxPooling2D((2, 2), strides=(2, 2), name="block%d_pool" % b)(x)
    if include_top:
        x = L.Flatten(name="flatten")(x)
        x = L.Dense(4096, activation="relu", name="fc1")(x)
        x = L.Dense(4096, activation="relu", name="fc2")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = L.Dense(classes, activation=classifier_activation, name="predictions")(x)
    elif pooling == "avg":
        x = L.GlobalAveragePooling2D()(x)
    elif pooling == "max":
        x = L.GlobalMaxPooling2D()(x)
    fname = "%s_weights_tf_dim_ordering_tf_kernels%s.h5" % (name,
                                                           "" if include_top else "_notop")
    return imagenet_utils.finish_model(input_tensor, img_input, x, name, weights, fname)


def VGG16(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
          pooling=None, classes=1000, classifier_activation="softmax"):
    """Instantiates VGG16 (``weights=None`` or a local .h5 path)."""
    return build_vgg((2, 2, 3, 3, 3), "vgg16", include_top, weights, input_tensor, input_shape,
                     pooling, classes, classifier_activation)


def preprocess_input(x, data_format=None):
    """caffe mode: RGB -> BGR, then minus the ImageNet BGR means (no scaling)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")


def decode_predictions(preds, top=5, **kwargs):
    return imagenet_utils.decode_predictions(preds, top=top, **kwargs)
