"""fit(class_weight=...), train_on_batch(class_weight=...) and compile(weighted_metrics=...)
as tf-keras 2.21 (values recorded from TensorFlow 2.21 + tf-keras 2.21): class weights
become per-sample weights of the loss and of the weighted metrics only; a weighted metric
whose name is taken is renamed 'weighted_<name>'."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.testing.tolerances import TOLERANCE

X = np.array([[1.0, 2.0], [3.0, 4.0], [0.0, 1.0], [2.0, 2.0]], "float32")
Y = np.array([0, 1, 2, 1])
CW = {0: 1.0, 1: 2.0, 2: 0.5}


def _model(loss="sparse_categorical_crossentropy", weighted=True):
    m = keras.Sequential([keras.layers.Dense(3, input_shape=(2,), kernel_initializer="ones")])
    m.compile(keras.optimizers.SGD(0.1), loss, metrics=["accuracy"],
              weighted_metrics=["accuracy"] if weighted else None)
    return m


def test_fit_with_class_weight():
    rtol, atol = TOLERANCE[("float32", "reduction")]
    h = _model().fit(X, Y, class_weight=CW, epochs=2, verbose=0, shuffle=False).history
    assert list(h) == ["loss", "accuracy", "weighted_accuracy"]
    np.testing.assert_allclose(h["loss"], [1.510591983795166] * 2, rtol=rtol, atol=atol)
    np.testing.assert_allclose(h["accuracy"], [0.25] * 2, rtol=rtol, atol=atol)
    np.testing.assert_allclose(h["weighted_accuracy"], [0.1818181872367859] * 2, rtol=rtol,
                               atol=atol)
    onehot = keras.Sequential([keras.layers.Dense(3, input_shape=(2,),
                                                  kernel_initializer="ones")])
    onehot.compile(keras.optimizers.SGD(0.1), "categorical_crossentropy")
    h = onehot.fit(X, np.eye(3)[Y], class_weight=CW, verbose=0, shuffle=False).history
    np.testing.assert_allclose(h["loss"], [1.510591983795166], rtol=rtol, atol=atol)
    ds = tf.data.Dataset.from_tensor_slices((X, Y)).batch(2)
    h = _model().fit(ds, class_weight=CW, verbose=0).history
    np.testing.assert_allclose([h["loss"][0], h["accuracy"][0], h["weighted_accuracy"][0]],
                               [1.510591983795166, 0.25, 0.1818181872367859], rtol=rtol,
                               atol=atol)
    out = _model().train_on_batch(X, Y, class_weight=CW)
    np.testing.assert_allclose(out, [1.510591983795166, 0.25, 0.1818181872367859], rtol=rtol,
                               atol=atol)


def test_sample_weights_reach_only_weighted_metrics():
    m = _model(weighted=False)
    h = m.fit(X, Y, sample_weight=np.array([1.0, 0.0, 0.0, 0.0]), verbose=0).history
    assert list(h) == ["loss", "accuracy"] and h["accuracy"] == [0.25]


def test_class_weight_errors():
    m = _model()
    with pytest.raises(ValueError, match=r"^Expected `class_weight` to be a dict with keys from "
                                         r"0 to one less than the number of classes, found "):
        m.fit(X, Y, class_weight={0: 1.0, 2: 2.0}, verbose=0)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"is not in \[0, 2\)"):
        m.fit(X, Y, class_weight={0: 1.0, 1: 2.0}, verbose=0)
    a = keras.Input((2,))
    two = keras.Model(a, [keras.layers.Dense(3)(a), keras.layers.Dense(3)(a)])
    two.compile("sgd", "sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match="`class_weight` is only supported for Models with a "
                                         "single output"):
        two.fit(X, [Y, Y], class_weight=CW, verbose=0)
