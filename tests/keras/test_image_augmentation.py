"""The geometric augmentation layers (RandomRotation, RandomZoom, RandomTranslation,
RandomHeight, RandomWidth) and the projective transform under them, against TensorFlow 2.21
(golden/tf_image_transform.npz, written by golden/make_tf_image_transform.py): the op's values
for every fill mode x interpolation x dtype, tf-keras' transform matrices, the layers'
configs and output shapes; identity outside training, shapes/dtypes, seeds."""

import json
import os

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec._image_transform import (
    get_rotation_matrix, get_translation_matrix, get_zoom_matrix, transform)
from mixprec.testing.tolerances import assert_close

L = keras.layers
G = np.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden",
                         "tf_image_transform.npz"))
META = json.loads(G["meta"].tobytes())
FILLS = ("reflect", "wrap", "constant", "nearest")


@pytest.mark.parametrize("fill", FILLS)
@pytest.mark.parametrize("interp", ["nearest", "bilinear"])
@pytest.mark.parametrize("dt", ["float32", "float16", "float64"])
def test_transform_matches_tensorflow(fill, interp, dt):
    """The same float32 formulas as TensorFlow's kernel: equal bit for bit."""
    x = tf.cast(tf.constant(G["images"]), dt)
    got = transform(x, G["transforms"], fill, -1.5, interp)
    assert got.dtype == tf.as_dtype(dt)
    want = G["out_%s_%s_%s" % (fill.upper(), interp.upper(), dt)]
    assert_close(got, want, dt, "exact")


@pytest.mark.parametrize("fill", FILLS)
@pytest.mark.parametrize("interp", ["nearest", "bilinear"])
def test_projective_and_output_shape_match_tensorflow(fill, interp):
    got = transform(G["images"], G["projective"], fill, 2.0, interp, output_shape=[5, 9])
    assert_close(got, G["proj_%s_%s" % (fill.upper(), interp.upper())], "float32", "exact")


@pytest.mark.parametrize("fill,interp", [("reflect", "bilinear"), ("constant", "nearest")])
def test_gradient_is_tensorflows(fill, interp):
    """TensorFlow's rule: dy warped back by the inverse transforms (not the exact adjoint)."""
    x = tf.constant(G["images"])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = transform(x, G["transforms"], fill, 0.5, interp)
    g = tape.gradient(y, x, output_gradients=tf.constant(G["grad_w"]))
    assert_close(g, G["grad_%s_%s" % (fill.upper(), interp.upper())], "float32", "matmul")


def test_shared_transform_integers_and_matrices():
    assert_close(transform(G["images"], G["transforms"][1:2]), G["shared"], "float32", "exact")
    u8 = transform(tf.cast(tf.abs(tf.constant(G["images"])) * 20, tf.uint8), G["transforms"])
    assert u8.dtype == tf.uint8
    np.testing.assert_array_equal(u8.numpy(), G["uint8"])
    assert_close(get_rotation_matrix(np.array([0.3, -1.2, 2.5], "float32"), 7.0, 6.0),
                 G["rotation_matrix"], "float32", "transcendental")
    assert_close(get_zoom_matrix(np.array([[0.8, 1.3], [1.1, 0.7], [1.0, 1.0]], "float32"),
                                 7.0, 6.0), G["zoom_matrix"], "float32", "exact")
    assert_close(get_translation_matrix(np.array([[1.5, -2.0], [0.0, 3.2], [-4.4, 0.1]],
                                                 "float32")),
                 G["translation_matrix"], "float32", "exact")
    with pytest.raises(NotImplementedError, match="fill_mode"):
        transform(G["images"], G["transforms"], fill_mode="mirror")
    with pytest.raises(NotImplementedError, match="interpolation"):
        transform(G["images"], G["transforms"], interpolation="bicubic")
    with pytest.raises(TypeError, match="float32"):
        transform(G["images"], tf.constant(G["transforms"].astype("float64")))


def _layers():
    return {
        "RandomRotation": L.RandomRotation(0.2, seed=3),
        "RandomZoom": L.RandomZoom((-0.2, 0.3), width_factor=0.1, fill_mode="constant",
                                   fill_value=1.0),
        "RandomTranslation": L.RandomTranslation(0.1, (-0.2, 0.2), interpolation="nearest",
                                                 seed=1),
        "RandomHeight": L.RandomHeight(0.2, seed=5),
        "RandomWidth": L.RandomWidth((-0.1, 0.4), interpolation="nearest"),
    }


def test_configs_and_output_shapes_match_tf_keras():
    keras.backend.clear_session()
    for name, layer in _layers().items():
        got = json.loads(json.dumps(layer.get_config()))
        assert got == META["configs"][name], name
        again = type(layer).from_config(layer.get_config())
        assert json.loads(json.dumps(again.get_config())) == got
    for name, shape in META["shapes"].items():
        model = keras.Sequential([keras.Input((8, 9, 3)), getattr(L, name)(0.2)])
        assert list(model.output_shape) == shape, name


@pytest.mark.parametrize("name", ["RandomRotation", "RandomZoom", "RandomTranslation",
                                  "RandomHeight", "RandomWidth"])
def test_identity_outside_training_and_shapes_in_training(name):
    layer = _layers()[name]
    x = np.random.default_rng(0).random((4, 8, 9, 3)).astype("float32") * 255
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
    y = layer(x, training=True)
    assert y.dtype == tf.float32
    if name == "RandomHeight":
        assert y.shape[0] == 4 and y.shape[2:] == (9, 3) and 6 <= y.shape[1] <= 9
    elif name == "RandomWidth":
        assert y.shape[:2] == (4, 8) and y.shape[3] == 3 and 8 <= y.shape[2] <= 12
    else:
        assert y.shape == x.shape
        assert not np.array_equal(y.numpy(), x)
    # an unbatched image and integer pixels (cast to the compute dtype, as tf-keras)
    y3 = layer(x[0].astype("uint8"), training=True)
    assert y3.dtype == tf.float32 and y3.shape.rank == 3
    assert layer(x[0].astype("uint8"), training=False).dtype == tf.float32


def test_values_per_image_and_seeded_repeatability():
    x = np.tile(np.arange(9, dtype="float32")[None, None, :, None], (6, 8, 1, 1))
    y = L.RandomTranslation(0.0, 0.4, fill_mode="constant")(x, training=True).numpy()
    assert len({y[i].tobytes() for i in range(6)}) > 1  # a draw per image
    # a rotation by exactly 180 degrees (factor (0.5, 0.5)) flips both axes
    img = np.random.default_rng(1).random((2, 5, 7, 1)).astype("float32")
    rot = L.RandomRotation((0.5, 0.5), interpolation="nearest")(img, training=True).numpy()
    np.testing.assert_allclose(rot, img[:, ::-1, ::-1], atol=1e-6)
    # zoom 1 + 0 is the identity; a translation by whole pixels shifts
    np.testing.assert_array_equal(L.RandomZoom((0.0, 0.0))(img, training=True).numpy(), img)
    tf.random.set_seed(5)
    a = L.RandomRotation(0.3, seed=7)(img, training=True).numpy()
    tf.random.set_seed(5)
    b = L.RandomRotation(0.3, seed=7)(img, training=True).numpy()
    np.testing.assert_array_equal(a, b)


def test_argument_errors_as_tf_keras():
    with pytest.raises(ValueError, match="cannot have a negative value"):
        L.RandomRotation((0.3, 0.1))
    with pytest.raises(NotImplementedError, match="Unknown `fill_mode`"):
        L.RandomRotation(0.1, fill_mode="mirror")
    with pytest.raises(NotImplementedError, match="Unknown `interpolation`"):
        L.RandomZoom(0.1, interpolation="bicubic")
    with pytest.raises(ValueError, match=r"between \[-1, 1\]"):
        L.RandomZoom(1.5)
    with pytest.raises(ValueError, match="larger than -1"):
        L.RandomZoom(0.1, width_factor=(-1.5, 0.0))
    with pytest.raises(ValueError, match=r"between \[-1, 1\]"):
        L.RandomTranslation(1.2, 0.1)
    with pytest.raises(ValueError, match="upper bound less than lower bound"):
        L.RandomTranslation(0.1, (0.2, -0.2))
    with pytest.raises(ValueError, match="larger than -1"):
        L.RandomHeight((-1.5, 0.2))
    with pytest.raises(ValueError, match="can only process a tensor"):
        L.RandomRotation(0.1)({"images": np.zeros((1, 4, 4, 3))})


def test_augmentation_in_a_mixed_float16_fit():
    keras.backend.clear_session()
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = keras.Sequential([
            keras.Input((8, 9, 3)), L.RandomRotation(0.1, seed=1), L.RandomZoom(0.1),
            L.RandomTranslation(0.1, 0.1, fill_mode="nearest"), L.Flatten(), L.Dense(2)])
        assert model.layers[0].compute_dtype == "float16"
        out = model(np.zeros((2, 8, 9, 3), "float32"), training=True)
        assert out.dtype == tf.float16
        model.compile(optimizer="sgd",
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        x = np.random.default_rng(2).random((8, 8, 9, 3)).astype("float32")
        hist = model.fit(x, np.arange(8) % 2, epochs=1, verbose=0)
        assert np.isfinite(hist.history["loss"][0])
        np.testing.assert_array_equal(model.predict(x[:2], verbose=0),
                                      model.predict(x[:2], verbose=0))
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_experimental_preprocessing_namespace():
    assert L.experimental.preprocessing.RandomRotation is L.RandomRotation
    assert L.experimental.preprocessing.RandomFlip is L.RandomFlip
