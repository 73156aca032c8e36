"""tf.image colour spaces and adjustments, Sobel edges, SSIM, extract_patches and
crop_and_resize against TensorFlow 2.21 (golden/tf_image_color.npz, written by
golden/make_tf_image_color.py)."""

import os

import numpy as np
import pytest

import mixprec as tf
from mixprec.testing.tolerances import TOLERANCE

GOLD = np.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden",
                            "tf_image_color.npz"))
X, U8 = GOLD["x"], GOLD["u8"]
BOXES = np.array([[0.1, 0.2, 0.8, 0.9], [0.0, 0.0, 1.0, 1.0], [0.5, 0.6, 0.2, 0.1],
                  [-0.2, -0.1, 1.2, 1.1]], "float32")

CASES = {
    "hsv": lambda: tf.image.rgb_to_hsv(X),
    "rgb_back": lambda: tf.image.hsv_to_rgb(GOLD["hsv"]),
    "hue_0.1": lambda: tf.image.adjust_hue(X, 0.1),
    "hue_-0.3": lambda: tf.image.adjust_hue(X, -0.3),
    "hue_0.75": lambda: tf.image.adjust_hue(X, 0.75),
    "hue_u8": lambda: tf.image.adjust_hue(U8, 0.2),
    "sat_0.0": lambda: tf.image.adjust_saturation(X, 0.0),
    "sat_0.5": lambda: tf.image.adjust_saturation(X, 0.5),
    "sat_2.0": lambda: tf.image.adjust_saturation(X, 2.0),
    "sat_u8": lambda: tf.image.adjust_saturation(U8, 1.7),
    "gamma": lambda: tf.image.adjust_gamma(X, 2.2, 0.9),
    "gamma_u8": lambda: tf.image.adjust_gamma(U8, 0.5),
    "yiq": lambda: tf.image.rgb_to_yiq(X),
    "yiq_back": lambda: tf.image.yiq_to_rgb(GOLD["yiq"]),
    "yuv": lambda: tf.image.rgb_to_yuv(X),
    "yuv_back": lambda: tf.image.yuv_to_rgb(GOLD["yuv"]),
    "sobel": lambda: tf.image.sobel_edges(X),
    "ssim": lambda: tf.image.ssim(GOLD["big"], GOLD["big2"], max_val=1.0),
    "ssim_k": lambda: tf.image.ssim(GOLD["big"], GOLD["big2"], max_val=1.0, filter_size=5,
                                    filter_sigma=1.0, k1=0.02, k2=0.04),
    "ssim_u8": lambda: tf.image.ssim((GOLD["big"] * 255).astype("uint8"),
                                     (GOLD["big2"] * 255).astype("uint8"), max_val=255),
    "patches": lambda: tf.image.extract_patches(X, sizes=[1, 2, 3, 1], strides=[1, 2, 2, 1],
                                                rates=[1, 1, 1, 1], padding="VALID"),
    "patches_same": lambda: tf.image.extract_patches(X, sizes=[1, 3, 3, 1],
                                                     strides=[1, 2, 3, 1],
                                                     rates=[1, 1, 2, 1], padding="SAME"),
    "car": lambda: tf.image.crop_and_resize(X, BOXES, [0, 1, 0, 1], [4, 3]),
    "car_1": lambda: tf.image.crop_and_resize(X, BOXES[:2], [1, 0], [1, 1]),
    "car_n": lambda: tf.image.crop_and_resize(X, BOXES, [0, 1, 0, 1], [4, 3],
                                              method="nearest", extrapolation_value=-1),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tensorflow(name):
    got, ref = CASES[name]().numpy(), GOLD[name]
    assert got.shape == ref.shape and got.dtype == ref.dtype
    if ref.dtype == np.uint8:
        np.testing.assert_array_equal(got, ref)
    else:
        # the same float32 formulas, a few roundings of values of order 1 apart at most
        # (saturation subtracts such values: an absolute error of a few ulps of 1)
        rtol, atol = TOLERANCE[("float32", "reduction")]
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)


def test_errors_and_random_forms():
    with pytest.raises(ValueError, match="3 channels"):
        tf.image.adjust_hue(np.zeros((2, 2, 4), np.float32), 0.1)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"delta must be in the interval"):
        tf.image.adjust_hue(X, 1.5)
    with pytest.raises(ValueError, match="Gamma should be a non-negative"):
        tf.image.adjust_gamma(X, -1.0)
    with pytest.raises(ValueError, match="max_delta must be <= 0.5"):
        tf.image.random_hue(X, 0.6)
    with pytest.raises(ValueError, match="upper must be > lower"):
        tf.image.random_saturation(X, 1.0, 0.5)
    a = tf.image.stateless_random_hue(X, 0.2, seed=(1, 2))
    b = tf.image.stateless_random_hue(X, 0.2, seed=(1, 2))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    s = tf.image.stateless_random_saturation(X, 0.5, 1.5, seed=(3, 4))
    assert s.shape == X.shape
    assert tf.image.random_hue(X, 0.1, seed=1).shape == X.shape
    with pytest.raises(tf.errors.InvalidArgumentError, match="at least 11x11"):
        tf.image.ssim(X, X, 1.0)


def test_crop_and_resize_traces_with_tensor_boxes():
    @tf.function
    def crops(boxes):
        return tf.image.crop_and_resize(X, boxes, [0, 1, 0, 1], [4, 3])
    np.testing.assert_array_equal(crops(tf.constant(BOXES)).numpy(), GOLD["car"])
    moved = BOXES.copy()
    moved[:, 0] += 0.05
    eager = tf.image.crop_and_resize(X, moved, [0, 1, 0, 1], [4, 3]).numpy()
    np.testing.assert_array_equal(crops(tf.constant(moved)).numpy(), eager)
