"""Writes tf_image_transform.npz: TensorFlow 2.21's ImageProjectiveTransformV3 on fixed
images/transforms for every fill mode x interpolation x dtype (and a projective, a shared
transform and an output-size case), its gradient, the transform matrices tf-keras' get_rotation_matrix /
get_zoom_matrix / get_translation_matrix build, and the configs of the augmentation layers.
For tests/keras/test_image_augmentation.py. Not run by the tests (it needs TensorFlow):
``python tests/keras/golden/make_tf_image_transform.py`` with tensorflow 2.21 and tf-keras 2.21."""

import json
import os

os.environ["TF_USE_LEGACY_KERAS"] = "1"

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402
from tf_keras.src.layers.preprocessing import image_preprocessing as ip  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def inputs():
    rng = np.random.default_rng(11)
    images = rng.standard_normal((3, 7, 6, 2)).astype("float32") * 4
    # affine transforms with rotations, scales and shifts that reach far outside the image
    t = np.zeros((3, 8), "float32")
    for i, (ang, zx, zy, dx, dy) in enumerate([(0.4, 1.3, 0.8, 2.5, -3.2),
                                                (-2.0, 0.6, 1.7, -9.3, 14.7),
                                                (3.0, 2.9, 3.3, 20.1, -25.6)]):
        c, s = np.cos(ang), np.sin(ang)
        t[i, :6] = [c * zx, -s * zx, dx, s * zy, c * zy, dy]
    proj = t.copy()
    proj[:, 6:] = [[0.05, -0.02], [0.01, 0.03], [-0.04, 0.02]]
    return images, t, proj


def main():
    images, t, proj = inputs()
    out = {"images": images, "transforms": t, "projective": proj}
    op = tf.raw_ops.ImageProjectiveTransformV3
    for fill in ("REFLECT", "WRAP", "CONSTANT", "NEAREST"):
        for interp in ("NEAREST", "BILINEAR"):
            for dt in ("float32", "float16", "float64"):
                y = op(images=tf.cast(images, dt), transforms=t, output_shape=[7, 6],
                       fill_value=-1.5, interpolation=interp, fill_mode=fill)
                out["out_%s_%s_%s" % (fill, interp, dt)] = y.numpy()
            y = op(images=images, transforms=proj, output_shape=[5, 9], fill_value=2.0,
                   interpolation=interp, fill_mode=fill)
            out["proj_%s_%s" % (fill, interp)] = y.numpy()
    out["shared"] = op(images=images, transforms=t[1:2], output_shape=[7, 6], fill_value=0.0,
                       interpolation="BILINEAR", fill_mode="REFLECT").numpy()
    out["uint8"] = op(images=tf.cast(tf.abs(images) * 20, tf.uint8), transforms=t,
                      output_shape=[7, 6], fill_value=0.0, interpolation="BILINEAR",
                      fill_mode="REFLECT").numpy()
    # TensorFlow's gradient (the inverse transform of dy) of sum(y * w)
    w = np.random.default_rng(12).standard_normal((3, 7, 6, 2)).astype("float32")
    for fill, interp in (("REFLECT", "BILINEAR"), ("CONSTANT", "NEAREST")):
        x = tf.constant(images)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = op(images=x, transforms=t, output_shape=[7, 6], fill_value=0.5,
                   interpolation=interp, fill_mode=fill)
        out["grad_%s_%s" % (fill, interp)] = tape.gradient(y, x, output_gradients=w).numpy()
    out["grad_w"] = w
    angles = np.array([0.3, -1.2, 2.5], "float32")
    out["rotation_matrix"] = ip.get_rotation_matrix(angles, 7.0, 6.0).numpy()
    zooms = np.array([[0.8, 1.3], [1.1, 0.7], [1.0, 1.0]], "float32")
    out["zoom_matrix"] = ip.get_zoom_matrix(zooms, 7.0, 6.0).numpy()
    tr = np.array([[1.5, -2.0], [0.0, 3.2], [-4.4, 0.1]], "float32")
    out["translation_matrix"] = ip.get_translation_matrix(tr).numpy()
    L = keras.layers
    configs = {
        "RandomRotation": L.RandomRotation(0.2, seed=3).get_config(),
        "RandomZoom": L.RandomZoom((-0.2, 0.3), width_factor=0.1, fill_mode="constant",
                                   fill_value=1.0).get_config(),
        "RandomTranslation": L.RandomTranslation(0.1, (-0.2, 0.2), interpolation="nearest",
                                                 seed=1).get_config(),
        "RandomHeight": L.RandomHeight(0.2, seed=5).get_config(),
        "RandomWidth": L.RandomWidth((-0.1, 0.4), interpolation="nearest").get_config(),
    }
    shapes = {}
    for name, layer in [("RandomHeight", L.RandomHeight(0.2)), ("RandomWidth", L.RandomWidth(0.2)),
                        ("RandomRotation", L.RandomRotation(0.2))]:
        shapes[name] = [None if d is None else int(d) for d in
                        keras.Sequential([keras.Input((8, 9, 3)), layer]).output_shape]
    out["meta"] = np.frombuffer(json.dumps({"configs": configs, "shapes": shapes}).encode(),
                                dtype=np.uint8)
    np.savez_compressed(os.path.join(HERE, "tf_image_transform.npz"), **out)


if __name__ == "__main__":
    main()
