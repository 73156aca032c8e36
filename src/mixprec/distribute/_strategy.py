"""The strategies: the default (one replica), ``OneDeviceStrategy``, ``MirroredStrategy``
(one replica per logical device; on CPUs the replicas are threads of this process) and the
cross-device-ops names. Orchestration only: replica threads, merge_call, scopes; every
number a strategy combines goes through the C collectives (``_core.comm_*``) or C ops."""

import contextlib
import os
import queue
import threading
import weakref

from mixprec import _core, _nest
from mixprec._variable import Variable
from mixprec.distribute import _context, _gpu_mirror, _traced
from mixprec.distribute._context import ReduceOp, ReplicaContext, _as_reduce_op
from mixprec.distribute._rendezvous import MERGE_MISMATCH, Rendezvous
from mixprec.distribute.values import (DistributedValues, PerReplica, regroup,
                                       select_replica)

_OPS = {ReduceOp.SUM: 0, ReduceOp.MEAN: 1}
_CROSS_REPLICA_ONLY = ("Method requires being in cross-replica context, use "
                       "get_replica_context().merge_call()")  # TensorFlow's words


def _timeout():
    """Seconds a collective waits for its peers (MIXPREC_COLLECTIVE_TIMEOUT, default 300)."""
    try:
        t = float(os.environ.get("MIXPREC_COLLECTIVE_TIMEOUT", "300"))
    except ValueError:
        t = 300.0
    return t if t > 0 else 300.0


# ----------------------------------------------------------------- cross-device ops (names)

def _untraceable(what):
    """Inside a traced tf.function, for a strategy whose replicas cannot be recorded into
    one graph (multi-worker, several GPUs): the signature runs eagerly, without a warning."""
    if _core.graph_recording() is not None:
        _core.graph_break("tf.distribute: %s (replicas run on threads)" % what)


class CrossDeviceOps:
    """How gradients cross devices. mixprec's collectives engine is chosen by the devices
    (threads on CPUs, NCCL between GPUs, MPI between processes); these classes are accepted
    for TensorFlow code and recorded, not used to pick another engine."""

    def __init__(self, *args, **kwargs):
        self._args, self._kwargs = args, kwargs


class NcclAllReduce(CrossDeviceOps):
    def __init__(self, num_packs=1):
        super().__init__(num_packs=num_packs)


class HierarchicalCopyAllReduce(CrossDeviceOps):
    def __init__(self, num_packs=1):
        super().__init__(num_packs=num_packs)


class ReductionToOneDevice(CrossDeviceOps):
    def __init__(self, reduce_to_device=None, accumulation_fn=None):
        super().__init__(reduce_to_device=reduce_to_device)


# ----------------------------------------------------------------- a run across threads

class _Run(Rendezvous):
    """One ``strategy.run`` across local replica threads: the merge_call rendezvous."""

    def finish(self):
        """A replica's function returned: if others wait in a merge_call that it will
        never join, they fail now (TensorFlow's error), not after the timeout."""
        with self.cv:
            self.finished += 1
            self._check_mismatch()

    def _check_mismatch(self):  # under cv
        if 0 < self.arrived < self.n and self.arrived + self.finished >= self.n and \
                self.aborted is None:
            self.aborted = MERGE_MISMATCH
            self.cv.notify_all()


def _to_tensor(x):
    if isinstance(x, Variable):
        return x.value()
    return x if isinstance(x, _core.Tensor) else _core.convert_to_tensor(x)


class StrategyExtended:
    """The strategy's machinery (``strategy.extended``)."""

    _run_depth = 0  # strategy.run calls in progress (>0 in a merge function: a nested run)

    def __init__(self, container, devices):
        self._container = container
        self._devices = tuple(devices)
        self._comm = None
        self._comm_lock = threading.Lock()
        self._engine = "threads"  # or "nccl" (MirroredStrategy over real GPUs)
        self._mirrors = None      # _gpu_mirror.Mirrors: one variable copy per GPU

    # number of replicas in this process / in the job, and this process's offset
    @property
    def _num_local(self):
        return len(self._devices)

    @property
    def _num_workers(self):
        return 1

    @property
    def _worker_index(self):
        return 0

    def _global_replica_id(self, local_id):
        return self._worker_index * self._num_local + local_id

    @property
    def worker_devices(self):
        return self._devices

    @property
    def parameter_devices(self):
        return self._devices

    @property
    def experimental_between_graph(self):
        return False

    @property
    def experimental_should_init(self):
        return True

    @property
    def should_checkpoint(self):
        return self._worker_index == 0

    @property
    def should_save_summary(self):
        return self._worker_index == 0

    # -- communicators
    def _local_comm(self):
        with self._comm_lock:
            if self._comm is None:
                if self._engine == "nccl":
                    self._comm = _core.comm_nccl(
                        _gpu_mirror.nccl_library(),
                        [_gpu_mirror.ordinal(d) for d in self._devices], None, _timeout())
                else:
                    self._comm = _core.comm_threads(self._num_local, _timeout())
            return self._comm

    def _replica_threads(self):
        with self._comm_lock:
            if getattr(self, "_threads", None) is None:
                self._threads = _ReplicaThreads(self._num_local)
                weakref.finalize(self, self._threads.stop)
            return self._threads

    def _renew_comm(self):
        with self._comm_lock:
            self._comm = None

    def _cross_worker_all_reduce(self, tensors, op):
        """Hook of the multi-worker strategy: the local result reduced across processes."""
        return tensors

    def _cross_worker_gather(self, tensor, axis):
        return tensor

    # -- running
    def _traces_replicas(self):
        """Can strategy.run inside a traced tf.function record its replicas into the graph?
        Replicas on logical CPUs (one storage per variable), one process, and one replica
        per MPI process (its collectives are AllReduce ops of the graph): yes. Over several
        GPUs (a copy per GPU) and over NCCL between processes the signature runs eagerly."""
        return self._mirrors is None and self._traceable()

    def _traceable(self):
        """Hook of the multi-worker strategy: can its cross-worker collectives be recorded
        (MPI: AllReduce ops in the graph)?"""
        return True

    def _call_for_each_replica(self, fn, args, kwargs):
        n = self._num_local
        if _core.graph_recording() is not None:
            if not self._traces_replicas():
                _untraceable("strategy.run")
            elif n > 1:
                return _traced.call_for_each_replica(self, fn, args, kwargs)
        return self._call_for_each_replica_eager(fn, args, kwargs)

    def _call_for_each_replica_eager(self, fn, args, kwargs):
        """strategy.run op by op: replica 0 on this thread, the others on replica threads
        at once, summing through the collectives engine."""
        strategy = self._container
        n = self._num_local
        if n == 1:
            prev_ctx = _context._set_replica_context(ReplicaContext(strategy, 0, None))
            stack = _context._stack()
            stack.append(strategy)
            try:
                return fn(*select_replica(0, args), **select_replica(0, kwargs))
            finally:
                stack.pop()
                _context._set_replica_context(prev_ctx)
        run = _Run(n, _timeout())
        comm = self._local_comm()
        results = [None] * n
        errors = [None] * n

        mirrors = self._mirrors

        def body(i):
            ctx = ReplicaContext(strategy, i, run)
            prev_ctx = _context._set_replica_context(ctx)
            stack = _context._stack()
            stack.append(strategy)
            try:
                if mirrors is not None:  # replica i on its GPU, with its variables' copies
                    with mirrors.replica(i), _eager_functions():
                        spec = mirrors.specs[i]
                        a = _nest.map_structure(lambda x: _gpu_mirror.to_device(x, spec),
                                                select_replica(i, args))
                        k = _nest.map_structure(lambda x: _gpu_mirror.to_device(x, spec),
                                                select_replica(i, kwargs))
                        results[i] = fn(*a, **k)
                    run.finish()
                    return
                results[i] = fn(*select_replica(i, args), **select_replica(i, kwargs))
                run.finish()
            except BaseException as e:  # noqa: BLE001 — re-raised by the caller
                errors[i] = e
                run.abort("replica %d raised %s: %s" % (i, type(e).__name__, e))
                _core.comm_abort(comm, i, "%s: %s" % (type(e).__name__, e))
            finally:
                stack.pop()
                _context._set_replica_context(prev_ctx)

        self._replica_threads().run(body)
        if any(e is not None for e in errors):
            self._renew_comm()
            # the replica that failed first, not the others' "aborted" errors
            primary = [e for e in errors if e is not None
                       and not isinstance(e, (_core.UnavailableError, _ReplicaAborted))]
            raise (primary or [e for e in errors if e is not None])[0]
        return regroup(results)

    def _cross_replica_call(self, fn, a, k):
        """fn(strategy, *a, **k) in cross-replica context (a merge function)."""
        strategy = self._container
        prev_ctx = _context._set_replica_context(None)
        stack = _context._stack()
        stack.append(strategy)
        try:
            if self._mirrors is not None:
                with self._mirrors.cross_replica():
                    return fn(strategy, *a, **k)
            return fn(strategy, *a, **k)
        finally:
            stack.pop()
            _context._set_replica_context(prev_ctx)

    def _gather_merge_args(self, run):
        """The replicas' merge_call arguments regrouped (PerReplica where they differ)."""
        args = run.slots[0][0]
        kwargs = run.slots[0][1]
        gathered = regroup([s[0] for s in run.slots]) if args else ()
        kws = regroup([s[1] for s in run.slots]) if kwargs else {}
        if run.n > 1 and args and not isinstance(gathered, tuple):
            gathered = (gathered,)
        return tuple(gathered), dict(kws)

    def _merge_call(self, ctx, merge_fn, args, kwargs):
        run = ctx._run
        if isinstance(run, _traced.TracedRun):
            return _traced.merge_call(self, ctx, merge_fn, args, kwargs)

        def call_cross_replica(a, k, fn=None):
            return self._cross_replica_call(fn or merge_fn, a, k)

        if run is None:  # one local replica
            return call_cross_replica(args, kwargs)
        rid = ctx._replica_id
        with run.cv:
            if run.aborted is not None:
                raise _ReplicaAborted(run.aborted)
            run.slots[rid] = (args, kwargs, merge_fn)
            run.arrived += 1
            gen = run.gen
            run._check_mismatch()
            if run.aborted is not None:
                raise _ReplicaAborted(run.aborted)
            if run.arrived == run.n:
                gathered, kws = self._gather_merge_args(run)
                first_fn = run.slots[0][2]  # replica 0's, as TensorFlow
                try:
                    run.result, run.error = call_cross_replica(gathered, kws, first_fn), None
                except BaseException as e:  # noqa: BLE001 — every replica re-raises it
                    run.result, run.error = None, e
                run.arrived = 0
                run.slots = [None] * run.n
                run.gen += 1
                run.cv.notify_all()
            else:
                while run.gen == gen and run.aborted is None:
                    if not run.cv.wait(run.timeout):
                        run.aborted = ("merge_call timed out after %g s waiting for the other "
                                       "replicas" % run.timeout)
                        run.cv.notify_all()
                if run.gen == gen:
                    raise _ReplicaAborted(run.aborted)
            result, error = run.result, run.error
        if error is not None:
            raise error
        return select_replica(rid, result)

    def _replica_all_reduce(self, ctx, op, value):
        flat = _nest.flatten(value)
        tensors = [_to_tensor(x) for x in flat]
        if self._num_local * self._num_workers == 1:
            return _nest.pack_sequence_as(value, tensors) if _nest.is_nested(value) else tensors[0]
        kinds = [t.dtype for t in tensors]
        wide = [t if t.dtype.is_floating else _core.cast(t, "float64") for t in tensors]
        if isinstance(ctx._run, _traced.TracedRun):
            out = ctx.merge_call(_traced.rank_order_sums, args=(wide,))
        elif self._num_local > 1:
            out = _core.comm_all_reduce(self._local_comm(), ctx._replica_id, wide,
                                        _OPS[ReduceOp.SUM])
        else:
            out = wide
        out = self._cross_worker_all_reduce(out, ReduceOp.SUM)
        if op == ReduceOp.MEAN:
            n = self._num_local * self._num_workers
            out = [o / _core.cast(_core.constant(n), o.dtype) for o in out]
        # MEAN of integers stays float64 (TensorFlow divides with truediv)
        out = [o if o.dtype == k or (op == ReduceOp.MEAN and not k.is_floating)
               else _core.cast(o, k) for o, k in zip(out, kinds)]
        return _nest.pack_sequence_as(value, out) if _nest.is_nested(value) else out[0]

    def _replica_sum_on_tape(self, ctx, tensors):
        """The replicas' sums of float ``tensors``, each through the AllReduce op, so a tape
        records them and their gradients are summed over the replicas too (synchronized
        batch norm). One collective per tensor: for statistics, not for gradient buckets."""
        out = list(tensors)
        if isinstance(ctx._run, _traced.TracedRun):
            # replicas in turns: sums of ops in rank order, whose gradient is the same sums
            # of the replicas' upstream gradients, handed over inside tape.gradient
            return _traced.sums_on_tape(ctx, out)
        if self._num_local > 1:
            comm = self._local_comm()
            out = [_core.all_reduce(comm, ctx._replica_id, t) for t in out]
        return self._cross_worker_sum_on_tape(out)

    def _cross_worker_sum_on_tape(self, tensors):
        """Hook of the multi-worker strategy: _replica_sum_on_tape across processes."""
        return tensors

    def _replica_all_gather(self, ctx, value, axis):
        def gather_fn(strategy, v):
            return strategy.gather(v, axis)
        # each replica its own tensor (TensorFlow's result is a PerReplica, not one object)
        return _nest.map_structure(_core.identity, ctx.merge_call(gather_fn, args=(value,)))

    # -- cross-replica helpers (TensorFlow's strategy.extended API)
    def update(self, var, fn, args=(), kwargs=None, group=True):
        """``fn(var, *args)`` applied to the variable (its replicas share one copy on one
        host; every process applies it to its own; over GPUs, each GPU's copy)."""
        if self._mirrors is not None:
            m = self._mirrors

            def on(i):
                def move(x):
                    return _gpu_mirror.to_device(x, m.specs[i])
                return fn(var, *_nest.map_structure(move, select_replica(i, args)),
                          **_nest.map_structure(move, select_replica(i, kwargs or {})))
            return m.for_each_replica(on)
        return fn(var, *select_replica(0, args), **select_replica(0, kwargs or {}))

    def value_container(self, value):
        return value

    def reduce_to(self, reduce_op, value, destinations=None, options=None):
        return self._container.reduce(reduce_op, value, axis=None)

    def batch_reduce_to(self, reduce_op, value_destination_pairs, options=None):
        return [self.reduce_to(reduce_op, v, d) for v, d in value_destination_pairs]

    def colocate_vars_with(self, colocate_with_variable):
        import contextlib

        return contextlib.nullcontext()

    def call_for_each_replica(self, fn, args=(), kwargs=None):
        return self._call_for_each_replica(fn, tuple(args), dict(kwargs or {}))


@contextlib.contextmanager
def _eager_functions():
    """tf.functions called in a GPU replica run eagerly: a trace there would record that
    replica's variable copies, and the trace is shared by every replica."""
    from mixprec import _function

    prev = getattr(_function._state, "eager_here", False)
    _function._state.eager_here = True
    try:
        yield
    finally:
        _function._state.eager_here = prev


class _ReplicaThreads:
    """Threads 1..N-1 of a strategy's replicas, started once and parked between runs (a
    thread per replica per step cost its start-up every step); replica 0 runs on the
    caller's thread."""

    def __init__(self, n):
        self._queues = [queue.SimpleQueue() for _ in range(n)]
        self._threads = [threading.Thread(target=self._loop, args=(i,), name="replica-%d" % i,
                                          daemon=True) for i in range(1, n)]
        for t in self._threads:
            t.start()

    def _loop(self, i):
        while True:
            job = self._queues[i].get()
            if job is None:
                return
            body, done = job
            try:
                body(i)
            finally:
                done.release()
            job = body = done = None  # NOTE: a parked thread must not keep its strategy alive

    def run(self, body):
        done = threading.Semaphore(0)
        for i in range(1, len(self._queues)):
            self._queues[i].put((body, done))
        try:
            body(0)
        finally:
            for _ in range(1, len(self._queues)):
                done.acquire()

    def stop(self):
        for q in self._queues[1:]:
            q.put(None)


def _nested_run(ext, fn, args, kwargs):
    """strategy.run called by a merge function (TensorFlow allows it): the outer run's
    replica threads and communicator are parked in that merge_call, so this run gets its
    own threads and communicator, dropped when it returns."""
    saved = ext._replica_threads(), ext._local_comm()
    with ext._comm_lock:
        ext._threads, ext._comm = None, None
    try:
        return ext._call_for_each_replica(fn, args, kwargs)
    finally:
        with ext._comm_lock:
            if ext._threads is not None:
                ext._threads.stop()
            ext._threads, ext._comm = saved


_ReplicaAborted = _traced.ReplicaAborted


# ----------------------------------------------------------------- the public strategies

_EAGER_RUN_WARNINGS = [0]  # TensorFlow logs it for the first 5 eager calls of the process
_QUIET = threading.local()  # Keras' own steps (tf-keras runs them in a tf.function)


@contextlib.contextmanager
def quiet_eager_run():
    """``run`` calls inside do not log the eager-overhead warning (Keras' fit/evaluate/predict
    steps, which tf-keras runs traced unless ``run_eagerly``)."""
    prev = getattr(_QUIET, "on", False)
    _QUIET.on = True
    try:
        yield
    finally:
        _QUIET.on = prev


def _warn_eager_run(strategy, fn):
    """TensorFlow's warning for ``run`` called outside a ``tf.function`` (mirrored strategies
    only; a ``tf.function`` as ``fn`` is not warned about)."""
    from mixprec import _function, _logging

    if _function.tracing() or isinstance(fn, _function.Function) or _EAGER_RUN_WARNINGS[0] >= 5 \
            or getattr(_QUIET, "on", False):
        return
    _EAGER_RUN_WARNINGS[0] += 1
    _logging.get_logger().warning(
        "Using %s eagerly has significant overhead currently. We will be working on improving "
        "this in the future, but for now please wrap `call_for_each_replica` or "
        "`experimental_run` or `run` inside a tf.function to get the best performance."
        % type(strategy).__name__)


class Strategy:
    _warns_eager_run = False  # MirroredStrategy and MultiWorkerMirroredStrategy: True
    """Base of the strategies: scope, run, reduce, gather and the distributed inputs."""

    def __init__(self, extended):
        self._extended = extended
        from mixprec.config import experimental as _cfg

        _cfg._initialize_runtime()

    @property
    def extended(self):
        return self._extended

    @property
    def num_replicas_in_sync(self):
        e = self._extended
        return e._num_local * e._num_workers

    @property
    def cluster_resolver(self):
        return getattr(self._extended, "_cluster_resolver", None)

    def scope(self):
        """Variables (and Keras models, optimizers, metrics) created inside are the
        strategy's; ``get_strategy()`` returns it."""
        return _Scope(self)

    def run(self, fn, args=(), kwargs=None, options=None):
        """``fn`` once per replica, in its replica context, with each PerReplica argument's
        component for that replica; the results regrouped (PerReplica where they differ)."""
        if _context._current_replica_context() is not None and \
                _context._current_replica_context().strategy is not _default_strategy():
            raise RuntimeError(_CROSS_REPLICA_ONLY)
        if args is not None and not isinstance(args, (list, tuple)):
            raise ValueError("positional args must be a list or tuple, got %s" % type(args))
        ext = self._extended
        if self._warns_eager_run and not ext._run_depth:
            _warn_eager_run(self, fn)
        if ext._run_depth and ext._num_local > 1 and ext._mirrors is None:
            return _nested_run(ext, fn, tuple(args or ()), dict(kwargs or {}))
        ext._run_depth += 1
        try:
            return ext._call_for_each_replica(fn, tuple(args or ()), dict(kwargs or {}))
        finally:
            ext._run_depth -= 1

    def experimental_local_results(self, value):
        """The components of a distributed value on this worker (a tuple); a plain value: a
        tuple of it."""
        if isinstance(value, DistributedValues):
            return value.values
        if isinstance(value, Variable) and getattr(value, "_distribute_strategy", None) is self:
            if self._extended._mirrors is not None:
                return self._extended._mirrors.local_results(value)
            return (value,) * self._extended._num_local
        if _nest.is_nested(value):  # one copy of the nest per local replica (TensorFlow)
            n = self._extended._num_local
            flat = _nest.flatten(value)
            per = [self.experimental_local_results(x) for x in flat]
            per = [p if len(p) == n else p * n for p in per]
            return tuple(_nest.pack_sequence_as(value, list(parts)) for parts in zip(*per))
        return (value,)

    def _local_values(self, v):
        if isinstance(v, DistributedValues):
            return list(v.values)
        return None

    def reduce(self, reduce_op, value, axis):
        """``value`` (a PerReplica, a nest of them, or a plain value) summed or averaged across
        replicas; ``axis``: also reduce along this axis of each component (MEAN then weighs
        each replica by its length on that axis)."""
        op = _as_reduce_op(reduce_op)
        if not self._extended._traces_replicas():
            _untraceable("strategy.reduce")
        if _context._current_replica_context() is not None and \
                _context._current_replica_context().strategy is self:
            raise RuntimeError(_CROSS_REPLICA_ONLY)
        if _nest.is_nested(value):
            return _nest.map_structure(lambda v: self.reduce(op, v, axis), value)
        parts = self._local_values(value)
        e = self._extended
        if parts is None and e._num_workers > 1 and e._num_local == 1:
            parts = [value]  # a worker's one replica returns plain values (multi-worker)
        if parts is None:
            if e._num_workers == 1 and e._num_local == 1 or op == ReduceOp.MEAN:
                if axis is None:  # TensorFlow returns the value itself
                    return value
                if isinstance(value, Variable):
                    value = value.value()
                t = _to_tensor(value)
                return (_core.reduce_sum if op == ReduceOp.SUM else _core.reduce_mean)(t, axis)
            if isinstance(value, (int, float)) and value == 0:
                return value
            raise ValueError("A non-DistributedValues value %s cannot be reduced with the given "
                             "reduce op %s." % (value, op))
        parts = [_to_tensor(p) for p in parts]
        if e._mirrors is not None:  # components live on the replicas' GPUs: sum on the first
            parts = [_gpu_mirror.to_device(p, e._mirrors.specs[0]) for p in parts]
        if axis is None:
            total = parts[0]
            for p in parts[1:]:
                total = total + p
            count = len(parts)
        else:
            total = None
            count = 0
            for p in parts:
                s = _core.reduce_sum(p, axis)
                total = s if total is None else total + s
                count += int(p.shape[axis])
        if e._num_workers > 1:
            dt = total.dtype
            wide = total if dt.is_floating else _core.cast(total, "float64")
            extra = [_core.constant(float(count), "float64")]
            traced = _core.graph_recording() is not None
            if traced and axis is None:  # every worker has its replicas' values
                extra, count = [], count * e._num_workers
            out = e._cross_worker_all_reduce([wide] + extra, ReduceOp.SUM)
            total = out[0] if dt.is_floating else _core.cast(out[0], dt)
            if traced and extra:
                # the rows of every worker, as a tensor of the graph (no host read)
                if op != ReduceOp.MEAN:
                    return total
                rows = _core.cast(out[1], total.dtype)
                return total / _core.maximum(rows, _core.fill([], 1, total.dtype))
            if extra:
                count = int(float(out[1]))
        if op == ReduceOp.MEAN:
            if count == 0:
                return total
            return total / _core.cast(_core.constant(count), total.dtype)
        return total

    def gather(self, value, axis):
        """The components of ``value`` concatenated along ``axis`` (replica order)."""
        if _nest.is_nested(value):
            return _nest.map_structure(lambda v: self.gather(v, axis), value)
        parts = self._local_values(value)
        if parts is None:  # a non-distributed value: itself (TensorFlow)
            if self._extended._num_workers == 1:
                return _to_tensor(value)
            parts = [_to_tensor(value)]
        parts = [_to_tensor(p) for p in parts]
        if any(len(p.shape) == 0 for p in parts):
            raise ValueError("gather: the values must have rank >= 1 (axis %r); got a scalar "
                             "per replica. hint: tf.reshape(value, [1])" % (axis,))
        if self._extended._mirrors is not None:
            parts = [_gpu_mirror.to_device(p, self._extended._mirrors.specs[0]) for p in parts]
        local = parts[0] if len(parts) == 1 else _core.concat(parts, axis)
        return self._extended._cross_worker_gather(local, axis) \
            if self._extended._num_workers > 1 else local

    # -- inputs
    def experimental_distribute_dataset(self, dataset, options=None):
        """Each global batch of ``dataset`` split over the replicas (TensorFlow's rebatching:
        see ``docs/distribute.md``)."""
        from mixprec.distribute import input_lib

        if getattr(self, "_is_default", False):
            return dataset  # the default strategy: the dataset itself (TensorFlow)
        return input_lib.DistributedDataset(self, dataset)

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        """``dataset_fn(InputContext)`` once per worker; its elements are per-replica batches,
        handed to the replicas in turn."""
        from mixprec.distribute import input_lib

        if getattr(self, "_is_default", False):  # the dataset itself (TensorFlow)
            return dataset_fn(input_lib.InputContext())
        return input_lib.DistributedDatasetsFromFunction(self, dataset_fn)

    experimental_distribute_datasets_from_function = distribute_datasets_from_function

    def experimental_distribute_values_from_function(self, value_fn):
        from mixprec.distribute.input_lib import ValueContext

        n = self._extended._num_local
        vals = [value_fn(ValueContext(self._extended._global_replica_id(i),
                                      self.num_replicas_in_sync)) for i in range(n)]
        if n == 1:
            return vals[0]
        # a PerReplica per leaf even where the replicas' values are the same object
        flats = [_nest.flatten(v) for v in vals]
        leaves = [PerReplica(parts) for parts in zip(*flats)]
        return _nest.pack_sequence_as(vals[0], leaves) if _nest.is_nested(vals[0]) \
            else leaves[0]

    def __repr__(self):
        return "<%s with %d replica(s)>" % (type(self).__name__, self.num_replicas_in_sync)


class _Scope:
    def __init__(self, strategy):
        self._strategy = strategy

    def __enter__(self):
        cur = _context._current_scope_strategy()
        if cur is not None and cur is not self._strategy and \
                not isinstance(cur, _DefaultStrategy) and \
                not isinstance(self._strategy, _DefaultStrategy):
            raise RuntimeError("Mixing different tf.distribute.Strategy objects: %s is not %s"
                               % (self._strategy, cur))  # TensorFlow: RuntimeError
        _context._stack().append(self._strategy)
        return self._strategy

    def __exit__(self, *exc):
        _context._stack().pop()
        return False


def _device_name(d):
    """'/cpu:1', 'CPU:1', '/device:GPU:0' -> '/device:CPU:1' style names; checked against
    the logical devices."""
    text = str(getattr(d, "name", d)).strip()
    low = text.lower()
    for part in low.split("/"):
        if part.startswith("device:"):
            part = part[len("device:"):]
        if part.startswith("cpu:") or part.startswith("gpu:"):
            kind, idx = part.split(":", 1)
            try:
                return "/device:%s:%d" % (kind.upper(), int(idx))
            except ValueError:
                break
    raise ValueError("Unknown device %r: expected '/cpu:N', '/gpu:N' or a LogicalDevice" % (d,))


class MirroredStrategy(Strategy):
    """Synchronous training on several devices of one machine: one replica per device (by
    default every logical GPU, else every logical CPU), variables created in ``scope()``
    mirrored, gradients summed across replicas before every update. Logical CPUs (set with
    ``tf.config.set_logical_device_configuration``) run as threads of this process."""

    _warns_eager_run = True

    def __init__(self, devices=None, cross_device_ops=None):
        from mixprec import config

        logical = config.list_logical_devices()
        names = [d.name for d in logical]
        if devices is None:
            gpus = [n for n in names if ":GPU:" in n]
            chosen = gpus or [n for n in names if ":CPU:" in n]
        else:
            if isinstance(devices, str):
                devices = [devices]
            chosen = [_device_name(d) for d in devices]
            if not chosen:
                raise ValueError("`devices` cannot be empty")
            if len(set(chosen)) != len(chosen):
                raise ValueError("No duplicates allowed in `devices` argument: %s" % (devices,))
            for c in chosen:
                if c not in names:
                    raise ValueError("Device %s is not a logical device of this process (%s). "
                                     "hint: tf.config.set_logical_device_configuration"
                                     % (c, ", ".join(names)))
        if cross_device_ops is not None and not isinstance(cross_device_ops, CrossDeviceOps):
            raise ValueError("cross_device_ops must be a tf.distribute.CrossDeviceOps, got %r"
                             % (cross_device_ops,))
        engine = _gpu_mirror.select_engine(chosen, _gpu_mirror.gpu_backend())
        self._cross_device_ops = cross_device_ops
        extended = StrategyExtended(self, tuple("/job:localhost/replica:0/task:0" + c for c in chosen))
        if ":GPU:" in chosen[0] and len(chosen) > 1:
            # one copy of every variable per GPU; gradients summed by NCCL (real GPUs) or the
            # thread engine (emulated GPUs, host memory)
            extended._engine = engine
            extended._mirrors = _gpu_mirror.Mirrors(extended.worker_devices)
            if engine == "nccl":
                _core.nccl_load(_gpu_mirror.nccl_library())  # a missing NCCL fails here, clearly
        super().__init__(extended)
        from mixprec import _logging

        _logging.get_logger().info("Using MirroredStrategy with devices %s",
                                   self._extended.worker_devices)


    def _on_variable_created(self, var):
        """Over several GPUs: the variable gets a copy on every replica's GPU."""
        mirrors = self._extended._mirrors
        if mirrors is not None and not _gpu_mirror.creating_copy():
            mirrors.add(var)


class OneDeviceStrategy(Strategy):
    """Everything on one device (``'/cpu:0'``, ``'/gpu:0'``): one replica."""

    def __init__(self, device):
        name = _device_name(device)
        super().__init__(StrategyExtended(self, ("/job:localhost/replica:0/task:0" + name,)))


class _DefaultStrategy(Strategy):
    _is_default = True

    def __init__(self):
        self._extended = StrategyExtended(self, ("/job:localhost/replica:0/task:0/device:CPU:0",))


_default = []


def _default_strategy():
    if not _default:
        _default.append(_DefaultStrategy())
    return _default[0]
