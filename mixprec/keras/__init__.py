"""``tf.keras`` for mixprec: ``from mixprec import keras`` in place of ``from tensorflow
import keras``. Only the mixed precision API exists so far; layers, models, optimizers and
losses arrive with their issues. Keep this module import-light: it only gathers subpackages.
"""

from mixprec.keras import mixed_precision, optimizers  # noqa: F401

__all__ = ["mixed_precision", "optimizers"]
