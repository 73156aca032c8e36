"""Writes tf_rnn.npz: tf-keras 2.21's recurrent layers (rnn_cases.py) on fixed inputs and
weights: outputs, and the gradients of sum(outputs * R) with respect to the input and the
weights; for tests/keras/test_recurrent.py. Not run by the tests (it needs TensorFlow):
``pip install tensorflow-cpu==2.21.* tf-keras==2.21.*`` in a separate environment, then
``python tests/keras/golden/make_tf_rnn.py``."""

import os
import sys

os.environ["TF_USE_LEGACY_KERAS"] = "1"

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from rnn_cases import CASES, data, weights_for  # noqa: E402


def main():
    d = data(np.random.default_rng(11))
    out = {}
    for name, (src, kw) in CASES.items():
        rng = np.random.default_rng(sum(map(ord, name)))
        layer = eval(src, {"L": keras.layers})
        layer(tf.constant(d["X"]), **{k: (tf.constant(v) if not isinstance(v, list) else
                                          [tf.constant(a) for a in v])
                                      for k, v in eval(kw, d).items()})
        ws = weights_for(layer, rng)
        layer.set_weights(ws)
        x = tf.Variable(d["X"])
        with tf.GradientTape() as tape:
            kwargs = {k: (tf.constant(v) if not isinstance(v, list) else
                          [tf.constant(a) for a in v]) for k, v in eval(kw, d).items()}
            y = layer(x, **kwargs)
            ys = tf.nest.flatten(y)
            loss = 0.0
            for i, t in enumerate(ys):
                r = np.random.default_rng(100 + i).standard_normal(t.shape).astype("float32")
                loss += tf.reduce_sum(t * r)
        grads = tape.gradient(loss, [x] + layer.weights)
        for i, t in enumerate(ys):
            out["%s/out%d" % (name, i)] = t.numpy()
        for i, g in enumerate(grads):
            out["%s/grad%d" % (name, i)] = g.numpy()
        out["%s/names" % name] = np.array([w.name for w in layer.weights])
    np.savez(os.path.join(HERE, "tf_rnn.npz"), **out)
    print("wrote %d arrays" % len(out))


if __name__ == "__main__":
    main()
