"""ReduceLROnPlateau and CSVLogger against tf-keras 2.21 (printed lines, History entries
and the CSV file recorded from TensorFlow 2.21 + tf-keras 2.21)."""

import logging

import numpy as np
import pytest

from mixprec import keras
from mixprec.keras import layers as L

X = np.array([[1.0, 2.0], [3.0, 4.0]], "float32")
Y = np.array([[1.0], [2.0]], "float32")


def _model(init, lr, metrics=None):
    m = keras.Sequential([L.Dense(1, input_shape=(2,), kernel_initializer=init)])
    m.compile(keras.optimizers.SGD(lr), "mse", metrics=metrics)
    return m


def test_reduce_lr_on_plateau(capsys):
    m = _model("zeros", 0.1)
    cb = keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1, verbose=1,
                                           min_delta=10.0)
    h = m.fit(X, Y, epochs=4, verbose=0, callbacks=[cb])
    assert capsys.readouterr().out == (
        "\nEpoch 2: ReduceLROnPlateau reducing learning rate to 0.05000000074505806.\n"
        "\nEpoch 3: ReduceLROnPlateau reducing learning rate to 0.02500000037252903.\n"
        "\nEpoch 4: ReduceLROnPlateau reducing learning rate to 0.012500000186264515.\n")
    assert sorted(h.history) == ["loss", "lr"]
    assert h.history["lr"] == [np.float32(0.1), np.float32(0.1), np.float32(0.05),
                               np.float32(0.025)]
    assert type(h.history["lr"][0]) is np.float32
    assert float(m.optimizer.learning_rate) == 0.012500000186264515
    with pytest.raises(ValueError, match=r"^ReduceLROnPlateau does not support a factor >= "
                                         r"1\.0\. Got 1\.0$"):
        keras.callbacks.ReduceLROnPlateau(factor=1.0)


def test_reduce_lr_on_plateau_missing_metric(caplog):
    m = _model("zeros", 0.1)
    with caplog.at_level(logging.WARNING):
        m.fit(X, Y, epochs=1, verbose=0,
              callbacks=[keras.callbacks.ReduceLROnPlateau(monitor="nope")])
    assert ("Learning rate reduction is conditioned on metric `nope` which is not available. "
            "Available metrics are: loss,lr") in caplog.text


def test_csv_logger(tmp_path):
    fn = str(tmp_path / "log.csv")
    m = _model("ones", 0.01, metrics=["mae"])
    m.fit(X, Y, epochs=2, verbose=0, callbacks=[keras.callbacks.CSVLogger(fn)])
    with open(fn) as f:
        assert f.read() == ("epoch,loss,mae,val_loss,val_mae\n0,14.5,3.5,NA,NA\n"
                            "1,6.804998397827148,2.369999885559082,NA,NA\n")
    m.fit(X, Y, epochs=1, verbose=0, validation_data=(X, Y),
          callbacks=[keras.callbacks.CSVLogger(fn, append=True, separator=";")])
    with open(fn) as f:
        lines = f.read().splitlines()
    assert len(lines) == 4  # appended, no second header
    values = [float(v) for v in lines[3].split(";")]
    np.testing.assert_allclose(values, [0, 3.206815719604492, 1.597400188446045,
                                        1.5242023468017578, 1.0691879987716675], rtol=1e-6)
