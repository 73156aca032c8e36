"""Writes tf_backend.npz: tf-keras 2.21's keras.backend functions on fixed data
(backend_cases.py), for tests/keras/test_backend_ops.py. Not run by the tests (it needs
TensorFlow): ``pip install tensorflow-cpu==2.21.* tf-keras==2.21.*`` in a separate
environment, then ``python tests/keras/golden/make_tf_backend.py``."""

import os
import sys

os.environ["TF_USE_LEGACY_KERAS"] = "1"

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from backend_cases import CASES, data  # noqa: E402


def main():
    scope = {k: tf.constant(v) for k, v in data(np.random.default_rng(3)).items()}
    scope["K"] = keras.backend
    out = {}
    for name, src in CASES.items():
        value = eval(src, scope)
        out[name] = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
    np.savez(os.path.join(HERE, "tf_backend.npz"), **out)
    print("wrote %d results" % len(out))


if __name__ == "__main__":
    main()
