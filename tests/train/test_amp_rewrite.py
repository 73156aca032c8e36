"""enable_mixed_precision_graph_rewrite (seed 003): the API, TensorFlow's errors, the
rewritten function's numbers and summary, and the seed's Keras example."""

import logging
import re

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec._amp import graph_pass
from mixprec.keras.mixed_precision import LossScaleOptimizer
from mixprec.mixed_precision.experimental import DynamicLossScale, FixedLossScale

X = np.array([[1 + 2.0**-12]], np.float32)
W = np.array([[1.0]], np.float32)


def test_seed_name_returns_a_dynamic_loss_scale_optimizer():
    inner = keras.optimizers.Adam()
    opt = tf.train.experimental.enable_mixed_precision_graph_rewrite(inner)
    assert isinstance(opt, LossScaleOptimizer)
    assert opt.inner_optimizer is inner
    assert opt.dynamic and opt.initial_scale == 2**15 and opt.dynamic_growth_steps == 2000
    assert tf.config.optimizer.get_experimental_options()["auto_mixed_precision"] is True


def test_all_spellings_exist():
    for mod in (tf.train.experimental, tf.compat.v1.mixed_precision,
                tf.compat.v1.train.experimental):
        assert callable(mod.enable_mixed_precision_graph_rewrite)
        assert callable(mod.disable_mixed_precision_graph_rewrite)


@pytest.mark.parametrize("loss_scale,dynamic,initial", [
    (128, False, 128), (64.0, False, 64), (FixedLossScale(64), False, 64),
    (DynamicLossScale(16, increment_period=3), True, 16)])
def test_loss_scale_argument(loss_scale, dynamic, initial):
    opt = tf.compat.v1.mixed_precision.enable_mixed_precision_graph_rewrite(
        keras.optimizers.SGD(), loss_scale=loss_scale)
    assert opt.dynamic is dynamic and opt.initial_scale == initial
    if dynamic:
        assert opt.dynamic_growth_steps == 3


def test_errors_as_tensorflow():
    enable = tf.train.experimental.enable_mixed_precision_graph_rewrite
    with pytest.raises(ValueError, match='"opt" must be an instance of a tf.train.Optimizer or '
                       "a tf.keras.optimizers.Optimizer, but got: 1"):
        enable(1)
    with pytest.raises(ValueError, match='"opt" must not already be an instance of a '
                       "LossScaleOptimizer"):
        enable(LossScaleOptimizer(keras.optimizers.SGD()))
    for bad in ("static", None):
        with pytest.raises(ValueError, match="Invalid value passed to loss_scale"):
            enable(keras.optimizers.SGD(), loss_scale=bad)
    with pytest.raises(ValueError, match="multiplier must be 2"):
        enable(keras.optimizers.SGD(), loss_scale=DynamicLossScale(multiplier=4))
    inner = keras.optimizers.SGD()
    enable(inner)
    with pytest.raises(ValueError, match="already wrapped by a LossScaleOptimizer"):
        enable(inner)


def test_disable_when_disabled_warns(caplog):
    with caplog.at_level(logging.WARNING, logger="mixprec"):
        tf.get_logger().addHandler(caplog.handler)
        try:
            tf.compat.v1.mixed_precision.disable_mixed_precision_graph_rewrite()
        finally:
            tf.get_logger().removeHandler(caplog.handler)
    assert "called when mixed precision is already disabled" in caplog.text


def test_mixed_policy_refused_after_enabling_and_the_reverse():
    mp = keras.mixed_precision
    tf.train.experimental.enable_mixed_precision_graph_rewrite(keras.optimizers.SGD())
    with pytest.raises(ValueError, match=r'cannot be set to "mixed_float16", .* the mixed '
                       "precision graph rewrite has already been enabled"):
        mp.set_global_policy("mixed_float16")
    for name in ("float16", "float64", "float32"):
        mp.set_global_policy(name)
    from mixprec.keras.mixed_precision.policy import policy_scope
    with policy_scope("float64"):
        pass
    tf.train.experimental.disable_mixed_precision_graph_rewrite()
    mp.set_global_policy("mixed_float16")
    with pytest.raises(ValueError, match="The mixed precision graph rewrite cannot be enabled, "
                       "because the global Keras dtype Policy has been set to a mixed"):
        tf.train.experimental.enable_mixed_precision_graph_rewrite(keras.optimizers.SGD())


def test_rewritten_function_matmul_in_float16_exp_exact(caplog):
    exact = tf.exp(tf.constant(X)).numpy()
    tf.train.experimental.enable_mixed_precision_graph_rewrite(keras.optimizers.SGD())

    @tf.function
    def f(x, w):
        return tf.matmul(x, w), tf.exp(x)

    with caplog.at_level(logging.INFO, logger="mixprec"):
        tf.get_logger().addHandler(caplog.handler)
        try:
            m, e = f(tf.constant(X), tf.constant(W))
            f(tf.constant(X), tf.constant(W))
        finally:
            tf.get_logger().removeHandler(caplog.handler)
    assert m.dtype == tf.float32 and e.dtype == tf.float32  # float32 at the function's edge
    assert float(m.numpy()[0, 0]) == 1.0                    # float16 rounding of 1 + 2**-12
    assert e.numpy()[0, 0] == exact[0, 0]                  # Exp stays float32
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert text.count("Automatic Mixed Precision Grappler Pass Summary") == 1  # once
    assert "Total nodes converted: 1" in text
    assert "Whitelisted nodes converted: 1" in text
    assert "Blacklisted nodes blocking conversion: 1" in text
    assert re.search(r"Converted 1/\d+ nodes to float16 precision using 2 cast\(s\) to float16 "
                     r"\(excluding Const and Variable casts\)", text)
    assert "Nodes converted to float16: MatMul" in text


def test_without_the_rewrite_matmul_is_float32_exact():
    @tf.function
    def f(x, w):
        return tf.matmul(x, w)

    assert f(tf.constant(X), tf.constant(W)).numpy()[0, 0] == np.float32(1 + 2.0**-12)


def test_summary_names_every_converted_matmul_and_deny_blocks():
    tf.config.optimizer.set_experimental_options({"auto_mixed_precision": True})
    w1 = tf.Variable(np.ones((4, 4), np.float32))
    w2 = tf.Variable(np.ones((4, 2), np.float32))

    @tf.function
    def g(x):
        h = tf.nn.relu(tf.matmul(x, w1) + 1.0)  # Add between two MatMuls joins them
        y = tf.matmul(h, w2)
        return tf.reduce_sum(tf.exp(y))

    g(tf.ones((3, 4)))
    s = graph_pass.last_summary
    assert s["converted_nodes"][:1] == ["MatMul"] and "MatMul_1" in s["converted_nodes"]
    assert "AddV2" in s["converted_nodes"] and "Relu" in s["converted_nodes"]
    assert s["allowlisted"] == 2 and s["denylisted"] == 2  # Exp, Sum
    # variables are read in float32 and cast: those casts are not counted
    assert s["casts_to_lowered"] == 1
    assert w1.dtype == tf.float32


def test_gradients_flow_through_the_inserted_casts():
    tf.train.experimental.enable_mixed_precision_graph_rewrite(keras.optimizers.SGD())
    w = tf.Variable(np.array([[2.0], [3.0]], np.float32))
    x = tf.constant(np.array([[1.0, 1.0]], np.float32))

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            y = tf.matmul(x, w)
            loss = tf.reduce_sum(y * y)
        return tape.gradient(loss, w)

    g = step()
    assert g.dtype == tf.float32
    np.testing.assert_array_equal(g.numpy(), np.array([[10.0], [10.0]], np.float32))


@pytest.mark.filterwarnings("ignore:You forgot to call")
def test_loss_scaling_as_the_loss_scale_optimizer():
    opt = tf.train.experimental.enable_mixed_precision_graph_rewrite(
        keras.optimizers.SGD(1.0), loss_scale=DynamicLossScale(4, increment_period=2))
    ref = LossScaleOptimizer(keras.optimizers.SGD(1.0), initial_scale=4, dynamic_growth_steps=2)
    scales, ref_scales = [], []
    for o, out in ((opt, scales), (ref, ref_scales)):
        v = tf.Variable([1.0])
        for g in ([1.0], [np.inf], [1.0], [1.0], [1.0]):
            o.apply_gradients([(tf.constant(np.array(g, np.float32)), v)])
            out.append(float(o.loss_scale))
    assert scales == ref_scales == [4.0, 2.0, 2.0, 4.0, 4.0]


def _fashion(n_train=2000, n_test=1000):
    (x, y), (xt, yt) = keras.datasets.fashion_mnist.load_embedded()
    rng = np.random.default_rng(0)
    i, j = rng.permutation(len(x))[:n_train], rng.permutation(len(xt))[:n_test]
    prep = lambda a: a.reshape(len(a), 784).astype("float32") / 255  # noqa: E731
    return (prep(x[i]), y[i]), (prep(xt[j]), yt[j])


def _seed_model():
    inputs = keras.Input(shape=(784,))
    h = keras.layers.Dense(64, activation="relu")(inputs)
    h = keras.layers.Dense(64, activation="relu")(h)
    outputs = keras.layers.Dense(10, activation="softmax")(h)
    return keras.Model(inputs, outputs)


def _train(rewrite):
    (x, y), (xt, yt) = _fashion()
    tf.random.set_seed(1)
    model = _seed_model()
    opt = keras.optimizers.Adam()
    if rewrite:
        opt = tf.train.experimental.enable_mixed_precision_graph_rewrite(opt)
    model.compile(loss="sparse_categorical_crossentropy", optimizer=opt, metrics=["accuracy"])
    model.fit(x, y, batch_size=64, epochs=3, verbose=0)
    return model.evaluate(xt, yt, verbose=0)[1], opt


def test_seed_keras_example_trains_to_float32_accuracy(caplog):
    acc32, _ = _train(False)
    with caplog.at_level(logging.INFO, logger="mixprec"):
        tf.get_logger().addHandler(caplog.handler)
        try:
            acc16, opt = _train(True)
        finally:
            tf.get_logger().removeHandler(caplog.handler)
    assert isinstance(opt, LossScaleOptimizer)
    assert abs(acc16 - acc32) <= 0.01, (acc16, acc32)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert text.count("Automatic Mixed Precision Grappler Pass Summary") == 2  # train, test
    s = graph_pass.last_summary
    # the forward MatMuls and the backward ones of the train step were converted
    assert sum(n.startswith("MatMul") for n in s["converted_nodes"]) >= 3


def test_environment_variable_at_import(tmp_path):
    import os
    import subprocess
    import sys

    code = (
        "import numpy as np, mixprec as tf\n"
        "from mixprec import keras\n"
        "x = tf.constant([[1 + 2**-12]])\n"
        "assert float(tf.matmul(x, tf.constant([[1.0]]))[0, 0]) == 1.0\n"
        "m = keras.Sequential([keras.Input(shape=(2,)), keras.layers.Dense(1)])\n"
        "m.compile(optimizer='sgd', loss='mse')\n"
        "assert type(m.optimizer).__name__ == 'LossScaleOptimizer'\n"
        "try:\n"
        "    keras.mixed_precision.set_global_policy('mixed_float16')\n"
        "except ValueError:\n"
        "    print('refused')\n")
    env = dict(os.environ, TF_ENABLE_AUTO_MIXED_PRECISION="1")
    r = subprocess.run([sys.executable, "-c", code], env=env, cwd=str(tmp_path),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "refused" in r.stdout


def test_traced_custom_training_step_with_loss_scaling_matches_float32():
    (x, y), (xt, yt) = _fashion(1024, 500)
    results = {}
    for rewrite in (False, True):
        tf.random.set_seed(3)
        model = _seed_model()
        opt = keras.optimizers.Adam()
        if rewrite:
            opt = tf.train.experimental.enable_mixed_precision_graph_rewrite(opt)
        loss_fn = keras.losses.SparseCategoricalCrossentropy()

        @tf.function
        def step(xb, yb):
            with tf.GradientTape() as tape:
                loss = loss_fn(yb, model(xb, training=True))
                scaled = opt.get_scaled_loss(loss) if rewrite else loss
            grads = tape.gradient(scaled, model.trainable_variables)
            if rewrite:
                grads = opt.get_unscaled_gradients(grads)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        for _ in range(2):
            for i in range(0, len(x), 64):
                step(tf.constant(x[i:i + 64]), tf.constant(y[i:i + 64]))
        if rewrite:
            s = graph_pass.last_summary
            assert s["function"] == "step"
            # forward and backward MatMuls of the three Dense layers
            assert sum(n.startswith("MatMul") for n in s["converted_nodes"]) >= 6
            assert float(opt.loss_scale) == 2.0**15  # no overflow in 32 steps: unchanged
            tf.train.experimental.disable_mixed_precision_graph_rewrite()
        pred = np.argmax(model.predict(xt, verbose=0), axis=1)
        results[rewrite] = (np.mean(pred == yt), step, opt)
    assert abs(results[True][0] - results[False][0]) <= 0.02, results


def test_environment_lists_reach_the_traced_pass(monkeypatch, caplog):
    monkeypatch.setenv("TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_DENYLIST_ADD", "MatMul")
    tf.config.optimizer.set_experimental_options({"auto_mixed_precision": True})

    @tf.function
    def f(x, w):
        return tf.matmul(x, w)

    with caplog.at_level(logging.INFO, logger="mixprec"):
        tf.get_logger().addHandler(caplog.handler)
        try:
            out = f(tf.constant(X), tf.constant(W))
        finally:
            tf.get_logger().removeHandler(caplog.handler)
    assert out.numpy()[0, 0] == np.float32(1 + 2.0**-12)  # MatMul denied: float32
    assert "No whitelist ops found, nothing to do" in caplog.text


def test_bfloat16_variant_on_a_traced_function():
    tf.config.optimizer.set_experimental_options({"auto_mixed_precision_onednn_bfloat16": True})

    @tf.function
    def f(x, w):
        return tf.reduce_mean(tf.matmul(x, w))  # Mean is an infer op in the oneDNN lists

    out = f(tf.constant([[1 + 2.0**-9]]), tf.constant([[1.0]]))
    assert out.dtype == tf.float32 and float(out.numpy()) == 1.0  # bfloat16 rounding
    s = graph_pass.last_summary
    assert s["dtype"] == "bfloat16" and s["converted_nodes"] == ["MatMul", "Mean"]


def test_traced_and_eager_agree_where_the_pass_and_autocast_agree():
    rng = np.random.default_rng(5)
    x = tf.constant(rng.standard_normal((8, 16)).astype(np.float32))
    w1 = tf.Variable(rng.standard_normal((16, 32)).astype(np.float32))
    b = tf.Variable(rng.standard_normal((32,)).astype(np.float32))
    w2 = tf.Variable(rng.standard_normal((32, 4)).astype(np.float32))
    # the remapper's fusion (MatMul + bias + Relu in one rounding) is the other difference
    # between a traced graph and eager ops: switched off to compare the pass with autocast
    tf.config.optimizer.set_experimental_options({"auto_mixed_precision": True, "remapping": False})

    def net(x):
        return tf.reduce_sum(tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b), w2), axis=1)

    traced = tf.function(net)(x).numpy()
    tf.config.run_functions_eagerly(True)
    try:
        eager = tf.function(net)(x).numpy()
    finally:
        tf.config.run_functions_eagerly(False)
    assert graph_pass.last_summary["converted_nodes"] == [
        "MatMul", "AddV2", "Relu", "MatMul_1"]
    np.testing.assert_array_equal(traced, eager)


@pytest.mark.parametrize("run_eagerly", [False, True])
def test_convolutional_model_with_batch_norm_under_the_rewrite(run_eagerly):
    (x, y), _ = _fashion(256, 10)
    x = x.reshape(-1, 28, 28, 1)
    tf.random.set_seed(2)
    model = keras.Sequential([
        keras.Input(shape=(28, 28, 1)),
        keras.layers.Conv2D(4, 3, activation="relu"),
        keras.layers.BatchNormalization(),
        keras.layers.MaxPooling2D(),
        keras.layers.Conv2D(4, 3),
        keras.layers.Flatten(),
        keras.layers.Dense(10)])
    opt = tf.train.experimental.enable_mixed_precision_graph_rewrite(keras.optimizers.Adam())
    model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  optimizer=opt, run_eagerly=run_eagerly)
    hist = model.fit(x, y, batch_size=64, epochs=2, verbose=0)
    assert np.isfinite(hist.history["loss"]).all()
    assert hist.history["loss"][-1] < hist.history["loss"][0]
    assert all(w.dtype == tf.float32 for w in model.weights)  # variables stay float32
    out = model.predict(x[:4], verbose=0)
    assert out.dtype == np.float32
    if not run_eagerly:
        names = graph_pass.last_summary["converted_nodes"]
        assert "Conv2D" in names and "MaxPool" in names


def test_option_order_and_a_bool_loss_scale_as_tensorflow():
    # TensorFlow 2.21: True is an int there, a fixed loss scale of 1
    opt = tf.compat.v1.mixed_precision.enable_mixed_precision_graph_rewrite(
        keras.optimizers.SGD(), loss_scale=True)
    assert opt.dynamic is False and float(opt.initial_scale) == 1.0
    assert list(tf.config.optimizer.get_experimental_options()) == [
        "disable_model_pruning", "auto_mixed_precision", "disable_meta_optimizer"]
    tf.compat.v1.mixed_precision.disable_mixed_precision_graph_rewrite()
    tf.config.optimizer.set_experimental_options(
        {"remapping": False, "layout_optimizer": False, "constant_folding": True})
    try:
        # recorded from TensorFlow 2.21
        assert repr(tf.config.optimizer.get_experimental_options()) == (
            "{'layout_optimizer': False, 'constant_folding': True, 'remapping': False, "
            "'disable_model_pruning': False, 'auto_mixed_precision': False, "
            "'disable_meta_optimizer': False}")
    finally:
        tf.config.optimizer.set_experimental_options(
            {"remapping": True, "layout_optimizer": True, "constant_folding": True})
