"""``tf.compat``'s text and version helpers: bytes/str conversion, the numeric type
tuples, ``dimension_value``, the forward-compatibility date check. Host-side Python only."""

import datetime
import numbers
import os
from contextlib import contextmanager

import numpy as np

__all__ = ["as_bytes", "as_text", "as_str", "as_str_any", "path_to_str", "dimension_value",
           "dimension_at_index", "forward_compatible", "forward_compatibility_horizon",
           "integral_types", "real_types", "complex_types", "bytes_or_text_types"]

integral_types = (numbers.Integral, np.integer)
real_types = (numbers.Real, np.integer, np.floating)
complex_types = (numbers.Complex, np.number)
bytes_or_text_types = (bytes, str)


def as_bytes(bytes_or_text, encoding="utf-8"):
    if isinstance(bytes_or_text, bytearray):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text
    raise TypeError("Expected binary or unicode string, got %r" % (bytes_or_text,))


def as_text(bytes_or_text, encoding="utf-8"):
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text.decode(encoding)
    raise TypeError("Expected binary or unicode string, got %r" % (bytes_or_text,))


as_str = as_text


def as_str_any(value, encoding="utf-8"):
    if isinstance(value, bytes):
        return as_str(value, encoding=encoding)
    return str(value)


def path_to_str(path):
    return os.fspath(path) if isinstance(path, os.PathLike) else path


def dimension_value(dimension):
    """A shape's dimension as an int or None (TensorShape dims already are)."""
    return getattr(dimension, "value", dimension)


def dimension_at_index(shape, index):
    from mixprec._shape import TensorShape
    shape = TensorShape(shape)
    if shape.rank is None:
        return None
    return shape[index]


# TensorFlow 2.21's horizon: the day its forward-compatibility window starts (it moves
# with each nightly; 2.21.0's build sets it to its release date window)
_HORIZON = [datetime.date(2025, 12, 1)]


def forward_compatible(year, month, day):
    """True when the given date is before the forward-compatibility horizon."""
    return _HORIZON[0] > datetime.date(year, month, day)


@contextmanager
def forward_compatibility_horizon(year, month, day):
    old = _HORIZON[0]
    _HORIZON[0] = datetime.date(year, month, day)
    try:
        yield
    finally:
        _HORIZON[0] = old
