"""Loops inside a traced function: ``for`` over a dataset, an iterator over one or a tensor,
``while`` on a traced condition and ``tf.while_loop`` (AutoGraph's ``for_stmt`` and
``while_stmt``).

Owns tracing a loop's body (and condition) once as sub-graphs whose inputs are the loop
variables, and handing them to the core as one loop node (csrc/graph_loop.c) that replays
them per iteration in C: the body's Python side effects happen once, at trace. It must not
compute tensor values, and it leaves every loop it cannot trace to Python (a graph break
where a traced value is needed, with its one warning).
"""

import numpy as np

from mixprec import _core, _nest

__all__ = ["for_stmt", "while_stmt", "while_loop_traced", "range_", "loop_test", "set_loop_options"]


def _undefined_type():
    from mixprec import _autograph
    return _autograph._Undefined


# ---------------------------------------------------------------------------- sources

def _is_dataset(x):
    from mixprec.data.dataset import Dataset
    if isinstance(x, Dataset):
        return True
    from mixprec.distribute import input_lib
    return isinstance(x, (input_lib.DistributedDataset,
                          getattr(input_lib, "DistributedDatasetsFromFunction", ())))


def _is_dataset_iterator(x):
    from mixprec.data.dataset import DatasetIterator
    from mixprec.distribute import input_lib
    return isinstance(x, (DatasetIterator, input_lib.DistributedIterator))


class _Source:
    """A dataset (restarted at every run of the loop) or an iterator over one (continued),
    giving each element as its flat list of tensors (the structure traced)."""

    def __init__(self, iterable, restartable):
        self.iterable = iterable
        self.restartable = restartable
        self.it = None if restartable else iterable
        self.structure = None
        self.n_leaves = 0

    def rebind(self, iterator):
        """A replay iterates the call's own iterator or dataset argument (traced by its
        element spec)."""
        if self.restartable:
            self.iterable, self.it = iterator, None
        else:
            self.iterable = self.it = iterator

    def element(self, restart):
        if restart and self.restartable or self.it is None:
            self.it = iter(self.iterable)
        tok = _core.graph_suspend()
        try:
            return next(self.it)
        except StopIteration:
            return _END
        finally:
            _core.graph_resume(tok)

    def next(self, restart):
        e = self.element(restart)
        if e is _END:
            return None
        leaves = _leaves(e)
        if type(e) is not type(self.structure) or len(leaves) != self.n_leaves:
            try:  # (a dataset's elements share one structure: checked when it looks off)
                _nest.map_structure(lambda a, b: None, self.structure, e)
            except (TypeError, ValueError):
                raise TypeError("a dataset element of another structure than the traced "
                                "one: %r" % (e,)) from None
        return leaves


_END = object()


def _is_distributed(x):
    return getattr(type(x), "_mp_distributed_value", False)


def _leaves(e):
    """An element's tensors in order: its leaves, a distributed value (a distributed
    dataset's PerReplica batch) giving its components in its place."""
    out = []
    for x in _nest.flatten(e):
        if _is_distributed(x):
            out.extend(x.values)
        else:
            out.append(x)
    return out


def _repack(structure, leaves):
    """_leaves inverted: ``leaves`` in the shape of ``structure``."""
    it = iter(leaves)
    flat = [type(x)([next(it) for _ in x.values]) if _is_distributed(x) else next(it)
            for x in _nest.flatten(structure)]
    return _nest.pack_sequence_as(structure, flat)


# ---------------------------------------------------------------------------- helpers

def _loop_passes(g, summarize):
    """The function's sub-graph passes (the automatic-mixed-precision rewrite)."""
    from mixprec import _function
    for p in list(_function.loop_graph_passes):
        p(g, summarize)


def _function_state():
    from mixprec import _function
    return _function._state


def _fresh(t):
    """A new tensor with t's value (a new id): a sub-graph input distinct from t."""
    tok = _core.graph_suspend()
    try:
        return _core.identity(t)
    finally:
        _core.graph_resume(tok)


def _host_bool(t):
    tok = _core.graph_suspend()
    try:
        return bool(t)
    finally:
        _core.graph_resume(tok)


def _carry(values):
    """Splits the loop's values into loop variables (tensors, Python numbers made tensors as
    TensorFlow's AutoGraph does) and pass-through Python values. Returns (template of flat
    leaves per value, flat list of loop variables, slot of each)."""
    undefined = _undefined_type()
    flat = []
    for v in values:
        leaves = _nest.flatten(v) if not isinstance(v, undefined) else [v]
        out = []
        for x in leaves:
            if isinstance(x, _core.Tensor):
                out.append(x)
            elif isinstance(x, (bool, int, float, np.ndarray, np.generic)) and \
                    not isinstance(x, _core.Variable):
                out.append(_core.convert_to_tensor(x))
            else:
                out.append(x)
        flat.append(out)
    return flat


def _pack(values, flat):
    undefined = _undefined_type()
    return tuple(f[0] if isinstance(v, undefined) else _nest.pack_sequence_as(v, f)
                 for v, f in zip(values, flat))


def _tensor_slots(flat):
    return [(i, j) for i, f in enumerate(flat) for j, x in enumerate(f)
            if isinstance(x, _core.Tensor)]


def _name(names, i):
    return names[i] if names and i < len(names) else "loop_vars[%d]" % i


def _shape_text(t):
    dims = t.shape.as_list()
    return "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"


def _check_body_outputs(names, values, flat_in, out, what):
    """TensorFlow's loop checks on the body's results (same structure, dtypes and shapes of
    the loop variables); returns the flat results, or None when a Python value changed
    (the caller breaks the graph)."""
    undefined = _undefined_type()
    flat_out = []
    for i, (v, f, o) in enumerate(zip(values, flat_in, out)):
        if isinstance(v, undefined):
            flat_out.append([v])  # a name local to the body
            continue
        try:
            _nest.map_structure(lambda a, b: None, v, o)
            leaves = _nest.flatten(o)
        except (TypeError, ValueError):
            if all(not isinstance(x, _core.Tensor) for x in f):
                return None
            raise ValueError("'%s' does not have the same nested structure after one "
                             "iteration.\n\n  The two structures don't have the same nested "
                             "structure: %r and %r" % (_name(names, i), v, o)) from None
        res = []
        for a, b in zip(f, leaves):
            if isinstance(a, _core.Tensor):
                if isinstance(b, _core.Variable):
                    b = b.read_value()
                if not isinstance(b, _core.Tensor):
                    if b is None:
                        raise ValueError("'%s' is None after one iteration of %s; a loop "
                                         "variable must stay a tensor" % (_name(names, i), what))
                    try:
                        b = _core.convert_to_tensor(b, a.dtype)
                    except (TypeError, ValueError):
                        b = _core.convert_to_tensor(b)
                if b.dtype != a.dtype:
                    raise TypeError("'%s' has dtype %s before the loop, but dtype %s after one "
                                    "iteration" % (_name(names, i), a.dtype.name, b.dtype.name))
                if b.shape.as_list() != a.shape.as_list():
                    raise ValueError("'%s' has shape %s before the loop, but shape %s after one "
                                     "iteration. Use tf.autograph.experimental.set_loop_options "
                                     "to set shape invariants." % (
                                         _name(names, i), _shape_text(a), _shape_text(b)))
                res.append(b)
            elif a is b or _same(a, b):
                res.append(a)
            else:
                return None
        flat_out.append(res)
    return flat_out


def _same(a, b):
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - values without a plain equality differ
        return False


# ---------------------------------------------------------------------------- the loop

def set_loop_options(parallel_iterations=None, swap_memory=None, maximum_iterations=None,
                     shape_invariants=None):
    """``tf.autograph.experimental.set_loop_options``, called in a loop's body: while
    tracing, ``maximum_iterations`` bounds the loop node and ``shape_invariants`` (pairs of
    a loop variable and a shape) with an open dimension let that variable change shape —
    which a loop node cannot do, so the graph breaks and the loop runs in Python. Python
    loops ignore it (as TensorFlow's)."""
    opts = getattr(_function_state(), "loop_options", None)
    if opts is None:
        return
    if maximum_iterations is not None:
        opts["maximum_iterations"] = maximum_iterations
    if shape_invariants:
        opts["relaxed"] = any(_relaxed_invariants(s) for _, s in shape_invariants)


class _Body:
    """Traces the loop's body as a sub-graph of the recording graph: its inputs are the
    element's tensors (when the loop has a source) and the loop variables; its outputs the
    loop variables' next values."""

    def __init__(self, body, kind, values, flat, slots, names, what):
        self.body, self.kind, self.values = body, kind, values
        self.flat, self.slots, self.names, self.what = flat, slots, names, what
        self.structure = None
        self.elem_static = None     # the elements' static shapes (None dims), by leaf
        self.carried_static = None  # the loop variables' static shapes before the loop
        self.options = {}
        # ids of the enclosing function's tensors the traced bodies hold as constants: a
        # body traced late (retrace) may hold those, and no other tensor made before it
        self.outer_consts = set()

    def graph(self, elem, carried, real, summarize=True, late=False):
        """(graph, next loop variables) after running the body once on sub-graph inputs
        (real: its effects happen, else they are recorded only); (None, Python values) when
        the function's graph broke, (None, None) when the element cannot be traced."""
        st = _function_state()
        outer = getattr(st, "graph", None)
        flat_c = [list(f) for f in self.flat]
        for (i, j), c in zip(self.slots, carried):
            flat_c[i][j] = c
        vals_c = _pack(self.values, flat_c)
        g = _core.Graph()
        g.begin_sub()
        st.graph = g
        prev_opts, st.loop_options = getattr(st, "loop_options", None), {}
        prev_dry = None if real else _core.graph_set_effects_dry(True)
        try:
            leaves = []
            if self.kind != _core.GLOOP_SRC_NONE:
                leaves = _leaves(elem)
                if any(not isinstance(x, _core.Tensor) for x in leaves):
                    raise _CannotTrace(_non_tensor_reason(leaves))
                leaves = [_fresh(x) for x in leaves]  # unique sub-graph inputs
                elem = _repack(elem, leaves)
            # the body's inputs: the elements, then the loop variables (then its captures)
            for x in leaves + list(carried):
                g.add_input(x)
            # TensorFlow's static shapes of the body's inputs: the element spec (None for
            # an open batch), the loop variables' shapes before the loop
            for x, s in zip(leaves, self.elem_static or ()):
                _set_static(x, s)
            for x, s in zip(carried, self.carried_static or ()):
                _set_static(x, s)
            # fresh inputs: a tensor with a smaller id was made before this body's trace
            mark = min((x._id for x in leaves + list(carried)), default=None)
            out = self.body(*vals_c) if self.kind == _core.GLOOP_SRC_NONE else \
                self.body(elem, *vals_c)
        except _CannotTrace as e:
            g.abort()
            _core.graph_break(str(e))
            return None, None
        except BaseException:
            g.abort()
            raise
        finally:
            if prev_dry is not None:
                _core.graph_set_effects_dry(prev_dry)
            st.graph = outer
            self.options, st.loop_options = st.loop_options, prev_opts
        if g.broken:
            g.abort()
            return None, out
        if g.value_baked:
            # sizes taken from a tensor-bound slice, whose shape may change from one
            # iteration to the next (x[:i] and its gradient): Python's loop
            g.abort()
            _core.graph_break("a loop body holding sizes taken from a slice with tensor "
                              "bounds in %s" % self.what)
            return None, out
        if self.kind == _core.GLOOP_SRC_NONE and len(self.values) == 1 and \
                not isinstance(out, tuple):
            out = (out,)
        tok = _core.graph_suspend()  # (the checks' shape reads bake nothing in)
        err = None
        try:
            flat_out = _check_body_outputs(self.names, self.values, flat_c, out, self.what)
        except ValueError as e:
            err = e
        finally:
            _core.graph_resume(tok)
        if err is not None:
            if not self.options.get("relaxed"):
                g.abort()
                raise err
            g.abort()  # a shape allowed to change: Python's loop (a graph break)
            _core.graph_break("a loop variable that changes shape (shape_invariants) in %s"
                              % self.what)
            return None, out
        if flat_out is None:
            g.abort()
            _core.graph_break("a Python value (not a tensor) that changes in %s" % self.what)
            return None, out
        results = [flat_out[i][j] for i, j in self.slots]
        for r in results:
            g.add_output(r)
        g.end()
        if mark is not None:
            outer = {n["value_id"] for n in g.nodes()
                     if n["kind"] == "Const" and 0 <= n["value_id"] < mark}
            if late and not outer <= self.outer_consts:
                # a tensor of the tracing call the first body never read: its replayed
                # value is not known here, and its traced one would be stale
                g.abort()
                raise ValueError(
                    "%s: the body, traced again for an element of a new shape at a call, "
                    "reads a tensor of the enclosing function that its first trace did not "
                    "read; read the same tensors for every element shape, or keep one "
                    "element shape (e.g. batch(..., drop_remainder=True))" % self.what)
            if not late:
                self.outer_consts |= outer
        _loop_passes(g, summarize)
        return g, results

    def trace(self, elems, carried):
        """The tracing call met an element shape without a body (a last partial batch):
        this iteration runs the body again, traced for that shape (its Python side effects
        happen again). When the function's graph broke, the body just runs."""
        elem = _repack(self.structure, elems) if self.structure is not None \
            else None
        if getattr(_function_state(), "graph", None) is None or \
                getattr(_function_state().graph, "broken", False):
            return None, self._python(elem, carried)
        g, out = self.graph(elem, [_fresh(c) for c in carried], True)
        if g is None:
            return None, self._tensors(out)
        return g, out

    def retrace(self, elems, carried, known):
        """At a replay (a dry first trace, an iterator argument, a dataset whose last batch
        changed): an element shape without a body. The body is recorded again without
        effects (its Python side effects happen again) inside a stand-in for the
        function's graph whose inputs are `known`, the tensors the loop node's capture
        inputs carry; the core then replays it."""
        elem = _repack(self.structure, elems)
        parent = _core.Graph()
        parent.begin(True)
        st = _function_state()
        outer, st.graph = getattr(st, "graph", None), parent
        try:
            for t in known:
                parent.add_input(t)
            g, _ = self.graph(elem, [_fresh(c) for c in carried], False, summarize=False,
                              late=True)
        finally:
            st.graph = outer
            parent.abort()
        if g is None:
            raise ValueError("%s: the body cannot be traced again for an element of a new "
                             "shape at a call (it needs a value); call the function with a "
                             "new dataset object" % self.what)
        return g

    def _python(self, elem, carried):
        flat_c = [list(f) for f in self.flat]
        for (i, j), c in zip(self.slots, carried):
            flat_c[i][j] = c
        vals = _pack(self.values, flat_c)
        out = self.body(*vals) if self.kind == _core.GLOOP_SRC_NONE else self.body(elem, *vals)
        return self._tensors(out)

    def _tensors(self, out):
        if self.kind == _core.GLOOP_SRC_NONE and len(self.values) == 1 and \
                not isinstance(out, tuple):
            out = (out,)
        flat = [_nest.flatten(o) for o in out]
        res = []
        for i, j in self.slots:
            x = flat[i][j] if j < len(flat[i]) else None
            if isinstance(x, _core.Variable):
                x = x.read_value()
            res.append(x if isinstance(x, _core.Tensor) else _core.convert_to_tensor(x))
        return res


def _trace(kind, source, src_inputs, first, test, body, values, names, max_iter, what):
    """Traces one loop in the recording graph. kind: GLOOP_SRC_*; first: the first element
    (or _END); test: the condition function (while) or None. Returns the values after the
    loop; None when it broke before the body ran (the caller runs the whole loop in
    Python); a _Broken when the body broke the graph (the caller finishes the loop)."""
    st = _function_state()
    outer = getattr(st, "graph", None)
    dry = bool(_core.graph_recording())  # a dry trace or a branch not taken: no effects
    flat = _carry(values)
    slots = _tensor_slots(flat)
    init = [flat[i][j] for i, j in slots]
    copies = [_fresh(t) for t in init]

    cond_g = None
    go = first is not _END or kind == _core.GLOOP_SRC_NONE
    if test is not None:
        flat_c = [list(f) for f in flat]
        for (i, j), c in zip(slots, copies):
            flat_c[i][j] = c
        cond_g = _core.Graph()
        cond_g.begin_sub()
        st.graph = cond_g
        try:
            for c in copies:
                cond_g.add_input(c)
            pred = test(*_pack(values, flat_c))
            if isinstance(pred, _core.Variable):
                pred = pred.read_value()
            if not isinstance(pred, _core.Tensor):
                pred = _core.convert_to_tensor(pred)
            if pred.dtype.name != "bool" or pred.shape.rank != 0:
                raise TypeError("the condition of %s must be a boolean scalar, got a %s "
                                "tensor of shape %s" % (what, pred.dtype.name, pred.shape))
            if not cond_g.broken:
                cond_g.add_output(pred)
        except BaseException:
            cond_g.abort()
            st.graph = outer
            raise
        st.graph = outer
        if cond_g.broken:
            cond_g.abort()
            return None
        cond_g.end()
        _loop_passes(cond_g, True)
        go = go and (not dry) and _host_bool(pred)
    if max_iter is not None and max_iter <= 0:
        go = False
    real = go and not dry

    tracer = _Body(body, kind, values, flat, slots, names, what)
    tracer.carried_static = [_core.static_shape(t) for t in init]
    tracer.elem_static = _element_static(kind, source, src_inputs)
    elem = None
    if kind != _core.GLOOP_SRC_NONE:
        elem = first if first is not _END else _placeholder(source, src_inputs)
        if elem is None:
            _core.graph_break("%s whose element structure is unknown (an empty dataset)"
                              % what)
            return None
        tracer.structure = elem
    body_g, out = tracer.graph(elem, copies, real)
    if body_g is None:
        return None if out is None else _Broken(out, real)
    if kind == _core.GLOOP_SRC_HOST and _open_spec(source) and shape_free(body_g):
        # TensorFlow traces the body once, for the dataset's element spec (a batch
        # dimension None): a body that bakes no shape replays a last partial batch
        body_g.polymorphic = True
    if max_iter is None and tracer.options.get("maximum_iterations") is not None:
        max_iter = tracer.options["maximum_iterations"]
        if isinstance(max_iter, _core.Tensor):
            max_iter = int(max_iter.numpy())  # (a traced bound breaks the graph here)
    now = out if go else init
    out_t, recorded = _core.graph_loop(
        body_g, cond_g, init, now, list(src_inputs), len(_leaves(elem)) if elem is not
        None else 0, kind, -1 if max_iter is None else int(max_iter),
        source if kind == _core.GLOOP_SRC_HOST else None, 1 if go else 0, real, tracer)
    final = [list(f) for f in flat]
    for (i, j), t in zip(slots, out_t):
        final[i][j] = t
    return _pack(values, final)


class _CannotTrace(Exception):
    pass


# ops whose attributes hold sizes taken from shapes while tracing (a reshape's target, a
# gradient's broadcast, a slice's bounds, a fill's shape): a graph holding one is not
# replayed at another shape without a second trace proving it shape-free
_SHAPED_OPS = frozenset(("Reshape", "Fill", "BroadcastTo", "StridedSlice", "StridedSliceGrad",
                         "Range", "RandomUniform", "RandomStandardNormal", "TruncatedNormal"))


def shape_free(g):
    """True when nothing in graph g was sized from a traced shape, as far as its nodes
    tell: Python read no traced value's ``.shape`` while it recorded (``s / x.shape[0]``
    bakes a size into a constant), no shaped op, no loop (bodies hold element shapes).
    Such a graph replays at other shapes of the same ranks (its ops size their results at
    every run; tf.shape is an op)."""
    if g.shape_reads:  # Python read a traced value's shape: a size may be in a constant
        return False
    nodes = g.nodes()
    for n in nodes:
        kind = n["kind"]
        if kind in ("Loop", "LoopOutput"):
            return False
        if kind == "Op" and n["op"] in _SHAPED_OPS:
            src = n["inputs"][0][0] if n["inputs"] else -1
            # a slice of tf.shape's result (tf.shape(x)[0]): that vector's length is the
            # rank; a Range of tensor bounds reads them at every run; a reshape with a -1
            # infers that dimension at every run
            # (a slice of tensor bounds, x[i] of a tensor i, read them at every run)
            if not (n["op"] == "StridedSlice" and src >= 0 and nodes[src]["op"] == "Shape"
                    or n["op"] == "StridedSlice" and len(n["inputs"]) > 1
                    or n["op"] == "StridedSliceGrad" and len(n["inputs"]) >= 4
                    or n["op"] == "Range" and n["inputs"]
                    or n["op"] == "Reshape" and n.get("infers_dim")):
                return False
    return True


def _open_spec(source):
    """Does the loop's dataset leave a dimension of its elements open (None)?"""
    it = getattr(source, "iterable", None)
    ds = getattr(it, "_dataset", it)
    try:
        spec = ds.element_spec
    except Exception:  # noqa: BLE001 - no spec known: keep a body per shape
        return False
    return any(s.shape.rank is None or None in s.shape.as_list() for s in _nest.flatten(spec))


def _set_static(x, shape):
    """Gives the sub-graph input x the static shape `shape` (None dims) when it fits."""
    if shape is None or shape.rank is None or len(shape) != x.ndim or None not in shape:
        return
    try:  # (no .shape read here: that would count as baking a size)
        _core.graph_set_static(x, list(shape))
    except ValueError:
        pass  # an element that does not fit its spec keeps its own shape


def _element_static(kind, source, src_inputs):
    """The static shapes of a loop's elements by leaf: a dataset's element_spec (its
    batch dimension None unless drop_remainder=True), a tensor's rows."""
    if kind == _core.GLOOP_SRC_ROWS and src_inputs:
        return [_core.static_shape(src_inputs[0])[1:]]
    if kind != _core.GLOOP_SRC_HOST:
        return None
    it = getattr(source, "iterable", None)
    ds = getattr(it, "_dataset", it)
    try:
        spec = ds.element_spec
    except Exception:  # noqa: BLE001 - no spec known: the elements' shapes
        return None
    from mixprec._shape import TensorShape
    out = []
    for s in _nest.flatten(spec):
        shape = getattr(s, "shape", None)
        out.append(None if shape is None or shape.rank is None else TensorShape(shape))
    return out


def _non_tensor_reason(leaves):
    return "a loop over elements that are not tensors"


def _placeholder(source, src_inputs):
    """An element for tracing a loop that runs no iteration now: zeros of the element's
    spec (a dataset's element_spec, a tensor's row)."""
    if src_inputs:
        x = src_inputs[0]
        tok = _core.graph_suspend()
        try:
            return _core.convert_to_tensor(np.zeros(x.shape.as_list()[1:],
                                                    x.dtype.as_numpy_dtype))
        finally:
            _core.graph_resume(tok)
    spec = getattr(source.iterable, "element_spec", None) if source is not None else None
    if spec is None:
        return None
    from mixprec._function import TensorSpec

    def zeros(s):
        if not isinstance(s, TensorSpec):
            raise _CannotTrace("the loop's element structure is unknown (an empty dataset)")
        dims = [1 if d is None else d for d in s.shape.as_list()]
        return _core.convert_to_tensor(np.zeros(dims, s.dtype.as_numpy_dtype))
    tok = _core.graph_suspend()
    try:
        return _nest.map_structure(zeros, spec)
    finally:
        _core.graph_resume(tok)


class _Broken:
    """_trace's answer when the body broke the graph: the values after the first iteration
    (ran: it ran for real) for the caller to finish the loop in Python."""

    def __init__(self, values, ran):
        self.values, self.ran = values, ran


def _tape_blocks(what):
    """A GradientTape entered inside the traced function and recording across the loop
    would need the loop's gradient in the graph (TensorFlow builds one for its while loop):
    the graph breaks and the loop runs in Python. A tape outside the function records the
    loop's iterations as they run (tracing call and replays alike)."""
    from mixprec import _tape
    if _tape.tapes_open_in_trace() and _core.graph_tape_recording():
        _core.graph_break("%s inside a GradientTape that records across it" % what)
        return True
    return False


def _python_for(it, body, vals, brk=None):
    it = iter(it)
    while brk is None or not vals[brk]:
        try:
            x = next(it)
        except StopIteration:
            break
        vals = tuple(body(x, *vals))
    return vals


def loop_test(broken, test):
    """A loop's condition with a `break` flag: `not broken and test()`, on tensors too."""
    from mixprec import _ops
    if isinstance(broken, (_core.Tensor, _core.Variable)):
        t = test()
        if not isinstance(t, (_core.Tensor, _core.Variable)):
            t = _core.convert_to_tensor(bool(t))
        return _ops.logical_and(_ops.logical_not(broken), t)
    return (not broken) and test()


def _not_broken(brk):
    """The condition a `for` with `break` checks before each element."""
    if brk is None:
        return None

    def test(*vals):
        from mixprec import _ops
        b = vals[brk]
        return _ops.logical_not(b) if isinstance(b, _core.Tensor) else not b
    return test


class _Range:
    """``tf.range(start, limit, delta)`` iterated by a converted ``for`` while tracing with
    a traced bound: a counted while loop (no range tensor, whose length needs the value)."""

    def __init__(self, f, args, kwargs):
        self.f, self.args, self.kwargs = f, args, kwargs
        names = ("start", "limit", "delta", "dtype")
        a = dict(zip(names, args))
        a.update(kwargs)
        start, limit = a.get("start", 0), a.get("limit")
        if limit is None:
            start, limit = 0, start
        delta, dtype = a.get("delta", 1), a.get("dtype")
        vals = [v.read_value() if isinstance(v, _core.Variable) else v
                for v in (start, limit, delta)]
        if dtype is None:
            ts = [v for v in vals if isinstance(v, _core.Tensor)]
            floats = any(isinstance(v, float) for v in vals) or \
                any(t.dtype.is_floating for t in ts)
            dtype = next((t.dtype for t in ts if t.dtype.is_floating == floats), None) or \
                ("float32" if floats else "int32")
        self.start, self.limit, self.delta = (
            _core.cast(v, dtype) if isinstance(v, _core.Tensor) else
            _core.convert_to_tensor(np.asarray(v, _as_np(dtype))) for v in vals)
        d = vals[2]
        self.sign = (1 if d > 0 else -1) if not isinstance(d, _core.Tensor) else None

    def concrete(self):
        return self.f(*self.args, **self.kwargs)


def _as_np(dtype):
    from mixprec._dtypes import as_dtype
    return as_dtype(dtype).as_numpy_dtype


def range_(f, *args, **kwargs):
    """``tf.range(...)`` as a converted ``for``'s iterable: a _Range when tracing with a
    traced bound, else the range itself."""
    from mixprec import _ops
    if f is _ops.range and _core.graph_recording() is not None and any(
            isinstance(v, (_core.Tensor, _core.Variable)) and _core.graph_is_traced(
                v.read_value() if isinstance(v, _core.Variable) else v)
            for v in list(args) + list(kwargs.values())):
        return _Range(f, args, kwargs)
    return f(*args, **kwargs)


def _for_range(r, body, vals, traced_vals, names, brk=None):
    from mixprec import _ops

    def in_range(i):
        if r.sign == 1:
            return _ops.less(i, r.limit)
        if r.sign == -1:
            return _ops.greater(i, r.limit)
        return _ops.logical_or(_ops.logical_and(_ops.greater(r.delta, 0), _ops.less(i, r.limit)),
                               _ops.logical_and(_ops.less(r.delta, 0),
                                                _ops.greater(i, r.limit)))

    def test(i, *v):
        if brk is None:
            return in_range(i)
        b = v[brk]
        b = b if isinstance(b, _core.Tensor) else _core.convert_to_tensor(bool(b))
        return _ops.logical_and(_ops.logical_not(b), in_range(i))

    def body2(i, *v):
        return (_ops.add(i, r.delta),) + tuple(body(i, *v))

    if _tape_blocks("a loop over tf.range"):
        return _python_for(r.concrete(), body, vals, brk)
    out = _trace(_core.GLOOP_SRC_NONE, None, [], _END, test, body2, (r.start,) + traced_vals,
                 ("<tf.range counter>",) + tuple(names), None, "a loop over tf.range")
    if out is None:
        return _python_for(r.concrete(), body, vals, brk)
    if isinstance(out, _Broken):
        if not out.ran:
            return vals
        i, v = out.values[0], tuple(out.values[1:])
        tok = _core.graph_suspend()
        try:
            rest = _ops.range(i, r.limit, r.delta)
        finally:
            _core.graph_resume(tok)
        return _python_for(rest, body, v, brk)
    return tuple(out[1:])


def for_stmt(iterable, body, init, names, n_targets=0, brk=None):
    """A converted ``for``: ``body(element, *values) -> values`` (values: the names the loop
    assigns, ``names``; the first ``n_targets`` are the loop's target names). A dataset, an
    iterator over one or a tensor becomes a loop node while tracing; anything else is
    Python's loop."""
    vals = tuple(init)
    if _core.graph_recording() is None:
        return _python_for(iterable.concrete() if isinstance(iterable, _Range) else iterable,
                           body, vals, brk)
    if isinstance(iterable, _core.Variable):
        iterable = iterable.read_value()
    undefined = _undefined_type()
    traced_vals = tuple(undefined(names[i]) if i < n_targets else v for i, v in enumerate(vals))
    if isinstance(iterable, _Range):
        return _for_range(iterable, body, vals, traced_vals, names, brk)
    if _is_dataset(iterable) or _is_dataset_iterator(iterable):
        what = "a loop over a dataset"
        if getattr(iterable, "_made_traced", False) and iterable._gen is None:
            iterable = iterable._dataset  # iter(ds) inside the function: new at every call
        src = _Source(iterable, restartable=_is_dataset(iterable))
        args = getattr(_function_state(), "arg_sources", None)
        if args is not None:
            for k, it in enumerate(args[0]):
                if it is iterable:  # a dataset or iterator argument: rebound at every replay
                    args[1].append((k, src))
        if _tape_blocks(what):
            return _python_for(src.iterable if src.restartable else src.it, body, vals, brk)
        first = src.element(restart=True)
        src.structure = None if first is _END else first
        src.n_leaves = 0 if first is _END else len(_leaves(first))
        r = _trace(_core.GLOOP_SRC_HOST, src, [], first, _not_broken(brk), body, traced_vals,
                   names, None, what)
        rest = src.it
    elif isinstance(iterable, _core.Tensor) and iterable.shape.rank:
        what = "a loop over a tensor"
        if _tape_blocks(what):
            return _python_for(iterable, body, vals, brk)
        n = iterable.shape.as_list()[0]
        first = _END
        if n:
            tok = _core.graph_suspend()
            try:
                first = iterable[0]
            finally:
                _core.graph_resume(tok)
        r = _trace(_core.GLOOP_SRC_ROWS, None, [iterable], first, _not_broken(brk), body,
                   traced_vals, names, None, what)
        rest = (iterable[k] for k in range(1, n))
    else:
        return _python_for(iterable, body, vals, brk)
    if r is None:  # broke before the body ran: Python's loop from the first element
        return _python_for(_chain(first, rest), body, vals, brk)
    if isinstance(r, _Broken):
        return _python_for(rest, body, tuple(r.values), brk) if r.ran else vals
    return r


def _chain(first, rest):
    if first is not _END:
        yield first
    yield from rest


def _python_while(test, body, vals, max_iter=None):
    k = 0
    while (max_iter is None or k < max_iter) and test(*vals):
        vals = tuple(body(*vals))
        k += 1
    return vals


def while_stmt(test, body, init, names):
    """A converted ``while``: ``test(*values)``, ``body(*values) -> values``. A condition
    that is a tensor while tracing makes a loop node; a Python one is Python's loop."""
    vals = tuple(init)
    if _core.graph_recording() is None:
        return _python_while(test, body, vals)
    # the condition is evaluated once to tell a tensor from a Python value, then traced:
    # its Python side effects happen twice at the trace, as TensorFlow's
    c = test(*vals)
    if isinstance(c, _core.Variable):
        c = c.read_value()
    if not isinstance(c, _core.Tensor):
        if not c:
            return vals
        return _python_while(test, body, tuple(body(*vals)))
    if _tape_blocks("a while loop"):
        return _python_while(test, body, vals)
    r = _trace(_core.GLOOP_SRC_NONE, None, [], _END, test, body, vals, names, None,
               "a while loop")
    if r is None:
        return _python_while(test, body, vals)
    if isinstance(r, _Broken):
        return _python_while(test, body, tuple(r.values)) if r.ran else vals
    return r


def _relaxed_invariants(inv):
    """Does a shape_invariants structure leave some dimension (or rank) open?"""
    from mixprec._shape import TensorShape
    if inv is None:
        return False
    if isinstance(inv, TensorShape):
        return inv.rank is None or None in inv.as_list()
    if isinstance(inv, (list, tuple)) and inv and all(
            isinstance(d, (int, type(None))) for d in inv):
        return None in inv
    if isinstance(inv, dict):
        return any(_relaxed_invariants(v) for v in inv.values())
    if isinstance(inv, (list, tuple)):
        return any(_relaxed_invariants(v) for v in inv)
    return False


def while_loop_traced(cond, body, loop_vars, maximum_iterations, shape_invariants=None):
    """``tf.while_loop`` while tracing: a loop node when the condition is a tensor; None
    when Python's loop applies (the caller runs it)."""
    if _core.graph_recording() is None:
        return None
    if shape_invariants is not None and _relaxed_invariants(shape_invariants):
        return None  # loop variables that may change shape: Python's loop (a graph break)
    single = not isinstance(loop_vars, (list, tuple))
    vals = (loop_vars,) if single else tuple(loop_vars)
    c = cond(*vals)
    if isinstance(c, _core.Variable):
        c = c.read_value()
    if not isinstance(c, _core.Tensor):
        return None
    max_iter = maximum_iterations
    if isinstance(max_iter, _core.Variable):
        max_iter = max_iter.read_value()
    if isinstance(max_iter, _core.Tensor):
        if _core.graph_is_traced(max_iter):
            return None  # a traced bound: Python's loop reads it (a graph break)
        max_iter = int(max_iter.numpy())
    if _tape_blocks("tf.while_loop"):
        return None

    def body_fn(*v):
        out = body(*v)
        if single:
            return (out[0] if isinstance(out, (list, tuple)) and len(out) == 1 else out,)
        if not isinstance(out, (list, tuple)):
            out = (out,)
        return tuple(out)

    r = _trace(_core.GLOOP_SRC_NONE, None, [], _END, cond, body_fn, vals, None, max_iter,
               "tf.while_loop")
    if r is None:
        return None
    if isinstance(r, _Broken):
        if not r.ran:
            out = vals
        else:
            k = 1
            out = tuple(r.values)
            while (max_iter is None or k < max_iter) and cond(*out):
                out = body_fn(*out)
                k += 1
    else:
        out = r
    if single:
        return out[0]
    if isinstance(loop_vars, list):
        return list(out)
    if hasattr(loop_vars, "_fields"):
        return type(loop_vars)(*out)
    return tuple(out)
