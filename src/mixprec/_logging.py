"""mixprec's logger (``mixprec.get_logger()``, like ``tf.get_logger()``).

Messages such as the mixed precision compatibility check print as
``INFO:mixprec:...`` on stderr by default, the way TensorFlow's appear as
``INFO:tensorflow:...``. Configure or silence it with the standard ``logging`` API.
"""

import logging
import sys

_LOGGER = logging.getLogger("mixprec")
if not _LOGGER.handlers:
    _handler = logging.StreamHandler(sys.stderr)
    _handler.setFormatter(logging.Formatter("%(levelname)s:mixprec:%(message)s"))
    _LOGGER.addHandler(_handler)
    _LOGGER.setLevel(logging.INFO)
    _LOGGER.propagate = False


def get_logger():
    return _LOGGER
