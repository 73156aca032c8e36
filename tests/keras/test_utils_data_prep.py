"""keras.utils' data preparation against tf-keras 2.21 (expected values recorded from
TensorFlow 2.21 + tf-keras 2.21 on the same calls)."""

import os

import numpy as np
import pytest

from mixprec import keras

U = keras.utils


def test_pad_sequences():
    assert U.pad_sequences([[1, 2, 3], [4], [5, 6]], maxlen=2, padding="post").tolist() == \
        [[2, 3], [4, 0], [5, 6]]
    out = U.pad_sequences([[1, 2, 3], [4], []], value=-1, truncating="post", dtype="float32")
    assert out.dtype == np.float32
    assert out.tolist() == [[1.0, 2.0, 3.0], [-1.0, -1.0, 4.0], [-1.0, -1.0, -1.0]]
    with pytest.raises(ValueError, match='Padding type "mid" not understood'):
        U.pad_sequences([[1]], padding="mid")
    with pytest.raises(ValueError, match='Truncating type "x" not understood'):
        U.pad_sequences([[1, 2]], maxlen=1, truncating="x")
    with pytest.raises(ValueError, match="dtype=object"):
        U.pad_sequences([["a"]], value="x")


def test_normalize_and_to_ordinal():
    assert U.normalize(np.array([[3.0, 4.0], [0, 0]])).tolist() == [[0.6, 0.8], [0.0, 0.0]]
    assert U.to_ordinal([0, 2, 1]).tolist() == [[0.0, 0.0], [1.0, 1.0], [1.0, 0.0]]


def test_timeseries_dataset_from_array():
    ds = U.timeseries_dataset_from_array(np.arange(10), np.arange(10) * 10, sequence_length=3,
                                         sequence_stride=2, batch_size=2)
    assert [(x.numpy().tolist(), y.numpy().tolist()) for x, y in ds] == \
        [([[0, 1, 2], [2, 3, 4]], [0, 20]), ([[4, 5, 6], [6, 7, 8]], [40, 60])]
    ds = U.timeseries_dataset_from_array(np.arange(20), None, sequence_length=3, sampling_rate=2,
                                         start_index=3, end_index=15, batch_size=None)
    assert [x.numpy().tolist() for x in ds] == [
        [3, 5, 7], [4, 6, 8], [5, 7, 9], [6, 8, 10], [7, 9, 11], [8, 10, 12], [9, 11, 13],
        [10, 12, 14]]
    with pytest.raises(ValueError, match="`sampling_rate` must be higher than 0"):
        U.timeseries_dataset_from_array(np.arange(5), None, 2, sampling_rate=0)
    with pytest.raises(ValueError, match="`end_index` must be lower than the length"):
        U.timeseries_dataset_from_array(np.arange(5), None, 2, end_index=5)


def test_split_dataset():
    a, b = U.split_dataset(np.arange(10), left_size=0.8)
    assert len(list(a)) == 8 and [int(v) for v in b] == [8, 9]
    a, b = U.split_dataset((np.arange(10), np.arange(10) * 2), right_size=3)
    assert len(list(a)) == 7
    assert [tuple(int(t) for t in v) for v in b] == [(7, 14), (8, 16), (9, 18)]
    with pytest.raises(ValueError, match="greater than the total"):
        U.split_dataset(np.arange(4), left_size=3, right_size=2)


def test_get_file_from_a_local_origin_checks_its_hash(tmp_path):
    src = tmp_path / "data.bin"
    src.write_bytes(b"mixprec" * 100)
    import hashlib

    good = hashlib.sha256(src.read_bytes()).hexdigest()
    path = U.get_file("data.bin", origin=src.as_uri(), file_hash=good,
                      cache_dir=str(tmp_path / "cache"))
    assert open(path, "rb").read() == src.read_bytes()
    assert os.path.dirname(path).endswith(os.path.join("cache", "datasets"))
    with pytest.raises(ValueError, match="corrupted"):
        U.get_file("other.bin", origin=src.as_uri(), file_hash="0" * 64,
                   cache_dir=str(tmp_path / "cache"))
    assert not os.path.exists(os.path.join(os.path.dirname(path), "other.bin"))
    with pytest.raises(Exception, match="URL fetch failure"):
        U.get_file("missing.bin", origin=(tmp_path / "nope").as_uri(),
                   cache_dir=str(tmp_path / "cache"))


def test_interactive_logging_switch_and_pydot_message():
    assert U.is_interactive_logging_enabled()
    U.disable_interactive_logging()
    assert not U.is_interactive_logging_enabled()
    U.enable_interactive_logging()
    try:
        import pydot  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install pydot"):
            U.plot_model(keras.Sequential([keras.layers.Dense(1)]))


def test_get_source_inputs_walks_back_to_the_inputs():
    i, j = keras.Input((3,)), keras.Input((2,))
    o = keras.layers.Dense(2)(keras.layers.Concatenate()([i, keras.layers.Dense(3)(j)]))
    found = U.get_source_inputs(o)
    assert len(found) == 2 and found[0] is i and found[1] is j


def test_disabled_interactive_logging_sends_the_progress_bar_to_logging(capsys, caplog):
    import logging

    model = keras.Sequential([keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    U.disable_interactive_logging()
    try:
        with caplog.at_level(logging.INFO, logger="mixprec"):
            model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=1, verbose=2)
    finally:
        U.enable_interactive_logging()
    assert "loss" not in capsys.readouterr().out
    assert "loss" in caplog.text
