"""tf.math's and tf.nn's everyday names beyond the basic arithmetic: the trigonometric,
hyperbolic and special functions, the Xlogy / *_no_nan family, scans (cumprod,
cumulative_logsumexp), segment reductions, counting helpers and the small losses.

Elementwise functions, scans and segment reductions are C ops (csrc/ops.def, kernels in
csrc/special_math.h, cpu_math.c, ops_math.c); the rest compose them the way TensorFlow's own
Python composes its ops. Only argument checks happen here: no element is touched in Python.
"""

import builtins
import operator

from mixprec import _core
from mixprec._dtypes import as_dtype, float32, float64, int32, int64

_CODES = {row[2]: row[0] for row in _core.op_table()}
_SEG_KIND = {"sum": 0, "mean": 1, "max": 2, "min": 3, "prod": 4, "sqrt_n": 5}


def _t(x, dtype=None):
    if isinstance(x, _core.Variable):
        x = x.read_value()
    if isinstance(x, _core.Tensor):
        return x if dtype is None or x.dtype == as_dtype(dtype) else _core.convert_to_tensor(x, dtype)
    return _core.convert_to_tensor(x) if dtype is None else _core.convert_to_tensor(x, dtype)


def _index(v, what):
    if isinstance(v, _core.Tensor):
        v = v.numpy()
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError("%s must be an integer, got %r" % (what, v)) from None


def _need_float(x, op, allowed="half, bfloat16, float, double"):
    if not x.dtype.is_floating:
        raise _core.InvalidArgumentError(
            "Value for attr 'T' of %s is not in the list of allowed values: %s [Op:%s]"
            % (x.dtype.name, allowed, op))


# ------------------------------------------------------------------ elementwise

tan = _core.tan
asin = _core.asin
acos = _core.acos
atan = _core.atan
sinh = _core.sinh
cosh = _core.cosh
asinh = _core.asinh
acosh = _core.acosh
atanh = _core.atanh
erf = _core.erf
erfc = _core.erfc
erfinv = _core.erfinv
ndtri = _core.ndtri
lgamma = _core.lgamma
digamma = _core.digamma
softsign = _core.softsign
selu = _core.selu
atan2 = _core.atan2
truncatediv = _core.truncatediv
truncatemod = _core.truncatemod
xlogy = _core.xlogy
xdivy = _core.xdivy
xlog1py = _core.xlog1py
multiply_no_nan = _core.mul_no_nan
nextafter = _core.nextafter
igamma = _core.igamma
igammac = _core.igammac
zeta = _core.zeta
polygamma = _core.polygamma
bessel_i0 = _core.bessel_i0
bessel_i0e = _core.bessel_i0e
bessel_i1 = _core.bessel_i1
bessel_i1e = _core.bessel_i1e

# TensorFlow's truediv table: the float an integer division runs in
_TRUEDIV = {"int8": float32, "uint8": float32, "int16": float32, "uint16": float32,
            "int32": float64, "int64": float64}


def divide_no_nan(x, y, name=None):
    """x / y, 0 wherever y is 0 (even where x is NaN or inf); integers divide as floats."""
    x = _t(x)
    y = _t(y, x.dtype)
    wide = _TRUEDIV.get(x.dtype.name)
    if wide is not None:
        x, y = _core.cast(x, wide), _core.cast(y, wide)
    return _core.div_no_nan(x, y)


div_no_nan = divide_no_nan


def reciprocal_no_nan(x, name=None):
    """1 / x, 0 where x is 0."""
    x = _t(x)
    _need_float(x, "DivNoNan", "half, float, bfloat16, double, complex64, complex128")
    return _core.div_no_nan(_core.fill([], 1, x.dtype), x)


def log_sigmoid(x, name=None):
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|."""
    x = _t(x)
    _need_float(x, "Neg")
    return _core.neg(_core.softplus(_core.neg(x)))


def rint(x, name=None):
    """Round half to even (floats only, as TensorFlow's Rint)."""
    x = _t(x)
    _need_float(x, "Rint", "bfloat16, half, float, double")
    return _core.round(x)


def logical_xor(x, y, name=None):
    """x XOR y for bool tensors (TensorFlow's composition of And, Or and Not)."""
    return _core.logical_and(_core.logical_or(x, y), _core.logical_not(_core.logical_and(x, y)))


def scalar_mul(scalar, x, name=None):
    """scalar * x for a 0-D scalar of x's dtype."""
    x = _t(x)
    s = _t(scalar, x.dtype)
    if s.ndim != 0:
        raise ValueError("The input scalar must be a 0-D value. Received shape %s."
                         % (tuple(s.shape),))
    return _core.multiply(s, x)


def polyval(coeffs, x, name=None):
    """coeffs[0] x^(n-1) + ... + coeffs[n-1] by Horner's rule."""
    if not isinstance(coeffs, (list, tuple)):
        raise ValueError("Argument coeffs must be list type found %s." % type(coeffs))
    x = _t(x)
    if not coeffs:
        return _core.fill(list(x.shape), 0, x.dtype)
    p = _t(coeffs[0], x.dtype)
    for c in coeffs[1:]:
        p = _t(c, x.dtype) + p * x
    return p


def lbeta(x, name=None):
    """log|B(x)| over the last axis: sum(lgamma(x)) - lgamma(sum(x))."""
    x = _t(x)
    if x.ndim == 0:
        raise _core.InvalidArgumentError(
            "Invalid reduction dimension (-1 for input with 0 dimension(s) [Op:Sum]")
    return _core.reduce_sum(_core.lgamma(x), [x.ndim - 1]) - _core.lgamma(
        _core.reduce_sum(x, [x.ndim - 1]))


def accumulate_n(inputs, shape=None, tensor_dtype=None, name=None):
    """The sum of a list of same-shaped tensors (tf.math.add_n)."""
    from mixprec._ops import add_n
    return add_n(inputs)


# ------------------------------------------------------------------ reductions and scans

def _axes(axis, rank):
    if axis is None:
        return list(builtins.range(rank))
    if isinstance(axis, _core.Tensor):
        axis = axis.numpy().tolist()
    return axis


def count_nonzero(input, axis=None, keepdims=None, dtype=int64, name=None):  # noqa: A002
    """The number of elements != 0 (or True) along axis, as dtype."""
    x = _t(input)
    zero = False if x.dtype.is_bool else 0
    nz = _core.cast(_core.not_equal(x, _core.fill([], zero, x.dtype)), int64)
    return _core.cast(_core.reduce_sum(nz, _axes(axis, x.ndim), bool(keepdims)), dtype)


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    """sqrt(sum(x^2)) along axis; integers give the truncated root (TensorFlow's kernel)."""
    x = _t(input_tensor)
    ss = _core.reduce_sum(_core.square(x), _axes(axis, x.ndim), bool(keepdims))
    if x.dtype.is_floating:
        return _core.sqrt(ss)
    return _core.cast(_core.floor(_core.sqrt(_core.cast(ss, float64))), x.dtype)


def _scan(op, x, axis, exclusive, reverse):
    x = _t(x)
    return _core.math_op(_CODES[op], (x,), _index(axis, "axis"), int(bool(exclusive)),
                         int(bool(reverse)))


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """Running products along axis (TensorFlow's exclusive/reverse)."""
    return _scan("cumprod", x, axis, exclusive, reverse)


def cumulative_logsumexp(x, axis=0, exclusive=False, reverse=False, name=None):
    """Running log(sum(exp(x))) along axis, without overflow; exclusive starts at -inf."""
    return _scan("cumulative_logsumexp", x, axis, exclusive, reverse)


def zero_fraction(value, name=None):
    """The fraction of zeros in value, as float32."""
    x = _t(value)
    return _core.reduce_mean(_core.cast(_core.equal(x, _core.fill([], 0, x.dtype)), float32))


def _monotone(x, strict):
    x = _t(x)
    if x.dtype.is_bool or not (x.dtype.is_floating or x.dtype.is_integer):
        raise TypeError("Expected x to be numeric, instead found: %s" % (x,))
    flat = _core.reshape(x, [-1] if x._numel else [0])
    n = int(flat.shape[0])
    if n < 2:
        return _core.constant(True)
    a, b = flat[:-1], flat[1:]
    return _core.reduce_all(_core.greater(b, a) if strict else _core.greater_equal(b, a))


def is_non_decreasing(x, name=None):
    return _monotone(x, False)


def is_strictly_increasing(x, name=None):
    return _monotone(x, True)


# ------------------------------------------------------------------ segments

def _segment(kind, data, segment_ids, num_segments, is_sorted):
    data = _t(data)
    ids = _t(segment_ids)
    if ids.dtype.name not in ("int32", "int64"):
        raise _core.InvalidArgumentError(
            "Value for attr 'Tindices' of %s is not in the list of allowed values: int16, int32, "
            "int64" % ids.dtype.name)
    n = 0 if num_segments is None else _index(num_segments, "num_segments")
    return _core.math_op(_CODES["segment_reduce"], (data, ids), _SEG_KIND[kind], n,
                         int(is_sorted))


def segment_sum(data, segment_ids, name=None):
    return _segment("sum", data, segment_ids, None, True)


def segment_mean(data, segment_ids, name=None):
    return _segment("mean", data, segment_ids, None, True)


def segment_max(data, segment_ids, name=None):
    return _segment("max", data, segment_ids, None, True)


def segment_min(data, segment_ids, name=None):
    return _segment("min", data, segment_ids, None, True)


def segment_prod(data, segment_ids, name=None):
    return _segment("prod", data, segment_ids, None, True)


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    return _segment("sum", data, segment_ids, num_segments, False)


def unsorted_segment_max(data, segment_ids, num_segments, name=None):
    return _segment("max", data, segment_ids, num_segments, False)


def unsorted_segment_min(data, segment_ids, num_segments, name=None):
    return _segment("min", data, segment_ids, num_segments, False)


def unsorted_segment_prod(data, segment_ids, num_segments, name=None):
    return _segment("prod", data, segment_ids, num_segments, False)


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """The mean per segment (0 for an empty one); integers divide as floats (float64 for int32),
    as TensorFlow's composition of UnsortedSegmentSum and a division."""
    data = _t(data)
    if data.dtype.is_floating:
        return _segment("mean", data, segment_ids, num_segments, False)
    total = _segment("sum", data, segment_ids, num_segments, False)
    ids = _t(segment_ids)
    ones = _core.fill(list(ids.shape), 1, data.dtype)
    count = _segment("sum", ones, ids, num_segments, False)
    count = _core.reshape(_core.maximum(count, _core.fill([], 1, data.dtype)),
                          [-1] + [1] * (total.ndim - 1))
    return _core.truediv(total, count)


def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None):
    data = _t(data)
    _need_float(data, "UnsortedSegmentSqrtN",
                "bfloat16, half, float, double, complex64, complex128")
    return _segment("sqrt_n", data, segment_ids, num_segments, False)


def invert_permutation(x, name=None):
    """y[x[i]] = i for a permutation x of 0..n-1 (int32/int64, 1-D)."""
    x = _t(x)
    if x.dtype.name not in ("int32", "int64"):
        raise _core.InvalidArgumentError(
            "Value for attr 'T' of %s is not in the list of allowed values: int32, int64"
            % x.dtype.name)
    if x.ndim != 1:
        raise _core.InvalidArgumentError("invert_permutation expects a 1D vector.")
    n = int(x.shape[0])
    if n:
        lo, hi = int(_core.reduce_min(x)), int(_core.reduce_max(x))
        if lo < 0 or hi >= n:
            bad = lo if lo < 0 else hi
            raise _core.InvalidArgumentError("%d is not between 0 and %d" % (bad, n))
        counts = _segment("sum", _core.fill([n], 1, x.dtype), x, n, False)
        if int(_core.reduce_max(counts)) > 1:
            dup = int(_core.argmax(counts, 0, "int64"))
            raise _core.InvalidArgumentError("%d is duplicated in the input." % dup)
    return _segment("sum", _core.range(0, n, 1, x.dtype), x, n, False)


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=int32, name=None,
             axis=None, binary_output=False):
    """Counts (or summed weights) of each value of a non-negative integer tensor."""
    arr = _t(arr)
    if not arr.dtype.is_integer or arr.dtype.is_bool:
        raise _core.InvalidArgumentError(
            "Value for attr 'Tidx' of %s is not in the list of allowed values: int32, int64"
            % arr.dtype.name)
    if axis is not None and axis not in (0, -1):
        raise _core.InvalidArgumentError("Unsupported axis value %s. Only 0 and -1 are currently "
                                         "supported." % (axis,))
    per_row = axis == -1 and arr.ndim == 2
    if axis == 0 or not per_row:
        arr = _core.reshape(arr, [-1])
    n = arr._numel
    if n and int(_core.reduce_min(arr)) < 0:
        raise _core.InvalidArgumentError("Input arr must be non-negative!")
    size = int(_core.reduce_max(arr)) + 1 if n else 0
    if minlength is not None:
        size = builtins.max(size, _index(minlength, "minlength"))
    if maxlength is not None:
        size = builtins.min(size, _index(maxlength, "maxlength"))
    ids = _core.cast(arr, int64)
    keep = _core.less(ids, _core.fill([], size, int64))
    out_dtype = as_dtype(dtype)
    if weights is not None and not binary_output:
        w = _t(weights)
        out_dtype = w.dtype
    else:
        w = _core.fill(list(arr.shape), 1, out_dtype)
    rows = int(arr.shape[0]) if per_row else 1
    if per_row:
        ids = ids + _core.reshape(_core.range(0, rows, 1, int64) * size, [rows, 1])
    ids = _core.where(keep, ids, _core.fill([], -1, int64))
    out = _segment("sum", _core.broadcast_to(w, list(arr.shape)), ids, rows * size, False)
    if per_row:
        out = _core.reshape(out, [rows, size])
    if binary_output:
        out = _core.cast(_core.greater(out, _core.fill([], 0, out.dtype)), out_dtype)
    return out


def confusion_matrix(labels, predictions, num_classes=None, weights=None, dtype=int32,
                     name=None):
    """The (num_classes, num_classes) counts (or summed weights) of (label, prediction) pairs."""
    labels = _core.cast(_core.reshape(_t(labels), [-1]), int64)
    predictions = _core.cast(_core.reshape(_t(predictions), [-1]), int64)
    if labels.shape != predictions.shape:
        raise ValueError("labels and predictions must have the same shape, got %s and %s"
                         % (tuple(labels.shape), tuple(predictions.shape)))
    for t, what in ((labels, "labels"), (predictions, "predictions")):
        if t._numel and int(_core.reduce_min(t)) < 0:
            raise _core.InvalidArgumentError("`%s` contains negative values." % what)
    if num_classes is None:
        hi = builtins.max([int(_core.reduce_max(t)) for t in (labels, predictions)
                           if t._numel] or [-1])
        n = hi + 1
    else:
        n = _index(num_classes, "num_classes")
        for t, what in ((labels, "labels"), (predictions, "predictions")):
            if t._numel and int(_core.reduce_max(t)) >= n:
                raise _core.InvalidArgumentError("`%s` out of bound" % what)
    dtype = as_dtype(dtype)
    w = (_core.fill(list(labels.shape), 1, dtype) if weights is None else
         _core.cast(_core.reshape(_t(weights), [-1]), dtype))
    ids = labels * n + predictions
    return _core.reshape(_segment("sum", w, ids, n * n, False), [n, n])


def in_top_k(targets, predictions, k, name=None):
    """Whether each row's target is among its k largest predictions (ties count for the
    target; a row with a non-finite prediction, or a target out of range, is False)."""
    p = _t(predictions)
    if p.dtype != float32:
        if isinstance(targets, _core.Tensor) and isinstance(predictions, _core.Tensor):
            # TensorFlow: with every input a tensor the op's kernel lookup fails
            names = {"float64": "double", "float16": "half", "bfloat16": "bfloat16"}
            raise _core.InvalidArgumentError(
                "cannot compute InTopKV2 as input #0(zero-based) was expected to be a float "
                "tensor but is a %s tensor [Op:InTopKV2]" % names.get(p.dtype.name,
                                                                     p.dtype.name))
        raise ValueError("Tensor conversion requested dtype float32 for Tensor with dtype %s"
                         % p.dtype.name)
    t = _t(targets)
    if t.dtype.name not in ("int32", "int64"):
        raise _core.InvalidArgumentError(
            "Value for attr 'T' of %s is not in the list of allowed values: int32, int64"
            % t.dtype.name)
    if p.ndim != 2 or t.ndim != 1 or t.shape[0] != p.shape[0]:
        raise _core.InvalidArgumentError(
            "predictions must be 2-dimensional and targets 1-dimensional with as many rows, got "
            "%s and %s" % (tuple(p.shape), tuple(t.shape)))
    c = int(p.shape[1])
    t64 = _core.cast(t, int64)
    onehot = _core.greater(_core.one_hot(t64, c, 1.0, 0.0, -1, float32),
                           _core.fill([], 0.5, float32))
    zero = _core.fill([], 0.0, float32)
    tp = _core.reduce_sum(_core.where(onehot, p, zero), [1], True)
    valid = _core.logical_and(_core.greater_equal(t64, _core.fill([], 0, int64)),
                              _core.less(t64, _core.fill([], c, int64)))
    finite = _core.logical_and(_core.reduce_all(_core.is_finite(p), [1]),
                               _core.is_finite(_core.reshape(tp, [-1])))
    above = _core.reduce_sum(_core.cast(_core.greater(p, tp), int64), [1])
    ok = _core.less(above, _core.fill([], _index(k, "k"), int64))
    return _core.logical_and(_core.logical_and(valid, finite), ok)


# ------------------------------------------------------------------ tf.nn

def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """x / sqrt(max(sum(x^2, axis), epsilon))."""
    axis = dim if axis is None else axis
    x = _t(x)
    if not x.dtype.is_floating:
        raise TypeError("Cannot convert %r to EagerTensor of dtype %s" % (epsilon, x.dtype.name))
    square_sum = _core.reduce_sum(_core.square(x), _axes(axis, x.ndim), True)
    inv = _core.rsqrt(_core.maximum(square_sum, _core.fill([], epsilon, x.dtype)))
    return _core.multiply(x, inv)


def l2_loss(t, name=None):
    """sum(t^2) / 2."""
    t = _t(t)
    _need_float(t, "L2Loss")
    return _core.reduce_sum(_core.square(t), list(builtins.range(t.ndim))) * \
        _core.fill([], 0.5, t.dtype)


def _same_shape(a, b, an, bn):
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError("`%s` and `%s` must have the same shape, received (%s vs %s)."
                         % (an, bn, tuple(a.shape), tuple(b.shape)))


def log_poisson_loss(targets, log_input, compute_full_loss=False, name=None):
    """exp(log_input) - log_input * targets (+ Stirling's term where targets > 1)."""
    log_input = _t(log_input)
    targets = _t(targets, log_input.dtype)
    _same_shape(log_input, targets, "log_input", "targets")
    result = _core.exp(log_input) - log_input * targets
    if compute_full_loss:
        dt = targets.dtype
        stirling = (targets * _core.log(targets) - targets +
                    _core.fill([], 0.5, dt) * _core.log(_core.fill([], 6.283185307179586, dt) * targets))
        small = _core.logical_and(_core.greater_equal(targets, _core.fill([], 0, dt)),
                                  _core.less_equal(targets, _core.fill([], 1, dt)))
        result = result + _core.where(small, _core.fill([], 0, dt), stirling)
    return result


def weighted_cross_entropy_with_logits(labels, logits, pos_weight, name=None):
    """Sigmoid cross-entropy with the positive term weighted by pos_weight, stable for any
    logits: (1 - z) x + (1 + (q - 1) z) (log1p(exp(-|x|)) + max(-x, 0))."""
    logits = _t(logits)
    labels = _t(labels, logits.dtype)
    _same_shape(logits, labels, "logits", "labels")
    dt = logits.dtype
    one = _core.fill([], 1, dt)
    log_weight = one + (_t(pos_weight, dt) - one) * labels
    return (one - labels) * logits + log_weight * (
        _core.log1p(_core.exp(_core.neg(_core.abs(logits)))) + _core.relu(_core.neg(logits)))


def normalize_moments(counts, mean_ss, variance_ss, shift, name=None):
    """(mean, variance) from sufficient statistics."""
    mean_ss = _t(mean_ss)
    divisor = _core.reciprocal(_t(counts, mean_ss.dtype))
    shifted_mean = mean_ss * divisor
    mean = shifted_mean if shift is None else shifted_mean + _t(shift, mean_ss.dtype)
    variance = _t(variance_ss, mean_ss.dtype) * divisor - _core.square(shifted_mean)
    return mean, variance


def sufficient_statistics(x, axes, shift=None, keepdims=False, name=None, keep_dims=None):
    """(count, sum of (x - shift), sum of (x - shift)^2, shift) over axes."""
    if keep_dims is not None:
        keepdims = keep_dims
    x = _t(x)
    axes = [a % x.ndim if x.ndim else a for a in _axes(axes, x.ndim)]
    count = 1
    for a in axes:
        count *= int(x.shape[a])
    counts = _core.fill([], count, x.dtype)
    if shift is not None:
        shift = _t(shift, x.dtype)
        m_ss = x - shift
        v_ss = _core.squared_difference(x, shift)
    else:
        m_ss, v_ss = x, _core.square(x)
    m_ss = _core.reduce_sum(m_ss, axes, bool(keepdims))
    v_ss = _core.reduce_sum(v_ss, axes, bool(keepdims))
    return counts, m_ss, v_ss, shift


def weighted_moments(x, axes, frequency_weights, keepdims=False, name=None):
    """Frequency-weighted mean and variance over axes (float16 computed in float32)."""
    x = _t(x)
    needs_cast = x.dtype.name == "float16"
    if needs_cast:
        x = _core.cast(x, float32)
    w = _t(frequency_weights)
    if w.dtype != x.dtype:
        w = _core.cast(w, x.dtype)
    axes = [a % x.ndim for a in _axes(axes, x.ndim)]
    wsum = _core.reduce_sum(w * x, axes, True)
    bw = w + _core.fill(list(x.shape), 0, x.dtype)
    sw = _core.reduce_sum(bw, axes, True)
    mean = _core.div_no_nan(wsum, sw)
    dist = _core.reduce_sum(w * _core.squared_difference(x, mean), axes,
                            True)
    var = _core.div_no_nan(dist, sw)
    if not keepdims:
        keep = [d for i, d in enumerate(mean.shape) if i not in axes]
        mean, var = _core.reshape(mean, keep), _core.reshape(var, keep)
    if needs_cast:
        mean, var = _core.cast(mean, "float16"), _core.cast(var, "float16")
    return mean, var


def crelu(features, name=None, axis=-1):
    """concat([relu(x), relu(-x)], axis)."""
    x = _t(features)
    return _core.concat([_core.relu(x), _core.relu(_core.neg(x))], axis)
