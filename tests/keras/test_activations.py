"""keras.activations.get/deserialize as tf-keras: names, functions, and config dicts in both
the current ('module' key) and the legacy format."""

import pytest

from mixprec import keras
from mixprec.keras import activations, layers


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
    with pytest.raises(ValueError, match="Unknown activation function: 'nope'"):
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
