"""Metrics: Mean, Sum, Accuracy, SparseCategoricalAccuracy, CategoricalAccuracy (and
BinaryAccuracy): update_state / result / reset_state / reset_states / __call__, sample
weights, against NumPy float64 references."""

import numpy as np
import pytest
from tolerances import assert_close

import mixprec as tf
from mixprec import keras
from mixprec.keras import metrics

RNG = np.random.default_rng(11)


def value(t):
    assert t.dtype.name == "float32"
    return float(t)


# --------------------------------------------------------------------------- Mean, Sum


def test_mean_accumulates_over_updates():
    m = metrics.Mean()
    assert value(m.result()) == 0.0  # empty: 0, not NaN
    a = RNG.standard_normal(10)
    b = RNG.standard_normal((3, 4))
    m.update_state(a)
    m.update_state(tf.constant(b.astype(np.float32)))
    m.update_state(2.5)
    want = np.concatenate([a, b.ravel(), [2.5]]).mean()
    np.testing.assert_allclose(value(m.result()), want, rtol=1e-6)
    # tf-keras 2.21 (eager): the variables are named without the metric's scope
    assert [v.name for v in m.variables] == ["total:0", "count:0"]


def test_mean_sample_weight():
    m = metrics.Mean(name="weighted")
    v = np.array([1.0, 2.0, 3.0, 4.0])
    w = np.array([1.0, 0.0, 2.0, 1.0])
    m.update_state(v, sample_weight=w)
    np.testing.assert_allclose(value(m.result()), (v * w).sum() / w.sum(), rtol=1e-6)
    m.reset_state()
    m.update_state([[1.0], [3.0]], sample_weight=[[0.0], [0.0]])
    assert value(m.result()) == 0.0  # zero total weight: 0 (divide_no_nan)
    m.update_state(np.ones((2, 3)), sample_weight=2.0)  # scalar weight broadcasts
    assert value(m.result()) == 1.0


def test_mean_callable_reset_and_float16_values():
    m = metrics.Mean()
    r = m([1.0, 3.0])
    assert value(r) == 2.0  # __call__ updates and returns the result
    assert value(m(tf.cast(tf.constant([6.0]), "float16"))) == pytest.approx(10 / 3, rel=1e-6)
    m.reset_states()
    assert value(m.result()) == 0.0
    m.update_state(5.0)
    assert value(m.result()) == 5.0


def test_sum():
    s = metrics.Sum()
    s.update_state([1.0, 2.0])
    s.update_state(np.array([[3.0]]), sample_weight=[[2.0]])
    assert value(s.result()) == 9.0
    assert value(s(1.0)) == 10.0
    s.reset_state()
    assert value(s.result()) == 0.0
    assert s.name == "sum"


# --------------------------------------------------------------------------- accuracies


def test_accuracy_exact_match():
    m = metrics.Accuracy()
    m.update_state([1, 2, 3, 4], [1, 2, 0, 4])
    assert value(m.result()) == 0.75
    m.update_state([[1.0], [2.0]], [[1.0], [0.5]], sample_weight=[1.0, 3.0])
    np.testing.assert_allclose(value(m.result()), (3 + 1) / (4 + 4), rtol=1e-6)
    assert m.name == "accuracy"


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_sparse_categorical_accuracy(dtype):
    probs = RNG.random((20, 5)).astype(np.float32)
    labels = RNG.integers(0, 5, 20)
    pred = tf.cast(tf.constant(probs), dtype)
    argmax = np.asarray(pred, np.float32).argmax(-1)
    m = metrics.SparseCategoricalAccuracy()
    m.update_state(labels, pred)
    np.testing.assert_allclose(value(m.result()), np.mean(argmax == labels), rtol=1e-6)
    m.reset_state()
    # labels as (N, 1) floats, with sample weights
    w = RNG.random(20)
    m.update_state(labels[:, None].astype(np.float32), pred, sample_weight=w)
    np.testing.assert_allclose(value(m.result()), ((argmax == labels) * w).sum() / w.sum(),
                               rtol=1e-5)
    assert m.name == "sparse_categorical_accuracy"
    assert metrics.SparseCategoricalAccuracy(name="test_accuracy").name == "test_accuracy"


def test_categorical_accuracy():
    probs = RNG.random((12, 4)).astype(np.float32)
    labels = np.eye(4, dtype=np.float32)[RNG.integers(0, 4, 12)]
    m = metrics.CategoricalAccuracy()
    got = m(labels, probs)
    np.testing.assert_allclose(value(got), np.mean(probs.argmax(-1) == labels.argmax(-1)),
                               rtol=1e-6)
    m.reset_states()
    assert value(m.result()) == 0.0


def test_binary_accuracy():
    m = metrics.BinaryAccuracy()
    m.update_state([[1.0], [0.0], [1.0], [0.0]], [[0.9], [0.6], [0.4], [0.1]])
    assert value(m.result()) == 0.5
    m2 = metrics.BinaryAccuracy(threshold=0.3)
    m2.update_state([[1.0], [0.0]], [[0.4], [0.2]])
    assert value(m2.result()) == 1.0


def test_accuracy_accumulates_across_batches_like_the_guide_loop():
    """The guide's test loop: update_state per batch, result() over all of them."""
    probs = RNG.random((1000, 10)).astype(np.float32)
    labels = RNG.integers(0, 10, 1000)
    m = metrics.SparseCategoricalAccuracy(name="test_accuracy")
    for lo in range(0, 1000, 256):
        m.update_state(labels[lo:lo + 256], probs[lo:lo + 256])
    np.testing.assert_allclose(value(m.result()), np.mean(probs.argmax(-1) == labels),
                               rtol=1e-6)
    assert "test accuracy={}".format(m.result()) == "test accuracy={}".format(
        np.float32(np.mean(probs.argmax(-1) == labels)))


# --------------------------------------------------------------------------- lookup


def test_get_and_serialize():
    # tf-keras 2.21: a function's name gives the function ('acc' is accuracy), a class
    # name an instance
    assert metrics.get("sparse_categorical_accuracy") is metrics.sparse_categorical_accuracy
    assert metrics.get("accuracy") is metrics.get("acc") is metrics.accuracy
    assert isinstance(metrics.get("CategoricalAccuracy"), metrics.CategoricalAccuracy)
    m = metrics.Mean(name="x")
    assert metrics.get(m) is m
    ser = metrics.serialize(metrics.Sum(name="s"))
    assert ser == {"module": "keras.metrics", "class_name": "Sum",
                   "config": {"name": "s", "dtype": "float32"}, "registered_name": None}
    again = metrics.deserialize(ser)
    assert isinstance(again, metrics.Sum) and again.name == "s"
    with pytest.raises(ValueError, match="Unknown metric"):
        metrics.get("nope")

    def twice(y_true, y_pred):
        return tf.cast(tf.constant(y_pred), "float32") * 2

    assert metrics.get(twice) is twice  # tf-keras returns a callable as is
    w = metrics.MeanMetricWrapper(twice, name="twice")
    w.update_state(None, [1.0, 2.0])
    assert value(w.result()) == 3.0 and w.name == "twice"


def test_compiled_metrics_by_name():
    from mixprec.keras import layers

    inputs = keras.Input(shape=(3,))
    model = keras.Model(inputs, layers.Activation("softmax")(inputs))
    x = RNG.standard_normal((10, 3)).astype(np.float32)
    y = RNG.integers(0, 3, 10)
    want = np.mean(x.argmax(-1) == y)
    model.compile("sgd", "sparse_categorical_crossentropy",
                  metrics=["accuracy", "sparse_categorical_accuracy",
                           metrics.SparseCategoricalAccuracy(name="sca")])
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    assert list(logs) == ["loss", "accuracy", "sparse_categorical_accuracy", "sca"]
    for k in ("accuracy", "sparse_categorical_accuracy", "sca"):
        np.testing.assert_allclose(logs[k], want, rtol=1e-6)
    # 'accuracy' with one-hot labels and categorical_crossentropy is categorical accuracy
    model.compile("sgd", "categorical_crossentropy", metrics=["accuracy"])
    onehot = np.eye(3, dtype=np.float32)[y]
    np.testing.assert_allclose(model.evaluate(x, onehot, verbose=0)[1], want, rtol=1e-6)


def test_compiled_accuracy_for_binary_crossentropy_is_binary_accuracy():
    from mixprec.keras import layers

    inputs = keras.Input(shape=(2,))
    model = keras.Model(inputs, layers.Activation("sigmoid")(inputs))
    model.compile("adam", "binary_crossentropy", metrics=["accuracy"])
    x = RNG.standard_normal((16, 2)).astype(np.float32)
    y = (RNG.random((16, 2)) > 0.5).astype(np.float32)
    _, acc = model.evaluate(x, y, verbose=0)
    np.testing.assert_allclose(acc, np.mean((x > 0) == (y > 0.5)), rtol=1e-6)
    # tf-keras 2.21: a MeanMetricWrapper of binary_accuracy (its config holds the function)
    acc_metric = model.metrics[1]
    assert type(acc_metric) is metrics.MeanMetricWrapper
    assert acc_metric.get_config() == {"name": "accuracy", "dtype": "float32",
                                       "fn": metrics.binary_accuracy}
    again = metrics.MeanMetricWrapper.from_config(
        {"name": "accuracy", "dtype": "float32", "fn": "binary_accuracy"})
    assert again._fn is metrics.binary_accuracy


def test_per_sample_weights_weigh_whole_rows():
    m = metrics.Mean()
    m.update_state(np.ones((4, 4)) * np.arange(4), sample_weight=[1.0, 0.0, 0.0, 0.0])
    assert float(m.result()) == 1.5  # tf.keras.metrics.Mean gives 1.5
    s = metrics.Sum()
    s.update_state(np.ones((3, 5)), sample_weight=[1.0, 2.0, 0.0])
    assert float(s.result()) == 15.0


# --------------------------------------------------------------------------- loss names as metrics


def test_loss_names_are_accepted_as_metrics_and_logged_as_written():
    from mixprec.keras import metrics as M

    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((16, 3)).astype("f"), rng.standard_normal((16, 2)).astype("f")
    model = keras.Sequential([keras.layers.Dense(2)])
    model.compile("sgd", "mse", metrics=["mae", "mse", "mean_absolute_error", "MAE",
                                          M.MeanSquaredError()])
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    assert list(logs) == ["loss", "mae", "mse", "mean_absolute_error", "MAE",
                          "mean_squared_error"]
    p = model.predict(x, verbose=0)
    mse, mae = np.mean((p - y) ** 2), np.mean(np.abs(p - y))
    for k, want in (("mae", mae), ("mse", mse), ("mean_absolute_error", mae), ("MAE", mae),
                    ("mean_squared_error", mse), ("loss", mse)):
        assert_close(logs[k], want, "float32", "matmul")
    assert M.get("mae") is M.mean_absolute_error is keras.losses.mean_absolute_error


def test_crossentropy_metrics_pick_the_kind_from_the_shapes():
    from mixprec.keras import metrics as M

    rng = np.random.default_rng(1)
    x = rng.standard_normal((12, 3)).astype("f")
    y = rng.integers(0, 4, 12)
    model = keras.Sequential([keras.layers.Dense(4, activation="softmax")])
    model.compile("sgd", "sparse_categorical_crossentropy",
                  metrics=["ce", "sparse_categorical_crossentropy",
                           M.SparseCategoricalCrossentropy(name="scce")])
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    for k in ("ce", "sparse_categorical_crossentropy", "scce"):
        assert_close(logs[k], logs["loss"], "float32", "matmul")
    m = M.CategoricalCrossentropy(from_logits=True)
    m.update_state(np.eye(3, dtype="f"), np.eye(3, dtype="f") * 5)
    want = -np.log(np.exp(5) / (np.exp(5) + 2))
    assert_close(float(m.result()), want, "float32", "matmul")


def test_str_is_the_class_and_config_as_tf_keras():
    # seed 004 prints its metrics; tf-keras 2.21's Metric.__str__ joins get_config()
    from mixprec.keras import metrics as M

    assert str(M.Mean(name="test_loss")) == "Mean(name=test_loss,dtype=float32)"
    assert str(M.SparseCategoricalAccuracy(name="train_accuracy")) == \
        "SparseCategoricalAccuracy(name=train_accuracy,dtype=float32)"
    assert str(M.BinaryAccuracy(threshold=0.3)) == \
        "BinaryAccuracy(name=binary_accuracy,dtype=float32,threshold=0.3)"
    assert str(M.SparseCategoricalCrossentropy(from_logits=True)) == (
        "SparseCategoricalCrossentropy(name=sparse_categorical_crossentropy,dtype=float32,"
        "from_logits=True,ignore_class=None,axis=-1)")
