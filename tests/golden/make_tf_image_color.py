"""Writes tf_image_color.npz: TensorFlow 2.21's tf.image colour conversions, hue/saturation/
gamma adjustments, Sobel edges, SSIM, extract_patches and crop_and_resize on fixed inputs; for
tests/test_image_color.py. Not run by the tests (it needs TensorFlow): ``pip install
tensorflow-cpu==2.21.*`` in a separate environment, then
``python tests/golden/make_tf_image_color.py``."""

import os

import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(1)
x = rng.random((2, 5, 6, 3)).astype("float32")
x[0, 0, 0] = [0.5, 0.5, 0.5]; x[0, 0, 1] = [0, 0, 0]; x[0, 0, 2] = [1, 0, 0]; x[0, 0, 3] = [0.2, 0.7, 0.7]
u8 = (rng.random((5, 6, 3)) * 255).astype("uint8")
out = {"x": x, "u8": u8}
out["hsv"] = tf.image.rgb_to_hsv(x).numpy()
out["rgb_back"] = tf.image.hsv_to_rgb(out["hsv"]).numpy()
for d in (0.1, -0.3, 0.75):
    out["hue_%s" % d] = tf.image.adjust_hue(x, d).numpy()
out["hue_u8"] = tf.image.adjust_hue(u8, 0.2).numpy()
for f in (0.0, 0.5, 2.0):
    out["sat_%s" % f] = tf.image.adjust_saturation(x, f).numpy()
out["sat_u8"] = tf.image.adjust_saturation(u8, 1.7).numpy()
out["gamma"] = tf.image.adjust_gamma(x, 2.2, 0.9).numpy()
out["gamma_u8"] = tf.image.adjust_gamma(u8, 0.5).numpy()
out["yiq"] = tf.image.rgb_to_yiq(x).numpy(); out["yiq_back"] = tf.image.yiq_to_rgb(out["yiq"]).numpy()
out["yuv"] = tf.image.rgb_to_yuv(x).numpy(); out["yuv_back"] = tf.image.yuv_to_rgb(out["yuv"]).numpy()
out["sobel"] = tf.image.sobel_edges(tf.constant(x)).numpy()
y = np.clip(x + rng.normal(0, 0.05, x.shape).astype("float32"), 0, 1)
big = rng.random((2, 16, 16, 3)).astype("float32"); big2 = np.clip(big + 0.1 * rng.random(big.shape).astype("float32"), 0, 1)
out["big"], out["big2"] = big, big2
out["ssim"] = tf.image.ssim(big, big2, max_val=1.0).numpy()
out["ssim_k"] = tf.image.ssim(big, big2, max_val=1.0, filter_size=5, filter_sigma=1.0, k1=0.02, k2=0.04).numpy()
out["ssim_u8"] = tf.image.ssim((big*255).astype("uint8"), (big2*255).astype("uint8"), max_val=255).numpy()
out["patches"] = tf.image.extract_patches(x, sizes=[1, 2, 3, 1], strides=[1, 2, 2, 1], rates=[1, 1, 1, 1], padding="VALID").numpy()
out["patches_same"] = tf.image.extract_patches(x, sizes=[1, 3, 3, 1], strides=[1, 2, 3, 1], rates=[1, 1, 2, 1], padding="SAME").numpy()
boxes = np.array([[0.1, 0.2, 0.8, 0.9], [0.0, 0.0, 1.0, 1.0], [0.5, 0.6, 0.2, 0.1], [-0.2, -0.1, 1.2, 1.1]], "float32")
out["car"] = tf.image.crop_and_resize(x, boxes, [0, 1, 0, 1], [4, 3]).numpy()
out["car_1"] = tf.image.crop_and_resize(x, boxes[:2], [1, 0], [1, 1]).numpy()
out["car_n"] = tf.image.crop_and_resize(x, boxes, [0, 1, 0, 1], [4, 3], method="nearest", extrapolation_value=-1).numpy()
np.savez_compressed(os.path.join(HERE, "tf_image_color.npz"), **out)
