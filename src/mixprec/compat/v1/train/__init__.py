"""``tf.compat.v1.train``: only ``experimental`` (the mixed precision graph rewrite)."""

from mixprec.compat.v1.train import experimental  # noqa: F401

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
