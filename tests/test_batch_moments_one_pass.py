"""BatchMoments (tf.nn.moments over all axes but the channels) of float32/float16 data in one
read of x (cpu_norm.c: float64 sums of x - K and (x - K)^2, K the channel's first value)
against float64 NumPy and against the two-read kernel: within the reduction row, also for
data far from zero (where a plain sum of squares would cancel), and inf/NaN exactly as the
two reads give them."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import _core
from tolerances import assert_close


def _moments(x, axes, two_pass):
    prev = _core.batch_moments_two_pass(two_pass)
    try:
        return tf.nn.moments(x, axes)
    finally:
        _core.batch_moments_two_pass(prev)


@pytest.mark.parametrize("dt", ["float32", "float16"])
@pytest.mark.parametrize("layout", ["last", "first"])
@pytest.mark.parametrize("offset", [0.0, 1e3, -3e4])
def test_one_pass_moments_match_float64(dt, layout, offset):
    rng = np.random.default_rng(5)
    shape, axes = ((6, 7, 5, 9), [0, 1, 2]) if layout == "last" else ((6, 9, 7, 5), [0, 2, 3])
    if dt == "float16":  # within float16's range: variance below 65504
        offset /= 100.0
    scale = 1.0
    x = (offset + scale * rng.standard_normal(shape)).astype(dt)
    with tf.device("CPU:0"):
        m, v = _moments(tf.constant(x), axes, False)
        m2, v2 = _moments(tf.constant(x), axes, True)
    x64 = x.astype(np.float64)
    want_m, want_v = x64.mean(axis=tuple(axes)), x64.var(axis=tuple(axes))
    assert_close(m, want_m.astype(dt), dt, "reduction")
    assert_close(v, want_v.astype(dt), dt, "reduction")
    assert_close(m, m2.numpy(), dt, "reduction")
    assert_close(v, v2.numpy(), dt, "reduction")
    assert (np.asarray(v.numpy(), np.float64) >= 0).all()


def test_one_pass_moments_keep_the_two_reads_inf_and_nan():
    x = np.ones((4, 3, 3, 3), np.float32)
    x[0, 0, 0, 0] = np.inf  # the channel's first value (the shift) is inf
    x[1, 1, 1, 1] = np.inf
    x[2, 2, 2, 2] = np.nan
    with tf.device("CPU:0"):
        one = _moments(tf.constant(x), [0, 1, 2], False)
        two = _moments(tf.constant(x), [0, 1, 2], True)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert np.isinf(one[0].numpy()[0]) and np.isnan(one[1].numpy()[0])
    assert np.isnan(one[0].numpy()[2])


def test_one_pass_moments_gradient_is_unchanged():
    rng = np.random.default_rng(2)
    x = tf.constant(rng.standard_normal((5, 4, 4, 6)).astype(np.float32) + 3.0)
    grads = []
    for two_pass in (False, True):
        with tf.GradientTape() as tape:
            tape.watch(x)
            m, v = _moments(x, [0, 1, 2], two_pass)
            loss = tf.reduce_sum(m * m) + tf.reduce_sum(v * tf.constant(np.arange(6, dtype=np.float32)))
        grads.append(tape.gradient(loss, x).numpy())
    assert_close(grads[0], grads[1], "float32", "backprop")
