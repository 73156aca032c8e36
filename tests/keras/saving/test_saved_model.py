"""SavedModel directories in Keras: tf-keras 2.21's golden directories
(tests/golden/make_tf_savedmodel.py) load into mixprec with TensorFlow's predictions, and
``model.save('dir')`` / ``save_format='tf'`` round-trips architecture, weights, compile
state and optimizer variables, written crash-safely; damaged directories raise
TensorFlow's exceptions."""

import os

import numpy as np
import pytest

import mixprec as tf
from mixprec import errors, keras
from mixprec.keras.saving import saved_model_format
from mixprec.saved_model import _directory, _protos
from mixprec.testing.tolerances import assert_close
from mixprec.train import _bundle

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "golden",
                      "savedmodel")


@pytest.fixture(autouse=True)
def _float32_policy():
    yield
    keras.mixed_precision.set_global_policy("float32")


def _expected():
    return np.load(os.path.join(GOLDEN, "expected.npz"))


@pytest.mark.parametrize("name,dtype,kind", [("seq", "float32", "matmul"),
                                             ("cnn", "float32", "convolution"),
                                             ("mixed", "float16", "matmul")])
def test_tf_keras_savedmodel_loads_with_tf_predictions(name, dtype, kind):
    e = _expected()
    model = keras.models.load_model(os.path.join(GOLDEN, name))
    got = model.predict(e["x_" + name], verbose=0)
    assert_close(got, e["pred_" + name], dtype, kind, name)
    assert model.optimizer is not None and model.compiled_loss is not None
    # mixprec restores the optimizer's variables too (TensorFlow starts a fresh optimizer)
    assert int(model.optimizer.iterations.numpy()) == int(e["iters_" + name]) == 2


def test_golden_layouts_and_details():
    e = _expected()
    cnn = keras.models.load_model(os.path.join(GOLDEN, "cnn"))
    for mine, theirs in zip(cnn.get_weights(), [e["vars_cnn_%d" % i] for i in range(6)]):
        np.testing.assert_array_equal(mine, theirs)  # BatchNormalization moving stats too
    assert type(cnn.optimizer).__name__ == "SGD"
    assert cnn.get_layer("bn").moving_variance.shape == (3,)
    mixed = keras.models.load_model(os.path.join(GOLDEN, "mixed"), compile=False)
    assert mixed.optimizer is None
    assert [layer.dtype_policy.name for layer in mixed.layers] == [
        "mixed_float16", "mixed_float16", "float32"]
    assert mixed.layers[0].kernel.dtype.name == "float32"
    mixed = keras.models.load_model(os.path.join(GOLDEN, "mixed"))
    assert type(mixed.optimizer).__name__ == "LossScaleOptimizerV3"
    reader = _bundle.BundleReader(os.path.join(GOLDEN, "mixed", "variables", "variables"))
    scale = reader.read("optimizer/loss_scale/current_loss_scale/.ATTRIBUTES/VARIABLE_VALUE")
    assert float(mixed.optimizer.loss_scale.numpy()) == float(scale)
    seq = keras.models.load_model(os.path.join(GOLDEN, "seq"))
    m = _bundle.BundleReader(os.path.join(GOLDEN, "seq", "variables", "variables"))
    np.testing.assert_array_equal(
        seq.optimizer.variables[1].numpy(),
        m.read("optimizer/_variables/1/.ATTRIBUTES/VARIABLE_VALUE"))
    seq.fit(e["x_seq"], np.ones((5, 3), np.float32), epochs=1, verbose=0)  # trains on
    assert int(seq.optimizer.iterations.numpy()) == 3


def _trained_model():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 4)).astype(np.float32)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                              keras.layers.BatchNormalization(), keras.layers.Dense(3)])
    model.compile(keras.optimizers.Adam(1e-2), "mse", metrics=["mae"])
    model.fit(x, np.ones((16, 3), np.float32), epochs=2, verbose=0)
    return model, x


def test_save_writes_tf_layout_and_round_trips(tmp_path):
    model, x = _trained_model()
    path = str(tmp_path / "my_model")
    assert model.save(path) is None
    assert sorted(os.listdir(path)) == ["assets", "fingerprint.pb", "keras_metadata.pb",
                                        "saved_model.pb", "variables"]
    assert sorted(os.listdir(os.path.join(path, "variables"))) == [
        "variables.data-00000-of-00001", "variables.index"]
    assert os.listdir(tmp_path) == ["my_model"]  # no temporary left
    proto = _directory.read_saved_model(path)
    assert proto.tags == ["serve"] and "serving_default" in proto.signatures
    assert proto.nodes[0].identifier == "_tf_keras_sequential"
    records = _directory.read_metadata(path)
    assert records[0][1:3] == ("root", "_tf_keras_sequential")
    restored = keras.models.load_model(path)
    np.testing.assert_array_equal(restored.predict(x, verbose=0), model.predict(x, verbose=0))
    assert type(restored.optimizer).__name__ == "Adam"
    assert len(restored.optimizer.variables) == len(model.optimizer.variables)
    for a, b in zip(model.optimizer.variables, restored.optimizer.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    restored.fit(x, np.ones((16, 3), np.float32), epochs=1, verbose=0)
    assert int(restored.optimizer.iterations.numpy()) == 3


def test_functional_mixed_float16_and_save_format_tf(tmp_path):
    keras.mixed_precision.set_global_policy("mixed_float16")
    i = keras.Input((6, 6, 2), name="image")
    h = keras.layers.Conv2D(3, 3, padding="same")(i)
    h = keras.layers.BatchNormalization()(h)
    h = keras.layers.GlobalAveragePooling2D()(h)
    o = keras.layers.Dense(2, dtype="float32")(h)
    model = keras.Model(i, o)
    model.compile(keras.optimizers.SGD(0.1, momentum=0.9), "mse")
    x = np.random.default_rng(1).standard_normal((4, 6, 6, 2)).astype(np.float32)
    model.fit(x, np.zeros((4, 2), np.float32), epochs=1, verbose=0)
    path = str(tmp_path / "fun")
    model.save(path, save_format="tf")
    keras.mixed_precision.set_global_policy("float32")
    restored = keras.models.load_model(path)
    assert restored.layers[1].dtype_policy.name == "mixed_float16"
    np.testing.assert_array_equal(restored.predict(x, verbose=0), model.predict(x, verbose=0))
    assert float(restored.optimizer.loss_scale.numpy()) == float(model.optimizer.loss_scale.numpy())


def test_include_optimizer_false_and_uncompiled(tmp_path, caplog):
    model, x = _trained_model()
    path = str(tmp_path / "noopt")
    model.save(path, include_optimizer=False)
    keys = _bundle.BundleReader(_directory.variables_prefix(path)).keys()
    assert not [k for k in keys if k.startswith("optimizer/")]
    restored = keras.models.load_model(path)  # compiled from the config, fresh optimizer
    assert int(restored.optimizer.iterations.numpy()) == 0
    plain = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    plain.save(str(tmp_path / "plain"))
    loaded = keras.models.load_model(str(tmp_path / "plain"))
    assert loaded.optimizer is None
    with pytest.raises(ValueError, match="cannot be saved"):
        keras.Sequential([keras.layers.Dense(2)]).save(str(tmp_path / "unbuilt"))


def test_overwrite_is_crash_safe(tmp_path, monkeypatch):
    model, x = _trained_model()
    path = str(tmp_path / "m")
    model.save(path)
    before = model.predict(x, verbose=0)
    model.layers[0].kernel.assign(np.zeros((4, 8), np.float32))

    def boom(prefix, items):
        raise OSError("disk full")

    monkeypatch.setattr(_bundle, "write_bundle", boom)
    with pytest.raises(OSError, match="disk full"):
        model.save(path)
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["m"]  # the failed write left nothing behind
    np.testing.assert_array_equal(keras.models.load_model(path).predict(x, verbose=0), before)
    model.save(path)  # a successful overwrite replaces the directory
    np.testing.assert_array_equal(keras.models.load_model(path).predict(x, verbose=0),
                                  model.predict(x, verbose=0))
    assert os.listdir(tmp_path) == ["m"]
    with pytest.raises(FileExistsError):
        model.save(path, overwrite=False)


def test_errors_are_tensorflows(tmp_path):
    with pytest.raises(OSError, match="No file or directory found at"):
        keras.models.load_model(str(tmp_path / "missing"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(OSError, match=r"SavedModel file does not exist at: .*empty.*"
                                      r"\{saved_model.pbtxt\|saved_model.pb\}"):
        keras.models.load_model(str(empty))
    model, _ = _trained_model()
    path = str(tmp_path / "m")
    model.save(path)
    pb = os.path.join(path, "saved_model.pb")
    good = open(pb, "rb").read()
    for bad in (b"\xff\xff garbage", good[: len(good) // 2], b"\x0a\xff\xff\xff\xff\x0f"):
        open(pb, "wb").write(bad)
        with pytest.raises(OSError, match="Cannot parse file"):
            keras.models.load_model(path)
    open(pb, "wb").write(good)
    meta = os.path.join(path, "keras_metadata.pb")
    open(meta, "wb").write(b"\x0a\x05\x12")
    with pytest.raises(OSError, match="keras_metadata.pb"):
        keras.models.load_model(path)
    os.remove(meta)  # as a tf.saved_model.save directory of a Keras model: TF's ValueError
    with pytest.raises(ValueError, match="lacks the TF-Keras metadata file"):
        keras.models.load_model(path)
    os.remove(os.path.join(path, "variables", "variables.index"))
    with pytest.raises(errors.NotFoundError):
        tf.saved_model.load(path)


def test_truncated_variables_raise(tmp_path):
    model, _ = _trained_model()
    path = str(tmp_path / "m")
    model.save(path)
    data = _directory.variables_prefix(path) + ".data-00000-of-00001"
    blob = open(data, "rb").read()
    open(data, "wb").write(blob[:10])
    with pytest.raises((errors.OpError, IndexError)):
        keras.models.load_model(path)


def test_model_checkpoint_writes_savedmodel(tmp_path):
    model, x = _trained_model()
    cb = keras.callbacks.ModelCheckpoint(str(tmp_path / "ckpt-{epoch}"), save_weights_only=False)
    model.fit(x, np.ones((16, 3), np.float32), epochs=2, verbose=0, callbacks=[cb])
    assert sorted(os.listdir(tmp_path)) == ["ckpt-1", "ckpt-2"]
    restored = keras.models.load_model(str(tmp_path / "ckpt-2"))
    np.testing.assert_array_equal(restored.predict(x, verbose=0), model.predict(x, verbose=0))


def test_metadata_protobuf_round_trip():
    records = [(0, "root", "_tf_keras_sequential", '{"a": 1}'),
               (3, "root.layer-0", "_tf_keras_layer", '{"b": "\\u00e9"}')]
    assert _protos.decode_metadata(_protos.encode_metadata(records)) == records
    raw = open(os.path.join(GOLDEN, "seq", "keras_metadata.pb"), "rb").read()
    decoded = _protos.decode_metadata(raw)
    assert decoded[0][1:3] == ("root", "_tf_keras_sequential")
    assert _protos.decode_metadata(_protos.encode_metadata(decoded)) == decoded
    assert saved_model_format.decode_json(decoded[0][3])["build_input_shape"] == (None, 4)


@pytest.mark.parametrize("fname", ["saved_model.pb", "keras_metadata.pb",
                                   "variables/variables.index"])
def test_damaged_files_raise_clear_exceptions(tmp_path, fname):
    """Flipped bytes, truncation and garbage tails in tf-keras' own files: an exception of
    the expected kinds each time, never a crash, hang or other error."""
    import random
    import shutil

    rng = random.Random(fname)
    for trial in range(12):
        path = str(tmp_path / ("c%d" % trial))
        shutil.copytree(os.path.join(GOLDEN, "seq"), path)
        f = os.path.join(path, fname)
        b = bytearray(open(f, "rb").read())
        if trial % 3 == 0:
            for _ in range(rng.randrange(1, 5)):
                b[rng.randrange(len(b))] = rng.randrange(256)
        elif trial % 3 == 1:
            b = b[:rng.randrange(len(b))]
        else:
            b = b[:rng.randrange(len(b))] + bytes(rng.randrange(256) for _ in range(20))
        open(f, "wb").write(bytes(b))
        for load in (keras.models.load_model, tf.saved_model.load):
            try:
                load(path)
            except (OSError, ValueError, errors.OpError):
                pass


@keras.saving.register_keras_serializable(package="smtest")
class _Registered(keras.Model):
    def __init__(self, units=2, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.d = keras.layers.Dense(units)

    def call(self, x):
        return self.d(x)

    def get_config(self):
        return {"units": self.units}


class _NoConfig(keras.Model):
    def __init__(self):
        super().__init__()
        self.d = keras.layers.Dense(2)

    def call(self, x):
        return self.d(x)


def test_subclassed_and_nested_models(tmp_path):
    x = np.ones((2, 4), np.float32)
    sub = _Registered(3)
    sub(x)
    sub.compile("adam", "mse")
    sub.fit(x, np.zeros((2, 3), np.float32), verbose=0)
    sub.save(str(tmp_path / "sub"))
    meta = _directory.read_metadata(str(tmp_path / "sub"))
    assert saved_model_format.decode_json(meta[0][3])["class_name"] == "smtest>_Registered"
    loaded = keras.models.load_model(str(tmp_path / "sub"))
    assert isinstance(loaded, _Registered) and loaded.units == 3
    np.testing.assert_array_equal(loaded(x).numpy(), sub(x).numpy())
    assert int(loaded.optimizer.iterations.numpy()) == 1
    plain = _NoConfig()
    plain(x)
    plain.save(str(tmp_path / "noconfig"))
    with pytest.raises(NotImplementedError, match="subclassed model .* without a config"):
        keras.models.load_model(str(tmp_path / "noconfig"))
    inner = keras.Sequential([keras.layers.Dense(3)], name="inner")
    i = keras.Input((4,))
    nested = keras.Model(i, keras.layers.Dense(2)(inner(i)))
    keras.models.save_model(nested, str(tmp_path / "nested"), save_format="tf")
    restored = keras.models.load_model(str(tmp_path / "nested"))
    np.testing.assert_array_equal(restored(x).numpy(), nested(x).numpy())
