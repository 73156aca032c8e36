"""Preprocessing layers (Normalization, Discretization, CategoryEncoding, Resizing,
CenterCrop, RandomFlip, RandomCrop, RandomBrightness, RandomContrast) against results and
configs recorded from tf-keras 2.21 on the same calls."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.testing.tolerances import TOLERANCE

L = keras.layers
RTOL, ATOL = TOLERANCE[("float32", "reduction")]
X = np.arange(12, dtype="float32").reshape(4, 3)


def test_normalization_adapt_weights_and_config():
    n = L.Normalization()
    n.adapt(X)
    assert [(w.name, tuple(w.shape), w.dtype.name, w.trainable) for w in n.weights] == [
        ("mean:0", (3,), "float32", False), ("variance:0", (3,), "float32", False),
        ("count:0", (), "int64", False)]
    np.testing.assert_allclose(n(X).numpy()[:2], [[-1.3416408] * 3, [-0.4472136] * 3],
                               rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(n.mean.numpy(), [[4.5, 5.5, 6.5]], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(n.variance.numpy(), [[11.25] * 3], rtol=RTOL, atol=ATOL)
    assert int(n.count.numpy()) == 4
    assert n.get_config() | {"name": "x"} == {"name": "x", "trainable": True, "dtype": "float32",
                                               "axis": (-1,), "invert": False, "mean": None,
                                               "variance": None}
    # batch by batch (a Dataset) gives the same statistics
    n3 = L.Normalization(axis=(1,))
    n3.adapt(tf.data.Dataset.from_tensor_slices(X).batch(3))
    np.testing.assert_allclose(n3.mean.numpy(), [[4.5, 5.5, 6.5]], rtol=RTOL, atol=ATOL)


def test_normalization_given_statistics_and_invert():
    n = L.Normalization(axis=None, mean=2.0, variance=4.0)
    np.testing.assert_allclose(n(X).numpy()[0], [-1.0, -0.5, 0.0])
    assert n.weights == [] and n.get_config()["mean"] == 2.0 and n.get_config()["axis"] == ()
    inv = L.Normalization(axis=None, mean=2.0, variance=4.0, invert=True)
    np.testing.assert_allclose(inv(n(X)).numpy(), X, rtol=RTOL, atol=ATOL)
    with pytest.raises(ValueError, match="both `mean` and `variance`"):
        L.Normalization(mean=1.0)
    with pytest.raises(ValueError, match="Cannot `adapt`"):
        n.adapt(X)


def test_normalization_in_a_trained_model_and_mixed_float16():
    norm = L.Normalization()
    norm.adapt(X)
    model = keras.Sequential([keras.Input((3,)), norm, L.Dense(1)])
    model.compile("sgd", "mse")
    model.fit(X, np.ones((4, 1)), epochs=2, verbose=0)
    assert int(norm.count.numpy()) == 4  # not trained
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        n = L.Normalization()
        n.adapt(X)
        assert n(X).dtype == tf.float16 and n.weights[0].dtype == tf.float32
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_discretization_and_category_encoding():
    d = L.Discretization(bin_boundaries=[0.0, 1.0, 2.0])
    assert d(np.array([[-1.0, 0.0, 0.5, 1.0, 2.5]])).numpy().tolist() == [[0, 1, 1, 2, 3]]
    assert d.get_config()["dtype"] == "int64"
    oh = L.Discretization(bin_boundaries=[0.5], output_mode="one_hot")(np.array([0.1, 0.9]))
    assert oh.numpy().tolist() == [[1.0, 0.0], [0.0, 1.0]]
    adapted = L.Discretization(num_bins=3)
    adapted.adapt(np.arange(10.0)[:, None])  # tf-keras' boundaries (test_discretization_adapt)
    assert len(adapted.bin_boundaries) == 2
    ce = L.CategoryEncoding(num_tokens=4, output_mode="count")
    assert ce(np.array([[0, 1, 1, 3]])).numpy().tolist() == [[1.0, 2.0, 0.0, 1.0]]
    assert L.CategoryEncoding(4, output_mode="one_hot")(np.array([0, 2])).numpy().tolist() == \
        [[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]
    assert L.CategoryEncoding(4)(np.array([[0, 1, 1], [3, 3, 2]])).numpy().tolist() == \
        [[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]]
    with pytest.raises(tf.errors.InvalidArgumentError, match="num_tokens=4"):
        L.CategoryEncoding(4)(np.array([[0, 4]]))


def test_image_layers():
    assert L.Resizing(3, 4)(np.ones((2, 5, 5, 1))).shape == (2, 3, 4, 1)
    crop = L.CenterCrop(2, 3)(np.arange(16.0).reshape(1, 4, 4, 1)).numpy()[..., 0]
    assert crop.tolist() == [[[4.0, 5.0, 6.0], [8.0, 9.0, 10.0]]]
    img = np.random.default_rng(0).random((2, 6, 6, 3)).astype("float32") * 255
    for layer in (L.RandomFlip(), L.RandomCrop(4, 4), L.RandomBrightness(0.2),
                  L.RandomContrast(0.3)):
        inference = layer(img, training=False).numpy()
        if isinstance(layer, L.RandomCrop):
            np.testing.assert_array_equal(inference, img[:, 1:5, 1:5])
        else:
            np.testing.assert_array_equal(inference, img)
        trained = layer(img, training=True).numpy()
        assert trained.shape == inference.shape and np.isfinite(trained).all()
    out = L.RandomBrightness((0.1, 0.1), value_range=(0, 255))(img, training=True).numpy()
    np.testing.assert_allclose(out, np.minimum(img + 25.5, 255.0), rtol=RTOL, atol=1e-3)
    with pytest.raises(ValueError, match="unknown mode"):
        L.RandomFlip("diagonal")
    with pytest.raises(ValueError, match=r"\[-1.0, 1.0\]"):
        L.RandomBrightness(2.0)
    assert L.RandomFlip().get_config() | {"name": "x"} == {
        "name": "x", "trainable": True, "dtype": "float32", "rng_type": "stateful",
        "mode": "horizontal_and_vertical", "seed": None}
