"""A minimal ``tf.RaggedTensor``: one ragged dimension (rows of varying length) over a flat
values tensor, as ``tf.strings.split`` / ``unicode_split`` / ``bytes_split`` return.

It owns the row-partition bookkeeping (``row_splits``) and dense conversion; element work is
the core's (``gather``). It must not grow into TensorFlow's full ragged API: nested ragged
dimensions, ragged arithmetic and dispatch are not here (docs/porting.md).
"""

import numpy as np

from mixprec import _core, _dtypes, _shape

__all__ = ["RaggedTensor", "constant"]


class RaggedTensor:
    """Rows ``values[row_splits[i]:row_splits[i + 1]]`` (TensorFlow's RaggedTensor, rank 2)."""

    def __init__(self, values, row_splits):
        self._values = values
        self._row_splits = row_splits

    @classmethod
    def from_row_splits(cls, values, row_splits, name=None, validate=True):
        values = _core.convert_to_tensor(values)
        splits = np.asarray(_core.convert_to_tensor(row_splits).numpy(), dtype=np.int64)
        if validate and (splits.ndim != 1 or splits.size == 0 or splits[0] != 0 or
                         np.any(np.diff(splits) < 0) or splits[-1] != values.shape[0]):
            raise _core.InvalidArgumentError(
                "Arguments to from_row_splits do not form a valid RaggedTensor")
        return cls(values, _core.constant(splits, "int64"))

    @classmethod
    def from_row_lengths(cls, values, row_lengths, name=None, validate=True):
        lengths = np.asarray(_core.convert_to_tensor(row_lengths).numpy(), dtype=np.int64)
        return cls.from_row_splits(values, np.concatenate([[0], np.cumsum(lengths)]),
                                   validate=validate)

    # ------------------------------------------------------------------ properties
    @property
    def values(self):
        return self._values

    @property
    def flat_values(self):
        return self._values

    @property
    def row_splits(self):
        return self._row_splits

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def ragged_rank(self):
        return 1

    @property
    def shape(self):
        return _shape.TensorShape([self.nrows_int(), None] + list(self._values.shape[1:]))

    def _splits_np(self):
        return np.asarray(self._row_splits.numpy(), dtype=np.int64)

    def nrows_int(self):
        return int(self._row_splits.shape[0]) - 1

    def nrows(self, out_type=None, name=None):
        return _core.constant(self.nrows_int(), out_type or "int64")

    def row_lengths(self, axis=1, name=None):
        return _core.constant(np.diff(self._splits_np()), "int64")

    def value_rowids(self, name=None):
        s = self._splits_np()
        return _core.constant(np.repeat(np.arange(len(s) - 1), np.diff(s)), "int64")

    def row_starts(self, name=None):
        return _core.constant(self._splits_np()[:-1], "int64")

    def row_limits(self, name=None):
        return _core.constant(self._splits_np()[1:], "int64")

    # ------------------------------------------------------------------ conversion
    def to_tensor(self, default_value=None, name=None, shape=None):
        """Rows padded with ``default_value`` (zero / empty string) to the longest row."""
        from mixprec import _ops
        s = self._splits_np()
        lengths = np.diff(s)
        nrows = len(lengths)
        width = int(lengths.max()) if nrows else 0
        if shape is not None:
            dims = list(_shape.TensorShape(shape).as_list())
            if len(dims) > 0 and dims[0] is not None:
                nrows_out = dims[0]
            else:
                nrows_out = nrows
            if len(dims) > 1 and dims[1] is not None:
                width = dims[1]
        else:
            nrows_out = nrows
        inner = list(self._values.shape[1:])
        if default_value is None:
            default_value = b"" if self.dtype == _dtypes.string else 0
        fill = _ops.cast(_core.convert_to_tensor(default_value, dtype=self.dtype), self.dtype) \
            if self.dtype != _dtypes.string else _core.convert_to_tensor(default_value, "string")
        fill = _ops.reshape(_ops.broadcast_to(fill, [1] + inner), [1] + inner)
        # index 0 is the default value, index k + 1 the k-th flat value
        idx = np.zeros((nrows_out, width), dtype=np.int64)
        rows = np.repeat(np.arange(nrows), lengths)
        cols = np.arange(int(s[-1]) if nrows else 0) - np.repeat(s[:-1], lengths)
        keep = (rows < nrows_out) & (cols < width)
        idx[rows[keep], cols[keep]] = np.nonzero(keep)[0] + 1
        table = _ops.concat([fill, self._values], 0)
        return _ops.gather(table, _core.constant(idx, "int64"))

    def to_list(self):
        s = self._splits_np()
        vals = self._values.numpy()
        return [vals[s[i]:s[i + 1]].tolist() for i in range(len(s) - 1)]

    def numpy(self):
        """As TensorFlow: a regular array when all rows have one length, else an object
        array of row arrays."""
        s = self._splits_np()
        vals = self._values.numpy()
        rows = [vals[s[i]:s[i + 1]] for i in range(len(s) - 1)]
        if not rows:
            return np.zeros((0, 0) + vals.shape[1:], dtype=vals.dtype)
        if any(len(r) != len(rows[0]) for r in rows):
            out = np.empty(len(rows), dtype=object)
            for i, r in enumerate(rows):
                out[i] = r
            return out
        return np.array(rows)

    def __getitem__(self, key):
        if isinstance(key, (int, np.integer)):
            n = self.nrows_int()
            i = int(key) + n if key < 0 else int(key)
            if not 0 <= i < n:
                raise _core.InvalidArgumentError(
                    "slice index %d of dimension 0 out of bounds." % key)
            s = self._splits_np()
            return self._values[int(s[i]):int(s[i + 1])]
        if isinstance(key, slice):
            s = self._splits_np()
            rows = range(*key.indices(self.nrows_int()))
            lengths = np.diff(s)[list(rows)]
            from mixprec import _ops
            idx = np.concatenate([np.arange(s[r], s[r + 1]) for r in rows] or [np.zeros(0, np.int64)])
            return RaggedTensor(_ops.gather(self._values, _core.constant(idx.astype(np.int64), "int64")),
                                _core.constant(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
                                               "int64"))
        raise TypeError("mixprec's RaggedTensor supports row indexing (int or slice) only, got %r"
                        % (key,))

    def __len__(self):
        return self.nrows_int()

    def __iter__(self):
        for i in range(self.nrows_int()):
            yield self[i]

    def __repr__(self):
        with np.printoptions(formatter={"all": _formatter}):
            text = _formatter(self.numpy())
        return "<tf.RaggedTensor %s>" % text

    __str__ = __repr__


def _formatter(x):
    # TensorFlow's eager repr: NumPy's layout with elements separated by commas
    if isinstance(x, np.ndarray):
        return np.array2string(x, separator=", ") if x.size else repr(x.tolist())
    return str(x)


def constant(pylist, dtype=None, ragged_rank=None, inner_shape=None, name=None, row_splits_dtype=None):
    """``tf.ragged.constant`` for a list of rows (rank 2)."""
    rows = [list(r) for r in pylist]
    flat = [v for r in rows for v in r]
    if dtype is not None:
        values = _core.constant(flat, dtype) if flat else _core.constant([], dtype)
    else:
        values = _core.constant(flat) if flat else _core.constant([], "float32")
    splits = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    return RaggedTensor(values, _core.constant(splits, "int64"))
