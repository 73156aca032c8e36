"""``tf.mixed_precision`` (TF 2.1–2.3's home of the loss-scale classes)."""

from mixprec.mixed_precision import experimental  # noqa: F401

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
