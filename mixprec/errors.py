"""Exception classes (``tf.errors``). Every one also derives from the Python built-in a
user would catch: InvalidArgumentError is a ValueError, ResourceExhaustedError a
MemoryError, OutOfRangeError an IndexError, dtype mismatches also TypeErrors."""

from mixprec._core import (  # noqa: F401
    CudaError, InternalError, InvalidArgumentError, InvalidDTypeError, OutOfRangeError,
    ResourceExhaustedError, UnavailableError)

OpError = InvalidArgumentError

__all__ = [
    "CudaError", "InternalError", "InvalidArgumentError", "InvalidDTypeError", "OpError",
    "OutOfRangeError", "ResourceExhaustedError", "UnavailableError",
]
