"""Exception classes (``tf.errors``). All derive from ``OpError`` and take TensorFlow's
constructor ``(node_def, op, message, *args)`` as well as mixprec's internal one-argument
form; each also derives from the Python built-in a user would catch: InvalidArgumentError is
a ValueError, ResourceExhaustedError a MemoryError, OutOfRangeError an IndexError, dtype
mismatches also TypeErrors. This module holds no error logic of its own beyond the API shape."""

from mixprec._core import (  # noqa: F401
    CudaError, InternalError, InvalidArgumentError, InvalidDTypeError, OpError, OutOfRangeError,
    ResourceExhaustedError, UnavailableError)

# TensorFlow's error codes (tensorflow/core/protobuf/error_codes.proto)
OK, CANCELLED, UNKNOWN, INVALID_ARGUMENT, DEADLINE_EXCEEDED = 0, 1, 2, 3, 4
NOT_FOUND, ALREADY_EXISTS, PERMISSION_DENIED, RESOURCE_EXHAUSTED = 5, 6, 7, 8
FAILED_PRECONDITION, ABORTED, OUT_OF_RANGE, UNIMPLEMENTED, INTERNAL = 9, 10, 11, 12, 13
UNAVAILABLE, DATA_LOSS, UNAUTHENTICATED = 14, 15, 16


def _op_error_init(self, *args, **kwargs):
    """TF's ``(node_def, op, message, *args)`` (``OpError``: ``..., message, error_code``);
    one positional argument is mixprec's internal form: the message alone."""
    if len(args) <= 1 and not kwargs:
        node_def = op = None
        message = args[0] if args else None
        rest = ()
    else:
        names = ("node_def", "op", "message")
        vals = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names + ("error_code",):
                raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument '{k}'")
            if k in vals:
                raise TypeError(f"{type(self).__name__}.__init__() got multiple values for argument '{k}'")
            vals[k] = v
        missing = [n for n in names if n not in vals]
        if missing:
            raise TypeError(f"{type(self).__name__}.__init__() missing required positional argument(s): "
                            + ", ".join(repr(n) for n in missing))
        node_def, op, message = vals["node_def"], vals["op"], vals["message"]
        rest = args[3:]
        if type(self) is OpError:  # only the base takes the code from its caller
            code = kwargs.get("error_code", rest[0] if rest else None)
            if code is not None:
                self.error_code = code
    Exception.__init__(self, message)
    self.node_def, self.op, self.message = node_def, op, message
    self._experimental_payloads = {}


OpError.__init__ = _op_error_init
OpError.experimental_payloads = property(lambda self: getattr(self, "_experimental_payloads", {}),
                                         doc="Error payloads (always empty in mixprec).")
OpError.error_code = UNKNOWN
for _cls, _code in ((InvalidArgumentError, INVALID_ARGUMENT), (OutOfRangeError, OUT_OF_RANGE),
                    (InternalError, INTERNAL), (ResourceExhaustedError, RESOURCE_EXHAUSTED),
                    (UnavailableError, UNAVAILABLE)):
    _cls.error_code = _code


def _error(name, code, doc, *bases):
    cls = type(name, bases or (OpError,), {"__doc__": doc, "__module__": __name__, "error_code": code})
    return cls


# NOTE: NotFoundError and DataLossError are also ValueErrors (TensorFlow's are not): mixprec's
# loaders and users' `except ValueError` relied on it before OpError became a real base.
NotFoundError = _error("NotFoundError", NOT_FOUND, "A file or checkpoint key does not exist "
                       "(also a FileNotFoundError).", OpError, ValueError, FileNotFoundError)
DataLossError = _error("DataLossError", DATA_LOSS, "A file's content is corrupt or truncated "
                       "(bad checksum, missing bytes).", OpError, ValueError)
CancelledError = _error("CancelledError", CANCELLED, "An operation was cancelled.")
UnknownError = _error("UnknownError", UNKNOWN, "An error of unknown kind.")
DeadlineExceededError = _error("DeadlineExceededError", DEADLINE_EXCEEDED, "A deadline passed.")
AlreadyExistsError = _error("AlreadyExistsError", ALREADY_EXISTS, "An entity already exists.")
PermissionDeniedError = _error("PermissionDeniedError", PERMISSION_DENIED, "Permission denied.")
UnauthenticatedError = _error("UnauthenticatedError", UNAUTHENTICATED, "No valid credentials.")
FailedPreconditionError = _error("FailedPreconditionError", FAILED_PRECONDITION,
                                 "The system is not in a state the operation needs.")
AbortedError = _error("AbortedError", ABORTED, "An operation was aborted (e.g. a conflict).")
UnimplementedError = _error("UnimplementedError", UNIMPLEMENTED, "An operation is not "
                            "implemented (also a NotImplementedError).", OpError, NotImplementedError)


class OperatorNotAllowedInGraphError(TypeError):
    """A Python operator that needs a concrete value was used on a symbolic tensor."""


__all__ = [
    "AbortedError", "AlreadyExistsError", "CancelledError", "CudaError", "DataLossError",
    "DeadlineExceededError", "FailedPreconditionError", "InternalError", "InvalidArgumentError",
    "InvalidDTypeError", "NotFoundError", "OpError", "OperatorNotAllowedInGraphError",
    "OutOfRangeError", "PermissionDeniedError", "ResourceExhaustedError", "UnauthenticatedError",
    "UnavailableError", "UnimplementedError", "UnknownError",
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
    "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
]


from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
