"""``tf.py_function`` and ``tf.numpy_function``: Python called as an op.

Eagerly the function is simply called (py_function's tensors stay on the tapes, so it is
differentiable; numpy_function sees NumPy arrays and is not). Inside a traced function it is
a host-call node of the graph (csrc/graph.h MP_GNODE_CALL): the tracing call runs it once,
every replay calls it again (the GIL taken, tensors in and out, the results checked against
``Tout``); a gradient through ``py_function`` is a second host call that asks the forward's
own tape (TensorFlow's EagerPyFunc gradient). Conversion and bookkeeping only.
"""

import itertools
import threading

from mixprec import _core
from mixprec._dtypes import as_dtype

__all__ = ["py_function", "numpy_function"]

_names = itertools.count()
# TensorFlow's type names in its PyFunc dtype error
_TF_NAMES = {"float32": "float", "float64": "double", "float16": "half"}


def _call(func, args):
    """func(*args); its exception becomes the op error TensorFlow's EagerPyFunc raises
    (ValueError/TypeError: InvalidArgumentError, StopIteration: OutOfRangeError,
    MemoryError: ResourceExhaustedError, NotImplementedError: UnimplementedError, any
    other: UnknownError), the original kept as the cause."""
    from mixprec import errors
    try:
        return func(*args)
    except errors.OpError:
        raise
    except Exception as e:  # noqa: BLE001 - every exception of the user's function maps
        cls = errors.UnknownError
        for kind, mapped in ((StopIteration, errors.OutOfRangeError),
                             (MemoryError, errors.ResourceExhaustedError),
                             (NotImplementedError, errors.UnimplementedError),
                             ((ValueError, TypeError), errors.InvalidArgumentError)):
            if isinstance(e, kind):
                cls = mapped
                break
        raise cls(None, None, "%s: %s" % (type(e).__name__, e)) from e


def _inputs(inp):
    return [v.value() if isinstance(v, _core.Variable) else _core.convert_to_tensor(v)
            for v in (inp if inp is not None else [])]


def _pack(ret, Tout, convert):
    """TensorFlow's packing: a list/tuple Tout gives a list (zip over the returned values);
    a single dtype gives one tensor (the first value when a sequence came back)."""
    single = not isinstance(Tout, (list, tuple))
    dtypes = [Tout] if single else list(Tout)
    if not dtypes:
        return [] if not single else None
    values = list(ret) if isinstance(ret, (list, tuple)) else [ret]
    out = [convert(v, d) for v, d in zip(values, dtypes)]
    return out[0] if single else out


def _to_tensor_of(value, dtype):
    dtype = as_dtype(dtype)
    if isinstance(value, _core.Variable):
        value = value.value()
    if isinstance(value, _core.Tensor):
        if value.dtype != dtype:
            raise _core.InvalidArgumentError(
                "ValueError: Tensor conversion requested dtype %s for Tensor with dtype %s"
                % (dtype.name, value.dtype.name))
        return value
    return _core.convert_to_tensor(value, dtype=dtype)


def _strict_convert(name):
    """numpy_function's conversion in a graph: each value must already have its Tout dtype
    (TensorFlow's PyFunc kernel: "0-th value returned by pyfunc_0 is double, but expects
    float")."""
    k = itertools.count()

    def convert(v, d):
        i = next(k)
        t = _core.convert_to_tensor(v)
        d = as_dtype(d)
        if t.dtype != d:
            raise _core.InvalidArgumentError(
                "%d-th value returned by %s is %s, but expects %s"
                % (i, name, _TF_NAMES.get(t.dtype.name, t.dtype.name),
                   _TF_NAMES.get(d.name, d.name)))
        return t
    return convert


class _Untaped:
    """Graph and tapes paused: the function's own ops are neither recorded into the graph
    (the host call is) nor seen by the tapes outside it."""

    def __enter__(self):
        self._g = _core.graph_suspend()
        self._t = _core.tape_suspend_outer()
        return self

    def __exit__(self, *exc):
        _core.tape_resume_outer(self._t)
        _core.graph_resume(self._g)
        return False


def _fresh(ts):
    """New tensors holding ts' values (a result that is an input, or a captured tensor,
    must not be renamed to the host call's result in the graph)."""
    with _Untaped():
        return [_core.identity(t) for t in ts]


def host_call(fn, inputs):
    """``fn(*inputs) -> list of tensors`` as a host call of the recording graph: run now
    (the tracing call is a call) and at every replay, its results' shapes free to change
    (tf.distribute's cross-worker gather, whose row counts come from the other workers)."""
    with _Untaped():
        outs = [_core.identity(t) for t in fn(*inputs)]
    _core.graph_record_call(lambda *xs: list(fn(*xs)), list(inputs), outs)
    return outs


def _memo():
    """Results of the host calls of the real trace of this call, handed to the dry trace
    that follows it (src/mixprec/_function.py), so the function runs once per call."""
    from mixprec import _function
    return _function._state


def _traced(what, func, inputs, Tout, to_args, convert, differentiable):
    """The host-call node: runs the call now (the tracing call is a call) and records it."""
    single = not isinstance(Tout, (list, tuple))
    n_out = 0 if (not single and not Tout) or (single and Tout is None) else \
        1 if single else len(Tout)
    holder = threading.local()
    grads_wanted = differentiable and _core.graph_tape_recording() and any(
        x.dtype.is_floating for x in inputs)

    def forward(*xs):
        xs = list(xs)
        if grads_wanted:
            from mixprec._tape import GradientTape
            with GradientTape() as tape:
                tape.watch(xs)
                ret = _call(func, to_args(xs))
                out = _pack(ret, Tout, convert()) if n_out else []
            outs = [out] if single and n_out else list(out)
            holder.last = (tape, xs, outs)
        else:
            ret = _call(func, to_args(xs))
            out = _pack(ret, Tout, convert()) if n_out else []
            outs = [out] if single and n_out else list(out)
        if len(outs) != n_out:
            raise _core.InvalidArgumentError(
                "%s: expected %d values returned, got %d" % (what, n_out, len(outs)))
        return outs

    dry = _core.graph_recording()
    state = _memo()
    memo = getattr(state, "host_call_memo", None)
    log = getattr(state, "host_call_log", None)
    with _Untaped():
        if dry and memo is not None:
            outs = next(memo, None)
            if outs is None:
                outs = forward(*inputs)
        else:
            outs = forward(*inputs)
        outs = [_core.identity(t) for t in outs]
    if log is not None and not dry:
        log.append(outs)
    _core.graph_record_call(forward, list(inputs), outs)
    if grads_wanted:
        outs = _gradient_node(inputs, outs, holder)
    if not n_out:
        return [] if not single else None
    return outs[0] if single else outs


def _gradient_node(inputs, outs, holder):
    """The outputs on the tapes with a gradient that is one more host call: the forward's
    own tape (kept by the last replay of the forward node) differentiated there."""
    floating = [k for k, x in enumerate(inputs) if x.dtype.is_floating]

    def backward_call(*dys):
        tape, xs, fouts = holder.last
        g = tape.gradient(fouts, [xs[k] for k in floating], output_gradients=list(dys),
                          unconnected_gradients="zero")
        return [_core.convert_to_tensor(x) for x in g]

    def backward(float_dys):
        dys = [dy if dy is not None else _core.fill(list(r.shape), 0, r.dtype)
               for dy, r in zip(float_dys, [o for o in outs if o.dtype.is_floating])]
        with _Untaped():
            grads = [_core.identity(x) for x in backward_call(*dys)]
        _core.graph_record_call(backward_call, list(dys), grads)
        full = [None] * len(inputs)
        for k, gk in zip(floating, grads):
            full[k] = gk
        return full

    return _core.tape_record_custom(list(inputs), list(outs), backward)


def py_function(func=None, inp=None, Tout=None, name=None):
    """Calls ``func(*inp)`` with tensors and returns its results as tensors of ``Tout``;
    gradients flow through the ops ``func`` ran."""
    if func is None:  # the decorator form: @tf.py_function(Tout=...)
        return lambda f: (lambda *args: py_function(f, list(args), Tout, name))
    inputs = _inputs(inp)
    if _core.graph_recording() is not None:
        return _traced("tf.py_function", func, inputs, Tout, list, lambda: _to_tensor_of,
                       True)
    ret = _call(func, inputs)
    return _pack(ret, Tout, _to_tensor_of)


def numpy_function(func=None, inp=None, Tout=None, stateful=True, name=None):
    """Calls ``func(*arrays)`` with NumPy arrays and returns its results as tensors (not
    differentiable). As TensorFlow's eager op, the values keep their own dtypes; in a
    traced function each must have its ``Tout`` dtype (TensorFlow's graph kernel)."""
    if func is None:
        return lambda f: (lambda *args: numpy_function(f, list(args), Tout, stateful, name))
    inputs = _inputs(inp)
    if _core.graph_recording() is not None:
        label = "pyfunc_%d" % next(_names)
        return _traced("tf.numpy_function", func, inputs, Tout,
                       lambda xs: [x.numpy() for x in xs],
                       lambda: _strict_convert(label), False)
    ret = _call(func, [x.numpy() for x in inputs])
    return _pack(ret, Tout, lambda v, d: _core.convert_to_tensor(v))
