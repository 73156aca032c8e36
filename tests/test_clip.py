"""tf.clip_by_norm, tf.clip_by_global_norm, tf.linalg.global_norm (src/mixprec/_clip.py):
expected values are TensorFlow 2.21's for the same calls."""

import numpy as np
import pytest

import mixprec as tf
from test_tape import check_grad
from tolerances import assert_close

A = [3., 4.]
B = [[1., 2.], [2., 4.]]


def test_clip_by_global_norm_clips_and_keeps_none():
    cl, n = tf.clip_by_global_norm([tf.constant(A), None, tf.constant(B)], 5.0)
    assert_close(n.numpy(), 7.071067810058594, "float32", "reduction")
    assert cl[1] is None
    assert_close(cl[0].numpy(), [2.1213204860687256, 2.828427314758301], "float32", "reduction")
    assert_close(cl[2].numpy(), [[0.7071068286895752, 1.4142136573791504],
                                 [1.4142136573791504, 2.828427314758301]], "float32", "reduction")


def test_clip_by_global_norm_below_the_clip_is_unchanged():
    cl, n = tf.clip_by_global_norm([tf.constant(A), tf.constant(B)], 50.0)
    assert_close(n.numpy(), 7.071067810058594, "float32", "reduction")
    np.testing.assert_array_equal(cl[0].numpy(), A)
    np.testing.assert_array_equal(cl[1].numpy(), B)


def test_clip_by_global_norm_infinite_norm_gives_nan():
    cl, n = tf.clip_by_global_norm([tf.constant(A), tf.constant([np.inf, 1.])], 5.0)
    assert np.isinf(n.numpy())
    assert all(np.isnan(c.numpy()).all() for c in cl)


def test_clip_by_global_norm_use_norm_and_float16():
    cl, n = tf.clip_by_global_norm([tf.constant(A), tf.constant(B)], 1.0,
                                   use_norm=tf.constant(2.0))
    assert n.numpy() == 2.0
    np.testing.assert_array_equal(cl[0].numpy(), [1.5, 2.0])
    np.testing.assert_array_equal(cl[1].numpy(), [[0.5, 1.0], [1.0, 2.0]])
    cl, n = tf.clip_by_global_norm([tf.constant(A, tf.float16)], 1.0)
    assert n.dtype == tf.float16 and cl[0].dtype == tf.float16
    # TensorFlow 2.21: norm 5.0, clipped [0.5996, 0.7998] (the scale rounds to float16)
    np.testing.assert_array_equal(n.numpy(), 5.0)
    np.testing.assert_array_equal(cl[0].numpy(), np.array([0.599609375, 0.7998046875],
                                                          np.float16))


def test_global_norm_errors_and_edges_as_tensorflow():
    with pytest.raises(TypeError, match="`t_list` should be a sequence of tensors"):
        tf.clip_by_global_norm(tf.constant(A), 1.0)
    with pytest.raises(TypeError, match="`t_list` should be a sequence of tensors"):
        tf.linalg.global_norm(tf.constant(A))
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.linalg.global_norm([tf.constant(A), tf.constant([1.], tf.float16)])
    for empty in ([], [None]):
        n = tf.linalg.global_norm(empty)
        assert n.dtype == tf.float32 and n.numpy() == 0.0
    assert tf.linalg.global_norm([None, tf.constant(A)]).numpy() == 5.0


def test_clip_by_norm_as_tensorflow():
    b = tf.constant(B)
    assert_close(tf.clip_by_norm(b, 2.0).numpy(), [[0.4, 0.8], [0.8, 1.6]], "float32",
                 "reduction")
    assert_close(tf.clip_by_norm(b, 2.0, axes=[1]).numpy(),
                 [[0.8944271802902222, 1.7888543605804443]] * 2, "float32", "reduction")
    np.testing.assert_array_equal(tf.clip_by_norm(tf.zeros([2]), 1.0).numpy(), [0., 0.])
    h = tf.clip_by_norm(tf.constant(A, tf.float16), 1.0)
    assert h.dtype == tf.float16
    np.testing.assert_array_equal(h.numpy(), np.array([0.60009765625, 0.7998046875],
                                                      np.float16))


def test_clip_gradients_match_tensorflow_and_finite_differences():
    x = tf.constant(A)
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.clip_by_norm(x, 1.0)
    assert_close(t.gradient(y, x).numpy(), [0.031999990344047546, -0.024000003933906555],
                 "float32", "reduction")
    z = tf.zeros([2])
    with tf.GradientTape() as t:
        t.watch(z)
        y = tf.clip_by_norm(z, 1.0)
    assert np.isfinite(t.gradient(y, z).numpy()).all()
    rng = np.random.default_rng(3)
    check_grad(lambda a: tf.clip_by_norm(a, 0.5, axes=[1]), rng.standard_normal((2, 3)))
    check_grad(lambda a, b: tf.clip_by_global_norm([a, b], 0.7)[0][1],
               rng.standard_normal((3,)), rng.standard_normal((2, 2)))


def test_clip_by_global_norm_in_a_traced_function():
    @tf.function
    def f(a, b):
        cl, n = tf.clip_by_global_norm([a, None, b], 1.0)
        return cl[0], cl[2], n
    a, b, n = f(tf.constant(A), tf.constant([[1.]]))
    assert_close(n.numpy(), np.sqrt(26.), "float32", "reduction")
    assert_close(a.numpy(), np.array(A) / np.sqrt(26.), "float32", "reduction")
    assert_close(b.numpy(), [[1 / np.sqrt(26.)]], "float32", "reduction")
