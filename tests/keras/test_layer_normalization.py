"""LayerNormalization against tf-keras 2.21 (outputs and input gradients rounded, configs
and weights recorded from TensorFlow 2.21 + tf-keras 2.21), under mixed_float16, and its
gradients against float64 finite differences."""

import numpy as np

import mixprec as tf
from mixprec import keras
from mixprec.keras import layers as L
from mixprec.keras import mixed_precision
from mixprec.testing.tolerances import TOLERANCE

X = np.array([[[1.0, -2.0, 3.0, 0.5], [0.5, -1.0, 2.0, 8.0]],
              [[0.0, 0.0, 0.0, 1.0], [3.0, 3.0, 3.0, 3.0]]], "float32")
HALF_UNIT = 5e-6  # the recorded values are rounded to 5 places


def test_outputs_configs_and_weights():
    rtol, atol = TOLERANCE[("float32", "reduction")]
    ln = L.LayerNormalization()
    assert ln.get_config()["axis"] == -1
    np.testing.assert_allclose(ln(X).numpy(), [
        [[0.21053, -1.47368, 1.33333, -0.07018], [-0.5488, -0.98784, -0.10976, 1.64639]],
        [[-0.57582, -0.57582, -0.57582, 1.72745], [0.0, 0.0, 0.0, 0.0]]],
        rtol=rtol, atol=atol + HALF_UNIT)
    config = ln.get_config()
    assert config["axis"] == [2] and config["epsilon"] == 0.001
    assert list(config) == ["name", "trainable", "dtype", "axis", "epsilon", "center", "scale",
                            "beta_initializer", "gamma_initializer", "beta_regularizer",
                            "gamma_regularizer", "beta_constraint", "gamma_constraint"]
    assert config["gamma_initializer"]["class_name"] == "Ones"
    assert [(w.name.split("/")[-1], w.shape.as_list()) for w in ln.weights] == [
        ("gamma:0", [4]), ("beta:0", [4])]
    ln2 = L.LayerNormalization(axis=[1, 2], epsilon=1e-5, center=False)
    np.testing.assert_allclose(ln2(X).numpy(), [
        [[-0.17474, -1.22318, 0.52422, -0.34948], [-0.34948, -0.8737, 0.17474, 2.27163]],
        [[-1.15356, -1.15356, -1.15356, -0.44368], [0.97609, 0.97609, 0.97609, 0.97609]]],
        rtol=rtol, atol=atol + HALF_UNIT)
    assert ln2.get_config()["axis"] == [1, 2]
    assert [w.shape.as_list() for w in ln2.weights] == [[2, 4]]
    assert L.LayerNormalization()(keras.Input((2, 4))).shape.as_list() == [None, 2, 4]
    again = L.LayerNormalization.from_config(config)
    assert again.get_config()["axis"] == [2]


def test_input_gradient():
    xv = tf.constant(X)
    weights = tf.constant(np.arange(8, dtype="float32").reshape(2, 1, 4))
    with tf.GradientTape() as tape:
        tape.watch(xv)
        s = tf.reduce_sum(L.LayerNormalization()(xv) * weights)
    rtol, atol = TOLERANCE[("float32", "reduction")]
    np.testing.assert_allclose(tape.gradient(s, xv).numpy(), [
        [[-0.8711, -0.0775, 0.0969, 0.8518], [-0.2892, 0.1234, 0.1763, -0.0105]],
        [[-2.3094, -0.0061, 2.2972, 0.0183], [-47.4342, -15.8114, 15.8114, 47.4342]]],
        rtol=rtol, atol=atol + 5e-5)  # recorded to 4 places: half a unit there


def test_mixed_float16_normalizes_in_float32_then_scales_in_float16():
    mixed_precision.set_global_policy("mixed_float16")
    try:
        ln = L.LayerNormalization(gamma_initializer="random_normal", beta_initializer="ones")
        y = ln(X)
        assert y.dtype == tf.float16 and [w.dtype for w in ln.weights] == [tf.float32] * 2
        g = ln.gamma.numpy()
        normalized = (X - X.mean(-1, keepdims=True)) / np.sqrt(X.var(-1, keepdims=True) + 1e-3)
        ref = normalized.astype(np.float16) * g.astype(np.float16) + np.float16(1)
        np.testing.assert_array_equal(y.numpy(), ref)  # tf-keras 2.21 gives exactly this
    finally:
        mixed_precision.set_global_policy("float32")


def test_gradients_match_finite_differences():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 5))
    w = rng.standard_normal((3, 5))
    ln = L.LayerNormalization(dtype="float64", gamma_initializer="random_normal",
                              beta_initializer="random_normal")
    ln.build((3, 5))
    xv = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xv)
        total = tf.reduce_sum(ln(xv) * tf.constant(w))
    gx, gg, gb = tape.gradient(total, [xv, ln.gamma, ln.beta])

    def f(a):
        return float(np.sum(ln(tf.constant(a)).numpy() * w))

    num = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += 1e-6
        xm[i] -= 1e-6
        num[i] = (f(xp) - f(xm)) / 2e-6
    rtol, atol = TOLERANCE[("float64", "finite_difference")]
    np.testing.assert_allclose(gx.numpy(), num, rtol=rtol, atol=atol)
    normalized = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-3)
    np.testing.assert_allclose(gg.numpy(), (normalized * w).sum(0), rtol=rtol, atol=atol)
    np.testing.assert_allclose(gb.numpy(), w.sum(0), rtol=rtol, atol=atol)
