"""BatchNormalization as tf-keras 2.21 (semantics.md, last section).

What is checked: training normalises with the batch's biased variance and moves the
moving statistics by ``moving = m * moving + (1 - m) * batch`` with the unbiased variance
for 4-D input (tf-keras' fused path) and the biased one for 2-D; inference (and a frozen
layer, even with training=True) uses the moving statistics; fit updates them, evaluate and
predict do not; under mixed_float16 the output is float16 and every statistic float32.
"""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.keras import layers, mixed_precision
from mixprec.testing.tolerances import TOLERANCE

HAS_NN = all(hasattr(tf.nn, f) for f in ("moments", "batch_normalization"))
pytestmark = pytest.mark.skipif(not HAS_NN, reason="mixprec.nn.moments not built")
RTOL, ATOL = TOLERANCE[("float32", "reduction")]


def _ref(x, mean, var, gamma, beta, eps):
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


@pytest.mark.parametrize("shape,axis,unbiased", [((8, 3, 3, 4), -1, True),
                                                 ((8, 4, 3, 3), 1, True),
                                                 ((16, 5), -1, False),
                                                 ((6, 5, 4), -1, False),
                                                 ((8, 3, 3, 4), 2, False)])
def test_training_step_and_moving_update(shape, axis, unbiased):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3 + 2).astype("float32")
    bn = layers.BatchNormalization(axis=axis, momentum=0.9, gamma_initializer="random_normal",
                                   beta_initializer="random_normal")
    y = bn(x, training=True).numpy()
    ax = axis % len(shape)
    red = tuple(i for i in range(len(shape)) if i != ax)
    xd = x.astype(np.float64)
    mean, var = xd.mean(axis=red), xd.var(axis=red)
    bshape = [1] * len(shape)
    bshape[ax] = shape[ax]
    g, b = bn.gamma.numpy().reshape(bshape), bn.beta.numpy().reshape(bshape)
    ref = _ref(xd, mean.reshape(bshape), var.reshape(bshape), g, b, 1e-3)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    n = xd.size // shape[ax]
    batch_var = var * n / (n - 1) if unbiased else var
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.1 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn.moving_variance.numpy(), 0.9 + 0.1 * batch_var, rtol=1e-5)


def test_inference_uses_moving_statistics():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3)).astype("float32")
    bn = layers.BatchNormalization(moving_mean_initializer="ones",
                                   moving_variance_initializer=keras.initializers.Constant(4.0))
    for y in (bn(x), bn(x, training=False)):
        np.testing.assert_allclose(y.numpy(), (x - 1) / np.sqrt(4 + 1e-3), rtol=1e-5)
    assert float(bn.moving_mean.numpy()[0]) == 1.0  # untouched


def test_frozen_layer_runs_in_inference_mode():
    x = np.random.default_rng(2).standard_normal((4, 2, 2, 3)).astype("float32")
    bn = layers.BatchNormalization()
    bn.trainable = False
    y = bn(x, training=True)
    np.testing.assert_allclose(y.numpy(), x / np.sqrt(1 + 1e-3), rtol=1e-5)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), 0)
    assert bn.trainable_weights == [] and len(bn.non_trainable_weights) == 4


def test_mixed_float16_dtypes():
    mixed_precision.set_global_policy("mixed_float16")
    x = np.random.default_rng(3).standard_normal((8, 4, 4, 3)).astype("float32")
    bn = layers.BatchNormalization()
    y = bn(x, training=True)
    assert y.dtype == tf.float16
    assert all(w.dtype == tf.float32 for w in bn.weights)
    xd = x.astype(np.float16).astype(np.float64)
    mean = xd.mean(axis=(0, 1, 2))
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.01 * mean, rtol=1e-3, atol=1e-6)
    ref = (xd - mean) / np.sqrt(xd.var(axis=(0, 1, 2)) + 1e-3)
    rtol, atol = TOLERANCE[("float16", "reduction")]
    np.testing.assert_allclose(y.numpy().astype(np.float64), ref, rtol=rtol * 4, atol=atol * 4)


def test_fit_updates_moving_stats_evaluate_and_predict_do_not():
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((32, 4, 4, 2)) + 5).astype("float32")
    y = rng.integers(0, 3, 32)
    inp = keras.Input((4, 4, 2))
    h = layers.BatchNormalization()(inp)
    out = layers.Dense(3)(layers.Flatten()(h))
    m = keras.Model(inp, out)
    bn = m.layers[1]
    np.testing.assert_array_equal(bn.moving_mean.numpy(), 0)  # building did not update
    m.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    m.evaluate(x, y, verbose=0)
    m.predict(x, verbose=0)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), 0)
    m.fit(x, y, batch_size=8, epochs=1, verbose=0)
    mm = bn.moving_mean.numpy()
    assert (mm > 0.1).all() and (mm < 0.3).all()  # 4 steps towards ~5 at momentum 0.99


def test_symbolic_training_call_does_not_update():
    inp = keras.Input((3, 3, 2))
    bn = layers.BatchNormalization()
    bn(inp, training=True)
    np.testing.assert_array_equal(bn.moving_variance.numpy(), 1)
