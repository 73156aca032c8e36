"""tf.data.Options, Dataset.options()/with_options and the iterator types (TensorFlow 2.21's
behaviour)."""

import pytest

import mixprec as tf


def test_constants_and_iterator_types():
    assert tf.data.INFINITE_CARDINALITY == -1 and tf.data.UNKNOWN_CARDINALITY == -2
    ds = tf.data.Dataset.from_tensor_slices([0, 1, 2])
    assert isinstance(iter(ds), tf.data.Iterator)
    it = ds.as_numpy_iterator()
    assert isinstance(it, tf.data.NumpyIterator)
    assert [int(v) for v in it] == [0, 1, 2]


def test_options_merge_along_the_pipeline():
    ds = tf.data.Dataset.from_tensor_slices([0, 1, 2])
    assert isinstance(ds.options(), tf.data.Options)
    assert ds.options().deterministic is None
    o = tf.data.Options()
    o.deterministic = False
    o.experimental_optimization.map_parallelization = True
    ds2 = ds.with_options(o)
    assert ds2.options().deterministic is False
    assert [int(v) for v in ds2.as_numpy_iterator()] == [0, 1, 2]
    o3 = tf.data.Options()
    o3.deterministic = True
    ds3 = ds2.map(lambda x: x * 2).with_options(o3)
    assert ds3.options().deterministic is True
    assert ds3.options().experimental_optimization.map_parallelization is True
    assert [int(v) for v in ds3] == [0, 2, 4]
    assert tf.data.Options() == tf.data.Options() and o != tf.data.Options()
    assert o.experimental_deterministic is False  # TensorFlow's alias
    assert o.threading.private_threadpool_size is None
    assert o.experimental_distribute.auto_shard_policy == 0
    with pytest.raises(AttributeError, match="Cannot set the property foo on Options."):
        o.foo = 1
    merged = tf.data.Options().merge(o)
    assert merged.deterministic is False
