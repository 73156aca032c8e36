"""TensorFlow's indexing and rearranging ops: ``tf.gather`` (and ``tf.nn.embedding_lookup``),
``tf.tile``, ``tf.pad``, ``tf.split`` and ``tf.cumsum`` (a core op).

Thin faces over C ops: gather is its own op (csrc/ops_gather.c); tile, pad and split are
compositions of the core's reshape / broadcast_to / strided slice / concat / add, per
axis (their gradients come from those ops). The gradient of a gather is a dense tensor of
the params' shape (TensorFlow's is an IndexedSlices with the same values). Only TensorFlow's
checks of the Python arguments happen here; no element is touched in Python.
"""

import operator

import numpy as np

from mixprec import _core

__all__ = ["gather", "tile", "pad", "split", "cumsum"]


def embedding_lookup(params, ids, max_norm=None, name=None):
    """Rows of ``params`` at ``ids`` (tf.nn.embedding_lookup): a gather on axis 0."""
    del name
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise NotImplementedError("mixprec: embedding_lookup over %d sharded params; pass one "
                                      "tensor" % len(params))
        params = params[0]
    if max_norm is not None:
        raise NotImplementedError("mixprec: embedding_lookup with max_norm is not supported")
    return _core.gather(params, ids, 0)


def _axis_int(axis, what):
    if isinstance(axis, _core.Tensor):
        axis = axis.numpy()
    try:
        return operator.index(axis)
    except TypeError:
        raise TypeError("%s must be an integer, got %r" % (what, axis)) from None


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """Slices of ``params`` along ``axis`` at ``indices`` (GatherV2). An index outside
    ``[0, params.shape[axis])`` raises InvalidArgumentError (TensorFlow's CPU behaviour)."""
    del validate_indices, name
    batch_dims = _axis_int(batch_dims, "batch_dims")
    axis = batch_dims if axis is None else _axis_int(axis, "axis")
    if batch_dims != 0:  # batch axes: a gather_nd (mixprec/_array_extra.py)
        from mixprec._array_extra import gather_batched

        return gather_batched(params, indices, axis, batch_dims)
    return _core.gather(params, indices, axis)


def _tensor(x):
    if isinstance(x, _core.Variable):
        return x.read_value()
    return x if isinstance(x, _core.Tensor) else _core.convert_to_tensor(x)


def _ints(v, what):
    """A static list of Python ints from a list, array or (eager) tensor."""
    if isinstance(v, _core.Tensor):
        v = v.numpy()
    a = np.asarray(v)
    if a.dtype.kind not in "iu":
        raise TypeError("%s must be integers, got %r" % (what, v))
    return a.astype(np.int64)


def _invalid(msg):
    return _core.InvalidArgumentError(msg)


def _axis_slice(x, axis, start, stop, step=1):
    return x[(slice(None),) * axis + (slice(start, stop, step),)]


def tile(input, multiples, name=None):  # noqa: A002
    """``input`` repeated ``multiples[d]`` times along each axis d (Tile): per axis, a
    reshape to (.., 1, n, ..), a broadcast to (.., m, n, ..) and a reshape to (.., m n, ..)."""
    del name
    x = _tensor(input)
    m = _ints(multiples, "multiples").reshape(-1)
    if m.size != x.ndim:
        raise _invalid("Expected multiples argument to be a vector of length %d but got length %d"
                       % (x.ndim, m.size))
    for d, k in enumerate(m):
        if k < 0:
            raise _invalid("Expected multiples[%d] >= 0, but got %d" % (d, k))
    for d, k in enumerate(m):
        if k == 1:
            continue
        s = list(x.shape)
        x = _core.reshape(x, s[:d] + [1, s[d]] + s[d + 1:])
        x = _core.broadcast_to(x, s[:d] + [int(k), s[d]] + s[d + 1:])
        x = _core.reshape(x, s[:d] + [int(k) * s[d]] + s[d + 1:])
    return x if m.size and not (m == 1).all() else _core.identity(x)


def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    """Pads every axis by paddings[d] = (before, after) (Pad / MirrorPad): a concat, per
    axis, of filled blocks (CONSTANT) or reversed slices of the tensor (REFLECT, SYMMETRIC)."""
    del name
    x = _tensor(tensor)
    mode = str(mode).upper()
    if mode not in ("CONSTANT", "REFLECT", "SYMMETRIC"):
        raise ValueError('Value of argument `mode` expected to be one of "CONSTANT", "REFLECT", '
                         'or "SYMMETRIC". Received `mode` = %s' % mode)
    p = _ints(paddings, "paddings")
    if p.ndim != 2 or p.shape[1] != 2 or p.shape[0] != x.ndim:
        raise _invalid("The first dimension of paddings must be the rank of inputs%s [%s]"
                       % (list(p.shape), ",".join(str(d) for d in x.shape)))
    for d in range(x.ndim):
        a, b = int(p[d, 0]), int(p[d, 1])
        if a < 0 or b < 0:
            raise _invalid("Paddings must be non-negative: %d %d" % (a, b))
        n = x.shape[d]
        if mode == "REFLECT" and (a >= n or b >= n) and (a or b):
            raise _invalid("paddings must be less than the dimension size: %d, %d not less than %d"
                           % (a, b, n))
        if mode == "SYMMETRIC" and (a > n or b > n):
            raise _invalid("paddings must be no greater than the dimension size: %d, %d greater "
                           "than %d" % (a, b, n))
    value = None
    if mode == "CONSTANT":
        value = constant_values.numpy() if isinstance(constant_values, _core.Tensor) else \
            constant_values
        value = bool(value) if x.dtype.is_bool else value
    for d in range(x.ndim):
        a, b = int(p[d, 0]), int(p[d, 1])
        if not a and not b:
            continue
        n = x.shape[d]
        parts = []
        if mode == "CONSTANT":
            for k in (a, b):
                s = list(x.shape)
                s[d] = k
                parts.append(_core.fill(s, value, x.dtype) if k else None)
            before, after = parts
        elif mode == "REFLECT":  # mirror without the edge: x[a], .., x[1] | x | x[n-2], ..
            before = _axis_slice(x, d, a, 0, -1) if a else None
            after = _axis_slice(x, d, n - 2, (n - 2 - b) if n - 2 - b >= 0 else None, -1) \
                if b else None
        else:  # SYMMETRIC: with the edge: x[a-1], .., x[0] | x | x[n-1], ..
            before = _axis_slice(x, d, a - 1, None, -1) if a else None
            after = _axis_slice(x, d, n - 1, (n - 1 - b) if n - 1 - b >= 0 else None, -1) \
                if b else None
        x = _core.concat([t for t in (before, x, after) if t is not None], d)
    return x if p.any() else _core.identity(x)


def split(value, num_or_size_splits, axis=0, num=None, name=None):
    """Pieces of ``value`` along ``axis`` (Split / SplitV): strided slices of the core."""
    del num, name
    x = _tensor(value)
    axis = _axis_int(axis, "axis")
    r = x.ndim
    if not -r <= axis < r:
        raise _invalid("-input rank(-%d) <= split_dim < input rank (%d), but got %d" % (r, r, axis))
    axis %= r
    n = x.shape[axis]
    if isinstance(num_or_size_splits, (int, np.integer)) or (
            isinstance(num_or_size_splits, _core.Tensor) and num_or_size_splits.ndim == 0):
        k = int(_ints(num_or_size_splits, "num_or_size_splits"))
        if k <= 0 or n % k:
            raise _invalid("Number of ways to split should evenly divide the split dimension, but "
                           "got split_dim %d (size = %d) and num_split %d" % (axis, n, k))
        sizes = [n // k] * k
    else:
        sizes = [int(v) for v in _ints(num_or_size_splits, "num_or_size_splits").reshape(-1)]
        if sizes.count(-1) > 1:
            raise _invalid("There can only be one -1 in the input.")
        known = sum(v for v in sizes if v != -1)
        if (-1 not in sizes and known != n) or (-1 in sizes and known > n) or \
                any(v < -1 for v in sizes):
            raise _invalid("Determined shape must either match input shape along split_dim "
                           "exactly if fully specified, or be less than the size of the input "
                           "along split_dim if not fully specified.  Got: %d" % known)
        sizes = [n - known if v == -1 else v for v in sizes]
    out, start = [], 0
    for k in sizes:
        out.append(_axis_slice(x, axis, start, start + k))
        start += k
    return out


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Running sums along ``axis`` (Cumsum, a core op: sequential per column, floats summed
    in float64 and rounded once per output, integers exact with wrap)."""
    del name
    return _core.cumsum(_tensor(x), _axis_int(axis, "axis"), bool(exclusive), bool(reverse))
