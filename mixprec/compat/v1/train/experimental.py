"""``tf.compat.v1.train.experimental``: the mixed precision graph rewrite switches."""

from mixprec._amp.rewrite import (  # noqa: F401
    disable_mixed_precision_graph_rewrite, enable_mixed_precision_graph_rewrite)

__all__ = ["enable_mixed_precision_graph_rewrite", "disable_mixed_precision_graph_rewrite"]
