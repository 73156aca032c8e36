"""Writes tf_layers.npz: the outputs, regularization losses and BatchNormalization
statistics of tf-keras 2.21's convolution, pooling, padding, ReLU and BatchNormalization
layers on fixed inputs and weights, for tests/keras/test_golden_tf.py. Not run by the
tests (it needs TensorFlow): ``pip install tensorflow-cpu==2.21.* tf-keras==2.21.*`` in a
separate environment, then ``python tests/keras/golden/make_tf_layers.py``."""

import os
import sys

os.environ["TF_USE_LEGACY_KERAS"] = "1"

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402

L = keras.layers
HERE = os.path.dirname(os.path.abspath(__file__))

sys.path.insert(0, HERE)
from cases import CASES  # noqa: E402


def main():
    rng = np.random.default_rng(0)
    data = {"x4": rng.standard_normal((4, 9, 8, 6)).astype("float32") * 2 + 1,
            "x3": rng.standard_normal((4, 10, 6)).astype("float32"),
            "x2": rng.standard_normal((16, 5)).astype("float32") * 3}
    out = dict(data)
    for name, (src, xname) in CASES.items():
        layer = eval(src)
        x = data[xname]
        layer.build(x.shape)
        wrng = np.random.default_rng(1)
        ws = [wrng.standard_normal(w.shape).astype("float32") * 0.3 for w in layer.get_weights()]
        layer.set_weights(ws)
        for i, w in enumerate(ws):
            out["%s_w%d" % (name, i)] = w
        out[name] = layer(x).numpy()
        out[name + "_losses"] = np.array([float(v) for v in layer.losses], "float64")
    for policy in ("float32", "mixed_float16"):
        keras.mixed_precision.set_global_policy(policy)
        for name, xname in (("bn4", "x4"), ("bn2", "x2")):
            bn = L.BatchNormalization(momentum=0.8)
            train = tf.cast(bn(data[xname], training=True), "float32").numpy()
            infer = tf.cast(bn(data[xname]), "float32").numpy()
            key = "%s_%s" % (name, policy)
            out[key + "_train"], out[key + "_infer"] = train, infer
            out[key + "_mean"] = bn.moving_mean.numpy()
            out[key + "_var"] = bn.moving_variance.numpy()
        keras.mixed_precision.set_global_policy("float32")
    out["versions"] = np.array([tf.__version__, keras.__version__])
    np.savez_compressed(os.path.join(HERE, "tf_layers.npz"), **out)


if __name__ == "__main__":
    main()
