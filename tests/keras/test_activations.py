"""keras.activations.get/deserialize as tf-keras: names, functions, and config dicts in both
the current ('module' key) and the legacy format."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.keras import activations, layers
from mixprec.testing.tolerances import TOLERANCE


def test_config_dict_in_the_current_format_gives_the_function():
    cfg = {"module": "keras.activations", "class_name": "function", "config": "relu",
           "registered_name": "relu"}
    assert activations.get(cfg) is activations.relu
    assert layers.Dense(2, activation=cfg).activation is activations.relu


def test_legacy_config_dict_calls_the_named_object_with_its_config():
    """tf-keras' legacy deserialization calls a function with the config as keyword
    arguments: {'class_name': 'relu', 'config': {}} is relu() without x, a TypeError (it
    recursed until RecursionError)."""
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        layers.Dense(2, activation={"class_name": "relu", "config": {}})
    with pytest.raises(ValueError, match="^Unknown activation function: 'nope'\\. Please ensure"):
        activations.get({"class_name": "nope", "config": {}})
    with pytest.raises(ValueError, match="Could not interpret serialized"):
        activations.get({"class_name": "relu"})
    # a custom object with from_config is built from its config
    class Scaled:
        def __init__(self, k=1.0):
            self.k = k

        def __call__(self, x):
            return x * self.k

        @classmethod
        def from_config(cls, config):
            return cls(**config)

    act = activations.deserialize({"class_name": "Scaled", "config": {"k": 3.0}},
                                  custom_objects={"Scaled": Scaled})
    assert isinstance(act, Scaled) and act.k == 3.0


def test_names_and_functions():
    assert activations.get("softmax") is activations.softmax
    assert activations.deserialize("tanh") is activations.tanh
    assert activations.get(None) is activations.linear
    assert activations.get(abs) is abs
    with pytest.raises(ValueError, match="Unknown activation"):
        activations.get("abcd")
    assert keras.activations.serialize(activations.relu) == "relu"


def test_relu6_hard_sigmoid_mish_as_tf_keras():
    # values recorded from tf-keras 2.21
    x = tf.constant([-8.0, -3.0, -1.0, -0.25, 0.0, 0.5, 2.0, 3.0, 7.0])
    want = {
        "relu6": [0.0, 0.0, 0.0, 0.0, 0.0, 0.5, 2.0, 3.0, 6.0],
        "hard_sigmoid": [0.0, 0.0, 0.30000001192092896, 0.44999998807907104, 0.5,
                         0.6000000238418579, 0.8999999761581421, 1.0, 1.0],
        "mish": [-0.00268, -0.14565, -0.3034, -0.12993, 0.0, 0.37525, 1.94396, 2.98654,
                 6.99999],
    }
    rtol, atol = TOLERANCE[("float32", "transcendental")]
    for name, values in want.items():
        fn = activations.get(name)
        assert fn.__name__ == name and activations.serialize(fn) == name
        # mish was recorded rounded to 5 places: half a unit there on top of the table
        np.testing.assert_allclose(fn(x).numpy(), values, rtol=rtol, atol=atol + 5e-6)
    assert activations.get("silu").__name__ == "swish"
    assert activations.get("log_softmax").__name__ == "log_softmax"
    assert not hasattr(activations, "log_softmax")  # as tf-keras: only by name
    assert activations.hard_sigmoid(tf.cast(x, "float16")).numpy().tolist() == [
        0.0, 0.0, 0.300048828125, 0.449951171875, 0.5, 0.60009765625, 0.89990234375, 1.0, 1.0]
    assert layers.Dense(2, activation="mish").get_config()["activation"] == "mish"
    with pytest.raises(ValueError, match=r"^Unknown activation function 'foo' cannot be "
                                         r"deserialized\.$"):
        activations.get("foo")
