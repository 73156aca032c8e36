"""``tf.distribute``: strategies (default, OneDevice, Mirrored on logical CPUs as threads,
MultiWorkerMirrored over MPI), replica contexts, distributed values and inputs. The
collectives themselves are in the C core (csrc/collective*.c); see docs/distribute.md."""

from mixprec.distribute._context import (  # noqa: F401
    ReduceOp, ReplicaContext, get_cross_replica_context, get_replica_context, get_strategy,
    has_strategy, in_cross_replica_context)
from mixprec.distribute._strategy import (  # noqa: F401
    CrossDeviceOps, HierarchicalCopyAllReduce, MirroredStrategy, NcclAllReduce,
    OneDeviceStrategy, ReductionToOneDevice, Strategy, StrategyExtended)
from mixprec.distribute.input_lib import (  # noqa: F401
    DistributedDataset, DistributedIterator, InputContext, InputOptions, InputReplicationMode)
from mixprec.distribute.values import DistributedValues, Mirrored, PerReplica  # noqa: F401
from mixprec.distribute import experimental  # noqa: F401
from mixprec.distribute.multi_worker import MultiWorkerMirroredStrategy  # noqa: F401

__all__ = [
    "CrossDeviceOps", "DistributedDataset", "DistributedIterator", "DistributedValues",
    "HierarchicalCopyAllReduce", "InputContext", "InputOptions", "InputReplicationMode", "Mirrored", "MirroredStrategy",
    "MultiWorkerMirroredStrategy", "NcclAllReduce", "OneDeviceStrategy", "PerReplica",
    "ReduceOp", "ReductionToOneDevice", "ReplicaContext", "Strategy", "StrategyExtended",
    "experimental", "get_cross_replica_context", "get_replica_context", "get_strategy",
    "has_strategy", "in_cross_replica_context",
]


def get_replica_context_num_replicas():
    """Replicas taking part in the current step (1 outside a strategy)."""
    from mixprec.distribute._context import _num_replicas_in_sync

    return _num_replicas_in_sync()

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
