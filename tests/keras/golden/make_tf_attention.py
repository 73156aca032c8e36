"""Writes tf_attention.npz: tf-keras 2.21's attention layers (attention_cases.py) on fixed
inputs and weights: outputs, gradients of sum(outputs * R) with respect to the first input
and the weights, weight names; for tests/keras/test_attention.py. Not run by the tests (it
needs TensorFlow): ``pip install tensorflow-cpu==2.21.* tf-keras==2.21.*`` in a separate
environment, then ``python tests/keras/golden/make_tf_attention.py``."""

import os
import sys

os.environ["TF_USE_LEGACY_KERAS"] = "1"

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from attention_cases import CASES, data, weights_for  # noqa: E402


def main():
    d = data(np.random.default_rng(5))
    out = {}
    for name, (src, call) in CASES.items():
        lay = eval(src, {"L": keras.layers})
        scope = {k: tf.constant(v) for k, v in d.items()}
        scope["lay"] = lay
        eval(call, scope)
        lay.set_weights(weights_for(lay, np.random.default_rng(sum(map(ord, name)))))
        first = "Q4" if "Q4" in call else "Q"
        x = tf.Variable(d[first])
        scope[first] = x
        with tf.GradientTape() as tape:
            ys = tf.nest.flatten(eval(call, scope))
            loss = 0.0
            for i, t in enumerate(ys):
                r = np.random.default_rng(50 + i).standard_normal(t.shape).astype("float32")
                loss += tf.reduce_sum(t * r)
        grads = tape.gradient(loss, [x] + lay.weights)
        for i, t in enumerate(ys):
            out["%s/out%d" % (name, i)] = t.numpy()
        for i, g in enumerate(grads):
            out["%s/grad%d" % (name, i)] = g.numpy()
        out["%s/names" % name] = np.array([w.name for w in lay.weights])
    np.savez(os.path.join(HERE, "tf_attention.npz"), **out)
    print("wrote %d arrays" % len(out))


if __name__ == "__main__":
    main()
