"""The new-family optimizers mixprec adds to tf-keras 2.21's set (Adagrad, Adadelta, Adamax,
Nadam, AdamW, Ftrl, Lion): constructors and their checks, configs (tf-keras 2.21's keys,
order and values, recorded from TensorFlow), lookup by name, serialize/deserialize,
weight decay and its exclusions, slots and their names, float64 variables, traced steps.
The update rules themselves are checked against TensorFlow's numbers in test_tf_values.py."""

import json

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from tolerances import assert_close

K = keras.optimizers

# jit_compile: tf-keras keeps True (the default) only where a GPU is visible
BASE = {"weight_decay": None, "clipnorm": None, "global_clipnorm": None, "clipvalue": None,
        "use_ema": False, "ema_momentum": 0.99, "ema_overwrite_frequency": None,
        "jit_compile": bool(tf.config.list_physical_devices("GPU")),
        "is_legacy_optimizer": False}

# tf-keras 2.21's get_config() of each class made with no arguments (TF 2.21, CPU)
TF_CONFIGS = {
    "Adagrad": {"learning_rate": 0.001, "initial_accumulator_value": 0.1, "epsilon": 1e-07},
    "Adadelta": {"learning_rate": 0.001, "rho": 0.95, "epsilon": 1e-07},
    "Adamax": {"learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-07},
    "Nadam": {"learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-07},
    "AdamW": {"learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-07,
              "amsgrad": False},
    "Ftrl": {"learning_rate": 0.001, "learning_rate_power": -0.5,
             "initial_accumulator_value": 0.1, "l1_regularization_strength": 0.0,
             "l2_regularization_strength": 0.0, "l2_shrinkage_regularization_strength": 0.0,
             "beta": 0.0},
    "Lion": {"learning_rate": 0.0001, "beta_1": 0.9, "beta_2": 0.99},
}
NEW = sorted(TF_CONFIGS)


def _tf_config(name):
    cfg = {"name": name, **BASE, **TF_CONFIGS[name]}
    if name == "AdamW":
        cfg["weight_decay"] = 0.004
    return cfg


@pytest.mark.parametrize("name", NEW)
def test_default_config_is_tf_keras(name):
    cfg = getattr(K, name)().get_config()
    want = _tf_config(name)
    assert list(cfg) == list(want)
    lr = cfg.pop("learning_rate")
    assert isinstance(lr, np.float32) and lr == np.float32(want.pop("learning_rate"))
    assert cfg == want


@pytest.mark.parametrize("name", NEW)
def test_config_round_trips_through_serialize(name):
    opt = getattr(K, name)(learning_rate=0.05, clipnorm=2.0, name="mine")
    cfg = K.serialize(opt)
    assert cfg["module"] == "keras.optimizers" and cfg["class_name"] == name
    assert cfg["registered_name"] is None
    back = K.deserialize(json.loads(json.dumps(cfg)))
    assert type(back) is type(opt)
    assert back.get_config() == opt.get_config()
    assert back.name == "mine"


@pytest.mark.parametrize("name,cls", [("adagrad", "Adagrad"), ("adadelta", "Adadelta"),
                                      ("adamax", "Adamax"), ("nadam", "Nadam"),
                                      ("adamw", "AdamW"), ("ftrl", "Ftrl"), ("Nadam", "Nadam"),
                                      ("AdamW", "AdamW")])
def test_get_by_name(name, cls):
    assert type(K.get(name)) is getattr(K, cls)


def test_lion_has_no_name_and_experimental_has_no_lion():
    # tf-keras 2.21: get('lion') raises; keras.optimizers.experimental lists no Lion
    with pytest.raises(ValueError, match="Unknown optimizer: 'lion'"):
        K.get("lion")
    assert K.experimental.Nadam is K.Nadam and K.experimental.AdamW is K.AdamW
    assert "Lion" not in K.experimental.__all__


def test_compile_by_name():
    m = keras.Sequential([keras.layers.Dense(1, input_shape=(2,))])
    m.compile(optimizer="nadam", loss="mse")
    assert type(m.optimizer) is K.Nadam
    x = np.ones((8, 2), np.float32)
    m.fit(x, x[:, :1], epochs=2, verbose=0)
    assert int(m.optimizer.iterations) == 2
    k, b = [v.name.split(":")[0] for v in m.trainable_variables]
    assert [v.name for v in m.optimizer.variables][1:] == [
        "Nadam/m/%s:0" % k, "Nadam/v/%s:0" % k, "Nadam/m/%s:0" % b, "Nadam/v/%s:0" % b]


def test_argument_checks_as_tf_keras():
    with pytest.raises(ValueError, match="Missing value of `weight_decay`"):
        K.AdamW(weight_decay=None)
    with pytest.raises(ValueError, match=r"`beta_1`=0 must be between \]0, 1\]"):
        K.Lion(beta_1=0)
    with pytest.raises(ValueError, match="`learning_rate_power` needs to be negative or zero"):
        K.Ftrl(learning_rate_power=0.5)
    with pytest.raises(ValueError, match="`initial_accumulator_value` needs to be positive"):
        K.Ftrl(initial_accumulator_value=-1.0)
    for arg in ("l1", "l2", "l2_shrinkage"):
        with pytest.raises(ValueError, match="`%s_regularization_strength`" % arg):
            K.Ftrl(**{"%s_regularization_strength" % arg: -0.1})
    with pytest.raises(TypeError, match="Unexpected keyword argument"):
        K.Nadam(momentum=0.5)
    with pytest.raises(ValueError, match="ema_momentum"):  # use_ema: tests/.../test_ema.py
        K.Adagrad(use_ema=True, ema_momentum=-0.5)


def test_hyperparameters_stay_python_values():
    opt = K.Nadam(0.01, beta_1=0.8)
    assert opt.beta_1 == 0.8 and isinstance(opt.beta_1, float)
    assert isinstance(opt.learning_rate, tf.Variable)
    opt.beta_1 = 0.7
    assert opt.get_config()["beta_1"] == 0.7


def _vars():
    return [tf.Variable(np.array([0.5, -1.0, 2.0], np.float32), name="a"),
            tf.Variable(np.array([1.5, 0.25], np.float32), name="bias")]


def test_weight_decay_and_its_exclusions():
    # with a zero gradient, SGD with weight decay only decays: w *= (1 - lr * wd)
    for excl in (None, "names", "list"):
        a, b = _vars()
        opt = K.SGD(0.1, weight_decay=0.5)
        if excl == "names":
            opt.exclude_from_weight_decay(var_names=["bias"])
        elif excl == "list":
            opt.exclude_from_weight_decay(var_list=[b])
        opt.apply_gradients([(tf.zeros_like(a), a), (tf.zeros_like(b), b)])
        w = np.float32(0.5) * np.float32(0.1)
        assert_close(a.numpy(), np.array([0.5, -1.0, 2.0], np.float32) * (1 - w), "float32",
                     "optimizer")
        want_b = np.array([1.5, 0.25], np.float32) * (1 if excl else 1 - w)
        assert_close(b.numpy(), want_b, "float32", "optimizer")
    with pytest.raises(ValueError, match="can only be configued before the optimizer is built"):
        opt.exclude_from_weight_decay(var_names=["x"])


def test_slots_start_at_initial_accumulator_value():
    a, _ = _vars()
    opt = K.Adagrad(0.1, initial_accumulator_value=0.25)
    opt.apply_gradients([(tf.constant([1.0, 0.0, 2.0]), a)])
    assert [v.name for v in opt.variables] == ["iteration:0", "Adagrad/accumulator/a:0"]
    np.testing.assert_array_equal(opt.variables[1].numpy(), np.float32([1.25, 0.25, 4.25]))


def test_nadam_keeps_its_product_outside_variables():
    a, _ = _vars()
    opt = K.Nadam(0.1)
    for _ in range(2):
        opt.apply_gradients([(tf.constant([1.0, 0.0, 2.0]), a)])
    assert [v.name for v in opt.variables] == ["iteration:0", "Nadam/m/a:0", "Nadam/v/a:0"]
    # u_product = u_1 * u_2, u_t = 0.9 (1 - 0.5 * 0.96^t), in float32
    u = [np.float32(0.9) * (np.float32(1) - np.float32(0.5) * np.float32(0.96) ** t)
         for t in (1, 2)]
    assert_close(opt._u_product.numpy(), np.float32(u[0] * u[1]), "float32", "optimizer")


@pytest.mark.parametrize("name", NEW)
def test_float64_variables_keep_float64_slots(name):
    kw = {"learning_rate": 0.05}
    opt = getattr(K, name)(**kw)
    ref = getattr(K, name)(**kw)
    w = tf.Variable(np.array([0.5, -1.0, 2.0]), name="w")
    w32 = tf.Variable(np.array([0.5, -1.0, 2.0], np.float32), name="w")
    for k in range(4):
        g = np.sin(np.arange(3) + k)
        opt.apply_gradients([(tf.constant(g), w)])
        ref.apply_gradients([(tf.constant(g.astype(np.float32)), w32)])
    assert w.dtype == tf.float64
    assert all(v.dtype == tf.float64 for v in opt.variables[1:])
    # the same rule in double: within float32's optimizer tolerance of the float32 run
    assert_close(w32.numpy(), w.numpy().astype(np.float32), "float32", "optimizer")


@pytest.mark.parametrize("name", NEW)
def test_traced_steps_replay_the_eager_bits(name):
    def run(traced):
        opt = getattr(K, name)(learning_rate=K.schedules.ExponentialDecay(0.05, 2, 0.5),
                               weight_decay=0.01 if name != "AdamW" else 0.02)
        vs = _vars()

        def step(g0, g1):
            opt.apply_gradients([(g0, vs[0]), (g1, vs[1])])

        fn = tf.function(step) if traced else step
        for k in range(5):
            fn(tf.constant(np.sin(np.arange(3) + k).astype(np.float32)),
               tf.constant(np.cos(np.arange(2) + k).astype(np.float32)))
        return [v.numpy() for v in vs] + [v.numpy() for v in opt.variables]

    for a, b in zip(run(False), run(True)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", NEW)
def test_loss_scale_optimizer_skips_a_non_finite_step(name):
    opt = keras.mixed_precision.LossScaleOptimizer(getattr(K, name)(0.05))
    assert type(opt).__name__ == "LossScaleOptimizerV3" and isinstance(opt, K.Optimizer)
    a, _ = _vars()
    opt.apply_gradients([(tf.constant([1.0, 2.0, 3.0]), a)])
    before = [v.numpy() for v in [a] + list(opt.variables)]
    opt.apply_gradients([(tf.constant([1.0, np.inf, 3.0]), a)])
    after = [v.numpy() for v in [a] + list(opt.variables)]
    assert int(opt.iterations) == 2  # skipped steps count (tf-keras 2.21)
    for x, y in zip(before[:1] + before[2:], after[:1] + after[2:]):
        np.testing.assert_array_equal(x, y)
    if name == "Nadam":
        # the momentum-schedule product advances only with an applied step
        u1 = np.float32(0.9) * (np.float32(1) - np.float32(0.5) * np.float32(0.96))
        assert_close(opt.inner_optimizer._u_product.numpy(), u1, "float32", "optimizer")
