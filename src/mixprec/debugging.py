"""``tf.debugging``: find the first inf/NaN, and assertions on tensors.

``enable_check_numerics()`` makes every op that produces a floating tensor holding an inf
or NaN raise ``InvalidArgumentError`` naming the op, the Keras layer it ran in, its dtype
and shape (the check is in the C op layer, on the device). ``mixprec.testing.check_numerics``
is the same as a context manager.
"""

from mixprec import _core

__all__ = ["enable_check_numerics", "disable_check_numerics", "check_numerics",
           "assert_all_finite", "is_check_numerics_enabled"]

_enabled = False


def enable_check_numerics(stack_height_limit=30, path_length_limit=50):
    """Raise at the first op that produces inf or NaN (process-wide)."""
    global _enabled
    _enabled = True
    _core.check_numerics(True)


def disable_check_numerics():
    global _enabled
    _enabled = False
    _core.check_numerics(False)


def is_check_numerics_enabled():
    return _enabled


def check_numerics(tensor, message, name=None):
    """Returns ``tensor`` if it holds no inf/NaN; raises InvalidArgumentError otherwise."""
    t = _core.convert_to_tensor(tensor)
    if not t.dtype.is_floating:
        raise TypeError("check_numerics needs a floating tensor, got %s" % t.dtype.name)
    if not _core.all_finite([t]):
        nan = bool(_core.reduce_any(_core.is_nan(t)))
        raise _core.InvalidArgumentError(
            "%s : Tensor had %s values" % (message, "NaN" if nan else "Inf"))
    return t


def assert_all_finite(t, msg, name=None):
    return check_numerics(t, msg)

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
