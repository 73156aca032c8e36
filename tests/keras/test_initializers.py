"""Random initializers are stateless, as tf-keras 2.21: every instance with the same seed
gives the same values, on every call, whatever the global seed; an unseeded instance picks
its seed at its first call, returns the same values on every later call and warns."""

import random
import warnings

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


def test_unseeded_instances_differ_and_follow_the_global_seed():
    # mixprec keeps tf.random.set_seed programs reproducible (tf-keras would draw the seed
    # from Python's random module there); distinct instances draw distinct seeds
    tf.random.set_seed(7)
    a = initializers.GlorotUniform()((3, 3)).numpy()
    b = initializers.GlorotUniform()((3, 3)).numpy()
    tf.random.set_seed(7)
    np.testing.assert_array_equal(initializers.GlorotUniform()((3, 3)).numpy(), a)
    assert not np.array_equal(a, b)
    tf.random.set_seed(None)
    random.seed(11)  # no global seed: Python's random module, as tf-keras
    c = initializers.GlorotUniform()((3, 3)).numpy()
    random.seed(11)
    np.testing.assert_array_equal(initializers.GlorotUniform()((3, 3)).numpy(), c)


WARNING = ("The initializer {} is unseeded and being called multiple times, which will "
           "return identical values each time (even if the initializer is unseeded). Please "
           "update your code to provide a seed to the initializer, or avoid using the same "
           "initializer instance more than once.")


@pytest.mark.parametrize("make", SEEDED)
def test_unseeded_instance_repeats_its_values_and_warns(make):
    init = make()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a = init((4, 5)).numpy()
        assert not caught  # the first call is silent
        b = init((4, 5)).numpy()
        c = init((5, 4)).numpy()  # same fans, same seed: the same values in another layout
    np.testing.assert_array_equal(a, b)
    if type(init).__name__ in ("RandomUniform", "RandomNormal", "TruncatedNormal",
                               "GlorotUniform", "GlorotNormal"):
        np.testing.assert_array_equal(a.ravel(), c.ravel())
    assert [w.category for w in caught] == [UserWarning, UserWarning]
    assert str(caught[0].message) == WARNING.format(type(init).__name__)
    seeded = make(seed=3)
    seeded((2, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        seeded((2, 2))  # a seeded instance is reused silently
        initializers.Zeros()((2, 2))


def test_two_layers_sharing_an_unseeded_initializer_get_identical_kernels():
    init = initializers.GlorotUniform()
    a = keras.layers.Dense(3, kernel_initializer=init)
    b = keras.layers.Dense(3, kernel_initializer=init)
    a.build((None, 4))
    with pytest.warns(UserWarning, match="GlorotUniform is unseeded"):
        b.build((None, 4))
    np.testing.assert_array_equal(a.kernel.numpy(), b.kernel.numpy())
    assert init.get_config() == {"seed": None}
    c = keras.layers.Dense(3)  # the string makes a new instance per layer
    d = keras.layers.Dense(3)
    c.build((None, 4))
    d.build((None, 4))
    assert not np.array_equal(c.kernel.numpy(), d.kernel.numpy())


def test_set_random_seed_reproduces_initialization():
    keras.utils.set_random_seed(5)
    a = keras.layers.Dense(3)
    a.build((None, 4))
    keras.utils.set_random_seed(5)
    b = keras.layers.Dense(3)
    b.build((None, 4))
    np.testing.assert_array_equal(a.kernel.numpy(), b.kernel.numpy())
    with pytest.raises(ValueError, match="Expected `seed` argument to be an integer"):
        keras.utils.set_random_seed(1.5)


def test_two_dense_layers_with_the_same_seeded_initializer_match():
    make = lambda: keras.layers.Dense(  # noqa: E731
        3, kernel_initializer=initializers.GlorotUniform(seed=3))
    a, b = make(), make()
    a.build((None, 4))
    b.build((None, 4))
    np.testing.assert_array_equal(a.kernel.numpy(), b.kernel.numpy())


def test_argument_checks_as_tf_keras():
    with pytest.raises(ValueError, match=r"Expected floating point type, got <dtype: 'int32'>\."):
        initializers.GlorotUniform(seed=1)((2, 2), dtype="int32")
    with pytest.raises(ValueError, match="Expected floating point type"):
        initializers.RandomNormal(seed=1)((2, 2), dtype="int32")
    ints = initializers.RandomUniform(0, 10, seed=1)((50,), dtype="int32").numpy()
    assert ints.dtype == np.int32 and ints.min() >= 0 and ints.max() < 10
    with pytest.raises(TypeError, match=r"Unknown keyword arguments: \['partition_info'\]"):
        initializers.GlorotUniform()((3,), partition_info=1)
    assert initializers.Zeros()((9,), partition_shape=(2, 2)).shape == (2, 2)
    with pytest.raises(ValueError, match=r"scale=-1\.$"):
        initializers.VarianceScaling(scale=-1)
    with pytest.raises(ValueError, match="Invalid `mode` argument: x. Please use one of the"):
        initializers.VarianceScaling(mode="x")
    with pytest.raises(ValueError, match="Unknown initializer: 'nope'. Please ensure"):
        initializers.get("nope")
    keras.backend.set_floatx("float64")
    try:
        assert initializers.GlorotUniform(seed=1)((2, 2)).dtype == tf.float64  # floatx
    finally:
        keras.backend.set_floatx("float32")
