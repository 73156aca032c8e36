"""model.save / keras.models.load_model in the .keras format (tf-keras 2.21's zip of
config.json, metadata.json and model.weights.h5) and save_weights('x.weights.h5')."""

import json
import os
import zipfile

import numpy as np
import pytest

from mixprec import keras

h5py = pytest.importorskip("h5py")
L = keras.layers


def _model(policy=None):
    if policy:
        keras.mixed_precision.set_global_policy(policy)
    m = keras.Sequential([keras.Input((4,)), L.Dense(8, activation="relu"),
                          L.BatchNormalization(), L.Dense(3),
                          L.Activation("softmax", dtype="float32")])
    keras.mixed_precision.set_global_policy("float32")
    return m


def _xy(n=32):
    rng = np.random.default_rng(0)
    return rng.random((n, 4), dtype=np.float32), np.arange(n) % 3


def test_archive_layout(tmp_path):
    m = _model()
    m.compile(keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy", ["accuracy"])
    x, y = _xy()
    m.fit(x, y, epochs=1, verbose=0)
    path = str(tmp_path / "m.keras")
    m.save(path)
    with zipfile.ZipFile(path) as zf:
        assert sorted(zf.namelist()) == ["config.json", "metadata.json", "model.weights.h5"]
        meta = json.loads(zf.read("metadata.json"))
        cfg = json.loads(zf.read("config.json"))
        with h5py.File(zf.open("model.weights.h5"), "r") as f:
            keys = []
            f.visit(keys.append)
            shapes = {k: f[k].shape for k in keys if isinstance(f[k], h5py.Dataset)}
    assert meta["keras_version"] == "2.21.0" and "date_saved" in meta
    assert (cfg["module"], cfg["class_name"]) == ("keras", "Sequential")
    assert cfg["compile_config"]["loss"] == "sparse_categorical_crossentropy"
    assert cfg["compile_config"]["metrics"] == ["accuracy"]
    assert cfg["compile_config"]["optimizer"]["class_name"] == "Adam"
    # tf-keras' attribute walk: layers by class, BatchNormalization's four variables
    assert shapes["layers/dense/vars/0"] == (4, 8)
    assert shapes["layers/dense_1/vars/1"] == (3,)
    assert [shapes["layers/batch_normalization/vars/%d" % i] for i in range(4)] == [(8,)] * 4
    assert "layers/activation/vars" in keys and "vars" in keys
    # iterations, then m and v per variable (tf-keras' Adam order)
    assert shapes["optimizer/vars/0"] == ()
    assert shapes["optimizer/vars/1"] == shapes["optimizer/vars/2"] == (4, 8)
    assert "metrics/mean/vars/0" in keys


@pytest.mark.parametrize("policy", ["float32", "mixed_float16"])
def test_round_trip_predicts_trains_and_keeps_optimizer_state(tmp_path, policy):
    m = _model(policy)
    m.compile(keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy", ["accuracy"])
    x, y = _xy()
    m.fit(x, y, epochs=2, verbose=0)
    path = tmp_path / "m.keras"
    m.save(path)
    m2 = keras.models.load_model(path)
    np.testing.assert_array_equal(m.predict(x, verbose=0), m2.predict(x, verbose=0))
    assert m2.layers[0].dtype_policy.name == policy
    opt, opt2 = [getattr(o, "inner_optimizer", o) for o in (m.optimizer, m2.optimizer)]
    assert int(opt2.iterations.numpy()) == int(opt.iterations.numpy()) == 2
    v = m.trainable_variables[0]
    np.testing.assert_array_equal(opt.get_slot(v, "v").numpy(),
                                  opt2.get_slot(m2.trainable_variables[0], "v").numpy())
    # the same next step from the same state
    m.fit(x, y, epochs=1, verbose=0, shuffle=False)
    m2.fit(x, y, epochs=1, verbose=0, shuffle=False)
    np.testing.assert_array_equal(m.get_weights()[0], m2.get_weights()[0])
    loss, acc = m2.evaluate(x, y, verbose=0)
    assert np.isfinite(loss) and 0 <= acc <= 1


def test_loss_scale_state_is_kept(tmp_path):
    m = _model("mixed_float16")
    keras.mixed_precision.set_global_policy("mixed_float16")
    m.compile("sgd", "sparse_categorical_crossentropy")
    x, y = _xy()
    m.fit(x, y, verbose=0)
    m.optimizer.loss_scale  # noqa: B018
    m.save(tmp_path / "m.keras")
    m2 = keras.models.load_model(tmp_path / "m.keras")
    assert isinstance(m2.optimizer, keras.mixed_precision.LossScaleOptimizer)
    assert float(m2.optimizer.loss_scale) == float(m.optimizer.loss_scale)
    assert int(m2.optimizer.dynamic_counter) == int(m.optimizer.dynamic_counter) == 1


def test_functional_nested_shared_round_trip(tmp_path):
    a, b = keras.Input((4,), name="a"), keras.Input((4,), name="b")
    shared = L.Dense(4)
    inner = keras.Sequential([L.Dense(3)])
    out = inner(shared(a))
    m = keras.Model([a, b], [out, shared(b)])
    m.compile("rmsprop", ["mse", "mae"])
    x = [np.ones((8, 4), "float32"), np.full((8, 4), 2, "float32")]
    yy = [np.ones((8, 3), "float32"), np.ones((8, 4), "float32")]
    m.fit(x, yy, verbose=0)
    m.save(tmp_path / "f.keras")
    m2 = keras.models.load_model(str(tmp_path / "f.keras"))
    for p, q in zip(m.predict(x, verbose=0), m2.predict(x, verbose=0)):
        np.testing.assert_array_equal(p, q)
    assert int(m2.optimizer.iterations.numpy()) == 1


def test_compile_false_and_uncompiled_model(tmp_path):
    m = _model()
    m.save(tmp_path / "u.keras")
    m2 = keras.models.load_model(tmp_path / "u.keras")
    assert m2.optimizer is None
    m.compile("adam", "mse")
    m.save(tmp_path / "c.keras")
    assert keras.models.load_model(tmp_path / "c.keras", compile=False).optimizer is None


def test_custom_objects_and_registration(tmp_path):
    class Scale(L.Layer):
        def __init__(self, factor=2.0, **kw):
            super().__init__(**kw)
            self.factor = factor

        def call(self, x):
            return x * self.factor

        def get_config(self):
            return dict(super().get_config(), factor=self.factor)

    m = keras.Sequential([keras.Input((2,)), Scale(3.0), L.Dense(1)])
    m.save(tmp_path / "c.keras")
    with pytest.raises(TypeError, match="register_keras_serializable"):
        keras.models.load_model(tmp_path / "c.keras")
    m2 = keras.models.load_model(tmp_path / "c.keras", custom_objects={"Scale": Scale})
    assert m2.layers[0].factor == 3.0
    x = np.ones((1, 2), "float32")
    np.testing.assert_array_equal(m.predict(x, verbose=0), m2.predict(x, verbose=0))


def test_suffix_errors_match_tf_keras(tmp_path):
    m = _model()
    m.save(str(tmp_path / "dir"))  # no suffix: a SavedModel directory (test_saved_model.py)
    assert os.path.isfile(tmp_path / "dir" / "saved_model.pb")
    with pytest.raises(ValueError, match="Unknown `save_format` argument"):
        m.save(str(tmp_path / "x.keras"), save_format="zip")
    with pytest.raises(ValueError, match="expected a `.keras` extension"):
        m.save(str(tmp_path / "x.zip"), save_format="keras")
    with pytest.raises(ValueError, match="not supported with the native TF-Keras format"):
        m.save(str(tmp_path / "x.keras"), include_optimizer=False)
    with pytest.raises(OSError, match="No file or directory found at"):
        keras.models.load_model(str(tmp_path / "missing.keras"))
    os.mkdir(tmp_path / "sm")
    with pytest.raises(OSError, match="SavedModel file does not exist at"):
        keras.models.load_model(str(tmp_path / "sm"))
    (tmp_path / "junk.keras").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="neither a '.keras' zip archive nor an HDF5"):
        keras.models.load_model(str(tmp_path / "junk.keras"))


def test_save_is_crash_safe(tmp_path, monkeypatch):
    from mixprec.keras.saving import saving_lib

    m = _model()
    path = tmp_path / "m.keras"
    m.save(path)
    before = path.read_bytes()

    def boom(f, root):
        raise RuntimeError("killed mid-save")

    monkeypatch.setattr(saving_lib, "write_h5", boom)
    with pytest.raises(RuntimeError):
        m.save(path)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["m.keras"]  # no temporary file left


def test_weights_h5_and_load_weights_from_keras_file(tmp_path):
    m = _model()
    m.compile("adam", "sparse_categorical_crossentropy")
    x, y = _xy()
    m.fit(x, y, verbose=0)
    m.save_weights(str(tmp_path / "w.weights.h5"))
    with h5py.File(tmp_path / "w.weights.h5", "r") as f:
        assert f["layers/dense/vars/0"].shape == (4, 8)
    m2 = _model()
    m2.load_weights(str(tmp_path / "w.weights.h5"))
    np.testing.assert_array_equal(m.predict(x, verbose=0), m2.predict(x, verbose=0))
    m.save(tmp_path / "m.keras")
    m3 = _model()
    m3.load_weights(str(tmp_path / "m.keras"))
    np.testing.assert_array_equal(m.predict(x, verbose=0), m3.predict(x, verbose=0))
    wrong = keras.Sequential([keras.Input((4,)), L.Dense(8), L.Dense(3, use_bias=False)])
    with pytest.raises(ValueError, match="expected 1 variables, but received 2"):
        wrong.load_weights(str(tmp_path / "w.weights.h5"))


def test_without_h5py_the_error_says_what_to_install(tmp_path, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_h5py(name, *args, **kwargs):
        if name == "h5py":
            raise ImportError("No module named 'h5py'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_h5py)
    m = _model()
    with pytest.raises(ImportError, match=r"pip install h5py.*mixprec\[h5\]"):
        m.save(tmp_path / "m.keras")
    with pytest.raises(ImportError, match="pip install h5py"):
        m.save_weights(str(tmp_path / "w.h5"))
    m.save_weights(str(tmp_path / "w.npz"))  # mixprec's own format needs nothing
    assert not (tmp_path / "m.keras").exists()


def test_model_checkpoint_saves_whole_models(tmp_path):
    m = _model()
    m.compile("adam", "sparse_categorical_crossentropy")
    x, y = _xy()
    cb = keras.callbacks.ModelCheckpoint(str(tmp_path / "m-{epoch}.keras"),
                                         save_weights_only=False)
    m.fit(x, y, epochs=2, verbose=0, callbacks=[cb])
    assert sorted(os.listdir(tmp_path)) == ["m-1.keras", "m-2.keras"]
    restored = keras.models.load_model(tmp_path / "m-2.keras")
    np.testing.assert_array_equal(m.predict(x, verbose=0), restored.predict(x, verbose=0))


def test_compile_objects_round_trip(tmp_path):
    m = _model()
    m.compile(keras.optimizers.SGD(0.1, momentum=0.9, nesterov=True),
              loss=keras.losses.SparseCategoricalCrossentropy(),
              metrics=[keras.metrics.SparseCategoricalAccuracy(), "mae"])
    cfg = m.get_compile_config()
    assert cfg["loss"]["class_name"] == "SparseCategoricalCrossentropy"
    assert cfg["loss"]["config"]["fn"] == "sparse_categorical_crossentropy"  # as tf-keras
    assert cfg["optimizer"]["config"]["momentum"] == 0.9
    x, y = _xy()
    m.fit(x, y, verbose=0)
    m.save(tmp_path / "m.keras")
    m2 = keras.models.load_model(tmp_path / "m.keras")
    assert type(m2.optimizer) is keras.optimizers.SGD and m2.optimizer.nesterov
    h = m2.fit(x, y, verbose=0)
    assert set(h.history) == {"loss", "sparse_categorical_accuracy", "mae"}


class _Sub(keras.Model):
    def __init__(self, units=3, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.d = L.Dense(units)

    def call(self, x):
        return self.d(x)


class _AutoLayer(L.Layer):
    """No get_config: tf-keras' auto-config records units and scale."""

    def __init__(self, units=2, scale=1.0):
        super().__init__()
        self.units, self.scale = units, scale

    def build(self, shape):
        self.w = self.add_weight("w", (shape[-1], self.units))

    def call(self, x):
        return x @ self.w * self.scale


def test_subclassed_model_and_auto_config_layer(tmp_path):
    m = _Sub(4)
    m.compile("adam", "mse")
    m.fit(np.ones((4, 2), "float32"), np.ones((4, 4), "float32"), verbose=0)
    m.save(tmp_path / "s.keras")
    with zipfile.ZipFile(tmp_path / "s.keras") as zf:
        cfg = json.loads(zf.read("config.json"))
    assert cfg["config"] == {"units": 4}
    assert cfg["build_config"] == {"input_shape": [None, 2]}
    m2 = keras.models.load_model(tmp_path / "s.keras", custom_objects={"_Sub": _Sub})
    x = np.ones((1, 2), "float32")
    np.testing.assert_array_equal(m.predict(x, verbose=0), m2.predict(x, verbose=0))
    assert int(m2.optimizer.iterations.numpy()) == 1

    layer = _AutoLayer(3, scale=2.0)
    assert layer.get_config() == {"units": 3, "scale": 2.0}
    s = keras.Sequential([keras.Input((2,)), layer])
    s.save(tmp_path / "a.keras")
    s2 = keras.models.load_model(tmp_path / "a.keras", custom_objects={"_AutoLayer": _AutoLayer})
    assert s2.layers[0].scale == 2.0
    np.testing.assert_array_equal(s.predict(x, verbose=0), s2.predict(x, verbose=0))
