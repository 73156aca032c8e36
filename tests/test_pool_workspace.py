"""Max pooling's kept argmax workspace (ops_window.c, the pool_workspace slot): MaxPool run
where a gradient will be taken (a watching tape, a traced graph whose MaxPoolGrad reads it)
keeps oneDNN's workspace behind its output and MaxPoolGrad uses it instead of running the
forward again. The values must be the recomputing path's bit for bit (TensorFlow's NaN rules
included), inference must not keep one, and a MaxPoolGrad given another x must not use it."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import _core

OPS = {row[2]: row[0] for row in _core.op_table()}
# (shape, window, strides, padding, nchw)
CASES = [
    ((2, 9, 8, 5), (2, 2), (2, 2), "VALID", False),
    ((2, 9, 8, 5), (3, 3), (2, 2), "SAME", False),  # overlapping windows
    ((2, 5, 9, 8), (2, 3), (2, 1), "SAME", True),
]


def _x(shape, dt, rng, nan):
    x = rng.standard_normal(shape).astype(np.float32)
    if nan == "inner":  # NaN never beats a value
        x.reshape(-1)[rng.choice(x.size, x.size // 7, replace=False)] = np.nan
    elif nan == "leading":  # a window's first element NaN: TensorFlow's MaxPoolGrad gives it the gradient
        x[..., 0, 0] = np.nan
        x[:, 0, 0, ...] = np.nan
    return tf.cast(tf.constant(x), dt)


def _pool(x, k, s, padding, nchw):
    return tf.nn.max_pool2d(x, list(k), list(s), padding, data_format="NCHW" if nchw else "NHWC")


def _grad_recomputed(x, y, dy, k, s, padding, nchw):
    """MaxPoolGrad(x, y, dy) with a y that carries no workspace: the pool slot's path."""
    pads = (0, 0, 0, 0)
    return _core.window_op(OPS["max_pool_grad"], (x, y, dy), tuple(s), tuple(k), 1 if padding == "SAME" else 0,
                           pads, nchw, None)


def _bits(t):
    a = np.asarray(tf.cast(t, "float32").numpy())
    return a.view(np.uint32)


def _kept(dt, k, s):
    """Where the CPU keeps a workspace: float32 and bfloat16 through oneDNN, not the 16-bit
    overlapping windows whose backward is widened."""
    overlap = k[0] > s[0] or k[1] > s[1]
    return dt == "float32" or (dt == "bfloat16" and not overlap and "bf16" in _core.dnnl_info())


@pytest.mark.parametrize("dt", ["float32", "bfloat16", "float16", "float64"])
@pytest.mark.parametrize("nan", ["none", "inner", "leading"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_tape_gradient_from_the_kept_workspace_is_the_recomputed_one(dt, nan, case):
    shape, k, s, padding, nchw = CASES[case]
    rng = np.random.default_rng(case)
    with tf.device("CPU:0"):
        x = _x(shape, dt, rng, nan)
        y_inf = _pool(x, k, s, padding, nchw)
        dy = tf.cast(tf.constant(rng.standard_normal(y_inf.shape).astype(np.float32)), dt)
        before = _core.pool_workspace_uses()
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = _pool(x, k, s, padding, nchw)
        dx = tape.gradient(y, x, output_gradients=dy)
        used = _core.pool_workspace_uses() - before
        ref = _grad_recomputed(x, y_inf, dy, k, s, padding, nchw)
    np.testing.assert_array_equal(_bits(y), _bits(y_inf))  # forward_training == forward_inference
    np.testing.assert_array_equal(_bits(dx), _bits(ref))
    assert used == (1 if _kept(dt, k, s) else 0)


def test_inference_keeps_no_workspace_and_another_x_does_not_use_it():
    rng = np.random.default_rng(7)
    with tf.device("CPU:0"):
        x = _x((2, 8, 8, 4), "float32", rng, "none")
        y = _pool(x, (2, 2), (2, 2), "VALID", False)
        dy = tf.ones_like(y)
        before = _core.pool_workspace_uses()
        g0 = _grad_recomputed(x, y, dy, (2, 2), (2, 2), "VALID", False)  # y made without a tape
        assert _core.pool_workspace_uses() == before
        with tf.GradientTape() as tape:
            tape.watch(x)
            yk = _pool(x, (2, 2), (2, 2), "VALID", False)
        x2 = tf.constant(-x.numpy())  # another x: the kept positions are not its maxima
        g2 = _grad_recomputed(x2, yk, dy, (2, 2), (2, 2), "VALID", False)
        assert _core.pool_workspace_uses() == before
        g1 = _grad_recomputed(x, yk, dy, (2, 2), (2, 2), "VALID", False)  # the same x: used
        assert _core.pool_workspace_uses() == before + 1
    np.testing.assert_array_equal(g1.numpy(), g0.numpy())
    expect2 = _grad_recomputed(x2, _pool(x2, (2, 2), (2, 2), "VALID", False), dy, (2, 2), (2, 2), "VALID", False)
    np.testing.assert_array_equal(g2.numpy(), expect2.numpy())
    # a reshaped view of y is another tensor: no workspace, same values
    with tf.device("CPU:0"):
        yv = tf.reshape(tf.reshape(yk, [-1]), yk.shape)
        g3 = _grad_recomputed(x, yv, dy, (2, 2), (2, 2), "VALID", False)
    np.testing.assert_array_equal(g3.numpy(), g0.numpy())


def test_traced_step_keeps_the_workspace_for_its_gradient():
    rng = np.random.default_rng(3)
    with tf.device("CPU:0"):
        x = _x((4, 10, 10, 3), "float32", rng, "none")
        f = tf.Variable(rng.standard_normal((3, 3, 3, 8)).astype(np.float32))

        def step(x):  # (tanh: a ReLU's gradient would fuse with MaxPoolGrad's, no workspace read)
            with tf.GradientTape() as tape:
                h = tf.tanh(tf.nn.conv2d(x, f, 1, "SAME"))
                y = tf.nn.max_pool2d(h, 2, 2, "VALID")
                loss = tf.reduce_sum(y * y)
            return loss, tape.gradient(loss, f)

        eager = step(x)
        traced = tf.function(step)
        traced(x)  # the trace
        before = _core.pool_workspace_uses()
        out = traced(x)
        assert _core.pool_workspace_uses() == before + 1  # the replay's MaxPoolGrad used it

        @tf.function
        def infer(x):  # no gradient in the graph: MaxPool runs as inference
            h = tf.nn.relu(tf.nn.conv2d(x, f, 1, "SAME"))
            return h, tf.nn.max_pool2d(h, 2, 2, "VALID")

        infer(x)
        h, y = infer(x)
        before = _core.pool_workspace_uses()
        _grad_recomputed(h, y, tf.ones_like(y), (2, 2), (2, 2), "VALID", False)
    assert _core.pool_workspace_uses() == before
    np.testing.assert_array_equal(out[0].numpy(), eager[0].numpy())
    np.testing.assert_array_equal(out[1].numpy(), eager[1].numpy())


def test_max_pool_grad_checks_orig_output():
    with tf.device("CPU:0"):
        x = tf.zeros([1, 4, 4, 2])
        dy = tf.zeros([1, 2, 2, 2])
        with pytest.raises(tf.errors.InvalidArgumentError, match="orig_output"):
            _grad_recomputed(x, tf.zeros([1, 2, 3, 2]), dy, (2, 2), (2, 2), "VALID", False)
