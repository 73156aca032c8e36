"""Keras steps traced by default (compile(run_eagerly=False), tf-keras' default), eager with
run_eagerly=True, the same numbers either way; steps_per_execution."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.keras.engine import step_functions


def _data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(64, 8)).astype("float32"), rng.integers(0, 3, 64)


def _model(seed=1, **compile_kw):
    tf.random.set_seed(seed)
    m = keras.Sequential([keras.layers.Dense(16, activation="relu", input_shape=(8,)),
                          keras.layers.Dense(3)])
    m.compile(keras.optimizers.Adam(1e-2), "sparse_categorical_crossentropy",
              metrics=["accuracy"], **compile_kw)
    return m


def test_run_eagerly_property():
    m = _model()
    assert m.run_eagerly is False
    m2 = _model(run_eagerly=True)
    assert m2.run_eagerly is True
    m.run_eagerly = True
    assert m.run_eagerly is True
    tf.config.run_functions_eagerly(True)
    try:
        assert _model().run_eagerly is True
        assert tf.config.functions_run_eagerly() is True
    finally:
        tf.config.run_functions_eagerly(False)


@pytest.mark.parametrize("policy", ["float32", "mixed_float16"])
def test_fit_traced_equals_eager(policy):
    keras.mixed_precision.set_global_policy(policy)
    try:
        x, y = _data()
        runs = []
        for eager in (True, False):
            m = _model(run_eagerly=eager)
            h = m.fit(x, y, batch_size=16, epochs=2, verbose=0, validation_data=(x, y))
            if not eager:
                fn = step_functions.cached(m, "train").traced
                assert fn.experimental_get_tracing_count() == 2  # variables on the first call
            runs.append((h.history, m.get_weights(), m.evaluate(x, y, verbose=0),
                         m.predict(x, verbose=0), m.train_on_batch(x[:8], y[:8])))
        (he, we, ee, pe, be), (ht, wt, et, pt, bt) = runs
        assert he == ht and ee == et and be == bt
        for a, b in zip(we, wt):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(pe, pt)
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_mixed_float16_history_records_the_scale_of_every_step():
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        x, y = _data()
        m = _model()
        h = m.fit(x, y, batch_size=16, epochs=1, verbose=0)
        assert len(h.steps["loss_scale"]) == 4
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_train_step_override_is_traced_once_per_signature():
    traces = []

    class M(keras.Model):
        def __init__(self):
            super().__init__()
            self.d = keras.layers.Dense(3)

        def call(self, x):
            return self.d(x)

        def train_step(self, data):
            traces.append(1)
            return super().train_step(data)

    x, y = _data()
    m = M()
    m.compile("sgd", "sparse_categorical_crossentropy")
    m.fit(x, y, batch_size=16, epochs=3, verbose=0)
    assert len(traces) <= 2  # TensorFlow: twice (variables are made on the first call)
    m2 = M()
    m2.compile("sgd", "sparse_categorical_crossentropy", run_eagerly=True)
    traces.clear()
    m2.fit(x, y, batch_size=16, epochs=3, verbose=0)
    assert len(traces) == 12


def test_steps_per_execution_groups_batch_callbacks():
    seen = []

    class Spy(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            seen.append(("begin", batch))

        def on_train_batch_end(self, batch, logs=None):
            seen.append(("end", batch))

    x, y = _data()
    m = _model(steps_per_execution=3)
    m.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[Spy()])
    assert seen == [("begin", 0), ("end", 2), ("begin", 3), ("end", 5), ("begin", 6), ("end", 7)]
    assert int(m.optimizer.iterations.numpy()) == 8
    with pytest.raises(ValueError, match="steps_per_execution"):
        _model(steps_per_execution=0)


def test_step_function_is_rebuilt_after_compile():
    m = _model()
    x, y = _data()
    m.fit(x, y, batch_size=32, epochs=1, verbose=0)
    first = step_functions.train_function(m)
    m.compile("sgd", "sparse_categorical_crossentropy")
    assert step_functions.train_function(m) is not first


def test_a_trained_model_can_be_deep_copied():
    import copy
    x, y = _data()
    m = _model()
    m.fit(x, y, batch_size=32, epochs=1, verbose=0)
    c = copy.deepcopy(m)
    c.fit(x, y, batch_size=32, epochs=1, verbose=0)
    assert int(c.optimizer.iterations.numpy()) == 4 and int(m.optimizer.iterations.numpy()) == 2
