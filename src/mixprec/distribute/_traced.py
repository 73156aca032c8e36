"""strategy.run recorded into a traced tf.function's graph (replicas on logical CPUs, one
process): the replicas take turns on their threads, each recording into the caller's
graph, merge_call hands over between them, and an all-reduce is a sum of ops in rank order.
Orchestration only: every number is an op of the graph; the thread engine is not used here.
"""

from mixprec import _core
from mixprec.distribute import _context
from mixprec.distribute._context import ReplicaContext
from mixprec.distribute._rendezvous import MERGE_MISMATCH, Rendezvous
from mixprec.distribute.values import DistributedValues, regroup, select_replica


class ReplicaAborted(RuntimeError):
    """Another replica failed while this one waited (the caller raises that one's error)."""


class Untraceable(Exception):
    """Raised in a traced replica by a construct that needs the replicas to run at once;
    strategy.run then runs eagerly (none left today: synchronized batch normalization
    traces through sums_on_tape)."""


class TracedRun(Rendezvous):
    """One ``strategy.run`` recorded into a traced function's graph (TensorFlow's model in a
    tf.function): the replicas run one at a time, in rank order, each on its replica thread
    recording into the caller's graph, so the graph holds every replica's ops in order. A
    replica hands over to the next at ``merge_call`` (and when it returns); the last to
    arrive runs the merge function in cross-replica context, then replica 0 resumes."""

    turn = 0  # the replica recording now

    def _wait(self, pred):
        """Under cv: until pred() (raises ReplicaAborted when another replica failed)."""
        while self.aborted is None and not pred():
            if not self.cv.wait(self.timeout):
                self.aborted = ("a traced replica waited %g s for its turn" % self.timeout)
                self.cv.notify_all()
        if self.aborted is not None:
            raise ReplicaAborted(self.aborted)

    def wait_turn(self, i):
        with self.cv:
            self._wait(lambda: self.turn == i)

    def finish(self, i):
        with self.cv:
            self.finished += 1
            if self.arrived and self.aborted is None:  # others wait in a merge_call
                self.aborted = MERGE_MISMATCH
            self.turn = i + 1
            self.cv.notify_all()


def call_for_each_replica(ext, fn, args, kwargs):
    """strategy.run while a tf.function traces: every replica's ops recorded into the
    recording graph, replica after replica (TracedRun), so a replay runs them all in C.
    The values are real (a trace is the call), so a graph break anywhere just lets the
    rest of the call finish eagerly, still in turns."""
    from mixprec import _function
    from mixprec.distribute import _strategy

    strategy = ext._container
    n = ext._num_local
    run = TracedRun(n, _strategy._timeout())
    token = _core.graph_suspend()  # the recording graph (a loop body's, inside a loop)
    _core.graph_resume(token)
    results = [None] * n
    errors = [None] * n
    sites = [None] * n

    def body(i):
        try:
            run.wait_turn(i)
        except BaseException as e:  # noqa: BLE001 — another replica failed first
            errors[i] = e
            return
        if i:
            _core.graph_resume(token)
        ctx = ReplicaContext(strategy, i, run)
        prev_ctx = _context._set_replica_context(ctx)
        stack = _context._stack()
        stack.append(strategy)
        try:
            results[i] = fn(*select_replica(i, args), **select_replica(i, kwargs))
        except BaseException as e:  # noqa: BLE001 — re-raised by the caller
            errors[i] = e
            run.abort("replica %d raised %s: %s" % (i, type(e).__name__, e))
        finally:
            stack.pop()
            _context._set_replica_context(prev_ctx)
            if i:
                _core.graph_suspend()
                sites[i] = getattr(_function._state, "break_site", None)
                _function._state.break_site = None
            run.finish(i)

    ext._replica_threads().run(body)
    site = next((x for x in sites if x is not None), None)
    if site is not None and getattr(_function._state, "break_site", None) is None:
        _function._state.break_site = site  # the warning names the replica's line
    if any(e is not None for e in errors):
        if any(isinstance(e, Untraceable) for e in errors):
            # the graph broke; the replicas run again, at once, on the thread engine
            return ext._call_for_each_replica_eager(fn, args, kwargs)
        primary = [e for e in errors if e is not None
                   and not isinstance(e, (_core.UnavailableError, ReplicaAborted))]
        raise (primary or [e for e in errors if e is not None])[0]
    return regroup(results)


def merge_call(ext, ctx, merge_fn, args, kwargs):
    """merge_call in a traced run: hand over to the next replica; the last runs the
    merge function (recorded once) and hands back to replica 0."""
    run = ctx._run
    rid = ctx._replica_id
    with run.cv:
        if run.aborted is not None:
            raise ReplicaAborted(run.aborted)
        if run.finished:
            run.aborted = MERGE_MISMATCH
            run.cv.notify_all()
            raise RuntimeError(run.aborted)
        run.slots[rid] = (args, kwargs, merge_fn)
        run.arrived += 1
        gen = run.gen
        if run.arrived < run.n:
            run.turn = rid + 1
            run.cv.notify_all()
            run._wait(lambda: run.gen != gen and run.turn == rid)
        else:
            a, k = ext._gather_merge_args(run)
            first_fn = run.slots[0][2]  # replica 0's, as TensorFlow
            try:
                run.result, run.error = ext._cross_replica_call(first_fn, a, k), None
            except BaseException as e:  # noqa: BLE001 — every replica re-raises it
                run.result, run.error = None, e
            run.arrived = 0
            run.slots = [None] * run.n
            run.gen += 1
            run.turn = 0
            run.cv.notify_all()
            run._wait(lambda: run.turn == rid)
        result, error = run.result, run.error
    if error is not None:
        raise error
    return select_replica(rid, result)


def rank_order_sums(strategy, gathered):
    """Merge function of an all-reduce in a traced run: each tensor summed over the replicas
    in rank order, 16-bit widened to float32 and rounded once (the thread engine's
    arithmetic, so traced and eager steps agree bit for bit). Ops, so the graph records
    them; every replica gets the same sums."""
    n = strategy.extended._num_local
    out = []
    for x in gathered:
        parts = list(x.values) if isinstance(x, DistributedValues) else [x] * n
        dt = parts[0].dtype
        narrow = dt.size == 2
        if narrow:
            parts = [_core.cast(p, "float32") for p in parts]
        total = parts[0]
        for p in parts[1:]:
            total = _core.add(total, p)
        out.append(_core.cast(total, dt) if narrow else total)
    return out


def sums_on_tape(ctx, tensors):
    """The replicas' sums of ``tensors`` in a traced run, differentiable across replicas
    (synchronized batch normalization): a ``tf.custom_gradient`` whose forward and whose
    gradient are each a merge_call of ``rank_order_sums``. Every replica's tape.gradient
    reaches the node once, so the replicas hand over inside their backward passes in the
    same order as in their forward passes; the graph records the sums of both, and a replay
    runs them without Python. The same arithmetic as the eager AllReduce op and its
    gradient (csrc/grad.c), so traced and eager steps agree bit for bit."""
    from mixprec._custom_gradient import custom_gradient

    @custom_gradient
    def summed(*xs):
        ys = ctx.merge_call(rank_order_sums, args=(list(xs),))

        def grad(*dys):
            return list(ctx.merge_call(rank_order_sums, args=(list(dys),)))
        return list(ys), grad
    return list(summed(*tensors))
