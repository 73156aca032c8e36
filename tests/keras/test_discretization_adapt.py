"""Discretization.adapt against tf-keras 2.21 (golden/tf_discretization.json, written by
golden/make_tf_discretization.py): the adapted bin boundaries of its approximate quantile
summary for several data sets, num_bins, epsilon and batch sizes, the layer's output on probe
values and the config; the error paths."""

import json
import os

import numpy as np
import pytest

from mixprec import keras
from mixprec.testing.tolerances import assert_close

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden",
                       "tf_discretization.json")) as _f:
    GOLDEN = json.load(_f)


@pytest.mark.parametrize("case", GOLDEN["cases"],
                         ids=["%s-%d-%s-%s" % (c["data"], c["num_bins"], c["epsilon"],
                                               c["batch_size"]) for c in GOLDEN["cases"]])
def test_adapt_matches_tf_keras(case):
    data = np.asarray(GOLDEN["data"][case["data"]], np.float32)
    layer = keras.layers.Discretization(num_bins=case["num_bins"], epsilon=case["epsilon"])
    layer.adapt(data, batch_size=case["batch_size"])
    assert len(layer.bin_boundaries) == len(case["bin_boundaries"])
    assert_close(np.float32(layer.bin_boundaries), np.float32(case["bin_boundaries"]), "float32",
                 "exact")
    probe = np.linspace(-4, 12, 41).astype("float32")
    np.testing.assert_array_equal(layer(probe).numpy(), case["probe"])
    assert json.loads(json.dumps(layer.get_config())) == case["config"]


def test_adapt_from_a_dataset_and_errors():
    import mixprec as tf

    data = np.asarray(GOLDEN["data"]["normal_1000"], np.float32)
    case = GOLDEN["cases"][1]  # normal_1000, 10 bins, batch 128
    layer = keras.layers.Discretization(num_bins=10)
    layer.adapt(tf.data.Dataset.from_tensor_slices(data).batch(128))
    assert_close(np.float32(layer.bin_boundaries), np.float32(case["bin_boundaries"]), "float32",
                 "exact")
    with pytest.raises(ValueError, match="Cannot adapt a Discretization layer"):
        keras.layers.Discretization(bin_boundaries=[0.0, 1.0]).adapt(data)
    fixed = keras.layers.Discretization(bin_boundaries=[0.0, 1.0], output_mode="one_hot")
    np.testing.assert_array_equal(fixed(np.float32([-1.0, 0.5, 1.0])).numpy(), np.eye(3))
