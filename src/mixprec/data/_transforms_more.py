"""The ``tf.data.Dataset`` methods beyond the core set in dataset.py: their signatures,
argument checks and docstrings only. Each builds a stage from the module that owns it
(_batching, _interleave, _stateful, _sampling, _generator, _persist)."""

__all__ = ["MoreTransforms"]


class MoreTransforms:
    """Mixed into ``Dataset`` (data/dataset.py)."""

    # ---------------------------------------------------------------- sources

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None,
                       output_signature=None, name=None):
        """Elements yielded by ``generator(*args)`` (called again for each pass), checked
        against ``output_signature`` (or ``output_types``/``output_shapes``)."""
        from mixprec.data import _generator
        return _generator.from_generator(generator, output_types, output_shapes, args,
                                         output_signature, name)

    @staticmethod
    def counter(start=0, step=1, dtype="int64", name=None):
        """start, start + step, … without end."""
        from mixprec.data import _stateful
        return _stateful.counter(start, step, dtype)

    @staticmethod
    def random(seed=None, rerandomize_each_iteration=None, name=None):
        """Pseudo-random non-negative int64 values without end."""
        from mixprec.data import _stateful
        return _stateful.RandomInts(seed, rerandomize_each_iteration)

    @staticmethod
    def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False,
                             rerandomize_each_iteration=None):
        """Each element drawn from one of ``datasets`` with probability ``weights``."""
        from mixprec.data import _sampling
        return _sampling.sample_from_datasets(datasets, weights, seed, stop_on_empty_dataset,
                                              rerandomize_each_iteration)

    @staticmethod
    def choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset=True):
        """The next element of ``datasets[i]`` for each ``i`` of ``choice_dataset``."""
        from mixprec.data import _sampling
        return _sampling.choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset)

    @staticmethod
    def load(path, element_spec=None, compression=None, reader_func=None):
        """A dataset written by ``Dataset.save``."""
        from mixprec.data import _persist
        return _persist.load(path, element_spec, compression, reader_func)

    # ---------------------------------------------------------------- batching

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder=False, name=None):
        """Batches whose components are padded to ``padded_shapes`` (default: the longest
        in the batch along each unknown dimension) with ``padding_values`` (default 0)."""
        from mixprec.data import _batching
        return _batching.PaddedBatch(self, batch_size, padded_shapes, padding_values,
                                     drop_remainder)

    def rebatch(self, batch_size, drop_remainder=False, name=None):
        """The same rows cut into batches of ``batch_size`` (a list cycles through sizes)."""
        from mixprec.data import _batching
        return _batching.rebatch(self, batch_size, drop_remainder)

    def window(self, size, shift=None, stride=1, drop_remainder=False, name=None):
        """Windows of ``size`` elements (each component a small dataset), starting every
        ``shift`` elements, taking every ``stride``-th."""
        from mixprec.data import _batching
        return _batching.Window(self, size, shift, stride, drop_remainder)

    def bucket_by_sequence_length(self, element_length_func, bucket_boundaries,
                                  bucket_batch_sizes, padded_shapes=None, padding_values=None,
                                  pad_to_bucket_boundary=False, no_padding=False,
                                  drop_remainder=False, name=None):
        """Elements batched with others of similar length (see tf.data)."""
        from mixprec.data import _batching
        return _batching.bucket_by_sequence_length(
            self, element_length_func, bucket_boundaries, bucket_batch_sizes, padded_shapes,
            padding_values, pad_to_bucket_boundary, no_padding, drop_remainder)

    def ragged_batch(self, batch_size, drop_remainder=False, row_splits_dtype="int64",
                     name=None):
        raise NotImplementedError("Dataset.ragged_batch: mixprec has no RaggedTensor; use "
                                  "padded_batch")

    def sparse_batch(self, batch_size, row_shape, name=None):
        raise NotImplementedError("Dataset.sparse_batch: mixprec has no SparseTensor; use "
                                  "padded_batch")

    # ---------------------------------------------------------------- datasets of datasets

    def flat_map(self, map_func, name=None):
        """The elements of ``map_func(element)`` (a dataset) for each element, in order."""
        from mixprec.data import _interleave
        return _interleave.Interleave(self, map_func, 1, 1, tf_name="_FlatMapDataset",
                                      what="flat_map")

    def interleave(self, map_func, cycle_length=None, block_length=None,
                   num_parallel_calls=None, deterministic=None, name=None):
        """``map_func``'s datasets read ``cycle_length`` at a time, ``block_length``
        elements from each in turn (tf.data's order; deterministic)."""
        from mixprec.data import _interleave
        return _interleave.Interleave(
            self, map_func, cycle_length, block_length,
            tf_name="_ParallelInterleaveDataset" if num_parallel_calls is not None else None)

    def group_by_window(self, key_func, reduce_func, window_size=None, window_size_func=None,
                        name=None):
        """Elements grouped by ``key_func``; each full group reduced by ``reduce_func``."""
        from mixprec.data import _interleave
        return _interleave.GroupByWindow(self, key_func, reduce_func, window_size,
                                         window_size_func)

    # ---------------------------------------------------------------- state and stops

    def scan(self, initial_state, scan_func, name=None):
        """``scan_func(state, element) -> (state, output)`` over the elements."""
        from mixprec.data import _stateful
        return _stateful.Scan(self, initial_state, scan_func)

    def take_while(self, predicate, name=None):
        """Elements until ``predicate`` is first False."""
        from mixprec.data import _stateful
        return _stateful.TakeWhile(self, predicate)

    def unique(self, name=None):
        """Each distinct element once, in order of first appearance."""
        from mixprec.data import _stateful
        return _stateful.Unique(self)

    def shard(self, num_shards, index, name=None):
        """Every ``num_shards``-th element, starting at ``index``."""
        from mixprec.data import _stateful
        return _stateful.Shard(self, num_shards, index)

    def ignore_errors(self, log_warning=False, name=None):
        """Drops the elements whose map/filter function raised."""
        from mixprec.data import _stateful
        return _stateful.IgnoreErrors(self, log_warning)

    def rejection_resample(self, class_func, target_dist, initial_dist=None, seed=None,
                           name=None):
        """``(class, element)`` pairs resampled to the ``target_dist`` class distribution."""
        from mixprec.data import _sampling
        return _sampling.rejection_resample(self, class_func, target_dist, initial_dist, seed)

    def apply(self, transformation_func):
        """``transformation_func(self)``, which must return a dataset."""
        out = transformation_func(self)
        from mixprec.data.dataset import Dataset
        if not isinstance(out, Dataset):
            raise TypeError("`transformation_func` must return a `tf.data.Dataset` object. "
                            "Got %s." % type(out))
        return out

    def get_single_element(self, name=None):
        """The only element, as tensors (InvalidArgumentError if not exactly one)."""
        from mixprec.data import _stateful
        return _stateful.get_single_element(self)

    # ---------------------------------------------------------------- on disk

    def save(self, path, compression=None, shard_func=None, checkpoint_args=None):
        """Writes the elements to ``path`` (mixprec's format; read back by ``load``)."""
        from mixprec.data import _persist
        return _persist.save(self, path, compression, shard_func, checkpoint_args)

    def snapshot(self, path, compression="AUTO", reader_func=None, shard_func=None,
                 name=None):
        """The first complete pass is written under ``path`` (keyed by the pipeline); later
        passes, and later runs of the same pipeline, read it."""
        from mixprec.data import _persist
        return _persist.Snapshot(self, path)
