"""The replay plan of a traced step (csrc/graph.c): the unscale Muls of
get_unscaled_gradients folded into the optimizer step read the same bits as the eager
step, and a factor the fold cannot take exactly (a loss scale below 1) runs the recorded
Muls."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras

FOLDED = 8  # MP_GNODE_FLAG_FOLDED (csrc/graph.h)


def _step(opt, ws):
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(ws[0] * x)) + tf.reduce_sum(ws[1] * ws[1])
            scaled = opt.get_scaled_loss(loss)
        grads = opt.get_unscaled_gradients(tape.gradient(scaled, ws))
        opt.apply_gradients(zip(grads, ws))
        return loss
    return step


def _run(traced, make_opt, xs):
    ws = [tf.Variable(np.linspace(-1, 1, 37).astype(np.float32)),
          tf.Variable(np.float32(0.5))]
    opt = make_opt()
    step = _step(opt, ws)
    fn = tf.function(step) if traced else step
    losses = [float(fn(tf.constant(x))) for x in xs]
    return fn, losses, [w.numpy() for w in ws], float(opt.loss_scale)


@pytest.mark.parametrize("make_opt", [
    lambda: keras.mixed_precision.LossScaleOptimizer(keras.optimizers.RMSprop(0.01)),
    lambda: keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.1, momentum=0.9),
                                                     dynamic=False, initial_scale=64.0),
], ids=["dynamic", "fixed"])
def test_folded_unscale_replays_the_eager_bits(make_opt):
    xs = [np.full(37, v, np.float32) for v in (1.0, 0.5, np.inf, 2.0, 1.0)]
    fn, *traced = _run(True, make_opt, xs)
    _, *eager = _run(False, make_opt, xs)
    np.testing.assert_array_equal(traced[0], eager[0])  # losses (NaN where x is inf)
    assert traced[2] == eager[2]
    for a, b in zip(traced[1], eager[1]):
        np.testing.assert_array_equal(a, b)
    nodes = fn.get_concrete_function(tf.constant(xs[0])).graph.nodes()
    folded = [n for n in nodes if n["flags"] & FOLDED]
    if "CPU" in tf.constant(1.0).device:  # the fold is planned for CPU steps only
        assert len(folded) == 2 and all(n["op"] == "Mul" for n in folded)
    else:
        assert not folded


def test_scale_below_one_runs_the_muls():
    # mixprec's min_loss_scale below 1: 1 / scale = 4, a finite scaled gradient of ~1e38
    # unscales to inf, so the step must be skipped (a fold would have checked the finite
    # 1e38 and applied inf)
    def make_opt():
        return keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(1e-3),
                                                        initial_scale=0.25, min_loss_scale=0.25)
    xs = [np.full(37, v, np.float32) for v in (1.0, 1.5e19, 1.0)]
    _, *traced = _run(True, make_opt, xs)
    _, *eager = _run(False, make_opt, xs)
    np.testing.assert_array_equal(traced[0], eager[0])
    assert np.isfinite(eager[1][0]).all()  # the 1.5e19 step was skipped: finite weights
    for a, b in zip(traced[1], eager[1]):
        np.testing.assert_array_equal(a, b)
