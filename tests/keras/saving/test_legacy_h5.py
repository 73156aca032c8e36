"""HDF5 weights in tf-keras' legacy layout (save_weights('w.h5')) and whole models in its
legacy HDF5 file (model.save('m.h5')); old mixprec .npz files under those names still
load."""

import numpy as np
import pytest

from mixprec import keras

h5py = pytest.importorskip("h5py")
L = keras.layers


def _model(units=3):
    return keras.Sequential([keras.Input((4,)), L.Dense(8, activation="relu", name="a"),
                             L.Dense(units, name="b")])


def _x():
    return np.random.default_rng(0).random((6, 4), dtype=np.float32)


def test_layout_is_tf_keras_legacy(tmp_path):
    m = _model()
    path = str(tmp_path / "w.h5")
    m.save_weights(path)
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89HDF\r\n\x1a\n"
    with h5py.File(path, "r") as f:
        assert [n.decode() for n in f.attrs["layer_names"]] == ["a", "b"]
        assert f.attrs["keras_version"] in ("2.21.0", b"2.21.0")
        assert [n.decode() for n in f["a"].attrs["weight_names"]] == ["a/kernel:0", "a/bias:0"]
        assert f["a"]["a/kernel:0"].shape == (4, 8)
        assert "top_level_model_weights" in f


def test_round_trip_by_topology_and_by_name(tmp_path):
    m = _model()
    path = str(tmp_path / "w.hdf5")
    m.save_weights(path)
    m2 = _model()
    m2.load_weights(path)
    np.testing.assert_array_equal(m.predict(_x(), verbose=0), m2.predict(_x(), verbose=0))
    m3 = keras.Sequential([keras.Input((4,)), L.Dense(8, activation="relu", name="a"),
                           L.Dense(5, name="b")])
    with pytest.raises(ValueError, match="Shape mismatch"):
        m3.load_weights(path)
    with pytest.raises(ValueError, match="skip_mismatch can only be set to True when by_name"):
        m3.load_weights(path, skip_mismatch=True)
    with pytest.warns(UserWarning, match="Skipping loading weights for layer #1"):
        m3.load_weights(path, by_name=True, skip_mismatch=True)
    np.testing.assert_array_equal(m3.layers[0].kernel.numpy(), m.layers[0].kernel.numpy())
    m4 = keras.Sequential([keras.Input((4,)), L.Dense(8, name="a")])
    with pytest.raises(ValueError, match="Layer count mismatch"):
        m4.load_weights(path)


def test_optimizer_state_travels_in_mixprecs_group(tmp_path):
    m = _model()
    m.compile(keras.optimizers.Adam(0.1), "mse")
    m.fit(_x(), np.ones((6, 3), "float32"), verbose=0)
    m.save_weights(str(tmp_path / "w.h5"))
    m2 = _model()
    m2.compile(keras.optimizers.Adam(0.1), "mse")
    m2.load_weights(str(tmp_path / "w.h5"))
    assert int(m2.optimizer.iterations.numpy()) == 1
    v = m.trainable_variables[0]
    np.testing.assert_array_equal(m.optimizer.get_slot(v, "m").numpy(),
                                  m2.optimizer.get_slot(m2.trainable_variables[0], "m").numpy())


def test_old_npz_files_named_h5_still_load(tmp_path):
    m = _model()
    path = str(tmp_path / "old.h5")
    from mixprec.keras.saving import weights_io

    weights_io.save_npz(m, path)  # what save_weights('old.h5') wrote before HDF5
    m2 = _model()
    m2.load_weights(path)
    np.testing.assert_array_equal(m.get_weights()[0], m2.get_weights()[0])


def test_save_format_rules(tmp_path):
    m = _model()
    with pytest.raises(ValueError, match="looks like an HDF5 file"):
        m.save_weights(str(tmp_path / "w.h5"), save_format="tf")
    m.save_weights(str(tmp_path / "w.bin"), save_format="h5")
    with open(tmp_path / "w.bin", "rb") as f:
        assert f.read(4) == b"\x89HDF"
    m.save_weights(str(tmp_path / "w.npz"))
    with open(tmp_path / "w.npz", "rb") as f:
        assert f.read(2) == b"PK"


def test_whole_model_h5_round_trip(tmp_path):
    m = _model()
    m.compile(keras.optimizers.Adam(0.01), "mse", metrics=["mae"])
    m.fit(_x(), np.ones((6, 3), "float32"), verbose=0)
    with pytest.warns(UserWarning, match="HDF5 file via `model.save\\(\\)`"):
        m.save(str(tmp_path / "m.h5"))
    with h5py.File(tmp_path / "m.h5", "r") as f:
        assert {"model_config", "training_config", "keras_version", "backend"} <= set(f.attrs)
        assert "model_weights" in f and "optimizer_weights" in f
    m2 = keras.models.load_model(str(tmp_path / "m.h5"))
    np.testing.assert_array_equal(m.predict(_x(), verbose=0), m2.predict(_x(), verbose=0))
    assert int(m2.optimizer.iterations.numpy()) == 1
    m2.fit(_x(), np.ones((6, 3), "float32"), verbose=0)
    assert int(m2.optimizer.iterations.numpy()) == 2
