"""``keras.optimizers.legacy`` (tf-keras 2.21's OptimizerV2 family): its own family for
isinstance, constructor keywords, configs before and after the first step (recorded from
TensorFlow), variable and slot names and their order, get_slot/get_slot_names, lookup and
(de)serialization, and LossScaleOptimizer over a legacy optimizer (tf-keras' legacy
LossScaleOptimizer class). The legacy rules' numbers: test_tf_values.py."""

import json

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras

K = keras.optimizers
L = keras.optimizers.legacy
NAMES = ["SGD", "Adam", "RMSprop", "Adagrad", "Adadelta", "Adamax", "Nadam", "Ftrl"]

# tf-keras 2.21's legacy get_config() with no arguments (before any step)
TF_CONFIGS = {
    "SGD": {"name": "SGD", "learning_rate": 0.01, "decay": 0.0, "momentum": 0.0,
            "nesterov": False},
    "Adam": {"name": "Adam", "learning_rate": 0.001, "decay": 0.0, "beta_1": 0.9,
             "beta_2": 0.999, "epsilon": 1e-07, "amsgrad": False},
    "RMSprop": {"name": "RMSprop", "learning_rate": 0.001, "decay": 0.0, "rho": 0.9,
                "momentum": 0.0, "epsilon": 1e-07, "centered": False},
    "Adagrad": {"name": "Adagrad", "learning_rate": 0.001, "decay": 0.0,
                "initial_accumulator_value": 0.1, "epsilon": 1e-07},
    "Adadelta": {"name": "Adadelta", "learning_rate": 0.001, "decay": 0.0, "rho": 0.95,
                 "epsilon": 1e-07},
    "Adamax": {"name": "Adamax", "learning_rate": 0.001, "decay": 0.0, "beta_1": 0.9,
               "beta_2": 0.999, "epsilon": 1e-07},
    "Nadam": {"name": "Nadam", "learning_rate": 0.001, "decay": 0.004, "beta_1": 0.9,
              "beta_2": 0.999, "epsilon": 1e-07},
    "Ftrl": {"name": "Ftrl", "learning_rate": 0.001, "decay": 0.0,
             "initial_accumulator_value": 0.1, "learning_rate_power": -0.5,
             "l1_regularization_strength": 0.0, "l2_regularization_strength": 0.0,
             "beta": 0.0, "l2_shrinkage_regularization_strength": 0.0},
}
# after one step with clipvalue=5.0, global_clipnorm=3.0: the keys OptimizerV2 keeps as
# variables read back as np.float32
TF_FLOAT32_AFTER_A_STEP = {
    "SGD": ["learning_rate", "momentum"], "Adam": ["learning_rate", "beta_1", "beta_2"],
    "RMSprop": ["learning_rate", "rho", "momentum"], "Adagrad": ["learning_rate"],
    "Adadelta": ["learning_rate", "rho"], "Adamax": ["learning_rate", "beta_1", "beta_2"],
    "Nadam": ["learning_rate", "beta_1", "beta_2"],
    "Ftrl": ["learning_rate", "learning_rate_power", "l1_regularization_strength",
             "l2_regularization_strength", "beta"],
}
TF_SLOT_NAMES = {"SGD": [], "Adam": ["m", "v"], "RMSprop": ["rms"],
                 "Adagrad": ["accumulator"], "Adadelta": ["accum_grad", "accum_var"],
                 "Adamax": ["m", "v"], "Nadam": ["m", "v"], "Ftrl": ["accumulator", "linear"]}


@pytest.mark.parametrize("name", NAMES)
def test_legacy_is_its_own_family(name):
    opt = getattr(L, name)()
    assert isinstance(opt, L.Optimizer)
    assert not isinstance(opt, K.Optimizer)
    if hasattr(K, name):
        assert not isinstance(opt, getattr(K, name))
        assert not isinstance(getattr(K, name)(), L.Optimizer)
        assert not issubclass(getattr(L, name), getattr(K, name))


@pytest.mark.parametrize("name", NAMES)
def test_config_before_and_after_a_step(name):
    opt = getattr(L, name)()
    cfg = opt.get_config()
    assert list(cfg) == list(TF_CONFIGS[name]) and cfg == TF_CONFIGS[name]
    assert all(type(v) is not np.float32 for v in cfg.values())
    opt = getattr(L, name)(clipvalue=5.0, global_clipnorm=3.0)
    v = tf.Variable([1.0, 2.0], name="v")
    opt.apply_gradients([(tf.constant([0.5, 0.5]), v)])
    cfg = opt.get_config()
    assert list(cfg)[:3] == ["name", "clipvalue", "global_clipnorm"]
    assert [k for k, x in cfg.items() if type(x) is np.float32] == TF_FLOAT32_AFTER_A_STEP[name]
    assert opt.get_slot_names() == TF_SLOT_NAMES[name]
    assert opt.iterations.name == "%s/iter:0" % name
    for slot in TF_SLOT_NAMES[name]:
        assert opt.get_slot(v, slot).name == "%s/v/%s:0" % (name, slot)
    with pytest.raises(KeyError):
        opt.get_slot(v, "zzz")


def test_variables_are_slot_by_slot():
    # OptimizerV2 adds each slot for every variable before the next slot (Ftrl: both per
    # variable); Nadam's momentum_cache follows iter
    a = tf.Variable([1.0, 2.0], name="a")
    b = tf.Variable([3.0], name="b")
    names = {}
    for name in ("Adam", "Nadam", "Ftrl"):
        opt = getattr(L, name)(0.1)
        opt.apply_gradients([(tf.constant([0.5, 0.5]), a), (tf.constant([1.0]), b)])
        names[name] = [x.name for x in opt.variables()]
        assert names[name] == [x.name for x in opt.weights]
    assert names["Adam"] == ["Adam/iter:0", "Adam/a/m:0", "Adam/b/m:0", "Adam/a/v:0",
                             "Adam/b/v:0"]
    assert names["Nadam"] == ["Nadam/iter:0", "Nadam/momentum_cache:0", "Nadam/a/m:0",
                              "Nadam/b/m:0", "Nadam/a/v:0", "Nadam/b/v:0"]
    assert names["Ftrl"] == ["Ftrl/iter:0", "Ftrl/a/accumulator:0", "Ftrl/a/linear:0",
                             "Ftrl/b/accumulator:0", "Ftrl/b/linear:0"]


def test_legacy_names_itself_only_by_name_attribute():
    opt = L.Adam(name="mine")
    assert opt._name == "mine" and not hasattr(opt, "name")
    assert K.Adam(name="mine").name == "mine"


def test_legacy_keywords():
    with pytest.raises(TypeError, match="Unexpected keyword argument passed to optimizer: "
                                        "weight_decay"):
        L.Adam(weight_decay=0.1)
    with pytest.raises(ValueError, match="initial_accumulator_value must be non-negative"):
        L.Adagrad(initial_accumulator_value=-1)
    assert L.Nadam(schedule_decay=0.01).get_config()["decay"] == 0.01
    opt = L.SGD(lr=0.5, decay=0.1)
    assert opt.get_config()["learning_rate"] == 0.5 and opt.get_config()["decay"] == 0.1


@pytest.mark.parametrize("name", NAMES)
def test_serialize_and_lookup(name):
    opt = getattr(L, name)(learning_rate=0.05)
    cfg = K.serialize(opt)
    assert cfg["module"] == "keras.optimizers.legacy" and cfg["class_name"] == name
    back = K.deserialize(json.loads(json.dumps(cfg)))
    assert type(back) is type(opt) and back.get_config() == opt.get_config()
    # tf-keras 2.21: a non-empty config without is_legacy_optimizer is a legacy one
    assert type(K.get({"class_name": name, "config": {"learning_rate": 0.1}})) is type(opt)
    if hasattr(K, name):
        assert type(K.get(name.lower())) is getattr(K, name)


def test_loss_scale_optimizer_over_a_legacy_optimizer():
    LSO = keras.mixed_precision.LossScaleOptimizer
    lso = LSO(L.SGD(0.1, momentum=0.9))
    assert type(lso) is LSO and type(lso).__name__ == "LossScaleOptimizer"
    assert isinstance(lso, LSO) and isinstance(lso, L.Optimizer)
    assert not isinstance(lso, K.Optimizer) and not isinstance(lso, L.SGD)
    new = LSO(K.SGD(0.1))
    assert type(new).__name__ == "LossScaleOptimizerV3"
    assert isinstance(new, K.Optimizer) and not isinstance(new, L.Optimizer)
    cfg = K.serialize(lso)
    assert cfg["class_name"] == "LossScaleOptimizer"
    assert cfg["registered_name"] == "LossScaleOptimizer"
    assert cfg["config"]["inner_optimizer"]["module"] == "keras.optimizers.legacy"
    back = K.deserialize(json.loads(json.dumps(cfg)))
    assert type(back) is LSO and type(back.inner_optimizer) is L.SGD
    # a step: the legacy slot keeps its scoped name; a non-finite one is skipped
    v = tf.Variable([1.0, 2.0], name="v")
    lso.apply_gradients([(tf.constant([0.5, 0.5]), v)])
    assert lso.get_slot(v, "momentum").name == "SGD/v/momentum:0"
    w = v.numpy()
    lso.apply_gradients([(tf.constant([np.inf, 0.5]), v)])
    np.testing.assert_array_equal(v.numpy(), w)
    assert float(lso.loss_scale) == 16384.0


def test_compile_with_a_legacy_optimizer_trains():
    m = keras.Sequential([keras.layers.Dense(1, input_shape=(2,))])
    m.compile(optimizer=L.Adagrad(0.1), loss="mse")
    x = np.ones((8, 2), np.float32)
    h = m.fit(x, x[:, :1], epochs=3, verbose=0)
    assert h.history["loss"][-1] < h.history["loss"][0]
    assert [v.name for v in m.optimizer.variables()] == ["Adagrad/iter:0"] + [
        "Adagrad/%s/accumulator:0" % v.name.split(":")[0] for v in m.trainable_variables]


def test_h5_model_file_keeps_a_legacy_optimizer(tmp_path):
    """As tf-keras 2.21 writes it: the plain class name and the OptimizerV2 config (float32
    hyperparameters as floats), optimizer_weights under the legacy names, slot by slot;
    read back into the legacy class with its state."""
    h5py = pytest.importorskip("h5py")
    m = keras.Sequential([keras.layers.Dense(2, input_shape=(3,))])
    m.compile(L.Nadam(0.01), "mse")
    x = np.ones((4, 3), np.float32)
    m.fit(x, x[:, :2], verbose=0)
    path = str(tmp_path / "m.h5")
    m.save(path)
    k, b = [v.name.split(":")[0] for v in m.trainable_variables]
    with h5py.File(path) as f:
        cfg = json.loads(f.attrs["training_config"])["optimizer_config"]
        names = [n.decode() for n in f["optimizer_weights"].attrs["weight_names"]]
    assert cfg == {"class_name": "Nadam", "config": {
        "name": "Nadam", "learning_rate": 0.009999999776482582, "decay": 0.004,
        "beta_1": 0.8999999761581421, "beta_2": 0.9990000128746033, "epsilon": 1e-07}}
    assert names == ["Nadam/iter:0", "Nadam/momentum_cache:0", "Nadam/%s/m:0" % k,
                     "Nadam/%s/m:0" % b, "Nadam/%s/v:0" % k, "Nadam/%s/v:0" % b]
    back = keras.models.load_model(path)
    assert type(back.optimizer) is L.Nadam
    for a, c in zip(m.optimizer.variables(), back.optimizer.variables()):
        np.testing.assert_array_equal(a.numpy(), c.numpy())
