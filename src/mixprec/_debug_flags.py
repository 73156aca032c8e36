"""``tf.debugging``'s process-wide switches: traceback filtering and device-placement
logging. Flags only: mixprec's tracebacks are never filtered (the switch is kept for
TensorFlow code that toggles it) and the placement log is written by the core's op layer.
"""

from mixprec import _core

__all__ = ["enable_traceback_filtering", "disable_traceback_filtering",
           "is_traceback_filtering_enabled", "set_log_device_placement",
           "get_log_device_placement"]

_traceback_filtering = [True]


def enable_traceback_filtering():
    """``tf.debugging.enable_traceback_filtering`` (the default)."""
    _traceback_filtering[0] = True


def disable_traceback_filtering():
    _traceback_filtering[0] = False


def is_traceback_filtering_enabled():
    return _traceback_filtering[0]


_log_placement = [False]


def set_log_device_placement(enabled):
    """``tf.debugging.set_log_device_placement``: when on, every op executed eagerly writes
    ``Executing op <Name> in device /job:localhost/replica:0/task:0/device:CPU:0`` to
    stderr (TensorFlow's line)."""
    _log_placement[0] = bool(enabled)
    setter = getattr(_core, "set_log_device_placement", None)
    if setter is not None:
        setter(_log_placement[0])


def get_log_device_placement():
    return _log_placement[0]
