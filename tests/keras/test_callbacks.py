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
