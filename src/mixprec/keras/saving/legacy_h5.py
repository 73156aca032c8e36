"""HDF5 weights files in tf-keras' legacy layout (``save_weights('w.h5')``): root
attributes ``layer_names``, ``backend``, ``keras_version``; a group per layer (by name)
with a ``weight_names`` attribute and one dataset per weight under its variable name. Such
files load in tf-keras and back, by topology or ``by_name``. mixprec adds the optimizer's
state in a group tf-keras ignores (``mixprec_optimizer``, saving_lib's walk layout). Owns
this layout only; the walk is saving_lib's, h5py is optional (_h5)."""

import io

import numpy as np

from mixprec import _fileio
from mixprec.keras.saving import _h5, saving_lib

__all__ = ["save_weights", "load_weights", "is_hdf5"]

OPTIMIZER_GROUP = "mixprec_optimizer"
_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_ATTR_LIMIT = 64512  # HDF5's object header limit, as tf-keras splits long attributes


def is_hdf5(filepath):
    try:
        with open(filepath, "rb") as f:
            return f.read(8) == _SIGNATURE
    except OSError:
        return False


def _layer_weights(layer):
    return list(layer.trainable_weights) + list(layer.non_trainable_weights)


def _save_attr(group, name, data):
    data = [d.encode("utf8") if isinstance(d, str) else d for d in data]
    arr = np.asarray(data) if data else np.asarray([], dtype="S1")
    if arr.nbytes <= _ATTR_LIMIT:
        group.attrs[name] = arr
        return
    chunks = int(np.ceil(arr.nbytes / _ATTR_LIMIT))
    for i, part in enumerate(np.array_split(arr, chunks)):
        group.attrs["%s%d" % (name, i)] = part


def _load_attr(group, name):
    def decode(values):
        return [v.decode("utf8") if isinstance(v, bytes) else str(v) for v in values]

    if name in group.attrs:
        return decode(group.attrs[name])
    out, i = [], 0
    while "%s%d" % (name, i) in group.attrs:
        out.extend(decode(group.attrs["%s%d" % (name, i)]))
        i += 1
    return out


def _write_subset(group, weights):
    names = [w.name for w in weights]
    _save_attr(group, "weight_names", names)
    for name, w in zip(names, weights):
        group.create_dataset(name, data=saving_lib._value(w))


def save_weights(model, filepath):
    h5py = _h5.h5py("save_weights to an HDF5 file (.h5, .hdf5, .keras)")
    buf = io.BytesIO()
    with h5py.File(buf, "w") as f:
        write_weights_group(f, model)
        if model.optimizer is not None:
            saving_lib.write_h5(f.create_group(OPTIMIZER_GROUP), model.optimizer)
    data = buf.getvalue()
    _fileio.atomic_write(filepath, lambda fh: fh.write(data))


def write_weights_group(f, model):
    """The legacy weights layout into ``f`` (a file or a group)."""
    _save_attr(f, "layer_names", [layer.name for layer in model.layers])
    f.attrs["backend"] = b"tensorflow"
    f.attrs["keras_version"] = saving_lib.KERAS_VERSION.encode("utf8")
    for layer in sorted(model.layers, key=lambda la: la.name):
        _write_subset(f.create_group(layer.name), _layer_weights(layer))
    in_layers = {id(w) for la in model.layers for w in _layer_weights(la)}
    top = [w for w in model._trainable_weights + model._non_trainable_weights
           if id(w) not in in_layers]
    _write_subset(f.create_group("top_level_model_weights"), top)


def assign_checked(pairs):
    """Assigns (variable, array) pairs after checking every shape (all or nothing)."""
    for var, value in pairs:
        if tuple(value.shape) != tuple(var.shape):
            raise ValueError("Shape mismatch in layer weights: %s has shape %s, the file "
                             "holds %s" % (var.name, tuple(var.shape), tuple(value.shape)))
    for var, value in pairs:
        dtype = var.true_dtype if hasattr(var, "true_dtype") else var.dtype
        var.assign(np.asarray(value).astype(dtype.as_numpy_dtype))


def _values(group):
    return [np.asarray(group[name][()]) for name in _load_attr(group, "weight_names")]


def load_weights(model, filepath, by_name=False, skip_mismatch=False):
    """Loads a legacy-layout HDF5 weights file (tf-keras' or mixprec's) by topology (the
    layers with weights, in order) or by layer name; all values are checked before the
    first assignment."""
    h5py = _h5.h5py("load_weights from an HDF5 file")
    _fileio.check_regular_file(filepath, "weights file")
    with h5py.File(filepath, "r") as f:
        if "layer_names" not in f.attrs and "layer_names0" not in f.attrs \
                and "model_weights" in f:
            f = f["model_weights"]  # a whole model saved by tf-keras' model.save('m.h5')
        if "layer_names" not in f.attrs and "layer_names0" not in f.attrs:
            if "vars" in f or "layers" in f:  # the .weights.h5 layout
                if by_name:
                    raise ValueError("by_name=True is not supported for the .weights.h5 "
                                     "layout (%s)" % filepath)
                saving_lib.read_h5(f, model, skip_mismatch=skip_mismatch)
                return
            raise ValueError("Unable to load weights from %r: an HDF5 file without Keras "
                             "weights (no 'layer_names' attribute)" % filepath)
        pairs = _by_name(f, model, skip_mismatch) if by_name else _by_topology(f, model)
        opt_root = f[OPTIMIZER_GROUP] if OPTIMIZER_GROUP in f else None
        assign_checked(pairs)
        if opt_root is not None and model.optimizer is not None:
            model.optimizer.build(model.trainable_variables)
            saving_lib.read_h5(opt_root, model.optimizer)


def _by_topology(f, model):
    layers = [la for la in model.layers if _layer_weights(la)]
    names = [n for n in _load_attr(f, "layer_names") if _load_attr(f[n], "weight_names")]
    if len(names) != len(layers):
        raise ValueError("Layer count mismatch when loading weights from file. Model expected "
                         "%d layers, found %d saved layers." % (len(layers), len(names)))
    pairs = []
    for k, name in enumerate(names):
        layer = layers[k]
        weights = _layer_weights(layer)
        values = _values(f[name])
        if len(values) != len(weights):
            raise ValueError("Weight count mismatch for layer #%d (named %s in the current "
                             "model, %s in the save file). Layer expects %d weight(s). Received "
                             "%d saved weight(s)" % (k, layer.name, name, len(weights),
                                                     len(values)))
        pairs.extend(zip(weights, values))
    if "top_level_model_weights" in f:
        top = [w for w in model._trainable_weights + model._non_trainable_weights]
        values = _values(f["top_level_model_weights"])
        if len(values) != len(top):
            raise ValueError("Weight count mismatch for top-level weights when loading weights "
                             "from file. Model expects %d top-level weight(s). Received %d "
                             "saved top-level weight(s)" % (len(top), len(values)))
        pairs.extend(zip(top, values))
    return pairs


def _by_name(f, model, skip_mismatch):
    import warnings

    saved = {n: _values(f[n]) for n in _load_attr(f, "layer_names")}
    pairs = []
    for k, layer in enumerate(model.layers):
        if layer.name not in saved:
            continue
        weights, values = _layer_weights(layer), saved[layer.name]
        if len(values) != len(weights):
            if skip_mismatch:
                warnings.warn("Skipping loading of weights for layer #%d (named %s) due to "
                              "mismatch in number of weights. Layer expects %d weight(s). "
                              "Received %d saved weight(s)" % (k, layer.name, len(weights),
                                                                len(values)), stacklevel=3)
                continue
            raise ValueError("Weight count mismatch for layer #%d (named %s). Layer expects %d "
                             "weight(s). Received %d saved weight(s)" % (
                                 k, layer.name, len(weights), len(values)))
        for w, v in zip(weights, values):
            if tuple(v.shape) != tuple(w.shape):
                if skip_mismatch:
                    warnings.warn("Skipping loading weights for layer #%d (named %s) due to "
                                  "mismatch in shape for weight %s. Weight expects shape %s. "
                                  "Received saved weight with shape %s" % (
                                      k, layer.name, w.name, tuple(w.shape), tuple(v.shape)),
                                  stacklevel=3)
                    continue
                raise ValueError("Shape mismatch in layer #%d (named %s) for weight %s. Weight "
                                 "expects shape %s. Received saved weight with shape %s" % (
                                     k, layer.name, w.name, tuple(w.shape), tuple(v.shape)))
            pairs.append((w, v))
    return pairs
