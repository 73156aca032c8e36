"""TensorFlow's frequent-retracing warning: "5 out of the last 5 calls to <function f>
triggered tf.function retracing ..." on mixprec's logger, with TensorFlow's rule (per
Python function code; the last 10 calls; at most 2 warnings per function).

Owns call counting only; it must not decide when a function traces.
"""

import threading
import weakref

from mixprec._logging import get_logger

__all__ = ["detector_for"]

_THRESHOLD = 5          # traces within the window that warn
_MAX_CALL_HISTORY = 10  # calls the window spans
_MAX_WARNINGS = 2       # per detector

_MESSAGE = (
    "{} out of the last {} calls to {} triggered tf.function retracing. Tracing is expensive "
    "and the excessive number of tracings could be due to (1) creating @tf.function "
    "repeatedly in a loop, (2) passing tensors with different shapes, (3) passing Python "
    "objects instead of tensors. For (1), please define your @tf.function outside of the "
    "loop. For (2), @tf.function has reduce_retracing=True option that can avoid unnecessary "
    "retracing. For (3), please refer to "
    "https://www.tensorflow.org/guide/function#controlling_retracing and "
    "https://www.tensorflow.org/api_docs/python/tf/function for  more details.")


class _Detector:
    __slots__ = ("calls_per_tracing", "call_count", "warnings", "__weakref__")

    def __init__(self):
        self.calls_per_tracing = []
        self.call_count = 0
        self.warnings = 0

    def untraced(self):
        if not self.calls_per_tracing:
            self.calls_per_tracing = [0]
        self.calls_per_tracing[-1] += 1
        self.call_count += 1

    def traced(self, function):
        self.call_count += 1
        self.calls_per_tracing.append(1)
        while self.calls_per_tracing and \
                self.call_count - self.calls_per_tracing[0] > _MAX_CALL_HISTORY:
            self.call_count -= self.calls_per_tracing.pop(0)
        if self.warnings >= _MAX_WARNINGS or len(self.calls_per_tracing) < _THRESHOLD:
            return
        self.warnings += 1
        get_logger().warning(_MESSAGE.format(len(self.calls_per_tracing), self.call_count,
                                             function))


_detectors = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _key(python_function):
    f = python_function
    while hasattr(f, "__wrapped__"):
        f = f.__wrapped__
    f = getattr(f, "__func__", f)
    return getattr(f, "__code__", python_function)


def detector_for(python_function):
    """The detector shared by every Function of this Python code (a tf.function made
    again in a loop counts as the same function, as TensorFlow's)."""
    key = _key(python_function)
    with _lock:
        try:
            d = _detectors.get(key)
        except TypeError:
            return _Detector()
        if d is None:
            d = _Detector()
            try:
                _detectors[key] = d
            except TypeError:
                pass
        return d
