"""mixprec.data.Dataset: from_tensor_slices (arrays, tuples, dicts), shuffle (seeds, buffer
semantics, reshuffling), batch (drop_remainder, cardinality), map, repeat, take, prefetch;
iteration yields mixprec tensors with TensorFlow's dtypes."""

import numpy as np
import pytest

import mixprec as tf
from mixprec.data import Dataset


def ids(ds):
    return [int(v) for v in ds.as_numpy_iterator()]


# --------------------------------------------------------------------------- sources


def test_from_tensor_slices_array_yields_tensors():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    ds = Dataset.from_tensor_slices(x)
    elems = list(ds)
    assert len(elems) == 4 and len(ds) == 4
    assert all(isinstance(e, tf.Tensor) for e in elems)
    for i, e in enumerate(elems):
        assert e.dtype.name == "float32" and tuple(e.shape) == (3,)
        np.testing.assert_array_equal(e.numpy(), x[i])
    assert int(ds.cardinality()) == 4


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "int64", "int32", "uint8"])
def test_element_dtypes_are_kept(dtype):
    for shape in ((5,), (5, 2)):
        ds = Dataset.from_tensor_slices(np.ones(shape, dtype=dtype))
        assert {e.dtype.name for e in ds} == {dtype}
        assert {e.dtype.name for e in ds.map(lambda t: t)} == {dtype}
        assert {e.dtype.name for e in ds.batch(2)} == {dtype}


def test_python_lists_take_tensorflows_dtypes():
    assert next(iter(Dataset.from_tensor_slices([1.0, 2.0]))).dtype.name == "float32"
    assert next(iter(Dataset.from_tensor_slices([[1, 2], [3, 4]]))).dtype.name == "int32"


def test_tuples_and_dicts():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    y = np.array([0, 1, 2], np.uint8)
    pairs = list(Dataset.from_tensor_slices((x, y)))
    assert all(isinstance(p, tuple) and len(p) == 2 for p in pairs)
    np.testing.assert_array_equal(pairs[2][0].numpy(), x[2])
    assert pairs[2][1].dtype.name == "uint8" and int(pairs[2][1]) == 2
    d = list(Dataset.from_tensor_slices({"img": x, "label": y}))
    assert sorted(d[0]) == ["img", "label"]
    np.testing.assert_array_equal(d[1]["img"].numpy(), x[1])
    batches = list(Dataset.from_tensor_slices({"img": x, "label": y}).batch(2))
    assert [tuple(b["img"].shape) for b in batches] == [(2, 2), (1, 2)]
    # tensors work as sources too
    assert ids(Dataset.from_tensor_slices(tf.constant([4, 5]))) == [4, 5]


def test_lists_inside_tuples_and_dicts_are_arrays():
    # in tf.data only tuples and dicts are structure: a list below them is one tensor
    pairs = list(Dataset.from_tensor_slices(([1, 2, 3], [4.0, 5.0, 6.0])))
    assert [(int(a), float(b)) for a, b in pairs] == [(1, 4.0), (2, 5.0), (3, 6.0)]
    assert (pairs[0][0].dtype.name, pairs[0][1].dtype.name) == ("int32", "float32")
    d = list(Dataset.from_tensor_slices({"a": [1, 2], "b": [3, 4]}))
    assert [(int(e["a"]), int(e["b"])) for e in d] == [(1, 3), (2, 4)]
    (nested,) = list(Dataset.from_tensor_slices(([[1.0, 2.0]], {"c": [[5]]})))
    assert tuple(nested[0].shape) == (2,) and tuple(nested[1]["c"].shape) == (1,)
    (only,) = list(Dataset.from_tensors(([1, 2], {"c": [3.0]})))
    assert tuple(only[0].shape) == (2,) and tuple(only[1]["c"].shape) == (1,)


def test_from_tensor_slices_errors():
    with pytest.raises(ValueError, match="not compatible"):
        Dataset.from_tensor_slices((np.zeros(3), np.zeros(4)))
    with pytest.raises(ValueError, match="rank >= 1"):
        Dataset.from_tensor_slices(np.float32(1.0))


def test_range_and_from_tensors():
    assert ids(Dataset.range(5)) == [0, 1, 2, 3, 4]
    assert ids(Dataset.range(2, 8, 3)) == [2, 5]
    assert next(iter(Dataset.range(1))).dtype.name == "int64"
    with pytest.raises(tf.errors.InvalidArgumentError, match="step must be a non-zero integer"):
        Dataset.range(0, 10, 0)
    (only,) = list(Dataset.from_tensors(np.ones((2, 3), np.float32)))
    assert tuple(only.shape) == (2, 3)


# --------------------------------------------------------------------------- batch


@pytest.mark.parametrize("n,size,drop,expected", [
    (10, 3, False, [3, 3, 3, 1]), (10, 3, True, [3, 3, 3]), (9, 3, False, [3, 3, 3]),
    (9, 3, True, [3, 3, 3]), (2, 5, False, [2]), (2, 5, True, []), (0, 4, False, []),
])
def test_batch_sizes_and_cardinality(n, size, drop, expected):
    x = np.arange(n, dtype=np.int64)
    for ds in (Dataset.from_tensor_slices(x), Dataset.from_tensor_slices(x).map(lambda t: t)):
        b = ds.batch(size, drop_remainder=drop)
        got = [len(v) for v in b.as_numpy_iterator()]
        assert got == expected
        assert int(b.cardinality()) == len(expected) == len(b)
        flat = np.concatenate(list(b.as_numpy_iterator())) if expected else np.zeros(0)
        np.testing.assert_array_equal(flat, x[:sum(expected)])


def test_batch_rejects_non_positive():
    with pytest.raises(ValueError):
        Dataset.range(3).batch(0)


# --------------------------------------------------------------------------- shuffle


def test_shuffle_with_seed_is_deterministic():
    a = Dataset.range(20).shuffle(20, seed=42)
    b = Dataset.range(20).shuffle(20, seed=42)
    first = ids(a)
    assert sorted(first) == list(range(20)) and first != list(range(20))
    tf.random.uniform([3])  # other random ops in between change nothing
    assert ids(b) == first  # same seed, same first order
    assert ids(Dataset.range(20).shuffle(20, seed=43)) != first


def test_shuffle_reshuffles_each_iteration_reproducibly():
    a = Dataset.range(20).shuffle(20, seed=7)
    b = Dataset.range(20).shuffle(20, seed=7)
    epochs_a = [ids(a) for _ in range(3)]
    epochs_b = [ids(b) for _ in range(3)]
    assert epochs_a == epochs_b
    assert epochs_a[0] != epochs_a[1] != epochs_a[2]
    fixed = Dataset.range(20).shuffle(20, seed=7, reshuffle_each_iteration=False)
    assert ids(fixed) == ids(fixed)


def test_shuffle_without_op_seed_follows_the_global_seed():
    tf.random.set_seed(123)
    a = [ids(Dataset.range(15).shuffle(15)) for _ in range(2)]
    tf.random.set_seed(123)
    b = [ids(Dataset.range(15).shuffle(15)) for _ in range(2)]
    assert a == b
    assert a[0] != a[1]  # two datasets, two keys


@pytest.mark.parametrize("buffer", [1, 2, 5, 50])
@pytest.mark.parametrize("mapped", [False, True])
def test_shuffle_buffer_semantics(buffer, mapped):
    """TensorFlow's buffer: output i is drawn from the first i + buffer elements."""
    n = 30
    src = Dataset.range(n)
    if mapped:  # a source that is not plain slices takes the streaming path
        src = src.map(lambda t: t)
    for seed in range(5):
        order = ids(src.shuffle(buffer, seed=seed))
        assert sorted(order) == list(range(n))
        assert all(v < i + buffer for i, v in enumerate(order)), order
        if buffer == 1:
            assert order == list(range(n))
    if buffer >= n:  # a full buffer can put the last element first
        firsts = {ids(src.shuffle(buffer, seed=s))[0] for s in range(40)}
        assert max(firsts) > n // 2


def test_shuffle_then_batch_covers_everything_once_per_epoch():
    x = np.arange(100, dtype=np.int64)
    ds = Dataset.from_tensor_slices((x, x * 10)).shuffle(100, seed=0).batch(32)
    for _ in range(2):
        batches = list(ds)
        assert [len(b[0]) for b in batches] == [32, 32, 32, 4]
        xs = np.concatenate([b[0].numpy() for b in batches])
        ys = np.concatenate([b[1].numpy() for b in batches])
        assert sorted(xs) == list(range(100))
        np.testing.assert_array_equal(ys, xs * 10)  # pairs stay together


def test_shuffle_rejects_bad_buffer():
    with pytest.raises(ValueError):
        Dataset.range(3).shuffle(0)


# --------------------------------------------------------------------------- map, repeat, take


def test_map_on_tuples_dicts_and_batches():
    x = np.arange(4, dtype=np.float32)
    y = np.arange(4, dtype=np.int64)
    ds = Dataset.from_tensor_slices((x, y)).map(lambda a, b: (a * 2, b + 1))
    out = list(ds)
    assert all(isinstance(a, tf.Tensor) for a, _ in out)
    assert [float(a) for a, _ in out] == [0.0, 2.0, 4.0, 6.0]
    assert [int(b) for _, b in out] == [1, 2, 3, 4]
    d = Dataset.from_tensor_slices({"a": x}).map(lambda e: {"a": e["a"] + 1, "n": e["a"]})
    assert [float(e["a"]) for e in d] == [1.0, 2.0, 3.0, 4.0]
    batched = Dataset.from_tensor_slices(x).batch(3).map(lambda t: t * t)
    np.testing.assert_array_equal(next(iter(batched)).numpy(), [0.0, 1.0, 4.0])
    assert int(ds.cardinality()) == 4


def test_map_runs_once_per_element_per_pass():
    calls = []
    ds = Dataset.range(3).map(lambda t: calls.append(int(t)) or t)
    list(ds)
    list(ds)
    assert calls == [0, 1, 2, 0, 1, 2]


def test_repeat_take_and_cardinality():
    assert ids(Dataset.range(3).repeat(2)) == [0, 1, 2, 0, 1, 2]
    assert int(Dataset.range(3).repeat(2).cardinality()) == 6
    inf = Dataset.range(3).repeat()
    assert int(inf.cardinality()) == tf.data.experimental.INFINITE_CARDINALITY
    assert ids(inf.take(7)) == [0, 1, 2, 0, 1, 2, 0]
    assert int(inf.take(7).cardinality()) == 7
    assert ids(Dataset.range(5).take(2)) == [0, 1]
    assert ids(Dataset.range(5).take(-1)) == [0, 1, 2, 3, 4]
    assert ids(Dataset.range(5).take(0)) == []
    assert int(Dataset.range(5).take(9).cardinality()) == 5
    assert ids(Dataset.range(5).skip(3)) == [3, 4]
    with pytest.raises(TypeError):
        len(inf)
    assert ids(Dataset.range(0).repeat()) == []


def test_repeat_after_shuffle_reshuffles_each_repetition():
    order = ids(Dataset.range(10).shuffle(10, seed=1).repeat(2))
    assert sorted(order[:10]) == sorted(order[10:]) == list(range(10))
    assert order[:10] != order[10:]


def test_prefetch_cache_and_autotune_are_transparent():
    ds = Dataset.range(4).batch(2).prefetch(tf.data.AUTOTUNE)
    assert [list(b) for b in ds.as_numpy_iterator()] == [[0, 1], [2, 3]]
    assert ids(Dataset.range(3).cache()) == [0, 1, 2]
    assert tf.data.AUTOTUNE == tf.data.experimental.AUTOTUNE


def test_filter_enumerate_unbatch():
    assert ids(Dataset.range(6).filter(lambda t: t % 2 == 0)) == [0, 2, 4]
    pairs = [(int(i), int(v)) for i, v in Dataset.range(3, 6).enumerate()]
    assert pairs == [(0, 3), (1, 4), (2, 5)]
    assert ids(Dataset.range(5).batch(2).unbatch()) == [0, 1, 2, 3, 4]
    assert {e.dtype.name for e in Dataset.from_tensor_slices(
        np.ones((4,), np.float64)).batch(2).unbatch()} == {"float64"}


def test_the_guides_pipeline():
    x = np.random.default_rng(0).random((50, 4)).astype("float32")
    y = np.arange(50) % 10
    train = Dataset.from_tensor_slices((x, y)).shuffle(10000).batch(16)
    test = Dataset.from_tensor_slices((x, y)).batch(16)
    assert [len(b[0]) for b in train] == [16, 16, 16, 2]
    first = next(iter(test))
    assert first[0].dtype.name == "float32" and tuple(first[0].shape) == (16, 4)
    np.testing.assert_array_equal(first[1].numpy(), y[:16])


def test_shuffle_autotune_is_a_full_shuffle_on_any_source():
    # a mapped source takes the generic (streaming) path, not the index permutation
    ds = Dataset.from_tensor_slices(np.arange(10)).map(lambda x: x * 2)
    out = [int(v) for v in ds.shuffle(tf.data.AUTOTUNE, seed=1)]
    assert sorted(out) == list(range(0, 20, 2)) and out != sorted(out)
    with pytest.raises(ValueError, match="greater than zero"):
        ds.shuffle(0)


def test_skip_minus_one_skips_everything():
    ds = Dataset.range(5).skip(-1)
    assert list(ds) == [] and len(ds) == 0
    assert int(ds.cardinality()) == 0


def test_map_passes_a_namedtuple_as_one_argument():
    import collections

    Pair = collections.namedtuple("Pair", "a b")
    ds = Dataset.from_tensor_slices(Pair(np.arange(3), np.arange(3) * 10)).map(lambda p: p.a + p.b)
    assert [int(v) for v in ds] == [0, 11, 22]
    plain = Dataset.from_tensor_slices((np.arange(3), np.arange(3))).map(lambda a, b: a * b)
    assert [int(v) for v in plain] == [0, 1, 4]


def test_element_spec_as_tensorflow_prints_it():
    # TensorFlow 2.21's reprs, recorded
    x = np.zeros((10, 28, 28), np.float32)
    ds = tf.data.Dataset.from_tensor_slices(x)
    assert repr(ds.batch(4).element_spec) == \
        "TensorSpec(shape=(None, 28, 28), dtype=tf.float32, name=None)"
    assert repr(ds.batch(4, drop_remainder=True).element_spec) == \
        "TensorSpec(shape=(4, 28, 28), dtype=tf.float32, name=None)"
    pair = tf.data.Dataset.from_tensor_slices((np.ones((6, 3)), np.arange(6))).batch(2)
    assert repr(pair.element_spec) == (
        "(TensorSpec(shape=(None, 3), dtype=tf.float64, name=None), "
        "TensorSpec(shape=(None,), dtype=tf.int64, name=None))")
    d = tf.data.Dataset.from_tensor_slices({"a": [1., 2.], "b": [[1, 2], [3, 4]]})
    assert repr(d.element_spec) == ("{'a': TensorSpec(shape=(), dtype=tf.float32, name=None), "
                                    "'b': TensorSpec(shape=(2,), dtype=tf.int32, name=None)}")
    r = tf.data.Dataset.range(5)
    assert repr(r.element_spec) == "TensorSpec(shape=(), dtype=tf.int64, name=None)"
    assert repr(r.map(lambda v: (v, tf.cast(v, tf.float32) * 2)).element_spec) == (
        "(TensorSpec(shape=(), dtype=tf.int64, name=None), "
        "TensorSpec(shape=(), dtype=tf.float32, name=None))")
    assert repr(r.enumerate().element_spec) == (
        "(TensorSpec(shape=(), dtype=tf.int64, name=None), "
        "TensorSpec(shape=(), dtype=tf.int64, name=None))")
    two = tf.data.Dataset.from_tensor_slices(np.zeros((6, 4)))
    assert repr(two.batch(2).unbatch().element_spec) == \
        "TensorSpec(shape=(4,), dtype=tf.float64, name=None)"
    assert repr(tf.data.Dataset.from_tensors(np.zeros((6, 4))).element_spec) == \
        "TensorSpec(shape=(6, 4), dtype=tf.float64, name=None)"
    chain = tf.data.Dataset.from_tensor_slices([1, 2, 3]).repeat().shuffle(3).take(2).skip(1)
    assert repr(chain.element_spec) == "TensorSpec(shape=(), dtype=tf.int32, name=None)"
    # a map over batches keeps the open batch dimension
    m = ds.batch(4).map(lambda b: tf.reduce_sum(b, axis=2))
    assert repr(m.element_spec) == "TensorSpec(shape=(None, 28), dtype=tf.float32, name=None)"


# TensorFlow 2.21's reprs (printed by /tmp/tfenv for the same pipelines)
_X_SPEC = "TensorSpec(shape=(28, 28), dtype=tf.float32, name=None)"
_Y_SPEC = "TensorSpec(shape=(), dtype=tf.uint8, name=None)"
_PAIR = "(%s, %s)" % (_X_SPEC, _Y_SPEC)


@pytest.mark.parametrize("make,expected", [
    (lambda d: d, "<_TensorSliceDataset element_spec=%s>" % _PAIR),
    (lambda d: d.batch(4),
     "<_BatchDataset element_spec=(TensorSpec(shape=(None, 28, 28), dtype=tf.float32, name=None), "
     "TensorSpec(shape=(None,), dtype=tf.uint8, name=None))>"),
    (lambda d: d.batch(4, drop_remainder=True),
     "<_BatchDataset element_spec=(TensorSpec(shape=(4, 28, 28), dtype=tf.float32, name=None), "
     "TensorSpec(shape=(4,), dtype=tf.uint8, name=None))>"),
    (lambda d: d.shuffle(5), "<_ShuffleDataset element_spec=%s>" % _PAIR),
    (lambda d: d.map(lambda a, b: (a * 2, b)), "<_MapDataset element_spec=%s>" % _PAIR),
    (lambda d: d.prefetch(2), "<_PrefetchDataset element_spec=%s>" % _PAIR),
    (lambda d: d.repeat(), "<_RepeatDataset element_spec=%s>" % _PAIR),
    (lambda d: d.take(3), "<_TakeDataset element_spec=%s>" % _PAIR),
    (lambda d: d.cache(), "<CacheDataset element_spec=%s>" % _PAIR),
    (lambda d: d.skip(2), "<_SkipDataset element_spec=%s>" % _PAIR),
    (lambda d: d.batch(2).unbatch(), "<_UnbatchDataset element_spec=%s>" % _PAIR),
    (lambda d: d.filter(lambda a, b: True), "<_FilterDataset element_spec=%s>" % _PAIR),
    (lambda d: d.enumerate(),
     "<_ZipDataset element_spec=(TensorSpec(shape=(), dtype=tf.int64, name=None), %s)>" % _PAIR),
    (lambda d: tf.data.Dataset.zip((d, d)), "<_ZipDataset element_spec=(%s, %s)>" % (_PAIR, _PAIR)),
    (lambda d: d.concatenate(d), "<_ConcatenateDataset element_spec=%s>" % _PAIR),
    (lambda d: tf.data.Dataset.from_tensors(np.zeros((10, 28, 28), np.float32)),
     "<_TensorDataset element_spec=TensorSpec(shape=(10, 28, 28), dtype=tf.float32, name=None)>"),
    (lambda d: tf.data.Dataset.range(5),
     "<_RangeDataset element_spec=TensorSpec(shape=(), dtype=tf.int64, name=None)>"),
    (lambda d: tf.data.Dataset.from_tensor_slices({"a": np.zeros((10, 28, 28), np.float32)}),
     "<_TensorSliceDataset element_spec={'a': %s}>" % _X_SPEC),
])
def test_dataset_repr_as_tensorflow(make, expected):
    d = tf.data.Dataset.from_tensor_slices((np.zeros((10, 28, 28), np.float32),
                                            np.zeros((10,), np.uint8)))
    ds = make(d)
    assert repr(ds) == expected
    assert str(ds) == expected


def test_prefetch_and_cache_stages_keep_elements_and_the_fast_path():
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    plain = tf.data.Dataset.from_tensor_slices(x).shuffle(10, seed=3).batch(4)
    staged = tf.data.Dataset.from_tensor_slices(x).cache().shuffle(10, seed=3).batch(4).prefetch(1)
    for a, b in zip(plain.as_numpy_iterator(), staged.as_numpy_iterator()):
        np.testing.assert_array_equal(a, b)
    assert len(staged) == 3 and int(staged.cardinality()) == 3
    assert staged.element_spec == plain.element_spec
