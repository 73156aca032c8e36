"""Model.fit/evaluate/predict compiled inside strategy.scope(): each batch is split over the
replicas and the result equals training without a strategy (tf-keras' behaviour)."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from tolerances import assert_close


def _model(init=None):
    m = keras.Sequential([keras.layers.Dense(16, activation="relu", input_shape=(8,)),
                          keras.layers.Dense(3, activation="softmax")])
    if init is not None:
        m.set_weights(init)
    return m


@pytest.mark.parametrize("policy", ["float32", "mixed_float16"])
def test_fit_in_scope_equals_fit_without_strategy(two_cpus, rng, policy):
    keras.mixed_precision.set_global_policy(policy)
    x = rng.standard_normal((70, 8)).astype(np.float32)  # 32 + 32 + a last batch of 6
    y = rng.integers(0, 3, 70)
    init = [w.numpy() for w in _model().weights]
    ref = _model(init)
    ref.compile(keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy", ["accuracy"])
    ref_hist = ref.fit(x, y, batch_size=32, epochs=2, shuffle=False, verbose=0)
    s = tf.distribute.MirroredStrategy(two_cpus)
    with s.scope():
        model = _model(init)
        model.compile(keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy",
                      ["accuracy"])
    hist = model.fit(x, y, batch_size=32, epochs=2, shuffle=False, verbose=0)
    kind = "replicas" if policy == "float32" else "optimizer"
    for a, b in zip(model.weights, ref.weights):
        assert_close(a.numpy(), b.numpy(), "float32" if policy == "float32" else "float16", kind)
    assert_close(np.array(hist.history["loss"]), np.array(ref_hist.history["loss"]),
                 "float32" if policy == "float32" else "float16", kind)
    assert hist.history["accuracy"] == ref_hist.history["accuracy"]
    ev = model.evaluate(x, y, batch_size=32, verbose=0)
    ref_ev = ref.evaluate(x, y, batch_size=32, verbose=0)
    assert_close(np.array(ev), np.array(ref_ev), "float32" if policy == "float32" else "float16",
                 kind)
    pred = model.predict(x, batch_size=32, verbose=0)
    assert pred.shape == (70, 3)
    assert_close(pred, ref.predict(x, batch_size=32, verbose=0),
                 "float32" if policy == "float32" else "float16", kind)


def test_fit_with_a_batch_smaller_than_the_replicas(two_cpus, rng):
    x = rng.standard_normal((3, 8)).astype(np.float32)  # batches of 2 and 1 (1 + empty)
    y = rng.integers(0, 3, 3)
    s = tf.distribute.MirroredStrategy(two_cpus)
    with s.scope():
        model = _model()
        model.compile("sgd", "sparse_categorical_crossentropy")
    hist = model.fit(x, y, batch_size=2, epochs=1, verbose=0)
    assert np.isfinite(hist.history["loss"][0])
    assert model.predict(x, batch_size=2, verbose=0).shape == (3, 3)


def test_synchronized_batch_norm_training_on_two_replicas_is_refused(two_cpus, rng):
    # the statistics could be all-reduced, but their gradient is not yet on the tape:
    # a clear NotImplementedError rather than silently wrong gradients (docs/porting.md)
    s = tf.distribute.MirroredStrategy(two_cpus)
    x = rng.standard_normal((8, 3)).astype(np.float32)
    with s.scope():
        bn = keras.layers.BatchNormalization(synchronized=True)
        model = keras.Sequential([keras.Input((3,)), bn])
        model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(NotImplementedError, match="synchronized=True"):
        model.fit(x, np.zeros_like(x), batch_size=8, epochs=1, verbose=0)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), np.zeros(3, np.float32))
    out = model.predict(x, batch_size=8, verbose=0)  # inference: moving statistics
    assert_close(out, x / np.sqrt(1 + 1e-3), "float32", "elementwise")
