"""``tf.data.experimental``: the transformation functions (each returns a function of a
dataset, for ``Dataset.apply``) and the aliases TensorFlow keeps here. The stages
themselves live in the data package's modules."""

from mixprec.data.dataset import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY  # noqa: F401
from mixprec.data._options import (  # noqa: F401
    AutoShardPolicy, AutotuneOptions, DistributeOptions, ExternalStatePolicy,
    OptimizationOptions, ThreadingOptions)
from mixprec.data._optional import Optional, get_next_as_optional  # noqa: F401
from mixprec.data._generator import from_list  # noqa: F401
from mixprec.data import _persist, _stateful


def _dataset_cls():
    from mixprec.data.dataset import Dataset
    return Dataset


def cardinality(dataset):
    """The number of elements (INFINITE_CARDINALITY / UNKNOWN_CARDINALITY), a tensor."""
    return dataset.cardinality()


def assert_cardinality(expected_cardinality):
    """A transformation that checks the dataset has exactly ``expected_cardinality``
    elements while it is read (FailedPreconditionError otherwise)."""
    n = int(expected_cardinality.numpy() if hasattr(expected_cardinality, "numpy")
            else expected_cardinality)
    return lambda ds: _stateful.AssertCardinality(ds, n)


def bucket_by_sequence_length(element_length_func, bucket_boundaries, bucket_batch_sizes,
                              padded_shapes=None, padding_values=None,
                              pad_to_bucket_boundary=False, no_padding=False,
                              drop_remainder=False):
    return lambda ds: ds.bucket_by_sequence_length(
        element_length_func, bucket_boundaries, bucket_batch_sizes, padded_shapes,
        padding_values, pad_to_bucket_boundary, no_padding, drop_remainder)


def group_by_window(key_func, reduce_func, window_size=None, window_size_func=None):
    return lambda ds: ds.group_by_window(key_func, reduce_func, window_size, window_size_func)


def scan(initial_state, scan_func):
    return lambda ds: ds.scan(initial_state, scan_func)


def take_while(predicate):
    return lambda ds: ds.take_while(predicate)


def unique():
    return lambda ds: ds.unique()


def ignore_errors(log_warning=False):
    return lambda ds: ds.ignore_errors(log_warning)


def unbatch():
    return lambda ds: ds.unbatch()


def enumerate_dataset(start=0):
    return lambda ds: ds.enumerate(start)


def rejection_resample(class_func, target_dist, initial_dist=None, seed=None):
    return lambda ds: ds.rejection_resample(class_func, target_dist, initial_dist, seed)


def shuffle_and_repeat(buffer_size, count=None, seed=None):
    return lambda ds: ds.shuffle(buffer_size, seed).repeat(count)


def map_and_batch(map_func, batch_size, num_parallel_batches=None, drop_remainder=False,
                  num_parallel_calls=None):
    return lambda ds: ds.map(map_func).batch(batch_size, drop_remainder=drop_remainder)


def parallel_interleave(map_func, cycle_length, block_length=1, sloppy=False,
                        buffer_output_elements=None, prefetch_input_elements=None):
    return lambda ds: ds.interleave(map_func, cycle_length, block_length)


def snapshot(path, compression="AUTO", reader_func=None, shard_func=None):
    return lambda ds: ds.snapshot(path, compression, reader_func, shard_func)


def get_single_element(dataset):
    return _stateful.get_single_element(dataset)


def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False):
    return _dataset_cls().sample_from_datasets(datasets, weights, seed, stop_on_empty_dataset)


def choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset=True):
    return _dataset_cls().choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset)


def save(dataset, path, compression=None, shard_func=None, checkpoint_args=None):
    return _persist.save(dataset, path, compression, shard_func, checkpoint_args)


def load(path, element_spec=None, compression=None, reader_func=None):
    return _persist.load(path, element_spec, compression, reader_func)


def Counter(start=0, step=1, dtype="int64"):  # noqa: N802 (TensorFlow's name)
    return _stateful.counter(start, step, dtype)


def RandomDataset(seed=None):  # noqa: N802 (TensorFlow's name)
    return _stateful.RandomInts(seed)


from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
