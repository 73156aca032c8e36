"""``tf.compat.v1.train.experimental``: the mixed precision graph rewrite switches."""

from mixprec._amp.rewrite import (  # noqa: F401
    disable_mixed_precision_graph_rewrite, enable_mixed_precision_graph_rewrite)

__all__ = ["enable_mixed_precision_graph_rewrite", "disable_mixed_precision_graph_rewrite"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
