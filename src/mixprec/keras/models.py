"""``tf.keras.models``: the Model and Sequential classes under their tf-keras module path.
(``load_model``/``clone_model`` are not here yet.)"""

from mixprec.keras.engine.sequential import Sequential
from mixprec.keras.engine.training import Model

__all__ = ["Model", "Sequential"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
