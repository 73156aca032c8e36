"""Merging layers against tf-keras 2.21 (shapes, configs, messages and values recorded
from TensorFlow 2.21 + tf-keras 2.21), and their gradients against float64 finite
differences."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.keras import layers as L
from mixprec.keras import mixed_precision
from mixprec.testing.tolerances import TOLERANCE

X1 = np.arange(6, dtype="float32").reshape(2, 3)
X2 = np.full((2, 3), 2.0, "float32")
EXPECTED = {  # tf-keras 2.21 on [X1, X2]
    "Add": [[2, 3, 4], [5, 6, 7]],
    "Subtract": [[-2, -1, 0], [1, 2, 3]],
    "Multiply": [[0, 2, 4], [6, 8, 10]],
    "Average": [[1, 1.5, 2], [2.5, 3, 3.5]],
    "Maximum": [[2, 2, 2], [3, 4, 5]],
    "Minimum": [[0, 1, 2], [2, 2, 2]],
    "Concatenate": [[0, 1, 2, 2, 2, 2], [3, 4, 5, 2, 2, 2]],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_values_shapes_and_configs(name):
    cls = getattr(L, name)
    np.testing.assert_array_equal(cls()([X1, X2]).numpy(), np.array(EXPECTED[name], "float32"))
    a, b = keras.Input((3,), name="a"), keras.Input((3,), name="b")
    out = cls()([a, b])
    assert out.shape.as_list() == [None, 6 if name == "Concatenate" else 3]
    assert out.dtype == tf.float32
    config = {"name": "x", "trainable": True, "dtype": "float32"}
    if name == "Concatenate":
        config["axis"] = -1
    assert cls(name="x").get_config() == config


def test_shape_rules_and_messages():
    a, b = keras.Input((3,)), keras.Input((3,))
    c = keras.Input((4, 3))
    assert L.Add()([a, b, a]).shape.as_list() == [None, 3]
    assert L.Add()([a, c]).shape.as_list() == [None, 4, 3]  # size-1 axis after the batch
    assert L.Add()([a]).shape.as_list() == [None, 3]
    assert L.Concatenate(axis=1)([c, c]).shape.as_list() == [None, 8, 3]
    with pytest.raises(ValueError, match=r"^A `Concatenate` layer requires inputs with matching "
                       r"shapes except for the concatenation axis\. Received: "
                       r"input_shape=\[\(None, 3\), \(None, 4, 3\)\]$"):
        L.Concatenate()([a, c])
    with pytest.raises(ValueError, match=r"^A `Subtract` layer should be called on exactly 2 "
                       r"inputs\. Received: input_shape=\[\(None, 3\), \(None, 3\), "
                       r"\(None, 3\)\]$"):
        L.Subtract()([a, b, a])
    with pytest.raises(ValueError, match=r"^Inputs have incompatible shapes\. Received shapes "
                       r"\(3,\) and \(4,\)$"):
        L.Add()([a, keras.Input((4,))])
    with pytest.raises(ValueError, match=r"^A merge layer should be called on a list of "
                       r"inputs\. Received: input_shape=\(None, 3\) \(not a list of shapes\)$"):
        L.Add()(a)
    with pytest.raises(ValueError, match=r"^Cannot merge tensors with different batch sizes\. "
                       r"Got tensors with shapes \[\(2, 3\), \(4, 3\)\]$"):
        L.Add()([keras.Input((3,), batch_size=2), keras.Input((3,), batch_size=4)])
    x3 = np.ones((2, 4, 3), "float32")
    out = L.Add()([X1, x3]).numpy()
    assert out.shape == (2, 4, 3)
    np.testing.assert_array_equal(out[:, 0], X1 + 1)


def test_functional_forms_and_mixed_policy():
    a, b = keras.Input((3,)), keras.Input((3,))
    assert L.add([a, b]).shape.as_list() == [None, 3]
    assert L.concatenate([a, b], axis=1).shape.as_list() == [None, 6]
    assert L.maximum([a, b]).shape.as_list() == [None, 3]
    mixed_precision.set_global_policy("mixed_float16")
    try:
        assert L.Add()([a, b]).dtype == tf.float16  # the inputs are autocast
        assert L.Concatenate()([X1, X2]).dtype == tf.float16
    finally:
        mixed_precision.set_global_policy("float32")


def test_in_a_model_fit_and_config_round_trip():
    a, b = keras.Input((3,), name="a"), keras.Input((3,), name="b")
    m = keras.Model([a, b], L.Dense(1, name="dd")(L.Concatenate(name="cat")([a, b])))
    assert m.input_names == ["a", "b"] and m.output_names == ["dd"]
    m.compile("sgd", "mse")
    assert len(m.fit([X1, X2], np.ones((2, 1)), verbose=0).history["loss"]) == 1
    again = keras.Model.from_config(m.get_config())
    assert [la.name for la in again.layers] == ["a", "b", "cat", "dd"]


@pytest.mark.parametrize("name", ["Add", "Subtract", "Multiply", "Average", "Maximum",
                                  "Minimum", "Concatenate"])
def test_gradients_match_finite_differences(name):
    rng = np.random.default_rng(0)
    x1 = rng.standard_normal((2, 3))
    x2 = rng.standard_normal((2, 3))
    layer = getattr(L, name)(dtype="float64")
    w = rng.standard_normal((2, 6 if name == "Concatenate" else 3))
    v1, v2 = tf.constant(x1), tf.constant(x2)
    with tf.GradientTape() as tape:
        tape.watch([v1, v2])
        loss = tf.reduce_sum(layer([v1, v2]) * tf.constant(w))
    g1, g2 = tape.gradient(loss, [v1, v2])

    def f(a, b):
        return float(np.sum(layer([a, b]).numpy() * w))

    eps = 1e-6
    for x, other, g, first in ((x1, x2, g1, True), (x2, x1, g2, False)):
        num = np.zeros_like(x)
        for i in np.ndindex(x.shape):
            xp, xm = x.copy(), x.copy()
            xp[i] += eps
            xm[i] -= eps
            num[i] = ((f(xp, other) - f(xm, other)) if first else
                      (f(other, xp) - f(other, xm))) / (2 * eps)
        rtol, atol = TOLERANCE[("float64", "finite_difference")]
        np.testing.assert_allclose(g.numpy(), num, rtol=rtol, atol=atol)
