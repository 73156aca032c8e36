"""Keras optimizers (SGD, RMSprop, Adam) against a NumPy float64 reimplementation of
TensorFlow's update rules, over several steps, plus Keras' optimizer API: iterations,
hyperparameters, schedules, lookup by name, configs, weights, errors and clipping.

The reference rules are TensorFlow's kernels as tf-keras' OptimizerV2 calls them:
- SGD: ResourceApplyGradientDescent; with momentum ResourceApplyKerasMomentum
  (accum = m*accum - lr*g; var += accum, or var += m*accum - lr*g with Nesterov).
- RMSprop (tf-keras 2.21): epsilon inside the root on every path
  (var -= lr*g / sqrt(ms [- mg^2] + eps); with momentum
  mom = m*mom + lr*g / sqrt(ms [- mg^2] + eps); var -= mom).
- Adam: ResourceApplyAdam(WithAmsgrad): lr_t = lr*sqrt(1-b2^t)/(1-b1^t),
  m += (g-m)(1-b1), v += (g^2-v)(1-b2), [vhat = max(vhat, v)], var -= lr_t*m/(sqrt(v)+eps).
As tf-keras 2.21's optimizers, only the learning rate is a float32 variable; betas, rho and
momentum are the Python floats given (constants like 1 - b2 formed in double).
"""

import inspect
import math
import warnings

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.keras.optimizers import schedules
from tolerances import assert_close

STEPS = 6

SHAPES = [(3, 4), (5,)]


# --------------------------------------------------------------------------- references

def ref_sgd(w, grads, learning_rate, momentum=0.0, nesterov=False):
    lr = learning_rate
    w, acc = w.copy(), np.zeros_like(w)
    for g in grads:
        if momentum == 0:
            w -= lr * g
        else:
            acc = momentum * acc - lr * g
            w = w + momentum * acc - lr * g if nesterov else w + acc
    return w


def ref_rmsprop(w, grads, learning_rate, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False):
    lr = learning_rate
    w = w.copy()
    ms, mom, mg = np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
    for g in grads:
        ms = rho * ms + (1 - rho) * g * g
        denom = ms
        if centered:
            mg = rho * mg + (1 - rho) * g
            denom = ms - mg * mg
        if momentum:
            mom = momentum * mom + lr * g / np.sqrt(denom + epsilon)
            w -= mom
        else:
            w -= lr * g / np.sqrt(denom + epsilon)
    return w


def ref_adam(w, grads, learning_rate, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False):
    lr = learning_rate
    w = w.copy()
    m, v, vhat = np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
    for t, g in enumerate(grads, 1):
        lr_t = lr * math.sqrt(1 - beta_2 ** t) / (1 - beta_1 ** t)
        m = m + (g - m) * (1 - beta_1)
        v = v + (g * g - v) * (1 - beta_2)
        if amsgrad:
            vhat = np.maximum(vhat, v)
            w -= lr_t * m / (np.sqrt(vhat) + epsilon)
        else:
            w -= lr_t * m / (np.sqrt(v) + epsilon)
    return w


CONFIGS = [
    ("sgd", keras.optimizers.SGD, dict(learning_rate=0.1), ref_sgd),
    ("sgd-momentum", keras.optimizers.SGD, dict(learning_rate=0.1, momentum=0.9), ref_sgd),
    ("sgd-nesterov", keras.optimizers.SGD, dict(learning_rate=0.1, momentum=0.9, nesterov=True),
     ref_sgd),
    ("rmsprop", keras.optimizers.RMSprop, dict(learning_rate=0.01), ref_rmsprop),
    ("rmsprop-momentum", keras.optimizers.RMSprop, dict(learning_rate=0.01, momentum=0.5),
     ref_rmsprop),
    ("rmsprop-centered", keras.optimizers.RMSprop, dict(learning_rate=0.01, centered=True),
     ref_rmsprop),
    ("rmsprop-centered-momentum", keras.optimizers.RMSprop,
     dict(learning_rate=0.01, rho=0.8, momentum=0.3, centered=True, epsilon=1e-6), ref_rmsprop),
    ("adam", keras.optimizers.Adam, dict(learning_rate=0.01), ref_adam),
    ("adam-amsgrad", keras.optimizers.Adam, dict(learning_rate=0.01, amsgrad=True), ref_adam),
    ("adam-betas", keras.optimizers.Adam,
     dict(learning_rate=0.02, beta_1=0.8, beta_2=0.95, epsilon=1e-5), ref_adam),
]



def _problem(seed, dtype):
    rng = np.random.default_rng(seed)
    ws = [rng.standard_normal(s) for s in SHAPES]
    # gradients with varied magnitudes and signs; step 3 has a zero entry for amsgrad's max
    grads = [[rng.standard_normal(s) * 10.0 ** rng.integers(-2, 2) for s in SHAPES]
             for _ in range(STEPS)]
    ws = [w.astype(dtype).astype(np.float64) for w in ws]
    grads = [[g.astype(dtype).astype(np.float64) for g in gs] for gs in grads]
    return ws, grads


_HYPER = {"learning_rate"}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,cls,kw,ref", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_update_rule_matches_tensorflow(name, cls, kw, ref, dtype):
    ws, grads = _problem(7, dtype)
    variables = [tf.Variable(w.astype(dtype)) for w in ws]
    opt = cls(**kw)
    for step in range(STEPS):
        opt.apply_gradients(zip([tf.constant(g, dtype) for g in grads[step]], variables))
    assert int(opt.iterations.numpy()) == STEPS
    # tf-keras keeps the learning rate in a float32 variable, cast to the variable's dtype
    defaults = {k: p.default for k, p in inspect.signature(ref).parameters.items()
                if p.default is not inspect.Parameter.empty}
    hyper = {k: float(np.float32(x)) if k in _HYPER else x
             for k, x in dict(defaults, **kw).items()}
    for k, v in enumerate(variables):
        expected = ref(ws[k], [g[k] for g in grads], **hyper)
        assert v.dtype == tf.as_dtype(dtype)
        # float32 math vs a float64 reference; float64 variables are float64-accurate
        assert_close(v, expected, dtype, "optimizer")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_variables_are_updated(dtype):
    v = tf.Variable(tf.constant([1.0, -2.0], dtype))
    keras.optimizers.SGD(0.5).apply_gradients([(tf.constant([1.0, 1.0], dtype), v)])
    assert v.dtype == tf.as_dtype(dtype)
    np.testing.assert_array_equal(v.numpy().astype(np.float32), [0.5, -2.5])


def test_float32_sgd_step_of_2_to_minus_14_is_not_lost():
    # the acceptance fact: a float32 master weight keeps an update float16 would round away
    v = tf.Variable(1.0)
    keras.optimizers.SGD(2.0 ** -14).apply_gradients([(tf.constant(1.0), v)])
    assert v.numpy() == np.float32(1 - 2 ** -14)
    v16 = tf.Variable(tf.constant(1.0, "float16"))
    keras.optimizers.SGD(2.0 ** -14).apply_gradients([(tf.constant(1.0, "float16"), v16)])
    assert v16.numpy() == np.float16(1.0)  # the same step is lost on a float16 weight


# --------------------------------------------------------------------------- iterations, lr

def test_iterations():
    opt = keras.optimizers.SGD(0.1)
    v = tf.Variable(1.0)
    assert opt.iterations.dtype == tf.int64 and int(opt.iterations) == 0
    for _ in range(3):
        opt.apply_gradients([(tf.constant(1.0), v)])
    assert int(opt.iterations) == 3
    opt.iterations = 10
    assert int(opt.iterations) == 10
    it = tf.Variable(5, dtype="int64")
    opt.iterations = it
    opt.apply_gradients([(tf.constant(1.0), v)])
    assert opt.iterations is it and int(it) == 6


def test_learning_rate_float_is_settable():
    opt = keras.optimizers.SGD(0.1)
    v = tf.Variable(1.0)
    assert isinstance(opt.learning_rate, tf.Variable)
    np.testing.assert_allclose(float(opt.learning_rate), 0.1, rtol=1e-6)
    opt.learning_rate = 0.5
    np.testing.assert_allclose(float(opt.lr), 0.5)
    opt.apply_gradients([(tf.constant(1.0), v)])
    assert float(v) == 0.5
    opt.lr = 0.25
    opt.apply_gradients([(tf.constant(1.0), v)])
    assert float(v) == 0.25


def test_learning_rate_variable_is_used_live():
    # TensorFlow keeps the user's variable as the hyperparameter
    lr = tf.Variable(0.5)
    opt = keras.optimizers.SGD(lr)
    v = tf.Variable(1.0)
    assert opt.learning_rate is lr
    lr.assign(0.25)
    opt.apply_gradients([(tf.constant(1.0), v)])
    assert float(v) == 0.75
    opt.learning_rate = 0.125  # assigns into the variable
    assert float(lr) == 0.125
    opt.learning_rate = tf.Variable(0.0625)  # so does another variable
    assert opt.learning_rate is lr and float(lr) == 0.0625
    m = tf.Variable(0.5)
    assert keras.optimizers.SGD(momentum=m).momentum is m


def test_learning_rate_callable_and_schedule():
    v = tf.Variable(0.0)
    opt = keras.optimizers.SGD(lambda: 0.5)
    opt.apply_gradients([(tf.constant(1.0), v)])
    assert float(v) == -0.5
    sched = schedules.ExponentialDecay(1.0, decay_steps=1, decay_rate=0.5)
    opt = keras.optimizers.SGD(sched)
    v = tf.Variable(0.0)
    for _ in range(3):  # lr at iterations 0, 1, 2: 1, 0.5, 0.25
        opt.apply_gradients([(tf.constant(1.0), v)])
    np.testing.assert_allclose(float(v), -1.75)
    # tf-keras 2.21: under a schedule, learning_rate reads a variable holding the last
    # step's rate, and a number cannot replace the schedule
    lr = opt.learning_rate
    assert lr.name == "current_learning_rate:0" and float(lr) == 0.25
    with pytest.raises(TypeError, match="hence its learning rate is not settable"):
        opt.learning_rate = 0.5
    opt = keras.optimizers.SGD(0.1)
    opt.learning_rate = schedules.PiecewiseConstantDecay([10], [0.5, 0.01])
    opt.apply_gradients([(tf.constant(1.0), v)])
    np.testing.assert_allclose(float(v), -2.25)
    assert float(opt.learning_rate) == 0.5
    assert opt.get_config()["learning_rate"]["module"] == "keras.optimizers.schedules"


def test_decay():
    opt = keras.optimizers.SGD(1.0, decay=1.0)
    v = tf.Variable(0.0)
    for _ in range(3):  # lr / (1 + decay * iterations)
        opt.apply_gradients([(tf.constant(1.0), v)])
    np.testing.assert_allclose(float(v), -(1 + 1 / 2 + 1 / 3), rtol=1e-6)


def test_momentum_set_after_construction():
    # TensorFlow decides at construction whether the momentum slot (and kernel) is used;
    # the value may change later, to zero too
    v = tf.Variable(1.0)
    opt = keras.optimizers.SGD(0.5)
    opt.momentum = 0.9  # ignored: plain gradient descent, as TensorFlow
    opt.apply_gradients([(tf.constant(1.0), v)])
    opt.apply_gradients([(tf.constant(1.0), v)])
    assert float(v) == 0.0 and opt.get_slot_names() == []
    v = tf.Variable(1.0)
    opt = keras.optimizers.SGD(0.5, momentum=0.5)
    opt.momentum = 0.0  # the momentum kernel with m = 0
    opt.apply_gradients([(tf.constant(1.0), v)])
    assert float(v) == 0.5
    np.testing.assert_allclose(opt.get_slot(v, "momentum").numpy(), -0.5)
    # RMSprop: epsilon inside the root, on the momentum path with momentum 0 and without
    w = tf.Variable([1.0])
    opt = keras.optimizers.RMSprop(0.1, momentum=0.5, epsilon=0.01)
    opt.momentum = 0.0
    opt.apply_gradients([(tf.constant([1.0]), w)])
    np.testing.assert_allclose(w.numpy(), [1 - 0.1 / math.sqrt(0.1 + 0.01)], rtol=1e-6)
    w = tf.Variable([1.0])
    opt = keras.optimizers.RMSprop(0.1, epsilon=0.01)
    opt.momentum = 0.5
    opt.apply_gradients([(tf.constant([1.0]), w)])
    np.testing.assert_allclose(w.numpy(), [1 - 0.1 / math.sqrt(0.1 + 0.01)], rtol=1e-6)


def test_hyperparameters_as_attributes():
    opt = keras.optimizers.Adam(0.01, beta_1=0.5)
    np.testing.assert_allclose(float(opt.beta_1), 0.5)
    opt.beta_1 = 0.7
    np.testing.assert_allclose(float(opt.beta_1), 0.7, rtol=1e-6)
    assert opt.epsilon == 1e-7 and opt.amsgrad is False
    with pytest.raises(AttributeError):
        opt.nope


# --------------------------------------------------------------------------- lookup, configs

@pytest.mark.parametrize("name,cls", [("sgd", keras.optimizers.SGD), ("SGD", keras.optimizers.SGD),
                                      ("rmsprop", keras.optimizers.RMSprop),
                                      ("RMSprop", keras.optimizers.RMSprop),
                                      ("adam", keras.optimizers.Adam),
                                      ("Adam", keras.optimizers.Adam)])
def test_get_by_name(name, cls):
    opt = keras.optimizers.get(name)
    assert type(opt) is cls


def test_get_passes_instances_and_configs():
    opt = keras.optimizers.Adam(0.5)
    assert keras.optimizers.get(opt) is opt
    # tf-keras 2.21: a config without is_legacy_optimizer makes the legacy class
    o2 = keras.optimizers.get({"class_name": "SGD", "config": {"learning_rate": 0.2}})
    assert type(o2) is keras.optimizers.legacy.SGD
    o3 = keras.optimizers.get({"class_name": "SGD", "config": {"learning_rate": 0.2,
                                                               "is_legacy_optimizer": False}})
    assert type(o3) is keras.optimizers.SGD
    np.testing.assert_allclose(float(o2.learning_rate), 0.2, rtol=1e-6)
    with pytest.raises(ValueError, match="Unknown optimizer"):
        keras.optimizers.get("adamw2")
    with pytest.raises(ValueError):
        keras.optimizers.get(3)


@pytest.mark.parametrize("opt", [
    keras.optimizers.SGD(0.3, momentum=0.5, nesterov=True, clipnorm=1.0),
    keras.optimizers.RMSprop(0.01, rho=0.8, momentum=0.1, epsilon=1e-6, centered=True,
                             clipvalue=2.0),
    keras.optimizers.Adam(0.02, beta_1=0.8, beta_2=0.9, epsilon=1e-5, amsgrad=True,
                          global_clipnorm=3.0, name="my_adam"),
    keras.optimizers.SGD(schedules.ExponentialDecay(0.1, 10, 0.5)),
], ids=["sgd", "rmsprop", "adam", "schedule"])
def test_config_round_trip(opt):
    config = opt.get_config()
    again = type(opt).from_config(config)
    assert again.get_config() == config
    ser = keras.optimizers.serialize(opt)
    assert ser["class_name"] == type(opt).__name__
    assert keras.optimizers.deserialize(ser).get_config() == config


def test_config_contents():
    c = keras.optimizers.SGD(0.5, momentum=0.25).get_config()
    assert c["name"] == "SGD" and c["momentum"] == 0.25 and c["nesterov"] is False
    np.testing.assert_allclose(c["learning_rate"], 0.5)
    c = keras.optimizers.Adam().get_config()
    assert (c["beta_1"], c["beta_2"], c["epsilon"], c["amsgrad"]) == (
        pytest.approx(0.9), pytest.approx(0.999), 1e-7, False)
    c = keras.optimizers.RMSprop().get_config()
    assert (c["rho"], c["momentum"], c["centered"]) == (pytest.approx(0.9), 0.0, False)
    # TF's legacy "lr" key is read too
    assert float(keras.optimizers.SGD.from_config({"lr": 0.125}).learning_rate) == 0.125


def test_get_and_set_weights():
    a, b = tf.Variable([1.0, 2.0]), tf.Variable([[3.0]])
    opt = keras.optimizers.Adam(0.1)
    opt.apply_gradients([(tf.constant([0.1, 0.2]), a), (tf.constant([[0.3]]), b)])
    weights = opt.get_weights()
    # iterations, then each variable's slots (m, v) in order
    assert len(weights) == 5 and weights[0] == 1
    assert [w.shape for w in weights[1:]] == [(2,), (2,), (1, 1), (1, 1)]
    opt2 = keras.optimizers.Adam(0.1)
    a2, b2 = tf.Variable([1.0, 2.0]), tf.Variable([[3.0]])
    opt2.apply_gradients([(tf.constant([0.0, 0.0]), a2), (tf.constant([[0.0]]), b2)])
    opt2.set_weights(weights)
    for w1, w2 in zip(opt.get_weights(), opt2.get_weights()):
        np.testing.assert_array_equal(w1, w2)
    # the restored state continues identically
    a2.assign(a.numpy())
    b2.assign(b.numpy())
    for o, x, y in ((opt, a, b), (opt2, a2, b2)):
        o.apply_gradients([(tf.constant([0.5, -0.5]), x), (tf.constant([[1.0]]), y)])
    np.testing.assert_array_equal(a.numpy(), a2.numpy())
    with pytest.raises(ValueError, match="weight list of length 2, but the optimizer was "
                                         "expecting 5"):
        opt2.set_weights(weights[:2])


def test_slot_dtypes():
    opt = keras.optimizers.Adam()
    vs = [tf.Variable([1.0], dtype=dt) for dt in ("float64", "float32", "float16", "bfloat16")]
    opt.apply_gradients([(tf.constant([1.0], v.dtype), v) for v in vs])
    assert [opt.get_slot(v, "m").dtype for v in vs] == [tf.float64] + [tf.float32] * 3


def test_slots():
    v = tf.Variable([1.0, 2.0])
    opt = keras.optimizers.RMSprop(momentum=0.5, centered=True)
    assert opt.get_slot_names() == ["rms", "momentum", "mg"]
    opt.apply_gradients([(tf.constant([1.0, 1.0]), v)])
    rms = opt.get_slot(v, "rms")
    np.testing.assert_allclose(rms.numpy(), [0.1, 0.1], rtol=1e-6)
    assert keras.optimizers.SGD().get_slot_names() == []
    assert keras.optimizers.SGD(momentum=0.9).get_slot_names() == ["momentum"]
    assert keras.optimizers.Adam(amsgrad=True).get_slot_names() == ["m", "v", "vhat"]
    with pytest.raises(KeyError):
        opt.get_slot(v, "nope")


def test_minimize():
    v = tf.Variable(3.0)
    opt = keras.optimizers.SGD(0.25)
    opt.minimize(lambda: v * v, [v])
    assert float(v) == 1.5
    with tf.GradientTape() as t:
        loss = v * v
    opt.minimize(loss, [v], tape=t)
    assert float(v) == 0.75
    with pytest.raises(ValueError, match="`tape` is required"):
        opt.minimize(v * v, [v])


# --------------------------------------------------------------------------- errors

@pytest.mark.parametrize("cls", [keras.optimizers.SGD, keras.optimizers.RMSprop])
@pytest.mark.parametrize("momentum", [-0.1, 1.5, "0.5"])
def test_bad_momentum(cls, momentum):
    with pytest.raises(ValueError, match="`momentum` must be between \\[0, 1\\]"):
        cls(momentum=momentum)


def test_bad_arguments():
    with pytest.raises(TypeError, match="Unexpected keyword argument"):
        keras.optimizers.SGD(foo=1)
    with pytest.raises(ValueError, match="Cannot accept both `clipnorm` and `global_clipnorm`"):
        keras.optimizers.SGD(clipnorm=1.0, global_clipnorm=1.0)
    with pytest.raises(ValueError):
        keras.optimizers.SGD(clipnorm=-1.0)
    with pytest.raises(ValueError, match="decay cannot be less than 0"):
        keras.optimizers.SGD(decay=-1.0)


def test_apply_gradients_errors():
    v = tf.Variable([1.0, 2.0])
    opt = keras.optimizers.SGD(0.1)
    with pytest.raises(ValueError, match="shape"):
        opt.apply_gradients([(tf.constant([1.0, 2.0, 3.0]), v)])
    with pytest.raises(TypeError, match="float16.*float32"):
        opt.apply_gradients([(tf.constant([1.0, 2.0], "float16"), v)])
    with pytest.raises(TypeError, match="not a mixprec.Variable"):
        opt.apply_gradients([(tf.constant([1.0, 2.0]), tf.constant([1.0, 2.0]))])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # raises, without the None-gradient warning
        with pytest.raises(ValueError, match="No gradients provided for any variable"):
            opt.apply_gradients([(None, v)])
    with pytest.raises(ValueError):
        opt.apply_gradients([tf.constant(1.0)])
    np.testing.assert_array_equal(v.numpy(), [1, 2])
    assert int(opt.iterations) == 0


def test_none_gradients_are_warned_and_skipped():
    a, b = tf.Variable(1.0, name="a"), tf.Variable(1.0, name="b")
    opt = keras.optimizers.SGD(0.5)
    with pytest.warns(UserWarning, match=r"Gradients do not exist for variables \['b:0'\]"):
        opt.apply_gradients([(tf.constant(1.0), a), (None, b)])
    assert float(a) == 0.5 and float(b) == 1.0


# --------------------------------------------------------------------------- clipping

def test_clipvalue():
    v = tf.Variable([0.0, 0.0, 0.0])
    keras.optimizers.SGD(1.0, clipvalue=0.5).apply_gradients(
        [(tf.constant([2.0, -3.0, 0.25]), v)])
    np.testing.assert_allclose(v.numpy(), [-0.5, 0.5, -0.25])


def test_clipnorm_is_per_gradient():
    a, b = tf.Variable([0.0, 0.0]), tf.Variable([0.0])
    keras.optimizers.SGD(1.0, clipnorm=1.0).apply_gradients(
        [(tf.constant([3.0, 4.0]), a), (tf.constant([0.5]), b)])
    np.testing.assert_allclose(a.numpy(), [-0.6, -0.8], rtol=1e-6)
    np.testing.assert_allclose(b.numpy(), [-0.5])


def test_global_clipnorm():
    a, b = tf.Variable([0.0, 0.0]), tf.Variable([0.0])
    keras.optimizers.SGD(1.0, global_clipnorm=2.5).apply_gradients(
        [(tf.constant([3.0, 0.0]), a), (tf.constant([4.0]), b)])  # global norm 5
    np.testing.assert_allclose(a.numpy(), [-1.5, 0.0], rtol=1e-6)
    np.testing.assert_allclose(b.numpy(), [-2.0], rtol=1e-6)


def test_clipvalue_then_clipnorm():
    v = tf.Variable([0.0, 0.0])
    keras.optimizers.SGD(1.0, clipvalue=4.0, clipnorm=1.0).apply_gradients(
        [(tf.constant([-30.0, 3.0]), v)])  # -> [-4, 3] -> norm 5 -> [-0.8, 0.6]
    np.testing.assert_allclose(v.numpy(), [0.8, -0.6], rtol=1e-6)


def test_no_warnings_on_a_plain_step():
    v = tf.Variable(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        keras.optimizers.Adam().apply_gradients([(tf.constant(1.0), v)])


@pytest.mark.parametrize("bad", [tf.Variable(0), tf.Variable(0.0), tf.Variable([5, 6, 7], dtype=tf.int64),
                                 tf.Variable(np.zeros(0, np.int64))], ids=["int32", "float", "vector", "empty"])
def test_iterations_must_be_an_int64_scalar_variable(bad):
    # the core keeps the step count as one int64: anything else used to be read and written
    # as 8 bytes (NaN weights, a store past an int32 vector's first element)
    opt = keras.optimizers.Adam(0.1)
    with pytest.raises(TypeError, match="int64 scalar"):
        opt.iterations = bad
    opt.iterations = tf.Variable(3, dtype=tf.int64)
    v = tf.Variable([1.0, 2.0])
    opt.apply_gradients([(tf.constant([1.0, 1.0]), v)])
    assert int(opt.iterations) == 4
    with pytest.raises(ValueError, match="int64"):
        opt.iterations = 2**63


def test_iterations_wrap_at_the_int64_maximum():
    opt = keras.optimizers.SGD(0.1)
    opt.iterations = 2**63 - 1
    v = tf.Variable([1.0, 2.0])
    opt.apply_gradients([(tf.constant([1.0, 1.0]), v)])
    assert int(opt.iterations) == -2**63
    np.testing.assert_allclose(v.numpy(), [0.9, 1.9], rtol=1e-6)


def test_a_learning_rate_variable_set_before_the_first_step_is_used_itself():
    lr = tf.Variable(0.5)
    opt = keras.optimizers.SGD(0.1)
    opt.learning_rate = lr
    lr.assign(0.0)  # the optimizer reads this variable, not a copy
    v = tf.Variable([1.0])
    opt.apply_gradients([(tf.constant([1.0]), v)])
    np.testing.assert_array_equal(v.numpy(), [1.0])
    with pytest.raises(ValueError, match="scalar"):
        keras.optimizers.SGD(0.1).learning_rate = tf.Variable([0.1, 0.2])


@pytest.mark.parametrize("beta_2", [0.999, 0.95])
def test_adam_constants_are_rounded_once_as_tf_keras(beta_2):
    """tf-keras forms 1 - beta in double and rounds once: after one step from zero slots
    v = float32(1 - beta_2) * g^2 and m = float32(1 - beta_1) * g, bit for bit (rounding
    beta_2 to float32 first gave 0.00099998713 for 0.999: 1.3e-5 relative off)."""
    g = np.array([0.5, -3.0, 1e-3, 7.25], np.float32)
    v = tf.Variable(np.ones(4, np.float32))
    opt = keras.optimizers.Adam(learning_rate=0.01, beta_2=beta_2)
    opt.apply_gradients([(tf.constant(g), v)])
    c1, c2 = np.float32(1 - 0.9), np.float32(1 - beta_2)  # double, rounded once
    np.testing.assert_array_equal(opt.get_slot(v, "m").numpy(), g * c1)
    np.testing.assert_array_equal(opt.get_slot(v, "v").numpy(), (g * g) * c2)
    # the float64 reference of tf-keras' formula for the first step's update
    alpha = np.float32(np.float32(0.01) * np.sqrt(np.float32(1) - np.float32(beta_2))
                       / (np.float32(1) - np.float32(0.9)))
    m, vv = (g * c1).astype(np.float64), ((g * g) * c2).astype(np.float64)
    want = 1.0 - m * float(alpha) / (np.sqrt(vv) + 1e-7)
    assert_close(v, want, "float32", "optimizer")
    if beta_2 == 0.999:
        assert np.float32(1) - np.float32(0.999) != c2  # what the old rule did


def test_rmsprop_one_minus_rho_is_rounded_once():
    g = np.array([2.0, -0.25], np.float32)
    v = tf.Variable(np.zeros(2, np.float32))
    opt = keras.optimizers.RMSprop(learning_rate=0.1, rho=0.9)
    opt.apply_gradients([(tf.constant(g), v)])
    ms = opt.get_slot(v, "rms").numpy()
    np.testing.assert_array_equal(ms, np.float32(1 - 0.9) * (g * g))


def test_nesterov_adds_one_increment_as_tensorflow():
    """tf-keras (and ResourceApplyKerasMomentum) add (m*momentum - g*lr) to the variable in
    one addition; (w + m*momentum) - g*lr rounds differently."""
    w0, g = np.float32(1.0), np.float32(0.3)
    v = tf.Variable([w0])
    opt = keras.optimizers.SGD(learning_rate=0.1, momentum=0.9, nesterov=True)
    opt.apply_gradients([(tf.constant([g]), v)])
    lr, mom = np.float32(0.1), np.float32(0.9)
    m = np.float32(np.float32(0) * mom - lr * g)
    assert v.numpy()[0] == np.float32(w0 + np.float32(mom * m - lr * g))
