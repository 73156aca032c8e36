"""``tf.compat.v1.mixed_precision``: the graph rewrite switches and the loss-scale classes."""

from mixprec._amp.rewrite import (  # noqa: F401
    disable_mixed_precision_graph_rewrite, enable_mixed_precision_graph_rewrite)
from mixprec.mixed_precision.experimental import (  # noqa: F401
    DynamicLossScale, FixedLossScale, LossScale)

__all__ = ["enable_mixed_precision_graph_rewrite", "disable_mixed_precision_graph_rewrite",
           "LossScale", "FixedLossScale", "DynamicLossScale"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
