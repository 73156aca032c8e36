"""``tf.autograph.experimental``: ``do_not_convert`` (a function keeps its Python control
flow when a traced function calls or is made from it), ``set_loop_options`` (a traced
loop's maximum_iterations and shape invariants). Names only.
"""

from mixprec._autograph import do_not_convert  # noqa: F401
from mixprec._loops import set_loop_options  # noqa: F401

__all__ = ["do_not_convert", "set_loop_options"]
