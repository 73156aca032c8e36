"""Batch statistics for BatchNormalization beyond the plain batch moments: synchronized
moments (sums all-reduced over the replicas, as tf-keras' ``synchronized=True``), the
batch-renormalization correction (r, d), and the moving averages with one copy per replica
under a strategy (tf-keras' ON_READ variables). Composes mixprec ops (the arithmetic runs in
the C core); it must not decide layer bookkeeping (shapes, configs)."""

import threading

import numpy as _np

from mixprec import _core
from mixprec.distribute import _context


def _squeeze(t, axes):
    keep = [t.shape[d] for d in range(t.ndim) if d not in axes]
    return _core.reshape(t, keep)


def sync_moments(x, axes, keepdims):
    """(mean, variance) of float32 ``x`` over ``axes`` from sums, sums of squares and
    counts summed over the replicas of the current replica context (tf-keras'
    ``_sync_calculate_mean_and_var``): ``mean = sum / count``, ``variance =
    max(sum_sq / count - mean ** 2, 0)``. The sums go through the AllReduce op, so the
    gradient reaches every replica's inputs. With no replica context (cross-replica
    context) the plain moments."""
    from mixprec import nn as _nn

    ctx = _context.get_replica_context()
    if ctx is None:
        return _nn.moments(x, axes, keepdims=keepdims)
    local_sum = _core.reduce_sum(x, axes, keepdims=True)
    local_sq = _core.reduce_sum(_core.square(x), axes, keepdims=True)
    n = 1
    for a in axes:
        n *= x.shape[a]
    count = _core.fill(list(local_sum.shape), float(n), x.dtype)
    if ctx.num_replicas_in_sync > 1:
        y_sum, y_sq, count = ctx.strategy.extended._replica_sum_on_tape(
            ctx, [local_sum, local_sq, count])
    else:
        y_sum, y_sq = local_sum, local_sq
    # counts are whole numbers: dividing by max(count, 1) is divide_no_nan (0 for no rows)
    count = _core.maximum(count, _core.fill([], 1.0, x.dtype))
    mean = y_sum / count
    variance = _core.maximum(y_sq / count - _core.square(mean), _core.fill([], 0.0, x.dtype))
    if not keepdims:
        mean, variance = _squeeze(mean, axes), _squeeze(variance, axes)
    return mean, variance


# Under a strategy with several replicas in this process, tf-keras keeps one copy of each
# moving statistic per replica (ON_READ variables, MEAN aggregation): a replica updates and
# reads its own copy, the variable reads as the mean of the copies. mixprec's replicas share
# one variable, so the copies are hidden variables beside it (not tracked, not saved), with a
# fourth one, ``written``, holding what the last update wrote: where the variable differs
# from it (an assignment, set_weights, a restore), every copy restarts from the variable.
# That check is ops, so a traced strategy.run records reads and writes of the copies and
# its replays keep them (the same ops as the eager step: the same bits). Over GPUs (a copy
# of each variable per GPU) the copies are tensors kept here instead, eagerly.
_copies_lock = threading.Lock()


def masked_moments(x, mask, axes, keepdims):
    """tf.nn.weighted_moments with the mask (one rank below x) as frequency weights of
    whole feature vectors, as tf-keras' masked BatchNormalization: the mean and (biased)
    variance of the unmasked entries (0 where none is)."""
    w = _core.cast(mask, x.dtype)
    w = _core.reshape(w, list(w.shape) + [1])
    count = _core.reduce_sum(_core.broadcast_to(w, list(x.shape)), axes, keepdims=True)
    safe = _core.maximum(count, _core.cast(_core.constant(1e-30), x.dtype))
    nonzero = _core.cast(count > 0.0, x.dtype)  # div_no_nan: 0 where no entry counts
    mean = _core.reduce_sum(w * x, axes, keepdims=True) / safe * nonzero
    dist = _core.reduce_sum(w * _core.squared_difference(x, _core.stop_gradient(mean)), axes,
                            keepdims=True)
    variance = dist / safe * nonzero
    if not keepdims:
        mean, variance = _squeeze(mean, axes), _squeeze(variance, axes)
    return mean, variance


def _replica():
    """(local replica index, local replica count, strategy extended), or None outside
    several replicas."""
    ctx = _context._current_replica_context()
    if ctx is None:
        return None
    ext = ctx.strategy.extended
    n = ext._num_local
    return (ctx._replica_id, n, ext) if n > 1 else None


def _hidden_variable(value):
    """A variable outside any graph being recorded (made at once, whatever is traced) and
    outside the strategy (no GPU mirrors, no aggregation)."""
    token = _core.graph_suspend()
    prev = _context._set_replica_context(None)
    stack = _context._stack()
    saved = list(stack)
    del stack[:]
    try:
        return _core.Variable(_core.identity(value), trainable=False)
    finally:
        stack.extend(saved)
        _context._set_replica_context(prev)
        _core.graph_resume(token)


def _state(var, n):
    """The replicas' copies of var (hidden variables; made from its value at the first use
    or when the replica count changed); the caller holds _copies_lock."""
    st = var.__dict__.get("_mp_replica_copies")
    if st is None or len(st["copies"]) != n or "written" not in st or \
            not isinstance(st["written"], _core.Variable):
        current = var._peek()
        st = {"copies": [_hidden_variable(current) for _ in range(n)],
              "written": _hidden_variable(current)}
        var.__dict__["_mp_replica_copies"] = st
    return st


def _effective(var, st):
    """The copies' values as ops: each copy, or the variable's value everywhere when it
    changed since the last update wrote it."""
    current = var.value()
    same = _core.reduce_all(_core.equal(current, st["written"].value()),
                            list(range(current.ndim)), False)
    return current, [_core.where(same, c.value(), current) for c in st["copies"]]


def _copies_eager(var, n):
    """Over GPUs: the copies as tensors kept here (eagerly), restarted from the variable's
    value when it changed elsewhere; the caller holds _copies_lock."""
    if _core.graph_recording() is not None:
        _core.graph_break("tf.distribute: per-replica batch-norm statistics over GPUs")
    st = var.__dict__.get("_mp_replica_copies_gpu")
    current = var.value()
    if st is not None and len(st["copies"]) == n and \
            _np.array_equal(current.numpy(), st["written"]):
        return st
    st = {"copies": [current + 0.0 for _ in range(n)], "written": current.numpy()}
    var.__dict__["_mp_replica_copies_gpu"] = st
    return st


def read(var):
    """var as this replica sees it: its own copy under several replicas (tf-keras' replicas
    read their ON_READ copy, in training and inference alike), else var itself."""
    rep = _replica()
    if rep is None:
        return var
    i, n, ext = rep
    with _copies_lock:
        if ext._mirrors is not None:
            if "_mp_replica_copies_gpu" not in var.__dict__:
                return var
            return _copies_eager(var, n)["copies"][i]
        if "_mp_replica_copies" not in var.__dict__:
            return var
        return _effective(var, _state(var, n))[1][i]


def update(var, fn):
    """var <- fn(var) (this replica's copy under several replicas; the variable then holds
    the copies' mean); returns the new value as this replica sees it."""
    rep = _replica()
    if rep is None:
        var.assign(fn(var.value()))
        return var.value()
    i, n, ext = rep
    with _copies_lock:
        if ext._mirrors is not None:
            st = _copies_eager(var, n)
            new = _core.cast(fn(st["copies"][i]), var.dtype)
            st["copies"][i] = new
            copies = st["copies"]
        else:
            st = _state(var, n)
            _, copies = _effective(var, st)
            new = _core.cast(fn(copies[i]), var.dtype)
            copies[i] = new
            for c, v in zip(st["copies"], copies):
                c.assign(v)
        total = copies[0]
        for c in copies[1:]:
            total = total + c
        var.assign(total / float(n))
        if ext._mirrors is not None:
            st["written"] = var.value().numpy()
        else:
            st["written"].assign(var.value())
        return new


def moving_average(var, value, momentum):
    """``var -= (var - value) * (1 - momentum)`` (tf-keras' AssignMovingAvg); the new value."""
    decay = 1.0 - momentum
    value = _core.cast(value, var.dtype)
    return update(var, lambda v: v - (v - value) * decay)


def renorm_snapshot(layer):
    """(renorm_mean, renorm_stddev) as this replica sees them now (copies: an update of the
    variable must not change them)."""
    return read(layer.renorm_mean) + 0.0, read(layer.renorm_stddev) + 0.0


def renorm_correction(layer, snapshot, mean, variance):
    """(r, d, mean, variance) of batch renormalization (Ioffe 2017), as tf-keras:
    ``r = sqrt(var + eps) / max(renorm_stddev, sqrt(eps))`` and ``d = (mean - renorm_mean) /
    max(renorm_stddev, sqrt(eps))``, clipped to renorm_clipping; then renorm_mean and
    renorm_stddev (``snapshot``: their values before this step) move towards the batch's with
    renorm_momentum. Training only (inference uses the moving statistics); r
    and d are constants for the gradient."""
    eps = layer.epsilon
    stddev = _core.sqrt(variance + eps)
    renorm_mean, renorm_stddev = snapshot
    renorm_stddev = _core.maximum(renorm_stddev, _core.fill([], eps ** 0.5, stddev.dtype))
    r = stddev / renorm_stddev
    d = (mean - renorm_mean) / renorm_stddev
    clip = layer.renorm_clipping
    if clip.get("rmin") is not None:
        r = _core.maximum(r, _core.fill([], float(clip["rmin"]), r.dtype))
    if clip.get("rmax") is not None:
        r = _core.minimum(r, _core.fill([], float(clip["rmax"]), r.dtype))
    if clip.get("dmax") is not None:
        dmax = float(clip["dmax"])
        d = _core.minimum(_core.maximum(d, _core.fill([], -dmax, d.dtype)),
                          _core.fill([], dmax, d.dtype))
    moving_average(layer.renorm_mean, _core.stop_gradient(mean), layer.renorm_momentum)
    moving_average(layer.renorm_stddev, _core.stop_gradient(stddev), layer.renorm_momentum)
    return _core.stop_gradient(r), _core.stop_gradient(d), mean, variance
