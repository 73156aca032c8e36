"""``tf.keras`` for mixprec: ``from mixprec import keras`` in place of ``from tensorflow
import keras``. Gathers the subpackages; the code is in engine/, layers/ and the modules."""

from mixprec.keras import (  # noqa: F401
    activations, backend, callbacks, constraints, datasets, initializers, losses, metrics,
    mixed_precision, optimizers, regularizers, utils)
from mixprec.keras import layers  # noqa: F401
from mixprec.keras.engine.input_layer import Input  # noqa: F401
from mixprec.keras.engine.sequential import Sequential  # noqa: F401
from mixprec.keras.engine.training import Model  # noqa: F401
from mixprec.keras import models, preprocessing, saving  # noqa: F401,E402

__all__ = ["Input", "Model", "Sequential", "activations", "backend", "callbacks", "constraints",
           "datasets", "initializers", "layers", "losses", "metrics", "mixed_precision", "models",
           "optimizers", "preprocessing", "regularizers", "saving", "utils"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
