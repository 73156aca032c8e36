"""``tf.debugging.assert_*`` and ``tf.Assert``: conditions on tensor values and shapes.

A value condition is computed by core ops (a bool scalar); eagerly a false one raises at
once, and inside a traced function the check is recorded as a host node, so it runs at
every replay (the first, tracing call included) and raises TensorFlow's exception there.
Messages follow TensorFlow 2.21's (eager and graph forms). Shape and dtype conditions are
static, checked where the call runs. Formatting the message of a failed check is the only
host work on values; this module must not compute a condition in Python.
"""

import collections.abc

import numpy as np

from mixprec import _core
from mixprec._dtypes import as_dtype, float32

__all__ = ["Assert", "assert_equal", "assert_none_equal", "assert_greater",
           "assert_greater_equal", "assert_less", "assert_less_equal", "assert_near",
           "assert_negative", "assert_positive", "assert_non_negative", "assert_non_positive",
           "assert_rank", "assert_rank_at_least", "assert_rank_in", "assert_scalar",
           "assert_type", "assert_integer", "assert_shapes", "assert_same_float_dtype",
           "assert_proper_iterable", "is_numeric_tensor"]


def _InvalidArgument(msg):
    from mixprec import errors
    return errors.InvalidArgumentError(None, None, msg)


def _tensor(x, dtype=None):
    if isinstance(x, _core.Variable):
        x = x.read_value()
    return _core.convert_to_tensor(x, dtype=dtype) if dtype is not None \
        else _core.convert_to_tensor(x)


def _traced():
    return _core.graph_recording() is not None


def _graph_name(x):
    """The name TensorFlow's graph messages give ``x``: its placeholder's (``x:0``) for a
    function argument, else ``Const:0``-style names mixprec does not keep ('')."""
    from mixprec import _function
    names = getattr(_function._state, "input_names", None) or {}
    return names.get(id(x), ("", None))[0]


def _shape_and_dtype(x):
    return "shape=%s dtype=%s" % (_core_shape(x), x.dtype.name)


def _core_shape(x):
    from mixprec._function import checked_shape
    return checked_shape(x)


def _prefix(message):
    return "%s.  " % message if message else ""


def _numpy(x):
    tok = _core.graph_suspend()
    try:
        return x.numpy()
    finally:
        _core.graph_resume(tok)


def _check(cond, tensors, fail):
    """Raise ``fail(values)`` when the bool scalar ``cond`` is false: now when eager; at
    this call and every replay inside a traced function (a host node)."""
    rec = _core.graph_recording()

    def host(c, *vals):
        if not bool(_numpy(c)):
            raise fail([_numpy(v) for v in vals])

    if rec is None:
        if not bool(cond.numpy()):
            raise fail([t.numpy() for t in tensors])
        return None
    _core.graph_record_host(host, [cond] + list(tensors))
    if not rec:  # this call runs for real: check now, without breaking the graph
        host(cond, *tensors)
    return None


# ---------------------------------------------------------------- message formatting

def _pretty(item, summarize):
    """TensorFlow's eager _pretty_print of one data item."""
    if isinstance(item, _Value):
        flat = item.array.reshape((-1,))
        lst = [str(v) for v in flat[:summarize]]
        if len(lst) < flat.size:
            lst.append("...")
        return str(lst)
    return str(item)


class _Value:
    """A tensor's value among message data (formatted as a list of strings)."""

    def __init__(self, array):
        self.array = np.asarray(array)


def _summarize_graph(arr, summarize):
    """A tensor as TensorFlow's Assert op prints it: ``1 2 3...`` (nested rows bracketed)."""
    arr = np.asarray(arr)
    if arr.ndim == 0:
        return _graph_scalar(arr[()])
    flat = arr.reshape((-1,))
    n = min(flat.size, summarize if summarize is not None and summarize >= 0 else flat.size)
    vals = [_graph_scalar(v) for v in flat[:n]]
    if arr.ndim == 1:
        text = " ".join(str(v) for v in vals)
    else:  # rows of the last dimension, bracketed, as Tensor::SummarizeValue
        last = arr.shape[-1]
        rows = [" ".join(str(v) for v in vals[i:i + last]) for i in range(0, n, last)]
        text = "[" + "][".join(rows) + "]"
        text = "[" * (arr.ndim - 2) + text + "]" * (arr.ndim - 2)
    return text + ("..." if n < flat.size else "")


def _graph_scalar(v):
    """One element as TensorFlow's SummarizeValue writes it (floats shortest, no ``.0``)."""
    text = str(v)
    if isinstance(v, np.floating) and text.endswith(".0"):
        text = text[:-2]
    return text


def _graph_message(items, summarize):
    """``assertion failed: [a] [b] ...`` (TensorFlow's Assert op)."""
    summarize = 3 if summarize is None else summarize
    parts = []
    for it in items:
        if isinstance(it, _Value):
            parts.append("[%s]" % _summarize_graph(it.array, summarize))
        else:
            parts.append("[%s]" % (it,))
    return "assertion failed: " + " ".join(parts)


def _eager_assert_message(condition, items, summarize):
    """TensorFlow's eager tf.Assert message."""
    summarize = 3 if summarize is None else summarize
    out = []
    for it in items:
        if isinstance(it, _Value):
            arr = it.array
            if arr.ndim:
                flat = arr.reshape((-1,))
                n = flat.size if summarize < 0 else summarize
                lst = [str(v) for v in flat[:n]]
                if len(lst) < flat.size:
                    lst.append("...")
            else:
                lst = [str(arr.item() if arr.dtype.kind in "iub" else arr)] if summarize else []
            out.append(", ".join(lst))
        else:
            out.append(repr(str(it).encode()))
    return "Expected '%s' to be true. Summarized data: %s" % (condition, "\n".join(out))


# ---------------------------------------------------------------------------- tf.Assert

def Assert(condition, data, summarize=None, name=None):  # noqa: N802 - TensorFlow's name
    """``tf.Assert``: raises InvalidArgumentError, printing ``data``, when ``condition`` is
    false (checked at every call of a traced function)."""
    data = list(data)
    tensors, slots = [], []
    for d in data:
        if isinstance(d, (_core.Tensor, _core.Variable)) or (
                not isinstance(d, (str, bytes)) and isinstance(d, (int, float, list, tuple,
                                                                   np.ndarray, np.generic))):
            tensors.append(_tensor(d))
            slots.append(True)
        else:
            slots.append(False)
    if isinstance(condition, (bool, np.bool_)) and not _traced():
        if condition:
            return None
        cond = _core.constant(False)
        shown = "False"
    else:
        cond = _core.reduce_all(_tensor(condition, "bool"))
        shown = None if _traced() else str(condition if isinstance(condition, _core.Tensor)
                                            else _tensor(condition, "bool"))

    def items(values):
        it = iter(values)
        return [_Value(next(it)) if s else (d.decode() if isinstance(d, bytes) else d)
                for d, s in zip(data, slots)]

    if _traced():
        return _check(cond, tensors,
                      lambda vals: _InvalidArgument(_graph_message(items(vals), summarize)))
    return _check(cond, tensors, lambda vals: _InvalidArgument(
        _eager_assert_message(shown, items(vals), summarize)))


# -------------------------------------------------------------- binary comparisons

_OPS = {"==": (_core.equal, np.equal), "!=": (_core.not_equal, np.not_equal),
        ">": (_core.greater, np.greater), ">=": (_core.greater_equal, np.greater_equal),
        "<": (_core.less, np.less), "<=": (_core.less_equal, np.less_equal)}


def _binary_assert(sym, x, y, message, summarize):
    x = _tensor(x)
    y = _tensor(y, x.dtype) if not isinstance(y, (_core.Tensor, _core.Variable)) else _tensor(y)
    op, np_op = _OPS[sym]
    cond = _core.reduce_all(op(x, y))
    if _traced():
        items = ["Condition x %s y did not hold element-wise:" % sym,
                 "x (%s) = " % _graph_name(x), None, "y (%s) = " % _graph_name(y), None]
        if message is not None:
            items = [message] + items

        def graph_fail(vals):
            it = iter(vals)
            shown = [_Value(next(it)) if i is None else i for i in items]
            return _InvalidArgument(_graph_message(shown, summarize))
        return _check(cond, [x, y], graph_fail)

    summ = 3 if summarize is None else (10 ** 9 if summarize < 0 else summarize)

    def fail(vals):
        lines = _binary_data(sym, np_op, vals[0], vals[1], summ)
        if message is not None:
            lines = [message] + lines
        return _InvalidArgument("\n".join(lines))
    return _check(cond, [x, y], fail)


def _binary_data(sym, np_op, xv, yv, summarize):
    """TensorFlow's _make_assert_msg_data (eager): the failing indices and values when the
    shapes agree, then the first elements of x and y."""
    xv, yv = np.asarray(xv), np.asarray(yv)
    out = ["Condition x %s y did not hold." % sym]
    if summarize > 0:
        if xv.shape == yv.shape and xv.ndim:
            mask = ~np_op(xv, yv)
            idx = np.argwhere(mask)
            n = min(summarize, idx.shape[0])
            out += ["Indices of first %d different values:" % n, str(idx[:n]),
                    "Corresponding x values:", str(xv[mask].reshape((-1,))[:n]),
                    "Corresponding y values:", str(yv[mask].reshape((-1,))[:n])]
        xf, yf = xv.reshape((-1,)), yv.reshape((-1,))
        xs, ys = min(xf.size, summarize), min(yf.size, summarize)
        out += ["First %d elements of x:" % xs, str(xf[:xs]),
                "First %d elements of y:" % ys, str(yf[:ys])]
    return out


def assert_equal(x, y, message=None, summarize=None, name=None):
    """Raises InvalidArgumentError unless ``x == y`` elementwise (broadcasting)."""
    return _binary_assert("==", x, y, message, summarize)


def assert_none_equal(x, y, summarize=None, message=None, name=None):
    """Raises InvalidArgumentError unless ``x != y`` for every element."""
    return _binary_assert("!=", x, y, message, summarize)


def assert_greater(x, y, message=None, summarize=None, name=None):
    return _binary_assert(">", x, y, message, summarize)


def assert_greater_equal(x, y, message=None, summarize=None, name=None):
    return _binary_assert(">=", x, y, message, summarize)


def assert_less(x, y, message=None, summarize=None, name=None):
    return _binary_assert("<", x, y, message, summarize)


def assert_less_equal(x, y, message=None, summarize=None, name=None):
    return _binary_assert("<=", x, y, message, summarize)


# ------------------------------------------------------------- sign conditions

def _sign_assert(x, sym, message, summarize, glue="\n"):
    """assert_negative & co: x compared with 0 of its dtype, TensorFlow's message data
    (``glue``: assert_non_positive's data joins two lines, as TensorFlow's does)."""
    x = _tensor(x)
    prefix = _prefix(message)
    name = _graph_name(x) if _traced() else _shape_and_dtype(x)
    head = "Condition x %s 0 did not hold element-wise:" % sym
    label = "x (%s) = " % name
    data = [prefix] + ([head + label] if glue == "" else [head, label])
    zero = _core.convert_to_tensor(0, dtype=x.dtype)
    op = {"<": _core.less, ">": _core.greater, ">=": _core.greater_equal,
          "<=": _core.less_equal}[sym]
    cond = _core.reduce_all(op(x, zero))
    summ = 3 if summarize is None else (10 ** 9 if summarize < 0 else summarize)
    if _traced():
        return _check(cond, [x], lambda vals: _InvalidArgument(
            _graph_message(data + [_Value(vals[0])], summarize)))
    return _check(cond, [x], lambda vals: _InvalidArgument(
        "\n".join(_pretty(d, summ) for d in data + [_Value(vals[0])])))


def assert_negative(x, message=None, summarize=None, name=None):
    return _sign_assert(x, "<", message, summarize)


def assert_positive(x, message=None, summarize=None, name=None):
    return _sign_assert(x, ">", message, summarize)


def assert_non_negative(x, message=None, summarize=None, name=None):
    return _sign_assert(x, ">=", message, summarize)


def assert_non_positive(x, message=None, summarize=None, name=None):
    return _sign_assert(x, "<=", message, summarize, glue="")


# ------------------------------------------------------------------------ assert_near

def assert_near(x, y, rtol=None, atol=None, message=None, summarize=None, name=None):
    """Raises InvalidArgumentError unless ``|x - y| < atol + rtol * |y|`` everywhere
    (default tolerances: 10 machine epsilons of the dtype)."""
    x = _tensor(x)
    y = _tensor(y, x.dtype) if not isinstance(y, (_core.Tensor, _core.Variable)) else _tensor(y)
    np_t = x.dtype.as_numpy_dtype
    if x.dtype.name == "bfloat16":
        import ml_dtypes
        eps = float(ml_dtypes.finfo(np_t).eps)
    else:
        eps = float(np.finfo(np_t).eps)  # ValueError for integers, as TensorFlow's
    rtol = _tensor(rtol if rtol is not None else 10 * eps, x.dtype)
    atol = _tensor(atol if atol is not None else 10 * eps, x.dtype)
    prefix = _prefix(message)
    tol = _core.add(atol, _core.multiply(rtol, _core.abs(y)))
    cond = _core.reduce_all(_core.less(_core.abs(_core.subtract(x, y)), tol))
    if _traced():
        def fail(vals):
            items = [prefix, "x and y not equal to tolerance rtol = %s, atol = %s" % (
                _graph_tensor_text(rtol_v), _graph_tensor_text(atol_v)),
                "x (%s) = " % _graph_name(x), _Value(vals[0]),
                "y (%s) = " % _graph_name(y), _Value(vals[1])]
            return _InvalidArgument(_graph_message(items, summarize))
        rtol_v, atol_v = rtol, atol
        return _check(cond, [x, y], fail)
    head = "x and y not equal to tolerance rtol = %s, atol = %s" % (rtol, atol)

    def fail(vals):
        items = [prefix, head, "x (%s) = " % _shape_and_dtype(x), _Value(vals[0]),
                 "y (%s) = " % _shape_and_dtype(y), _Value(vals[1])]
        return _InvalidArgument(_eager_assert_message(
            "tf.Tensor(False, shape=(), dtype=bool)", items, summarize))
    return _check(cond, [x, y], fail)


def _graph_tensor_text(t):
    return 'Tensor("%s", shape=%s, dtype=%s)' % ("Const:0", _core_shape(t), t.dtype.name)


# ---------------------------------------------------------------- static conditions

def _rank_error(x, what, message):
    shape = _core_shape(x)
    name = _graph_name(x) if _traced() else ""
    return ValueError("%sTensor %s must have rank %s.  Received rank %d, shape %s" % (
        _prefix(message), name, what, shape.rank, shape))


def assert_rank(x, rank, message=None, name=None):
    """Raises ValueError unless ``x`` has rank ``rank``."""
    x = _tensor(x)
    rank = int(_static_int(rank))
    if _core_shape(x).rank != rank:
        raise _rank_error(x, "%d" % rank, message)
    return None


def assert_rank_at_least(x, rank, message=None, name=None):
    x = _tensor(x)
    rank = int(_static_int(rank))
    if _core_shape(x).rank < rank:
        raise _rank_error(x, "at least %d" % rank, message)
    return None


def assert_rank_in(x, ranks, message=None, name=None):
    x = _tensor(x)
    ranks = tuple(int(_static_int(r)) for r in ranks)
    if _core_shape(x).rank not in ranks:
        raise _rank_error(x, "in %s" % (ranks,), message)
    return None


def _static_int(v):
    if isinstance(v, _core.Tensor):
        return int(_numpy(v))
    return v


def assert_scalar(tensor, message=None, name=None):
    """Raises ValueError unless ``tensor`` is a scalar."""
    t = _tensor(tensor)
    shape = _core_shape(t)
    if shape.rank != 0:
        if _traced():
            raise ValueError("%sExpected scalar shape for %s, saw shape: %s." % (
                _prefix(message), _graph_name(t), shape))
        raise ValueError("%sExpected scalar shape, saw shape: %s." % (_prefix(message), shape))
    return None


def assert_type(tensor, tf_type, message=None, name=None):
    """Raises TypeError unless ``tensor``'s dtype is ``tf_type``."""
    tf_type = as_dtype(tf_type)
    dt = tensor.dtype if isinstance(tensor, (_core.Tensor, _core.Variable)) \
        else _tensor(tensor).dtype
    if dt != tf_type:
        name = _graph_name(tensor) if _traced() else "tensor"
        raise TypeError("%s%s must be of type %r; got %r" % (_prefix(message), name, tf_type,
                                                            as_dtype(dt)))
    return None


def assert_integer(x, message=None, name=None):
    """Raises TypeError unless ``x`` has an integer dtype."""
    dt = x.dtype if isinstance(x, (_core.Tensor, _core.Variable)) else _tensor(x).dtype
    if not as_dtype(dt).is_integer:
        name = _graph_name(x) if _traced() else "tensor"
        raise TypeError('%sExpected "x" to be integer type.  Found: %s of dtype %s' % (
            _prefix(message), name, as_dtype(dt)))
    return None


def assert_shapes(shapes, data=None, summarize=None, message=None, name=None):
    """Raises ValueError unless every tensor has its specified shape: dimensions are ints
    (fixed), strings (a symbol: equal sizes wherever it appears), None (any size), and a
    leading ``'...'`` or ``'*'`` allows any number of leading dimensions."""
    pairs = list(shapes.items()) if isinstance(shapes, dict) else list(shapes)
    sizes = {}  # symbol -> (size, tensor that fixed it, dimension)
    for x, spec in pairs:
        x = _tensor(x)
        spec = list(spec) if not isinstance(spec, str) else list(spec)
        shape = _core_shape(x)
        dims = shape.as_list()
        ellipsis = bool(spec) and spec[0] in ("...", "*")
        if ellipsis:
            spec = spec[1:]
            if len(dims) < len(spec):
                raise _rank_error(x, "at least %d" % len(spec), message)
            dims = dims[len(dims) - len(spec):]
        elif len(dims) != len(spec):
            raise _rank_error(x, "%d" % len(spec), message)
        offset = shape.rank - len(spec)
        for i, (want, got) in enumerate(zip(spec, dims)):
            idx = offset + i
            if want is None or want == ".":
                continue
            who = _graph_name(x) if _traced() else _shape_and_dtype(x)
            if isinstance(want, str):
                if want not in sizes:
                    sizes[want] = (got, x, idx)
                    continue
                size, src, src_dim = sizes[want]
                if got != size:
                    src_name = _graph_name(src) if _traced() else _shape_and_dtype(src)
                    raise ValueError(
                        "%sSpecified by tensor %s dimension %d.  Tensor %s dimension %d must "
                        "have size %d.  Received size %d, shape %s" % (
                            _prefix(message), src_name, src_dim, who, idx, size, got, shape))
            elif got != int(want):
                raise ValueError(
                    "%sSpecified explicitly.  Tensor %s dimension %d must have size %d.  "
                    "Received size %d, shape %s" % (_prefix(message), who, idx, int(want),
                                                    got, shape))
    return None


def assert_same_float_dtype(tensors=None, dtype=None):
    """The common floating dtype of ``tensors`` (and ``dtype``); ValueError when they
    differ or are not floating. float32 when nothing is given."""
    if tensors:
        dtype = _same_dtype(tensors, dtype)
    if not dtype:
        dtype = float32
    elif not as_dtype(dtype).is_floating:
        raise ValueError("Expected floating point type, got %s." % as_dtype(dtype))
    return as_dtype(dtype)


def _same_dtype(tensors, dtype):
    first = None
    expected = as_dtype(dtype) if dtype else None
    for t in tensors:
        if t is None:
            continue
        dt = as_dtype(t.dtype)
        if expected is None:
            expected, first = dt, t
        elif dt != expected:
            raise ValueError("%s, type=%s, must be of the same type (%s)%s." % (
                t, dt, expected, "" if first is None else " as %s" % (first,)))
    return expected


def assert_proper_iterable(values):
    """Raises TypeError for values that are not a "proper" iterable (a tensor, an array, a
    string, or not iterable)."""
    unintentional = (_core.Tensor, _core.Variable, np.ndarray, bytes, str)
    if isinstance(values, unintentional) or not isinstance(values, collections.abc.Iterable):
        raise TypeError('Expected argument "values" to be a "proper" iterable.  Found: %s'
                        % type(values))


def is_numeric_tensor(tensor):
    """True for a tensor of a numeric (not bool) dtype."""
    return isinstance(tensor, _core.Tensor) and not tensor.dtype.is_bool
