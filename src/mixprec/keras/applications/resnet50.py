"""``keras.applications.resnet50``: the older module name of ResNet50 (as tf-keras keeps it);
only re-exports resnet.py."""

from mixprec.keras.applications.resnet import (  # noqa: F401
    ResNet50, decode_predictions, preprocess_input)

__all__ = ["ResNet50", "preprocess_input", "decode_predictions"]
