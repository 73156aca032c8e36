"""TensorFlow's everyday array names beyond the core set: sorting (tf.sort, tf.argsort,
tf.math.top_k, tf.unique), scatter/gather by coordinates (tf.gather_nd, tf.scatter_nd,
tf.tensor_scatter_nd_*, tf.gather with batch_dims), rearranging (tf.reverse, tf.roll,
tf.repeat, tf.reverse_sequence, space_to_depth ...), masks and grids (tf.boolean_mask,
tf.sequence_mask, tf.eye, tf.linspace, tf.meshgrid), tf.tensordot, tf.norm, tf.searchsorted
and the functional loops (tf.map_fn, tf.foldl, tf.foldr, tf.scan, tf.vectorized_map).

A thin face: the numbers are C ops (GatherNd, TensorScatter*, TopKV2, Unique, Where,
ReverseV2, Roll in csrc/ops_array.c, csrc/ops_sort.c) or compositions of C ops where
TensorFlow composes too; only TensorFlow's argument checks happen here. No element is read
in Python, except where TensorFlow itself needs a value to know a shape (tf.dynamic_stitch)
or checks indices (eagerly only).
"""

import collections
import numbers

import numpy as np

from mixprec import _core
from mixprec import _nest
from mixprec._dtypes import as_dtype, bool as _bool, float32, int32, int64

__all__ = [
    "sort", "argsort", "top_k", "unique", "unique_with_counts", "reverse", "roll", "repeat",
    "gather_nd", "scatter_nd", "tensor_scatter_nd_update", "tensor_scatter_nd_add",
    "tensor_scatter_nd_sub", "tensor_scatter_nd_min", "tensor_scatter_nd_max", "boolean_mask",
    "eye", "linspace", "meshgrid", "sequence_mask", "tensordot", "norm", "searchsorted",
    "space_to_batch_nd", "batch_to_space", "unravel_index", "identity_n", "shape_n",
    "broadcast_dynamic_shape", "broadcast_static_shape", "dynamic_partition", "dynamic_stitch",
    "reverse_sequence", "map_fn", "foldl", "foldr", "scan", "vectorized_map",
]

TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])
Unique = collections.namedtuple("Unique", ["y", "idx"])
UniqueWithCounts = collections.namedtuple("UniqueWithCounts", ["y", "idx", "count"])


def _t(x, dtype=None):
    if isinstance(x, _core.Variable):
        x = x.read_value()
    if isinstance(x, _core.Tensor):
        return x
    return _core.convert_to_tensor(x, dtype) if dtype is not None else _core.convert_to_tensor(x)


def _invalid(msg):
    return _core.InvalidArgumentError(msg)


def _static_int(v, what):
    if isinstance(v, _core.Tensor):
        v = v.numpy()
    a = np.asarray(v)
    if a.ndim != 0 or a.dtype.kind not in "iu":
        raise TypeError("%s must be an integer, got %r" % (what, v))
    return int(a)


def _static_ints(v, what):
    if isinstance(v, _core.Tensor):
        v = v.numpy()
    a = np.asarray(v)
    if a.size and a.dtype.kind not in "iu":
        raise TypeError("%s must be integers, got %r" % (what, v))
    return [int(i) for i in a.reshape(-1)]


def _op(name, inputs, i0=0, i1=0, dtype=None, ints=None):
    return _core.array_op(name, list(inputs), int(i0), int(i1), dtype, ints)


def _traced(x):
    return isinstance(x, _core.Tensor) and _core.graph_is_traced(x)


def _index_dtype(dtype, what):
    dt = as_dtype(dtype)
    if dt not in (int32, int64):
        raise TypeError("%s must be tf.int32 or tf.int64, got %s" % (what, dt.name))
    return dt


# ------------------------------------------------------------------ gather_nd / scatter_nd


def _batch_coordinates(indices, batch_dims):
    """indices (B..., I..., K) with the batch coordinates put in front of K: (B..., I..., b+K)."""
    lead = list(indices.shape[:-1])
    parts = []
    for d in range(batch_dims):
        shape = [1] * len(lead)
        shape[d] = lead[d]
        r = _core.reshape(_core.range(0, lead[d], 1, indices.dtype), shape)
        parts.append(_core.reshape(_core.broadcast_to(r, lead), lead + [1]))
    return _core.concat(parts + [indices], len(lead))


def gather_nd(params, indices, batch_dims=0, name=None):
    """Slices of ``params`` at the index vectors of ``indices``' last axis (GatherNd); with
    ``batch_dims`` b, the first b axes of both are batch axes (TensorFlow's coordinates)."""
    del name
    params, indices = _t(params), _t(indices)
    b = _static_int(batch_dims, "batch_dims")
    if b < 0:
        raise ValueError("batch_dims must be non-negative, got %d" % b)
    if b == 0:
        return _op("gather_nd", [params, indices])
    if b >= indices.ndim:
        raise ValueError("batch_dims = %d must be less than rank(indices) = %d" % (b, indices.ndim))
    if b >= params.ndim:
        raise ValueError("batch_dims = %d must be less than rank(params) = %d" % (b, params.ndim))
    for d in range(b):
        if params.shape[d] != indices.shape[d]:
            raise ValueError("params.shape[:batch_dims] %s and indices.shape[:batch_dims] %s must "
                             "match" % (list(params.shape[:b]), list(indices.shape[:b])))
    if indices.dtype not in (int32, int64):
        return _op("gather_nd", [params, indices])  # reports the dtype as GatherNd does
    return _op("gather_nd", [params, _batch_coordinates(indices, b)])


def gather_batched(params, indices, axis, batch_dims):
    """tf.gather with batch_dims > 0 (GatherV2's batch axes): the gathered axis moved next to
    the batch axes, a gather_nd with batch_dims, and the result's axes put in TF's order."""
    params, indices = _t(params), _t(indices)
    if axis == 0:  # TensorFlow's kernel: a given axis of 0 gathers rows, ignoring batch_dims
        return _core.gather(params, indices, 0)
    b = batch_dims
    if b < 0:
        b += indices.ndim
    if not 0 <= b <= indices.ndim:
        raise ValueError("batch_dims (%d) must be in [-%d, %d]" % (batch_dims, indices.ndim,
                                                                    indices.ndim))
    if axis < 0:
        axis += params.ndim
    if not 0 <= axis < params.ndim:
        raise _invalid("Expected axis in the range [%d, %d), but got %d"
                       % (-params.ndim, params.ndim, axis))
    if b > axis:
        raise _invalid("batch_dims (%d) must be less than or equal to axis (%d)." % (b, axis))
    for d in range(b):
        if params.shape[d] != indices.shape[d]:
            raise _invalid("params.shape[%d]: %d should be equal to indices.shape[%d]: %d"
                           % (d, params.shape[d], d, indices.shape[d]))
    if b == 0:
        return _core.gather(params, indices, axis)
    perm = list(range(b)) + [axis] + [d for d in range(b, params.ndim) if d != axis]
    moved = _core.transpose(params, perm) if perm != list(range(params.ndim)) else params
    r = gather_nd(moved, _core.reshape(indices, list(indices.shape) + [1]), batch_dims=b)
    n_i, n_o = indices.ndim - b, axis - b
    if not n_o or not n_i:
        return r
    order = list(range(b)) + [b + n_i + j for j in range(n_o)] + [b + j for j in range(n_i)]
    order += list(range(len(order), r.ndim))
    return _core.transpose(r, order)


def _scatter(mode, tensor, indices, updates):
    tensor = _t(tensor)
    indices = _t(indices)
    updates = _t(updates, tensor.dtype)
    return _op("tensor_scatter_" + mode, [tensor, indices, updates])


def tensor_scatter_nd_update(tensor, indices, updates, name=None):
    """A copy of ``tensor`` with ``updates`` written at ``indices`` (the last duplicate wins)."""
    del name
    return _scatter("update", tensor, indices, updates)


def tensor_scatter_nd_add(tensor, indices, updates, name=None):
    del name
    return _scatter("add", tensor, indices, updates)


def tensor_scatter_nd_sub(tensor, indices, updates, name=None):
    del name
    return _scatter("sub", tensor, indices, updates)


def tensor_scatter_nd_min(tensor, indices, updates, name=None):
    del name
    return _scatter("min", tensor, indices, updates)


def tensor_scatter_nd_max(tensor, indices, updates, name=None):
    del name
    return _scatter("max", tensor, indices, updates)


def scatter_nd(indices, updates, shape, name=None):
    """``updates`` summed into zeros of ``shape`` at ``indices`` (ScatterNd)."""
    del name
    indices, updates = _t(indices), _t(updates)
    dims = _static_ints(shape, "shape")
    for d in dims:
        if d < 0:
            raise _invalid("Dimension %d must be >= 0" % d)
    if indices.ndim >= 1:
        lead = indices.ndim - 1
        if updates.ndim < lead or list(updates.shape[:lead]) != list(indices.shape[:lead]):
            raise _invalid("Dimensions [0,%d) of indices[shape=[%s]] must match dimensions [0,%d) "
                           "of updates[shape=[%s]]" % (
                               lead, ",".join(map(str, indices.shape)), lead,
                               ",".join(map(str, updates.shape))))
    zeros = _core.fill(dims, False if updates.dtype == _bool else 0, updates.dtype)
    return _op("tensor_scatter_update" if updates.dtype == _bool else "tensor_scatter_add",
               [zeros, indices, updates])


# ------------------------------------------------------------------ sorting


def _take_last(x, idx):
    """x[..., idx[..., j]] along the last axis: a gather of the flat positions
    row * n + idx (the indices come from TopKV2, so they are in range)."""
    n, k = x.shape[-1], idx.shape[-1]
    rows = int(np.prod(x.shape[:-1])) if x.ndim > 1 else 1
    dt = int64 if rows * n >= 2**31 else int32
    i2 = _core.reshape(_core.cast(idx, dt) if idx.dtype != dt else idx, [rows, k])
    offs = _core.multiply(_core.range(0, rows, 1, dt), _core.constant(n, dt))
    flat = _core.add(i2, _core.reshape(offs, [rows, 1]))
    out = _core.gather(_core.reshape(x, [-1]), flat, 0)
    return _core.reshape(out, list(idx.shape))


def top_k(input, k=1, sorted=True, index_type=int32, name=None):  # noqa: A002
    """The ``k`` largest entries of the last axis and their indices (TopKV2): equal values in
    index order. ``sorted=False`` returns them sorted too (TensorFlow leaves the order open)."""
    del sorted, name
    x = _t(input)
    k = _static_int(k, "k")
    idx = _op("top_k_indices", [x], k, 1, _index_dtype(index_type, "index_type"))
    return TopKV2(_take_last(x, idx) if x.ndim else x, idx)


def in_top_k(targets, predictions, k, name=None):
    """Whether each row's prediction for its target class is among the ``k`` largest (InTopKV2:
    ties count as inside; False for a target out of range or a row with a non-finite value)."""
    del name
    t, p = _t(targets), _t(predictions)
    if t.dtype not in (int32, int64):
        raise _invalid("Value for attr 'T' of %s is not in the list of allowed values: int32, int64"
                       % t.dtype.name)
    if p.dtype != float32:
        raise _invalid("cannot compute InTopKV2 as input #0(zero-based) was expected to be a float "
                       "tensor but is a %s tensor" % p.dtype.name)
    if p.ndim != 2 or t.ndim != 1 or t.shape[0] != p.shape[0]:
        raise _invalid("predictions must be 2-dimensional and targets 1-dimensional with as many "
                       "entries as predictions has rows, got %s and %s"
                       % (list(p.shape), list(t.shape)))
    k = _t(k)
    classes = p.shape[1]
    valid = _core.logical_and(_core.greater_equal(t, _core.constant(0, t.dtype)),
                              _core.less(t, _core.constant(classes, t.dtype)))
    safe = _core.where(valid, t, _core.constant(0, t.dtype))
    if classes:
        target = _take_last(p, _core.reshape(safe, [-1, 1]))
        above = _core.reduce_sum(_core.cast(_core.greater(p, target), k.dtype), [1])
        inside = _core.less(above, k)
        finite = _core.reduce_all(_core.is_finite(p), [1])
        return _core.logical_and(_core.logical_and(inside, valid), finite)
    return _core.fill([p.shape[0]], False, _bool)


def _direction(direction):
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError("Argument `direction` should be one of ASCENDING, DESCENDING. Received: "
                         "direction=%s" % (direction,))
    return 1 if direction == "DESCENDING" else 0


def _sorted_indices(values, axis, direction):
    x = _t(values)
    desc = _direction(direction)
    if x.dtype == _bool:
        raise _invalid("Value for attr 'T' of bool is not in the list of allowed values: bfloat16, "
                       "half, float, double, int8, int16, int32, int64, complex64, complex128")
    axis = _static_int(axis, "axis")
    if x.ndim == 0:
        raise ValueError("Shape must be at least rank 1 but is rank 0 for sort")
    if not -x.ndim <= axis < x.ndim:
        raise _invalid("slice index %d of dimension 0 out of bounds." % axis)
    axis %= x.ndim
    perm = None
    if axis != x.ndim - 1:
        perm = list(range(x.ndim))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        x = _core.transpose(x, perm)
    idx = _op("top_k_indices", [x], x.shape[-1], desc, int32)
    return x, idx, perm


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """``values`` sorted along ``axis`` (TensorFlow's tf.sort; stable, NaN above +inf)."""
    del name
    x, idx, perm = _sorted_indices(values, axis, direction)
    out = _take_last(x, idx)
    return _core.transpose(out, perm) if perm else out


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """The int32 indices that sort ``values`` along ``axis`` (always stable)."""
    del stable, name
    _, idx, perm = _sorted_indices(values, axis, direction)
    return _core.transpose(idx, perm) if perm else idx


def unique(x, out_idx=int32, name=None):
    """The unique values of a 1-D tensor in order of first appearance and, per element, the
    index of its value in them (Unique)."""
    del name
    x = _t(x)
    dt = _index_dtype(out_idx, "out_idx")
    idx = _op("unique", [x], 0, 0, dt)
    first = _op("unique", [x], 1, 0, int64)
    return Unique(_core.gather(x, first, 0), idx)


def unique_with_counts(x, out_idx=int32, name=None):
    del name
    x = _t(x)
    dt = _index_dtype(out_idx, "out_idx")
    y, idx = unique(x, dt)
    return UniqueWithCounts(y, idx, _op("unique", [x], 2, 0, dt))


def where_indices(condition):
    """tf.where(condition): the int64 coordinates of the True (nonzero) elements (Where)."""
    return _op("where_indices", [_t(condition)])


# ------------------------------------------------------------------ rearranging


def _axes_list(axis, rank, opname):
    axes = _static_ints(axis, "axis")
    seen = set()
    out = []
    for i, a in enumerate(axes):
        if not -rank <= a < rank:
            raise _invalid("'axis'[%d] = %d is out of valid range [0, %d)" % (i, a, rank) if
                           opname == "ReverseV2" else "axis %d is out of range" % a)
        a %= rank
        if a in seen and opname == "ReverseV2":
            raise _invalid("axis %d specified more than once." % a)
        seen.add(a)
        out.append(a)
    return out


def reverse(tensor, axis, name=None):
    """``tensor`` with the order along each axis in ``axis`` reversed (ReverseV2)."""
    del name
    x = _t(tensor)
    flags = [0] * x.ndim
    for a in _axes_list(axis, x.ndim, "ReverseV2"):
        flags[a] = 1
    return _op("reverse", [x], ints=flags)


def roll(input, shift, axis, name=None):  # noqa: A002
    """Elements shifted along ``axis`` by ``shift``, wrapping around (Roll); shifts of the
    same axis add up."""
    del name
    x = _t(input)
    shifts = _static_ints(shift, "shift")
    axes = _static_ints(axis, "axis")
    if len(shifts) != len(axes):
        raise _invalid("shift and axis must have the same size")
    total = [0] * x.ndim
    for s, a in zip(shifts, axes):
        if not -x.ndim <= a < x.ndim:
            raise _invalid("axis %d is out of range" % a)
        total[a % x.ndim] += s
    return _op("roll", [x], ints=total)


def repeat(input, repeats, axis=None, name=None):  # noqa: A002
    """Each slice along ``axis`` repeated ``repeats`` times (a gather of the positions
    ``where(range(max) < repeats)`` gives, as TensorFlow composes it)."""
    del name
    x = _t(input)
    if axis is None:
        x = _core.reshape(x, [-1])
        axis = 0
    axis = _static_int(axis, "axis")
    if not -x.ndim <= axis < x.ndim:
        raise _invalid("axis %d is out of range for a tensor of rank %d" % (axis, x.ndim))
    axis %= x.ndim
    r = _t(repeats)
    if r.dtype not in (int32, int64):
        r = _core.cast(r, int32)
    n = x.shape[axis]
    if r.ndim == 0 or (r.ndim == 1 and r.shape[0] == 1):
        r = _core.broadcast_to(_core.reshape(r, [1]), [n])
    if r.ndim != 1:
        raise ValueError("Shape must be rank 1 but is rank %d for repeats" % r.ndim)
    if r.shape[0] != n:
        raise ValueError("Dimensions %d and %d are not compatible" % (n, r.shape[0]))
    from mixprec import _ops
    top = _ops.reduce_max(r) if n else _core.constant(0, r.dtype)
    cols = _ops.range(0, _core.maximum(top, _core.constant(0, r.dtype)), 1, r.dtype)
    mask = _core.less(_core.reshape(cols, [1, -1]), _core.reshape(r, [n, 1]))
    rows = _op("where_indices", [mask])
    pos = _op("gather_nd", [_core.transpose(rows, [1, 0]), _core.constant([0])])
    return _core.gather(x, pos, axis)


def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None, name=None):  # noqa: A002
    """The first ``seq_lengths[b]`` elements along ``seq_axis`` reversed, per batch entry b
    along ``batch_axis`` (ReverseSequence): a batched gather of positions computed by ops."""
    del name
    x = _t(input)
    lens = _t(seq_lengths)
    if seq_axis is None:
        raise ValueError("seq_axis is required")
    s = _static_int(seq_axis, "seq_axis") % max(x.ndim, 1)
    b = _static_int(batch_axis or 0, "batch_axis") % max(x.ndim, 1)
    if s == b:
        raise _invalid("batch_dim == seq_dim == %d" % s)
    if lens.ndim != 1 or lens.shape[0] != x.shape[b]:
        raise _invalid("Length of seq_lengths != input.dims(%d), (%d vs. %d)"
                       % (b, lens.shape[0] if lens.ndim else 0, x.shape[b]))
    T = x.shape[s]
    if not _traced(lens):
        v = lens.numpy()
        if v.size and (v.max() > T or v.min() < 0):
            i = int(np.argmax((v > T) | (v < 0)))
            raise _invalid("seq_lens(%d) > input.dims(%d)" % (i, s) if v[i] > T else
                           "seq_lens(%d) < 0" % i)
    lens = _core.cast(lens, int64)
    t = _core.reshape(_core.range(0, T, 1, int64), [1, T])
    L = _core.reshape(lens, [-1, 1])
    pos = _core.where(_core.less(t, L), _core.subtract(_core.subtract(L, 1), t),
                      _core.broadcast_to(t, [x.shape[b], T]))
    perm = [b, s] + [d for d in range(x.ndim) if d not in (b, s)]
    moved = _core.transpose(x, perm)
    out = gather_batched(moved, pos, 1, 1)
    inv = [perm.index(d) for d in range(x.ndim)]
    return _core.transpose(out, inv)


def _depth_check(x, block_size, data_format, name):
    bs = _static_int(block_size, "block_size")
    if bs < 2:
        raise _invalid("Value for attr 'block_size' of %d must be at least minimum 2" % bs)
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError("data_format must be NHWC or NCHW, got %r" % (data_format,))
    if x.ndim != 4:
        raise _invalid("input rank should be: 4 instead of: %d" % x.ndim)
    return bs


def space_to_depth(input, block_size, data_format="NHWC", name=None):  # noqa: A002
    """Blocks of ``block_size`` x ``block_size`` pixels moved into the channels
    (SpaceToDepth): a reshape, a transpose and a reshape."""
    del name
    x = _t(input)
    bs = _depth_check(x, block_size, data_format, "SpaceToDepth")
    if data_format == "NCHW":
        x = _core.transpose(x, [0, 2, 3, 1])
    n, h, w, c = x.shape
    if h % bs or w % bs:
        raise _invalid("Image width %d and height %d should be divisible by block_size: %d"
                       % (w, h, bs))
    y = _core.reshape(x, [n, h // bs, bs, w // bs, bs, c])
    y = _core.reshape(_core.transpose(y, [0, 1, 3, 2, 4, 5]), [n, h // bs, w // bs, bs * bs * c])
    return _core.transpose(y, [0, 3, 1, 2]) if data_format == "NCHW" else y


def depth_to_space(input, block_size, data_format="NHWC", name=None):  # noqa: A002
    """The channels moved back into ``block_size`` x ``block_size`` pixel blocks
    (DepthToSpace): the inverse of space_to_depth."""
    del name
    x = _t(input)
    bs = _depth_check(x, block_size, data_format, "DepthToSpace")
    if data_format == "NCHW":
        x = _core.transpose(x, [0, 2, 3, 1])
    n, h, w, c = x.shape
    if c % (bs * bs):
        raise _invalid("Input depth dimension %d should be divisible by: %d" % (c, bs * bs))
    y = _core.reshape(x, [n, h, w, bs, bs, c // (bs * bs)])
    y = _core.reshape(_core.transpose(y, [0, 1, 3, 2, 4, 5]), [n, h * bs, w * bs, c // (bs * bs)])
    return _core.transpose(y, [0, 3, 1, 2]) if data_format == "NCHW" else y


def space_to_batch_nd(input, block_shape, paddings, name=None):  # noqa: A002
    """Spatial blocks moved into the batch (SpaceToBatchND): a pad, a reshape, a transpose
    and a reshape."""
    del name
    from mixprec._array_ops import pad
    x = _t(input)
    bs = _static_ints(block_shape, "block_shape")
    m = len(bs)
    p = np.asarray(_static_ints(paddings, "paddings"), dtype=np.int64).reshape(-1, 2) if m else \
        np.zeros((0, 2), np.int64)
    if p.shape[0] != m:
        raise _invalid("paddings should have shape [%d, 2] instead of %s" % (m, list(p.shape)))
    if any(b < 1 for b in bs):
        raise _invalid("block_shape must be positive")
    if (p < 0).any():
        raise _invalid("paddings must be non-negative")
    full = np.zeros((x.ndim, 2), np.int64)
    full[1:1 + m] = p
    x = pad(x, full.tolist())
    sh = list(x.shape)
    for i, b in enumerate(bs):
        if sh[1 + i] % b:
            raise _invalid("padded_shape[%d]=%d is not divisible by block_shape[%d]=%d"
                           % (i, sh[1 + i], i, b))
    n, rest = sh[0], sh[1 + m:]
    shape = [n]
    for i, b in enumerate(bs):
        shape += [sh[1 + i] // b, b]
    y = _core.reshape(x, shape + rest)
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + \
        list(range(1 + 2 * m, 1 + 2 * m + len(rest)))
    y = _core.transpose(y, perm)
    return _core.reshape(y, [n * int(np.prod(bs))] + [sh[1 + i] // b for i, b in enumerate(bs)] +
                         rest)


def batch_to_space(input, block_shape, crops, name=None):  # noqa: A002
    """The inverse of space_to_batch_nd (BatchToSpaceND): a reshape, a transpose, a reshape
    and the crops sliced off."""
    del name
    x = _t(input)
    bs = _static_ints(block_shape, "block_shape")
    m = len(bs)
    c = np.asarray(_static_ints(crops, "crops"), dtype=np.int64).reshape(-1, 2) if m else \
        np.zeros((0, 2), np.int64)
    if c.shape[0] != m:
        raise _invalid("crops should have shape [%d, 2] instead of %s" % (m, list(c.shape)))
    prod = int(np.prod(bs)) if m else 1
    sh = list(x.shape)
    if sh[0] % prod:
        raise _invalid("Input batch dimension (%d) is not divisible by product of block sizes (%d)"
                       % (sh[0], prod))
    n = sh[0] // prod
    spatial, rest = sh[1:1 + m], sh[1 + m:]
    y = _core.reshape(x, bs + [n] + spatial + rest)
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    y = _core.transpose(y, perm)
    y = _core.reshape(y, [n] + [s * b for s, b in zip(spatial, bs)] + rest)
    sl = [slice(None)]
    for i in range(m):
        size = spatial[i] * bs[i]
        if c[i, 0] < 0 or c[i, 1] < 0 or c[i, 0] + c[i, 1] > size:
            raise _invalid("Crops must be non-negative and no larger than the block-expanded size")
        sl.append(slice(int(c[i, 0]), int(size - c[i, 1])))
    return y[tuple(sl)] if m and c.any() else y


# ------------------------------------------------------------------ masks and grids


def boolean_mask(tensor, mask, axis=None, name=None):
    """The slices of ``tensor`` where ``mask`` is True; mask covers axes [axis, axis + k)."""
    del name
    x, m = _t(tensor), _t(mask)
    if m.dtype != _bool:
        m = _core.cast(m, _bool)
    axis = 0 if axis is None else _static_int(axis, "axis")
    k = m.ndim
    if k == 0:
        raise ValueError("mask cannot be scalar.")
    if axis < 0:
        axis += x.ndim
    if not 0 <= axis or axis + k > x.ndim:
        raise ValueError("Number of mask dimensions must be specified, even if some dimensions are "
                         "None.  E.g. shape=[None] is ok, but shape=None is not.")
    if list(x.shape[axis:axis + k]) != list(m.shape):
        raise ValueError("Shapes %s and %s are incompatible" % (tuple(x.shape[axis:axis + k]),
                                                                tuple(m.shape)))
    coords = _op("where_indices", [m])
    if axis == 0:
        return _op("gather_nd", [x, coords])
    perm = list(range(axis, axis + k)) + list(range(axis)) + list(range(axis + k, x.ndim))
    g = _op("gather_nd", [_core.transpose(x, perm), coords])
    back = list(range(1, axis + 1)) + [0] + list(range(axis + 1, g.ndim))
    return _core.transpose(g, back)


def eye(num_rows, num_columns=None, batch_shape=None, dtype=float32, name=None):
    """An identity matrix (or a batch of them): ones where row == column."""
    del name
    r = _static_int(num_rows, "num_rows")
    c = r if num_columns is None else _static_int(num_columns, "num_columns")
    if r < 0 or c < 0:  # TensorFlow's message (its eye builds the diagonal with Fill)
        raise _invalid("Dimension %d must be >= 0" % (r if r < 0 else c))
    dt = as_dtype(dtype)
    rows = _core.reshape(_core.range(0, r, 1, int32), [r, 1])
    cols = _core.reshape(_core.range(0, c, 1, int32), [1, c])
    m = _core.cast(_core.equal(rows, cols), dt)
    if batch_shape is not None:
        bs = _static_ints(batch_shape, "batch_shape")
        m = _core.broadcast_to(m, bs + [r, c])
    return m


def linspace(start, stop, num, name=None, axis=0):
    """``num`` evenly spaced values from ``start`` to ``stop`` inclusive (TensorFlow's
    linspace_nd: start + i * (stop - start) / (num - 1), the last value ``stop`` itself)."""
    del name
    start = _t(start)
    if not start.dtype.is_floating:  # TensorFlow computes integer bounds in float64
        start = _core.cast(start, "float64")
    stop = _t(stop)
    if stop.dtype != start.dtype:
        stop = _core.cast(stop, start.dtype)
    n = _static_int(num, "num")
    if n < 0:
        raise _invalid("Requires num > 0: %d" % n)
    shape = np.broadcast_shapes(tuple(start.shape), tuple(stop.shape))
    start = _core.broadcast_to(start, list(shape))
    stop = _core.broadcast_to(stop, list(shape))
    s = _core.reshape(start, list(shape) + [1])
    e = _core.reshape(stop, list(shape) + [1])
    if n <= 1:
        out = s if n == 1 else _core.fill(list(shape) + [0], 0, start.dtype)
    else:
        delta = _core.truediv(_core.subtract(e, s), _core.cast(_core.constant(n - 1), start.dtype))
        mid = _core.range(1, n - 1, 1, start.dtype) if n > 2 else None
        parts = [s]
        if mid is not None:
            parts.append(_core.add(s, _core.multiply(_core.reshape(mid, [1] * len(shape) + [n - 2]),
                                                     delta)))
        parts.append(e)
        out = _core.concat(parts, len(shape))
    rank = len(shape) + 1
    axis = _static_int(axis, "axis")
    if not -rank <= axis < rank:
        raise _invalid("axis %d is out of range for rank %d" % (axis, rank))
    axis %= rank
    if axis != rank - 1:
        perm = list(range(axis)) + [rank - 1] + list(range(axis, rank - 1))
        out = _core.transpose(out, perm)
    return out


def meshgrid(*args, **kwargs):
    """N-D coordinate grids from 1-D coordinate vectors; ``indexing`` 'xy' (the first two
    outputs' axes swapped, as NumPy) or 'ij'."""
    indexing = kwargs.pop("indexing", "xy")
    kwargs.pop("name", None)
    if kwargs:
        raise TypeError("'{}' is an invalid keyword argument for this function".format(
            next(iter(kwargs))))
    if indexing not in ("xy", "ij"):
        raise ValueError("Argument `indexing` parameter must be either 'xy' or 'ij', got '%s'"
                         % (indexing,))
    xs = [_core.reshape(_t(a), [-1]) for a in args]
    n = len(xs)
    if not n:
        return []
    sizes = [x.shape[0] for x in xs]
    out_shape = list(sizes)
    if indexing == "xy" and n > 1:
        out_shape[0], out_shape[1] = out_shape[1], out_shape[0]
    out = []
    for i, x in enumerate(xs):
        shape = [1] * n
        pos = i
        if indexing == "xy" and n > 1 and i < 2:
            pos = 1 - i
        shape[pos] = sizes[i]
        out.append(_core.broadcast_to(_core.reshape(x, shape), out_shape))
    return out


def sequence_mask(lengths, maxlen=None, dtype=_bool, name=None):
    """``mask[..., j] = j < lengths[...]`` (maxlen defaults to max(lengths))."""
    del name
    from mixprec import _ops
    lengths = _t(lengths)
    if maxlen is None:
        maxlen = _core.maximum(_ops.reduce_max(lengths), _core.constant(0, lengths.dtype))
    else:
        maxlen = _t(maxlen)
        if maxlen.ndim != 0:
            raise ValueError("Argument `maxlen` must be scalar for sequence_mask, received "
                             "`maxlen` = %s with shape '%s' instead"
                             % (maxlen, tuple(maxlen.shape)))
    maxlen = _core.cast(maxlen, lengths.dtype) if maxlen.dtype != lengths.dtype else maxlen
    row = _ops.range(0, maxlen, 1, lengths.dtype)
    m = _core.less(row, _core.reshape(lengths, list(lengths.shape) + [1]))
    dt = as_dtype(dtype)
    return m if dt == _bool else _core.cast(m, dt)


# ------------------------------------------------------------------ contractions and norms


def tensordot(a, b, axes, name=None):
    """Sum of products over ``axes`` of ``a`` and ``b`` (an int N: the last N of a with the
    first N of b; or a pair of axis lists): a transpose, a reshape and a matmul."""
    del name
    a, b = _t(a), _t(b)
    if isinstance(axes, _core.Tensor):
        axes = axes.numpy().tolist()
    if isinstance(axes, (numbers.Integral, np.integer)):
        n = int(axes)
        if n < 0:
            raise ValueError("'axes' must be at least 0, got %d." % n)
        if n > a.ndim or n > b.ndim:
            raise ValueError("'axes' must not be larger than the number of dimensions of tensor "
                             "%s.  Received %d, vs tensor dimensions %d." % (
                                 "a" if n > a.ndim else "b", n, a.ndim if n > a.ndim else b.ndim))
        ax_a, ax_b = list(range(a.ndim - n, a.ndim)), list(range(n))
    else:
        axes = list(axes)
        if len(axes) != 2:
            raise ValueError("'axes' must be an integer or have length 2, got %r" % (axes,))
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, (numbers.Integral, np.integer)) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, (numbers.Integral, np.integer)) else list(ax_b)
        if len(ax_a) != len(ax_b):
            raise ValueError("Different number of contraction axes 'a' and 'b', %d != %d."
                             % (len(ax_a), len(ax_b)))
        ax_a = [int(x) % a.ndim if a.ndim else int(x) for x in ax_a]
        ax_b = [int(x) % b.ndim if b.ndim else int(x) for x in ax_b]
    for i, j in zip(ax_a, ax_b):
        if a.shape[i] != b.shape[j]:
            raise _invalid("Matrix size-incompatible: In[0]: %s, In[1]: %s (tensordot axes %d of "
                           "a and %d of b differ: %d vs %d)" % (list(a.shape), list(b.shape), i, j,
                                                               a.shape[i], b.shape[j]))
    free_a = [d for d in range(a.ndim) if d not in ax_a]
    free_b = [d for d in range(b.ndim) if d not in ax_b]
    fa = [a.shape[d] for d in free_a]
    fb = [b.shape[d] for d in free_b]
    k = int(np.prod([a.shape[d] for d in ax_a])) if ax_a else 1
    a2 = _core.reshape(_core.transpose(a, free_a + ax_a), [int(np.prod(fa)) if fa else 1, k])
    b2 = _core.reshape(_core.transpose(b, ax_b + free_b), [k, int(np.prod(fb)) if fb else 1])
    return _core.reshape(_core.matmul(a2, b2), fa + fb)


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):  # noqa: A002
    """Vector norms (ord 'euclidean'/'fro'/2, 1, inf, any p > 0) over all elements or one
    axis, and matrix norms ('euclidean'/'fro', 1, inf) over two axes; TensorFlow's formulas."""
    del name
    x = _t(tensor)
    keepdims = bool(keepdims)
    is_matrix = False
    axes = None
    if axis is not None:
        if isinstance(axis, _core.Tensor):
            axis = axis.numpy().tolist()
        bad = ValueError("'axis' must be None, an integer, or a tuple of 2 unique integers, got "
                         "%s" % (tuple(axis) if isinstance(axis, list) else axis,))
        if isinstance(axis, (list, tuple)):
            if len(axis) != 2 or axis[0] == axis[1]:
                raise bad
            is_matrix = True
            axes = [int(a) for a in axis]
            for a in axes:
                if not -x.ndim <= a < x.ndim:
                    raise _invalid("Invalid reduction dimension (%d for input with %d dimension(s)"
                                   % (a, x.ndim))
            if axes[0] % x.ndim == axes[1] % x.ndim:
                raise bad
        else:
            a = _static_int(axis, "axis")
            if not -x.ndim <= a < x.ndim:
                raise _invalid("Invalid reduction dimension (%d for input with %d dimension(s)"
                               % (a, x.ndim))
            axes = [a]
        axes = [a % x.ndim for a in axes]
    supported_matrix = ("euclidean", "fro", 1, np.inf)
    if is_matrix:
        if ord not in supported_matrix + (2,):
            raise ValueError("'ord' must be a supported matrix norm in ['euclidean', 'fro', 1, "
                             "2, inf], got %s" % (ord,))
    else:
        if not (ord == "euclidean" or (isinstance(ord, numbers.Real) and
                                        not isinstance(ord, bool) and ord > 0)):
            raise ValueError("'ord' must be a supported vector norm, got %s" % (ord,))
    if not x.dtype.is_floating:
        raise _invalid("Value for attr 'T' of %s is not in the list of allowed values: bfloat16, "
                       "half, float, double, complex64, complex128" % x.dtype.name)
    red = axes
    if is_matrix and ord == 2 and not isinstance(ord, bool):
        # the spectral norm: the largest singular value (the two axes moved last)
        from mixprec import linalg as _linalg
        rest = [i for i in range(x.ndim) if i not in axes]
        moved = _core.transpose(x, rest + list(axes))
        r = _linalg.svd(moved, compute_uv=False)[..., 0]
        if keepdims:
            shape = [1 if i in axes else x.shape[i] for i in range(x.ndim)]
            return _core.reshape(r, shape)
        return r
    if ord in ("euclidean", "fro") or (ord == 2 and not is_matrix):
        r = _core.sqrt(_core.reduce_sum(_core.multiply(x, x), red, keepdims=True))
    elif is_matrix:
        s_axis, m_axis = (axes[0], axes[1]) if ord == 1 else (axes[1], axes[0])
        r = _core.reduce_sum(_core.abs(x), [s_axis], keepdims=True)
        r = _core.reduce_max(r, [m_axis], keepdims=True)
    elif ord == np.inf:
        r = _core.reduce_max(_core.abs(x), red, keepdims=True)
    elif ord == 1:
        r = _core.reduce_sum(_core.abs(x), red, keepdims=True)
    else:
        p = _core.cast(_core.constant(float(ord)), x.dtype)
        r = _core.pow(_core.reduce_sum(_core.pow(_core.abs(x), p), red, keepdims=True),
                      _core.truediv(_core.cast(_core.constant(1.0), x.dtype), p))
    if keepdims:
        return r
    if axes is None:
        return _core.reshape(r, [])
    return _core.reshape(r, [d for i, d in enumerate(r.shape) if i not in axes])


def searchsorted(sorted_sequence, values, side="left", out_type=int32, name=None):
    """Per row, the insertion points of ``values`` in ``sorted_sequence`` (LowerBound /
    UpperBound): the count of entries below (left) or not above (right) each value."""
    del name
    seq, v = _t(sorted_sequence), _t(values)
    if side not in ("left", "right"):
        raise ValueError("Argument `side` must be either 'right' or 'left'. Received: `side` = "
                         "%s." % (side,))
    dt = _index_dtype(out_type, "out_type")
    if seq.ndim < 1 or v.ndim < 1:
        raise ValueError("sorted_sequence and values must be at least 1-D")
    if list(seq.shape[:-1]) != list(v.shape[:-1]):
        raise _invalid("Leading dim_size of both tensors must match.")
    if v.dtype != seq.dtype:
        raise _invalid("cannot compute %s as input #1(zero-based) was expected to be a %s tensor "
                       "but is a %s tensor" % ("LowerBound" if side == "left" else "UpperBound",
                                                seq.dtype.name, v.dtype.name))
    s = _core.reshape(seq, list(seq.shape[:-1]) + [1, seq.shape[-1]])
    q = _core.reshape(v, list(v.shape) + [1])
    below = _core.less(s, q) if side == "left" else _core.less_equal(s, q)
    return _core.reduce_sum(_core.cast(below, dt), [v.ndim])


# ------------------------------------------------------------------ small utilities


def unravel_index(indices, dims, name=None):
    """The coordinates in an array of shape ``dims`` of flat ``indices`` (UnravelIndex):
    shape (len(dims),) + indices.shape, indices' dtype."""
    del name
    idx = _t(indices)
    if idx.dtype not in (int32, int64):
        raise TypeError("unravel_index: indices must be int32 or int64, got %s" % idx.dtype.name)
    if idx.ndim > 1:
        raise _invalid('The indices can only be scalar or vector, got "[%s]"'
                       % ",".join(map(str, idx.shape)))
    if isinstance(dims, _core.Tensor) and dims.dtype != idx.dtype:
        raise _invalid("cannot compute UnravelIndex as input #1(zero-based) was expected to be a "
                       "%s tensor but is a %s tensor" % (idx.dtype.name, dims.dtype.name))
    d = _static_ints(dims, "dims")
    if any(x <= 0 for x in d) and d:
        raise _invalid("Input dims must be positive, got %s" % d)
    if not _traced(idx):
        v = idx.numpy()
        total = int(np.prod(d)) if d else 1
        if v.size and (v.min() < 0 or v.max() >= total):
            raise _invalid("index is out of bound as with dims")
    outs = []
    stride = int(np.prod(d)) if d else 1
    for size in d:
        stride //= size
        c = _core.floordiv(idx, _core.constant(stride, idx.dtype)) if stride != 1 else idx
        outs.append(_core.floormod(c, _core.constant(size, idx.dtype)))
    return _core.stack(outs, 0) if outs else _core.fill([0] + list(idx.shape), 0, idx.dtype)


def identity_n(input, name=None):  # noqa: A002
    """A list with the identity of each tensor of ``input`` (IdentityN)."""
    del name
    return [_core.identity(_t(x)) for x in input]


def shape_n(input, out_type=int32, name=None):  # noqa: A002
    """The shapes of the tensors of ``input`` as 1-D ``out_type`` tensors (ShapeN)."""
    del name
    from mixprec import _ops
    xs = [_t(x) for x in input]
    for i, x in enumerate(xs):
        if x.dtype != xs[0].dtype:
            raise _invalid("cannot compute ShapeN as input #%d(zero-based) was expected to be a %s "
                           "tensor but is a %s tensor" % (i, xs[0].dtype.name, x.dtype.name))
    return [_ops.shape(x, out_type) for x in xs]


def _shape_list(s):
    if isinstance(s, _core.Tensor):
        s = s.numpy()
    return [int(v) for v in np.asarray(s).reshape(-1)]


def _broadcast_dims(x, y, err):
    n = max(len(x), len(y))
    x = [1] * (n - len(x)) + list(x)
    y = [1] * (n - len(y)) + list(y)
    out = []
    for a, b in zip(x, y):
        if a == 1:
            out.append(b)
        elif b == 1:
            out.append(a)
        elif a is None or b is None:
            out.append(a if b is None else b)
        elif a != b:
            raise err()
        else:
            out.append(a)
    return out


def broadcast_dynamic_shape(shape_x, shape_y):
    """The broadcast of two shapes given as 1-D int tensors (BroadcastArgs)."""
    dt = shape_x.dtype if isinstance(shape_x, _core.Tensor) else int32
    if isinstance(shape_y, _core.Tensor) and shape_y.dtype != dt:
        raise _invalid("cannot compute BroadcastArgs as input #1(zero-based) was expected to be a "
                       "%s tensor but is a %s tensor" % (dt.name, shape_y.dtype.name))
    x, y = _shape_list(shape_x), _shape_list(shape_y)
    out = _broadcast_dims(x, y, lambda: _invalid("Incompatible shapes: [%s] vs. [%s]" % (
        ",".join(map(str, x)), ",".join(map(str, y)))))
    return _core.constant(np.asarray(out, dtype=np.int64), dt)


def broadcast_static_shape(shape_x, shape_y):
    """The broadcast of two TensorShapes (ValueError when they do not broadcast)."""
    from mixprec._shape import TensorShape
    x, y = TensorShape(shape_x), TensorShape(shape_y)
    out = _broadcast_dims(list(x), list(y), lambda: ValueError(
        "Incompatible shapes for broadcasting. Two shapes are compatible if for each dimension "
        "pair they are either equal or one of them is 1. Received: %s and %s." % (x, y)))
    return TensorShape(out)


def dynamic_partition(data, partitions, num_partitions, name=None):
    """``data`` split into ``num_partitions`` tensors by the partition id of each entry
    (DynamicPartition): a gather_nd of the coordinates where partitions == i."""
    del name
    x, p = _t(data), _t(partitions)
    n = _static_int(num_partitions, "num_partitions")
    if n < 1:
        raise _invalid("Value for attr 'num_partitions' of %d must be at least minimum 1" % n)
    if p.dtype != int32:
        raise TypeError("partitions must be an int32 tensor, got %s" % p.dtype.name)
    if list(x.shape[:p.ndim]) != list(p.shape):
        raise _invalid("data.shape must start with partitions.shape, got data.shape = %s, "
                       "partitions.shape = %s" % (list(x.shape), list(p.shape)))
    if not _traced(p):
        v = p.numpy().reshape(-1)
        bad = np.nonzero((v < 0) | (v >= n))[0]
        if bad.size:
            pos = np.unravel_index(int(bad[0]), p.shape) if p.ndim else ()
            raise _invalid("partitions%s = %d is not in [0, %d)" % (
                "[%s]" % ",".join(str(int(i)) for i in pos) if p.ndim else "", int(v[bad[0]]), n))
    if p.ndim == 0:
        x = _core.reshape(x, [1] + list(x.shape))
        p = _core.reshape(p, [1])
    return [_op("gather_nd", [x, _op("where_indices", [_core.equal(p, _core.constant(i, int32))])])
            for i in range(n)]


def dynamic_stitch(indices, data, name=None):
    """``merged[indices[m][i]] = data[m][i]``, later entries winning (DynamicStitch): a
    scatter of the concatenated slices into a tensor of max(index) + 1 rows (that size is
    read on the host)."""
    del name
    idx = [_t(i) for i in indices]
    dat = [_t(d) for d in data]
    if len(idx) != len(dat) or not idx:
        raise _invalid("DynamicStitch: indices and data must be non-empty lists of one length")
    rest = None
    flat_i, flat_d = [], []
    for i, d in zip(idx, dat):
        if i.dtype != int32:
            raise TypeError("DynamicStitch: indices must be int32, got %s" % i.dtype.name)
        if list(d.shape[:i.ndim]) != list(i.shape):
            raise _invalid("data[%d].shape = %s does not start with indices[%d].shape = %s" % (
                len(flat_i), list(d.shape), len(flat_i), list(i.shape)))
        r = list(d.shape[i.ndim:])
        if rest is None:
            rest = r
        elif r != rest:
            raise _invalid("DynamicStitch: the data's inner shapes differ: %s vs %s" % (rest, r))
        flat_i.append(_core.reshape(i, [-1]))
        flat_d.append(_core.reshape(d, [-1] + r))
    all_i = _core.concat(flat_i, 0)
    all_d = _core.concat(flat_d, 0)
    dt = dat[0].dtype
    for d in dat:
        if d.dtype != dt:
            raise TypeError("DynamicStitch: the data tensors must have one dtype")
    v = all_i.numpy()
    if v.size and v.min() < 0:
        raise _invalid("DynamicStitch: indices must be non-negative, got %d" % int(v.min()))
    n = int(v.max()) + 1 if v.size else 0
    zeros = _core.fill([n] + rest, False if dt == _bool else 0, dt)
    return _op("tensor_scatter_update", [zeros, _core.reshape(all_i, [-1, 1]), all_d])


# ------------------------------------------------------------------ functional loops


def _unstacked(elems):
    flat = [_t(e) for e in _nest.flatten(elems)]
    if not flat:
        raise ValueError("elems must be a Tensor or (possibly nested) sequence of Tensors. Got "
                         "%s" % (elems,))
    n = None
    for e in flat:
        if e.ndim == 0:
            raise ValueError("Elements in elems must be 1+ dimensional Tensors, not scalars")
        if n is None:
            n = e.shape[0]
        elif e.shape[0] != n:
            raise ValueError("All elements in elems must have the same size in the first "
                             "dimension, got %d and %d" % (n, e.shape[0]))
    return flat, n


def _elem(elems, flat, i):
    return _nest.pack_sequence_as(elems, [e[i] for e in flat])


def _empty_like_signature(sig, n):
    from mixprec._function import TensorSpec
    if isinstance(sig, TensorSpec):
        return _core.fill([n] + list(sig.shape or []), 0, sig.dtype)
    return _core.fill([n], 0, as_dtype(sig))


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True, swap_memory=False,
           infer_shape=True, name=None, fn_output_signature=None):
    """``fn`` applied to each slice of ``elems`` along axis 0, the results stacked (a loop of
    the ops fn runs, unrolled in a trace)."""
    del parallel_iterations, back_prop, swap_memory, infer_shape, name
    sig = fn_output_signature if fn_output_signature is not None else dtype
    flat, n = _unstacked(elems)
    if sig is None:  # TensorFlow: the output is shaped (and typed) as elems
        sig = _nest.pack_sequence_as(elems, [e.dtype for e in flat])
    if n == 0:
        return _nest.map_structure(lambda s: _empty_like_signature(s, 0), sig)
    outs = [fn(_elem(elems, flat, i)) for i in range(n)]
    want = [s.dtype if hasattr(s, "shape") else as_dtype(s) for s in _nest.flatten(sig)]
    for out in outs:
        if len(_nest.flatten(out)) != len(want) or (_nest.is_nested(out) != _nest.is_nested(sig)):
            raise ValueError("The two structures don't have the same nested structure.\n\nFirst "
                             "structure: %s\n\nSecond structure: %s" % (sig, out))
    cols = list(zip(*[[_t(o) for o in _nest.flatten(out)] for out in outs]))
    for w, col in zip(want, cols):
        if col[0].dtype != w:
            raise _invalid("TensorArray dtype is %s but Op is trying to write dtype %s"
                           % (w.name, col[0].dtype.name))
    return _nest.pack_sequence_as(sig, [_core.stack(list(c), 0) for c in cols])


def vectorized_map(fn, elems, fallback_to_while_loop=True, warn=True):
    """``fn`` over the slices of ``elems`` (run as map_fn: the same values, one op per slice)."""
    del fallback_to_while_loop, warn
    return map_fn(fn, elems)


def _fold(fn, elems, initializer, reverse_order):
    flat, n = _unstacked(elems)
    order = range(n - 1, -1, -1) if reverse_order else range(n)
    order = list(order)
    if initializer is None:
        if not n:
            raise ValueError("elems must not be empty when no initializer is given")
        acc = _elem(elems, flat, order[0])
        order = order[1:]
    else:
        acc = initializer
    for i in order:
        acc = fn(acc, _elem(elems, flat, i))
    return acc


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """``fn(acc, x)`` over the slices of ``elems`` from the first (acc starts at
    ``initializer`` or the first slice)."""
    del parallel_iterations, back_prop, swap_memory, name
    return _fold(fn, elems, initializer, False)


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """foldl from the last slice."""
    del parallel_iterations, back_prop, swap_memory, name
    return _fold(fn, elems, initializer, True)


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False,
         infer_shape=True, reverse=False, name=None):
    """The stacked accumulators of ``fn(acc, x)`` over the slices of ``elems``."""
    del parallel_iterations, back_prop, swap_memory, infer_shape, name
    flat, n = _unstacked(elems)
    order = list(range(n - 1, -1, -1) if reverse else range(n))
    results = []
    if initializer is None:
        if not n:
            raise ValueError("elems must not be empty when no initializer is given")
        acc = _elem(elems, flat, order[0])
        results.append(acc)
        order = order[1:]
    else:
        acc = initializer
    for i in order:
        acc = fn(acc, _elem(elems, flat, i))
        results.append(acc)
    if not results:
        return _nest.map_structure(lambda a: _core.fill([0] + list(_t(a).shape), 0, _t(a).dtype),
                                   initializer)
    if reverse:
        results = results[::-1]
    cols = list(zip(*[[_t(o) for o in _nest.flatten(r)] for r in results]))
    return _nest.pack_sequence_as(results[0], [_core.stack(list(c), 0) for c in cols])
