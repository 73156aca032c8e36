"""tf.image against TensorFlow 2.21 on the same images (golden/tf_image.npz, written by
golden/make_tf_image.py): resizing, flips, rotations, crops, pads, colour, brightness,
contrast, standardization, dtype conversion, gradients; plus gradients through resize,
the random augmentations' contracts and errors."""

import os
import sys

import numpy as np
import pytest

import mixprec as tf
from mixprec.testing.tolerances import TOLERANCE

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
sys.path.insert(0, HERE)
from image_cases import CASES, data  # noqa: E402

GOLD = np.load(os.path.join(HERE, "tf_image.npz"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tensorflow(name):
    scope = {k: tf.constant(v) for k, v in data(np.random.default_rng(9)).items()}
    scope["I"] = tf.image
    got = eval(CASES[name], scope).numpy()
    want = GOLD[name]
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype)
    if got.dtype.kind == "f":
        rtol, atol = TOLERANCE[("float32", "reduction")]
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    else:  # integer images: TF rounds once; allow one step where it rounds a float result
        assert np.abs(got.astype(np.int64) - want.astype(np.int64)).max() <= 1


def test_resize_gradient_is_the_transposed_linear_map():
    # resize is linear in the image: its gradient is A^T r, A from resizing each unit image
    rng = np.random.default_rng(0)
    shape, out = (1, 3, 4, 2), (5, 3)
    r = rng.standard_normal((1, 5, 3, 2))
    n = int(np.prod(shape))
    cols = [tf.image.resize(tf.constant(np.eye(n, dtype="float32")[i].reshape(shape)),
                            out).numpy().ravel() for i in range(n)]
    want = (np.array(cols, dtype=np.float64) @ r.ravel()).reshape(shape)
    x = tf.Variable(rng.standard_normal(shape).astype("float32"))
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.image.resize(x, out) * r.astype("float32"))
    rtol, atol = TOLERANCE[("float32", "reduction")]
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), want, rtol=rtol, atol=atol)


def test_random_augmentations():
    img = tf.constant(np.arange(2 * 3 * 4 * 1, dtype="float32").reshape(2, 3, 4, 1))
    out = tf.image.random_flip_left_right(img, seed=1).numpy()
    for i in range(2):
        assert (np.array_equal(out[i], img.numpy()[i]) or
                np.array_equal(out[i], img.numpy()[i, :, ::-1]))
    if hasattr(tf.random, "stateless_uniform"):
        a = tf.image.stateless_random_flip_up_down(img, seed=(1, 2)).numpy()
        np.testing.assert_array_equal(a, tf.image.stateless_random_flip_up_down(img,
                                                                                seed=(1, 2)))
    crop = tf.image.random_crop(img, (2, 2, 3, 1)).numpy()
    assert crop.shape == (2, 2, 3, 1)
    b = tf.image.random_brightness(img, 0.5).numpy() - img.numpy()
    assert np.ptp(b) < 1e-5 and abs(b.flat[0]) <= 0.5
    with pytest.raises(ValueError, match="non-negative"):
        tf.image.random_brightness(img, -1.0)
    with pytest.raises(ValueError, match="upper must be > lower"):
        tf.image.random_contrast(img, 0.5, 0.2)


def test_errors():
    with pytest.raises(ValueError, match="3 or 4 dimensions"):
        tf.image.resize(tf.ones([4, 4]), (2, 2))
    with pytest.raises(NotImplementedError, match="bicubic"):
        tf.image.resize(tf.ones([4, 4, 1]), (2, 2), method="bicubic")
    with pytest.raises(ValueError, match="target \\+ offset"):
        tf.image.crop_to_bounding_box(tf.ones([4, 4, 1]), 2, 0, 3, 2)
    with pytest.raises(ValueError, match="central_fraction"):
        tf.image.central_crop(tf.ones([4, 4, 1]), 0.0)
