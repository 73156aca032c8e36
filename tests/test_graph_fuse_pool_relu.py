"""MaxPoolGrad + ReluGrad fused in traced graphs (csrc/graph_fuse.c; MaxPoolGrad's act attr,
one pass in csrc/cpu_pool_relu.c for float32 NHWC non-overlapping windows, the two ops
elsewhere and on GPUs): the backward of ReLU then max pooling becomes one node. Values are
the unfused chain's bit for bit (NaN windows, ties, zeros, SAME padding, odd sizes), the
graph's and an outer tape's gradients match eager execution, second-order gradients through
the fused node match eager's, and float64 gradients match finite differences."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import _remapper
from tolerances import assert_bits_equal, tolerance


def _ops(fn, *args):
    return [n["op"] for n in fn.get_concrete_function(*args).graph.nodes() if n["kind"] == "Op"]


def net(x, f, b, ksize, strides, padding):
    """ReLU then max pooling: of x * f + b (NaNs reach the ReLU and the pooling as they are),
    or of a convolution + bias when f is a filter (the remapper's fused Conv2D + bias + ReLU)."""
    if len(f.shape) == 4:
        z = tf.nn.conv2d(x, tf.cast(f, x.dtype), 1, "SAME")
    else:
        z = x * tf.cast(f, x.dtype)
    return tf.nn.max_pool2d(tf.nn.relu(z + tf.cast(b, x.dtype)), ksize, strides, padding)


def _args(dt, shape=(3, 7, 9, 4), seed=0, conv=False):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    sdt = "float64" if dt == "float64" else "float32"
    if conv:
        f = rng.standard_normal((3, 3, shape[-1], 4)) * 0.5
    else:
        f = rng.uniform(0.5, 1.5, 4)
        x[0, 0:3, 0:3, :] = np.nan  # windows with NaN maxima (the leading-NaN rule)
        x[0, 4, 1, :] = np.nan  # a NaN after the window's first element
        x[1, :, :, 1] = -1.0  # channel 1: all negative (ties among zeros, masked everywhere)
        x[1, 2:4, 2:6, 0] = 0.75  # ties among positive maxima: the first one takes dy
    return [tf.cast(tf.constant(x), dt), tf.constant(f.astype(sdt)),
            tf.constant(np.linspace(-0.3, 0.3, 4).astype(sdt))]


def _step(x, f, b, ksize=2, strides=2, padding="VALID"):
    with tf.GradientTape() as tape:
        tape.watch([x, f, b])
        y = net(x, f, b, ksize, strides, padding)
        yc = tf.cast(y, f.dtype)
        loss = tf.reduce_sum(yc * 0.5 + yc * yc)
    return [y] + tape.gradient(loss, [x, f, b])


CASES = [(2, 2, "VALID"), (2, 2, "SAME"), (3, 3, "SAME"), ((2, 1), (3, 2), "VALID"), (3, 2, "VALID")]


# (the bfloat16 Conv2D + bias + ReLU fusion rounds once where eager rounds twice: its values
# are not eager's bits, so bfloat16 runs the conv-free net only)
@pytest.mark.parametrize("dt,conv", [("float32", False), ("float32", True), ("bfloat16", False),
                                     ("float64", False), ("float64", True)])
@pytest.mark.parametrize("ksize,strides,padding", CASES)
def test_pool_relu_grad_fuses_and_equals_eager_bit_for_bit(dt, ksize, strides, padding, conv):
    a = _args(dt, conv=conv)
    fn = tf.function(lambda x, f, b: _step(x, f, b, ksize, strides, padding))
    ops = _ops(fn, *a)
    assert "ReluGrad" not in ops and ops.count("MaxPoolGrad") == 1
    fn(*a)
    traced = fn(*a)
    eager = _step(*a, ksize, strides, padding)
    for k, (t, e) in enumerate(zip(traced, eager)):
        assert_bits_equal(t.numpy(), e.numpy(), err_msg="output %d" % k)


def test_keras_layers_fuse_too():
    from mixprec import keras
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((10, 10, 2)), keras.layers.Conv2D(6, 3, activation="relu"),
                              keras.layers.MaxPooling2D(), keras.layers.Flatten(), keras.layers.Dense(3)])
    x = tf.constant(np.random.default_rng(1).standard_normal((4, 10, 10, 2)).astype("float32"))

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(x, training=True) ** 2)
        return tape.gradient(loss, model.trainable_variables)

    fn = tf.function(step)
    assert "ReluGrad" not in _ops(fn)
    for g, e in zip(fn(), step()):
        assert_bits_equal(g.numpy(), e.numpy())


def test_relu_grad_of_another_tensor_stays_unfused():
    """ReluGrad's features are not the pooled tensor: no fusion (the masks would differ)."""
    def step(x, z):
        with tf.GradientTape() as tape:
            tape.watch([x, z])
            y = tf.nn.max_pool2d(tf.nn.relu(z) + x, 2, 2, "VALID")
            loss = tf.reduce_sum(y * y)
        return tape.gradient(loss, [x, z])

    rng = np.random.default_rng(2)
    a = [tf.constant(rng.standard_normal((2, 4, 4, 3)).astype("float32")) for _ in range(2)]
    fn = tf.function(step)
    assert "ReluGrad" in _ops(fn, *a)
    for g, e in zip(fn(*a), step(*a)):
        assert_bits_equal(g.numpy(), e.numpy())


def test_outer_tape_and_second_order_through_a_fused_replay():
    """The replay records the fused MaxPoolGrad; its rule masks the upstream gradient before
    MaxPoolGradGrad, so a gradient of the gradient matches eager execution."""
    a = _args("float32", seed=3, conv=True)

    def inner(x, f, b):
        with tf.GradientTape() as t:
            t.watch(x)
            y = net(x, f, b, 2, 2, "VALID")
            loss = tf.reduce_sum(y * y)
        return t.gradient(loss, x)

    fn = tf.function(inner)
    assert "ReluGrad" not in _ops(fn, *a)

    def outer(call):
        with tf.GradientTape() as tape:
            tape.watch(a)
            g = call(*a)
            loss = tf.reduce_sum(g * tf.cast(tf.reshape(tf.range(tf.size(g)), g.shape), g.dtype))
        return tape.gradient(loss, a)

    for g, e in zip(outer(fn), outer(inner)):
        if e is None:
            assert g is None
        else:
            assert_bits_equal(g.numpy(), e.numpy())


def test_fused_node_gradients_match_finite_differences():
    """float64: d/d(dy) of the fused node's output against central differences (the node is
    linear in dy, so the check is of the adjoint MaxPoolGradGrad(x, ReluGrad(x, g)))."""
    rng = np.random.default_rng(4)
    x = tf.constant(np.maximum(rng.standard_normal((2, 6, 6, 3)), 0.0))
    dy0 = rng.standard_normal((2, 3, 3, 3))
    w = tf.constant(rng.standard_normal((2, 6, 6, 3)))

    def inner(dy):
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.nn.relu(x)
            p = tf.nn.max_pool2d(y, 2, 2, "VALID")
        return t.gradient(p, x, output_gradients=dy)

    fn = tf.function(inner)
    assert "ReluGrad" not in _ops(fn, tf.constant(dy0))

    def f(dy):
        return float(tf.reduce_sum(fn(tf.constant(dy)) * w).numpy())

    dyt = tf.constant(dy0)
    with tf.GradientTape() as tape:
        tape.watch(dyt)
        loss = tf.reduce_sum(fn(dyt) * w)
    got = tape.gradient(loss, dyt).numpy()
    eps = 1e-6
    num = np.zeros_like(dy0)
    for idx in np.ndindex(*dy0.shape):
        e = np.zeros_like(dy0)
        e[idx] = eps
        num[idx] = (f(dy0 + e) - f(dy0 - e)) / (2 * eps)
    rtol, atol = tolerance("float64", "finite_difference")
    np.testing.assert_allclose(got, num, rtol=rtol, atol=atol)


def test_max_pool_grad_unknown_act_code_is_a_value_error():
    from mixprec import _core
    from mixprec.nn import _OP_CODES
    x = tf.zeros((1, 4, 4, 1))
    with pytest.raises(ValueError, match="activation code"):
        _core.window_op(_OP_CODES["max_pool_grad"], (x, tf.zeros((1, 2, 2, 1)), tf.zeros((1, 2, 2, 1))), (2, 2), (2, 2), 0,
                        (0, 0, 0, 0), False, None, 7)
