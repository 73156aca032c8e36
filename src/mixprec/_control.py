"""``tf.print``, ``tf.cond`` and ``tf.while_loop``: what must behave the same traced and
eager.

``print`` inside a traced function is a host node of the graph (it prints at every call,
replays included); ``cond`` on a traced predicate runs both branches once while tracing
and selects on the device (a branch with state effects breaks the graph instead); a ``while_loop`` whose condition is a
tensor while tracing is a loop node (src/mixprec/_loops.py). Computing belongs to the core.
"""

import os
import sys

import numpy as np

from mixprec import _core, _nest

__all__ = ["print", "cond", "while_loop"]

_builtin_print = print


def _fmt_array(a, summarize):
    if a.ndim == 0:
        return _fmt_scalar(a.item())
    edge = summarize if summarize is not None and summarize >= 0 else max(a.shape) + 1

    def rec(x):
        if x.ndim == 1:
            n = x.shape[0]
            items = [_fmt_scalar(v) for v in (x.tolist() if n <= 2 * edge else
                                              x[:edge].tolist() + [None] + x[-edge:].tolist())]
            return "[" + " ".join("..." if v == "None" else v for v in items) + "]"
        n = x.shape[0]
        rows = list(range(n)) if n <= 2 * edge else list(range(edge)) + [None] + \
            list(range(n - edge, n))
        parts = ["..." if r is None else rec(x[r]) for r in rows]
        return "[" + ("\n" + " " * 1).join(parts) + "]"
    return rec(a)


def _fmt_scalar(v):
    if v is None:
        return "None"
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float):
        return "%g" % v if v == v and abs(v) not in (float("inf"),) else \
            ("nan" if v != v else ("inf" if v > 0 else "-inf"))
    return str(v)


def _format(values, sep, summarize):
    out = []
    for v in values:
        if isinstance(v, _core.Tensor):
            out.append(_fmt_array(np.asarray(v.numpy()), summarize))
        elif isinstance(v, (list, tuple)) and not isinstance(v, str):
            out.append("[" + ", ".join(_format([x], sep, summarize) for x in v) + "]")
        elif isinstance(v, dict):
            out.append("{" + ", ".join("%r: %s" % (k, _format([v[k]], sep, summarize))
                                       for k in sorted(v, key=repr)) + "}")
        else:
            out.append(str(v))
    return sep.join(out)


def _write(text, stream):
    if isinstance(stream, str) and stream.startswith("file://"):
        with open(stream[len("file://"):], "a") as f:
            f.write(text)
        return
    fd = 1 if stream is sys.stdout or stream is sys.__stdout__ else 2
    if stream is not None and stream not in (sys.stdout, sys.stderr, sys.__stdout__,
                                             sys.__stderr__):
        if hasattr(stream, "write"):
            stream.write(text)
            return
    try:
        (sys.stdout if fd == 1 else sys.stderr).flush()
    except Exception:  # noqa: BLE001 - a closed stream must not stop printing
        pass
    os.write(fd, text.encode())


def print(*inputs, output_stream=None, summarize=3, sep=" ", end="\n", name=None):  # noqa: A001
    """``tf.print``: writes at the file-descriptor level (stderr by default); inside a
    traced function it runs at every call."""
    stream = sys.stderr if output_stream is None else output_stream
    leaves = _nest.flatten(list(inputs))
    tensors = [x.read_value() if isinstance(x, _core.Variable) else x for x in leaves]
    tensors = [x for x in tensors if isinstance(x, _core.Tensor)]

    def emit(*values):
        it = iter(values)
        vals = [next(it) if isinstance(x, (_core.Tensor, _core.Variable)) else x for x in leaves]
        _write(_format(_nest.pack_sequence_as(list(inputs), vals), sep, summarize) + end,
               stream)

    dry = _core.graph_recording()
    if dry is not None:
        _core.graph_record_host(emit, tensors)  # runs at every replay
        if not dry:  # this call runs for real: print now, without breaking the graph
            tok = _core.graph_suspend()
            try:
                emit(*tensors)
            finally:
                _core.graph_resume(tok)
        return None
    emit(*tensors)
    return None


def _side_effect_nodes(g):
    return sum(1 for n in g.nodes() if n["kind"] in ("AssignVariable", "OptimizerStep", "Host",
                                                      "HostCall") or
               n["kind"] == "Loop" and n["flags"] & _core.GNODE_FLAG_EFFECT)


def traced_branches(pred, fns, what):
    """Runs every branch of a conditional on a traced ``pred`` (tf.cond's way), the branches
    this call does not take with their variable writes and prints recorded only. Returns
    ``(taken, results, broke)``: ``taken`` is the index of the branch this call takes
    (0 = true) and ``broke`` is True when a branch had state effects, in which case the graph
    is broken (the signature runs eagerly from now on, one warning) and the caller must
    return ``results[taken]``. None when ``pred`` is not traced in a live graph."""
    from mixprec import _function
    if isinstance(pred, _core.Variable):
        pred = pred.read_value()
    g = getattr(_function._state, "graph", None)
    if not (isinstance(pred, _core.Tensor) and _core.graph_recording() is not None and
            g is not None and not g.broken and _core.graph_is_traced(pred)):
        return None
    outer_dry = bool(_core.graph_recording())  # a dry trace, or inside a branch not taken
    taken = 0
    if not outer_dry:  # this call runs for real: its predicate has a value
        tok = _core.graph_suspend()
        try:
            taken = 0 if bool(pred) else 1
        finally:
            _core.graph_resume(tok)
    results = []
    gated = True
    for i, fn in enumerate(fns):
        start, before = g.n_nodes, _side_effect_nodes(g)
        prev = _core.graph_set_effects_dry(outer_dry or i != taken)
        try:
            results.append(fn())
        finally:
            _core.graph_set_effects_dry(prev)
        if gated and not g.broken and _side_effect_nodes(g) != before:
            # the branch's variable writes and prints run at a replay only when its side
            # of the predicate holds (TensorFlow's cond); what cannot be gated (an
            # optimizer step, a loop with effects, an effect under a nested condition)
            # breaks the graph
            try:
                g.guard_effects(start, pred, i == 1)
            except ValueError:
                gated = False
    if not gated:
        _core.graph_break("an optimizer step, a loop with effects or a nested conditional "
                          "effect inside %s on a traced tensor" % what)
        return taken, results, True
    return taken, results, False


def cond(pred, true_fn=None, false_fn=None, name=None):
    """``tf.cond``. Traced with a predicate computed by the function: both branches run
    once while tracing and the results are selected on the device (branches must return
    the same structure and dtypes); a branch's variable writes and prints run at a replay
    only on its side of the predicate (an optimizer step there breaks the graph)."""
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("true_fn and false_fn must be callable.")
    if isinstance(pred, _core.Variable):
        pred = pred.read_value()
    run = traced_branches(pred, (true_fn, false_fn), "tf.cond")
    if run is not None:
        from mixprec import _ops
        taken, (a, b), broke = run
        _check_same_outputs(a, b)
        if broke:
            return (a, b)[taken]

        def sel(x, y):
            number = (bool, int, float)
            if isinstance(x, _core.Tensor) or isinstance(y, _core.Tensor) or \
                    isinstance(x, number) and isinstance(y, number) and x != y:
                x = _core.convert_to_tensor(x)
                y = _core.convert_to_tensor(y, x.dtype)
                return _ops.where(pred, x, y)
            if x is y or x == y:
                return x
            bool(pred)  # a Python value that differs by branch needs the value: a break
            return x
        return _nest.map_structure(sel, a, b)
    return true_fn() if bool(pred) else false_fn()


def _check_same_outputs(a, b):
    """TensorFlow's check on a traced tf.cond: same structure, and tensors of one dtype."""
    def error(detail):
        raise TypeError("true_fn and false_fn arguments to tf.cond must have the same "
                        "number, type, and overall structure of return values.\n%s" % detail)
    try:
        _nest.map_structure(lambda x, y: None, a, b)
    except (ValueError, TypeError) as e:
        error(e)

    def dtype(v):
        if isinstance(v, (_core.Tensor, _core.Variable)):
            return v.dtype
        if isinstance(v, (bool, int, float)):  # a branch's Python number becomes a tensor
            return _core.convert_to_tensor(v).dtype
        return None

    def check(x, y):
        if dtype(x) is None or dtype(y) is None:
            return  # other Python values: selected below (a difference needs the predicate)
        if dtype(x) != dtype(y):
            error("%s and %s have different types" % (x, y))
    _nest.map_structure(check, a, b)


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, maximum_iterations=None, name=None):
    """``tf.while_loop``: runs ``body`` while ``cond`` holds; traced, a condition that is a
    tensor makes a loop node replayed in C (docs/function.md)."""
    if not callable(cond):
        raise TypeError("cond must be callable.")
    if not callable(body):
        raise TypeError("body must be callable.")
    from mixprec import _loops
    traced = _loops.while_loop_traced(cond, body, loop_vars, maximum_iterations,
                                      shape_invariants)
    if traced is not None:  # a traced condition: a loop node replayed in C
        return traced
    single = not isinstance(loop_vars, (list, tuple))
    vars_ = [loop_vars] if single else list(loop_vars)
    i = 0
    while maximum_iterations is None or i < int(maximum_iterations):
        c = cond(*vars_)
        if not bool(c):
            break
        out = body(*vars_)
        if not isinstance(out, (list, tuple)) or (single and len(out) != 1):
            out = [out]
        vars_ = list(out)
        i += 1
    if single:
        return vars_[0]
    return type(loop_vars)(vars_) if isinstance(loop_vars, tuple) and \
        not hasattr(loop_vars, "_fields") else vars_ if isinstance(loop_vars, list) else \
        type(loop_vars)(*vars_)
