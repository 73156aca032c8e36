"""``tf.compat``: the ``v1`` names TensorFlow 2 still keeps (only those mixprec supports),
``v2`` (mixprec itself) and the text/version helpers (compat/_text.py)."""

import sys as _sys

from mixprec.compat import v1  # noqa: F401
from mixprec.compat._text import *  # noqa: F401,F403

v2 = _sys.modules["mixprec"]  # tf.compat.v2 is TensorFlow 2's own API

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
