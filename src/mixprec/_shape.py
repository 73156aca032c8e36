"""TensorShape: the value of ``Tensor.shape`` (TensorFlow's ``tf.TensorShape``).

A tuple of dimensions, each an ``int`` or ``None`` (unknown, e.g. the batch of a Keras
symbolic input); ``TensorShape(None)`` is the shape of unknown rank (an empty tuple whose
``rank`` is None). Compares equal to tuples and lists with the same dimensions.
"""

__all__ = ["TensorShape"]


class TensorShape(tuple):
    """An immutable tuple of dimension sizes (``None`` = unknown)."""

    __slots__ = ()

    def __new__(cls, dims=()):
        if dims is None:  # unknown rank (a from_generator spec given only output_types)
            return _unknown()
        if isinstance(dims, TensorShape) and dims.rank is None:
            return dims
        if isinstance(dims, int):
            dims = (dims,)
        out = []
        for d in dims:
            if d is None:
                out.append(None)
                continue
            d = int(d)
            if d < 0:
                raise ValueError("Dimension %d must be >= 0" % d)
            out.append(d)
        return super().__new__(cls, out)

    @property
    def rank(self):
        return len(self)

    ndims = rank

    @property
    def dims(self):
        return list(self)

    def as_list(self):
        return list(self)

    def num_elements(self):
        n = 1
        for d in self:
            if d is None:
                return None
            n *= d
        return n

    def is_fully_defined(self):
        return all(d is not None for d in self)

    def is_compatible_with(self, other):
        other = TensorShape(other)
        if other.rank is None:
            return True
        return len(self) == len(other) and all(
            a is None or b is None or a == b for a, b in zip(self, other))

    def concatenate(self, other):
        return TensorShape(tuple(self) + tuple(TensorShape(other)))

    def __getitem__(self, key):
        r = super().__getitem__(key)
        return TensorShape(r) if isinstance(key, slice) else r

    def __eq__(self, other):
        if isinstance(other, (tuple, list)):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = tuple.__hash__

    def __repr__(self):
        return "TensorShape(%s)" % list(self)

    def __str__(self):
        if len(self) == 1:
            return "(%s,)" % ("None" if self[0] is None else self[0])
        return "(%s)" % ", ".join("None" if d is None else str(d) for d in self)


class _UnknownRankShape(TensorShape):
    """``TensorShape(None)``: nothing known, not even the rank (TensorFlow's
    ``<unknown>``). Compatible with every shape; ``as_list`` refuses, as TensorFlow's."""

    __slots__ = ()

    @property
    def rank(self):
        return None

    ndims = rank

    @property
    def dims(self):
        return None

    def as_list(self):
        raise ValueError("as_list() is not defined on an unknown TensorShape.")

    def num_elements(self):
        return None

    def is_fully_defined(self):
        return False

    def is_compatible_with(self, other):
        TensorShape(other)
        return True

    def concatenate(self, other):
        return self

    def __eq__(self, other):
        return isinstance(other, _UnknownRankShape)

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = tuple.__hash__

    def __repr__(self):
        return "TensorShape(None)"

    def __str__(self):
        return "<unknown>"


_UNKNOWN = None


def _unknown():
    global _UNKNOWN
    if _UNKNOWN is None:
        _UNKNOWN = tuple.__new__(_UnknownRankShape, ())
    return _UNKNOWN
