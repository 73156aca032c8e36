"""A TensorFlow name mixprec lacks: an AttributeError that says so and points to the porting
guide; private and dunder names keep the plain AttributeError (hasattr, pickling, IPython)."""

import copy
import pickle

import pytest

import mixprec as tf
from mixprec import keras

MISSING = [
    (lambda: tf.sparse, "tf.sparse"),
    (lambda: keras.callbacks.SomethingMissing, "tf.keras.callbacks.SomethingMissing"),
    (lambda: keras.layers.Foo, "tf.keras.layers.Foo"),
    (lambda: keras.losses.Foo, "tf.keras.losses.Foo"),
    (lambda: keras.metrics.Foo, "tf.keras.metrics.Foo"),
    (lambda: keras.optimizers.Foo, "tf.keras.optimizers.Foo"),
    (lambda: keras.Foo, "tf.keras.Foo"),
    (lambda: tf.nn.foo, "tf.nn.foo"),
    (lambda: tf.math.foo, "tf.math.foo"),
    (lambda: tf.random.foo, "tf.random.foo"),
    (lambda: tf.data.Foo, "tf.data.Foo"),
    (lambda: tf.config.foo, "tf.config.foo"),
    (lambda: keras.mixed_precision.experimental.Foo,
     "tf.keras.mixed_precision.experimental.Foo"),
]


@pytest.mark.parametrize("get,name", MISSING, ids=[n for _, n in MISSING])
def test_unsupported_public_name_says_so_and_points_to_the_porting_guide(get, name):
    with pytest.raises(AttributeError) as e:
        get()
    msg = str(e.value)
    assert msg.startswith(name + " is not supported yet by mixprec")
    assert "docs/porting.md" in msg
    assert not hasattr(tf, "sparse")


@pytest.mark.parametrize("module", [tf, keras, keras.layers, keras.callbacks, tf.nn, tf.math])
@pytest.mark.parametrize("attr", ["_private", "__wrapped__",
                                  "_ipython_canary_method_should_not_exist_"])
def test_private_names_keep_the_plain_attribute_error(module, attr):
    with pytest.raises(AttributeError) as e:
        getattr(module, attr)
    assert str(e.value) == "module %r has no attribute %r" % (module.__name__, attr)
    assert not hasattr(module, attr)


def test_supported_names_submodules_and_pickling_still_work():
    assert keras.mixed_precision.experimental.LossScaleOptimizer.__name__ == "LossScaleOptimizerV1"
    assert keras.layers.Dense is not None and tf.nn.relu is not None
    assert pickle.loads(pickle.dumps(tf.float16)) is tf.float16
    loss = pickle.loads(pickle.dumps(keras.losses.MeanSquaredError()))
    assert loss.name == "mean_squared_error"
    assert copy.deepcopy(tf.constant([1.0, 2.0])).numpy().tolist() == [1.0, 2.0]
    # a lazily imported submodule is found, not reported as unsupported
    from mixprec.keras.utils import progbar
    assert keras.utils.progbar is progbar
