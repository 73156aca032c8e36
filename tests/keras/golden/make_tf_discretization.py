"""Writes tf_discretization.json: tf-keras 2.21's Discretization.adapt bin boundaries (its
approximate quantile summaries, merged batch by batch) for fixed data sets, num_bins, epsilon
and batch sizes, with the layer's output on probe values. For tests/keras/test_preprocessing_adapt.py.
Not run by the tests (it needs TensorFlow): ``python tests/keras/golden/make_tf_discretization.py``."""

import json
import os

os.environ["TF_USE_LEGACY_KERAS"] = "1"

import numpy as np  # noqa: E402
import tf_keras as keras  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def datasets():
    rng = np.random.default_rng(4)
    return {
        "normal_1000": rng.standard_normal((1000, 1)).astype("float32"),
        "uniform_2d": (rng.random((300, 4)) * 10).astype("float32"),
        "ints_ties": rng.integers(0, 7, size=(257, 3)).astype("float32"),
        "small": np.array([[-1.5], [0.2], [3.0], [3.0], [7.5], [-0.1], [2.2]], "float32"),
        "exp_3d": rng.exponential(2.0, size=(64, 5, 2)).astype("float32"),
    }


CASES = [("normal_1000", 4, 0.01, None), ("normal_1000", 10, 0.01, 128),
         ("normal_1000", 3, 0.1, None), ("uniform_2d", 5, 0.01, 50), ("ints_ties", 4, 0.01, None),
         ("small", 3, 0.01, None), ("small", 10, 0.01, 2), ("exp_3d", 6, 0.05, 8),
         ("normal_1000", 1, 0.01, None), ("uniform_2d", 200, 0.001, None)]


def main():
    data = datasets()
    out = {"data": {k: v.tolist() for k, v in data.items()}, "cases": []}
    probe = np.linspace(-4, 12, 41).astype("float32")
    for name, num_bins, eps, bs in CASES:
        layer = keras.layers.Discretization(num_bins=num_bins, epsilon=eps)
        layer.adapt(data[name], batch_size=bs)
        out["cases"].append({
            "data": name, "num_bins": num_bins, "epsilon": eps, "batch_size": bs,
            "bin_boundaries": [float(b) for b in layer.bin_boundaries],
            "probe": np.asarray(layer(probe)).tolist(),
            "config": layer.get_config()})
    with open(os.path.join(HERE, "tf_discretization.json"), "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
