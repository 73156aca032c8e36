"""``tf.compat.v1``: ``mixed_precision`` and ``train.experimental`` (the graph rewrite)."""

from mixprec.compat.v1 import mixed_precision, train  # noqa: F401
from mixprec._execution import executing_eagerly  # noqa: F401

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
