"""Graph-context utilities that work eagerly and inside ``mixprec.function``: whether code
runs eagerly or traces, name scopes, ``init_scope``, control dependencies and groups,
static values, ``timestamp``, the gradient-registry names and the TensorFlow version.

It owns the per-thread name-scope stack (variables read it for their names); it must not
compute tensor values (timestamps and static values come from the core or the host clock).
"""

import contextlib
import re
import threading
import time

from mixprec import _core

__all__ = ["executing_eagerly", "inside_function", "name_scope", "get_current_name_scope",
           "control_dependencies", "no_op", "group", "tuple", "init_scope",
           "get_static_value", "timestamp", "no_gradient", "gradients", "hessians"]

_local = threading.local()
# TensorFlow's Graph.name_scope check of a name at the root of a graph's scopes
_VALID_ROOT = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$")
_VALID_SCOPE = re.compile(r"^[A-Za-z0-9_.\\/>-]*$")


def _tracing_graph():
    """The graph this thread is tracing into (None eagerly), init_scope included."""
    from mixprec import _function
    return getattr(_function._state, "graph", None)


def executing_eagerly():
    """``tf.executing_eagerly``: False while a ``mixprec.function`` traces (its Python body
    runs once to record the graph), True otherwise, inside ``init_scope`` included."""
    return _core.graph_recording() is None


def inside_function():
    """``tf.inside_function``: True while a function traces, ``init_scope`` included (as
    TensorFlow's, whose default graph stays the function's there)."""
    return _tracing_graph() is not None


# ------------------------------------------------------------------------ name scopes

def _scope():
    return getattr(_local, "scope", "")


def current_prefix():
    """The name prefix of new variables: ``'a/b/'`` inside ``name_scope('a')`` and
    ``name_scope('b')``, ``''`` at the top."""
    return _scope()


def get_current_name_scope():
    """``tf.get_current_name_scope``: ``'a/b'`` inside scopes a and b, ``''`` outside."""
    return _scope().rstrip("/") if _scope() != "/" else ""


def _unique(name):
    """A graph's unique spelling of ``name`` (TensorFlow's Graph.unique_name): the second
    ``x`` scope of a trace is ``x_1``. Counts are per traced graph."""
    g = _tracing_graph()
    used_for = getattr(_local, "used", None)
    if used_for is None or used_for[0] is not g:
        used_for = _local.used = (g, {})
    used = used_for[1]
    key = name.lower()
    n = used.get(key, 0)
    used[key] = n + 1
    if n == 0:
        return name
    while True:  # "x_1" may itself have been taken
        cand = "%s_%d" % (name, n)
        if cand.lower() not in used:
            used[cand.lower()] = 1
            return cand
        n += 1


class name_scope:
    """``tf.name_scope(name)``: a context manager whose names (variables created inside,
    ``get_current_name_scope``) carry ``name/`` as a prefix. ``__enter__`` returns the
    full scope (``'outer/name/'``). A name ending in ``/`` is absolute; ``''`` resets to
    the top. Eagerly a scope entered twice keeps its name; inside a traced function it is
    made unique (``x_1/``), as in TensorFlow's graphs."""

    def __init__(self, name):
        if not isinstance(name, str):
            raise ValueError("name for name_scope must be a string.")
        self._name = name
        self._old = None

    @property
    def name(self):
        return self._name

    def __enter__(self):
        old = _scope()
        name = self._name
        if inside_function() and not executing_eagerly():
            scope = self._graph_scope(old, name)
        elif not name:
            scope = ""
        elif name.endswith("/"):
            scope = name
        else:
            scope = old + name + "/"
        self._old = old
        _local.scope = scope
        return scope

    @staticmethod
    def _graph_scope(old, name):
        if not name:
            return ""
        if name.endswith("/"):  # an absolute scope, reused as it is
            return name
        if not old and not _VALID_ROOT.match(name):
            raise ValueError(
                "'%s' is not a valid root scope name. A root scope name has to match the "
                "following pattern: %s" % (name, _VALID_ROOT.pattern))
        if old and not _VALID_SCOPE.match(name):
            raise ValueError(
                "'%s' is not a valid scope name. A scope name has to match the following "
                "pattern: %s" % (name, _VALID_SCOPE.pattern))
        return _unique(old + name) + "/"

    def __exit__(self, *exc):
        _local.scope = self._old
        return False


@contextlib.contextmanager
def _absolute_scope(scope):
    """Enters ``scope`` (a full ``'a/b/'`` prefix or ``''``) as it is."""
    old = _scope()
    _local.scope = scope
    try:
        yield scope
    finally:
        _local.scope = old


# ------------------------------------------------------------ init_scope and friends

@contextlib.contextmanager
def init_scope():
    """``tf.init_scope``: inside a traced function, code runs eagerly here (nothing is
    recorded into the graph: variable creation and initial values happen once), keeping
    the current name scope. Eagerly it changes nothing."""
    tok = _core.graph_suspend()
    try:
        with _absolute_scope(_scope()):
            yield
    finally:
        _core.graph_resume(tok)


class _NullContext:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def control_dependencies(control_inputs):
    """``tf.control_dependencies``: a context manager. A mixprec graph replays its ops in
    the order the trace ran them (variable writes, prints and assertions included), so the
    ordering TensorFlow's control edges give holds without edges; callables among
    ``control_inputs`` are called (TensorFlow's eager behaviour)."""
    if control_inputs is not None:
        for c in control_inputs:
            if callable(c) and not isinstance(c, (_core.Tensor, _core.Variable)):
                c()
    return _NullContext()


def no_op(name=None):
    """``tf.no_op``: does nothing (None, as TensorFlow's eagerly)."""
    return None


def group(*inputs, **kwargs):
    """``tf.group``: the inputs have run once this returns (every op runs when called, and a
    replay keeps the trace's order), so there is nothing to wait for: None."""
    name = kwargs.pop("name", None)  # noqa: F841 - TensorFlow's keyword
    if kwargs:
        raise TypeError("Unknown keyword arguments: " + ", ".join(kwargs.keys()))
    return None


def tuple(tensors, control_inputs=None, name=None):  # noqa: A001 - TensorFlow's public name
    """``tf.tuple``: the tensors, as a list, once all of them (and ``control_inputs``)
    are computed."""
    if isinstance(tensors, (str, bytes)) or not hasattr(tensors, "__iter__"):
        raise TypeError("tensors must be a list or tuple, got %s" % type(tensors).__name__)
    control_dependencies(control_inputs)
    return list(tensors)


def get_static_value(tensor, partial=False):
    """``tf.get_static_value``: the NumPy value of ``tensor`` when it is known without
    running the function (eagerly, a tensor's; inside a trace, for values that do not depend on
    the function's inputs or variables), else None. Non-tensors come back unchanged."""
    if isinstance(tensor, _core.Variable):  # a variable's value may change: never static
        return None
    if not isinstance(tensor, _core.Tensor):
        return tensor
    if _core.graph_recording() is not None and _core.graph_is_traced(tensor):
        return None
    tok = _core.graph_suspend()
    try:
        return tensor.numpy()
    finally:
        _core.graph_resume(tok)


def timestamp(name=None):
    """``tf.timestamp``: seconds since the epoch as a float64 scalar. Inside a traced
    function the clock must be read at every call, which a replay cannot: the signature
    runs eagerly (a graph break, one warning)."""
    if _core.graph_recording() is not None:
        _core.graph_break("tf.timestamp (the host clock read at every call)")
    return _core.constant(time.time(), "float64")


# ------------------------------------------------------------------- gradient registry

_no_gradient_ops = {}


def no_gradient(op_type):
    """``tf.no_gradient``: records that ops of ``op_type`` have no gradient. mixprec's
    gradients are the core's (csrc/grad.c), so this only keeps TensorFlow's registry
    contract: a string, registered once."""
    if not isinstance(op_type, str):
        raise TypeError("op_type must be a string")
    if op_type in _no_gradient_ops:
        raise KeyError("Registering two gradient with name '%s'! (Previous registration was "
                       "in %s)" % (op_type, _no_gradient_ops[op_type]))
    import inspect
    f = inspect.currentframe().f_back
    _no_gradient_ops[op_type] = "%s:%d" % (f.f_code.co_filename, f.f_lineno) if f else "?"


def gradients(ys, xs, grad_ys=None, name="gradients", gate_gradients=False,
              aggregation_method=None, stop_gradients=None, unconnected_gradients="none"):
    """``tf.gradients``: symbolic gradients of a graph. Eagerly TensorFlow raises
    RuntimeError (use ``tf.GradientTape``); mixprec traces by running ops, so inside a
    function there is no symbolic graph to differentiate either."""
    if executing_eagerly():
        raise RuntimeError("tf.gradients is not supported when eager execution is enabled. "
                           "Use tf.GradientTape instead.")
    raise NotImplementedError(
        "tf.gradients inside a mixprec.function is not supported: compute the gradients with "
        "tf.GradientTape in the function (docs/porting.md)")


def hessians(ys, xs, gate_gradients=False, aggregation_method=None, name="hessians"):
    """``tf.hessians``: as ``tf.gradients`` (RuntimeError eagerly; use nested
    ``tf.GradientTape`` s)."""
    return gradients(ys, xs)


def _tensor_name(self):
    """``Tensor.name``: TensorFlow's AttributeError eagerly; inside a trace, an argument's
    placeholder name (``x:0``). Other traced tensors have no op names in mixprec."""
    if _core.graph_recording() is None:
        raise AttributeError("Tensor.name is undefined when eager execution is enabled.")
    from mixprec import _function
    names = getattr(_function._state, "input_names", None) or {}
    if id(self) in names:
        return names[id(self)][0]
    raise AttributeError("Tensor.name: mixprec names only a traced function's inputs "
                         "(x:0), not the tensors its ops compute")


_core.Tensor.name = property(_tensor_name)
