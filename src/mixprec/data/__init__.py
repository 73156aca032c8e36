"""``tf.data``: Dataset pipelines over in-memory arrays.

The pipeline is host orchestration (which rows, in what order, how many per batch);
batches are gathered by NumPy in one call each and handed to the core as tensors.
"""

from mixprec.data.dataset import (  # noqa: F401
    AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset, DatasetIterator)
from mixprec.data._options import (  # noqa: F401
    Iterator, NumpyIterator, Options, ThreadingOptions)
from mixprec.data._nested_datasets import DatasetSpec  # noqa: F401
from mixprec.data import experimental  # noqa: F401

Iterator.register(DatasetIterator)

__all__ = ["Dataset", "DatasetSpec", "AUTOTUNE", "experimental", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY",
           "Iterator", "NumpyIterator", "Options", "ThreadingOptions"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
