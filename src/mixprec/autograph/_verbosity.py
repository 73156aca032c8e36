"""AutoGraph's log verbosity (``tf.autograph.set_verbosity``, ``AUTOGRAPH_VERBOSITY``) and
``tf.autograph.trace``. Owns only the level and where its messages go (mixprec's logger at
INFO, echoed to stdout on request); it converts nothing."""

import os
import sys
import traceback

from mixprec._logging import get_logger

_level = None  # set_verbosity's; None: the environment's
_echo = False


def set_verbosity(level, alsologtostdout=False):
    """AutoGraph's verbosity: at level N, messages of level <= N are logged (INFO)."""
    global _level, _echo
    _level = int(level)
    _echo = bool(alsologtostdout)


def get_verbosity():
    if _level is not None:
        return _level
    return int(os.environ.get("AUTOGRAPH_VERBOSITY", 0))


def has_verbosity(level):
    return get_verbosity() >= level


def log(level, msg, *args, exc_info=False):
    if not has_verbosity(level):
        return
    get_logger().info(msg, *args, exc_info=exc_info)
    if _echo:
        print(msg % args)
        if exc_info:
            traceback.print_exc()


def trace(*args):
    """Prints its arguments when the function is traced (AutoGraph's tracing-time print)."""
    print(*args)
    sys.stdout.flush()
