"""``tf.train``: training utilities (``experimental.enable_mixed_precision_graph_rewrite``)."""

from mixprec.train import experimental  # noqa: F401
