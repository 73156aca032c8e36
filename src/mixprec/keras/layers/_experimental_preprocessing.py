"""``tf.keras.layers.experimental.preprocessing``: tf-keras 2.21's older endpoint of the
preprocessing layers (the same classes as keras.layers). Names only."""

from mixprec.keras.layers.image_augmentation import (  # noqa: F401
    RandomHeight, RandomRotation, RandomTranslation, RandomWidth, RandomZoom)
from mixprec.keras.layers.preprocessing import (  # noqa: F401
    CategoryEncoding, CenterCrop, Discretization, Normalization, RandomBrightness,
    RandomContrast, RandomCrop, RandomFlip, Resizing)
from mixprec.keras.layers.rescaling import Rescaling  # noqa: F401

__all__ = ["CategoryEncoding", "CenterCrop", "Discretization", "Normalization",
           "RandomBrightness", "RandomContrast", "RandomCrop", "RandomFlip", "RandomHeight",
           "RandomRotation", "RandomTranslation", "RandomWidth", "RandomZoom", "Rescaling",
           "Resizing"]
