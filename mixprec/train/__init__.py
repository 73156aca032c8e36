"""``tf.train``: training utilities (``experimental.enable_mixed_precision_graph_rewrite``)."""

from mixprec.train import experimental  # noqa: F401

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
