"""``tf.keras.preprocessing``: the names tf-keras 2.21 still exports here (the dataset
builders, ``image`` and ``sequence`` helpers). Aliases only: the code is in keras/utils/."""

from mixprec.keras.preprocessing import image, sequence  # noqa: F401
from mixprec.keras.utils.data_prep import timeseries_dataset_from_array  # noqa: F401
from mixprec.keras.utils.image_dataset import image_dataset_from_directory  # noqa: F401

__all__ = ["image", "sequence", "image_dataset_from_directory",
           "timeseries_dataset_from_array"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
