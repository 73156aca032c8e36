"""``tf.saved_model.save`` / ``load`` for mixprec objects: a tf.Module's variables (nested
modules, lists, non-trainable) come back; its tf.functions are stored without graphs and
raise NotImplementedError when called; a Keras model's call and serving signature are
rebuilt from its config; tf-keras' golden SavedModels load; errors are TensorFlow's."""

import os

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.testing.tolerances import assert_close

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden",
                      "savedmodel")


class _Net(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
        self.b = tf.Variable(np.ones(3, np.float32), name="b", trainable=False)
        self.sub = tf.Module()
        self.sub.v = tf.Variable(2.0, name="v")
        self.steps = [tf.Variable(1), tf.Variable(np.int64(7))]

    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
    def __call__(self, x):
        return tf.matmul(x, self.w) + self.b


def test_module_variables_round_trip(tmp_path):
    net = _Net()
    net.w.assign(net.w * 3.0)
    path = str(tmp_path / "net")
    assert tf.saved_model.save(net, path, signatures=net.__call__) is None
    assert tf.saved_model.contains_saved_model(path)
    assert sorted(os.listdir(path)) == ["assets", "fingerprint.pb", "saved_model.pb",
                                        "variables"]
    loaded = tf.saved_model.load(path)
    np.testing.assert_array_equal(loaded.w.numpy(), net.w.numpy())
    assert loaded.w.trainable and not loaded.b.trainable
    assert loaded.w.name == "w:0"
    assert float(loaded.sub.v.numpy()) == 2.0
    assert [int(v.numpy()) for v in loaded.steps] == [1, 7]
    assert loaded.steps[1].dtype == tf.int64
    assert list(loaded.signatures) == ["serving_default"]
    with pytest.raises(NotImplementedError, match="traced TensorFlow function"):
        loaded(np.ones((1, 2), np.float32))
    with pytest.raises(NotImplementedError, match="traced"):
        loaded.signatures["serving_default"](x=np.ones((1, 2), np.float32))


def test_keras_model_callable_after_load(tmp_path):
    model = keras.Sequential([keras.Input((4,), name="inp"), keras.layers.Dense(3)])
    path = str(tmp_path / "k")
    tf.saved_model.save(model, path)
    # as TensorFlow: no keras_metadata.pb file (the metadata sits in the object graph)
    assert sorted(os.listdir(path)) == ["assets", "fingerprint.pb", "saved_model.pb",
                                        "variables"]
    loaded = tf.saved_model.load(path)
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_array_equal(loaded(x).numpy(), model(x).numpy())
    out = loaded.signatures["serving_default"](inp=tf.constant(x))
    assert list(out) == [model.layers[-1].name]
    np.testing.assert_array_equal(out[model.layers[-1].name].numpy(), model(x).numpy())
    assert len(loaded.trainable_variables) == 2
    assert isinstance(keras.models.load_model(path), keras.Sequential)


def test_tf_written_keras_savedmodel_through_tf_saved_model_load():
    e = np.load(os.path.join(GOLDEN, "expected.npz"))
    loaded = tf.saved_model.load(os.path.join(GOLDEN, "seq"))
    assert_close(loaded(e["x_seq"]).numpy(), e["pred_seq"], "float32", "matmul")
    assert "serving_default" in loaded.signatures
    assert len(loaded.variables) == 4
    with pytest.raises(RuntimeError, match="could not be found in SavedModel"):
        tf.saved_model.load(os.path.join(GOLDEN, "seq"), tags=["train"])
    assert tf.saved_model.load(os.path.join(GOLDEN, "seq"), tags="serve") is not None


def test_errors(tmp_path):
    with pytest.raises(OSError, match="SavedModel file does not exist at"):
        tf.saved_model.load(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="Expected an object of type `Trackable`"):
        tf.saved_model.save(object(), str(tmp_path / "x"))
    with pytest.raises(TypeError, match="SaveOptions"):
        tf.saved_model.save(_Net(), str(tmp_path / "y"), options={})
    tf.saved_model.save(_Net(), str(tmp_path / "z"), options=tf.saved_model.SaveOptions())
    assert not tf.saved_model.contains_saved_model(str(tmp_path / "missing"))
    open(tmp_path / "z" / "saved_model.pb", "wb").write(b"\x12\x80")
    with pytest.raises(OSError, match="Cannot parse file"):
        tf.saved_model.load(str(tmp_path / "z"))
    assert tf.saved_model.SERVING == "serve"
    assert tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY == "serving_default"
