"""The optimizer part of a legacy .h5 model file as tf-keras 2.21 writes it (recorded from
TensorFlow 2.21 + tf-keras 2.21): the optimizer config's class name ('Custom>Adam', or
'LossScaleOptimizerV3' under mixed_float16) and the optimizer weights' names; a mixed
model's file loads back with its LossScaleOptimizer."""

import json

import numpy as np
import pytest

from mixprec import keras
from mixprec.keras import mixed_precision

h5py = pytest.importorskip("h5py")


@pytest.mark.parametrize("policy,class_name,names", [
    ("float32", "Custom>Adam", ["iteration:0", "Adam/m/dd/kernel:0", "Adam/v/dd/kernel:0",
                                "Adam/m/dd/bias:0", "Adam/v/dd/bias:0"]),
    ("mixed_float16", "LossScaleOptimizerV3", ["iteration:0", "m/dd/kernel:0",
                                               "v/dd/kernel:0", "m/dd/bias:0", "v/dd/bias:0"]),
])
def test_optimizer_config_and_weight_names(tmp_path, policy, class_name, names):
    mixed_precision.set_global_policy(policy)
    try:
        inp = keras.Input((4,))
        m = keras.Model(inp, keras.layers.Dense(2, name="dd")(inp))
        m.compile(keras.optimizers.Adam(), "mse")
        m.fit(np.ones((2, 4)), np.ones((2, 2)), verbose=0)
        path = str(tmp_path / "m.h5")
        m.save(path)
        with h5py.File(path, "r") as f:
            config = json.loads(f.attrs["training_config"])["optimizer_config"]
            stored = [n.decode() if isinstance(n, bytes) else n
                      for n in f["optimizer_weights"].attrs["weight_names"]]
        assert config["class_name"] == class_name
        assert stored == names
        if policy == "mixed_float16":
            assert config["config"]["inner_optimizer"]["class_name"] == "Adam"
            assert config["config"]["dynamic"] is True
        mixed_precision.set_global_policy("float32")
        again = keras.models.load_model(path)
        want = "LossScaleOptimizerV3" if policy == "mixed_float16" else "Adam"
        assert type(again.optimizer).__name__ == want
        assert int(again.optimizer.iterations) == 1  # mixprec restores the state
    finally:
        mixed_precision.set_global_policy("float32")
