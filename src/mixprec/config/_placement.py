"""``tf.config``'s soft device placement flag and the deprecated ``experimental_`` spellings
of ``run_functions_eagerly``. The placement flag is kept for code that sets and reads it;
mixprec's placement (an op runs where its inputs or the ``device`` scope say) does not
consult it.
"""

import warnings

from mixprec._function import functions_run_eagerly, run_functions_eagerly

__all__ = ["get_soft_device_placement", "set_soft_device_placement",
           "experimental_run_functions_eagerly", "experimental_functions_run_eagerly"]

_soft = [True]


def get_soft_device_placement():
    """``tf.config.get_soft_device_placement`` (True by default)."""
    return _soft[0]


def set_soft_device_placement(enabled):
    _soft[0] = bool(enabled)


def experimental_run_functions_eagerly(run_eagerly):
    """Deprecated spelling of ``tf.config.run_functions_eagerly`` (TensorFlow warns)."""
    warnings.warn("Use `tf.config.run_functions_eagerly` instead of the experimental version.",
                  DeprecationWarning, stacklevel=2)
    return run_functions_eagerly(run_eagerly)


def experimental_functions_run_eagerly():
    """Deprecated spelling of ``tf.config.functions_run_eagerly``."""
    warnings.warn("Use tf.config.functions_run_eagerly instead of the experimental version.",
                  DeprecationWarning, stacklevel=2)
    return functions_run_eagerly()
