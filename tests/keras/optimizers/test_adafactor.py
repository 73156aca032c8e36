"""keras.optimizers.Adafactor against tf-keras 2.21 (golden/tf_adafactor.json, written by
golden/make_tf_adafactor.py): weights after each step for a 3-D, a 2-D and a 1-D variable
(defaults, a schedule, relative_step=False, weight decay + clip_threshold), the factored
accumulators' names and values, the config, a fit; eager and traced steps agree."""

import json
import os

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.testing.tolerances import assert_close

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "..", "golden", "tf_adafactor.json")) as _f:
    GOLDEN = json.load(_f)
CASES = {
    "default": {},
    "lr_big_no_relative": {"learning_rate": 0.5, "relative_step": False},
    "schedule": {"learning_rate": keras.optimizers.schedules.ExponentialDecay(0.3, 2, 0.5)},
    "decay_clip": {"learning_rate": 0.2, "weight_decay": 0.1, "clip_threshold": 0.5,
                   "beta_2_decay": -0.5, "epsilon_2": 0.01},
}


def _start():
    rng = np.random.default_rng(3)
    return [rng.standard_normal((2, 3, 4)).astype("float32"),
            rng.standard_normal((5, 2)).astype("float32"),
            rng.standard_normal((3,)).astype("float32")]


def _grads(step):
    rng = np.random.default_rng(100 + step)
    return [rng.standard_normal((2, 3, 4)).astype("float32"),
            rng.standard_normal((5, 2)).astype("float32") * 0.1,
            rng.standard_normal((3,)).astype("float32") * 3]


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("traced", [False, True])
def test_steps_match_tf_keras(case, traced):
    gold = GOLDEN[case]
    opt = keras.optimizers.Adafactor(**CASES[case])
    vs = [tf.Variable(a, name="w%d" % i) for i, a in enumerate(_start())]

    def step(gs):
        opt.apply_gradients(zip(gs, vs))

    run = tf.function(step) if traced else step
    for s in range(5):
        run([tf.constant(g) for g in _grads(s)])
        for v, want in zip(vs, gold["steps"][s]):
            assert_close(v, np.float32(want), "float32", "optimizer",
                         err_msg="%s step %d" % (case, s))
    assert [v.name for v in opt.variables] == gold["names"]
    for v, want in zip(opt.variables, gold["values"]):
        assert_close(np.asarray(v.numpy(), np.float64), np.asarray(want), "float32",
                     "optimizer")
    config = json.loads(json.dumps(opt.get_config(), default=float))
    config["jit_compile"] = gold["config"]["jit_compile"]
    if case == "schedule":
        config["learning_rate"]["config"].pop("name", None)
        gold["config"]["learning_rate"]["config"].pop("name", None)
    assert config == gold["config"]


def test_fit_and_serialization():
    keras.backend.clear_session()
    m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, kernel_initializer="ones")])
    m.compile(optimizer=keras.optimizers.Adafactor(0.1), loss="mse")
    x = np.arange(24, dtype="float32").reshape(8, 3) / 10
    m.fit(x, np.ones((8, 2), "float32"), batch_size=4, epochs=2, verbose=0, shuffle=False)
    for got, want in zip(m.get_weights(), GOLDEN["fit"]):
        assert_close(got, np.float32(want), "float32", "optimizer")
    opt = keras.optimizers.deserialize(keras.optimizers.serialize(
        keras.optimizers.Adafactor(0.02, clip_threshold=2.0)))
    assert type(opt) is keras.optimizers.Adafactor and opt.clip_threshold == 2.0
    assert keras.optimizers.experimental.Adafactor is keras.optimizers.Adafactor
    with pytest.raises(ValueError, match="adafactor"):
        keras.optimizers.get("adafactor")  # tf-keras 2.21 has no string name for it


def test_loss_scale_optimizer_eager_skip_and_apply():
    opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.Adafactor(0.1),
                                                   initial_scale=4.0)
    v = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    opt.apply_gradients([(tf.constant([[np.inf, 1.0], [1.0, 1.0]]), v)])
    assert v.numpy().tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert float(opt.loss_scale) == 2.0
    opt.apply_gradients([(tf.constant([[0.5, 1.0], [1.0, -1.0]]), v)])
    assert not np.array_equal(v.numpy(), [[1.0, 2.0], [3.0, 4.0]])
