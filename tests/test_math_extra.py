"""tf.math's and tf.nn's compositions (src/mixprec/_math_extra.py) against TensorFlow 2.21's
outputs, recorded as literals: counting, bincount / confusion_matrix, in_top_k, the small
losses and statistics, the top-level aliases, and TensorFlow's errors. The C ops under them
(special functions, scans, segments) are checked in tests/test_ops.py and tests/test_tape.py."""

import math

import numpy as np
import pytest

import mixprec as tf
from tolerances import assert_close


def eq(t, want, dtype=None):
    if dtype is not None:
        assert t.dtype.name == dtype
    got = np.asarray(t.numpy())
    want = np.asarray(want)
    if got.dtype.kind == "f" or got.dtype.name == "bfloat16":
        want = want.astype(got.dtype)  # TensorFlow's literal, in the result's dtype
    np.testing.assert_array_equal(got, want)


def close(t, want, dtype):
    assert t.dtype.name == dtype
    assert_close(t, np.asarray(want, np.float64).astype(t.numpy().dtype), dtype, "transcendental")


def test_top_level_aliases_exist():
    for name in ("floor", "reduce_logsumexp", "tan", "acos", "acosh", "asin", "asinh", "atan",
                 "atan2", "atanh", "cosh", "sinh", "truncatediv", "truncatemod", "scalar_mul"):
        assert callable(getattr(tf, name)), name
    for name in ("erf", "erfc", "erfinv", "ndtri", "lgamma", "digamma", "log_sigmoid", "softsign",
                 "rint", "xlogy", "xdivy", "xlog1py", "divide_no_nan", "multiply_no_nan",
                 "reciprocal_no_nan", "nextafter", "logical_xor", "polyval", "count_nonzero",
                 "reduce_euclidean_norm", "cumprod", "cumulative_logsumexp", "zero_fraction",
                 "is_non_decreasing", "is_strictly_increasing", "invert_permutation",
                 "accumulate_n", "bincount", "confusion_matrix", "segment_sum", "segment_mean",
                 "segment_max", "segment_min", "segment_prod", "unsorted_segment_sum",
                 "unsorted_segment_mean", "unsorted_segment_max", "unsorted_segment_min",
                 "unsorted_segment_prod", "unsorted_segment_sqrt_n", "in_top_k", "l2_normalize",
                 "lbeta", "igamma", "igammac", "zeta", "polygamma", "bessel_i0", "bessel_i0e",
                 "bessel_i1", "bessel_i1e"):
        assert callable(getattr(tf.math, name)), name
    for name in ("selu", "softsign", "l2_normalize", "l2_loss", "log_poisson_loss",
                 "weighted_cross_entropy_with_logits", "normalize_moments", "sufficient_statistics",
                 "weighted_moments", "crelu", "zero_fraction", "in_top_k"):
        assert callable(getattr(tf.nn, name)), name
    eq(tf.floor(tf.constant([1.5, -1.5])), [1.0, -2.0])
    close(tf.reduce_logsumexp(tf.constant([1.0, 2.0])), math.log(math.e + math.e**2), "float32")


def test_elementwise_edges_match_tensorflow():
    eq(tf.math.divide_no_nan(tf.constant([np.nan, np.inf, 1.0, 0.0]), tf.constant([0.0, 0.0, np.nan, 0.0])),
       [0.0, 0.0, np.nan, 0.0], "float32")
    eq(tf.math.divide_no_nan(tf.constant([7, -7, 0]), tf.constant([2, 2, 0])), [3.5, -3.5, 0.0], "float64")
    eq(tf.math.multiply_no_nan(tf.constant([np.nan, np.inf, 1.0, 0.0]), tf.constant([0.0, 0.0, np.nan, np.inf])),
       [0.0, 0.0, np.nan, np.nan], "float32")
    eq(tf.math.xlogy(tf.constant([0.0, 0.0, 0.0, 1.0, np.nan, 0.0]), tf.constant([0.0, np.nan, np.inf, 0.0, 0.0, -1.0])),
       [0.0, 0.0, 0.0, -np.inf, np.nan, 0.0])
    eq(tf.math.xdivy(tf.constant([0.0, 0.0, 0.0, 1.0, np.nan]), tf.constant([0.0, np.nan, np.inf, 0.0, 0.0])),
       [0.0, 0.0, 0.0, np.inf, np.nan])
    eq(tf.math.xlog1py(tf.constant([0.0, 0.0, 0.0, 1.0, np.nan]), tf.constant([-1.0, np.nan, np.inf, -1.0, 0.0])),
       [0.0, 0.0, 0.0, -np.inf, np.nan])
    eq(tf.math.nextafter(tf.constant([1.0, 0.0, np.nan, 1.0]), tf.constant([2.0, -1.0, 0.0, 1.0])),
       np.array([1.0000001, -1.4e-45, np.nan, 1.0], np.float32))
    eq(tf.math.atan2(tf.constant([0.0, -0.0, 0.0, -0.0]), tf.constant([0.0, 0.0, -0.0, -0.0])),
       np.array([0.0, -0.0, np.pi, -np.pi], np.float32))
    eq(tf.math.rint(tf.constant([0.5, 1.5, 2.5, -0.5, -1.5])), [0.0, 2.0, 2.0, -0.0, -2.0])
    eq(tf.math.acosh(tf.constant([0.5, 1.0, np.inf])), [np.nan, 0.0, np.inf])
    eq(tf.math.atanh(tf.constant([1.0, -1.0, 2.0])), [np.inf, -np.inf, np.nan])
    close(tf.nn.selu(tf.constant([-1.0, 0.0, 1.0])), [-1.1113307, 0.0, 1.050701], "float32")
    close(tf.math.log_sigmoid(tf.constant([-100.0, 0.0, 5.0])), [-100.0, -0.6931472, -0.0067153485], "float32")
    close(tf.math.reciprocal_no_nan(tf.constant([0.5, 0.0], "float16")), [2.0, 0.0], "float16")
    eq(tf.truncatediv(tf.constant([7.5, -7.5]), tf.constant([2.0, 2.0])), [3.0, -3.0])
    eq(tf.truncatemod(tf.constant([7.5, -7.5, 1.0, np.inf]), tf.constant([2.0, 2.0, np.inf, 2.0])),
       [1.5, -1.5, 1.0, np.nan])
    eq(tf.truncatediv(tf.constant([7, -7]), tf.constant([2, 2])), [3, -3], "int32")
    eq(tf.truncatemod(tf.constant([7, -7]), tf.constant([2, 2])), [1, -1], "int32")
    eq(tf.math.logical_xor(tf.constant([True, False, True]), tf.constant([True, True, False])), [False, True, True])
    eq(tf.scalar_mul(2, tf.constant([1.0, 2.0])), [2.0, 4.0], "float32")
    with pytest.raises(ValueError, match="must be a 0-D value"):
        tf.scalar_mul(tf.constant([2.0, 3.0]), tf.constant([1.0, 2.0]))
    for fn in (tf.math.tan, tf.math.erf, tf.nn.selu, tf.nn.softsign, tf.math.log_sigmoid, tf.math.rint,
               tf.math.reciprocal_no_nan):
        with pytest.raises(tf.errors.InvalidArgumentError):
            fn(tf.constant([1, 2]))
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.math.logical_xor(tf.constant([1, 0]), tf.constant([1, 1]))


def test_counting_and_monotonicity():
    eq(tf.math.count_nonzero(tf.constant([[0.0, 1.0], [np.nan, 0.0]]), axis=1), [1, 1], "int64")
    eq(tf.math.count_nonzero(tf.constant([True, False, True]), keepdims=True, dtype=tf.int32), [2], "int32")
    eq(tf.math.reduce_euclidean_norm(tf.constant([[3, 5], [4, 4]]), axis=0), [5, 6], "int32")
    eq(tf.math.reduce_euclidean_norm(tf.constant([[3.0, 4.0], [0.0, 0.0]]), axis=1, keepdims=True), [[5.0], [0.0]])
    assert np.isinf(tf.math.reduce_euclidean_norm(tf.constant([300.0, 400.0], "float16")).numpy())
    eq(tf.math.zero_fraction(tf.constant([[0.0, 1.0], [2.0, 0.0]])), 0.5, "float32")
    close(tf.math.zero_fraction(tf.constant([0, 1, 0])), 2 / 3, "float32")
    assert np.isnan(tf.nn.zero_fraction(tf.zeros([0])).numpy())
    assert bool(tf.math.is_non_decreasing([1, 1, 2]))
    assert not bool(tf.math.is_non_decreasing([[1, 2], [1, 3]]))
    assert not bool(tf.math.is_strictly_increasing([1, 1, 2]))
    assert bool(tf.math.is_strictly_increasing(tf.zeros([0])))
    with pytest.raises(TypeError, match="numeric"):
        tf.math.is_strictly_increasing([True, False])
    eq(tf.math.invert_permutation([3, 4, 0, 2, 1]), [2, 4, 3, 0, 1], "int32")
    with pytest.raises(tf.errors.InvalidArgumentError, match="3 is not between 0 and 3"):
        tf.math.invert_permutation([3, 1, 0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="duplicated"):
        tf.math.invert_permutation([1, 1, 0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="1D"):
        tf.math.invert_permutation([[0]])
    eq(tf.math.accumulate_n([tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])]), [4.0, 6.0])
    eq(tf.math.polyval([1.0, 2.0, 3.0], tf.constant([2.0, 3.0])), [11.0, 18.0])
    eq(tf.math.polyval([], tf.constant([2.0, 3.0])), [0.0, 0.0])
    close(tf.math.lbeta(tf.constant([[1.0, 2.0], [3.0, 4.0]])), [-0.6931472, -4.0943446], "float32")
    eq(tf.math.lbeta(tf.zeros([2, 0])), [-np.inf, -np.inf])


def test_bincount_and_confusion_matrix():
    eq(tf.math.bincount(tf.constant([1, 1, 4])), [0, 2, 0, 0, 1], "int32")
    eq(tf.math.bincount(tf.constant([1, 1, 4]), weights=[0.5, 1.0, 2.0]), [0.0, 1.5, 0.0, 0.0, 2.0], "float32")
    eq(tf.math.bincount(tf.constant([1, 1, 4]), minlength=7, maxlength=3), [0, 2, 0])
    eq(tf.math.bincount(tf.constant([[1, 1], [0, 2]])), [1, 2, 1])
    eq(tf.math.bincount(tf.constant([[1, 1], [0, 2]]), axis=-1), [[0, 2, 0], [1, 0, 1]])
    eq(tf.math.bincount(tf.constant([1, 1, 4]), binary_output=True), [0, 1, 0, 0, 1], "int32")
    eq(tf.math.bincount(tf.constant([1, 1, 4]), dtype=tf.float32), [0.0, 2.0, 0.0, 0.0, 1.0], "float32")
    eq(tf.math.bincount(tf.constant([], "int32")), np.zeros(0, np.int32), "int32")
    eq(tf.math.bincount(tf.constant([1, 2], "int64")), [0, 1, 1], "int32")
    with pytest.raises(tf.errors.InvalidArgumentError, match="non-negative"):
        tf.math.bincount(tf.constant([1, -1, 4]))
    cm = tf.math.confusion_matrix([1, 2, 4], [2, 2, 4])
    want = np.zeros((5, 5), np.int32)
    want[1, 2] = want[2, 2] = want[4, 4] = 1
    eq(cm, want, "int32")
    cm = tf.math.confusion_matrix([1, 2, 4], [2, 2, 4], num_classes=6, weights=[1.0, 2.0, 3.0], dtype=tf.float32)
    want = np.zeros((6, 6), np.float32)
    want[1, 2], want[2, 2], want[4, 4] = 1, 2, 3
    eq(cm, want, "float32")
    with pytest.raises(tf.errors.InvalidArgumentError, match="`labels` out of bound"):
        tf.math.confusion_matrix([1, 2, 4], [2, 2, 4], num_classes=3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="negative"):
        tf.math.confusion_matrix([1, -2, 4], [2, 2, 4])


def test_segments_match_tensorflow():
    d = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    eq(tf.math.unsorted_segment_sum(d, [0, 2, 0], 4), [[6, 8], [0, 0], [3, 4], [0, 0]])
    eq(tf.math.unsorted_segment_sum(d, [0, -1, 0], 2), [[6, 8], [0, 0]])
    eq(tf.math.unsorted_segment_mean(tf.constant([1, 2, 3]), [0, 0, 2], 4), [1.5, 0.0, 3.0, 0.0], "float64")
    eq(tf.math.segment_mean(tf.constant([1, 2, 4]), [0, 0, 0]), [2], "int32")
    eq(tf.math.unsorted_segment_max(tf.constant([1, 2, 3]), [0, 0, 2], 4), [2, -2**31, 3, -2**31], "int32")
    eq(tf.math.unsorted_segment_min(tf.constant([1, 2, 3], "float16"), [0, 0, 2], 4), [1, 65504, 3, 65504], "float16")
    eq(tf.math.segment_max(d, [0, 0, 2]), [[3, 4], [0, 0], [5, 6]])
    eq(tf.math.segment_prod(d, [0, 0, 2]), [[3, 8], [1, 1], [5, 6]])
    close(tf.math.unsorted_segment_sqrt_n(d, [0, 2, 0], 4), [[4.242641, 5.656854], [0, 0], [3, 4], [0, 0]],
          "float32")
    eq(tf.math.unsorted_segment_sum(tf.ones([2, 3, 2]), [[0, 1, 1], [2, 2, 0]], 3), np.full((3, 2), 2.0))
    eq(tf.math.unsorted_segment_sum(d, [0, 1, 0], tf.constant(2, "int64")), [[6, 8], [3, 4]])
    eq(tf.math.segment_sum(tf.zeros([0, 2]), tf.zeros([0], "int32")), np.zeros((0, 2)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="not in the list"):
        tf.math.unsorted_segment_sqrt_n(tf.constant([1, 2]), [0, 0], 1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Tindices"):
        tf.math.unsorted_segment_sum(d, [0.0, 1.0, 0.0], 2)
    # TensorFlow's gradients: ties share, a segment's only zero gets the others' product
    x = tf.constant([[1.0, 2.0, 0.0], [4.0, 0.0, 0.0]])
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y3 = tf.math.unsorted_segment_prod(x, [0, 0], 2)
        y4 = tf.math.unsorted_segment_max(tf.constant([[1.0, 2.0, 2.0], [1.0, 2.0, 2.0]]) * x, [0, 0], 1)
        y1 = tf.math.cumprod(x, axis=1)
        y2 = tf.math.cumulative_logsumexp(x, axis=1)
    eq(t.gradient(y3, x), [[4.0, 0.0, 0.0], [1.0, 2.0, 0.0]])
    eq(t.gradient(y4, x), [[0.0, 2.0, 1.0], [1.0, 0.0, 1.0]])
    eq(t.gradient(y1, x), [[3.0, 1.0, 0.0], [1.0, 0.0, 0.0]])  # div_no_nan at zeros, as TensorFlow
    close(t.gradient(y2, x), [[1.513669729232788, 1.3962992429733276, 0.09003055840730667],
                              [2.9466774463653564, 0.03565463423728943, 0.01766842044889927]], "float32")


def test_in_top_k():
    p = tf.constant([[0.1, 0.9, 0.5], [0.1, 0.9, 0.5], [0.1, 0.9, np.nan], [1.0, 2.0, 3.0]])
    eq(tf.math.in_top_k([0, 1, 2, 5], p, 1), [False, True, False, False], "bool")
    eq(tf.nn.in_top_k([0, 1], tf.constant([[1.0, 1.0, 1.0], [1.0, 2.0, 2.0]]), 1), [True, True])
    eq(tf.math.in_top_k([0], tf.constant([[1.0, 1.0, 1.0]]), 0), [False])
    eq(tf.math.in_top_k(tf.constant([2, 0], "int64"), tf.constant([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]]), 2), [True, True])
    with pytest.raises(ValueError, match="float32"):
        tf.math.in_top_k([0], tf.constant([[1.0, 1.0, 1.0]], "float16"), 1)


def test_nn_losses_and_statistics():
    eq(tf.math.l2_normalize(tf.constant([[3.0, 4.0], [0.0, 0.0]]), axis=1), [[0.6, 0.8], [0.0, 0.0]])
    with pytest.raises(TypeError):
        tf.math.l2_normalize(tf.constant([3, 4]))
    eq(tf.nn.l2_loss(tf.constant([[3.0, 4.0], [1.0, 0.0]])), 13.0, "float32")
    assert np.isinf(tf.nn.l2_loss(tf.constant([300.0, 400.0], "float16")).numpy())
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.nn.l2_loss(tf.constant([3, 4]))
    close(tf.nn.log_poisson_loss(tf.constant([0.0, 1.0, 2.0, 5.0]), tf.constant([0.5, 1.0, -1.0, 2.0]),
                                 compute_full_loss=True), [1.6487212, 1.7182817, 3.0196857, 2.1599035], "float32")
    with pytest.raises(ValueError, match="must have the same shape"):
        tf.nn.log_poisson_loss(tf.constant([0.0, 1.0]), tf.constant([0.5, 1.0, -1.0]))
    close(tf.nn.weighted_cross_entropy_with_logits(tf.constant([0.0, 1.0, 0.5]), tf.constant([-2.0, 1.0, 3.0]), 2.0),
          [0.12692809, 0.6265234, 1.572881], "float32")
    with pytest.raises(ValueError, match="must have the same shape"):
        tf.nn.weighted_cross_entropy_with_logits(tf.constant([0.0, 1.0]), tf.constant([-2.0, 1.0, 3.0]), 2.0)
    m, v = tf.nn.normalize_moments(tf.constant(4.0), tf.constant([8.0]), tf.constant([20.0]), None)
    eq(m, [2.0])
    eq(v, [1.0])
    m, v = tf.nn.normalize_moments(tf.constant(4.0), tf.constant([8.0]), tf.constant([20.0]), tf.constant([1.0]))
    eq(m, [3.0])
    eq(v, [1.0])
    c, ms, vs, s = tf.nn.sufficient_statistics(tf.constant([[1.0, 2.0], [3.0, 5.0]]), [0])
    eq(c, 2.0, "float32")
    eq(ms, [4.0, 7.0])
    eq(vs, [10.0, 29.0])
    assert s is None
    c, ms, vs, s = tf.nn.sufficient_statistics(tf.constant([[1.0, 2.0], [3.0, 5.0]]), [0], shift=1.0, keepdims=True)
    eq(ms, [[2.0, 5.0]])
    eq(vs, [[4.0, 17.0]])
    eq(s, 1.0)
    c, ms, vs, s = tf.nn.sufficient_statistics(tf.constant([[1.0, 2.0], [3.0, 5.0]], "float16"), [0, 1])
    eq(c, 4.0, "float16")
    eq(ms, 11.0, "float16")
    eq(vs, 39.0, "float16")
    m, v = tf.nn.weighted_moments(tf.constant([[1.0, 2.0], [3.0, 5.0]]), [0], tf.constant([[1.0], [3.0]]))
    eq(m, [2.5, 4.25])
    eq(v, [0.75, 1.6875])
    m, v = tf.nn.weighted_moments(tf.constant([[1.0, 2.0], [3.0, 5.0]], "float16"), [0, 1],
                                  tf.constant([[1.0], [3.0]], "float16"), keepdims=True)
    eq(m, [[3.375]], "float16")
    close(v, [[1.984]], "float16")
    eq(tf.nn.crelu(tf.constant([[1.0, -2.0]])), [[1.0, 0.0, 0.0, 2.0]])
    eq(tf.nn.crelu(tf.constant([[1.0, -2.0]]), axis=0), [[1.0, 0.0], [0.0, 2.0]])
