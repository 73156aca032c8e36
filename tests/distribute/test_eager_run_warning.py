"""``strategy.run`` outside a ``tf.function`` logs TensorFlow 2.21's eager-overhead warning
(measured there: MirroredStrategy with one or two replicas, for the first 5 eager calls of
the process; none inside a tf.function, none for OneDeviceStrategy or the default strategy,
none for Keras' own fit steps). Also ``tf.executing_eagerly()``."""

import logging

import pytest

import mixprec as tf
from mixprec.distribute import _strategy

MESSAGE = ("Using MirroredStrategy eagerly has significant overhead currently. We will be "
           "working on improving this in the future, but for now please wrap "
           "`call_for_each_replica` or `experimental_run` or `run` inside a tf.function to get "
           "the best performance.")


@pytest.fixture
def fresh_count(monkeypatch):
    monkeypatch.setattr(_strategy, "_EAGER_RUN_WARNINGS", [0])


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records if "eagerly has significant" in r.getMessage()]


def test_first_five_eager_runs_warn(two_cpus, fresh_count, caplog):
    s = tf.distribute.MirroredStrategy(two_cpus)
    with caplog.at_level(logging.WARNING, logger="mixprec"):
        for _ in range(7):
            s.run(lambda: tf.constant(1.0))
    assert _warnings(caplog) == [MESSAGE] * 5
    assert all(r.levelname == "WARNING" for r in caplog.records
               if "eagerly has significant" in r.getMessage())


def test_no_warning_inside_function_or_for_other_strategies(two_cpus, fresh_count, caplog):
    s = tf.distribute.MirroredStrategy(two_cpus)

    @tf.function
    def f():
        return s.run(lambda: tf.constant(1.0))

    with caplog.at_level(logging.WARNING, logger="mixprec"):
        f()
        s.run(tf.function(lambda: tf.constant(1.0)))  # a tf.function as fn: TF's other path
        tf.distribute.OneDeviceStrategy("/cpu:0").run(lambda: tf.constant(1.0))
        tf.distribute.get_strategy().run(lambda: tf.constant(1.0))
    assert _warnings(caplog) == []


def test_keras_fit_under_strategy_does_not_warn(two_cpus, fresh_count, caplog):
    import numpy as np
    from mixprec import keras

    s = tf.distribute.MirroredStrategy(two_cpus)
    with s.scope():
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        model.compile("sgd", "mse")
    with caplog.at_level(logging.WARNING, logger="mixprec"):
        model.fit(np.ones((8, 3), "float32"), np.ones((8, 1), "float32"), batch_size=4,
                  verbose=0)
    assert _warnings(caplog) == []


def test_executing_eagerly():
    seen = []

    @tf.function
    def f():
        seen.append(tf.executing_eagerly())
        return tf.constant(1.0)

    f()
    assert tf.executing_eagerly() is True and seen == [False]
    assert tf.compat.v1.executing_eagerly() is True
