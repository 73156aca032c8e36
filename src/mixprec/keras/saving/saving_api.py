"""``model.save`` / ``keras.models.save_model`` / ``load_model``: the choice of format by
suffix and ``save_format`` with tf-keras 2.21's rules and messages. ``.keras`` is the
native format (saving_lib.py); ``.h5`` the legacy whole-model HDF5 file (legacy_model_h5.py);
a path without a suffix (or ``save_format='tf'``) TensorFlow's SavedModel directory
(saved_model_format.py). Owns the dispatch only."""

import os
import warnings
import zipfile

from mixprec.keras.saving import legacy_h5, saving_lib

__all__ = ["save_model", "load_model"]


def get_save_format(filepath, save_format):
    if save_format:
        if save_format in ("keras", "keras_v3"):
            return "keras"
        if save_format in ("h5", "hdf5"):
            return "h5"
        if save_format in ("tf", "tensorflow"):
            return "tf"
        raise ValueError("Unknown `save_format` argument. Expected one of 'keras', 'tf', or "
                         "'h5'. Received: save_format=%s" % (save_format,))
    if str(filepath).endswith(".keras"):
        return "keras"
    if str(filepath).endswith((".h5", ".hdf5")):
        return "h5"
    return "tf"


def save_model(model, filepath, overwrite=True, save_format=None, **kwargs):
    filepath = os.fspath(filepath)
    fmt = get_save_format(filepath, save_format)
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError("%s exists and overwrite=False" % filepath)
    if fmt == "tf":
        from mixprec.keras.saving import saved_model_format

        unknown = set(kwargs) - {"include_optimizer", "signatures", "options", "save_traces"}
        if unknown:
            raise TypeError("save_model() got unexpected keyword arguments %s"
                            % sorted(unknown))
        saved_model_format.save_model(model, filepath, **kwargs)
        return None
    if fmt == "h5":
        warnings.warn("You are saving your model as an HDF5 file via `model.save()`. This "
                      "file format is considered legacy. We recommend using instead the "
                      "native TF-Keras format, e.g. `model.save('my_model.keras')`.",
                      stacklevel=3)
        from mixprec.keras.saving import legacy_model_h5

        return legacy_model_h5.save_model(model, filepath, **kwargs)
    if kwargs:
        raise ValueError("The following argument(s) are not supported with the native "
                         "TF-Keras format: %s" % list(kwargs))
    if save_format is not None and not filepath.endswith(".keras"):
        raise ValueError("Invalid `filepath` argument: expected a `.keras` extension. "
                         "Received: filepath=%s" % filepath)
    return saving_lib.save_model(model, filepath)


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True, **kwargs):
    filepath = os.fspath(filepath)
    if filepath.endswith(".keras") and zipfile.is_zipfile(filepath):
        if kwargs:
            raise ValueError("The following argument(s) are not supported with the native "
                             "TF-Keras format: %s" % list(kwargs))
        return saving_lib.load_model(filepath, custom_objects=custom_objects,
                                     compile=compile, safe_mode=safe_mode)
    if not os.path.exists(filepath):
        raise OSError("No file or directory found at %s" % filepath)
    if os.path.isdir(filepath):
        from mixprec.keras.saving import saved_model_format

        unknown = set(kwargs) - {"options"}
        if unknown:
            raise TypeError("load_model() got unexpected keyword arguments %s"
                            % sorted(unknown))
        return saved_model_format.load_model(filepath, custom_objects=custom_objects,
                                             compile=compile, **kwargs)
    if legacy_h5.is_hdf5(filepath):
        from mixprec.keras.saving import legacy_model_h5

        return legacy_model_h5.load_model(filepath, custom_objects=custom_objects,
                                          compile=compile)
    raise ValueError("Unable to load the model from %r: it is neither a '.keras' zip archive "
                     "nor an HDF5 file. hint: models are written by model.save('....keras')"
                     % filepath)
