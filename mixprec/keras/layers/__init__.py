"""``tf.keras.layers``."""

from mixprec.keras.engine.base_layer import Layer  # noqa: F401
from mixprec.keras.engine.input_layer import Input, InputLayer  # noqa: F401
from mixprec.keras.layers.core import (  # noqa: F401
    Activation, Dense, Dropout, Flatten, Lambda, Reshape)

__all__ = ["Layer", "Input", "InputLayer", "Dense", "Activation", "Dropout", "Flatten",
           "Reshape", "Lambda"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
