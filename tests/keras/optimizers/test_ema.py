"""use_ema / ema_momentum / ema_overwrite_frequency and finalize_variable_values against
tf-keras 2.21 (golden/tf_ema.json, written by golden/make_tf_ema.py): the weights after every
step of a custom loop, the averages and their names, the config, the end of Model.fit; a
skipped mixed-precision step leaves the averages alone."""

import json
import os

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.testing.tolerances import assert_close

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden",
                       "tf_ema.json")) as _f:
    GOLDEN = json.load(_f)

MAKERS = {
    "sgd": lambda: keras.optimizers.SGD(0.1, use_ema=True, ema_momentum=0.5,
                                        ema_overwrite_frequency=3),
    "adam": lambda: keras.optimizers.Adam(0.05, use_ema=True, ema_momentum=0.9),
    "rmsprop": lambda: keras.optimizers.RMSprop(0.01, use_ema=True),
}


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_custom_loop_matches_tf_keras(name):
    gold = GOLDEN[name]
    opt = MAKERS[name]()
    v1, v2 = tf.Variable([1.0, -2.0, 3.0]), tf.Variable([[0.5, 0.25]])
    for step in range(7):
        g1 = tf.constant([0.3, -0.1, 0.7]) * float(step + 1)
        opt.apply_gradients([(g1, v1), (tf.constant([[-0.2, 0.4]]), v2)])
        assert_close(v1, np.float32(gold["steps"][step][0]), "float32", "optimizer")
        assert_close(v2, np.float32(gold["steps"][step][1]), "float32", "optimizer")
    for got, want in zip(opt.variables[1:3], gold["averages"]):
        assert_close(got, np.float32(want), "float32", "optimizer")
    names = [v.name for v in opt.variables]
    # (mixprec's SGD without momentum keeps no 'm' slots; tf-keras lists unused ones)
    assert names == (gold["names"][:3] if name == "sgd" else gold["names"])
    opt.finalize_variable_values([v1, v2])
    assert_close(v1, np.float32(gold["final"][0]), "float32", "optimizer")
    assert_close(v2, np.float32(gold["final"][1]), "float32", "optimizer")
    config = json.loads(json.dumps(opt.get_config(), default=float))
    config["jit_compile"] = gold["config"]["jit_compile"]  # True only where a GPU is visible
    assert config == gold["config"]
    again = type(opt).from_config(opt.get_config())
    assert again.use_ema and again.ema_momentum == opt.ema_momentum


def test_fit_ends_with_the_averages():
    keras.backend.clear_session()
    m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, kernel_initializer="ones")])
    m.compile(optimizer=keras.optimizers.SGD(0.1, use_ema=True, ema_momentum=0.8), loss="mse")
    x = np.arange(24, dtype="float32").reshape(8, 3) / 10
    m.fit(x, np.ones((8, 2), "float32"), batch_size=4, epochs=2, verbose=0, shuffle=False)
    for got, want in zip(m.get_weights(), GOLDEN["fit"]):
        assert_close(got, np.float32(want), "float32", "optimizer")


def test_skipped_step_leaves_the_average_and_errors():
    opt = keras.mixed_precision.LossScaleOptimizer(
        keras.optimizers.SGD(0.1, use_ema=True, ema_momentum=0.5))
    v = tf.Variable([1.0, 2.0])
    opt.apply_gradients([(tf.constant([1.0, 1.0]), v)])
    avg = opt.inner_optimizer.variables[1].numpy().copy()
    opt.apply_gradients([(tf.constant([np.inf, 1.0]), v)])  # skipped: non-finite
    np.testing.assert_array_equal(opt.inner_optimizer.variables[1].numpy(), avg)
    opt.finalize_variable_values([v])
    np.testing.assert_array_equal(v.numpy(), avg)
    with pytest.raises(ValueError, match="ema_momentum"):
        keras.optimizers.Adam(use_ema=True, ema_momentum=1.5)
    with pytest.raises(ValueError, match="ema_overwrite_frequency"):
        keras.optimizers.Adam(use_ema=True, ema_overwrite_frequency=0.5)
    plain = keras.optimizers.Adam()
    w = tf.Variable([3.0])
    plain.finalize_variable_values([w])  # no EMA: nothing happens
    assert w.numpy().tolist() == [3.0]
