"""Softmax, LeakyReLU, ELU, Identity, Permute, RepeatVector and Rescaling against tf-keras
2.21 (outputs rounded to 5 places and configs recorded from TensorFlow 2.21 + tf-keras
2.21)."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.keras import layers as L
from mixprec.keras import mixed_precision
from mixprec.testing.tolerances import TOLERANCE

X = np.array([[[1.0, -2.0, 3.0], [0.5, -1.0, 2.0]]], "float32")  # (1, 2, 3)

CASES = [  # (class, kwargs, output rounded to 5 places, config beyond name/trainable/dtype)
    ("Softmax", {}, [[[0.1185, 0.0059, 0.8756], [0.17529, 0.03911, 0.7856]]], {"axis": -1}),
    ("Softmax", {"axis": 1}, [[[0.62246, 0.26894, 0.73106], [0.37754, 0.73106, 0.26894]]],
     {"axis": 1}),
    ("LeakyReLU", {}, [[[1.0, -0.6, 3.0], [0.5, -0.3, 2.0]]], {"alpha": 0.30000001192092896}),
    ("LeakyReLU", {"alpha": 0.1}, [[[1.0, -0.2, 3.0], [0.5, -0.1, 2.0]]],
     {"alpha": 0.10000000149011612}),
    ("ELU", {}, [[[1.0, -0.86466, 3.0], [0.5, -0.63212, 2.0]]], {"alpha": 1.0}),
    ("ELU", {"alpha": 0.5}, [[[1.0, -0.43233, 3.0], [0.5, -0.31606, 2.0]]], {"alpha": 0.5}),
    ("Identity", {}, X.tolist(), {}),
    ("Permute", {"dims": (2, 1)}, [[[1.0, 0.5], [-2.0, -1.0], [3.0, 2.0]]], {"dims": (2, 1)}),
    ("Rescaling", {"scale": 1.0 / 255},
     [[[0.00392, -0.00784, 0.01176], [0.00196, -0.00392, 0.00784]]],
     {"scale": 1.0 / 255, "offset": 0.0}),
    ("Rescaling", {"scale": 2.0, "offset": -1.0}, [[[1.0, -5.0, 5.0], [0.0, -3.0, 3.0]]],
     {"scale": 2.0, "offset": -1.0}),
]


@pytest.mark.parametrize("cls_name,kwargs,want,extra", CASES)
def test_outputs_shapes_and_configs(cls_name, kwargs, want, extra):
    cls = getattr(L, cls_name)
    layer = cls(**kwargs)
    y = layer(X)
    rtol, atol = TOLERANCE[("float32", "transcendental")]
    # the recorded outputs are rounded to 5 places: half a unit there on top of the table
    np.testing.assert_allclose(y.numpy(), want, rtol=rtol, atol=atol + 5e-6)
    config = layer.get_config()
    assert {k: v for k, v in config.items() if k not in ("name", "trainable", "dtype")} == extra
    assert list(config)[:3] == ["name", "trainable", "dtype"]
    sym = cls(**kwargs)(keras.Input((2, 3)))
    assert sym.shape.as_list() == [None] + list(y.shape)[1:]
    assert type(cls.from_config(config)) is cls


def test_repeat_vector_permute_errors_and_mixed_policy():
    out = L.RepeatVector(3)(X[:, 0])
    assert out.numpy().tolist() == [[[1.0, -2.0, 3.0]] * 3]
    assert L.RepeatVector(3)(keras.Input((4,))).shape.as_list() == [None, 3, 4]
    assert L.RepeatVector(3).get_config()["n"] == 3
    with pytest.raises(ValueError, match=r"^Invalid permutation argument `dims` for Permute "
                                         r"Layer\. The set of indices in `dims` must be "
                                         r"consecutive and start from 1\. Received "
                                         r"dims=\(1, 3\)$"):
        L.Permute((1, 3))
    mixed_precision.set_global_policy("mixed_float16")
    try:
        for layer in (L.Softmax(), L.LeakyReLU(), L.Rescaling(0.5), L.Permute((2, 1)),
                      L.Identity()):
            assert layer(X).dtype == tf.float16
    finally:
        mixed_precision.set_global_policy("float32")


def test_softmax_layer_output_keeps_its_logits():
    sm = L.Softmax()(tf.constant([[1.0, 2.0, 30.0], [0.0, 0.0, -5.0]]))
    rtol, atol = TOLERANCE[("float32", "reduction")]
    np.testing.assert_allclose(
        float(keras.losses.SparseCategoricalCrossentropy()(np.array([0, 2]), sm)),
        17.348255157470703, rtol=rtol, atol=atol)
