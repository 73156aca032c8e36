"""BatchNorm + ReLU fused in traced graphs (csrc/graph_fuse.c; the BatchNorm op's act attr,
one pass in cpu_norm.c): a batch normalization read by one Relu becomes one node, the
graph's ReluGrads read its output. Values are the unfused chain's bit for bit (the ReLU keeps
NaN, as the separate Relu), the graph's and an outer tape's gradients match eager execution,
float64 gradients match finite differences, and a normalized value read elsewhere stays
unfused."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import _remapper
from tolerances import assert_bits_equal, tolerance


def _ops(fn, *args):
    return [n["op"] for n in fn.get_concrete_function(*args).graph.nodes() if n["kind"] == "Op"]


def block(x, f, scale, offset):
    """bench/cnn.py's block: conv, batch statistics in float32, normalization, ReLU."""
    h = tf.nn.conv2d(x, tf.cast(f, x.dtype), 1, "SAME")
    mean, var = tf.nn.moments(tf.cast(h, "float32" if x.dtype != tf.float64 else "float64"), [0, 1, 2])
    return tf.nn.relu(tf.nn.batch_normalization(h, mean, var, offset, scale, 1e-3))


def _args(dt, seed=0):
    rng = np.random.default_rng(seed)
    sdt = "float64" if dt == "float64" else "float32"
    offset = rng.standard_normal(4).astype(sdt)
    offset[1] = np.nan  # a NaN channel: the fused ReLU keeps it, as the separate Relu
    return [tf.cast(tf.constant(rng.standard_normal((3, 6, 5, 2))), dt),
            tf.constant(rng.standard_normal((3, 3, 2, 4)).astype(sdt)),
            tf.constant(rng.uniform(0.5, 1.5, 4).astype(sdt)), tf.constant(offset)]


def _step(x, f, scale, offset):
    with tf.GradientTape() as tape:
        tape.watch([x, f, scale, offset])
        y = block(x, f, scale, offset)
        loss = tf.reduce_sum(tf.cast(y, scale.dtype) * tf.cast(y, scale.dtype))
    return [y] + tape.gradient(loss, [x, f, scale, offset])


@pytest.mark.parametrize("dt", ["float32", "bfloat16", "float16", "float64"])
def test_bn_relu_fuses_and_equals_eager_bit_for_bit(dt):
    a = _args(dt)
    fn = tf.function(_step)
    ops = _ops(fn, *a)
    assert "Relu" not in ops and ops.count("FusedBatchNormV3") == 1
    fn(*a)  # the tracing call
    traced = fn(*a)
    assert _remapper.last_fused >= 1
    eager = _step(*a)
    assert np.isnan(traced[0].numpy().astype(np.float64)[..., 1]).all()
    for k, (t, e) in enumerate(zip(traced, eager)):
        assert_bits_equal(t.numpy(), e.numpy(), err_msg="output %d" % k)


def test_outer_tape_over_a_fused_replay():
    """The replay records the fused BatchNorm with its rule (ReluGrad from its output first)."""
    a = _args("float32", seed=1)
    a[3] = tf.constant(np.nan_to_num(a[3].numpy()))
    fn = tf.function(block)
    fn(*a)
    assert "Relu" not in _ops(fn, *a)
    with tf.GradientTape() as tape:
        tape.watch(a)
        y = fn(*a)
        loss = tf.reduce_sum(y * y)
    got = tape.gradient(loss, a)
    with tf.GradientTape() as tape:
        tape.watch(a)
        y = block(*a)
        loss = tf.reduce_sum(y * y)
    exp = tape.gradient(loss, a)
    for g, e in zip(got, exp):
        assert_bits_equal(g.numpy(), e.numpy())


def test_fused_gradients_against_finite_differences():
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal((2, 4, 3, 2)), rng.standard_normal((2, 2, 2, 3)), rng.uniform(0.5, 1.5, 3),
          np.array([0.3, -0.2, 0.1])]
    up = rng.standard_normal((2, 4, 3, 3))

    def loss(x, f, scale, offset):
        y = block(x, f, scale, offset)
        return tf.reduce_sum(y * up)

    # the normalized values away from the ReLU's kink
    h = tf.nn.conv2d(tf.constant(xs[0]), tf.constant(xs[1]), 1, "SAME").numpy()
    z = (h - h.mean((0, 1, 2))) / np.sqrt(h.var((0, 1, 2)) + 1e-3) * xs[2] + xs[3]
    assert np.min(np.abs(z)) > 1e-4

    @tf.function
    def grads(*a):
        with tf.GradientTape() as tape:
            tape.watch(a)
            y = loss(*a)
        return tape.gradient(y, list(a))

    assert "Relu" not in _ops(grads, *[tf.constant(v) for v in xs])
    got = grads(*[tf.constant(v) for v in xs])
    rtol, atol = tolerance("float64", "finite_difference")
    for k in range(len(xs)):
        g = np.zeros_like(xs[k])
        for idx in np.ndindex(xs[k].shape):
            vals = []
            for s in (1.0, -1.0):
                xp = [v.copy() for v in xs]
                xp[k][idx] += s * 1e-6
                vals.append(float(loss(*[tf.constant(v) for v in xp]).numpy()))
            g[idx] = (vals[0] - vals[1]) / 2e-6
        np.testing.assert_allclose(got[k].numpy(), g, rtol=rtol, atol=atol, err_msg="input %d" % k)


def test_not_fused_when_the_normalized_value_is_read_elsewhere():
    a = _args("float32")

    def f(x, fl, scale, offset):
        h = tf.nn.conv2d(x, fl, 1, "SAME")
        mean, var = tf.nn.moments(h, [0, 1, 2])
        z = tf.nn.batch_normalization(h, mean, var, offset, scale, 1e-3)
        return tf.nn.relu(z), z

    fn = tf.function(f)
    assert "Relu" in _ops(fn, *a)
    got, exp = fn(*a), f(*a)
    for g, e in zip(got, exp):
        assert_bits_equal(g.numpy(), e.numpy())


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_keras_batch_normalization_then_relu_fuse_in_a_traced_step(policy):
    """Conv2D, BatchNormalization (training: batch statistics, moving averages updated), ReLU
    layers: under float32 the traced step holds one BatchNorm node and no Relu; under a mixed
    policy the layer normalizes in float32 and casts, and a Cast between keeps the Relu. Either
    way the step equals eager execution bit for bit (values, gradients, moving statistics)."""
    from mixprec import keras

    def make():
        keras.utils.set_random_seed(6)
        return keras.Sequential([keras.Input((6, 6, 2)), keras.layers.Conv2D(4, 3, use_bias=False),
                                 keras.layers.BatchNormalization(), keras.layers.ReLU(),
                                 keras.layers.Flatten(), keras.layers.Dense(2)])

    prev = keras.mixed_precision.global_policy().name
    keras.mixed_precision.set_global_policy(policy)
    try:
        x = tf.constant(np.random.default_rng(6).standard_normal((5, 6, 6, 2)).astype(np.float32))
        models = [make(), make()]

        def step(model):
            def f(x):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_sum(tf.square(tf.cast(model(x, training=True), "float32")))
                return [loss] + tape.gradient(loss, model.trainable_variables)
            return f

        fn = tf.function(step(models[0]))
        ops = _ops(fn, x)
        assert ops.count("FusedBatchNormV3") == 1 and ("Relu" in ops) == (policy != "float32")
        for _ in range(2):  # the tracing call and a replay, each against an eager step
            got, exp = fn(x), step(models[1])(x)
            for g, e in zip(got, exp):
                assert_bits_equal(g.numpy(), e.numpy())
        for v, w in zip(models[0].variables, models[1].variables):
            assert_bits_equal(v.numpy(), w.numpy(), err_msg=v.name)
    finally:
        keras.mixed_precision.set_global_policy(prev)
