"""Batch statistics for BatchNormalization beyond the plain batch moments: synchronized
moments (sums all-reduced over the replicas, as tf-keras' ``synchronized=True``) and the
batch-renormalization correction (r, d) with its moving averages. Composes mixprec ops (the
arithmetic runs in the C core); it must not decide layer bookkeeping (shapes, configs)."""

from mixprec import _core
from mixprec.distribute import _context


def _squeeze(t, axes):
    keep = [t.shape[d] for d in range(t.ndim) if d not in axes]
    return _core.reshape(t, keep)


def sync_moments(x, axes, keepdims):
    """(mean, variance) of float32 ``x`` over ``axes`` from sums, sums of squares and
    counts all-reduced over the replicas of the current replica context (tf-keras'
    ``_sync_calculate_mean_and_var``): ``mean = sum / count``, ``variance =
    max(sum_sq / count - mean ** 2, 0)``. With no replica context (cross-replica
    context) the plain moments. Several replicas in training raise NotImplementedError:
    the gradient through the all-reduce is not on the tape yet (docs/porting.md)."""
    from mixprec import nn as _nn

    ctx = _context.get_replica_context()
    if ctx is None:
        return _nn.moments(x, axes, keepdims=keepdims)
    if ctx.num_replicas_in_sync > 1:
        raise NotImplementedError(
            "BatchNormalization(synchronized=True) cannot train under a strategy with %d "
            "replicas in mixprec yet: the gradient of the cross-replica statistics is not "
            "implemented. Use synchronized=False (each replica normalises with its own "
            "batch), or train on one replica." % ctx.num_replicas_in_sync)
    local_sum = _core.reduce_sum(x, axes, keepdims=True)
    local_sq = _core.reduce_sum(_core.square(x), axes, keepdims=True)
    n = 1
    for a in axes:
        n *= x.shape[a]
    count = _core.fill(list(local_sum.shape), float(n), x.dtype)
    y_sum, y_sq, count = ctx.all_reduce("SUM", [local_sum, local_sq, count])
    # counts are whole numbers: dividing by max(count, 1) is divide_no_nan (0 for no rows)
    count = _core.maximum(count, _core.fill([], 1.0, x.dtype))
    mean = y_sum / count
    variance = _core.maximum(y_sq / count - _core.square(mean), _core.fill([], 0.0, x.dtype))
    if not keepdims:
        mean, variance = _squeeze(mean, axes), _squeeze(variance, axes)
    return mean, variance


def moving_average(var, value, momentum):
    """``var -= (var - value) * (1 - momentum)`` (tf-keras' AssignMovingAvg); the new value."""
    decay = 1.0 - momentum
    var.assign_sub((var.value() - _core.cast(value, var.dtype)) * decay)
    return var.value()


def renorm_correction(layer, mean, variance):
    """(r, d, mean, variance) of batch renormalization (Ioffe 2017), as tf-keras:
    ``r = sqrt(var + eps) / max(renorm_stddev, sqrt(eps))`` and ``d = (mean - renorm_mean) /
    max(renorm_stddev, sqrt(eps))``, clipped to renorm_clipping; then renorm_mean and
    renorm_stddev move towards the batch's with renorm_momentum. Training only (inference
    uses the moving statistics); r and d are constants for the gradient."""
    eps = layer.epsilon
    stddev = _core.sqrt(variance + eps)
    renorm_mean = layer.renorm_mean.value()
    renorm_stddev = _core.maximum(layer.renorm_stddev.value(),
                                  _core.fill([], eps ** 0.5, stddev.dtype))
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
