"""Huber, LogCosh, KLDivergence, Poisson, MeanSquaredLogarithmicError,
MeanAbsolutePercentageError, Hinge and CosineSimilarity against tf-keras 2.21 (values,
names and configs recorded from TensorFlow 2.21 + tf-keras 2.21), and their gradients
against float64 finite differences."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.testing.tolerances import TOLERANCE

YT = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 0.5]], "float32")
YP = np.array([[0.5, 0.8, 4.0], [-0.3, 0.2, 0.4]], "float32")
PT = np.array([[0.2, 0.3, 0.5], [0.7, 0.1, 0.2]], "float32")
PP = np.array([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25]], "float32")
HB = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]], "float32")

CASES = {  # class: (inputs, name, fn, reduced, per example) from tf-keras 2.21
    "Huber": ((YT, YP), "huber_loss", "huber", 0.4116666615009308,
              [0.5483333468437195, 0.2749999761581421]),
    "LogCosh": ((YT, YP), "log_cosh", "log_cosh", 0.3613904118537903,
                [0.4883284270763397, 0.23445242643356323]),
    "KLDivergence": ((PT, PP), "kl_divergence", "kl_divergence", 0.1426854133605957,
                     [0.18609805405139923, 0.09927275776863098]),
    "Poisson": ((PT, PP), "poisson", "poisson", 0.6861402988433838,
                [0.7385835647583008, 0.6336970329284668]),
    "MeanSquaredLogarithmicError": ((YT, np.abs(YP)), "mean_squared_logarithmic_error",
                                    "mean_squared_logarithmic_error", 0.11000343412160873,
                                    [0.14548183977603912, 0.07452502846717834]),
    "MeanAbsolutePercentageError": ((YT, YP), "mean_absolute_percentage_error",
                                    "mean_absolute_percentage_error", 116666712.0,
                                    [166666704.0, 66666720.0]),
    "Hinge": ((HB, YP), "hinge", "hinge", 0.9333333969116211,
              [0.5666666626930237, 1.3000000715255737]),
    "CosineSimilarity": ((YT, YP), "cosine_similarity", "cosine_similarity",
                         -0.3957531154155731, [-0.9575971961021423, 0.1660909652709961]),
}


@pytest.mark.parametrize("cls_name", sorted(CASES))
def test_values_names_and_configs(cls_name):
    (a, b), name, fn, reduced, per_example = CASES[cls_name]
    cls = getattr(keras.losses, cls_name)
    loss = cls()
    rtol, atol = TOLERANCE[("float32", "transcendental")]
    np.testing.assert_allclose(float(loss(a, b)), reduced, rtol=rtol, atol=atol)
    np.testing.assert_allclose(cls(reduction="none")(a, b).numpy(), per_example, rtol=rtol,
                               atol=atol)
    config = loss.get_config()
    assert loss.name == name and config["name"] == name and config["fn"] == fn
    assert config["reduction"] == "auto"
    assert keras.losses.get(fn).__name__ == fn
    again = keras.losses.deserialize(keras.losses.serialize(loss))
    assert type(again) is cls and again.get_config() == config


def test_arguments_aliases_and_dtypes():
    rtol, atol = TOLERANCE[("float32", "transcendental")]
    np.testing.assert_allclose(float(keras.losses.Huber(delta=0.5)(YT, YP)), 0.2616666555404663,
                               rtol=rtol, atol=atol)
    np.testing.assert_allclose(float(keras.losses.Hinge()(HB * 2 - 1, YP)), 0.9333333969116211,
                               rtol=rtol, atol=atol)  # -1/1 labels are taken as they are
    np.testing.assert_allclose(
        keras.losses.CosineSimilarity(axis=0, reduction="none")(YT, YP).numpy(),
        [0.5144957900047302, -0.9701424837112427, -0.9894610643386841], rtol=rtol, atol=atol)
    for alias, fn in [("logcosh", "log_cosh"), ("kld", "kl_divergence"),
                      ("KLD", "kl_divergence"), ("kullback_leibler_divergence", "kl_divergence"),
                      ("msle", "mean_squared_logarithmic_error"),
                      ("MSLE", "mean_squared_logarithmic_error"),
                      ("mape", "mean_absolute_percentage_error"),
                      ("MAPE", "mean_absolute_percentage_error")]:
        assert keras.losses.get(alias).__name__ == fn
    # tf-keras computes the Huber loss in floatx; the others in the prediction's dtype
    assert keras.losses.Huber()(YT, tf.constant(YP, dtype="float16")).dtype == tf.float32
    assert keras.losses.LogCosh()(YT, tf.constant(YP, dtype="float16")).dtype == tf.float16


def test_huber_in_fit():
    m = keras.Sequential([keras.layers.Dense(3, input_shape=(3,), kernel_initializer="ones")])
    m.compile(keras.optimizers.SGD(0.01), "huber")
    losses = m.fit(YT, YP, epochs=2, verbose=0).history["loss"]
    assert len(losses) == 2 and losses[1] < losses[0]


@pytest.mark.parametrize("fn_name", ["huber", "log_cosh", "kl_divergence", "poisson",
                                     "mean_squared_logarithmic_error",
                                     "mean_absolute_percentage_error", "hinge",
                                     "cosine_similarity"])
def test_gradients_match_finite_differences(fn_name, monkeypatch):
    monkeypatch.setattr(keras.backend, "floatx", lambda: "float64")
    fn = getattr(keras.losses, fn_name)
    rng = np.random.default_rng(3)
    if fn_name in ("kl_divergence", "poisson", "mean_squared_logarithmic_error"):
        a, b = rng.uniform(0.1, 0.9, (2, 3)), rng.uniform(0.1, 0.9, (2, 3))
    else:
        a, b = rng.uniform(0.5, 2.0, (2, 3)), rng.standard_normal((2, 3))
    w = rng.standard_normal(2)
    pred = tf.constant(b)
    with tf.GradientTape() as tape:
        tape.watch(pred)
        total = tf.reduce_sum(fn(tf.constant(a), pred) * tf.constant(w))
    g = tape.gradient(total, pred).numpy()

    def f(p):
        return float(np.sum(fn(tf.constant(a), tf.constant(p)).numpy() * w))

    num = np.zeros_like(b)
    eps = 1e-6
    for i in np.ndindex(b.shape):
        bp, bm = b.copy(), b.copy()
        bp[i] += eps
        bm[i] -= eps
        num[i] = (f(bp) - f(bm)) / (2 * eps)
    rtol, atol = TOLERANCE[("float64", "finite_difference")]
    np.testing.assert_allclose(g, num, rtol=rtol, atol=atol)
