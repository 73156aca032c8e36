"""serialize_keras_object / deserialize_keras_object: tf-keras 2.21's config format
(module, class_name, config, registered_name), the custom-object registry and scopes."""

import json
import warnings

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.keras.saving import object_registration

S = keras.saving.serialize_keras_object
D = keras.saving.deserialize_keras_object


@pytest.fixture(autouse=True)
def _clean_registry():
    saved = dict(object_registration._GLOBAL_CUSTOM_OBJECTS)
    saved_names = dict(object_registration._GLOBAL_CUSTOM_NAMES)
    yield
    object_registration._GLOBAL_CUSTOM_OBJECTS.clear()
    object_registration._GLOBAL_CUSTOM_OBJECTS.update(saved)
    object_registration._GLOBAL_CUSTOM_NAMES.clear()
    object_registration._GLOBAL_CUSTOM_NAMES.update(saved_names)


def test_builtin_layer_config_is_tf_keras_format():
    cfg = S(keras.layers.Dense(3, activation="relu", name="d"))
    assert cfg["module"] == "keras.layers"
    assert cfg["class_name"] == "Dense"
    assert cfg["registered_name"] is None
    assert cfg["config"]["kernel_initializer"] == {
        "module": "keras.initializers", "class_name": "GlorotUniform",
        "config": {"seed": None}, "registered_name": None}
    assert "build_config" not in cfg  # not built
    layer = D(cfg)
    assert type(layer) is keras.layers.Dense and layer.units == 3 and layer.name == "d"


def test_built_layer_has_build_config_and_is_rebuilt():
    d = keras.layers.Dense(2)
    d(np.ones((1, 5), "float32"))
    cfg = S(d)
    assert cfg["build_config"] == {"input_shape": (1, 5)}
    d2 = D(json.loads(json.dumps(cfg)))
    assert d2.built and tuple(d2.kernel.shape) == (5, 2)


def test_mixed_float16_layer_dtype_is_a_policy_config():
    cfg = S(keras.layers.Dense(3, dtype="mixed_float16"))
    assert cfg["config"]["dtype"] == {"module": "keras.mixed_precision",
                                      "class_name": "Policy",
                                      "config": {"name": "mixed_float16"},
                                      "registered_name": None}
    layer = D(cfg)
    assert layer.dtype_policy.name == "mixed_float16"
    assert layer.compute_dtype == "float16" and layer.variable_dtype == "float32"


def test_functions_are_written_as_tf_keras_writes_them():
    assert S(keras.activations.relu) == {"module": "builtins", "class_name": "function",
                                         "config": "relu", "registered_name": "function"}
    assert D(S(keras.activations.relu)) is keras.activations.relu
    assert D(S(keras.losses.sparse_categorical_crossentropy)) is \
        keras.losses.sparse_categorical_crossentropy


def test_plain_values_tensors_and_arrays():
    assert S([1, "a", None, {"k": 2.5}]) == [1, "a", None, {"k": 2.5}]
    assert S((1, 2)) == (1, 2)
    assert S(np.float32(1.5)) == 1.5
    cfg = S(np.arange(3, dtype="int32"))
    assert cfg == {"class_name": "__numpy__", "config": {"value": [0, 1, 2], "dtype": "int32"}}
    np.testing.assert_array_equal(D(cfg), np.arange(3))
    t = S(tf.constant([1.0, 2.0]))
    assert t == {"class_name": "__tensor__", "config": {"value": [1.0, 2.0], "dtype": "float32"}}
    assert D(t).dtype == tf.float32
    assert D(S(b"xy")) == b"xy"
    assert S(tf.float16) == "float16"


def test_optimizer_and_loss_objects():
    cfg = S(keras.optimizers.Adam(0.5))
    assert (cfg["module"], cfg["class_name"], cfg["registered_name"]) == \
        ("keras.optimizers", "Adam", None)
    opt = D(cfg)
    assert type(opt) is keras.optimizers.Adam and opt.get_config()["learning_rate"] == 0.5
    loss = D(S(keras.losses.SparseCategoricalCrossentropy(from_logits=True)))
    assert type(loss) is keras.losses.SparseCategoricalCrossentropy


def test_tf_keras_optimizer_config_is_read():
    # as tf-keras 2.21 writes it in a .keras file's compile_config
    cfg = {"module": "keras.optimizers", "class_name": "SGD", "registered_name": None,
           "config": {"name": "SGD", "weight_decay": None, "clipnorm": None,
                      "global_clipnorm": None, "clipvalue": None, "use_ema": False,
                      "ema_momentum": 0.99, "ema_overwrite_frequency": None,
                      "jit_compile": False, "is_legacy_optimizer": False,
                      "learning_rate": 0.25, "momentum": 0.5, "nesterov": False}}
    opt = D(cfg)
    assert type(opt) is keras.optimizers.SGD
    assert opt.get_config()["momentum"] == 0.5
    cfg["config"]["weight_decay"] = 0.1  # implemented: read back as given
    assert D(cfg).get_config()["weight_decay"] == 0.1
    cfg["config"]["use_ema"] = True  # implemented (tests/keras/optimizers/test_ema.py)
    assert D(cfg).use_ema and D(cfg).get_config()["use_ema"] is True


def test_loss_scale_optimizer_as_tf_keras_names_it():
    lso = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD())
    cfg = S(lso)
    assert cfg["class_name"] == "LossScaleOptimizerV3"
    assert cfg["module"] == "tf_keras.src.mixed_precision.loss_scale_optimizer"
    back = D(json.loads(json.dumps(cfg)))
    assert isinstance(back, keras.mixed_precision.LossScaleOptimizer)
    assert type(back.inner_optimizer) is keras.optimizers.SGD


def test_register_keras_serializable_class_and_function():
    @keras.saving.register_keras_serializable(package="pkg")
    class Twice(keras.layers.Layer):
        def call(self, x):
            return x * 2.0

    @keras.saving.register_keras_serializable("pkg", name="act")
    def my_act(x):
        return x

    assert keras.saving.get_registered_name(Twice) == "pkg>Twice"
    assert keras.saving.get_registered_object("pkg>Twice") is Twice
    assert keras.utils.get_registered_name(my_act) == "pkg>act"
    cfg = S(Twice(name="t"))
    assert cfg["registered_name"] == "pkg>Twice" and cfg["class_name"] == "Twice"
    assert type(D(cfg)) is Twice
    fcfg = S(my_act)
    assert fcfg["config"] == "pkg>act"
    assert D(fcfg) is my_act
    with pytest.raises(ValueError, match="get_config"):
        keras.saving.register_keras_serializable()(type("NoConfig", (), {}))


class Plain(keras.layers.Layer):
    """Unregistered, importable from this module."""


class Local(keras.layers.Layer):
    pass


def test_unregistered_class_found_through_custom_objects_and_scope():
    cfg = S(Local(name="l"))
    cfg["module"] = None  # as a class of __main__ is written
    with pytest.raises(TypeError, match="Could not locate class 'Local'"):
        D(cfg)
    assert type(D(cfg, custom_objects={"Local": Local})) is Local
    with keras.utils.custom_object_scope({"Local": Local}):
        assert type(D(cfg)) is Local
    with keras.saving.custom_object_scope({"Local": Local}):
        pass
    with pytest.raises(TypeError):
        D(cfg)  # the scope is gone


def test_importable_unregistered_class_is_found_by_module():
    cfg = S(Plain())
    assert cfg["module"] == __name__ and cfg["registered_name"] == "Plain"
    assert type(D(cfg)) is Plain


def test_lambda_needs_safe_mode_false():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cfg = S(lambda x: x + 3)
    assert any("lambda" in str(x.message) for x in w)
    assert cfg["class_name"] == "__lambda__"
    cfg = json.loads(json.dumps(cfg))
    with pytest.raises(ValueError, match="safe_mode=False"):
        D(cfg)
    assert D(cfg, safe_mode=False)(4) == 7


def test_shared_objects_are_deserialized_once():
    from mixprec.keras.saving import serialization_lib as lib

    d = keras.layers.Dense(2)
    with lib.ObjectSharingScope():
        cfg = S([d, d])
    assert cfg[0]["shared_object_id"] == cfg[1]["shared_object_id"]
    with lib.ObjectSharingScope():
        a, b = D(cfg)
    assert a is b


def test_legacy_two_key_config_is_read():
    layer = D({"class_name": "Dense", "config": {"units": 4}})
    assert type(layer) is keras.layers.Dense and layer.units == 4


def test_unknown_class_is_a_type_error():
    with pytest.raises(TypeError, match="Could not locate class 'Nope'"):
        D({"module": "keras.layers", "class_name": "Nope", "config": {},
           "registered_name": None})


def test_custom_initializer_and_regularizer_found_by_registry():
    @keras.saving.register_keras_serializable("pkg")
    class Halves(keras.initializers.Initializer):
        def __call__(self, shape, dtype=None):
            return tf.fill(shape, 0.5)

        def get_config(self):
            return {}

    d = keras.layers.Dense(2, kernel_initializer=Halves())
    cfg = S(d)
    assert cfg["config"]["kernel_initializer"]["registered_name"] == "pkg>Halves"
    d2 = D(cfg)
    d2.build((None, 3))
    np.testing.assert_array_equal(d2.kernel.numpy(), np.full((3, 2), 0.5, "float32"))
