"""``keras.applications``: standard image-classification architectures built from
mixprec's Keras layers with tf-keras 2.21's layer names and parameter counts (one module per
family), their ``preprocess_input``/``decode_predictions``. Pre-trained weights are never
downloaded: ``weights=None``, a local .h5 path, or a file already in the Keras cache."""

from mixprec.keras.applications import (  # noqa: F401
    densenet, efficientnet, imagenet_utils, mobilenet, mobilenet_v2, resnet, resnet50,
    resnet_v2, vgg16, vgg19, xception)
from mixprec.keras.applications.densenet import (  # noqa: F401
    DenseNet121, DenseNet169, DenseNet201)
from mixprec.keras.applications.efficientnet import (  # noqa: F401
    EfficientNetB0, EfficientNetB1, EfficientNetB2, EfficientNetB3, EfficientNetB4,
    EfficientNetB5, EfficientNetB6, EfficientNetB7)
from mixprec.keras.applications.mobilenet import MobileNet  # noqa: F401
from mixprec.keras.applications.mobilenet_v2 import MobileNetV2  # noqa: F401
from mixprec.keras.applications.resnet import ResNet50, ResNet101, ResNet152  # noqa: F401
from mixprec.keras.applications.resnet_v2 import (  # noqa: F401
    ResNet50V2, ResNet101V2, ResNet152V2)
from mixprec.keras.applications.vgg16 import VGG16  # noqa: F401
from mixprec.keras.applications.vgg19 import VGG19  # noqa: F401
from mixprec.keras.applications.xception import Xception  # noqa: F401

__all__ = ["DenseNet121", "DenseNet169", "DenseNet201", "EfficientNetB0", "EfficientNetB1",
           "EfficientNetB2", "EfficientNetB3", "EfficientNetB4", "EfficientNetB5",
           "EfficientNetB6", "EfficientNetB7", "MobileNet", "MobileNetV2", "ResNet50",
           "ResNet101", "ResNet152", "ResNet50V2", "ResNet101V2", "ResNet152V2", "VGG16",
           "VGG19", "Xception", "densenet", "efficientnet", "imagenet_utils", "mobilenet",
           "mobilenet_v2", "resnet", "resnet50", "resnet_v2", "vgg16", "vgg19", "xception"]
