"""The small TensorFlow names composed in _misc_ops.py, against values printed by
TensorFlow 2.21 for the same inputs."""

import numpy as np
import pytest

import mixprec as tf
from mixprec.testing.tolerances import TOLERANCE

RTOL, ATOL = TOLERANCE[("float32", "transcendental")]
# TensorFlow's values below were printed to 5-6 decimals: the matmul row covers that rounding
PR_RTOL, PR_ATOL = TOLERANCE[("float32", "matmul")]


def test_histograms():
    v = tf.constant([-1.0, 0.0, 1.5, 2.0, 5.0, 15.0, 0.99999, 3.3333])
    assert tf.histogram_fixed_width(v, [0.0, 5.0], nbins=5).numpy().tolist() == [3, 1, 1, 1, 2]
    assert tf.histogram_fixed_width_bins(v, [0.0, 5.0], nbins=3).numpy().tolist() == \
        [0, 0, 0, 1, 2, 2, 0, 1]
    h = tf.histogram_fixed_width(tf.constant([1, 2, 3, 9]), [0, 10], nbins=4, dtype=tf.int64)
    assert h.dtype == tf.int64 and h.numpy().tolist() == [2, 1, 0, 1]


def test_lrn_matches_tensorflow():
    x = tf.constant(np.random.default_rng(0).random((1, 2, 2, 7)).astype("float32"))
    np.testing.assert_allclose(
        tf.nn.lrn(x, 2, 1.0, 0.5, 0.75).numpy().ravel()[:6],
        [0.54203, 0.229559, 0.0292, 0.010704, 0.496236, 0.557121], rtol=PR_RTOL, atol=PR_ATOL)
    np.testing.assert_allclose(tf.nn.local_response_normalization(x).numpy().ravel()[:4],
                               [0.369293, 0.147555, 0.02241, 0.009039], rtol=PR_RTOL, atol=PR_ATOL)
    with pytest.raises(ValueError, match="rank 4"):
        tf.nn.lrn(tf.ones([2, 3]))


def test_grad_pass_through_and_small_names():
    w = tf.Variable(2.0)
    with tf.GradientTape() as t:
        y = tf.grad_pass_through(lambda a: a * a * 3)(w)
    assert float(y) == 12.0 and float(t.gradient(y, w)) == 1.0
    assert tf.guarantee_const(tf.constant(3)).numpy() == 3
    with pytest.raises(RuntimeError, match="not compatible with eager execution"):
        tf.parallel_stack([tf.constant(1)])
    stacked = tf.function(lambda: tf.parallel_stack([tf.constant([1, 2]),
                                                     tf.constant([3, 4])]))()
    assert stacked.numpy().tolist() == [[1, 2], [3, 4]]
    assert not tf.is_symbolic_tensor(tf.constant(1))
    seen = []
    tf.function(lambda x: seen.append(tf.is_symbolic_tensor(x * 2)) or x)(tf.constant(1.0))
    assert seen == [True]


def test_atrous_pool_and_transposes():
    img = tf.constant(np.random.default_rng(1).random((1, 6, 6, 2)).astype("float32"))
    k = tf.constant(np.random.default_rng(2).random((3, 3, 2, 3)).astype("float32"))
    np.testing.assert_allclose(tf.nn.atrous_conv2d(img, k, 2, "SAME").numpy().ravel()[:4],
                               [2.74685, 2.85837, 2.46999, 1.86622], rtol=PR_RTOL, atol=PR_ATOL)
    assert tf.nn.pool(img, [2, 2], "MAX", strides=[2, 2]).shape == (1, 3, 3, 2)
    np.testing.assert_allclose(tf.nn.pool(img, [2, 2], "AVG", padding="SAME").numpy().ravel()[:3],
                               [0.32223, 0.78526, 0.22331], rtol=PR_RTOL, atol=PR_ATOL)
    kt = tf.constant(np.random.default_rng(3).random((3, 3, 2, 2)).astype("float32"))
    a = tf.nn.conv_transpose(img, kt, [1, 12, 12, 2], 2)
    b = tf.nn.conv2d_transpose(img, kt, [1, 12, 12, 2], 2)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    c = tf.nn.atrous_conv2d_transpose(img, kt, [1, 6, 6, 2], 2, "SAME")
    assert c.shape == (1, 6, 6, 2)
    bn = tf.nn.batch_norm_with_global_normalization(img, 0.5, 0.25, 0.1, 2.0, 1e-3, True)
    np.testing.assert_allclose(bn.numpy(), ((img.numpy() - 0.5) / np.sqrt(0.251)) * 2 + 0.1,
                               rtol=RTOL, atol=ATOL)
