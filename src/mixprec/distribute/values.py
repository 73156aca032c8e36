"""Values that differ per replica (``PerReplica``) or are the same on every replica
(``Mirrored``): containers of one component per replica and their nest helpers. They hold
tensors; they never compute."""

from mixprec import _nest


class DistributedValues:
    """One component per replica; ``.values`` is the tuple of them."""

    _mp_distributed_value = True  # tf.function keys such an argument by its components

    def __init__(self, values):
        self._values = tuple(values)

    @property
    def values(self):
        return self._values

    def _get_on_device_or_primary(self):
        return self._values[0]

    def __len__(self):
        return len(self._values)

    def __repr__(self):
        body = ",\n".join("  %d: %r" % (i, v) for i, v in enumerate(self._values))
        return "%s:{\n%s\n}" % (type(self).__name__, body)

    def __str__(self):  # TensorFlow: the components' str(), not their repr()
        body = ",\n".join("  %d: %s" % (i, v) for i, v in enumerate(self._values))
        return "%s:{\n%s\n}" % (type(self).__name__, body)


class PerReplica(DistributedValues):
    """Values that differ between replicas (a per-replica batch, a per-replica loss)."""


class Mirrored(DistributedValues):
    """Values that are the same on every replica."""


class PerReplicaSpec:
    """The type of a PerReplica: one TensorSpec per replica (``element_spec`` of distributed
    datasets and iterators)."""

    def __init__(self, *value_specs):
        self._value_specs = tuple(value_specs)

    @property
    def value_type(self):
        return PerReplica

    def __eq__(self, other):
        return type(other) is type(self) and self._value_specs == other._value_specs

    def __hash__(self):
        return hash((PerReplicaSpec, self._value_specs))

    def __repr__(self):
        return "PerReplicaSpec(%s)" % ", ".join(repr(s) for s in self._value_specs)


def is_distributed(x):
    return isinstance(x, DistributedValues)


def select_replica(replica_id, structure):
    """The component of every distributed leaf of ``structure`` for one replica."""
    def pick(x):
        return x.values[replica_id] if isinstance(x, DistributedValues) else x

    if isinstance(structure, DistributedValues):
        return pick(structure)
    return _nest.map_structure(pick, structure)


def regroup(per_replica_results):
    """A list of N nests (one per replica) -> one nest whose leaves are PerReplica (or the
    object itself where every replica returned the same object); one replica: its result."""
    if len(per_replica_results) == 1:
        return per_replica_results[0]
    first = per_replica_results[0]
    if first is None:
        return None
    flats = [_nest.flatten(r) for r in per_replica_results]
    leaves = []
    for parts in zip(*flats):
        if all(p is parts[0] for p in parts):
            leaves.append(parts[0])
        else:
            leaves.append(PerReplica(parts))
    if not _nest.is_nested(first):
        return leaves[0]
    return _nest.pack_sequence_as(first, leaves)
