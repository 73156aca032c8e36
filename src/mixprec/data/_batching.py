"""Batching beyond ``batch``: ``padded_batch`` (components padded to a common shape),
``rebatch`` (batches re-cut to other sizes), ``window`` (elements grouped into small
datasets) and ``bucket_by_sequence_length``, with tf.data's shapes, specs and errors.
Each batch is assembled by NumPy in one call per component; no per-element arithmetic."""

import collections

import numpy as np

from mixprec import _nest, errors
from mixprec._shape import TensorShape
from mixprec.data import dataset as _ds
from mixprec.data._nested_datasets import DatasetSpec, ElementsDataset

__all__ = ["PaddedBatch", "rebatch", "Window", "bucket_by_sequence_length"]


def _shape_of(s):
    """A padded shape given as a TensorShape, list/tuple of ints/None/-1, or a 1-D tensor."""
    if hasattr(s, "numpy"):
        s = s.numpy().tolist()
    if isinstance(s, TensorShape):
        return list(s)
    if isinstance(s, (int, np.integer)):
        return [int(s)]
    return [None if d is None or int(d) < 0 else int(d) for d in s]


def _map_over_spec(spec, value, what):
    """``value`` (padded shapes or padding values) aligned with the leaves of ``spec``: a
    single value for a one-component element, otherwise the element's structure."""
    leaves = _nest.flatten(spec)
    if not _nest.is_nested(spec):
        return [value]
    if not isinstance(value, (tuple, dict)) or (isinstance(value, tuple) and
                                                 len(value) != len(spec)):
        if what == "padding_values" and not isinstance(value, (tuple, list, dict)):
            return [value] * len(leaves)  # one scalar for every component
        raise ValueError("The `%s` structure does not match the element structure %r"
                         % (what, spec))
    flat = []

    def walk(sp, val):
        if not _nest.is_nested(sp):
            flat.append(val)
            return
        if isinstance(sp, dict):
            for k in sorted(sp, key=_nest._sort_key):
                walk(sp[k], val[k])
        else:
            if len(sp) != len(val):
                raise ValueError("The `%s` structure does not match the element structure %r"
                                 % (what, spec))
            for a, b in zip(sp, val):
                walk(a, b)
    walk(spec, value)
    return flat


def _default_padding(dtype):
    if dtype.name == "string":
        return b""
    if dtype.name == "bool":
        return False
    return 0


class PaddedBatch(_ds.Dataset):
    _tf_name = "_PaddedBatchDataset"

    def __init__(self, src, batch_size, padded_shapes=None, padding_values=None,
                 drop_remainder=False):
        if int(batch_size) <= 0:
            raise errors.InvalidArgumentError(None, None,
                                              "Batch size must be greater than zero.")
        self._src, self._n, self._drop = src, int(batch_size), bool(drop_remainder)
        spec = src.element_spec
        leaves = _nest.flatten(spec)
        for leaf in leaves:
            if isinstance(leaf, DatasetSpec):
                raise TypeError("padded_batch cannot batch dataset-valued components")
        if padded_shapes is None:
            if any(leaf.shape.rank is None for leaf in leaves):
                raise ValueError("You must provide `padded_shapes` argument because component "
                                 "shapes are of unknown rank.")
            # each dimension padded to the batch's longest: the same as the static shape
            # where the spec knows it, and right where the spec (inferred from the first
            # elements of an eager map) was too specific
            shapes = [[None] * leaf.shape.rank for leaf in leaves]
            self._spec_shapes = [list(leaf.shape) for leaf in leaves]
        else:
            shapes = [_shape_of(s) for s in _map_over_spec(spec, padded_shapes,
                                                            "padded_shapes")]
        for leaf, shp in zip(leaves, shapes):
            if leaf.shape.rank is not None and len(shp) != leaf.shape.rank:
                raise ValueError("The padded shape %s is not compatible with the shape %s of "
                                 "the corresponding input component."
                                 % (TensorShape(shp), leaf.shape))
            if leaf.shape.rank is not None:
                for p, d in zip(shp, leaf.shape):
                    if p is not None and d is not None and d > p:
                        raise ValueError(
                            "The padded shape %s is not compatible with the shape %s of the "
                            "corresponding input component." % (TensorShape(shp), leaf.shape))
        if padding_values is None:
            values = [_default_padding(leaf.dtype) for leaf in leaves]
        else:
            values = _map_over_spec(spec, padding_values, "padding_values")
        self._values = []
        for leaf, v in zip(leaves, values):
            arr = _ds._to_numpy(v)
            if arr.ndim != 0:
                raise ValueError("Padding value should be a scalar, but is not: %r" % (v,))
            if hasattr(v, "dtype") and not isinstance(v, (np.ndarray, np.generic)) and \
                    v.dtype != leaf.dtype:
                raise TypeError("Padding value type %s does not match the component type %s"
                                % (v.dtype.name, leaf.dtype.name))
            self._values.append(arr.astype(leaf.dtype.as_numpy_dtype)
                                if leaf.dtype.name != "string" else arr)
        self._shapes = shapes
        if padded_shapes is not None:
            self._spec_shapes = shapes
        self._spec = spec

    def _pad(self, elems):
        structure = elems[0]
        flats = [[_ds._to_numpy(x) for x in _nest.flatten(e)] for e in elems]
        out = []
        for c, (shape, value) in enumerate(zip(self._shapes, self._values)):
            parts = [f[c] for f in flats]
            rank = parts[0].ndim
            if any(p.ndim != rank for p in parts) or len(shape) != rank:
                raise errors.InvalidArgumentError(
                    None, None, "All elements in a batch must have the same rank as the "
                    "padded shape for component%d: expected rank %d but got element with "
                    "rank %d" % (c, len(shape), next(p.ndim for p in parts if p.ndim != rank)
                                 if any(p.ndim != rank for p in parts) else rank))
            target = []
            for axis, want in enumerate(shape):
                have = max(p.shape[axis] for p in parts)
                if want is None:
                    target.append(have)
                else:
                    if have > want:
                        raise errors.DataLossError(
                            None, None, "Attempted to pad to a smaller size than the input "
                            "element.")
                    target.append(want)
            batch = np.full([len(parts)] + target, value, dtype=parts[0].dtype
                            if parts[0].dtype.kind != "U" else object)
            for i, p in enumerate(parts):
                batch[(i,) + tuple(slice(0, d) for d in p.shape)] = p
            out.append(batch)
        return _nest.pack_sequence_as(structure, out)

    def _elements(self):
        buf = []
        for elem in self._src._elements():
            buf.append(elem)
            if len(buf) == self._n:
                yield self._pad(buf)
                buf = []
        if buf and not self._drop:
            yield self._pad(buf)

    def _cardinality(self):
        n = self._src._cardinality()
        if n is None or n < 0:
            return n
        return n // self._n if self._drop else -(-n // self._n)

    def _element_spec(self):
        from mixprec._function import TensorSpec
        first = self._n if self._drop else None
        leaves = [TensorSpec([first] + list(s), leaf.dtype)
                  for s, leaf in zip(self._spec_shapes, _nest.flatten(self._spec))]
        return _nest.pack_sequence_as(self._spec, leaves)


class _Rebatch(_ds.Dataset):
    _tf_name = "_RebatchDataset"

    def __init__(self, src, sizes, drop):
        self._src, self._sizes, self._drop = src, sizes, drop

    def _elements(self):
        k = 0
        buf = []
        for batch in self._src._elements():
            flat = [_ds._to_numpy(x) for x in _nest.flatten(batch)]
            structure = batch
            for row in range(len(flat[0])):
                buf.append([f[row] for f in flat])
                if len(buf) == self._sizes[k % len(self._sizes)]:
                    yield _nest.pack_sequence_as(structure, [np.stack(c) for c in zip(*buf)])
                    buf, k = [], k + 1
        if buf and not self._drop:
            yield _nest.pack_sequence_as(structure, [np.stack(c) for c in zip(*buf)])

    def _cardinality(self):
        return None

    def _element_spec(self):
        from mixprec._function import TensorSpec
        first = self._sizes[0] if self._drop and len(set(self._sizes)) == 1 else None
        return _nest.map_structure(
            lambda s: TensorSpec([first] + list(s.shape)[1:], s.dtype), self._src.element_spec)


def rebatch(src, batch_size, drop_remainder=False):
    sizes = batch_size.numpy().tolist() if hasattr(batch_size, "numpy") else batch_size
    sizes = [int(s) for s in (sizes if isinstance(sizes, (list, tuple)) else [sizes])]
    if not sizes or any(s <= 0 for s in sizes):
        raise errors.InvalidArgumentError(None, None, "batch_size must be greater than zero.")
    for leaf in _nest.flatten(src.element_spec):
        if leaf.shape.rank == 0:
            raise ValueError("Cannot rebatch unbatched datasets.")
    return _Rebatch(src, sizes, bool(drop_remainder))


class Window(_ds.Dataset):
    _tf_name = "_WindowDataset"

    def __init__(self, src, size, shift=None, stride=1, drop_remainder=False):
        size = int(size)
        shift = size if shift is None else int(shift)
        stride = int(stride)
        for v, what in ((size, "size"), (shift, "shift"), (stride, "stride")):
            if v <= 0:
                raise errors.InvalidArgumentError(
                    None, None, "Window %s must be greater than zero." % what)
        self._src, self._size, self._shift, self._stride = src, size, shift, stride
        self._drop = bool(drop_remainder)

    def _span(self):
        return (self._size - 1) * self._stride + 1

    def _make(self, elems):
        spec = self._src.element_spec
        flats = [_nest.flatten(e) for e in elems]
        leaves = _nest.flatten(spec)
        comps = [ElementsDataset([f[c] for f in flats], leaves[c]) for c in range(len(leaves))]
        return _nest.pack_sequence_as(spec, comps)

    def _elements(self):
        buf = collections.deque()
        start = 0  # index of buf[0] in the input
        next_start = 0
        span = self._span()
        it = self._src._elements()
        done = False
        while True:
            # fill the buffer to hold the window that begins at next_start
            while not done and start + len(buf) < next_start + span:
                try:
                    buf.append(next(it))
                except StopIteration:
                    done = True
            while buf and start < next_start:
                buf.popleft()
                start += 1
            if start < next_start or not buf:  # the window would start past the end
                return
            picked = [buf[k] for k in range(0, min(span, len(buf)), self._stride)]
            if len(picked) < self._size and self._drop:
                return
            yield self._make(picked)
            next_start += self._shift

    def _cardinality(self):
        n = self._src._cardinality()
        if n is None or n < 0:
            return n
        if self._drop:
            return max(0, (n - self._span()) // self._shift + 1) if n >= self._span() else 0
        return -(-n // self._shift)

    def _element_spec(self):
        return _nest.map_structure(DatasetSpec, self._src.element_spec)


def bucket_by_sequence_length(src, element_length_func, bucket_boundaries,
                              bucket_batch_sizes, padded_shapes=None, padding_values=None,
                              pad_to_bucket_boundary=False, no_padding=False,
                              drop_remainder=False):
    """tf.data's bucketing: each element goes to the bucket its length falls in
    (``boundaries[i-1] <= len < boundaries[i]``); a bucket emits a (padded) batch when it
    holds its batch size; what is left is emitted at the end, smallest bucket first."""
    from mixprec.data._interleave import GroupByWindow
    boundaries = [int(b) for b in bucket_boundaries]
    sizes = [int(b) for b in (bucket_batch_sizes.numpy().tolist()
                              if hasattr(bucket_batch_sizes, "numpy") else bucket_batch_sizes)]
    if len(sizes) != len(boundaries) + 1:
        raise ValueError("`len(bucket_batch_sizes)` must equal `len(bucket_boundaries) + 1` "
                         "but `len(bucket_batch_sizes)=%d` and `len(bucket_boundaries)=%d`."
                         % (len(sizes), len(boundaries)))
    if sorted(boundaries) != boundaries:
        raise ValueError("`bucket_boundaries` must be sorted in increasing order, got %r"
                         % (boundaries,))
    edges = np.asarray(boundaries, dtype=np.int64)

    def key_func(*elem):
        length = element_length_func(*elem)
        n = int(_ds._to_numpy(length))
        return np.int64(np.searchsorted(edges, n, side="right"))

    def reduce_func(key, window):
        k = int(_ds._to_numpy(key))
        if no_padding:
            return window.batch(sizes[k], drop_remainder=drop_remainder)
        shapes = padded_shapes
        if pad_to_bucket_boundary:
            if k >= len(boundaries):
                raise errors.InvalidArgumentError(
                    None, None, "When pad_to_bucket_boundary=True, elements must have length "
                    "< max(bucket_boundaries).")
            fill = boundaries[k] - 1
            if shapes is None:
                shapes = _nest.map_structure(lambda s: [d if d is not None else fill
                                                        for d in s.shape],
                                             window.element_spec)
            else:
                shapes = _fill_none(window.element_spec, shapes, fill)
        return PaddedBatch(window, sizes[k], shapes, padding_values, drop_remainder)

    def window_size_func(key):
        return sizes[int(_ds._to_numpy(key))]

    return GroupByWindow(src, key_func, reduce_func, window_size_func=window_size_func)


def _fill_none(spec, padded_shapes, fill):
    shapes = _map_over_spec(spec, padded_shapes, "padded_shapes")
    filled = [[fill if d is None else d for d in _shape_of(s)] for s in shapes]
    return _nest.pack_sequence_as(spec, filled) if _nest.is_nested(spec) else filled[0]
