"""``tf.keras.preprocessing.sequence``: ``pad_sequences`` and
``timeseries_dataset_from_array`` (aliases of keras.utils')."""

from mixprec.keras.utils.data_prep import (  # noqa: F401
    pad_sequences, timeseries_dataset_from_array)

__all__ = ["pad_sequences", "timeseries_dataset_from_array"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
