"""``tf.TensorArray``: a list of same-dtype, same-shape tensors written and read by index,
stacked into one tensor (TensorFlow's eager TensorArray semantics and messages).

Owns the bookkeeping (which index holds which tensor, sizes, shape checks); stacking and
slicing are the core's ops. It must not compute element values.
NOTE: elements are held as a host-side list, so indices are read on the host. A TensorArray
made while a function traces keeps that list per call and records each operation as a host
call of the graph (src/mixprec/_tensor_array_host.py): writes at a traced index (a
``tf.range`` loop's counter) trace and replay, where TensorFlow keeps a TensorList in its
while loop; under a GradientTape it stays list-backed (a write at a traced index then breaks
the graph).
"""

from mixprec import _core
from mixprec import _tensor_array_host
from mixprec._dtypes import as_dtype
from mixprec._shape import TensorShape

__all__ = ["TensorArray"]


def _text(dims):
    return "(" + ", ".join("None" if d is None else str(d) for d in dims) + \
        ("," if len(dims) == 1 else "") + ")"


def _index(i):
    if isinstance(i, _core.Variable):
        i = i.read_value()
    return int(i.numpy()) if isinstance(i, _core.Tensor) else int(i)


class TensorArray:
    """A class wrapping a dynamic-sized, per-index write-once list of tensors."""

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape=True,
                 element_shape=None, colocate_with_first_write_call=True, name=None):
        if size is None:  # TensorFlow 2.21's eager message
            raise ValueError("Size must be declared for TensorArrays when eager execution is "
                             "enabled.")
        self._dtype = as_dtype(dtype)
        self._dynamic_size = bool(dynamic_size)
        self._infer_shape = bool(infer_shape)
        # a list with None for unknown dimensions, or None for an unknown rank
        self._shape = None if element_shape is None else (
            element_shape.as_list() if isinstance(element_shape, TensorShape)
            else [None if d is None else int(d) for d in element_shape])
        if isinstance(size, _core.Variable):
            size = size.read_value()
        if isinstance(size, _core.Tensor) and _tensor_array_host.available():
            # traced: a per-call host list, its size read at every call
            self._items = [None] * _tensor_array_host.traced_size(size)
            self._host = _tensor_array_host.begin(self, size)
        else:
            self._items = [None] * _index(size)
            self._host = _tensor_array_host.begin(self)  # traced: a per-call host list

    # ------------------------------------------------------------------ properties

    @property
    def dtype(self):
        return self._dtype

    @property
    def dynamic_size(self):
        return self._dynamic_size

    @property
    def element_shape(self):
        """The elements' TensorShape. NOTE: None while the rank is unknown (mixprec has no
        unknown-rank TensorShape; TensorFlow prints ``<unknown>``)."""
        return None if self._shape is None else TensorShape(self._shape)

    @property
    def handle(self):
        return None

    @property
    def flow(self):
        return None

    def size(self, name=None):
        if self._host is not None:
            return _tensor_array_host.run(self, "size", [])
        return _core.constant(len(self._items), "int32")

    def identity(self):
        if self._host is not None:
            return self
        return self._copy(self._items)

    def close(self, name=None):
        return None

    # ------------------------------------------------------------------ helpers

    def _copy(self, items):
        out = object.__new__(TensorArray)
        out.__dict__.update(self.__dict__)
        out._items = items
        return out

    def _converted(self, value):
        """value as a tensor of the array's dtype (TensorFlow's error for another dtype)."""
        v = value.read_value() if isinstance(value, _core.Variable) else value
        if not isinstance(v, _core.Tensor):
            v = _core.convert_to_tensor(v, self._dtype)
        if v.dtype != self._dtype:
            raise _core.InvalidArgumentError(
                "TensorArray dtype is %s but Op is trying to write dtype %s" % (
                    self._dtype.name, v.dtype.name))
        return v

    def _value(self, value):
        v = self._converted(value)
        dims = v.shape.as_list()
        if self._shape is not None and (len(self._shape) != len(dims) or any(
                d is not None and d != e for d, e in zip(self._shape, dims))):
            raise ValueError("Incompatible shape for value (%s), expected (%s)" % (
                _text(dims), _text(self._shape)))
        return v

    def _merge_shape(self, v):
        if self._infer_shape:
            known = self._shape if self._shape is not None else [None] * v.ndim
            self._shape = [d if d is not None else e for d, e in zip(known, v.shape.as_list())]

    def _zeros(self):
        if self._shape is None or None in self._shape:
            return None
        return _core.fill(self._shape, 0, self._dtype)

    # ------------------------------------------------------------------ writing

    def write(self, index, value, name=None):
        if self._host is not None:
            return _tensor_array_host.run(self, 'write', [index, value])
        i = _index(index)
        v = self._value(value)
        items = list(self._items)
        if i < 0:
            raise _core.InvalidArgumentError("Tried to write to index %d but array size is: %d"
                                             % (i, len(items)))
        if i >= len(items):
            if not self._dynamic_size:
                from mixprec import errors
                raise errors.OutOfRangeError(
                    "Tried to write to index %d but array is not resizeable and size is: %d"
                    % (i, len(items)))
            items.extend([None] * (i + 1 - len(items)))
        out = self._copy(items)
        out._merge_shape(v)
        items[i] = v
        return out

    def unstack(self, value, name=None):
        if self._host is not None:
            return _tensor_array_host.run(self, 'unstack', [value])
        v = self._value_rows(value)
        n = v.shape.as_list()[0]
        if n > len(self._items) and not self._dynamic_size:
            raise ValueError("Cannot unstack %d tensors into a TensorArray of static size %d "
                             % (n, len(self._items)))
        items = [v[k] for k in range(n)]
        if len(self._items) > n:
            items += [None] * (len(self._items) - n)
        out = self._copy(items)
        if n:
            out._merge_shape(items[0])
        return out

    def scatter(self, indices, value, name=None):
        if self._host is not None:
            return _tensor_array_host.run(self, 'scatter', [indices, value])
        v = self._value_rows(value)
        idx = [_index(i) for i in (indices.numpy().tolist() if isinstance(indices, _core.Tensor)
                                   else list(indices))]
        out = self
        for k, i in enumerate(idx):
            out = out.write(i, v[k])
        return out

    def split(self, value, lengths, name=None):
        if self._host is not None:
            return _tensor_array_host.run(self, 'split', [value, lengths])
        v = self._value_rows(value)
        sizes = [_index(x) for x in (lengths.numpy().tolist()
                                     if isinstance(lengths, _core.Tensor) else list(lengths))]
        out, start = self, 0
        for k, n in enumerate(sizes):
            out = out.write(k, v[start:start + n])
            start += n
        return out

    def _value_rows(self, value):
        v = self._converted(value)
        if v.ndim == 0:
            raise ValueError("Shape must be at least rank 1 but is rank 0")
        return v

    # ------------------------------------------------------------------ reading

    def read(self, index, name=None):
        if self._host is not None:
            return _tensor_array_host.run(self, 'read', [index])
        i = _index(index)
        if i < 0 or i >= len(self._items):
            raise _core.InvalidArgumentError(
                "Tried to read from index %d but array size is: %d" % (i, len(self._items)))
        v = self._items[i]
        if v is None:
            z = self._zeros()
            if z is None:  # TensorFlow 2.21's eager message
                raise ValueError("Cannot convert a partially known TensorShape %s to a Tensor."
                                 % ("<unknown>" if self._shape is None else _text(self._shape)))
            return z
        return v

    def _all(self):
        return [self.read(i) for i in range(len(self._items))]

    def stack(self, name=None):
        if self._host is not None:
            return _tensor_array_host.run(self, 'stack', [])
        items = self._all()
        if not items:
            if self._shape is not None and None not in self._shape:
                return _core.fill([0] + self._shape, 0, self._dtype)
            raise ValueError("Cannot stack an empty TensorArray whose element shape is not "
                             "fully defined")
        from mixprec import _ops
        return _ops.stack(items)

    def gather(self, indices, name=None):
        if self._host is not None:
            return _tensor_array_host.run(self, 'gather', [indices])
        from mixprec import _ops
        idx = indices.numpy().tolist() if isinstance(indices, _core.Tensor) else list(indices)
        return _ops.stack([self.read(i) for i in idx])

    def concat(self, name=None):
        if self._host is not None:
            return _tensor_array_host.run(self, 'concat', [])
        items = self._all()
        from mixprec import _ops
        if not items:
            raise ValueError("Cannot concat an empty TensorArray")
        return _ops.concat(items, 0)

    def __repr__(self):
        n = len(self._host.items) if self._host is not None else len(self._items)
        return "<TensorArray dtype=%s size=%d>" % (self._dtype.name, n)
