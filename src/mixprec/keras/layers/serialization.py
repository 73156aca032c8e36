"""``tf.keras.layers.serialize`` / ``deserialize``: a layer to and from tf-keras 2.21's
config dict ({'module', 'class_name', 'config', 'registered_name'}), through the saving
library's one serializer; no format of its own."""

__all__ = ["serialize", "deserialize"]


def serialize(layer, use_legacy_format=False):
    """The layer's config dict (``use_legacy_format``: class_name and config only)."""
    from mixprec.keras.saving import serialization_lib

    if use_legacy_format:
        return {"class_name": type(layer).__name__, "config": layer.get_config()}
    return serialization_lib.serialize_keras_object(layer)


def deserialize(config, custom_objects=None, use_legacy_format=False):
    """The layer (or model) a config dict describes."""
    from mixprec.keras.saving import serialization_lib

    return serialization_lib.deserialize_keras_object(config, custom_objects)
