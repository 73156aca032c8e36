"""The optimizer's side of a strategy: in a replica context, gradients are summed across
replicas (the C collectives) and the update runs once, in ``merge_call``; the fused step
(finite check, loss scale, update) then sees the summed gradients, so a NaN on one replica
skips the step on every replica. Outside a multi-replica context nothing changes."""

import sys

from mixprec.distribute.values import select_replica


def _replica_context():
    ctx_mod = sys.modules.get("mixprec.distribute._context")
    if ctx_mod is None:
        return None
    ctx = ctx_mod._current_replica_context()
    if ctx is None or ctx.strategy.num_replicas_in_sync <= 1:
        return None
    return ctx


def mirror_state(state):
    """In a replica of a strategy over several GPUs: the variables ``state()`` gets (an
    optimizer's iterations, the loss-scale state, made outside Python's Variable) are given
    their per-GPU copies now, before a replica reads them."""
    ctx = _replica_context()
    mirrors = ctx.strategy.extended._mirrors if ctx is not None else None
    if mirrors is not None:
        for v in state():
            mirrors.add(v)


def apply_in_replica(grads_and_vars, apply_fn, aggregate=True, state=None):
    """``apply_fn(pairs)`` after a SUM all-reduce of the gradients when running as one of
    several replicas; called directly otherwise. ``state()``: the optimizer's own state
    variables (iterations, the loss-scale state), mirrored over GPUs before the update."""
    ctx = _replica_context()
    if ctx is None:
        return apply_fn(grads_and_vars)
    from mixprec.distribute._context import ReduceOp

    pairs = [tuple(p) if isinstance(p, (list, tuple)) else p for p in grads_and_vars]
    if aggregate:
        idx = [i for i, p in enumerate(pairs)
               if isinstance(p, tuple) and len(p) == 2 and p[0] is not None]
        if idx:
            reduced = ctx.all_reduce(ReduceOp.SUM, [pairs[i][0] for i in idx])
            for i, g in zip(idx, reduced):
                pairs[i] = (g, pairs[i][1])

    def merge_fn(strategy, per_replica_pairs):
        mirrors = strategy.extended._mirrors
        if mirrors is None:
            # every replica holds the same summed gradients: the update runs once, with
            # replica 0's (the variables' copies are one storage on a host)
            return apply_fn(select_replica(0, per_replica_pairs))
        # one copy per GPU: each replica's copies take its (identical) summed gradients
        for v in (state() if state is not None else ()):
            mirrors.add(v)
        return mirrors.for_each_replica(lambda i: apply_fn(select_replica(i, per_replica_pairs)))

    return ctx.merge_call(merge_fn, args=(pairs,))
