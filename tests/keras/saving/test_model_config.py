"""Model configs in tf-keras 2.21's layout: Sequential and functional models (nested
models, shared layers, several inputs and outputs), to_json/model_from_json, build
configs, subclassed models' auto-config."""

import json

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras

L = keras.layers


def _two_input_model():
    a = keras.Input((4,), name="a")
    b = keras.Input((4,), name="b")
    shared = L.Dense(4, name="shared")
    x, y = shared(a), shared(b)
    inner = keras.Sequential([L.Dense(3, name="in_d")], name="inner")
    z = inner(x)
    out = L.Activation("softmax", dtype="float32", name="sm")(z)
    return keras.Model([a, b], [out, y], name="fm")


def _data(n=5):
    rng = np.random.default_rng(0)
    return [rng.random((n, 4), dtype=np.float32), rng.random((n, 4), dtype=np.float32)]


def test_sequential_config_layout():
    m = keras.Sequential([keras.Input((4,)), L.Dense(3, activation="relu", name="d1"),
                          L.Dense(2, name="d2")], name="seq")
    cfg = m.get_config()
    assert list(cfg) == ["name", "layers"] and cfg["name"] == "seq"
    assert [c["class_name"] for c in cfg["layers"]] == ["InputLayer", "Dense", "Dense"]
    assert cfg["layers"][0]["config"]["batch_input_shape"] == (None, 4)
    assert cfg["layers"][1]["build_config"] == {"input_shape": (None, 4)}
    outer = keras.saving.serialize_keras_object(m)
    assert (outer["module"], outer["class_name"]) == ("keras", "Sequential")
    assert outer["build_config"] == {"input_shape": (None, 4)}


def test_sequential_round_trip_same_outputs_after_set_weights():
    m = keras.Sequential([L.Dense(3, activation="relu", input_shape=(4,)), L.Dense(2)])
    m2 = keras.Sequential.from_config(json.loads(json.dumps(m.get_config())))
    assert m2.built and [type(la) for la in m2.layers] == [type(la) for la in m.layers]
    m2.set_weights(m.get_weights())
    x = _data()[0]
    np.testing.assert_array_equal(m.predict(x, verbose=0), m2.predict(x, verbose=0))


def test_unbuilt_sequential_round_trip():
    m = keras.Sequential([L.Dense(3), L.Dense(2)], name="lazy")
    cfg = m.get_config()
    assert [c["class_name"] for c in cfg["layers"]] == ["Dense", "Dense"]
    m2 = keras.Sequential.from_config(cfg)
    assert not m2.built and m2.name == "lazy"


def test_implicit_sequential_input_is_named_after_first_layer():
    m = keras.Sequential([L.Dense(3, input_shape=(4,), name="first")])
    assert m.get_config()["layers"][0]["config"]["name"] == "first_input"


def test_functional_config_layout_shared_and_nested():
    cfg = _two_input_model().get_config()
    assert set(cfg) == {"name", "trainable", "layers", "input_layers", "output_layers"}
    assert cfg["input_layers"] == [["a", 0, 0], ["b", 0, 0]]
    assert cfg["output_layers"] == [["sm", 0, 0], ["shared", 1, 0]]
    by_name = {c["name"]: c for c in cfg["layers"]}
    assert by_name["a"]["inbound_nodes"] == []
    assert by_name["shared"]["inbound_nodes"] == [[["a", 0, 0, {}]], [["b", 0, 0, {}]]]
    # tf-keras numbers a nested functional model's calls from 1
    assert by_name["sm"]["inbound_nodes"] == [[["inner", 1, 0, {}]]]
    assert by_name["inner"]["class_name"] == "Sequential"


def test_single_input_and_dict_endpoints():
    i = keras.Input((4,), name="x")
    o = L.Dense(2, name="o")(i)
    cfg = keras.Model(i, o).get_config()
    assert cfg["input_layers"] == [["x", 0, 0]] and cfg["output_layers"] == [["o", 0, 0]]
    cfg = keras.Model({"a": i}, {"out": o}).get_config()
    assert cfg["input_layers"] == {"a": ["x", 0, 0]}
    assert cfg["output_layers"] == {"out": ["o", 0, 0]}
    m = keras.Model.from_config(cfg)
    out = m({"a": np.ones((2, 4), "float32")})
    assert set(out) == {"out"}


def test_functional_round_trip_keeps_sharing_and_outputs():
    m = _two_input_model()
    m2 = keras.Model.from_config(json.loads(json.dumps(m.get_config())))
    assert [la.name for la in m2.layers] == [la.name for la in m.layers]
    assert len(m2.weights) == len(m.weights)  # the shared Dense is one layer
    m2.set_weights(m.get_weights())
    for p, q in zip(m.predict(_data(), verbose=0), m2.predict(_data(), verbose=0)):
        np.testing.assert_array_equal(p, q)


def test_to_json_and_model_from_json():
    m = _two_input_model()
    doc = json.loads(m.to_json())
    assert doc["class_name"] == "Functional"
    assert doc["keras_version"] == "2.21.0" and doc["backend"] == "tensorflow"
    m2 = keras.models.model_from_json(m.to_json())
    assert type(m2) is keras.Model and m2.name == "fm"
    s = keras.Sequential([L.Dense(2, input_shape=(3,))])
    s2 = keras.models.model_from_json(s.to_json())
    assert type(s2) is keras.Sequential and s2.built


def test_mixed_float16_model_config_round_trip():
    keras.mixed_precision.set_global_policy("mixed_float16")
    m = keras.Sequential([L.Dense(4, input_shape=(3,)), L.BatchNormalization(),
                          L.Activation("softmax", dtype="float32")])
    keras.mixed_precision.set_global_policy("float32")
    cfg = json.loads(json.dumps(m.get_config()))
    assert cfg["layers"][1]["config"]["dtype"]["config"] == {"name": "mixed_float16"}
    assert cfg["layers"][3]["config"]["dtype"] == "float32"
    m2 = keras.Sequential.from_config(cfg)
    assert m2.layers[0].compute_dtype == "float16"
    assert m2.layers[0].kernel.dtype == tf.float32
    assert m2.layers[1].moving_mean.dtype == tf.float32


def test_layers_of_the_cnn_round_trip():
    m = keras.Sequential([
        keras.Input((8, 8, 1)), L.Conv2D(2, 3, activation="relu",
                                         kernel_regularizer=keras.regularizers.L2(0.01)),
        L.MaxPooling2D(), L.BatchNormalization(), L.Flatten(), L.Dropout(0.5),
        L.Dense(3)])
    m2 = keras.Sequential.from_config(json.loads(json.dumps(m.get_config())))
    m2.set_weights(m.get_weights())
    x = np.random.default_rng(1).random((2, 8, 8, 1), dtype=np.float32)
    np.testing.assert_array_equal(m.predict(x, verbose=0), m2.predict(x, verbose=0))
    assert m2.layers[0].kernel_regularizer.get_config() == {"l2": pytest.approx(0.01)}


class Sub(keras.Model):
    def __init__(self, units=3, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.d = L.Dense(units)

    def call(self, x):
        return self.d(x)


def test_subclassed_model_auto_config():
    m = Sub(5)
    assert m.get_config() == {"units": 5}
    m2 = Sub.from_config(m.get_config())
    assert m2.units == 5
    assert Sub().get_config() == {}


def test_bad_functional_config():
    with pytest.raises(ValueError, match="input_layers"):
        keras.Model.from_config({"layers": [], "input_layers": [["nope", 0, 0]],
                                 "output_layers": [["nope", 0, 0]]})
    with pytest.raises(TypeError, match="expects a dictionary"):
        keras.models.model_from_config([])


def test_operators_on_keras_tensors_are_tf_op_layers():
    i = keras.Input((3, 4), name="i")
    k = keras.Input((4, 2), name="k")
    outs = [i[:, 1:3], i @ k, 1.0 + i, 2.0 - i, -i, abs(i) * i, i ** 2, i / 2.0]
    m = keras.Model([i, k], outs)
    cfg = m.get_config()
    by_name = {c["name"]: c for c in cfg["layers"]}
    sub = by_name["tf.math.subtract"]
    assert (sub["class_name"], sub["module"]) == ("TFOpLambda",
                                                  "tf_keras.src.layers.core.tf_op_layer")
    assert sub["config"]["function"] == "math.subtract"
    # as tf-keras records `2.0 - i`: the constant first, the tensor as y, unwrapped
    assert sub["inbound_nodes"] == [["_CONSTANT_VALUE", -1, 2.0, {"y": ["i", 0, 0],
                                                                  "name": None}]]
    sl = by_name["tf.__operators__.getitem"]
    assert sl["class_name"] == "SlicingOpLambda"
    assert sl["inbound_nodes"] == [["i", 0, 0, {"slice_spec": [
        {"start": None, "stop": None, "step": None}, {"start": 1, "stop": 3, "step": None}]}]]
    assert by_name["tf.linalg.matmul"]["inbound_nodes"] == [["i", 0, 0, {"b": ["k", 0, 0],
                                                                         "name": None}]]
    m2 = keras.Model.from_config(json.loads(json.dumps(cfg)))
    rng = np.random.default_rng(3)
    x = [rng.random((2, 3, 4), dtype=np.float32), rng.random((2, 4, 2), dtype=np.float32)]
    got = m2.predict(x, verbose=0)
    for p, q in zip(m.predict(x, verbose=0), got):
        np.testing.assert_array_equal(p, q)
    np.testing.assert_array_equal(got[3], 2.0 - x[0])
    np.testing.assert_array_equal(got[0], x[0][:, 1:3])
    with pytest.raises(ValueError, match="Ellipsis"):
        i[..., 0]


def test_op_layers_follow_the_input_dtype():
    keras.mixed_precision.set_global_policy("mixed_float16")
    i = keras.Input((3,))
    h = L.Dense(3)(i)
    m = keras.Model(i, 1.0 - h)
    keras.mixed_precision.set_global_policy("float32")
    assert m.outputs[0].dtype == tf.float16
    m2 = keras.Model.from_config(m.get_config())
    assert m2.predict(np.ones((1, 3), "float32"), verbose=0).dtype == np.float16


def test_lambda_layer_config_and_safe_mode():
    m = keras.Sequential([keras.Input((3,)), L.Lambda(lambda x: x * 3.0, name="lam")])
    cfg = m.get_config()["layers"][1]["config"]
    assert cfg["function_type"] == "lambda" and cfg["output_shape_type"] == "raw"
    assert isinstance(cfg["function"], tuple) and cfg["module"] == __name__
    with pytest.raises(ValueError, match="safe_mode=False"):
        keras.saving.deserialize_keras_object(
            json.loads(json.dumps(keras.saving.serialize_keras_object(m))))
    m2 = keras.saving.deserialize_keras_object(
        json.loads(json.dumps(keras.saving.serialize_keras_object(m))), safe_mode=False)
    np.testing.assert_array_equal(m2.predict(np.ones((1, 3), "float32"), verbose=0),
                                  np.full((1, 3), 3.0, "float32"))
    assert L.Lambda.from_config(cfg)(np.ones((1, 3), "float32")).numpy()[0, 0] == 3.0


def test_functional_layers_are_in_tf_keras_depth_order():
    """tf-keras 2.21 lists this model's layers as i, shared, inner, j, multiply, getitem,
    subtract (deepest first, ties by first visit from the outputs): summary, weights and
    the saved files' numbering follow that order."""
    keras.backend.clear_session()
    i, j = keras.Input((4,), name="i"), keras.Input((4,), name="j")
    shared = L.Dense(4, name="shared")
    inner = keras.Sequential([L.Dense(3, name="in_d")], name="inner")
    y = 2.0 * inner(shared(i)) - j[:, 0:3]
    m = keras.Model([i, j], [y, shared(j)])
    assert [la.name for la in m.layers] == ["i", "shared", "inner", "j", "tf.math.multiply",
                                            "tf.__operators__.getitem", "tf.math.subtract"]
    cfg = m.get_config()
    by_name = {c["name"]: c for c in cfg["layers"]}
    assert by_name["tf.math.multiply"]["build_config"] == {"input_shape": ()}
    assert by_name["tf.math.subtract"]["build_config"] == {"input_shape": (None, 3)}
    # two branches of the same class are numbered in that order in the .keras file
    a = keras.Input((2,), name="a")
    left = L.Dense(5, name="left")(L.Dense(7, name="deep")(a))
    right = L.Dense(3, name="right")(a)
    m = keras.Model(a, [right, left])
    assert [la.name for la in m.layers] == ["a", "deep", "right", "left"]


def test_tf_function_op_layers_from_a_config():
    """tf-keras records tf.nn.relu(x), tf.concat([...]) on Keras tensors as TFOpLambda
    layers naming the function; mixprec runs them with its own tf.* functions."""
    cfg = {"name": "m", "trainable": True, "layers": [
        {"module": "keras.layers", "class_name": "InputLayer", "registered_name": None,
         "config": {"batch_input_shape": [None, 4], "dtype": "float32", "sparse": False,
                    "ragged": False, "name": "i", "optional": False},
         "name": "i", "inbound_nodes": []},
        {"module": "tf_keras.src.layers.core.tf_op_layer", "class_name": "TFOpLambda",
         "registered_name": "TFOpLambda",
         "config": {"name": "tf.nn.relu", "trainable": True, "dtype": "float32",
                    "function": "nn.relu"},
         "name": "tf.nn.relu", "inbound_nodes": [["i", 0, 0, {"name": None}]]},
        {"module": "tf_keras.src.layers.core.tf_op_layer", "class_name": "TFOpLambda",
         "registered_name": "TFOpLambda",
         "config": {"name": "tf.concat", "trainable": True, "dtype": "float32",
                    "function": "concat"},
         "name": "tf.concat", "inbound_nodes": [[["tf.nn.relu", 0, 0, {"axis": -1}],
                                                 ["i", 0, 0, {"axis": -1}]]]}],
        "input_layers": [["i", 0, 0]], "output_layers": [["tf.concat", 0, 0]]}
    m = keras.Model.from_config(cfg)
    x = np.array([[-1.0, 2.0, -3.0, 4.0]], np.float32)
    np.testing.assert_array_equal(m.predict(x, verbose=0),
                                  np.concatenate([np.maximum(x, 0), x], -1))
    cfg["layers"][1]["config"]["function"] = "math.no_such_function"
    with pytest.raises(ValueError, match="tf.math.no_such_function"):
        keras.Model.from_config(cfg)
