"""DType objects: ``mixprec.float16`` and friends, and ``as_dtype``.

Mirrors ``tf.dtypes.DType``: a DType has a ``name``, knows whether it is floating or
integer, its range (``min``/``max``) and its NumPy equivalent. ``_enum`` is the C core's
dtype code (csrc/mixprec.h: enum mp_dtype); NOTE: keep the two in the same order.
"""

import builtins

import ml_dtypes
import numpy as np

__all__ = [
    "DType", "as_dtype", "float32", "float16", "bfloat16", "float64", "int32", "int64",
    "uint8", "bool", "int8", "half", "double", "int16", "uint16", "uint32", "uint64", "string",
]


class DType:
    """A tensor element type (TensorFlow's ``tf.dtypes.DType``)."""

    __slots__ = ("_name", "_enum", "_np", "_size")

    def __init__(self, name, enum, np_type, size):
        self._name = name
        self._enum = enum
        self._np = np_type
        self._size = size

    @property
    def name(self):
        return self._name

    @property
    def as_numpy_dtype(self):
        return self._np

    @property
    def base_dtype(self):
        return self

    @property
    def real_dtype(self):
        return self

    @property
    def size(self):
        return self._size

    @property
    def itemsize(self):
        return self._size

    @property
    def is_floating(self):
        return self._name in ("float16", "bfloat16", "float32", "float64")

    @property
    def is_integer(self):
        return self._name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                              "uint64")

    @property
    def is_unsigned(self):
        return self._name in ("uint8", "uint16", "uint32", "uint64", "bool")

    @property
    def is_bool(self):
        return self._name == "bool"

    @property
    def is_complex(self):
        return False

    @property
    def is_numpy_compatible(self):
        return True

    @property
    def is_quantized(self):
        return False

    @property
    def max(self):
        """The largest finite value of this dtype."""
        if self.is_bool:
            return True
        if self.is_floating:
            return self._np(ml_dtypes.finfo(self._np).max) if self._name == "bfloat16" else self._np(
                np.finfo(self._np).max)
        return self._np(np.iinfo(self._np).max)

    @property
    def min(self):
        """The most negative finite value of this dtype (0 / False for unsigned)."""
        if self.is_bool:
            return False
        if self.is_floating:
            fi = ml_dtypes.finfo(self._np) if self._name == "bfloat16" else np.finfo(self._np)
            return self._np(fi.min)
        return self._np(np.iinfo(self._np).min)

    @property
    def limits(self):
        return (self.min, self.max)

    def is_compatible_with(self, other):
        try:
            return as_dtype(other) is self
        except TypeError:
            return False

    def __eq__(self, other):
        if other is None:
            return False
        if isinstance(other, DType):
            return other is self
        try:
            return as_dtype(other) is self
        except TypeError:
            return False

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self._name)

    def __repr__(self):
        return "tf." + self._name

    def __str__(self):
        return "<dtype: %r>" % self._name

    def __reduce__(self):
        return as_dtype, (self._name,)


float32 = DType("float32", 0, np.float32, 4)
float16 = DType("float16", 1, np.float16, 2)
bfloat16 = DType("bfloat16", 2, ml_dtypes.bfloat16, 2)
float64 = DType("float64", 3, np.float64, 8)
int32 = DType("int32", 4, np.int32, 4)
int64 = DType("int64", 5, np.int64, 8)
uint8 = DType("uint8", 6, np.uint8, 1)
bool = DType("bool", 7, np.bool_, 1)  # noqa: A001 - TensorFlow's public name
int8 = DType("int8", 8, np.int8, 1)


class _StringDType(DType):
    """tf.string: variable-length byte strings (csrc/strings.h); NumPy's object dtype holds
    them (elements are ``bytes``). Not numeric: no min/max, never floating or integer."""

    __slots__ = ()

    @property
    def min(self):
        raise TypeError("Cannot find minimum value of %s with type %s." % (self, self))

    @property
    def max(self):
        raise TypeError("Cannot find maximum value of %s with type %s." % (self, self))


string = _StringDType("string", 9, object, 0)
half = float16
double = float64


class _NamedOnlyDType(DType):
    """A TensorFlow dtype the core cannot store (no C enum): it names, compares and converts
    like TensorFlow's, but making a tensor of it raises a TypeError naming the tensor dtypes
    (the C side reads ``_enum`` to pick the storage; docs/porting.md)."""

    __slots__ = ()

    def __init__(self, name, np_type, size):  # noqa: D107 - the parent's _enum slot stays unset
        self._name = name
        self._np = np_type
        self._size = size

    @property
    def _enum(self):
        raise TypeError(
            "%s is a dtype without mixprec tensor storage: tensor dtypes are %s (cast to "
            "one of them, e.g. int32 for int16/uint16 data, int64 for uint32)" % (
                repr(self), ", ".join(d.name for d in _ALL)))


int16 = _NamedOnlyDType("int16", np.int16, 2)
uint16 = _NamedOnlyDType("uint16", np.uint16, 2)
uint32 = _NamedOnlyDType("uint32", np.uint32, 4)
uint64 = _NamedOnlyDType("uint64", np.uint64, 8)
_NAMED_ONLY = (int16, uint16, uint32, uint64)

# In C enum order (csrc/mixprec.h).
_ALL = (float32, float16, bfloat16, float64, int32, int64, uint8, bool, int8, string)

_BY_NAME = {d.name: d for d in _ALL}
_BY_NAME.update({"half": float16, "float": float32, "double": float64})
_BY_NAME.update({d.name: d for d in _NAMED_ONLY})

_BY_NP = {np.dtype(d.as_numpy_dtype): d for d in _ALL + _NAMED_ONLY}  # object -> string

# TensorFlow's _PYTHON_TO_TF maps float to float32 (int goes through NumPy: int64)
_PY_TYPES = {builtins.float: float32, builtins.int: int64, builtins.bool: bool}


def as_dtype(type_value):
    """Converts ``type_value`` (a DType, a name, a NumPy dtype or type) to a ``DType``.

    Raises:
      TypeError: if it names no supported dtype.
    """
    if isinstance(type_value, DType):
        return type_value
    if type_value is None:  # np.dtype(None) would say float64
        pass
    elif isinstance(type_value, str):
        d = _BY_NAME.get(type_value)
        if d is not None:
            return d
    elif isinstance(type_value, type) and type_value in _PY_TYPES:
        return _PY_TYPES[type_value]
    else:
        try:
            d = _BY_NP.get(np.dtype(type_value))
        except (TypeError, ValueError):
            d = None
        if d is not None:
            return d
    raise TypeError(
        "Cannot convert %r to a mixprec DType. Supported: %s" % (
            type_value, ", ".join(d.name for d in _ALL)))
