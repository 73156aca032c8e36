"""The remapper pass on traced graphs (csrc/graph_fuse.c, src/mixprec/_remapper.py):
Conv2D / MatMul + bias add (+ Relu) become the fused ops inside mixprec.function, as
TensorFlow's remapper makes _FusedConv2D / _FusedMatMul inside tf.function. Checked: the
pass fires (fused nodes counted), it leaves chains whose intermediates are read elsewhere,
replay equals eager within the tolerance table (forward and the gradients the graph holds),
gradients against float64 finite differences, under an outer tape, with the AMP rewrite,
and the ReLU's NaN (0 in a fused graph, as TensorFlow's tf.function)."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import _remapper
from tolerances import assert_close, tolerance

R = np.random.default_rng(12)


@pytest.fixture(autouse=True)
def _options_restored():
    """Grappler options (remapping, the AMP rewrite) as each test found them."""
    from mixprec._amp import state

    saved = dict(state.options)
    yield
    state.options.clear()
    state.options.update(saved)
    state.refresh()


def _u(*shape, dtype="float32"):
    return R.uniform(-1.0, 1.0, shape).astype(dtype)


def fused_nodes(fn, *args):
    """(fused conv nodes, fused matmul nodes, op names) of fn's traced graph."""
    nodes = [n for n in fn.get_concrete_function(*args).graph.nodes() if n["kind"] == "Op"]
    conv = sum(n["op"] == "Conv2D" and len(n["inputs"]) == 3 for n in nodes)
    mm = sum(n["op"] == "MatMul" and len(n["inputs"]) == 3 for n in nodes)
    return conv, mm, [n["op"] for n in nodes]


def cnn_loss(x, w1, b1, w2, b2, y):
    """seed 004's CNN written with tf.nn (bench/cnn.py): conv + b, relu, pool, dense + b."""
    h = tf.nn.relu(tf.nn.conv2d(x, w1, 1, "VALID") + b1)
    h = tf.nn.max_pool2d(h, 2, 2, "VALID")
    h = tf.reshape(h, [x.shape[0], -1])
    logits = tf.matmul(h, w2) + b2
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))


def cnn_args(dtype="float32"):
    return [tf.constant(_u(4, 8, 8, 2, dtype=dtype)), tf.constant(_u(3, 3, 2, 5, dtype=dtype)),
            tf.constant(_u(5, dtype=dtype)), tf.constant(_u(45, 3, dtype=dtype)),
            tf.constant(_u(3, dtype=dtype)), tf.constant(np.array([0, 2, 1, 2]))]


def cnn_grads(*a):
    with tf.GradientTape() as tape:
        tape.watch(a[:5])
        loss = cnn_loss(*a)
    return [loss] + tape.gradient(loss, list(a[:5]))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cnn_step_fuses_and_matches_eager(dtype):
    a = cnn_args(dtype)
    fn = tf.function(cnn_grads)
    conv, mm, _ = fused_nodes(fn, *a)
    assert (conv, mm) == (1, 1)
    traced = fn(*a)
    assert _remapper.last_fused == 3  # conv + bias + relu, matmul + bias + relu, pool + relu gradients
    eager = cnn_grads(*a)
    for k, (t, e) in enumerate(zip(traced, eager)):
        assert_close(t.numpy(), e.numpy(), dtype, "convolution", err_msg="output %d" % k)


def test_matmul_bias_relu_and_bias_first():
    def f(x, w, b, w2, b2):
        h = tf.nn.relu(tf.matmul(x, w) + b)
        return b2 + tf.matmul(h, w2, transpose_b=True)  # the bias on the left, no relu

    a = [tf.constant(_u(6, 4)), tf.constant(_u(4, 5)), tf.constant(_u(5)), tf.constant(_u(3, 5)),
         tf.constant(_u(3))]
    fn = tf.function(f)
    assert fused_nodes(fn, *a)[:2] == (0, 2)
    assert_close(fn(*a).numpy(), f(*a).numpy(), "float32", "matmul")


def test_bias_add_and_conv_without_relu():
    def f(x, w, b):
        return tf.nn.max_pool2d(tf.nn.bias_add(tf.nn.conv2d(x, w, 2, "SAME"), b), 2, 2, "SAME")

    a = [tf.constant(_u(2, 7, 7, 3)), tf.constant(_u(3, 3, 3, 4)), tf.constant(_u(4))]
    fn = tf.function(f)
    conv, _, ops = fused_nodes(fn, *a)
    assert conv == 1 and "AddV2" not in ops
    assert_close(fn(*a).numpy(), f(*a).numpy(), "float32", "convolution")


def test_not_fused_when_intermediate_is_read_elsewhere():
    x, w, b = tf.constant(_u(2, 6, 6, 3)), tf.constant(_u(3, 3, 3, 4)), tf.constant(_u(4))

    def conv_out(x, w, b):  # the convolution's own output is returned: nothing fuses
        c = tf.nn.conv2d(x, w, 1, "VALID")
        return tf.nn.relu(c + b), c

    def sum_out(x, w, b):  # the sum is read by another op: conv + bias fuse, relu stays
        z = tf.nn.conv2d(x, w, 1, "VALID") + b
        return tf.nn.relu(z) * z

    def sum_output(x, w, b):  # the sum is a graph output
        z = tf.nn.conv2d(x, w, 1, "VALID") + b
        return tf.nn.relu(z), z

    def broadcast_add(x, w, b):  # not a channel bias: (4, 4) broadcast over rows
        return tf.nn.relu(tf.nn.conv2d(x, w, 1, "VALID") + tf.reshape(tf.concat([b] * 4, 0), [4, 4]))

    for f, want in ((conv_out, 0), (sum_out, 1), (sum_output, 1), (broadcast_add, 0)):
        fn = tf.function(f)
        conv, _, ops = fused_nodes(fn, x, w, b)
        assert conv == want, f.__name__
        assert "Relu" in ops, f.__name__
        got, exp = fn(x, w, b), f(x, w, b)
        got, exp = (got, exp) if isinstance(got, (list, tuple)) else ([got], [exp])
        for g, e in zip(got, exp):
            assert_close(g.numpy(), e.numpy(), "float32", "convolution", err_msg=f.__name__)


def test_relu_kept_when_its_input_is_used_by_the_backward_elsewhere():
    """ReluGrad reads the sum as its features: that reader moves to the fused output; any
    other reader of the sum (here a square in the loss) keeps the relu separate."""
    x, w, b = tf.constant(_u(2, 6, 6, 3)), tf.constant(_u(3, 3, 3, 4)), tf.constant(_u(4))

    def step(x, w, b, extra):
        with tf.GradientTape() as tape:
            tape.watch([w, b])
            z = tf.nn.conv2d(x, w, 1, "VALID") + b
            loss = tf.reduce_sum(tf.nn.relu(z))
            if extra:
                loss += tf.reduce_sum(z * z)
        return [loss] + tape.gradient(loss, [w, b])

    for extra, relu_fused in ((False, True), (True, False)):
        fn = tf.function(lambda x, w, b: step(x, w, b, extra))
        conv, _, ops = fused_nodes(fn, x, w, b)
        assert conv == 1
        assert ("Relu" not in ops) == relu_fused
        assert "ReluGrad" in ops
        for g, e in zip(fn(x, w, b), step(x, w, b, extra)):
            assert_close(g.numpy(), e.numpy(), "float32", "convolution")


def _numeric(f, xs, k, h=1e-6):
    g = np.zeros_like(xs[k])
    for idx in np.ndindex(xs[k].shape):
        vals = []
        for s in (1.0, -1.0):
            xp = [v.copy() for v in xs]
            xp[k][idx] += s * h
            vals.append(float(f(*[tf.constant(v) for v in xp]).numpy()))
        g[idx] = (vals[0] - vals[1]) / (2 * h)
    return g


def test_traced_gradients_against_finite_differences():
    """float64, the tape inside the traced function: the graph's ReluGrads read the fused
    output; pre-activations kept away from the ReLU's kink."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (2, 5, 5, 2))
    w = rng.uniform(-1, 1, (2, 2, 2, 3))
    b = np.array([0.05, -0.1, 0.2])
    m, mb = rng.uniform(-1, 1, (12, 2)), np.array([0.3, -0.2])
    up = rng.standard_normal((2, 4, 4, 3))

    def loss(x, w, b, m, mb):
        h = tf.nn.relu(tf.nn.conv2d(x, w, 1, "VALID") + b)
        h2 = tf.nn.relu(tf.matmul(tf.reshape(h * up, [8, 12]), m) + mb)
        return tf.reduce_sum(h2 * h2)

    # keep every pre-activation away from 0 (the kink) for the step
    z = tf.nn.conv2d(tf.constant(x), tf.constant(w), 1, "VALID").numpy() + b
    assert np.min(np.abs(z)) > 1e-4

    @tf.function
    def grads(*a):
        with tf.GradientTape() as tape:
            tape.watch(a)
            y = loss(*a)
        return tape.gradient(y, list(a))

    xs = [x, w, b, m, mb]
    got = grads(*[tf.constant(v) for v in xs])
    assert _remapper.last_fused == 2
    rtol, atol = tolerance("float64", "finite_difference")
    for k in range(len(xs)):
        np.testing.assert_allclose(got[k].numpy(), _numeric(loss, xs, k), rtol=rtol, atol=atol,
                                   err_msg="input %d" % k)


def test_outer_tape_over_a_fused_replay():
    """A replay under a tape records the fused nodes with their own backward rule."""
    a = cnn_args()
    fn = tf.function(cnn_loss)
    fn(*a)  # trace and replay once
    assert _remapper.last_fused == 2
    with tf.GradientTape() as tape:
        tape.watch(a[:5])
        loss = fn(*a)
    got = tape.gradient(loss, list(a[:5]))
    exp = cnn_grads(*a)[1:]
    for g, e in zip(got, exp):
        assert_close(g.numpy(), e.numpy(), "float32", "convolution")


def test_fused_relu_maps_nan_to_zero_as_tensorflow_function():
    """TensorFlow's _FusedConv2D (tf.function on this CPU) gives 0 where eager Relu gives NaN;
    the graph's gradient (ReluGrad on the fused output) is 0 there, as eagerly."""
    x = _u(1, 4, 4, 1)
    x[0, 1, 1, 0] = np.nan
    w, b = tf.constant(np.ones((2, 2, 1, 2), "float32")), tf.constant(np.zeros(2, "float32"))

    def f(x, w, b):
        with tf.GradientTape() as tape:
            tape.watch(w)
            y = tf.nn.relu(tf.nn.conv2d(x, w, 1, "VALID") + b)
        return y, tape.gradient(y, w)

    ye, ge = f(tf.constant(x), w, b)
    fn = tf.function(f)
    fn(tf.constant(x), w, b)  # the tracing call's values are its eager run's (unfused)
    yt, gt = fn(tf.constant(x), w, b)
    nan = np.isnan(ye.numpy())
    assert nan.sum() == 8  # 4 windows x 2 channels read the NaN pixel
    assert not np.isnan(yt.numpy()).any() and (yt.numpy()[nan] == 0).all()
    np.testing.assert_array_equal(yt.numpy()[~nan], ye.numpy()[~nan])
    # the filter's gradient: NaN * 0 where the NaN pixel meets a zero ReluGrad, both ways
    assert_close(gt.numpy(), ge.numpy(), "float32", "convolution")


def test_remapping_option_switches_the_pass_off():
    a = cnn_args()
    try:
        tf.config.optimizer.set_experimental_options({"remapping": False})
        assert fused_nodes(tf.function(cnn_grads), *a)[:2] == (0, 0)
    finally:
        tf.config.optimizer.set_experimental_options({"remapping": True})
    assert fused_nodes(tf.function(cnn_grads), *a)[:2] == (1, 1)


def _amp_bf16(fn, *a):
    """fn traced and run twice under the oneDNN bfloat16 AMP rewrite: (outputs, AMP summary,
    op nodes of its graph)."""
    from mixprec._amp import graph_pass

    try:
        tf.config.optimizer.set_experimental_options({"auto_mixed_precision_onednn_bfloat16": True})
        f = tf.function(fn)
        f(*a)
        out = f(*a)
        nodes = [n for n in f.get_concrete_function(*a).graph.nodes() if n["kind"] == "Op"]
        return out, graph_pass.last_summary, nodes
    finally:
        tf.config.optimizer.set_experimental_options({"auto_mixed_precision_onednn_bfloat16": False})


def test_amp_rewrite_then_fusion():
    """The AMP pass runs first and sees Conv2D / MatMul (its summary is TensorFlow's); the
    fused nodes then compute in bfloat16; values as the unfused bfloat16 graph's."""
    rng = np.random.default_rng(5)
    a = [tf.constant(rng.uniform(-1, 1, s).astype("float32"))
         for s in ((2, 6, 6, 3), (3, 3, 3, 4), (4,), (64, 4), (4,))]
    up = rng.standard_normal((2, 4, 4, 4)).astype("float32")

    def step(x, w, b, m, mb):
        with tf.GradientTape() as tape:
            tape.watch([w, b, m, mb])
            h = tf.nn.relu(tf.nn.conv2d(x, w, 1, "VALID") + b) * up
            y = tf.matmul(tf.reshape(h, [2, 64]), m) + mb
        return [y] + tape.gradient(y, [w, b, m, mb])

    out, summary, nodes = _amp_bf16(step, *a)
    assert "Conv2D" in summary["converted_nodes"] and "MatMul" in summary["converted_nodes"]
    fused = [n for n in nodes if n["op"] in ("Conv2D", "MatMul") and len(n["inputs"]) == 3]
    assert len(fused) == 2 and all(n["dtype"] == tf.bfloat16 for n in fused)
    try:
        tf.config.optimizer.set_experimental_options({"remapping": False})
        ref, _, ref_nodes = _amp_bf16(step, *a)
    finally:
        tf.config.optimizer.set_experimental_options({"remapping": True})
    assert not any(len(n["inputs"]) == 3 for n in ref_nodes if n["op"] in ("Conv2D", "MatMul"))
    for k, (t, e) in enumerate(zip(out, ref)):
        assert t.dtype == e.dtype == tf.float32
        assert_close(t.numpy(), e.numpy(), "bfloat16", "convolution", err_msg="output %d" % k)


def test_keras_layers_without_activation_take_a_following_relu():
    """Conv2D / Dense layers call the fused ops without activation; a ReLU layer after them
    joins them in a traced step (TensorFlow's remapper: _FusedConv2D with BiasAdd + Relu)."""
    from mixprec import keras

    keras.utils.set_random_seed(4)
    model = keras.Sequential([keras.Input((6, 6, 2)), keras.layers.Conv2D(3, 3),
                              keras.layers.ReLU(), keras.layers.Flatten(), keras.layers.Dense(4),
                              keras.layers.Activation("relu"), keras.layers.Dense(2)])
    x = tf.constant(_u(3, 6, 6, 2))

    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(model(x, training=True)))
        return [loss] + tape.gradient(loss, model.trainable_variables)

    fn = tf.function(step)
    _, _, ops = fused_nodes(fn, x)
    assert _remapper.last_fused == 2 and "Relu" not in ops
    for g, e in zip(fn(x), step(x)):
        assert_close(g.numpy(), e.numpy(), "float32", "convolution")


def test_while_loop_body_is_fused(monkeypatch):
    from mixprec import _function

    counts = []

    def counting(graph, summarize=True):
        _remapper.fuse_subgraph(graph, summarize)
        counts.append(_remapper.last_fused_subgraph)

    passes = [counting if p is _remapper.fuse_subgraph else p for p in _function.loop_graph_passes]
    monkeypatch.setattr(_function, "loop_graph_passes", passes)
    w, b = tf.constant(_u(3, 3, 2, 2)), tf.constant(_u(2))

    def body(i, x):
        return i + 1, tf.nn.relu(tf.nn.conv2d(x, w, 1, "SAME") + b)

    def f(x):
        return tf.while_loop(lambda i, x: i < 3, body, [tf.constant(0), x])[1]

    x = tf.constant(_u(2, 5, 5, 2))
    fn = tf.function(f)
    fn(x)
    assert sorted(counts) == [0, 1]  # the condition has nothing to fuse, the body one chain
    assert "Loop" in [n["kind"] for n in fn.get_concrete_function(x).graph.nodes()]
    assert_close(fn(x).numpy(), f(x).numpy(), "float32", "convolution")
