"""tf.Module: naming, the variable/submodule walk, with_name_scope, methods traced per
instance, checkpoints. Expected values recorded from TensorFlow 2.21."""

import os

import pytest

import mixprec as tf
from mixprec import keras


class Dense(tf.Module):
    def __init__(self, i, o, name=None):
        super().__init__(name=name)
        self.w = tf.Variable(tf.ones([i, o]), name="w")
        self.b = tf.Variable(tf.zeros([o]), name="b", trainable=False)

    @tf.Module.with_name_scope
    def __call__(self, x):
        return tf.matmul(x, self.w) + self.b


class MLP(tf.Module):
    def __init__(self):
        super().__init__()
        self.layers = [Dense(2, 3), Dense(3, 1, name="out")]
        self.extra = {"z": tf.Variable(1.0, name="z"), "a": tf.Variable(2.0, name="a")}
        self.n = 0

    @tf.function
    def __call__(self, x):
        self.n += 1
        for layer in self.layers:
            x = layer(x)
        return x


def test_names_and_the_walk_as_tensorflow():
    m = MLP()
    assert (m.name, m.name_scope.name, m.layers[0].name, m.layers[1].name) == \
        ("mlp", "mlp/", "dense", "out")
    assert [v.name for v in m.variables] == ["a:0", "z:0", "b:0", "w:0", "b:0", "w:0"]
    assert [v.name for v in m.trainable_variables] == ["a:0", "z:0", "w:0", "w:0"]
    assert [v.name for v in m.non_trainable_variables] == ["b:0", "b:0"]
    assert [s.name for s in m.submodules] == ["dense", "out"]
    assert float(m(tf.ones([1, 2]))) == 6.0 and float(m(tf.ones([1, 2]))) == 6.0
    assert m.n == 1   # Python ran once: the method traced once, replayed after

    class HTTPServer2Thing(tf.Module):
        pass

    assert HTTPServer2Thing().name == "http_server2_thing" and isinstance(m, tf.Module)
    for bad in ["1x", "a b", ""]:
        with pytest.raises(ValueError, match="is not a valid module name. Module names must be "
                                             r"valid Python identifiers \(e.g. a valid class"):
            tf.Module(name=bad)


def test_a_keras_layer_inside_a_module_gives_its_variables():
    class K(tf.Module):
        def __init__(self):
            super().__init__()
            self.d = keras.layers.Dense(2)
            self.d.build((None, 3))
            self.v = tf.Variable(3.0)

    k = K()
    assert len(k.variables) == 3 and k.submodules[0] is k.d


def test_a_module_checkpoints_its_attributes(tmp_path):
    m = MLP()
    path = tf.train.Checkpoint(model=m).write(os.path.join(str(tmp_path), "ck"))
    assert sorted(n for n, _ in tf.train.list_variables(path)) == [
        "_CHECKPOINTABLE_OBJECT_GRAPH", "model/extra/a/.ATTRIBUTES/VARIABLE_VALUE",
        "model/extra/z/.ATTRIBUTES/VARIABLE_VALUE", "model/layers/0/b/.ATTRIBUTES/VARIABLE_VALUE",
        "model/layers/0/w/.ATTRIBUTES/VARIABLE_VALUE", "model/layers/1/b/.ATTRIBUTES/VARIABLE_VALUE",
        "model/layers/1/w/.ATTRIBUTES/VARIABLE_VALUE"]
    m.layers[0].w.assign(tf.zeros([2, 3]))
    tf.train.Checkpoint(model=m).read(path)
    assert float(tf.reduce_sum(m.layers[0].w)) == 6.0


def test_variables_created_in_a_traced_method_on_the_first_call_only():
    class Lazy(tf.Module):
        def __init__(self):
            super().__init__()
            self.v = None

        @tf.function
        def __call__(self, x):
            if self.v is None:
                self.v = tf.Variable(2.0)
            return self.v * x

    m = Lazy()
    assert float(m(tf.constant(3.0))) == 6.0 and float(m(tf.constant(4.0))) == 8.0
    assert len(m.variables) == 1
