"""TensorFlow's own initializers (tf.*_initializer): TensorFlow 2.21's values for seeded
ones (stateless draws with seed [seed, 0]) and its argument checks."""

import numpy as np
import pytest

import mixprec as tf


def test_seeded_initializers_give_tensorflows_values():
    r = tf.random_normal_initializer(0.0, 1.0, seed=1)([4])
    np.testing.assert_array_equal(r.numpy(), np.array(
        [0.12665030360221863, -0.4930165708065033, 0.6311907172203064, -0.7888465523719788],
        np.float32))
    u = tf.random_uniform_initializer(-1.0, 1.0, seed=3)([4])
    np.testing.assert_array_equal(u.numpy(), np.array(
        [-0.6081743240356445, 0.8786904811859131, 0.06455039978027344, 0.6820826530456543],
        np.float32))
    assert tf.random_uniform_initializer(0, 10, seed=3)([4], tf.int32).numpy().tolist() == \
        [8, 7, 2, 2]


def test_constant_zeros_ones():
    i = tf.constant_initializer([1, 2, 3])
    assert i(shape=[3], dtype=tf.float32).numpy().tolist() == [1.0, 2.0, 3.0]
    assert i.get_config() == {"value": [1, 2, 3]}
    assert tf.constant_initializer([1, 2])([2]).dtype == tf.int32
    assert tf.constant_initializer(2.0)([2, 2]).numpy().tolist() == [[2.0, 2.0], [2.0, 2.0]]
    assert tf.zeros_initializer()([2], tf.int32).numpy().tolist() == [0, 0]
    assert tf.ones_initializer()([2]).numpy().tolist() == [1.0, 1.0]
    assert tf.zeros_initializer()([2, 2], partition_shape=[1, 2]).shape == (1, 2)
    v = tf.Variable(tf.ones_initializer()(shape=[2], dtype=tf.float32))
    assert v.numpy().tolist() == [1.0, 1.0]


def test_errors_and_configs():
    with pytest.raises(ValueError, match="Argument `dtype` is expected to be floating point. "
                                         "Received: <dtype: 'int32'>."):
        tf.random_normal_initializer()([2], tf.int32)
    with pytest.raises(ValueError, match="expected to be numeric or boolean"):
        tf.random_uniform_initializer()([2], tf.bool)
    with pytest.raises(TypeError, match="Keyword argument should be one of"):
        tf.zeros_initializer()([2], foo=1)
    with pytest.raises(TypeError, match="Invalid type for initial value: object"):
        tf.constant_initializer(object())
    assert tf.random_uniform_initializer().get_config() == \
        {"minval": -0.05, "maxval": 0.05, "seed": None}
    assert tf.ones_initializer().get_config() == {}
    a, b = tf.random_normal_initializer()([50]), tf.random_normal_initializer()([50])
    assert not np.array_equal(a.numpy(), b.numpy())  # unseeded: new values each call
    assert tf.initializers.GlorotUniform is tf.keras.initializers.GlorotUniform
