"""``tf.autograph.experimental``: ``do_not_convert`` (a function keeps its Python control
flow when a traced function calls or is made from it). Names only.
"""

from mixprec._autograph import do_not_convert  # noqa: F401

__all__ = ["do_not_convert"]
