"""``tf.keras.preprocessing.image``: the array/file helpers (aliases of keras.utils').
``ImageDataGenerator`` and its iterators are not provided: use the augmentation layers or
``image_dataset_from_directory`` with ``Dataset.map``."""

from mixprec.keras.utils.data_prep import (  # noqa: F401
    array_to_img, img_to_array, load_img, save_img)
from mixprec.keras.utils.image_dataset import smart_resize  # noqa: F401

__all__ = ["array_to_img", "img_to_array", "load_img", "save_img", "smart_resize"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
