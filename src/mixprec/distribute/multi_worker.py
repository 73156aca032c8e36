"""``MultiWorkerMirroredStrategy``: one worker per process (started with ``mpiexec -n N``),
one replica per worker, gradients summed across workers by the MPI engine of the C core
(csrc/collective_mpi.c, libmpi_abi.so loaded at run time) — or, where the CUDA backend has
GPUs, by NCCL on this worker's GPU (its unique id broadcast over MPI, as llm.c does; GPU
tensors go to NCCL, host tensors to MPI). ``TF_CONFIG``, when set, must describe the same
world as MPI. Without mpiexec it is a single worker, as TensorFlow's without a cluster.
No numbers here."""

import atexit
import json
import os
import sys

from mixprec import _core
from mixprec.distribute._strategy import Strategy, StrategyExtended, _timeout

_MPI_ENV = ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS")
_world = []


def _mpi_library():
    lib = os.environ.get("MIXPREC_MPI_LIBRARY")
    if lib:
        return lib
    for prefix in (sys.prefix, sys.base_prefix):
        for name in ("libmpi_abi.so.1", "libmpi_abi.so"):
            path = os.path.join(prefix, "lib", name)
            if os.path.exists(path):
                return path
    return "libmpi_abi.so.1"


_LOCAL_RANK_ENV = ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_LOCAL_RANK",
                   "PMIX_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID")


def local_rank(rank, environ=None):
    """This process's index among the workers on its host (mpiexec's variables), else the
    global rank: worker i drives GPU local_rank % number of GPUs."""
    env = os.environ if environ is None else environ
    for k in _LOCAL_RANK_ENV:
        if env.get(k, "").strip().isdigit():
            return int(env[k])
    return rank


def worker_engine(gpu_backend_name, n_gpus):
    """'nccl' when this worker has a GPU of the CUDA backend (or the emulated GPU under the
    tests' fake libnccl: _gpu_mirror.nccl_backend), else 'mpi'."""
    from mixprec.distribute import _gpu_mirror

    return "nccl" if _gpu_mirror.nccl_backend(gpu_backend_name) and n_gpus > 0 else "mpi"


def launched_by_mpi():
    """Whether this process was started by mpiexec (its environment says so)."""
    return any(k in os.environ for k in _MPI_ENV)


def mpi_world():
    """The MPI communicator of this process (created once), or None outside mpiexec."""
    if not _world:
        if not launched_by_mpi():
            _world.append(None)
        else:
            _world.append(_core.comm_mpi(_mpi_library(), _timeout()))
            atexit.register(_core.mpi_finalize)
    return _world[0]


class ClusterResolver:
    """The task this process is (from MPI, or TF_CONFIG when set)."""

    def __init__(self, task_type, task_id, num_workers, cluster_spec):
        self.task_type = task_type
        self.task_id = task_id
        self._num_workers = num_workers
        self._cluster_spec = cluster_spec
        self.rpc_layer = "grpc"

    def cluster_spec(self):
        return self._cluster_spec

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        return {}


def _check_tf_config(rank, size):
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        return {"worker": ["localhost:%d" % (12345 + i) for i in range(size)]}, "worker", rank
    try:
        cfg = json.loads(raw)
    except ValueError as e:
        raise ValueError("TF_CONFIG is not valid JSON: %s" % e) from None
    cluster = cfg.get("cluster", {}) or {}
    task = cfg.get("task", {}) or {}
    workers = list(cluster.get("worker", [])) + list(cluster.get("chief", []))
    if workers and len(workers) != size:
        raise ValueError("TF_CONFIG describes %d workers (cluster %s) but mpiexec started %d "
                         "processes" % (len(workers), cluster, size))
    ttype = task.get("type", "worker")
    tid = int(task.get("index", rank))
    flat_id = tid + (len(cluster.get("chief", [])) if ttype == "worker" else 0)
    if flat_id != rank:
        raise ValueError("TF_CONFIG says this process is task %s:%d, but its MPI rank is %d: "
                         "start rank r with task index r" % (ttype, tid, rank))
    return cluster, ttype, tid


class _MultiWorkerExtended(StrategyExtended):
    def __init__(self, container, comm):
        info = _core.comm_info(comm) if comm else ("none", 1, 0, 0.0)
        size, rank = info[1], max(info[2], 0)
        from mixprec.distribute import _gpu_mirror

        n_gpus = _core.device_count(1) if _core.backend_name(1) else 0
        engine = worker_engine(_core.backend_name(1), n_gpus)
        gpu = local_rank(rank) % n_gpus if engine == "nccl" else -1
        super().__init__(container, ("/job:worker/replica:0/task:%d/device:%s"
                                     % (rank, "GPU:%d" % gpu if gpu >= 0 else "CPU:0"),))
        self._mpi = comm
        self._size, self._rank = size, rank
        self._nccl = None
        if engine == "nccl":
            _core.set_device((1, gpu))  # this worker's tensors on its GPU
            if comm is not None and size > 1:
                self._nccl = _core.comm_nccl(_gpu_mirror.nccl_library(), [gpu], comm, _timeout())

    def _route(self, tensors, call):
        """GPU tensors through NCCL, the others through MPI, in one fixed order (every
        worker makes the same calls)."""
        tensors = list(tensors)
        on_gpu = [i for i, t in enumerate(tensors) if self._nccl is not None and
                  "GPU:" in t.device]
        host = [i for i in range(len(tensors)) if i not in set(on_gpu)]
        out = [None] * len(tensors)
        for comm, idx in ((self._nccl, on_gpu), (self._mpi, host)):
            if idx:
                for i, r in zip(idx, call(comm, [tensors[i] for i in idx])):
                    out[i] = r
        return out

    @property
    def _num_workers(self):
        return self._size

    @property
    def _worker_index(self):
        return self._rank

    @property
    def experimental_between_graph(self):
        return True

    def _traceable(self):
        """A traced tf.function records this worker's replica with its collectives as
        AllReduce ops (MPI, host tensors); over NCCL the signature runs eagerly."""
        return self._nccl is None

    def _cross_worker_all_reduce(self, tensors, op):
        if self._mpi is None or self._size == 1:
            return tensors
        if _core.graph_recording() is not None and self._nccl is None:
            return _traced_sums(self._mpi, self._rank, tensors)
        return self._route(tensors, lambda c, ts: _core.comm_all_reduce(c, self._rank, ts, 0))

    def _cross_worker_sum_on_tape(self, tensors):
        if self._mpi is None or self._size == 1:
            return tensors
        return [_core.all_reduce(self._mpi, self._rank, t) for t in tensors]

    def _broadcast_from_0(self, tensors):
        if self._mpi is None or self._size == 1:
            return tensors
        return self._route(tensors, lambda c, ts: _core.comm_broadcast(c, self._rank, ts, 0))

    def _cross_worker_gather(self, tensor, axis):
        if self._mpi is None or self._size == 1:
            return tensor
        if _core.graph_recording() is not None:
            # the other workers' row counts are values of each call: a host call of the
            # graph that gathers at every replay (a result whose rows may change)
            from mixprec._script_ops import host_call
            return host_call(lambda t: [self._gather_now(t, axis)], [tensor])[0]
        return self._gather_now(tensor, axis)

    def _gather_now(self, tensor, axis):
        rows = [0.0] * self._size
        rows[self._rank] = float(tensor.shape[axis])
        counts = self._cross_worker_all_reduce([_core.constant(rows, "float64")], None)[0].numpy()
        pieces = []
        for r in range(self._size):
            shape = list(tensor.shape)
            shape[axis] = int(counts[r])
            mine = tensor if r == self._rank else _core.fill(shape, 0, tensor.dtype)
            pieces.append(self._route([mine], lambda c, ts: _core.comm_broadcast(
                c, self._rank, ts, r))[0])
        return _core.concat(pieces, axis)


def _traced_sums(comm, rank, tensors):
    """The workers' sums of ``tensors`` as ops a traced function records (its replays call
    the MPI engine again): one AllReduce per dtype over the tensors flattened and
    concatenated (a fused bucket, as the eager call), split back. The engine sums each
    element in rank order, so the bits equal the eager collective's."""
    from mixprec._array_ops import split

    tensors = list(tensors)
    out = [None] * len(tensors)
    groups = {}
    for i, t in enumerate(tensors):
        groups.setdefault(t.dtype.name, []).append(i)
    for idx in groups.values():
        if len(idx) == 1:
            out[idx[0]] = _core.all_reduce(comm, rank, tensors[idx[0]])
            continue
        flat = [_core.reshape(tensors[i], [-1]) for i in idx]
        summed = _core.all_reduce(comm, rank, _core.concat(flat, 0))
        for i, part in zip(idx, split(summed, [int(f.shape[0]) for f in flat])):
            out[i] = _core.reshape(part, tensors[i].shape.as_list())
    return out


class MultiWorkerMirroredStrategy(Strategy):
    """Synchronous data parallelism across processes: ``mpiexec -n N python train.py`` runs
    N workers of one replica each; gradients, ``reduce`` and metrics cross processes over
    MPI. Variables created in ``scope()`` start from worker 0's values."""

    _warns_eager_run = True

    def __init__(self, cluster_resolver=None, communication_options=None):
        comm = mpi_world()
        size, rank = (_core.comm_info(comm)[1], _core.comm_info(comm)[2]) if comm else (1, 0)
        cluster, ttype, tid = _check_tf_config(rank, size)
        super().__init__(_MultiWorkerExtended(self, comm))
        self._extended._cluster_resolver = cluster_resolver or ClusterResolver(
            ttype, tid, size, cluster)

    def _on_variable_created(self, var):
        """Every worker starts from worker 0's initial value (TensorFlow broadcasts too)."""
        e = self._extended
        if e._size > 1 and var.dtype.is_floating:
            tok = _core.graph_suspend()  # (made while a function traces: once, not replayed)
            try:
                var.assign(e._broadcast_from_0([var._peek()])[0])
            finally:
                _core.graph_resume(tok)

    def __repr__(self):
        return "<MultiWorkerMirroredStrategy worker %d of %d>" % (self._extended._rank,
                                                                  self._extended._size)
