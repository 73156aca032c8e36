"""Distributed inputs: a dataset of global batches re-batched into one batch per replica
(TensorFlow's rule), datasets made per worker by a function (``InputContext``), and their
iterators. Slices are zero-copy row views of the batch; no element is touched here."""

from mixprec import _core, _nest
from mixprec.distribute.values import PerReplica, PerReplicaSpec

__all__ = ["InputContext", "InputOptions", "InputReplicationMode", "ValueContext", "DistributedDataset", "DistributedIterator",
           "DistributedDatasetsFromFunction", "compute_batch_size", "batch_sizes"]


class InputContext:
    """What ``dataset_fn`` of ``distribute_datasets_from_function`` is told: how many input
    pipelines there are, which one this is, and the replica count."""

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0, num_replicas_in_sync=1):
        self._num_input_pipelines = num_input_pipelines
        self._input_pipeline_id = input_pipeline_id
        self._num_replicas_in_sync = num_replicas_in_sync

    @property
    def num_replicas_in_sync(self):
        return self._num_replicas_in_sync

    @property
    def input_pipeline_id(self):
        return self._input_pipeline_id

    @property
    def num_input_pipelines(self):
        return self._num_input_pipelines

    def get_per_replica_batch_size(self, global_batch_size):
        if global_batch_size % self._num_replicas_in_sync != 0:
            raise ValueError("The `global_batch_size` %r is not divisible by "
                             "`num_replicas_in_sync` %r " % (global_batch_size,
                                                             self._num_replicas_in_sync))
        return global_batch_size // self._num_replicas_in_sync

    def __str__(self):
        return "tf.distribute.InputContext(input pipeline id {}, total: {})".format(
            self.input_pipeline_id, self.num_input_pipelines)


class InputReplicationMode:
    PER_WORKER = "PER_WORKER"
    PER_REPLICA = "PER_REPLICA"


class InputOptions:
    """Accepted for TensorFlow code; prefetching and placement are not modelled (inputs stay
    on the host, as mixprec's CPU replicas read them)."""

    def __init__(self, experimental_fetch_to_device=None, experimental_replication_mode=
                 InputReplicationMode.PER_WORKER, experimental_place_dataset_on_device=False,
                 experimental_per_replica_buffer_size=1):
        self.experimental_fetch_to_device = experimental_fetch_to_device
        self.experimental_replication_mode = experimental_replication_mode
        self.experimental_place_dataset_on_device = experimental_place_dataset_on_device
        self.experimental_per_replica_buffer_size = experimental_per_replica_buffer_size


class ValueContext:
    def __init__(self, replica_id_in_sync_group=0, num_replicas_in_sync=1):
        self._replica_id = replica_id_in_sync_group
        self._num = num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self):
        return self._replica_id

    @property
    def num_replicas_in_sync(self):
        return self._num


_PASS_THROUGH = ("_Map", "_Repeat", "_Take", "_Skip", "_Shuffle", "_PassThrough",
                 "_Filter", "_Enumerate")


def compute_batch_size(dataset):
    """The static global batch size (a ``batch(n, drop_remainder=True)`` upstream), else -1:
    TensorFlow's ``compute_batch_size``, which is -1 when the batch dimension is unknown."""
    node = dataset
    while node is not None:
        name = type(node).__name__
        if name == "_Batch":
            return node._n if node._drop else -1
        if name not in _PASS_THROUGH:
            return -1
        node = getattr(node, "_src", None)
    return -1


def batch_sizes(global_batch, num_replicas, static):
    """Sizes of the per-replica batches cut from one global batch of ``global_batch`` rows.
    With a static batch size (drop_remainder=True) TensorFlow's RebatchDatasetV2 sizes: the
    first ``G mod N`` replicas get one more row. Otherwise (the usual ``batch(G)``, whose
    batch dimension is unknown) each replica takes ``ceil(b / N)`` rows in turn, so a partial
    batch of 5 on 2 replicas is 3 + 2 and 1 row on 2 replicas is 1 + an empty batch."""
    n = num_replicas
    if static:
        floor = global_batch // n
        extra = global_batch - floor * n
        return [floor + 1 if i < extra else floor for i in range(n)]
    per = -(-global_batch // n)
    out = []
    left = global_batch
    for _ in range(n):
        take = min(per, left)
        out.append(take)
        left -= take
    return out


def _rows(x):
    shape = x.shape
    if len(shape) == 0:
        raise ValueError("experimental_distribute_dataset needs batched elements (a leading "
                         "batch dimension); got a scalar element. hint: dataset.batch(...)")
    return int(shape[0])


def _split(element, sizes, keep):
    """The element's rows cut into consecutive pieces of ``sizes``; only the pieces whose
    index is in ``keep`` (this worker's replicas) are returned, in order."""
    flat = [x if isinstance(x, _core.Tensor) else _core.convert_to_tensor(x)
            for x in _nest.flatten(element)]
    rows = {_rows(x) for x in flat}
    if len(rows) != 1:
        raise ValueError("the components of a batch have different batch sizes: %s"
                         % sorted(rows))
    pieces = []
    start = 0
    for i, s in enumerate(sizes):
        if i in keep:
            parts = [x[start:start + s] for x in flat]
            pieces.append(_nest.pack_sequence_as(element, parts)
                          if _nest.is_nested(element) else parts[0])
        start += s
    return pieces


def _replica_spec(spec, n, rows=None):
    """A dataset's element spec as its distributed inputs have it: with ``n`` local replicas
    a PerReplicaSpec of ``n`` copies per component, the batch dimension made ``rows``
    (None: unknown) when ``rows`` is given; the plain spec with one replica."""
    if spec is None:
        return None
    if rows is not None:
        from mixprec._function import TensorSpec

        rows = None if rows < 0 else rows

        def per_replica_rows(s):
            dims = s.shape.as_list()
            return TensorSpec([rows] + dims[1:], s.dtype) if dims else s
        spec = _nest.map_structure(per_replica_rows, spec)
    if n == 1:
        return spec
    return _nest.map_structure(lambda s: PerReplicaSpec(*([s] * n)), spec)


def _per_replica(pieces, element):
    if len(pieces) == 1:
        return pieces[0]
    if not _nest.is_nested(element):
        return PerReplica(pieces)
    flats = [_nest.flatten(p) for p in pieces]
    return _nest.pack_sequence_as(element, [PerReplica(parts) for parts in zip(*flats)])


class _Optional:
    """``tf.experimental.Optional``'s surface: has_value(), get_value()."""

    def __init__(self, value, present):
        self._value, self._present = value, present

    def has_value(self):
        return _core.constant(self._present)

    def get_value(self):
        if not self._present:
            raise _core.InvalidArgumentError("The optional does not have a value")
        return self._value


class DistributedIterator:
    """``next()`` gives one step's inputs: a PerReplica per component (the plain batch with
    one replica); StopIteration when the dataset is exhausted."""

    def __init__(self, strategy, source, splitter):
        self._strategy = strategy
        self._it = iter(source)
        self._split = splitter

    def __iter__(self):
        return self

    def __next__(self):
        element = next(self._it)
        return self._split(element)

    def get_next(self):
        try:
            return next(self)
        except StopIteration:
            raise _core.OutOfRangeError("End of sequence") from None

    def get_next_as_optional(self):
        """An optional holding the next step's inputs, or empty at the end."""
        try:
            return _Optional(next(self), True)
        except StopIteration:
            return _Optional(None, False)

    _element_spec = None

    @property
    def element_spec(self):
        return self._element_spec


class DistributedDataset:
    """A dataset of global batches, each split over the replicas when iterated."""

    def __init__(self, strategy, dataset):
        from mixprec.data import Dataset

        if not isinstance(dataset, Dataset):
            raise TypeError("experimental_distribute_dataset takes a tf.data.Dataset, got %s"
                            % type(dataset).__name__)
        self._strategy = strategy
        self._dataset = dataset
        e = strategy.extended
        self._n = e._num_local * e._num_workers
        self._static = compute_batch_size(dataset)
        lo = e._worker_index * e._num_local
        self._keep = set(range(lo, lo + e._num_local))

    def _split_element(self, element):
        if self._n == 1:
            return element
        flat = _nest.flatten(element)
        first = flat[0] if isinstance(flat[0], _core.Tensor) else _core.convert_to_tensor(flat[0])
        b = _rows(first)
        static = self._static > 0
        sizes = batch_sizes(self._static if static else b, self._n, static)
        if static and sum(sizes) != b:  # cannot happen with drop_remainder; be safe
            sizes = batch_sizes(b, self._n, False)
        return _per_replica(_split(element, sizes, self._keep), element)

    def __iter__(self):
        it = DistributedIterator(self._strategy, self._dataset, self._split_element)
        it._element_spec = self.element_spec
        return it

    def reduce(self, initial_state, reduce_func):
        state = initial_state
        for x in self:
            state = reduce_func(state, x)
        return state

    @property
    def element_spec(self):
        """TensorFlow's: a PerReplicaSpec per component whose batch dimension is the
        per-replica batch when the global batch is static and divides evenly, else None."""
        if self._n == 1:
            return self._dataset.element_spec
        rows = -1
        if self._static > 0 and self._static % self._n == 0:
            rows = self._static // self._n
        return _replica_spec(self._dataset.element_spec, len(self._keep), rows)

    @property
    def cardinality(self):
        """The number of steps (a NumPy int64; -1 infinite, -2 unknown): TensorFlow's
        DistributedDataset has it as a property, not a method."""
        import numpy as np

        return np.int64(int(self._dataset.cardinality()))


class DistributedDatasetsFromFunction:
    """``dataset_fn(InputContext)`` called once for this worker; its elements are per-replica
    batches, replica i of a step getting element i of each group of N."""

    def __init__(self, strategy, dataset_fn):
        e = strategy.extended
        self._strategy = strategy
        self._local = e._num_local
        ctx = InputContext(num_input_pipelines=e._num_workers, input_pipeline_id=e._worker_index,
                           num_replicas_in_sync=strategy.num_replicas_in_sync)
        self._dataset = dataset_fn(ctx)

    def __iter__(self):
        n = self._local
        source = self._dataset

        def groups():
            it = iter(source)
            while True:
                got = []
                for _ in range(n):
                    try:
                        got.append(next(it))
                    except StopIteration:
                        break
                if not got:
                    return
                while len(got) < n:  # a replica without data gets an empty batch
                    got.append(_nest.map_structure(
                        lambda x: _core.convert_to_tensor(x)[0:0], got[0]))
                yield got

        def to_per_replica(got):
            return got[0] if n == 1 else _per_replica(got, got[0])

        it = DistributedIterator(self._strategy, groups(), to_per_replica)
        it._element_spec = self.element_spec
        return it

    @property
    def element_spec(self):
        """The per-replica dataset's spec, a PerReplicaSpec per component (TensorFlow)."""
        return _replica_spec(getattr(self._dataset, "element_spec", None), self._local)
