"""``tf.keras.models``: Model and Sequential under their tf-keras module path, and the
whole-model functions (their code is in keras/saving/)."""

from mixprec.keras.engine.sequential import Sequential
from mixprec.keras.engine.training import Model
from mixprec.keras.saving.cloning import clone_model
from mixprec.keras.saving.model_config import model_from_config, model_from_json
from mixprec.keras.saving.saving_api import load_model, save_model

__all__ = ["Model", "Sequential", "clone_model", "load_model", "save_model",
           "model_from_config", "model_from_json"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
