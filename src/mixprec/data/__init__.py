"""``tf.data``: Dataset pipelines over in-memory arrays.

The pipeline is host orchestration (which rows, in what order, how many per batch);
batches are gathered by NumPy in one call each and handed to the core as tensors.
"""

from mixprec.data.dataset import AUTOTUNE, Dataset  # noqa: F401
from mixprec.data import experimental  # noqa: F401

__all__ = ["Dataset", "AUTOTUNE", "experimental"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
