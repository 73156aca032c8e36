"""mixprec's logger (``mixprec.get_logger()``, like ``tf.get_logger()``) and the runtime log.

Default visibility is TensorFlow's: the logger has no level of its own, so only WARNING and
above show (as ``WARNING:mixprec:...`` on stderr) unless the user lowers it; in an interactive
shell it logs INFO and above to stdout. ``runtime_logger()`` stands for TensorFlow's C++ log (the
grappler summaries), shown at INFO unless ``TF_CPP_MIN_LOG_LEVEL`` is 1 or more. Configure or
silence either with the standard ``logging`` API.
"""

import logging
import os
import sys

_LOGGER = logging.getLogger("mixprec")


def _interactive():
    return bool(getattr(sys, "ps1", None)) or bool(sys.flags.interactive)


if not _LOGGER.handlers:
    # NOTE: unlike TensorFlow, mixprec's handler is added (and propagation off) even when the
    # root logger has handlers: no doubled lines, and output that does not depend on them
    _handler = logging.StreamHandler(sys.stdout if _interactive() else sys.stderr)
    # the name fixed: runtime_logger()'s lines print as mixprec's too
    _handler.setFormatter(logging.Formatter("%(levelname)s:mixprec:%(message)s"))
    _LOGGER.addHandler(_handler)
    _LOGGER.propagate = False
    if _interactive():
        _LOGGER.setLevel(logging.INFO)

_RUNTIME = logging.getLogger("mixprec.runtime")
try:
    _cpp_level = int(os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0") or 0)
except ValueError:
    _cpp_level = 0
_RUNTIME.setLevel(logging.INFO if _cpp_level < 1 else logging.WARNING if _cpp_level < 2
                  else logging.ERROR)


def get_logger():
    return _LOGGER


def runtime_logger():
    """Where the messages TensorFlow's C++ runtime logs go (a child of ``get_logger()``)."""
    return _RUNTIME
