"""Gradient clipping by norm: ``tf.clip_by_norm``, ``tf.clip_by_global_norm`` and
``tf.linalg.global_norm``, composed from core ops as TensorFlow composes them (the sums
and square roots run in C; the Python loop is over the list of tensors, never elements).
"""

import collections.abc

from mixprec import _core, _ops

__all__ = ["clip_by_norm", "clip_by_global_norm", "global_norm"]


def _check_sequence(t_list):
    if not isinstance(t_list, collections.abc.Sequence) or isinstance(t_list, str):
        raise TypeError("`t_list` should be a sequence of tensors. Received %s."
                        % type(t_list))


def _as_tensor(v):
    return v.value() if isinstance(v, _core.Variable) else _core.convert_to_tensor(v)


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """``t * clip_norm / max(l2norm(t, axes), clip_norm)``; zero norms stay zero."""
    t = _as_tensor(t)
    clip_norm = _ops.cast(_core.convert_to_tensor(clip_norm), t.dtype)
    l2sum = _ops.reduce_sum(t * t, axes, True)
    pred = l2sum > 0
    # the safe square root keeps the gradient finite at a zero norm (TensorFlow's way)
    l2sum_safe = _ops.where(pred, l2sum, _ops.ones_like(l2sum))
    l2norm = _ops.where(pred, _ops.sqrt(l2sum_safe), l2sum)
    return _ops.identity(t * clip_norm / _ops.maximum(l2norm, clip_norm))


def global_norm(t_list, name=None):
    """sqrt(sum of the squares of every element of every tensor); ``None`` entries skipped;
    the tensors must share a dtype (TensorFlow stacks their half squared norms)."""
    _check_sequence(t_list)
    values = [_as_tensor(t) for t in t_list if t is not None]
    if not values:
        return _ops.constant(0.0)
    dtype = values[0].dtype
    for i, v in enumerate(values):
        if v.dtype != dtype:
            raise _core.InvalidArgumentError(
                "cannot compute Pack as input #%d(zero-based) was expected to be a %s tensor "
                "but is a %s tensor [Op:Pack] name: stack" % (i, dtype.name, v.dtype.name))
    half_squared = [_ops.reduce_sum(v * v) / _ops.constant(2.0, dtype) for v in values]
    total = _ops.reduce_sum(_ops.stack(half_squared))
    return _ops.sqrt(total * _ops.constant(2.0, dtype))


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """(``t * clip_norm / max(global_norm, clip_norm)`` for each t, the global norm);
    ``None`` entries stay ``None``; an infinite or NaN norm makes every output NaN."""
    _check_sequence(t_list)
    use_norm = global_norm(t_list) if use_norm is None else _core.convert_to_tensor(use_norm)
    dt = use_norm.dtype
    clip_norm = _ops.cast(_core.convert_to_tensor(clip_norm), dt)
    scale_for_finite = clip_norm * _ops.minimum(_ops.constant(1.0, dt) / use_norm,
                                                 _ops.constant(1.0, dt) / clip_norm)
    # inf - inf / NaN propagate: a non-finite norm gives NaN everywhere (as TensorFlow)
    scale = scale_for_finite + (use_norm - use_norm)
    out = []
    for t in t_list:
        if t is None:
            out.append(None)
            continue
        v = _as_tensor(t)
        out.append(_ops.identity(v * _ops.cast(scale, v.dtype)))
    return out, use_norm
