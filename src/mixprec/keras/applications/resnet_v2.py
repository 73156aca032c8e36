"""``keras.applications.resnet_v2``: ResNet50V2/101V2/152V2 (pre-activation blocks) on the
builder of resnet.py, with tf-keras 2.21's names and parameter counts; inputs scaled to
[-1, 1] (``tf`` mode). Builds a functional Model only."""

from mixprec.keras.applications import imagenet_utils, resnet

__all__ = ["ResNet50V2", "ResNet101V2", "ResNet152V2", "preprocess_input",
           "decode_predictions"]


def _v2(depths, name):
    def stack_fn(x):
        x = resnet.stack_v2(x, 64, depths[0], name="conv2")
        x = resnet.stack_v2(x, 128, depths[1], name="conv3")
        x = resnet.stack_v2(x, 256, depths[2], name="conv4")
        return resnet.stack_v2(x, 512, depths[3], stride1=1, name="conv5")

    def build(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
              pooling=None, classes=1000, classifier_activation="softmax"):
        return resnet.ResNet(stack_fn, True, True, name, include_top, weights, input_tensor,
                             input_shape, pooling, classes,
                             classifier_activation=classifier_activation)

    build.__name__ = build.__qualname__ = name.replace("resnet", "ResNet").replace("v2", "V2")
    build.__doc__ = ("Instantiates the %s architecture (tf-keras' keras.applications.%s; "
                     "``weights=None`` or a local .h5 path)." % (build.__name__, build.__name__))
    return build


ResNet50V2 = _v2((3, 4, 6, 3), "resnet50v2")
ResNet101V2 = _v2((3, 4, 23, 3), "resnet101v2")
ResNet152V2 = _v2((3, 8, 36, 3), "resnet152v2")


def preprocess_input(x, data_format=None):
    """tf mode: scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5, **kwargs):
    return imagenet_utils.decode_predictions(preds, top=top, **kwargs)
