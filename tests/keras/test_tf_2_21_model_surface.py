"""Model and layer attributes as tf-keras 2.21 reports them (values recorded from
TensorFlow 2.21 + tf-keras 2.21): shapes as tuples, compiled metrics listed only once a
step has run, metric variable names."""

import numpy as np

from mixprec import keras
from mixprec.keras import layers


def _model():
    inp = keras.Input((4,), name="i")
    d = layers.Dense(3, name="d")
    return keras.Model(inp, d(inp)), d


def test_shapes_are_tuples():
    m, d = _model()
    assert d.input_shape == (None, 4) and type(d.input_shape) is tuple
    assert d.output_shape == (None, 3)
    assert m.layers[0].input_shape == [(None, 4)] and m.layers[0].output_shape == [(None, 4)]
    assert m.input_shape == (None, 4) and m.output_shape == (None, 3)
    s = keras.Sequential([layers.Dense(2, input_shape=(3,))])
    assert (s.input_shape, s.output_shape, s.layers[0].input_shape) == \
        ((None, 3), (None, 2), (None, 3))
    a, b = keras.Input((3,), name="a"), keras.Input((2,), name="b")
    two = keras.Model([a, b], [layers.Dense(1)(a), layers.Dense(2)(b)])
    assert two.input_shape == [(None, 3), (None, 2)]
    assert two.output_shape == [(None, 1), (None, 2)]


def test_metrics_appear_after_the_first_step():
    m, _ = _model()
    assert m.metrics == [] and m.metrics_names == []
    m.compile("sgd", "mse", metrics=["mae"])
    assert m.metrics_names == []
    m.predict(np.ones((2, 4)), verbose=0)
    assert m.metrics_names == []
    m.evaluate(np.ones((2, 4)), np.ones((2, 3)), verbose=0)
    assert m.metrics_names == ["loss", "mae"]
    m.compile("sgd", "mse", metrics=["mae"])
    assert m.metrics_names == []
    m.train_on_batch(np.ones((2, 4)), np.ones((2, 3)))
    assert m.metrics_names == ["loss", "mae"]
    assert [[v.name for v in x.variables] for x in m.metrics] == [["total:0", "count:0"]] * 2


def test_metric_variable_names():
    assert [v.name for v in keras.metrics.Mean(name="foo").variables] == ["total:0", "count:0"]
    assert [v.name for v in keras.metrics.SparseCategoricalAccuracy().variables] == \
        ["total:0", "count:0"]
    assert [v.name for v in keras.metrics.Sum().variables] == ["total:0"]


def test_layers_serialize_and_deserialize():
    ser = keras.layers.serialize(layers.Dense(2, name="d"))
    assert ser == {
        "module": "keras.layers", "class_name": "Dense",
        "config": {"name": "d", "trainable": True, "dtype": "float32", "units": 2,
                   "activation": "linear", "use_bias": True,
                   "kernel_initializer": {"module": "keras.initializers",
                                          "class_name": "GlorotUniform",
                                          "config": {"seed": None}, "registered_name": None},
                   "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros",
                                        "config": {}, "registered_name": None},
                   "kernel_regularizer": None, "bias_regularizer": None,
                   "activity_regularizer": None, "kernel_constraint": None,
                   "bias_constraint": None},
        "registered_name": None}
    again = keras.layers.deserialize(ser)
    assert type(again).__name__ == "Dense" and again.name == "d" and again.units == 2
    legacy = keras.layers.deserialize({"class_name": "Dense", "config": {"name": "q", "units": 3}})
    assert legacy.name == "q" and legacy.units == 3
    mixed = keras.layers.serialize(layers.Dense(2, dtype="mixed_float16"))["config"]["dtype"]
    assert mixed["class_name"] == "Policy" and mixed["config"] == {"name": "mixed_float16"}


def test_optimizers_experimental_is_the_same_classes():
    assert keras.optimizers.experimental.Adam is keras.optimizers.Adam
    assert keras.optimizers.experimental.SGD is keras.optimizers.SGD
