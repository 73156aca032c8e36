"""The remapper pass on traced graphs: Conv2D / MatMul + bias add (+ Relu) fused into one
op (csrc/graph_fuse.c), as TensorFlow's Grappler remapper makes _FusedConv2D / _FusedMatMul
inside tf.function. This module only decides whether the pass runs (the ``remapping`` and
``disable_meta_optimizer`` options of ``tf.config.optimizer.set_experimental_options``) and
counts what it did; the rewrite itself is C's.
"""

from mixprec._amp import state as _amp_state

# the number of fused nodes the last pass made on a function's graph, and on a loop's
# sub-graph (tests and debugging)
last_fused = 0
last_fused_subgraph = 0


def enabled():
    opts = _amp_state.options
    return opts.get("remapping", True) is not False and not opts.get("disable_meta_optimizer")


def fuse_graph(graph, name=None):
    """A pass of ``mixprec._function.graph_passes`` (after the AMP rewrite, as Grappler runs
    the remapper after auto_mixed_precision): returns the number of fused nodes."""
    global last_fused
    last_fused = graph.fuse() if enabled() else 0
    return last_fused


def fuse_subgraph(graph, summarize=True):
    """The same pass on a loop's body or condition (``loop_graph_passes``)."""
    global last_fused_subgraph
    last_fused_subgraph = graph.fuse() if enabled() else 0
