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


class _TFStyleError:
    """TensorFlow's constructor (node_def, op, message) and ``message`` attribute."""

    def __init__(self, node_def=None, op=None, message=None, *args):
        super().__init__(message)
        self.node_def, self.op, self.message = node_def, op, message


class NotFoundError(_TFStyleError, OpError, FileNotFoundError):
    """A file or checkpoint key does not exist (also a FileNotFoundError)."""


class DataLossError(_TFStyleError, OpError):
    """A file's content is corrupt or truncated (bad checksum, missing bytes)."""


__all__ += ["DataLossError", "NotFoundError"]


from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
