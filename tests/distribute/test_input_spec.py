"""element_spec of distributed datasets and iterators, as TensorFlow 2.21 prints it (the
literal strings below are TensorFlow's output for the same pipelines on two logical CPUs)."""

import numpy as np

import mixprec as tf

_X = "TensorSpec(shape=(None, 3), dtype=tf.float32, name=None)"
_Y = "TensorSpec(shape=(None,), dtype=tf.int32, name=None)"
_TWO = "(PerReplicaSpec(%s, %s), PerReplicaSpec(%s, %s))" % (_X, _X, _Y, _Y)


def _data():
    return tf.data.Dataset.from_tensor_slices((np.zeros((10, 3), np.float32),
                                               np.zeros((10,), np.int32))).batch(4)


def test_distributed_dataset_and_iterator_spec(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)
    dd = s.experimental_distribute_dataset(_data())
    assert repr(dd.element_spec) == _TWO
    assert repr(iter(dd).element_spec) == _TWO
    assert dd.element_spec == s.experimental_distribute_dataset(_data()).element_spec
    assert dd.element_spec[0].value_type is tf.distribute.PerReplica


def test_static_global_batch_gives_the_per_replica_batch(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)
    d = tf.data.Dataset.from_tensor_slices(np.zeros((10, 3), np.float32)).batch(
        4, drop_remainder=True).prefetch(1)
    assert repr(s.experimental_distribute_dataset(d).element_spec) == (
        "PerReplicaSpec(TensorSpec(shape=(2, 3), dtype=tf.float32, name=None), "
        "TensorSpec(shape=(2, 3), dtype=tf.float32, name=None))")
    first = next(iter(s.experimental_distribute_dataset(d)))
    assert [v.shape.as_list() for v in first.values] == [[2, 3], [2, 3]]


def test_datasets_from_function_spec(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)
    ddf = s.distribute_datasets_from_function(lambda ctx: _data().unbatch().batch(2))
    assert repr(ddf.element_spec) == _TWO
    assert repr(iter(ddf).element_spec) == _TWO


def test_one_replica_spec_is_the_dataset_spec():
    s = tf.distribute.MirroredStrategy(["/cpu:0"])
    assert repr(s.experimental_distribute_dataset(_data()).element_spec) == "(%s, %s)" % (_X, _Y)
