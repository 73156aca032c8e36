"""Model.summary(expand_nested=True) line for line as tf-keras 2.21 prints it:
golden/summary_expand_nested_tf.json holds TensorFlow 2.21's lines for the models built
below (a Sequential nested in a functional model, show_trainable with a frozen nested
model, a functional model nested two deep, a Sequential whose first layer is a model)."""

import json
import os

import pytest

from mixprec import keras
from mixprec.keras import layers

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden",
                      "summary_expand_nested_tf.json")


def _models():
    inner = keras.Sequential([layers.Dense(4, name="in_d1"), layers.Dense(3, name="in_d2")],
                             name="inner")
    inp = keras.Input((5,), name="x")
    outer = keras.Model(inp, layers.Dense(2, name="head")(inner(inp)), name="outer")
    yield "outer", outer, {}
    inner.trainable = False
    yield "outer_trainable", outer, {"show_trainable": True}
    i2 = keras.Input((3,), name="i2")
    inner2 = keras.Model(i2, layers.Dense(2, name="fd")(layers.Dense(4, name="fe")(i2)),
                         name="func_inner")
    mid = keras.Sequential([layers.Dense(3, input_shape=(5,), name="m1"), inner2], name="mid")
    o_in = keras.Input((5,), name="o_in")
    yield "outer2", keras.Model(o_in, [mid(o_in), layers.Dense(2, name="b")(o_in)],
                                name="outer2"), {}
    yield "s2", keras.Sequential([mid, layers.Dense(1, name="last")], name="s2"), {}


@pytest.fixture(scope="module")
def golden():
    with open(GOLDEN, encoding="utf-8") as f:
        return json.load(f)


def test_expand_nested_matches_tf_keras(golden):
    seen = []
    for key, model, kwargs in _models():
        lines = []
        model.summary(print_fn=lambda s, **kw: lines.append(s), expand_nested=True, **kwargs)
        assert lines == golden[key], key
        seen.append(key)
    assert seen == list(golden)


def test_nested_functional_model_is_listed_as_functional():
    i = keras.Input((2,))
    f = keras.Model(i, layers.Dense(1)(i))
    s = keras.Sequential([f])
    lines = []
    s.summary(print_fn=lines.append)
    assert any("(Functional)" in line for line in lines)
    assert s.input_shape == (None, 2)  # the nested model's input declares the shape
