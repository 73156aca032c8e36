"""BackupAndRestore as tf-keras 2.21 (files, resumed epochs and losses recorded from
TensorFlow 2.21 + tf-keras 2.21): an interrupted fit resumes after the last backed-up
epoch with the same weights and optimizer state as an uninterrupted one."""

import os

import numpy as np
import pytest

from mixprec import keras
from mixprec.testing.tolerances import TOLERANCE

X = np.ones((4, 2), "float32")
Y = np.ones((4, 1), "float32")


def _model():
    m = keras.Sequential([keras.layers.Dense(1, input_shape=(2,), kernel_initializer="zeros")])
    m.compile(keras.optimizers.SGD(0.1, momentum=0.5), "mse")
    return m


class _Boom(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if epoch == 2:
            raise RuntimeError("boom")


def test_interrupted_fit_resumes(tmp_path):
    backup = str(tmp_path / "backup")
    with pytest.raises(RuntimeError, match="boom"):
        _model().fit(X, Y, epochs=5, verbose=0,
                     callbacks=[keras.callbacks.BackupAndRestore(backup), _Boom()])
    assert sorted(os.listdir(backup)) == ["chief"]
    assert sorted(os.listdir(os.path.join(backup, "chief"))) == [
        "checkpoint", "ckpt-3.data-00000-of-00001", "ckpt-3.index"]
    m = _model()
    h = m.fit(X, Y, epochs=5, verbose=0, callbacks=[keras.callbacks.BackupAndRestore(backup)])
    assert h.epoch == [3, 4]
    rtol, atol = TOLERANCE[("float32", "elementwise")]
    # recorded rounded to 6 places: half a unit there on top of the table
    np.testing.assert_allclose(h.history["loss"], [0.106276, 0.049908], rtol=rtol,
                               atol=atol + 5e-7)
    assert int(m.optimizer.iterations) == 5
    assert os.listdir(backup) == []  # tf-keras deletes the checkpoint, not the directory
    ref = _model()
    href = ref.fit(X, Y, epochs=5, verbose=0)
    np.testing.assert_allclose(href.history["loss"][3:], h.history["loss"], rtol=rtol,
                               atol=atol)
    np.testing.assert_allclose(ref.get_weights()[0], m.get_weights()[0], rtol=rtol, atol=atol)


def test_kept_backup(tmp_path):
    backup = str(tmp_path / "b")
    _model().fit(X, Y, epochs=2, verbose=0,
                 callbacks=[keras.callbacks.BackupAndRestore(backup, delete_checkpoint=False)])
    assert "checkpoint" in os.listdir(os.path.join(backup, "chief"))
    # mixprec's limit (tf-keras also backs up every N batches)
    with pytest.raises(NotImplementedError, match="epoch ends only"):
        keras.callbacks.BackupAndRestore(backup, save_freq=3)
