"""``tf.saved_model``: SavedModel directories (saved_model.pb + variables/ + assets/).
mixprec writes and reads the object graph and the variables checkpoint, and Keras' metadata
for models; it stores no traced graphs, so loaded tf.functions cannot run (docs/saving.md).
The public names only; the work is _directory.py's, _protos.py's and _objects.py's."""

import os

from mixprec.saved_model import _directory, _objects

__all__ = ["save", "load", "contains_saved_model", "SaveOptions", "LoadOptions",
           "SERVING", "TRAINING", "GPU", "TPU", "DEFAULT_SERVING_SIGNATURE_DEF_KEY",
           "ASSETS_DIRECTORY", "VARIABLES_DIRECTORY", "VARIABLES_FILENAME",
           "SAVED_MODEL_FILENAME_PB", "SAVED_MODEL_FILENAME_PBTXT", "SAVED_MODEL_SCHEMA_VERSION"]

SERVING = "serve"
TRAINING = "train"
GPU = "gpu"
TPU = "tpu"
DEFAULT_SERVING_SIGNATURE_DEF_KEY = "serving_default"
ASSETS_DIRECTORY = _directory.ASSETS_DIR
VARIABLES_DIRECTORY = _directory.VARIABLES_DIR
VARIABLES_FILENAME = _directory.VARIABLES_NAME
SAVED_MODEL_FILENAME_PB = _directory.SAVED_MODEL_PB
SAVED_MODEL_FILENAME_PBTXT = _directory.SAVED_MODEL_PBTXT
SAVED_MODEL_SCHEMA_VERSION = 1

contains_saved_model = _directory.contains_saved_model


class SaveOptions:
    """``tf.saved_model.SaveOptions``: accepted for compatibility; mixprec writes no graphs,
    so the options about them have no effect."""

    def __init__(self, namespace_whitelist=None, save_debug_info=False, function_aliases=None,
                 experimental_debug_stripper=False, experimental_io_device=None,
                 experimental_variable_policy=None, experimental_custom_gradients=True,
                 experimental_image_format=False, experimental_skip_saver=False,
                 experimental_sharding_callback=None, extra_tags=None):
        self.namespace_whitelist = list(namespace_whitelist or [])
        self.save_debug_info = save_debug_info
        self.function_aliases = dict(function_aliases or {})
        self.experimental_io_device = experimental_io_device
        self.experimental_image_format = experimental_image_format
        self.extra_tags = extra_tags


class LoadOptions:
    """``tf.saved_model.LoadOptions``: accepted for compatibility."""

    def __init__(self, allow_partial_checkpoint=False, experimental_io_device=None,
                 experimental_load_function_aliases=False, experimental_variable_policy=None,
                 experimental_skip_checkpoint=False):
        self.allow_partial_checkpoint = allow_partial_checkpoint
        self.experimental_io_device = experimental_io_device
        self.experimental_skip_checkpoint = experimental_skip_checkpoint


def save(obj, export_dir, signatures=None, options=None):
    """``tf.saved_model.save``: writes ``obj`` (a tf.Module, a Keras model or layer, any
    object with variables) as a SavedModel directory, crash-safely."""
    from mixprec.train import _trackable

    export_dir = os.fspath(export_dir)
    if options is not None and not isinstance(options, SaveOptions):
        raise TypeError("options must be a tf.saved_model.SaveOptions, got %r" % (options,))
    try:
        _trackable.children(obj)
    except TypeError:
        raise ValueError("Expected an object of type `Trackable`, such as `tf.Module` or a "
                         "subclass of the `Trackable` class, for export. Got %r with type %s."
                         % (obj, type(obj))) from None
    from mixprec.keras.engine.training import Model

    if isinstance(obj, Model):
        from mixprec.keras.saving import saved_model_format

        saved_model_format.save_model(obj, export_dir, signatures=signatures,
                                      metadata_file=False)
        return None
    _objects.save(obj, export_dir, signatures=signatures)


def load(export_dir, tags=None, options=None):
    """``tf.saved_model.load``: the saved root object, its variables restored; see
    docs/saving.md for what differs from TensorFlow (no traced functions)."""
    if options is not None and not isinstance(options, LoadOptions):
        raise TypeError("options must be a tf.saved_model.LoadOptions, got %r" % (options,))
    return _objects.load(export_dir, tags=tags, options=options)
