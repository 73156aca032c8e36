"""keras.callbacks.TqdmCallback (the other callbacks are exercised by fit in
test_training.py)."""

import io
import sys

import numpy as np
import pytest

from mixprec import keras

tqdm = pytest.importorskip("tqdm")


def _fit(cb, epochs=2):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((40, 4)).astype("float32"), rng.integers(0, 3, 40)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="softmax")])
    model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
    return model.fit(x, y, batch_size=8, epochs=epochs, verbose=0, callbacks=[cb])


@pytest.mark.parametrize("verbose", [0, 1, 2])
def test_tqdm_callback_draws_epochs_steps_and_metrics(verbose):
    out = io.StringIO()
    history = _fit(keras.callbacks.TqdmCallback(verbose=verbose, tqdm_class=tqdm.tqdm, file=out,
                                                mininterval=0))
    text = out.getvalue()
    assert "Epochs: 100%" in text and "2/2" in text
    assert ("loss=%.4f" % history.history["loss"][-1]) in text
    assert ("5/5" in text) == (verbose >= 1)  # 40 samples, batch 8: five steps an epoch
    assert ("Epoch 2" in text) == (verbose >= 1)


def test_tqdm_callback_says_how_to_install_tqdm(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    with pytest.raises(ImportError, match="pip install tqdm"):
        keras.callbacks.TqdmCallback()


def _checkpoint_fit(cb, epochs=2, n=40, batch_size=8):
    m = keras.Sequential([keras.layers.Dense(1, input_shape=(2,))])
    m.compile("sgd", "mse")
    x = np.linspace(0, 1, 2 * n, dtype=np.float32).reshape(n, 2)
    m.fit(x, x.sum(1, keepdims=True), batch_size=batch_size, epochs=epochs, verbose=0,
          callbacks=[cb])
    return m


def test_model_checkpoint_every_epoch_formats_the_path(tmp_path):
    _checkpoint_fit(keras.callbacks.ModelCheckpoint(str(tmp_path / "w-{epoch:02d}-{loss:.3f}.npz"),
                                                    monitor="loss"))
    names = sorted(p.name for p in tmp_path.iterdir())
    assert len(names) == 2 and names[0].startswith("w-01-") and names[1].startswith("w-02-")


def test_model_checkpoint_every_n_batches(tmp_path):
    # 40 samples / 8 = 5 batches an epoch, 2 epochs, every 3 batches: after batches 3, 6, 9
    cb = keras.callbacks.ModelCheckpoint(str(tmp_path / "w-{epoch}-{batch}.npz"), save_freq=3)
    assert cb._wants_batch_logs("train")
    _checkpoint_fit(cb)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w-1-3.npz", "w-2-1.npz", "w-2-4.npz"]


def test_model_checkpoint_best_only_with_a_threshold(tmp_path):
    cb = keras.callbacks.ModelCheckpoint(str(tmp_path / "best.npz"), monitor="loss",
                                         save_best_only=True, initial_value_threshold=-1.0)
    _checkpoint_fit(cb)
    assert not (tmp_path / "best.npz").exists()  # no loss beats -1
    assert not keras.callbacks.ModelCheckpoint(str(tmp_path / "x"))._wants_batch_logs("train")


def test_model_checkpoint_arguments():
    with pytest.raises(ValueError, match="save_freq"):
        keras.callbacks.ModelCheckpoint("w.npz", save_freq=0)
    with pytest.raises(ValueError, match="save_freq"):
        keras.callbacks.ModelCheckpoint("w.npz", save_freq="batch")
    assert keras.callbacks.ModelCheckpoint("w", save_weights_only=False)._whole_model
    with pytest.warns(UserWarning, match="fallback to auto"):
        keras.callbacks.ModelCheckpoint("w.npz", mode="sideways")


def test_terminate_on_nan_stops_after_the_first_nan_batch(capsys):
    """tf-keras: the batch whose loss is NaN/inf prints 'Batch N: Invalid loss, terminating
    training', the epoch ends there and no further epoch runs."""
    for bad in (np.nan, np.inf):
        model = keras.Sequential([keras.layers.Dense(1)])
        model.compile("sgd", "mse")
        x, y = np.ones((64, 2), np.float32), np.ones((64, 1), np.float32)
        x[20] = bad  # batch 2 of 8 rows
        hist = model.fit(x, y, batch_size=8, epochs=3, verbose=0, shuffle=False,
                         callbacks=[keras.callbacks.TerminateOnNaN()])
        assert capsys.readouterr().out == "Batch 2: Invalid loss, terminating training\n"
        assert int(model.optimizer.iterations.numpy()) == 3
        assert len(hist.history["loss"]) == 1 and not np.isfinite(hist.history["loss"][0])
    # a finite run is untouched
    model = keras.Sequential([keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    hist = model.fit(np.ones((16, 2), np.float32), np.ones((16, 1), np.float32), batch_size=8,
                     epochs=2, verbose=0, callbacks=[keras.callbacks.TerminateOnNaN()])
    assert len(hist.history["loss"]) == 2 and capsys.readouterr().out == ""


def test_on_batch_hooks_are_called_by_the_train_batch_hooks():
    seen = []

    class Old(keras.callbacks.Callback):
        def on_batch_begin(self, batch, logs=None):
            seen.append(("begin", batch))

        def on_batch_end(self, batch, logs=None):
            seen.append(("end", batch, sorted(logs)))

    model = keras.Sequential([keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    model.fit(np.ones((16, 2), np.float32), np.ones((16, 1), np.float32), batch_size=8,
              verbose=0, callbacks=[Old()])
    assert seen == [("begin", 0), ("end", 0, ["loss"]), ("begin", 1), ("end", 1, ["loss"])]


def test_base_logger_and_remote_monitor(caplog):
    import numpy as np
    from mixprec import keras
    bl = keras.callbacks.BaseLogger(stateful_metrics=["acc"])
    bl.set_params({"metrics": ["loss", "acc"]})
    bl.on_epoch_begin(0)
    bl.on_batch_end(0, {"size": 2, "loss": 1.0, "acc": 0.5})
    bl.on_batch_end(1, {"size": 6, "loss": 3.0, "acc": 0.75})
    logs = {}
    bl.on_epoch_end(0, logs)
    assert logs == {"loss": (2 * 1.0 + 6 * 3.0) / 8, "acc": 0.75}
    rm = keras.callbacks.RemoteMonitor(root="http://127.0.0.1:9")
    m = keras.Sequential([keras.layers.Dense(1)])
    m.compile("sgd", "mse")
    with caplog.at_level("WARNING", logger="mixprec"):
        m.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=1, verbose=0, callbacks=[rm])
    assert "Could not reach RemoteMonitor root server at http://127.0.0.1:9" in caplog.text


def test_model_checkpoint_saves_the_whole_model_by_default_and_reports_as_tf_keras(
        tmp_path, capsys):
    import numpy as np
    from mixprec import keras
    cb = keras.callbacks.ModelCheckpoint(str(tmp_path / "m-{epoch}.keras"), monitor="loss",
                                         save_best_only=True, verbose=1)
    assert cb.save_weights_only is False  # tf-keras 2.21's default
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(2,))])
    model.compile(keras.optimizers.SGD(0.0), "mse")  # no learning: the loss never improves
    model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=2, verbose=0, callbacks=[cb])
    out = capsys.readouterr().out
    assert "\nEpoch 1: loss improved from inf to " in out and ", saving model to " in out
    assert "\nEpoch 2: loss did not improve from " in out
    again = keras.models.load_model(str(tmp_path / "m-1.keras"))
    assert isinstance(again, keras.Sequential)
