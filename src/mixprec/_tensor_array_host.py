"""A ``tf.TensorArray`` made while a function traces: its elements live in a per-call host
list, and each of its operations is a host call of the graph (csrc/graph.h MP_GNODE_CALL)
that runs the eager TensorArray code on that list at every replay — so writes at a traced
index (a ``tf.range`` loop's counter) trace, where TensorFlow keeps a TensorList in its
while loop. Bookkeeping only: element values are the ops' (stack, slices) of the eager code.
"""

from mixprec import _core


class Holder:
    """The elements and element shape of one traced TensorArray, for the current call."""

    def __init__(self, items, shape):
        self.items = list(items)
        self.shape = None if shape is None else list(shape)


def available():
    """Does a TensorArray made now keep a per-call host list? While a graph records, and
    no tape does (its gradient needs the list-backed TensorArray's ops on the tape)."""
    return _core.graph_recording() is not None and not _core.graph_tape_recording()


def traced_size(size):
    """The size a tensor holds now, read without a graph break (it is an input of the
    host call that makes the list at every call)."""
    tok = _core.graph_suspend()
    try:
        return int(size.numpy())
    finally:
        _core.graph_resume(tok)


def begin(ta, size=None):
    """A Holder for a TensorArray made while a graph records (None when not available()).
    The graph gets a host call that makes the list anew at every call (of the size the
    tensor ``size`` holds then, when given)."""
    if not available():
        return None
    n0, shape = len(ta._items), ta._shape
    holder = Holder(ta._items, shape)

    def reset(*ts):
        holder.items = [None] * (int(ts[0].numpy()) if ts else n0)
        holder.shape = None if shape is None else list(shape)
        return []
    _core.graph_record_call(reset, [size] if size is not None else [], [])
    return holder


def _effects_dry():
    prev = _core.graph_set_effects_dry(False)
    if prev is None:
        return False
    _core.graph_set_effects_dry(prev)
    return bool(prev)


class _Paused:
    """The graph and the tapes paused: the eager code's own ops are neither recorded nor
    taped (the host call is what the graph holds)."""

    def __enter__(self):
        self._g = _core.graph_suspend()
        self._t = _core.tape_suspend_outer()
        return self

    def __exit__(self, *exc):
        _core.tape_resume_outer(self._t)
        _core.graph_resume(self._g)
        return False


def _check_index(name, index, n, dynamic):
    """TensorFlow's TensorList errors for an index out of the list (the graph's messages,
    not the eager TensorArray's)."""
    from mixprec._tensor_array import _index

    i = _index(index)
    if i < 0 or (i >= n and (name == "read" or not dynamic)):
        raise _core.InvalidArgumentError("Trying to %s element %d in a list with %d elements."
                                         % ("access" if name == "read" else "modify", i, n))


def run(ta, name, args):
    """``TensorArray.<name>(*args)`` on ta's holder: now (the tracing call is a call) and as
    a host call at every replay. Tensor arguments are the call's inputs, the others are
    kept as traced. Returns ta (for the operations that give a TensorArray) or the result."""
    from mixprec._tensor_array import TensorArray

    holder = ta._host
    if _core.graph_tape_recording():
        _core.graph_break("tf.TensorArray under a GradientTape (its gradient needs the "
                          "elements on the tape)")
    slots = [k for k, a in enumerate(args) if isinstance(a, (_core.Tensor, _core.Variable))]
    tensors = [args[k].read_value() if isinstance(args[k], _core.Variable) else args[k]
               for k in slots]

    def call(*ts, h=holder):
        vals = list(args)
        for k, t in zip(slots, ts):
            vals[k] = t
        if name in ("write", "read"):
            _check_index(name, vals[0], len(h.items), ta._dynamic_size)
        view = ta._copy(h.items)
        view._host = None
        view._shape = None if h.shape is None else list(h.shape)
        r = getattr(TensorArray, name)(view, *vals)
        if isinstance(r, TensorArray):
            h.items, h.shape = r._items, r._shape
            return []
        return [r]

    # a branch not taken (effects recorded only): the holder must not change now
    scratch = Holder(holder.items, holder.shape) if _effects_dry() else holder
    with _Paused():
        outs = [_core.identity(t) for t in call(*tensors, h=scratch)]
    if _core.graph_recording() is not None:
        _core.graph_record_call(call, tensors, outs)
    ta._shape = None if scratch.shape is None else list(scratch.shape)
    return ta if not outs else outs[0]
