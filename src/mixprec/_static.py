"""Static shapes for library code while tracing (docs/function.md "Static shapes").

Library code reads traced values' real sizes (``x.shape``); where its result's static
shape is known better than the op's rule gives (a Dense on rank 3, Flatten), it declares
it here. Owns those two calls only; it must never declare a size the value may not have.
"""

from mixprec import _core

__all__ = ["shape", "declare", "sizes_read", "forget_sizes_read"]


def shape(x):
    """x's static TensorShape while a function traces (None for a dimension the graph
    stands for any size of), else its shape."""
    return _core.static_shape(x)


def declare(out, dims):
    """Declares ``out``'s static shape ``dims`` (ints: its sizes, None: unknown) while a
    function traces; returns ``out``."""
    if _core.graph_recording() is not None and isinstance(out, _core.Tensor):
        try:
            _core.graph_set_static(out, list(dims))
        except ValueError:
            pass  # (a size that does not fit: the op's own rule stands)
    return out


def sizes_read():
    """Whether library code read a real size that the static shapes leave unknown in the
    graph being traced (from then on fills and ranges are unknown); None when nothing
    traces."""
    tainted = getattr(_core, "graph_static_tainted", None)  # (an older build: no scoping)
    return tainted() if tainted is not None and _core.graph_recording() is not None else None


def forget_sizes_read(state):
    """Restores ``sizes_read()``'s earlier state after library code whose real-size reads
    reach no later op (an einsum, a Keras layer's bookkeeping: their results' static
    shapes are declared or follow the ops' rules)."""
    if state is not None and _core.graph_recording() is not None:
        _core.graph_static_tainted(state)
