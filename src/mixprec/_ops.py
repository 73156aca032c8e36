"""TensorFlow's top-level op functions (``tf.add``, ``tf.reshape`` ...).

Most are the C functions themselves (mixprec._core, generated from csrc/ops.def); the
ones here only adapt TensorFlow's signatures (defaults, ``name=``, argument spellings)
and compose core ops. No element is touched in Python.
"""

import builtins
import contextlib
import operator

from mixprec import _core, _static
from mixprec._array_ops import cumsum, gather, pad, split, tile  # noqa: F401 - tf.<name>
from mixprec._dtypes import as_dtype, float32, float64, int32, int64

__all__ = [
    "constant", "convert_to_tensor", "cast", "saturate_cast", "identity", "stop_gradient",
    "add", "subtract", "multiply", "divide", "truediv", "realdiv", "floordiv", "floormod", "mod",
    "pow", "negative", "abs", "exp", "log", "sqrt", "square", "maximum", "minimum",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_not", "where", "sigmoid", "tanh", "sign", "round",
    "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_all",
    "reduce_any", "argmax", "argmin", "matmul", "reshape", "transpose", "concat", "stack",
    "unstack", "expand_dims", "squeeze", "zeros", "ones", "zeros_like", "ones_like", "fill",
    "range", "one_hot", "is_tensor", "shape", "rank", "size", "broadcast_to", "clip_by_value",
    "add_n", "device", "squared_difference", "sin", "cos", "ensure_shape", "gather",
    "tile", "pad", "split", "cumsum",
]

constant = _core.constant
convert_to_tensor = _core.convert_to_tensor
def cast(x, dtype, name=None):
    """``tf.cast``; a cast to or from tf.string is TensorFlow's UnimplementedError (use
    tf.strings.to_number / as_string)."""
    try:
        return _core.cast(x, dtype, name)
    except NotImplementedError as e:
        if str(e).startswith("Cast "):
            from mixprec import errors
            raise errors.UnimplementedError(None, "Cast", str(e)) from None
        raise


identity = _core.identity
stop_gradient = _core.stop_gradient
add = _core.add
subtract = _core.subtract
multiply = _core.multiply
truediv = _core.truediv
divide = _core.truediv
realdiv = _core.realdiv
floordiv = _core.floordiv
floormod = _core.floormod
mod = _core.floormod
pow = _core.pow  # noqa: A001 - TensorFlow's public name
negative = _core.neg
abs = _core.abs  # noqa: A001
exp = _core.exp
log = _core.log
sqrt = _core.sqrt
square = _core.square
sin = _core.sin
cos = _core.cos
sigmoid = _core.sigmoid
tanh = _core.tanh
sign = _core.sign
round = _core.round  # noqa: A001
maximum = _core.maximum
minimum = _core.minimum
squared_difference = _core.squared_difference
equal = _core.equal
not_equal = _core.not_equal
less = _core.less
less_equal = _core.less_equal
greater = _core.greater
greater_equal = _core.greater_equal
logical_and = _core.logical_and
logical_or = _core.logical_or
logical_not = _core.logical_not
reduce_sum = _core.reduce_sum
reduce_mean = _core.reduce_mean
reduce_max = _core.reduce_max
reduce_min = _core.reduce_min
reduce_prod = _core.reduce_prod
reduce_all = _core.reduce_all
reduce_any = _core.reduce_any
matmul = _core.matmul
reshape = _core.reshape
transpose = _core.transpose
concat = _core.concat
stack = _core.stack
broadcast_to = _core.broadcast_to
fill = _core.fill
one_hot = _core.one_hot


def saturate_cast(value, dtype, name=None):
    """Casts ``value`` to ``dtype``, clamping to the target's range first whenever the
    source's range exceeds it (TensorFlow's rule). The clamp runs in float64 or int64,
    where both ranges' bounds are exact, so a bound never rounds out of range (bfloat16's
    65504 would be 65536); float -> integer casts saturate in the core (NaN -> 0)."""
    value = convert_to_tensor(value)
    dtype = as_dtype(dtype)
    src = value.dtype
    if src == dtype or src.is_bool or dtype.is_bool:
        return cast(value, dtype)
    if float(src.min) >= float(dtype.min) and float(src.max) <= float(dtype.max):
        return cast(value, dtype)
    if src.is_floating and not dtype.is_floating:
        # TensorFlow clamps in the source dtype, at the bounds rounded toward zero when the
        # target's bound is not representable (float32 -> int32: 2147483520, not 2**31)
        import numpy as np
        npt = src.as_numpy_dtype
        lo, hi = np.array(dtype.min, npt), np.array(dtype.max, npt)
        if lo < dtype.min:
            lo = np.nextafter(lo, np.array(0, npt))
        if hi > dtype.max:
            hi = np.nextafter(hi, np.array(0, npt))
        return cast(_core.minimum(_core.maximum(value, _core.constant(lo, src)),
                                  _core.constant(hi, src)), dtype)
    if dtype.is_floating:
        wide, lo, hi = cast(value, float64), float(dtype.min), float(dtype.max)
    elif src.is_integer:
        wide, lo, hi = cast(value, int64), int(dtype.min), int(dtype.max)
    else:
        return cast(value, dtype)
    return cast(clip_by_value(wide, lo, hi), dtype)


def where(condition, x=None, y=None, name=None):
    """``condition ? x : y`` elementwise with broadcasting; with only ``condition``, the
    int64 coordinates of its True elements (computed on the host)."""
    if x is None and y is None:  # the Where op (csrc/ops_sort.c): also in a trace
        from mixprec._array_extra import where_indices

        return where_indices(condition)
    if x is None or y is None:
        raise ValueError("where: x and y must both be given or both be None")
    return _core.where(condition, x, y)


def argmax(input, axis=None, output_type="int64", name=None):  # noqa: A002
    return _core.argmax(input, 0 if axis is None else axis, output_type)


def argmin(input, axis=None, output_type="int64", name=None):  # noqa: A002
    return _core.argmin(input, 0 if axis is None else axis, output_type)


def _int_axis(axis, op):
    # NOTE: not int(axis), which truncates 1.5 to 1; TensorFlow refuses a non-integer axis
    try:
        return operator.index(axis)
    except TypeError:
        raise TypeError("%s: axis must be an integer, got %r" % (op, axis)) from None


def expand_dims(input, axis, name=None):  # noqa: A002
    """Inserts a dimension of size 1 at ``axis`` (negative counts from the end)."""
    x = convert_to_tensor(input)
    axis = _int_axis(axis, "expand_dims")
    rank = x.ndim + 1
    if not -rank <= axis < rank:
        raise _core.InvalidArgumentError(
            "expand_dims: axis %d is out of range [%d, %d) for an input of rank %d"
            % (axis, -rank, rank, x.ndim))
    if axis < 0:
        axis += rank
    shape = list(x.shape)
    shape.insert(axis, 1)
    return reshape(x, shape)


def squeeze(input, axis=None, name=None):  # noqa: A002
    """Removes dimensions of size 1 (all of them, or those in ``axis``)."""
    x = convert_to_tensor(input)
    shape = list(x.shape)
    if axis is None:
        return reshape(x, [d for d in shape if d != 1])
    try:
        axes = [operator.index(axis)]
    except TypeError:
        try:
            axes = list(axis)
        except TypeError:
            axes = [axis]  # neither an integer nor a list of them: refused below
    norm = set()
    for a in axes:
        a = _int_axis(a, "squeeze")
        if not -x.ndim <= a < x.ndim:
            raise _core.InvalidArgumentError(
                "squeeze: axis %d is out of range for an input of rank %d" % (a, x.ndim))
        a = a + x.ndim if a < 0 else a
        if shape[a] != 1:
            raise _core.InvalidArgumentError(
                "Can not squeeze dim[%d], expected a dimension of 1, got %d" % (a, shape[a]))
        norm.add(a)
    return reshape(x, [d for i, d in enumerate(shape) if i not in norm])


def unstack(value, num=None, axis=0, name=None):
    """Splits ``value`` along ``axis`` into a list of tensors of rank - 1."""
    x = convert_to_tensor(value)
    if x.ndim == 0:
        raise ValueError("unstack: input must have rank >= 1")
    axis = _int_axis(axis, "unstack")
    if not -x.ndim <= axis < x.ndim:
        raise _core.InvalidArgumentError(
            "unstack: axis %d is out of range [%d, %d) for an input of rank %d"
            % (axis, -x.ndim, x.ndim, x.ndim))
    if axis < 0:
        axis += x.ndim
    n = x.shape[axis]
    if num is not None and num != n:
        raise ValueError("unstack: num=%d does not match dimension %d" % (num, n))
    index = [slice(None)] * x.ndim
    out = []
    for i in builtins.range(n):
        index[axis] = i
        out.append(x[tuple(index)])
    return out


def _fill_as(shape, value, dtype):
    # 0/1 spelled False/True for bool: a Python int does not convert to a bool tensor
    dtype = as_dtype(dtype)
    if dtype.name == "string" and value == 0:  # zeros of strings: empty strings, as TensorFlow
        value = b""
    return fill(shape, builtins.bool(value) if dtype.is_bool else value, dtype)


def zeros(shape, dtype=float32, name=None):
    return _fill_as(shape, 0, dtype)


def ones(shape, dtype=float32, name=None):
    return _fill_as(shape, 1, dtype)


def zeros_like(input, dtype=None, name=None):  # noqa: A002
    x = convert_to_tensor(input)
    return _static.declare(_fill_as(_core.real_shape(x), 0, x.dtype if dtype is None else dtype),
                           _static.shape(x))


def ones_like(input, dtype=None, name=None):  # noqa: A002
    x = convert_to_tensor(input)
    return _static.declare(_fill_as(_core.real_shape(x), 1, x.dtype if dtype is None else dtype),
                           _static.shape(x))


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001
    """``tf.range``: [start, limit) in steps of delta; int32 unless a float is involved."""
    if _core.graph_recording() is not None and builtins.any(
            _traced(b) for b in (start, limit, delta)):
        # a bound computed from the function's inputs: the length is read at every replay
        # (the Range op of tensor bounds), checked here on the values of this trace
        tok = _core.graph_suspend()
        try:
            dt = _core.range(start, limit, delta, dtype).dtype
        finally:
            _core.graph_resume(tok)
        if limit is None:
            start, limit = 0, start
        bounds = [_core.cast(b, dt) if isinstance(b, _core.Tensor) else
                  _core.convert_to_tensor(b, dt) for b in
                  (_value(start), _value(limit), _value(delta))]
        return _core.range_t(*bounds)
    return _core.range(start, limit, delta, dtype)


def _value(x):
    return x.read_value() if isinstance(x, _core.Variable) else x


def _traced(x):
    """A tensor a trace computes from its inputs or variables (its value varies by call)."""
    x = _value(x)
    return isinstance(x, _core.Tensor) and _core.graph_is_traced(x)


def is_tensor(x):
    return isinstance(x, _core.Tensor)


def shape(input, out_type=int32, name=None):  # noqa: A002
    """The shape of ``input`` as a 1-D int tensor (``tf.shape``). Inside a trace, of a
    tensor computed from the inputs, it is an op: a replay at another shape (a relaxed
    signature, a loop body over a last partial batch) gives that shape."""
    x = convert_to_tensor(input)
    if _traced(x):
        return _core.shape_op(x, as_dtype(out_type))
    return constant(list(x.shape), dtype=out_type)


def rank(input, name=None):  # noqa: A002
    # a trace is specialised to ranks: the rank is a constant of it
    return constant(convert_to_tensor(input).ndim, dtype=int32)


def size(input, out_type=int32, name=None):  # noqa: A002
    x = convert_to_tensor(input)
    if _traced(x):
        return _core.reduce_prod(_core.shape_op(x, as_dtype(out_type)))
    return constant(x._numel, dtype=out_type)


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    return minimum(maximum(t, clip_value_min), clip_value_max)


def add_n(inputs, name=None):
    """Sums a list of same-shaped tensors."""
    inputs = list(inputs)
    if not inputs:
        raise ValueError("add_n: inputs must be a non-empty list")
    total = convert_to_tensor(inputs[0])
    for t in inputs[1:]:
        total = total + t
    return total


def _parse_device(name):
    if name is None:
        return None
    s = str(name).upper()
    kind, index = None, 0
    for token in s.replace("/", " ").replace(":", " ").split():
        if token in ("CPU", "GPU"):
            kind = token
        elif token.isdigit() and kind is not None:
            index = int(token)
        elif token.startswith("DEVICE"):
            continue
    if kind is None:
        # spellings like '/device:GPU:0' or 'gpu:1'
        raise ValueError("Unknown device spec %r: use '/CPU:0' or '/GPU:0'" % (name,))
    return (0 if kind == "CPU" else 1, index)


@contextlib.contextmanager
def device(device_name):
    """``with mixprec.device('/CPU:0'):`` places new tensors on that device."""
    spec = _parse_device(device_name)
    if spec is not None and (spec[0] == 0 or _core.device_count(1) == 0):
        # TensorFlow's soft placement (on by default): every CPU index (logical CPUs share
        # the host) and, on a machine without GPUs, any GPU request run on CPU:0
        spec = (0, 0)
    prev = _core.set_device(spec)
    try:
        yield
    finally:
        _core.set_device(prev)


def ensure_shape(x, shape, name=None):
    """``x`` unchanged when its shape is compatible with ``shape`` (None dimensions and an
    unknown rank match anything); InvalidArgumentError otherwise, as TensorFlow."""
    from mixprec._shape import TensorShape
    x = x.value() if isinstance(x, _core.Variable) else _core.convert_to_tensor(x)
    if shape is None:
        return identity(x)
    want = TensorShape(shape)
    if want.rank is None:
        return identity(x)
    have = list(x.shape)
    dims = [d if d is None or isinstance(d, int) else d.value for d in want]
    ok = len(have) == len(dims) and all(
        w is None or h is None or int(w) == int(h) for h, w in zip(have, dims))
    if not ok:
        def fmt(ds):
            return "[" + ",".join("?" if d is None else str(int(d)) for d in ds) + "]"
        raise _core.InvalidArgumentError(
            "Shape of tensor input %s is not compatible with expected shape %s. "
            "[Op:EnsureShape]" % (fmt(have), fmt(dims)))
    return identity(x)
