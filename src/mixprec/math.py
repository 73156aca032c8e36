"""``tf.math``: elementwise math, comparisons and reductions."""

from mixprec import _core
from mixprec._ops import (  # noqa: F401
    abs, add, add_n, argmax, argmin, cos, divide, equal, exp, floordiv, floormod, greater,
    greater_equal, less, less_equal, log, logical_and, logical_not, logical_or, maximum,
    minimum, multiply, negative, not_equal, pow, realdiv, reduce_all, reduce_any, reduce_max,
    reduce_mean, reduce_min, reduce_prod, reduce_sum, round, sigmoid, sign, sin, sqrt, square,
    squared_difference, subtract, tanh, truediv)
from mixprec._array_ops import cumsum  # noqa: F401,E402 - tf.math.cumsum
from mixprec._math_extra import (  # noqa: F401,E402 - tf.math's functions, scans, segments
    accumulate_n, bessel_i0, bessel_i0e, bessel_i1, bessel_i1e, acos, acosh, asin, asinh, atan, atan2, atanh, bincount, confusion_matrix, cosh,
    count_nonzero, cumprod, cumulative_logsumexp, digamma, divide_no_nan, erf, erfc, erfinv, igamma,
    igammac, in_top_k, invert_permutation, is_non_decreasing, is_strictly_increasing, l2_normalize,
    lbeta, lgamma, log_sigmoid, logical_xor, multiply_no_nan, ndtri, nextafter, polygamma, polyval,
    reciprocal_no_nan, reduce_euclidean_norm, rint, scalar_mul, segment_max, segment_mean,
    segment_min, segment_prod, segment_sum, selu, sinh, softsign, tan,
    unsorted_segment_max, unsorted_segment_mean, unsorted_segment_min, unsorted_segment_prod,
    unsorted_segment_sqrt_n, unsorted_segment_sum, xdivy, xlog1py, xlogy, zero_fraction, zeta)
from mixprec._array_extra import top_k  # noqa: F401,E402 - tf.math.top_k

is_finite = _core.is_finite
is_nan = _core.is_nan
is_inf = _core.is_inf
log1p = _core.log1p
expm1 = _core.expm1
rsqrt = _core.rsqrt
reciprocal = _core.reciprocal
floor = _core.floor
ceil = _core.ceil
softplus = _core.softplus
mod = floormod
log_softmax = _core.log_softmax
softmax = _core.softmax


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    x = _core.convert_to_tensor(input_tensor)
    mean = reduce_mean(x, axis, True)
    return reduce_mean(square(x - mean), axis, keepdims)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    return sqrt(reduce_variance(input_tensor, axis, keepdims))


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    x = _core.convert_to_tensor(input_tensor)
    m = _core.stop_gradient(reduce_max(x, axis, True))
    m = _core.where(_core.is_finite(m), m, _core.fill(m.shape, 0, m.dtype))
    out = log(reduce_sum(exp(x - m), axis, True)) + m
    return out if keepdims else _core.reshape(out, reduce_sum(x, axis, False).shape)

from mixprec._nn_more import l2_normalize  # noqa: E402,F401

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
