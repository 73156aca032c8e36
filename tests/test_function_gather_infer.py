"""Graph passes re-infer dtypes: ops whose inputs mix a float tensor with integer indices
(tf.gather, its gradient, x[i] with a traced index) must pass that check (regression: a
traced Keras step with a gather in its metric failed in the fusion pass)."""

import numpy as np

import mixprec as tf
from mixprec import _core


def test_gather_and_its_gradient_trace_through_the_graph_passes():
    w = tf.Variable(np.arange(12, dtype="float32").reshape(4, 3))

    @tf.function
    def f(ids):
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(tf.gather(w, ids) * 2.0)
        g = tape.gradient(y, w)
        return y, g, _core.gather_grad(tf.ones([3]), ids, 0, 5)

    for ids in ([0, 2, 2], [3, 1, 0]):
        y, g, s = f(tf.constant(ids))
        want = np.zeros((4, 3), "float32")
        for i in ids:
            want[i] += 2.0
        np.testing.assert_array_equal(g.numpy(), want)
        assert float(y) == float(2 * np.arange(12).reshape(4, 3)[ids].sum())
        np.testing.assert_array_equal(s.numpy(), np.bincount(ids, minlength=5))
