"""keras.applications builds compared with tf-keras 2.21 (make_tf_applications.py writes the
golden file; tests/keras/test_applications.py reads it). Key -> ("module.Builder", kwargs);
every case is built with weights=None."""

import numpy as np

CASES = {
    "resnet50": ("resnet.ResNet50", {}),
    "resnet101": ("resnet.ResNet101", {}),
    "resnet152": ("resnet.ResNet152", {}),
    "resnet50_notop_avg": ("resnet.ResNet50",
                           dict(include_top=False, input_shape=(64, 64, 3), pooling="avg")),
    "resnet50_classes10": ("resnet.ResNet50", dict(input_shape=(32, 32, 3), classes=10,
                                                   classifier_activation=None)),
    "resnet50v2": ("resnet_v2.ResNet50V2", {}),
    "resnet101v2": ("resnet_v2.ResNet101V2", {}),
    "resnet152v2": ("resnet_v2.ResNet152V2", {}),
    "resnet50v2_notop_max": ("resnet_v2.ResNet50V2",
                             dict(include_top=False, input_shape=(96, 96, 3), pooling="max")),
    "mobilenet": ("mobilenet.MobileNet", {}),
    "mobilenet_a050_128": ("mobilenet.MobileNet", dict(alpha=0.5, input_shape=(128, 128, 3))),
    "mobilenet_notop": ("mobilenet.MobileNet",
                        dict(include_top=False, input_shape=(64, 64, 3), pooling="avg",
                             depth_multiplier=2)),
    "mobilenet_v2": ("mobilenet_v2.MobileNetV2", {}),
    "mobilenet_v2_a035_96": ("mobilenet_v2.MobileNetV2",
                             dict(alpha=0.35, input_shape=(96, 96, 3))),
    "mobilenet_v2_a130": ("mobilenet_v2.MobileNetV2", dict(alpha=1.3, input_shape=(224, 224, 3))),
    "mobilenet_v2_32_c10": ("mobilenet_v2.MobileNetV2", dict(input_shape=(32, 32, 3), classes=10)),
    "mobilenet_v2_notop": ("mobilenet_v2.MobileNetV2",
                           dict(include_top=False, input_shape=(64, 80, 3), pooling="max")),
    "vgg16": ("vgg16.VGG16", {}),
    "vgg19": ("vgg19.VGG19", {}),
    "vgg16_notop": ("vgg16.VGG16", dict(include_top=False, input_shape=(48, 48, 3))),
    "vgg19_notop_avg": ("vgg19.VGG19",
                        dict(include_top=False, input_shape=(64, 64, 3), pooling="avg")),
    "efficientnetb0": ("efficientnet.EfficientNetB0", {}),
    "efficientnetb1": ("efficientnet.EfficientNetB1", {}),
    "efficientnetb2": ("efficientnet.EfficientNetB2", {}),
    "efficientnetb3": ("efficientnet.EfficientNetB3", {}),
    "efficientnetb0_notop": ("efficientnet.EfficientNetB0",
                             dict(include_top=False, input_shape=(64, 64, 3), pooling="avg")),
    "xception": ("xception.Xception", {}),
    "xception_notop_avg": ("xception.Xception",
                           dict(include_top=False, input_shape=(71, 90, 3), pooling="avg")),
    "densenet121": ("densenet.DenseNet121", {}),
    "densenet169": ("densenet.DenseNet169", {}),
    "densenet121_notop": ("densenet.DenseNet121",
                          dict(include_top=False, input_shape=(64, 64, 3), pooling="max")),
}

PREPROCESS_FAMILIES = ["resnet", "resnet_v2", "mobilenet", "mobilenet_v2", "vgg16", "vgg19",
                       "efficientnet", "densenet", "xception"]


def preprocess_image():
    """A fixed (2, 4, 5, 3) float32 batch of pixel values in [0, 255]."""
    rng = np.random.default_rng(7)
    return (rng.random((2, 4, 5, 3)) * 255).astype("float32")
