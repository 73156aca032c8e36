"""tf.nn.dropout and tf.ensure_shape: TensorFlow 2.21's errors and semantics (the mask's
statistics, noise_shape broadcasting, the scaling, rate=0 returning x)."""

import numpy as np
import pytest

import mixprec as tf
from tolerances import tolerance


def test_dropout_errors_as_tensorflow():
    x = tf.ones([2, 3])
    for rate in (1.0, -0.1):
        with pytest.raises(ValueError, match=r"`rate` must be a scalar tensor or a float in "
                                             r"the range \[0, 1\). Received: rate=%s" % rate):
            tf.nn.dropout(x, rate)
    with pytest.raises(ValueError, match="`x.dtype` must be a floating point tensor as `x` "
                                         "will be scaled. Received: x_dtype=<dtype: 'int32'>"):
        tf.nn.dropout(tf.ones([2], tf.int32), 0.5)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.nn.dropout(x, 0.5, noise_shape=[2, 2])
    assert tf.nn.dropout(x, 0.0) is x


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_dropout_keeps_one_minus_rate_and_scales(dtype):
    y = tf.nn.dropout(tf.ones([256, 256], dtype), 0.3, seed=1)
    assert y.dtype == tf.as_dtype(dtype)
    v = y.numpy().astype(np.float64)
    kept = v != 0
    _, atol = tolerance("float32", "random_moment")
    assert abs(kept.mean() - 0.7) < atol
    np.testing.assert_allclose(v[kept], np.float32(1 / 0.7).astype(dtype), rtol=0)


def test_dropout_noise_shape_and_tensor_rate():
    y = tf.nn.dropout(tf.ones([64, 5]), 0.5, noise_shape=[64, 1]).numpy()
    assert all(len(set(row)) == 1 for row in y)   # one draw per row
    assert set(np.unique(y)) <= {0.0, 2.0}
    y = tf.nn.dropout(tf.ones([64, 5]), tf.constant(0.75), noise_shape=[None, 1]).numpy()
    assert set(np.unique(y)) <= {0.0, 4.0}


def test_dropout_gradient_is_the_mask_times_the_scale():
    x = tf.constant(np.ones((8, 8), np.float32))
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.nn.dropout(x, 0.5)
    np.testing.assert_array_equal(t.gradient(y, x).numpy(), y.numpy())


def test_ensure_shape_as_tensorflow():
    x = tf.ones([2, 3])
    assert tuple(tf.ensure_shape(x, [None, 3]).shape) == (2, 3)
    assert tuple(tf.ensure_shape(x, None).shape) == (2, 3)
    assert tuple(tf.ensure_shape(x, tf.TensorShape([2, 3])).shape) == (2, 3)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Shape of tensor input \[2,3\] is not compatible with expected "
                             r"shape \[2,2\]"):
        tf.ensure_shape(x, [2, 2])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Shape of tensor input \[2,3\] is not compatible with expected "
                             r"shape \[2\]"):
        tf.ensure_shape(x, [2])

    @tf.function
    def f(x):
        return tf.ensure_shape(x, [None, 3]) * 2.
    np.testing.assert_array_equal(f(x).numpy(), np.full((2, 3), 2.))
