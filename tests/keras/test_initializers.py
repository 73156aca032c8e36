"""Seeded initializers are stateless, as tf-keras 2.21: every instance with the same seed
gives the same values, on every call, whatever the global seed."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.keras import initializers

SEEDED = [initializers.GlorotUniform, initializers.GlorotNormal, initializers.HeNormal,
          initializers.HeUniform, initializers.LecunNormal, initializers.LecunUniform,
          initializers.RandomUniform, initializers.RandomNormal, initializers.TruncatedNormal,
          lambda seed=None: initializers.VarianceScaling(2.0, "fan_out", "uniform", seed=seed)]


@pytest.mark.parametrize("make", SEEDED)
def test_same_seed_same_values(make):
    a = make(seed=3)((4, 5)).numpy()
    b = make(seed=3)((4, 5)).numpy()
    np.testing.assert_array_equal(a, b)
    init = make(seed=3)
    np.testing.assert_array_equal(init((4, 5)).numpy(), init((4, 5)).numpy())  # every call
    tf.random.set_seed(123)
    np.testing.assert_array_equal(make(seed=3)((4, 5)).numpy(), a)  # global seed: no effect
    tf.random.set_seed(None)
    assert not np.array_equal(make(seed=4)((4, 5)).numpy(), a)
    assert not np.array_equal(make()((4, 5)).numpy(), a)
    assert a.std() > 0


def test_unseeded_initializers_still_follow_the_global_seed():
    tf.random.set_seed(7)
    a = initializers.GlorotUniform()((3, 3)).numpy()
    b = initializers.GlorotUniform()((3, 3)).numpy()
    tf.random.set_seed(7)
    np.testing.assert_array_equal(initializers.GlorotUniform()((3, 3)).numpy(), a)
    assert not np.array_equal(a, b)
    tf.random.set_seed(None)


def test_two_dense_layers_with_the_same_seeded_initializer_match():
    make = lambda: keras.layers.Dense(  # noqa: E731
        3, kernel_initializer=initializers.GlorotUniform(seed=3))
    a, b = make(), make()
    a.build((None, 4))
    b.build((None, 4))
    np.testing.assert_array_equal(a.kernel.numpy(), b.kernel.numpy())
