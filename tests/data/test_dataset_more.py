"""The tf.data.Dataset methods beyond the core set (data/_transforms_more.py): values,
element specs, cardinalities, reprs and error messages as TensorFlow 2.21 printed them for
the same pipelines (recorded from TensorFlow 2.21 on a 2-core machine)."""

import os

import numpy as np
import pytest

import mixprec as tf
from mixprec import errors

D = tf.data.Dataset
r = D.range


def vals(ds):
    return [tf.nest.map_structure(lambda t: t.numpy().tolist(), e) for e in ds]


def spec(ds):
    return repr(ds.element_spec)


def card(ds):
    return int(ds.cardinality())


def fill(x):
    return tf.fill([x], x)


# ----------------------------------------------------------------------- padded_batch

def test_padded_batch_pads_to_longest():
    ds = r(1, 5).map(fill).padded_batch(2)
    assert vals(ds) == [[[1, 0], [2, 2]], [[3, 3, 3, 0], [4, 4, 4, 4]]]
    assert spec(ds) == "TensorSpec(shape=(None, None), dtype=tf.int64, name=None)"
    assert card(ds) == 2
    assert repr(r(3).padded_batch(2)) == \
        "<_PaddedBatchDataset element_spec=TensorSpec(shape=(None,), dtype=tf.int64, name=None)>"


def test_padded_batch_shapes_values_and_drop():
    ds = r(1, 5).map(fill).padded_batch(2, padded_shapes=[5],
                                        padding_values=tf.constant(-1, tf.int64))
    assert vals(ds) == [[[1, -1, -1, -1, -1], [2, 2, -1, -1, -1]],
                        [[3, 3, 3, -1, -1], [4, 4, 4, 4, -1]]]
    assert spec(ds) == "TensorSpec(shape=(None, 5), dtype=tf.int64, name=None)"
    ds = r(1, 6).map(fill).padded_batch(2, drop_remainder=True)
    assert vals(ds) == [[[1, 0], [2, 2]], [[3, 3, 3, 0], [4, 4, 4, 4]]]
    assert spec(ds) == "TensorSpec(shape=(2, None), dtype=tf.int64, name=None)"
    assert card(r(7).padded_batch(2)) == 4 and card(r(7).padded_batch(2, drop_remainder=True)) == 3


def test_padded_batch_tuple_and_errors():
    ds = D.from_tensor_slices(([1, 2, 3], [4, 5, 6])).map(
        lambda a, b: (tf.fill([a], b), b)).padded_batch(2, padding_values=(-1, 0))
    assert vals(ds) == [([[4, -1], [5, 5]], [4, 5]), ([[6, 6, 6]], [6])]
    assert spec(ds) == ("(TensorSpec(shape=(None, None), dtype=tf.int32, name=None), "
                        "TensorSpec(shape=(None,), dtype=tf.int32, name=None))")
    with pytest.raises(errors.DataLossError,
                       match=r"^Attempted to pad to a smaller size than the input element\.$"):
        vals(r(1, 5).map(fill).padded_batch(2, padded_shapes=[3]))
    with pytest.raises(errors.InvalidArgumentError, match="Batch size must be greater than zero"):
        r(3).padded_batch(0)


# ----------------------------------------------------------------------- window

def test_window_values_and_cardinality():
    assert vals(r(7).window(3, shift=2).flat_map(lambda w: w.batch(3))) == \
        [[0, 1, 2], [2, 3, 4], [4, 5, 6], [6]]
    assert vals(r(7).window(3, shift=2, drop_remainder=True).flat_map(lambda w: w.batch(3))) \
        == [[0, 1, 2], [2, 3, 4], [4, 5, 6]]
    assert vals(r(10).window(3, shift=1, stride=2, drop_remainder=True)
                .flat_map(lambda w: w.batch(3))) == \
        [[0, 2, 4], [1, 3, 5], [2, 4, 6], [3, 5, 7], [4, 6, 8], [5, 7, 9]]
    # (size, shift, stride, drop_remainder) -> TensorFlow's cardinality over range(7)
    for args, n in [((3, 2, 1, False), 4), ((3, 2, 1, True), 3), ((3, 1, 2, True), 3),
                    ((3, 1, 2, False), 7), ((10, 1, 1, True), 0)]:
        w = r(7).window(*args)
        assert card(w) == n and len(list(w)) == n


def test_window_elements_are_datasets():
    assert repr(r(7).window(3)) == (
        "<_WindowDataset element_spec=DatasetSpec(TensorSpec(shape=(), dtype=tf.int64, "
        "name=None), TensorShape([]))>")
    windows = list(r(5).window(2))
    assert [list(w.as_numpy_iterator()) for w in windows] == [[0, 1], [2, 3], [4]]
    assert repr(windows[0]) == \
        "<_VariantDataset element_spec=TensorSpec(shape=(), dtype=tf.int64, name=None)>"
    d = D.from_tensor_slices({"a": [1, 2, 3]}).window(2)
    assert repr(d.element_spec) == ("{'a': DatasetSpec(TensorSpec(shape=(), dtype=tf.int32, "
                                    "name=None), TensorShape([]))}")
    assert vals(d.flat_map(lambda e: e["a"].batch(2))) == [[1, 2], [3]]
    assert isinstance(d.element_spec["a"], tf.data.DatasetSpec)
    for bad, what in ((dict(size=0), "size"), (dict(size=2, shift=0), "shift")):
        with pytest.raises(errors.InvalidArgumentError,
                           match="Window %s must be greater than zero" % what):
            r(3).window(**bad)


# ----------------------------------------------------------------------- interleave

def test_interleave_order():
    ds = r(1, 4).interleave(lambda x: D.from_tensors(x).repeat(3), cycle_length=2,
                            block_length=2)
    assert vals(ds) == [1, 1, 2, 2, 1, 2, 3, 3, 3]
    assert card(ds) == -2
    # TensorFlow's default cycle length is the number of cores (2 where recorded)
    ds = r(1, 4).interleave(lambda x: D.from_tensors(x).repeat(3), cycle_length=2)
    assert vals(ds) == [1, 2, 1, 2, 1, 2, 3, 3, 3]
    from mixprec.data._interleave import default_cycle_length
    assert default_cycle_length() == len(os.sched_getaffinity(0))
    assert repr(r(3).interleave(lambda x: r(2))) == \
        "<_InterleaveDataset element_spec=TensorSpec(shape=(), dtype=tf.int64, name=None)>"
    par = r(1, 4).interleave(lambda x: r(x), cycle_length=3, num_parallel_calls=2,
                             deterministic=True)
    assert vals(par) == [0, 0, 0, 1, 1, 2]
    assert repr(par).startswith("<_ParallelInterleaveDataset")


def test_flat_map():
    ds = D.from_tensor_slices([[1, 2], [3, 4]]).flat_map(D.from_tensor_slices)
    assert vals(ds) == [1, 2, 3, 4]
    assert spec(ds) == "TensorSpec(shape=(), dtype=tf.int32, name=None)"
    assert repr(r(3).flat_map(lambda x: r(2))) == \
        "<_FlatMapDataset element_spec=TensorSpec(shape=(), dtype=tf.int64, name=None)>"
    with pytest.raises(TypeError, match="must return a `tf.data.Dataset`"):
        vals(r(3).flat_map(lambda x: x))


# ----------------------------------------------------------------------- group / bucket

def test_group_by_window():
    ds = r(10).group_by_window(key_func=lambda x: x % 2, reduce_func=lambda k, w: w.batch(3),
                               window_size=3)
    assert vals(ds) == [[0, 2, 4], [1, 3, 5], [6, 8], [7, 9]]
    assert spec(ds) == "TensorSpec(shape=(None,), dtype=tf.int64, name=None)"
    with pytest.raises(ValueError, match=r"^Either the `window_size` argument or the "
                                         r"`window_size_func` argument must be specified\.$"):
        r(3).group_by_window(lambda x: x, lambda k, w: w)
    sized = r(6).group_by_window(lambda x: x % 2, lambda k, w: w.batch(10),
                                 window_size_func=lambda k: k + 1)
    assert vals(sized) == [[0], [2], [1, 3], [4], [5]]


def test_bucket_by_sequence_length():
    ds = D.from_tensor_slices(np.arange(1, 8)).map(fill).bucket_by_sequence_length(
        lambda e: tf.shape(e)[0], [3, 5], [2, 2, 2])
    assert vals(ds) == [[[1, 0], [2, 2]], [[3, 3, 3, 0], [4, 4, 4, 4]],
                        [[5, 5, 5, 5, 5, 0], [6, 6, 6, 6, 6, 6]], [[7, 7, 7, 7, 7, 7, 7]]]
    assert spec(ds) == "TensorSpec(shape=(None, None), dtype=tf.int64, name=None)"
    padded = D.from_tensor_slices(np.arange(1, 5)).map(fill).bucket_by_sequence_length(
        lambda e: tf.shape(e)[0], [3, 6], [2, 2, 2], pad_to_bucket_boundary=True)
    assert [np.shape(v) for v in vals(padded)] == [(2, 2), (2, 5)]
    with pytest.raises(ValueError, match=r"^`len\(bucket_batch_sizes\)` must equal "
                                         r"`len\(bucket_boundaries\) \+ 1` but "
                                         r"`len\(bucket_batch_sizes\)=1` and "
                                         r"`len\(bucket_boundaries\)=1`\.$"):
        r(3).bucket_by_sequence_length(lambda x: 1, [2], [1])
    assert repr(r(3).bucket_by_sequence_length(lambda x: 1, [2], [1, 1])).startswith(
        "<_GroupByWindowDataset element_spec=TensorSpec(shape=(None,)")


def test_rebatch():
    assert vals(r(10).batch(4).rebatch(3)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert vals(r(10).batch(4).rebatch([2, 3])) == [[0, 1], [2, 3, 4], [5, 6], [7, 8, 9]]
    ds = r(10).batch(4).rebatch(3, drop_remainder=True)
    assert vals(ds) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert spec(ds) == "TensorSpec(shape=(3,), dtype=tf.int64, name=None)"
    assert card(r(6).batch(4).rebatch(3)) == -2


# ----------------------------------------------------------------------- stateful

def test_shard():
    assert vals(r(10).shard(3, 1)) == [1, 4, 7]
    assert card(r(10).shard(3, 1)) == 3 and card(r(10).shard(3, 0)) == 4
    assert card(r(10).repeat().shard(3, 2)) == -1
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Index must be between 0 and 2 \(currently index = 3\)\."):
        r(10).shard(3, 3)
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Number of shards must be greater than zero \(currently "
                             r"num_shards = 0\)\."):
        r(3).shard(0, 0)


def test_scan_take_while_unique():
    ds = r(5).scan(tf.constant(0, tf.int64), lambda s, x: (s + x, s * 10))
    assert vals(ds) == [0, 0, 10, 30, 60] and card(ds) == 5
    ds = r(4).scan((tf.constant(0, tf.int64), tf.constant(1, tf.int64)),
                   lambda s, x: ((s[0] + x, s[1] * 2), s[0]))
    assert vals(ds) == [0, 0, 1, 3]
    with pytest.raises(TypeError, match="must match the initial state"):
        vals(r(3).scan(tf.constant(0, tf.int64), lambda s, x: (tf.cast(s, tf.float32), x)))
    ds = r(10).take_while(lambda x: x < 4)
    assert vals(ds) == [0, 1, 2, 3] and card(ds) == -2
    ds = D.from_tensor_slices([1, 3, 1, 2, 3, 5]).unique()
    assert vals(ds) == [1, 3, 2, 5]
    assert spec(ds) == "TensorSpec(shape=(), dtype=tf.int32, name=None)"
    with pytest.raises(TypeError, match=r"^`tf.data.Dataset.unique` does not support type "
                                        r"<dtype: 'float32'> -- only `tf.int32`, `tf.int64`, "
                                        r"and `tf.string` are supported\.$"):
        r(3).map(lambda x: tf.cast(x, tf.float32)).unique()
    with pytest.raises(errors.InvalidArgumentError,
                       match="UniqueDataset only supports inputs with a single component."):
        D.from_tensor_slices(([1], [2])).unique()


def test_counter_random_single_element():
    ds = D.counter(3, 2)
    assert card(ds) == -1 and vals(ds.take(3)) == [3, 5, 7]
    rnd = D.random(seed=4)
    assert card(rnd) == -1
    assert spec(rnd) == "TensorSpec(shape=(), dtype=tf.int64, name=None)"
    a, b = vals(rnd.take(5)), vals(D.random(seed=4).take(5))
    assert a == b and all(0 <= v < 2 ** 32 for v in a) and len(set(a)) == 5
    assert repr(rnd).startswith("<_RandomDataset")
    one = r(5).batch(5).get_single_element()
    assert one.numpy().tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(errors.InvalidArgumentError, match=r"Dataset had more than one element"):
        r(2).get_single_element()
    with pytest.raises(errors.InvalidArgumentError, match=r"Dataset was empty\."):
        r(0).get_single_element()


def test_ignore_errors_drops_failing_elements():
    ds = D.from_tensor_slices([1., 0., 2.]).map(
        lambda x: tf.debugging.check_numerics(1. / x, "error")).ignore_errors()
    assert vals(ds) == [1.0, 0.5]
    assert repr(ds).startswith("<_IgnoreErrorsDataset")
    # only the stage's input is forgiven: a failure after it still raises
    bad = D.from_tensor_slices([1., 0.]).ignore_errors().map(
        lambda x: tf.debugging.check_numerics(1. / x, "error"))
    with pytest.raises(errors.InvalidArgumentError):
        vals(bad)


def test_assert_cardinality_and_experimental_functions():
    ds = r(3).apply(tf.data.experimental.assert_cardinality(3))
    assert card(ds) == 3 and vals(ds) == [0, 1, 2]
    with pytest.raises(errors.FailedPreconditionError,
                       match="expected to contain 2 elements but contained at least 3"):
        vals(r(3).apply(tf.data.experimental.assert_cardinality(2)))
    with pytest.raises(errors.FailedPreconditionError,
                       match="expected to contain 5 elements but contained only 3"):
        vals(r(3).apply(tf.data.experimental.assert_cardinality(5)))
    X = tf.data.experimental
    assert vals(r(6).apply(X.scan(np.int64(0), lambda s, x: (s + x, s)))) == [0, 0, 1, 3, 6, 10]
    assert vals(r(6).apply(X.take_while(lambda x: x < 2))) == [0, 1]
    assert vals(D.from_tensor_slices([2, 2, 1]).apply(X.unique())) == [2, 1]
    assert vals(r(4).apply(X.group_by_window(lambda x: x % 2, lambda k, w: w.batch(2), 2))) \
        == [[0, 2], [1, 3]]
    assert vals(r(4).batch(2).apply(X.unbatch())) == [0, 1, 2, 3]
    assert vals(r(2).apply(X.enumerate_dataset(5))) == [(5, 0), (6, 1)]
    assert vals(r(4).apply(X.map_and_batch(lambda x: x * 2, 3))) == [[0, 2, 4], [6]]
    assert int(X.cardinality(r(4))) == 4
    assert X.get_single_element(r(1)).numpy() == 0
    assert spec(X.from_list([(1, 2.), (2, 3.)])) == (
        "(TensorSpec(shape=(), dtype=tf.int32, name=None), "
        "TensorSpec(shape=(), dtype=tf.float32, name=None))")
    assert vals(X.Counter().take(2)) == [0, 1]
    with pytest.raises(TypeError, match="must return a `tf.data.Dataset`"):
        r(3).apply(lambda d: 3)


# ----------------------------------------------------------------------- several inputs

def test_choose_from_datasets():
    choice = D.from_tensor_slices(tf.constant([0, 1, 1, 0, 0, 1], tf.int64))
    ds = D.choose_from_datasets([r(3), r(10, 13)], choice)
    assert vals(ds) == [0, 10, 11, 1, 2, 12]
    assert repr(ds).startswith("<_DirectedInterleaveDataset")
    with pytest.raises(errors.InvalidArgumentError, match=r"Selector index out of range: 2 >= 1"):
        vals(D.choose_from_datasets([r(3)], D.from_tensor_slices(tf.constant([0, 2], tf.int64))))
    with pytest.raises(TypeError, match="must be a dataset of scalar `tf.int64` tensors"):
        D.choose_from_datasets([r(3)], D.from_tensor_slices([0, 1]))
    # an exhausted input ends the dataset by default; skipped when stop_on_empty is False
    c = D.from_tensor_slices(tf.constant([0, 0, 1], tf.int64))
    assert vals(D.choose_from_datasets([r(1), r(5, 6)], c)) == [0]
    assert vals(D.choose_from_datasets([r(1), r(5, 6)], c, stop_on_empty_dataset=False)) == [0, 5]


def test_sample_from_datasets():
    a = vals(D.sample_from_datasets([r(3), r(10, 13)], weights=[0.5, 0.5], seed=1))
    assert sorted(a) == [0, 1, 2, 10, 11, 12]
    assert [v for v in a if v < 10] == [0, 1, 2]  # each input keeps its order
    again = vals(D.sample_from_datasets([r(3), r(10, 13)], weights=[0.5, 0.5], seed=1))
    assert a == again
    only = D.sample_from_datasets([r(3)])
    assert repr(only).startswith("<_RangeDataset")
    assert card(D.sample_from_datasets([r(3), r(3)], seed=1)) == -2
    skewed = vals(D.sample_from_datasets([r(1000), r(1000, 2000)], weights=[0.9, 0.1], seed=3)
                  .take(400))
    assert 300 < sum(v < 1000 for v in skewed) < 395
    stop = vals(D.sample_from_datasets([r(2), r(10, 200)], weights=[0.5, 0.5], seed=3,
                                       stop_on_empty_dataset=True))
    assert [v for v in stop if v < 10] == [0, 1] and len(stop) < 190
    with pytest.raises(ValueError, match="Invalid `weights`"):
        D.sample_from_datasets([r(2), r(2)], weights=[1.0])


def test_rejection_resample():
    data = D.from_tensor_slices(np.array([0] * 900 + [1] * 100, dtype=np.int32)).shuffle(
        1000, seed=1)
    ds = data.rejection_resample(lambda x: x, target_dist=[0.5, 0.5],
                                 initial_dist=[0.9, 0.1], seed=2)
    out = vals(ds)
    classes = [c for c, _ in out]
    assert all(c == e for c, e in out)
    assert 0.35 < np.mean(classes) < 0.65 and len(out) > 150


# ----------------------------------------------------------------------- from_generator

def _gen():
    for i in range(3):
        yield i, [i] * 2


def test_from_generator_signature():
    ds = D.from_generator(_gen, output_signature=(tf.TensorSpec([], tf.int32),
                                                  tf.TensorSpec([2], tf.float32)))
    assert vals(ds) == [(0, [0.0, 0.0]), (1, [1.0, 1.0]), (2, [2.0, 2.0])]
    assert vals(ds) == vals(ds)  # the generator is called again for each pass
    assert card(ds) == -2
    assert repr(ds).startswith("<_FlatMapDataset element_spec=(TensorSpec(shape=(), "
                               "dtype=tf.int32")
    d = D.from_generator(lambda: iter([{"a": 1, "b": [1., 2.]}]),
                         output_signature={"a": tf.TensorSpec([], tf.int32),
                                           "b": tf.TensorSpec([None], tf.float32)})
    assert vals(d) == [{"a": 1, "b": [1.0, 2.0]}]
    assert vals(D.from_generator(lambda n: range(int(n)), args=(3,),
                                 output_signature=tf.TensorSpec([], tf.int64))) == [0, 1, 2]
    # a float yielded for an int32 spec is converted as NumPy converts it (TensorFlow's)
    assert vals(D.from_generator(lambda: iter([1.7, 2]),
                                 output_signature=tf.TensorSpec([], tf.int32))) == [1, 2]


def test_from_generator_output_types(caplog):
    ds = D.from_generator(_gen, output_types=(tf.int64, tf.float32))
    assert spec(ds) == ("(TensorSpec(shape=<unknown>, dtype=tf.int64, name=None), "
                        "TensorSpec(shape=<unknown>, dtype=tf.float32, name=None))")
    assert vals(ds)[1] == (1, [1.0, 1.0])
    ds = D.from_generator(_gen, output_types=(tf.int64, tf.float32),
                          output_shapes=((), (None,)))
    assert spec(ds) == ("(TensorSpec(shape=(), dtype=tf.int64, name=None), "
                        "TensorSpec(shape=(None,), dtype=tf.float32, name=None))")
    assert tf.TensorShape(None).rank is None and str(tf.TensorShape(None)) == "<unknown>"


def test_from_generator_errors():
    with pytest.raises(TypeError, match=r"^`generator` must be a Python callable\.$"):
        D.from_generator(_gen(), output_signature=tf.TensorSpec([], tf.int32))
    with pytest.raises(TypeError, match=r"^To specify the output signature you need to provide "
                                        r"either the `output_signature` argument or the "
                                        r"`output_types` argument\.$"):
        D.from_generator(_gen)
    cases = [
        (lambda: iter([[1, 2, 3]]), tf.TensorSpec([2], tf.int32),
         r"TypeError: `generator` yielded an element of shape \(3,\) where an element of "
         r"shape \(2,\) was expected\."),
        (lambda: iter(["x"]), tf.TensorSpec([], tf.int32),
         r"TypeError: `generator` yielded an element that could not be converted to the "
         r"expected type\. The expected type was int32, but the yielded element was x\."),
        (lambda: iter([1]), (tf.TensorSpec([], tf.int32), tf.TensorSpec([], tf.int32)),
         r"TypeError: `generator` yielded an element that did not match the expected "
         r"structure\. The expected structure was \(tf\.int32, tf\.int32\), but the yielded "
         r"element was 1\."),
    ]
    for fn, sig, msg in cases:
        with pytest.raises(errors.InvalidArgumentError, match=msg):
            vals(D.from_generator(fn, output_signature=sig))


def test_fit_on_generator_and_padded_batches():
    from mixprec import keras
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype("float32")
    y = (x.sum(1) > 0).astype("int64")

    def gen():
        for i in range(64):
            yield x[i], y[i]
    ds = D.from_generator(gen, output_signature=(tf.TensorSpec([4], tf.float32),
                                                 tf.TensorSpec([], tf.int64))).batch(16)
    model = keras.Sequential([keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dense(2)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    hist = model.fit(ds, epochs=2, verbose=0)
    assert len(hist.history["loss"]) == 2 and np.isfinite(hist.history["loss"]).all()


# ----------------------------------------------------------------------- cache / save / load

def test_cache_in_memory_keeps_the_first_pass():
    ds = r(3).map(lambda x: tf.random.uniform([]) + tf.cast(x, tf.float32)).cache()
    assert vals(ds) == vals(ds)
    assert repr(ds).startswith("<CacheDataset")
    plain = r(3).map(lambda x: tf.random.uniform([]) + tf.cast(x, tf.float32))
    assert vals(plain) != vals(plain)
    # an abandoned first pass keeps nothing
    ds = r(4).map(lambda x: x * 2).cache()
    assert vals(ds.take(2)) == [0, 2] and vals(ds) == [0, 2, 4, 6]


def test_cache_to_file_is_read_by_a_later_pipeline(tmp_path):
    name = str(tmp_path / "c")
    first = r(3).map(lambda x: tf.random.uniform([]) + tf.cast(x, tf.float32)).cache(name)
    a = vals(first)
    again = r(3).map(lambda x: tf.random.uniform([]) + tf.cast(x, tf.float32)).cache(name)
    assert vals(again) == a


def test_save_and_load(tmp_path):
    p = str(tmp_path / "saved")
    r(5).map(lambda x: (x, tf.fill([x], 1.0))).save(p)
    ds = D.load(p)
    assert repr(ds) == ("<_LoadDataset element_spec=(TensorSpec(shape=(), dtype=tf.int64, "
                        "name=None), TensorSpec(shape=(None,), dtype=tf.float32, name=None))>")
    assert card(ds) == 5
    assert vals(ds) == [(0, []), (1, [1.0]), (2, [1.0, 1.0]), (3, [1.0, 1.0, 1.0]),
                        (4, [1.0, 1.0, 1.0, 1.0])]
    assert vals(tf.data.experimental.load(p)) == vals(ds)
    with pytest.raises(errors.NotFoundError, match="element_spec file not found"):
        D.load(str(tmp_path / "missing"))
    with pytest.raises(errors.InvalidArgumentError, match="infinite"):
        r(2).repeat().save(str(tmp_path / "inf"))


def test_save_keeps_the_last_good_copy_and_refuses_corrupt_files(tmp_path):
    p = str(tmp_path / "saved")
    r(3).save(p)

    def boom(x):
        if int(x) == 2:
            raise RuntimeError("dies mid-write")
        return x
    with pytest.raises(RuntimeError):
        r(4).map(boom).save(p)
    assert vals(D.load(p)) == [0, 1, 2]  # the previous copy is intact
    f = os.path.join(p, os.listdir(p)[0])
    with open(f, "r+b") as fh:
        fh.truncate(40)
    with pytest.raises(errors.DataLossError):
        D.load(p)


def test_snapshot_is_keyed_by_the_pipeline(tmp_path):
    p = str(tmp_path / "snap")
    make = lambda k: r(3).map(lambda x: x * k)  # noqa: E731
    assert vals(make(2).snapshot(p)) == [0, 2, 4]
    assert vals(make(2).snapshot(p)) == [0, 2, 4]
    assert vals(make(3).snapshot(p)) == [0, 3, 6]  # another pipeline: its own snapshot
    assert len(os.listdir(p)) == 2


# ----------------------------------------------------------------------- Optional

def test_get_next_as_optional():
    it = iter(r(1))
    o = it.get_next_as_optional()
    assert bool(o.has_value()) and int(o.get_value()) == 0
    o = it.get_next_as_optional()
    assert not bool(o.has_value())
    with pytest.raises(errors.InvalidArgumentError):
        o.get_value()
    assert repr(o.element_spec) == "TensorSpec(shape=(), dtype=tf.int64, name=None)"
    v = tf.experimental.Optional.from_value((1, 2.0))
    assert bool(v.has_value()) and float(v.get_value()[1]) == 2.0
    assert not bool(tf.experimental.Optional.empty(tf.TensorSpec([], tf.int32)).has_value())
    assert tf.data.experimental.get_next_as_optional(iter(r(2))).get_value().numpy() == 0
