"""Writes tf_image.npz: TensorFlow 2.21's tf.image functions on fixed images
(image_cases.py), for tests/test_image.py. Not run by the tests (it needs TensorFlow):
``pip install tensorflow-cpu==2.21.*`` in a separate environment, then
``python tests/golden/make_tf_image.py``."""

import os
import sys

import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from image_cases import CASES, data  # noqa: E402


def main():
    scope = {k: tf.constant(v) for k, v in data(np.random.default_rng(9)).items()}
    scope["I"] = tf.image
    out = {name: eval(src, scope).numpy() for name, src in CASES.items()}
    np.savez(os.path.join(HERE, "tf_image.npz"), **out)
    print("wrote %d results" % len(out))


if __name__ == "__main__":
    main()
