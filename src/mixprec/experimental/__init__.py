"""``tf.experimental``: the DLPack exchange (``tf.experimental.dlpack``) and
``tf.experimental.Optional`` (data/_optional.py). Names only; the exchange itself is in the
C glue (csrc/python/dlpack.c)."""

from mixprec.experimental import dlpack  # noqa: F401
from mixprec.data._optional import Optional  # noqa: F401

__all__ = ["dlpack", "Optional"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
