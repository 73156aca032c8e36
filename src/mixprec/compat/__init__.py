"""``tf.compat``: the ``v1`` names TensorFlow 2 still keeps (only those mixprec supports)."""

from mixprec.compat import v1  # noqa: F401

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
