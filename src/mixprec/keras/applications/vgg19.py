"""``keras.applications.vgg19``: VGG19 on vgg16.py's builder (four convolutions in blocks
3-5), tf-keras 2.21's names; caffe-mode preprocessing. Builds a functional Model only."""

from mixprec.keras.applications import imagenet_utils
from mixprec.keras.applications.vgg16 import build_vgg

__all__ = ["VGG19", "preprocess_input", "decode_predictions"]


def VGG19(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
          pooling=None, classes=1000, classifier_activation="softmax"):
    """Instantiates VGG19 (``weights=None`` or a local .h5 path)."""
    return build_vgg((2, 2, 4, 4, 4), "vgg19", include_top, weights, input_tensor, input_shape,
                     pooling, classes, classifier_activation)


def preprocess_input(x, data_format=None):
    """caffe mode: RGB -> BGR, then minus the ImageNet BGR means (no scaling)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")


def decode_predictions(preds, top=5, **kwargs):
    return imagenet_utils.decode_predictions(preds, top=top, **kwargs)
