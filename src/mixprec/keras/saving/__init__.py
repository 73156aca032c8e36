"""``tf.keras.saving``: whole models (``save_model``/``load_model``, the ``.keras`` file),
object configs (``serialize_keras_object``/``deserialize_keras_object``), the custom-object
registry, and the weights files shared by Model and the checkpoint code (weights_io)."""

from mixprec.keras.saving.object_registration import (  # noqa: F401
    CustomObjectScope, custom_object_scope, get_custom_objects, get_registered_name,
    get_registered_object, register_keras_serializable)
from mixprec.keras.saving.saving_api import load_model, save_model  # noqa: F401
from mixprec.keras.saving.serialization_lib import (  # noqa: F401
    deserialize_keras_object, serialize_keras_object)

__all__ = ["CustomObjectScope", "custom_object_scope", "get_custom_objects",
           "get_registered_name", "get_registered_object", "register_keras_serializable",
           "load_model", "save_model", "deserialize_keras_object", "serialize_keras_object"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
