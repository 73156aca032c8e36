"""An unbuilt Sequential (or a subclassed model with its own ``build``) refuses to list its
weights, as tf-keras 2.21 (measured there): ValueError "Weights for model '<name>' have not
yet been created. ..." from weights/variables/trainable_*/non_trainable_*/get_weights; a
subclass without ``build`` lists none; a model with an Input lists its weights."""

import pytest

from mixprec import keras
from mixprec.keras import layers

MSG = ("Weights for model '%s' have not yet been created. Weights are created when the model "
       "is first called on inputs or `build()` is called with an `input_shape`.")

ATTRS = ["weights", "variables", "trainable_weights", "trainable_variables",
         "non_trainable_weights", "non_trainable_variables"]


@pytest.mark.parametrize("attr", ATTRS)
def test_unbuilt_sequential_refuses(attr):
    model = keras.Sequential([layers.Flatten(), layers.Dense(3)], name="seq_a")
    with pytest.raises(ValueError) as e:
        getattr(model, attr)
    assert str(e.value) == MSG % "seq_a"
    with pytest.raises(ValueError):
        model.get_weights()
    model.build((None, 2, 2))
    assert len(getattr(model, attr)) == (0 if "non" in attr else 2)


class _Sub(keras.Model):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.d = layers.Dense(2)

    def call(self, x):
        return self.d(x)


class _SubBuild(_Sub):
    def build(self, input_shape):
        super().build(input_shape)


def test_subclassed_models():
    assert _Sub().weights == []  # no build of its own: an empty list
    with pytest.raises(ValueError, match="Weights for model 'sb' have not yet been created"):
        _SubBuild(name="sb").trainable_variables
    assert len(keras.Sequential([keras.Input((3,)), layers.Dense(2)]).weights) == 2


def test_compile_and_fit_build_an_unbuilt_sequential():
    import numpy as np

    model = keras.Sequential([layers.Dense(1)])
    model.compile("sgd", "mse")
    model.fit(np.ones((4, 3), "float32"), np.ones((4, 1), "float32"), verbose=0)
    assert len(model.weights) == 2
