"""Every optimizer of tf-keras 2.21 that mixprec has (new family and ``legacy``) against
TensorFlow's own numbers: six apply_gradients steps on a fixed problem, then the variables
and every optimizer variable (names in order, values) compared with TensorFlow's
(recorded from TF 2.21 + tf-keras 2.21 on CPU) within the table's optimizer tolerance.
The numbers: tests/keras/golden/optimizers_tf_2_21.json, written by
golden/make_tf_optimizers.py (the same cases, run with TensorFlow)."""

import json
import os

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from tolerances import assert_close

_GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden",
                       "optimizers_tf_2_21.json")
with open(_GOLDEN) as _f:
    TF_2_21 = json.load(_f)

K = keras.optimizers
STEPS = 6


def _excl(opt):
    opt.exclude_from_weight_decay(var_names=["w1"])
    return opt


CASES = {
    "adagrad": lambda: K.Adagrad(learning_rate=0.1),
    "adagrad_wd": lambda: K.Adagrad(learning_rate=0.1, initial_accumulator_value=0.5,
                                    epsilon=1e-3, weight_decay=0.05),
    "adadelta": lambda: K.Adadelta(learning_rate=1.0),
    "adadelta_rho": lambda: K.Adadelta(learning_rate=0.5, rho=0.8, epsilon=1e-4),
    "adamax": lambda: K.Adamax(learning_rate=0.05),
    "nadam": lambda: K.Nadam(learning_rate=0.05),
    "nadam_b": lambda: K.Nadam(learning_rate=0.02, beta_1=0.8, beta_2=0.95, epsilon=1e-4),
    "adamw": lambda: K.AdamW(learning_rate=0.05),
    "adamw_ams": lambda: K.AdamW(learning_rate=0.05, weight_decay=0.1, amsgrad=True),
    "adam_ams": lambda: K.Adam(learning_rate=0.05, amsgrad=True),
    "ftrl": lambda: K.Ftrl(learning_rate=0.1),
    "ftrl_reg": lambda: K.Ftrl(learning_rate=0.1, learning_rate_power=-0.7,
                               l1_regularization_strength=0.01,
                               l2_regularization_strength=0.02,
                               l2_shrinkage_regularization_strength=0.03, beta=0.5),
    "lion": lambda: K.Lion(learning_rate=0.01),
    "lion_wd": lambda: K.Lion(learning_rate=0.01, beta_1=0.5, beta_2=0.9, weight_decay=0.2),
    "sgd_wd": lambda: K.SGD(learning_rate=0.1, momentum=0.9, weight_decay=0.01),
    "adam_wd_clip": lambda: K.Adam(learning_rate=0.05, weight_decay=0.1, global_clipnorm=1.0),
    "nadam_sched": lambda: K.Nadam(learning_rate=K.schedules.ExponentialDecay(0.05, 2, 0.5)),
    "adamw_sched": lambda: K.AdamW(learning_rate=K.schedules.ExponentialDecay(0.05, 2, 0.5),
                                   weight_decay=0.3),
    "adamw_excl": lambda: _excl(K.AdamW(learning_rate=0.05, weight_decay=0.3)),
    "lion_clipvalue": lambda: K.Lion(learning_rate=0.01, clipvalue=0.5),
    "legacy_sgd": lambda: K.legacy.SGD(learning_rate=0.1, momentum=0.9, decay=0.01),
    "legacy_adam": lambda: K.legacy.Adam(learning_rate=0.05, decay=0.01, amsgrad=True),
    "legacy_rmsprop": lambda: K.legacy.RMSprop(learning_rate=0.01, momentum=0.5, centered=True),
    "legacy_adagrad": lambda: K.legacy.Adagrad(learning_rate=0.1, decay=0.05),
    "legacy_adadelta": lambda: K.legacy.Adadelta(learning_rate=1.0),
    "legacy_adamax": lambda: K.legacy.Adamax(learning_rate=0.05),
    "legacy_nadam": lambda: K.legacy.Nadam(learning_rate=0.05),
    "legacy_nadam_sd": lambda: K.legacy.Nadam(learning_rate=0.05, schedule_decay=0.5),
    "legacy_ftrl": lambda: K.legacy.Ftrl(learning_rate=0.1, l1_regularization_strength=0.01,
                                         l2_shrinkage_regularization_strength=0.03, beta=0.5),
}


def w0():
    return [np.array([0.5, -1.25, 2.0], np.float32),
            np.array([[0.1, -0.3], [0.7, 1.5]], np.float32)]


def grad(k, i, shape):
    n = int(np.prod(shape))
    return (np.sin(np.arange(n, dtype=np.float64) * 1.7 + k * 0.9 + i)
            * (1.0 + 0.5 * k)).astype(np.float32).reshape(shape)


def run(make, steps=STEPS, step_fn=None):
    opt = make()
    vs = [tf.Variable(a, name="w%d" % i) for i, a in enumerate(w0())]

    def step(gs):
        opt.apply_gradients(zip(gs, vs))

    fn = step_fn(step) if step_fn else step
    for k in range(steps):
        fn([tf.constant(grad(k, i, v.shape)) for i, v in enumerate(vs)])
    return opt, vs


def check_against_tf(name, opt, vs):
    ref = TF_2_21[name]
    for v, want in zip(vs, ref["weights"]):
        assert_close(v.numpy(), np.asarray(want, np.float32), "float32", "optimizer")
    got = list(opt.variables)
    assert [v.name for v in got] == [n for n, _ in ref["variables"]]
    for v, (_, want) in zip(got, ref["variables"]):
        assert_close(np.ravel(v.numpy()).astype(np.float32), np.asarray(want, np.float32),
                     "float32", "optimizer")


@pytest.mark.parametrize("name", sorted(CASES))
def test_six_steps_match_tf_keras_2_21(name):
    opt, vs = run(CASES[name])
    check_against_tf(name, opt, vs)


@pytest.mark.parametrize("name", sorted(CASES))
def test_on_the_gpu_as_tf_keras(name):
    """The same steps with the variables on the GPU (the CUDA kernel, cuda/optim_update.cu,
    or the emulated GPU): TensorFlow's numbers within the optimizer tolerance."""
    if not tf.config.list_physical_devices("GPU"):
        pytest.skip("no GPU (MIXPREC_EMULATE_GPU=1 runs this on the emulated one)")
    with tf.device("/GPU:0"):
        opt, vs = run(CASES[name])
        assert all("GPU" in v.device for v in vs)
        check_against_tf(name, opt, vs)


@pytest.mark.parametrize("name", sorted(CASES))
def test_traced_steps_as_tf_keras(name):
    opt, vs = run(CASES[name], step_fn=tf.function)
    check_against_tf(name, opt, vs)
