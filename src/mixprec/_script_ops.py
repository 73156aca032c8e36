"""``tf.py_function`` and ``tf.numpy_function``: Python called as an op.

Eagerly the function is simply called (py_function's tensors stay on the tapes, so it is
differentiable; numpy_function sees NumPy arrays and is not). A traced function cannot
replay Python: the graph breaks (eager for that signature, one warning).
"""

from mixprec import _core
from mixprec._dtypes import as_dtype

__all__ = ["py_function", "numpy_function"]


def _break(what):
    if _core.graph_recording() is not None:
        _core.graph_break("%s (Python that runs at every call)" % what)


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


def py_function(func=None, inp=None, Tout=None, name=None):
    """Calls ``func(*inp)`` with tensors and returns its results as tensors of ``Tout``;
    gradients flow through the ops ``func`` ran."""
    if func is None:  # the decorator form: @tf.py_function(Tout=...)
        return lambda f: (lambda *args: py_function(f, list(args), Tout, name))
    _break("tf.py_function")
    ret = _call(func, _inputs(inp))
    return _pack(ret, Tout, _to_tensor_of)


def numpy_function(func=None, inp=None, Tout=None, stateful=True, name=None):
    """Calls ``func(*arrays)`` with NumPy arrays and returns its results as tensors (not
    differentiable). As TensorFlow's eager op, the values keep their own dtypes."""
    if func is None:
        return lambda f: (lambda *args: numpy_function(f, list(args), Tout, stateful, name))
    _break("tf.numpy_function")
    ret = _call(func, [x.numpy() for x in _inputs(inp)])
    return _pack(ret, Tout, lambda v, d: _core.convert_to_tensor(v))
