"""``tf.autograph``: the public face of src/mixprec/_autograph.py (what a traced function's
Python ``if`` on a tensor becomes). Names only; the rewrite lives in ``_autograph``.
"""

from mixprec._autograph import to_code, to_graph  # noqa: F401
from mixprec.autograph import experimental  # noqa: F401
from mixprec.autograph._verbosity import set_verbosity, trace  # noqa: F401

__all__ = ["to_code", "to_graph", "experimental", "set_verbosity", "trace"]
