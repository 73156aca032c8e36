"""keras.models.clone_model: same architecture, new weights, as tf-keras."""

import numpy as np
import pytest

from mixprec import keras

L = keras.layers


def _weights_differ(a, b):
    return any(not np.array_equal(x, y) for x, y in zip(a.get_weights(), b.get_weights()))


def test_clone_sequential_fresh_weights_same_config():
    m = keras.Sequential([L.Dense(4, input_shape=(3,), name="d"), L.Dense(2)], name="s")
    c = keras.models.clone_model(m)
    assert type(c) is keras.Sequential and c.name == "s"
    assert [la.get_config() for la in c.layers] == [la.get_config() for la in m.layers]
    assert all(a is not b for a, b in zip(c.layers, m.layers))
    assert _weights_differ(m, c)
    c.set_weights(m.get_weights())
    x = np.ones((2, 3), "float32")
    np.testing.assert_array_equal(m.predict(x, verbose=0), c.predict(x, verbose=0))


def test_clone_functional_with_shared_layer_and_clone_function():
    a = keras.Input((4,), name="a")
    b = keras.Input((4,), name="b")
    shared = L.Dense(3, name="shared")
    out = L.Dense(1, name="head")(shared(a))
    m = keras.Model([a, b], [out, shared(b)])
    seen = []

    def fn(layer):
        seen.append(layer.name)
        return layer.__class__.from_config(layer.get_config())

    c = keras.models.clone_model(m, clone_function=fn)
    assert sorted(seen) == ["head", "shared"]  # the shared layer is cloned once
    assert len(c.weights) == len(m.weights)
    assert c.get_layer("shared") is not shared
    c.set_weights(m.get_weights())
    x = [np.ones((2, 4), "float32")] * 2
    for p, q in zip(m.predict(x, verbose=0), c.predict(x, verbose=0)):
        np.testing.assert_array_equal(p, q)


def test_clone_with_input_tensors():
    i = keras.Input((4,))
    m = keras.Model(i, L.Dense(2)(i))
    new_in = keras.Input((4,), name="fresh")
    c = keras.models.clone_model(m, input_tensors=new_in)
    assert c.inputs[0] is new_in


def test_clone_subclassed_model():
    class Sub(keras.Model):
        def __init__(self, units=2, **kw):
            super().__init__(**kw)
            self.d = L.Dense(units)

        def call(self, x):
            return self.d(x)

    c = keras.models.clone_model(Sub(3))
    assert type(c) is Sub and c.d.units == 3
    with pytest.raises(ValueError, match="only supported for Sequential models or Functional"):
        keras.models.clone_model(Sub(3), clone_function=lambda la: la)
