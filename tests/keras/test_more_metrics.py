"""Top-k accuracies, RootMeanSquaredError, Precision, Recall and the mean-of-a-loss metrics
against tf-keras 2.21 (values rounded to 6 places, names and configs recorded from
TensorFlow 2.21 + tf-keras 2.21)."""

import numpy as np
import pytest

from mixprec import keras
from mixprec.testing.tolerances import TOLERANCE

YT = np.array([1, 0, 2, 2])
YP = np.array([[0.1, 0.8, 0.1], [0.3, 0.3, 0.4], [0.5, 0.3, 0.2], [0.2, 0.2, 0.6]], "float32")
OH = np.eye(3, dtype="float32")[YT]
SW = np.array([1.0, 0.0, 2.0, 1.0])

CASES = [  # (class, kwargs, y_true, value, weighted value, name)
    ("TopKCategoricalAccuracy", {"k": 1}, OH, 0.5, 0.5, "top_k_categorical_accuracy"),
    ("TopKCategoricalAccuracy", {"k": 2}, OH, 0.75, 0.5, "top_k_categorical_accuracy"),
    ("SparseTopKCategoricalAccuracy", {"k": 2}, YT, 0.75, 0.5,
     "sparse_top_k_categorical_accuracy"),
    ("SparseTopKCategoricalAccuracy", {}, YT, 1.0, 1.0, "sparse_top_k_categorical_accuracy"),
    ("RootMeanSquaredError", {}, OH, 0.410284, 0.433974, "root_mean_squared_error"),
    ("KLDivergence", {}, OH, 0.886842, 0.988208, "kullback_leibler_divergence"),
    ("LogCoshError", {}, OH, 0.07936, 0.088163, "logcosh"),
    ("MeanAbsolutePercentageError", {}, OH + 1, 74.583336, 74.166664,
     "mean_absolute_percentage_error"),
    ("MeanSquaredLogarithmicError", {}, OH, 0.083946, 0.094492,
     "mean_squared_logarithmic_error"),
    ("Poisson", {}, OH, 0.628948, 0.662737, "poisson"),
    ("Hinge", {}, OH, 1.016667, 1.033333, "hinge"),
    ("CosineSimilarity", {}, OH, 0.682051, 0.634538, "cosine_similarity"),
]


@pytest.mark.parametrize("cls_name,kwargs,y_true,value,weighted,name", CASES)
def test_values_names_and_configs(cls_name, kwargs, y_true, value, weighted, name):
    cls = getattr(keras.metrics, cls_name)
    m = cls(**kwargs)
    rtol, atol = TOLERANCE[("float32", "reduction")]  # the values are rounded to 6 places
    np.testing.assert_allclose(float(m(y_true, YP)), value, rtol=rtol, atol=atol)
    np.testing.assert_allclose(float(cls(**kwargs)(y_true, YP, sample_weight=SW)), weighted,
                               rtol=rtol, atol=atol)
    config = m.get_config()
    assert m.name == name and list(config)[:2] == ["name", "dtype"]
    assert [v.name for v in m.variables] == ["total:0", "count:0"]
    if "k" in kwargs or "TopK" in cls_name:
        assert config["k"] == kwargs.get("k", 5)
    assert type(cls.from_config(config)) is cls


def test_precision_and_recall():
    bt = np.array([[1.0], [0.0], [1.0], [1.0]])
    bp = np.array([[0.9], [0.6], [0.4], [0.7]], "float32")
    rtol, atol = TOLERANCE[("float32", "reduction")]
    for cls, cells, value, at3, weighted, on_2d in [
            (keras.metrics.Precision, ["true_positives:0", "false_positives:0"], 0.666667,
             [0.75, 0.6666669845581055, 1.0], 0.333333, 1.0),
            (keras.metrics.Recall, ["true_positives:0", "false_negatives:0"], 0.666667,
             [1.0, 0.6666669845581055, 0.33333298563957214], 0.5, 0.5)]:
        m = cls()
        assert round(float(m(bt, bp)), 6) == value
        assert [v.name for v in m.variables] == cells
        assert [v.shape.as_list() for v in m.variables] == [[1], [1]]
        assert list(m.get_config()) == ["name", "dtype", "thresholds", "top_k", "class_id"]
        np.testing.assert_allclose(cls(thresholds=[0.3, 0.5, 0.8])(bt, bp).numpy(), at3,
                                   rtol=rtol, atol=atol)
        assert round(float(cls()(bt, bp, sample_weight=[1.0, 2.0, 1.0, 0.0])), 6) == weighted
        assert round(float(cls()(OH, YP)), 6) == on_2d
    first = keras.metrics.Precision()
    assert keras.metrics.Precision().name != first.name  # unique default names


def test_compile_with_the_new_metrics():
    m = keras.Sequential([keras.layers.Dense(3, input_shape=(3,), kernel_initializer="ones")])
    m.compile("sgd", "categorical_crossentropy",
              metrics=["top_k_categorical_accuracy", keras.metrics.RootMeanSquaredError()])
    assert sorted(m.fit(YP, OH, verbose=0).history) == [
        "loss", "root_mean_squared_error", "top_k_categorical_accuracy"]
