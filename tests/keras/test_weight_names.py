"""Weight names follow tf-keras 2.21's layer name scopes (checked against tf_keras 2.21):
a layer's __call__ names its weights '<layer>/kernel:0' under the scopes of the layers
calling it; a layer built directly names them 'kernel:0'; a subclassed model's build()
creates its layers' weights from placeholder data."""

import pytest

import mixprec as tf
from mixprec import keras
from mixprec.keras import layers as L


def _names(obj):
    return [w.name for w in obj.weights]


def test_layers_built_by_a_call_or_directly():
    d = L.Dense(2, name="d")
    d.build((None, 3))
    assert _names(d) == ["kernel:0", "bias:0"]
    e = L.Dense(2, name="e")
    e(tf.zeros([1, 3]))
    assert _names(e) == ["e/kernel:0", "e/bias:0"]
    bn = L.BatchNormalization(name="bn", renorm=True)
    bn.build((None, 3))
    assert _names(bn)[-3:] == ["moving_stddev:0", "renorm_mean:0", "renorm_stddev:0"]


def test_sequential_and_functional_models_add_no_prefix():
    m = keras.Sequential([keras.Input((4,)), L.Dense(3, name="a"), L.Dense(2, name="b")])
    assert _names(m) == ["a/kernel:0", "a/bias:0", "b/kernel:0", "b/bias:0"]
    s = keras.Sequential([L.Dense(2, name="c")])
    s(tf.zeros([1, 3]))  # deferred build
    assert _names(s) == ["c/kernel:0", "c/bias:0"]
    inp = keras.Input((4,))
    f = keras.Model(inp, L.Dense(3, name="d1")(inp))
    assert _names(f) == ["d1/kernel:0", "d1/bias:0"]


class _Sub(keras.Model):
    def __init__(self):
        super().__init__(name="sub")
        self.d = L.Dense(2, name="inner")

    def call(self, x):
        return self.d(x)


class _Block(L.Layer):
    def __init__(self):
        super().__init__(name="blk")
        self.d = L.Dense(2, name="dd")

    def build(self, input_shape):
        self.w = self.add_weight("w", (3,))
        super().build(input_shape)

    def call(self, x):
        return self.d(x) * self.w[0]


def test_nested_layers_take_the_outer_scopes():
    m = _Sub()
    m(tf.zeros([1, 3]))
    assert _names(m) == ["sub/inner/kernel:0", "sub/inner/bias:0"]
    b = _Block()
    b(tf.zeros([1, 3]))
    assert _names(b) == ["blk/w:0", "blk/dd/kernel:0", "blk/dd/bias:0"]


def test_subclassed_model_build_creates_the_weights():
    m = _Sub()
    m.build((None, 3))
    assert m.built and _names(m) == ["inner/kernel:0", "inner/bias:0"]
    assert tuple(m.d.kernel.shape) == (3, 2)
    with pytest.raises(ValueError, match="Input shape must be defined"):
        _Sub().build(None)
    with pytest.raises(ValueError, match="not one of the valid types"):
        _Sub().build(3)


@pytest.mark.parametrize("make,names", [
    (lambda: keras.optimizers.SGD(momentum=0.9), ["SGD/m/w:0"]),
    (lambda: keras.optimizers.RMSprop(momentum=0.5, centered=True),
     ["RMSprop/velocity/w:0", "RMSprop/momentum/w:0", "RMSprop/average_gradient/w:0"]),
    (lambda: keras.optimizers.Adam(amsgrad=True), ["Adam/m/w:0", "Adam/v/w:0", "Adam/vhat/w:0"]),
    (lambda: keras.optimizers.Adam(name="myadam"), ["myadam/m/w:0", "myadam/v/w:0"]),
])
def test_optimizer_variable_names(make, names):
    # tf-keras 2.21: 'iteration', then '<optimizer>/<slot>/<variable>'
    opt = make()
    v = tf.Variable([1.0], name="w")
    opt.apply_gradients([(tf.constant([1.0]), v)])
    variables = opt.variables() if callable(opt.variables) else opt.variables
    assert [x.name for x in variables] == ["iteration:0"] + names
    assert opt.iterations.name == "iteration:0"
