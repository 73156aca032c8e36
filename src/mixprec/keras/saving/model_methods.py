"""The saving methods of ``keras.Model`` (``get_config``, ``from_config``, ``to_json``,
``get_compile_config``, ``compile_from_config``, ``save``), as a mixin Model inherits, so
the model's training code (engine/training.py) does not hold them. Thin: the work is
model_config.py's and saving_api.py's."""

__all__ = ["ModelSavingMixin"]


class ModelSavingMixin:
    def get_config(self):
        """A functional model's layers and wiring (tf-keras 2.21's layout); a subclassed
        model's constructor arguments, as tf-keras' auto-config records them."""
        from mixprec.keras.saving import model_config

        return model_config.model_get_config(self)

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from mixprec.keras.saving import model_config

        return model_config.model_from_class_config(cls, config, custom_objects)

    def to_json(self, **kwargs):
        """``{'class_name', 'config', 'keras_version', 'backend'}`` as JSON."""
        from mixprec.keras.saving import model_config

        return model_config.model_to_json(self, **kwargs)

    def get_compile_config(self):
        """The arguments ``compile`` was called with, serialized (None if not compiled)."""
        from mixprec.keras.saving import model_config

        return model_config.get_compile_config(self)

    def compile_from_config(self, config):
        from mixprec.keras.saving import model_config

        model_config.compile_from_config(self, config)

    def save(self, filepath, overwrite=True, save_format=None, **kwargs):
        """Saves the model: ``.keras`` (a zip of config, metadata and HDF5 weights, as
        tf-keras 2.21) or ``.h5``; see docs/saving.md."""
        from mixprec.keras.saving import saving_api

        return saving_api.save_model(self, filepath, overwrite=overwrite,
                                     save_format=save_format, **kwargs)
