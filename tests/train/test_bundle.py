"""The tensor-bundle codec (src/mixprec/train/_bundle.py) against TensorFlow's own files
(tests/train/fixtures, written by make_fixtures.py with TF 2.21) and its damage rules."""

import os
import shutil

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec import errors
from mixprec.train import _bundle, _object_graph

FIX = os.path.join(os.path.dirname(__file__), "fixtures")


def test_crc32c_check_value_and_mask():
    assert tf._core.crc32c(b"123456789") == 0xE3069283
    assert tf._core.crc32c(b"") == 0
    # continuing a CRC equals one CRC over the concatenation; large buffers too
    big = np.random.RandomState(0).bytes(1 << 20)
    assert tf._core.crc32c(big[100:], tf._core.crc32c(big[:100])) == tf._core.crc32c(big)
    assert _bundle.mask(0) == 0xA282EAD8
    for c in (0, 1, 0xE3069283, 0xFFFFFFFF):
        assert _bundle.unmask(_bundle.mask(c)) == c


def test_crc32c_numpy_buffers_and_odd_offsets():
    a = np.arange(1001, dtype=np.float32)
    raw = a.tobytes()
    assert tf._core.crc32c(a) == tf._core.crc32c(raw)
    for off in range(9):
        assert tf._core.crc32c(memoryview(raw)[off:]) == tf._core.crc32c(raw[off:])


@pytest.mark.parametrize("prefix", ["tf_adam/ckpt-2", "tf_lso/ckpt", "tf_weights/weights"])
def test_index_table_is_rebuilt_byte_for_byte(prefix):
    data = open(os.path.join(FIX, prefix + ".index"), "rb").read()
    items = _bundle.BundleReader._read_table(data)
    assert items[0] == (b"", b"\x08\x01\x1a\x02\x08\x01")
    assert _bundle.build_table(items) == data


@pytest.mark.parametrize("prefix", ["tf_adam/ckpt-2", "tf_lso/ckpt", "tf_weights/weights"])
def test_tensorflow_values_read_exactly(prefix):
    path = os.path.join(FIX, prefix)
    expected = np.load(os.path.join(os.path.dirname(path), "expected.npz"), allow_pickle=False)
    reader = tf.train.load_checkpoint(path)
    keys = [k for k, _ in tf.train.list_variables(path)]
    assert "_CHECKPOINTABLE_OBJECT_GRAPH" in keys
    assert sorted(k.replace("/", "|") for k in keys if k[0] != "_") == sorted(expected.files)
    for name in expected.files:
        key = name.replace("|", "/")
        got = reader.get_tensor(key)
        want = expected[name]
        assert np.asarray(got).dtype == want.dtype and np.shape(got) == want.shape
        np.testing.assert_array_equal(got, want)
        assert reader.has_tensor(key)
    assert not reader.has_tensor("nope")
    with pytest.raises(errors.NotFoundError):
        reader.get_tensor("nope")


def test_scalars_are_numpy_scalars_and_maps():
    reader = tf.train.load_checkpoint(os.path.join(FIX, "tf_adam"))  # a directory: latest
    it = reader.get_tensor("optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE")
    assert isinstance(it, np.int64) and it == 2
    lr = reader.get_tensor("optimizer/_learning_rate/.ATTRIBUTES/VARIABLE_VALUE")
    assert isinstance(lr, np.float32) and lr == np.float32(0.01)
    shapes = reader.get_variable_to_shape_map()
    assert shapes["model/layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE"] == [4, 8]
    dtypes = reader.get_variable_to_dtype_map()
    assert dtypes["save_counter/.ATTRIBUTES/VARIABLE_VALUE"] == tf.int64


def test_object_graph_of_tensorflow_round_trips():
    r = _bundle.BundleReader(os.path.join(FIX, "tf_adam/ckpt-2"))
    raw = r.read("_CHECKPOINTABLE_OBJECT_GRAPH")
    nodes = _object_graph.decode_graph(raw)
    assert [name for _, name in nodes[0].children] == ["model", "optimizer", "save_counter"]
    assert _object_graph.encode_graph(nodes) == raw


def test_write_read_every_dtype(tmp_path):
    import ml_dtypes

    items = [("f32", np.arange(6, dtype=np.float32).reshape(2, 3)),
             ("f16", np.array([1.0, -2.5], np.float16)),
             ("bf16", np.array([1.0, 3.0], ml_dtypes.bfloat16)),
             ("f64", np.array(2.5)), ("i64", np.int64(7)), ("i32", np.array([1, 2], np.int32)),
             ("u8", np.array([255], np.uint8)), ("b", np.array([True, False])),
             ("empty", np.zeros((0, 3), np.float32)), ("s", b"ab\x00c")]
    prefix = str(tmp_path / "b")
    _bundle.write_bundle(prefix, items)
    r = _bundle.BundleReader(prefix)
    for k, v in items:
        got = r.read(k)
        if isinstance(v, bytes):
            assert got == v
        else:
            assert np.asarray(got).dtype == np.asarray(v).dtype
            np.testing.assert_array_equal(got, v)
    # the string rule of the reference: ["ab"] layout is varint len, masked len-crc, bytes
    e = r.entries["s"]
    assert e.dtype == 7 and e.shape == () and e.size == 1 + 4 + 4


def test_overwrite_switches_data_file_with_the_index(tmp_path):
    prefix = str(tmp_path / "w")
    _bundle.write_bundle(prefix, [("a", np.zeros(3, np.float32))])
    assert _bundle.data_files(prefix) == [prefix + ".data-00000-of-00001"]
    _bundle.write_bundle(prefix, [("a", np.ones(3, np.float32))])
    assert _bundle.data_files(prefix) == [prefix + ".data-00000-of-00002"]
    np.testing.assert_array_equal(_bundle.BundleReader(prefix).read("a"), np.ones(3))
    _bundle.write_bundle(prefix, [("a", np.full(3, 2, np.float32))])
    assert _bundle.data_files(prefix) == [prefix + ".data-00000-of-00001"]
    np.testing.assert_array_equal(_bundle.BundleReader(prefix).read("a"), np.full(3, 2))
    assert sorted(os.listdir(tmp_path)) == ["w.data-00000-of-00001", "w.index"]


def _copy(tmp_path, name="tf_adam"):
    d = tmp_path / name
    shutil.copytree(os.path.join(FIX, name), d)
    return str(d / "ckpt-2")


def _read_all(prefix):
    r = _bundle.BundleReader(prefix)
    for k in r.keys():
        r.read(k)


def test_every_flipped_byte_is_detected(tmp_path):
    prefix = _copy(tmp_path)
    for suffix in (".index", ".data-00000-of-00001"):
        path = prefix + suffix
        good = open(path, "rb").read()
        for pos in range(len(good)):
            bad = bytearray(good)
            bad[pos] ^= 0x01
            open(path, "wb").write(bytes(bad))
            try:
                _read_all(prefix)
            except (errors.DataLossError, errors.NotFoundError, ValueError) as e:
                assert os.path.basename(prefix) in str(e)
            else:  # (TF misses flips in the footer and the metaindex; mixprec does not)
                raise AssertionError("a flip at byte %d of %s went unnoticed" % (pos, suffix))
        open(path, "wb").write(good)


def test_damage_raises_tensorflows_exception_kinds(tmp_path):
    prefix = _copy(tmp_path)
    data = prefix + ".data-00000-of-00001"
    good = open(data, "rb").read()
    open(data, "wb").write(good[:100])
    with pytest.raises(IndexError, match="Read less bytes"):
        _read_all(prefix)
    with pytest.raises(errors.DataLossError):
        _read_all(prefix)
    os.remove(data)
    with pytest.raises(errors.NotFoundError, match="data-00000-of-00001"):
        _read_all(prefix)
    open(data, "wb").write(good)
    index = open(prefix + ".index", "rb").read()
    for broken in (b"", index[:40], index[:-1], b"x" * 100):
        open(prefix + ".index", "wb").write(broken)
        with pytest.raises(errors.DataLossError, match="ckpt-2.index"):
            _read_all(prefix)
    os.remove(prefix + ".index")
    with pytest.raises(errors.NotFoundError):
        tf.train.load_checkpoint(prefix)


def test_non_regular_files_are_refused_before_reading(tmp_path):
    os.mkdir(tmp_path / "d.index")
    with pytest.raises(ValueError, match="directory"):
        _bundle.BundleReader(str(tmp_path / "d"))
    os.mkfifo(tmp_path / "f.index")
    with pytest.raises(ValueError, match="FIFO"):
        _bundle.BundleReader(str(tmp_path / "f"))
    os.symlink("/dev/zero", tmp_path / "z.index")
    with pytest.raises(ValueError, match="device"):
        _bundle.BundleReader(str(tmp_path / "z"))


def test_declared_sizes_bound_reads(tmp_path):
    # an entry that declares 2**40 bytes is refused from the file size, never allocated
    prefix = str(tmp_path / "big")
    entry = _bundle.Entry(1, (1 << 38,), 0, 0, 1 << 40, 0).encode()
    table = _bundle.build_table([(b"", _bundle._header(1)), (b"x", entry)])
    open(prefix + ".index", "wb").write(table)
    open(_bundle.data_path(prefix), "wb").write(b"\x00" * 16)
    with pytest.raises(IndexError):
        _bundle.BundleReader(prefix).read("x")
    entry = _bundle.Entry(1, (3,), 0, 0, 16, 0).encode()  # 3 floats are 12 bytes
    open(prefix + ".index", "wb").write(
        _bundle.build_table([(b"", _bundle._header(1)), (b"x", entry)]))
    with pytest.raises(errors.DataLossError, match="Invalid size"):
        _bundle.BundleReader(prefix).read("x")


def test_random_damage_only_raises_the_documented_exceptions(tmp_path):
    """Multi-byte damage, truncation and splicing of both files: a restore either works
    (nothing changed that matters) or raises DataLossError / NotFoundError / ValueError,
    never anything else, never a hang or a huge allocation."""
    prefix = _copy(tmp_path)
    files = [prefix + ".index", prefix + ".data-00000-of-00001"]
    goods = [open(f, "rb").read() for f in files]
    rng = np.random.RandomState(11)
    model = keras.Sequential([keras.layers.Dense(8, activation="relu"), keras.layers.Dense(3)])
    opt = keras.optimizers.Adam()
    for trial in range(150):
        k = rng.randint(2)
        bad = bytearray(goods[k])
        how = rng.randint(3)
        if how == 0:
            for _ in range(rng.randint(1, 6)):
                bad[rng.randint(len(bad))] = rng.randint(256)
        elif how == 1:
            bad = bad[:rng.randint(len(bad))]
        else:
            a = rng.randint(len(bad))
            bad[a:a] = rng.bytes(rng.randint(1, 40))
        open(files[k], "wb").write(bytes(bad))
        try:
            tf.train.Checkpoint(model=model, optimizer=opt).restore(prefix).expect_partial()
        except (errors.DataLossError, errors.NotFoundError, ValueError):
            pass
        open(files[k], "wb").write(goods[k])
