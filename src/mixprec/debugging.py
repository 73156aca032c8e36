"""``tf.debugging``: find the first inf/NaN, and assertions on tensors.

``enable_check_numerics()`` makes every op that produces a floating tensor holding an inf
or NaN raise ``InvalidArgumentError`` naming the op, the Keras layer it ran in, its dtype
and shape (the check is in the C op layer, on the device). ``mixprec.testing.check_numerics``
is the same as a context manager.
"""

from mixprec import _core

from mixprec._asserts import (  # noqa: F401
    Assert, assert_equal, assert_greater, assert_greater_equal, assert_integer, assert_less,
    assert_less_equal, assert_near, assert_negative, assert_non_negative, assert_non_positive,
    assert_none_equal, assert_positive, assert_proper_iterable, assert_rank,
    assert_rank_at_least, assert_rank_in, assert_same_float_dtype, assert_scalar, assert_shapes,
    assert_type, is_numeric_tensor)
from mixprec._debug_flags import (  # noqa: F401
    disable_traceback_filtering, enable_traceback_filtering, get_log_device_placement,
    is_traceback_filtering_enabled, set_log_device_placement)

__all__ = ["enable_check_numerics", "disable_check_numerics", "check_numerics",
           "assert_all_finite", "is_check_numerics_enabled", "Assert", "assert_equal",
           "assert_greater", "assert_greater_equal", "assert_integer", "assert_less",
           "assert_less_equal", "assert_near", "assert_negative", "assert_non_negative",
           "assert_non_positive", "assert_none_equal", "assert_positive",
           "assert_proper_iterable", "assert_rank", "assert_rank_at_least", "assert_rank_in",
           "assert_same_float_dtype", "assert_scalar", "assert_shapes", "assert_type",
           "is_numeric_tensor", "disable_traceback_filtering", "enable_traceback_filtering",
           "is_traceback_filtering_enabled", "get_log_device_placement",
           "set_log_device_placement"]

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
