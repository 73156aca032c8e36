"""Optimizer and LossScaleOptimizer surface as tf-keras 2.21 shows it (values recorded
from TensorFlow 2.21 + tf-keras 2.21 on a CPU): class names, isinstance, return values,
the ``variables`` property, slot names under a LossScaleOptimizer, configs and the
serialized dicts."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.keras import mixed_precision

LSO = mixed_precision.LossScaleOptimizer


def test_loss_scale_optimizer_is_a_v3_and_an_optimizer():
    opt = LSO(keras.optimizers.SGD(0.1))
    assert type(opt).__name__ == "LossScaleOptimizerV3"
    assert isinstance(opt, LSO) and isinstance(opt, keras.optimizers.Optimizer)
    assert not isinstance(keras.optimizers.SGD(), LSO)


def test_apply_gradients_and_minimize_return_values():
    v = tf.Variable([1.0, 2.0])
    lso = LSO(keras.optimizers.SGD(0.1))
    assert lso.apply_gradients([(tf.constant([1.0, 1.0]), v)]) is None
    assert lso.minimize(lambda: tf.reduce_sum(v * v), [v]) is None
    plain = keras.optimizers.SGD(0.1)
    assert plain.minimize(lambda: tf.reduce_sum(v * v), [v]) is None
    it = plain.apply_gradients([(tf.constant([1.0, 1.0]), v)])
    assert int(it) == 2  # the iterations variable


def test_variables_is_a_property_and_slot_names():
    v = tf.Variable([1.0], name="w")
    adam = keras.optimizers.Adam()
    adam.apply_gradients([(tf.constant([1.0]), v)])
    assert [x.name for x in adam.variables] == ["iteration:0", "Adam/m/w:0", "Adam/v/w:0"]
    assert adam.variables() == adam.variables  # OptimizerV2-era calls keep working
    lso = LSO(keras.optimizers.Adam())
    lso.apply_gradients([(tf.constant([1.0]), v)])
    # tf-keras 2.21: without the optimizer's scope, and without the loss-scale state
    assert [x.name for x in lso.variables] == ["iteration:0", "m/w:0", "v/w:0"]
    assert [x.name for x in lso.inner_optimizer.variables] == ["iteration:0", "m/w:0", "v/w:0"]


def test_compute_gradients():
    x = tf.Variable(3.0)
    for opt in (keras.optimizers.SGD(0.1), LSO(keras.optimizers.SGD(0.1))):
        with tf.GradientTape() as tape:
            loss = x * x
        (g, var), = opt.compute_gradients(loss, [x], tape=tape)
        assert var is x and float(g) == 6.0


def test_learning_rate_under_a_schedule():
    sched = keras.optimizers.schedules.ExponentialDecay(0.1, 1, 0.5)
    opt = keras.optimizers.SGD(sched)
    assert float(opt.learning_rate) == pytest.approx(0.1)
    w = tf.Variable(1.0)
    opt.apply_gradients([(tf.constant(1.0), w)])
    opt.apply_gradients([(tf.constant(1.0), w)])
    lr = opt.learning_rate
    assert lr.name == "current_learning_rate:0" and lr.dtype == tf.float32
    assert float(lr) == np.float32(0.05) and float(opt.lr) == np.float32(0.05)
    with pytest.raises(TypeError, match="created with a `LearningRateSchedule` object"):
        opt.learning_rate = 0.3


def test_callable_learning_rate_is_read_once():
    rate = [0.5]
    opt = keras.optimizers.SGD(lambda: rate[0])
    rate[0] = 0.1
    assert float(opt.learning_rate) == 0.5 and opt.learning_rate.name == "learning_rate:0"
    assert opt.get_config()["learning_rate"] == np.float32(0.5)


def test_configs():
    sgd = keras.optimizers.SGD(0.1, momentum=0.9)
    config = sgd.get_config()
    lr = config["learning_rate"]
    assert type(lr) is np.float32 and lr == np.float32(0.1)
    assert config["momentum"] == 0.9 and config["ema_overwrite_frequency"] is None
    assert keras.optimizers.RMSprop().get_config()["ema_overwrite_frequency"] == 100
    assert keras.optimizers.Adam().get_config()["ema_overwrite_frequency"] is None


def test_serialize_dicts():
    ser = keras.optimizers.serialize(keras.optimizers.SGD())
    assert ser == {
        "module": "keras.optimizers", "class_name": "SGD",
        "config": {"name": "SGD", "weight_decay": None, "clipnorm": None,
                   "global_clipnorm": None, "clipvalue": None, "use_ema": False,
                   "ema_momentum": 0.99, "ema_overwrite_frequency": None,
                   # tf-keras keeps jit_compile=True only where a GPU is visible
                   "jit_compile": bool(tf.config.list_physical_devices("GPU")),
                   "is_legacy_optimizer": False, "learning_rate": 0.009999999776482582,
                   "momentum": 0.0, "nesterov": False},
        "registered_name": None}
    assert type(ser["config"]["learning_rate"]) is float
    sched = keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
    assert keras.optimizers.schedules.serialize(sched) == {
        "module": "keras.optimizers.schedules", "class_name": "ExponentialDecay",
        "config": {"initial_learning_rate": 0.1, "decay_steps": 10, "decay_rate": 0.5,
                   "staircase": False, "name": None},
        "registered_name": None}
    assert keras.optimizers.SGD(sched).get_config()["learning_rate"]["module"] == \
        "keras.optimizers.schedules"
    loss = keras.losses.SparseCategoricalCrossentropy()
    assert keras.losses.serialize(loss) == {
        "module": "keras.losses", "class_name": "SparseCategoricalCrossentropy",
        "config": {"reduction": "auto", "name": "sparse_categorical_crossentropy",
                   "from_logits": False, "ignore_class": None,
                   "fn": "sparse_categorical_crossentropy"},
        "registered_name": None}
    fn = keras.losses.serialize(keras.losses.sparse_categorical_crossentropy)
    assert fn == {"module": "builtins", "class_name": "function",
                  "config": "sparse_categorical_crossentropy", "registered_name": "function"}
    assert keras.losses.deserialize(fn) is keras.losses.sparse_categorical_crossentropy
    assert keras.metrics.serialize(keras.metrics.Mean()) == {
        "module": "keras.metrics", "class_name": "Mean",
        "config": {"name": "mean", "dtype": "float32"}, "registered_name": None}


def test_lookup_errors():
    with pytest.raises(ValueError, match=r"^Unknown optimizer: 'foo'\. Please ensure you are "
                                         r"using a `keras.utils.custom_object_scope`"):
        keras.optimizers.get("foo")
    with pytest.raises(ValueError, match=r"^Unknown loss function: 'foo'\. Please ensure"):
        keras.losses.get("foo")
