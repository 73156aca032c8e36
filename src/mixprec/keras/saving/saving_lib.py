"""The ``.keras`` model file as tf-keras 2.21 writes it: a zip of ``metadata.json``,
``config.json`` (``serialize_keras_object(model)``, compile config included) and
``model.weights.h5``, whose groups follow tf-keras' attribute walk (``layers/dense/vars``,
``optimizer/vars``, ``metrics/mean/vars``) with datasets ``0``, ``1``... per object; and
the ``.weights.h5`` file, the same HDF5 layout alone. Owns the walk and the two files; the
configs are model_config.py's and serialization_lib.py's. Writes go through _fileio."""

import datetime
import io
import json
import re
import warnings
import zipfile

import numpy as np

from mixprec import _fileio, _logging
from mixprec.keras.saving import _h5
from mixprec.keras.saving import serialization_lib as _ser

__all__ = ["save_model", "load_model", "save_weights_only", "load_weights_only"]

KERAS_VERSION = "2.21.0"  # the tf-keras version whose format is written
CONFIG_FILENAME = "config.json"
METADATA_FILENAME = "metadata.json"
VARS_FILENAME = "model.weights.h5"


# ------------------------------------------------------------------ the walk


def _snake(name):
    """tf-keras' to_snake_case (names of objects held in lists: 'dense', 'conv2d',
    'batch_normalization', 're_lu')."""
    s = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    s = re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()
    return s if not s.startswith("_") else "private" + s


def _kind(obj):
    from mixprec.keras.engine.base_layer import Layer
    from mixprec.keras.metrics import Metric
    from mixprec.keras.mixed_precision import loss_scale_optimizer as lso
    from mixprec.keras.optimizers.optimizer import _BaseOptimizer as Optimizer

    if isinstance(obj, Layer):
        return "layer"
    if isinstance(obj, lso._LossScaleOptimizerBase):
        return "lso"
    if isinstance(obj, Optimizer):
        return "optimizer"
    if isinstance(obj, Metric):
        return "metric"
    return None


# mixprec's own attributes holding layers that tf-keras has under other (skipped) names
_INTERNAL = frozenset({"_layers", "_graph_layers", "_stack", "_metric_objs", "_loss_tracker",
                       "_output_loss_trackers", "_nodes", "_input_kt", "_output_kt",
                       "_inbound_nodes", "_activity_regularizer", "optimizer",
                       "compiled_loss", "compiled_metrics", "history", "inputs", "outputs", "_compile_config",
                       "_loss_spec", "_metric_specs", "_weighted_metric_specs",
                       "_loss_weights"})


def _holds_trackable(value):
    if _kind(value) is not None:
        return True
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple, set)):
        return any(_kind(v) is not None for v in value)
    return False


def _children(obj):
    """(attribute name, child) as tf-keras' walk meets them: attribute names in reverse
    sorted order (so 'optimizer' before 'metrics' before 'layers')."""
    from mixprec.keras.engine.sequential import Sequential
    from mixprec.keras.engine.training import Model

    kind = _kind(obj)
    found = {}
    if kind == "layer":
        for name, value in vars(obj).items():
            if name.startswith("__") or name in _INTERNAL or not _holds_trackable(value):
                continue
            found[name] = value
        if isinstance(obj, Model):
            if isinstance(obj, Sequential):
                found["layers"] = obj.layers  # without the InputLayer, as tf-keras
            else:
                found["layers"] = obj.layers
            if obj.optimizer is not None:
                found["optimizer"] = obj.optimizer
            if obj.__dict__.get("_metric_objs") is not None:  # built by fit/evaluate
                found["metrics"] = obj.metrics
    elif kind == "lso":
        found["inner_optimizer"] = obj.inner_optimizer
    return [(name, found[name]) for name in sorted(found, reverse=True)]


def _own_variables(obj):
    """The variables tf-keras' ``save_own_variables`` stores for ``obj``, in its order."""
    kind = _kind(obj)
    if kind == "layer":
        return list(obj._trainable_weights) + list(obj._non_trainable_weights)
    if kind == "metric":
        return list(obj.variables) if hasattr(obj, "variables") else list(obj.weights)
    if kind == "lso":
        return _optimizer_variables(obj.inner_optimizer)
    if kind == "optimizer":
        return _optimizer_variables(obj)
    return []


def _optimizer_variables(opt):
    """[iterations] + slots in tf-keras' order. tf-keras' SGD keeps a zero momentum slot
    per variable even without momentum: a zero array stands in for it (``_ZeroSlot``)."""
    from mixprec.train import _trackable

    if opt._IS_LEGACY:
        return []  # tf-keras' legacy optimizers have no save_own_variables: not stored
    slots = _trackable.tf_slot_order(opt)
    if type(opt).__name__ == "SGD" and not opt._slot_names_used():
        slots = _trackable._zero_slots(opt)
    return [opt._iterations] + [s for _, _, s in slots]


def walk(root):
    """[(path, object, own variables)] in tf-keras' order (``''`` is the root)."""
    out, visited = [], set()

    def visit(obj, path):
        if id(obj) in visited:
            return
        visited.add(id(obj))
        out.append((path, obj, _own_variables(obj)))
        if _kind(obj) == "lso":
            scale = getattr(obj, "_loss_scale_obj", None)
            if scale is not None and getattr(scale, "variables", None):
                # mixprec's addition: the loss scale's state (tf-keras does not store it;
                # it ignores groups it does not visit)
                out.append((_join(path, "loss_scale"), scale, list(scale.variables)))
        for attr, child in _children(obj):
            if _kind(child) is not None:
                visit(child, _join(path, attr))
                continue
            items = list(child.values()) if isinstance(child, dict) else list(child)
            used = {}
            for item in items:
                if _kind(item) is None or id(item) in visited:
                    continue
                name = _snake(type(item).__name__)
                if name in used:
                    used[name] += 1
                    name = "%s_%d" % (name, used[name])
                else:
                    used[name] = 0
                visit(item, _join(path, attr, name))

    visit(root, "")
    return out


def _join(*parts):
    return "/".join(p for p in parts if p)


def _value(var):
    arr = np.asarray(var.numpy() if hasattr(var, "numpy") else var._checkpoint_value())
    if arr.dtype.name == "bfloat16":  # HDF5 has no bfloat16: stored exactly as float32
        arr = arr.astype(np.float32)
    return arr


# ------------------------------------------------------------------ HDF5 store


def write_h5(h5file, root):
    """Writes ``root``'s state into an open h5py File (tf-keras' layout: a group per
    object with a ``vars`` group holding datasets '0', '1', ...)."""
    for path, _obj, variables in walk(root):
        group = h5file.create_group(path).create_group("vars") if path else \
            h5file.create_group("vars")
        for i, var in enumerate(variables):
            group.create_dataset(str(i), data=_value(var))


def read_h5(h5file, root, skip_mismatch=False):
    """Assigns ``root``'s variables from an open h5py File written by ``write_h5`` or
    tf-keras. Every value is read and checked before the first assignment (all or
    nothing); an optimizer whose variable count differs is skipped with tf-keras' warning."""
    assign = []
    for path, obj, variables in walk(root):
        kind = _kind(obj)
        key = _join(path, "vars")
        group = h5file[key] if key in h5file else {}
        names = sorted(group.keys(), key=lambda k: int(k) if k.isdigit() else -1)
        values = [np.asarray(group[k][()]) for k in names]
        if kind is None:  # a LossScaleOptimizer's loss scale (mixprec's extra group)
            if len(values) == len(variables):
                assign.extend(zip(variables, values))
            continue
        if kind in ("optimizer", "lso"):
            if len(values) != len(variables):
                msg = ("Skipping variable loading for optimizer '%s', because it has %d "
                       "variables whereas the saved optimizer has %d variables. "
                       % (getattr(obj, "_name", getattr(obj, "name", "")), len(variables),
                          len(values)))
                if len(variables) <= 1:
                    msg += "This is likely because the optimizer has not been called/built yet."
                _logging.get_logger().warning(msg)
                continue
        elif kind == "metric":
            if len(values) != len(variables):
                continue  # tf-keras builds metrics lazily; their state is reset by fit anyway
        elif len(values) != len(variables):
            err = ValueError("Layer '%s' expected %d variables, but received %d variables "
                             "during loading. Expected: %s" % (
                                 obj.name, len(variables), len(values),
                                 [v.name for v in variables]))
            if skip_mismatch:
                warnings.warn("Could not load weights in object %s. Skipping object. "
                              "Exception encountered: %s" % (obj, err), stacklevel=3)
                continue
            raise err
        pairs = []
        for var, value in zip(variables, values):
            if not hasattr(var, "assign"):  # a stand-in slot (tf-keras' SGD zeros)
                continue
            if tuple(value.shape) != tuple(var.shape):
                err = ValueError("Shape mismatch in %s: the file holds %s for %s, the model "
                                 "has %s" % (path or "the model", tuple(value.shape),
                                             var.name, tuple(var.shape)))
                if skip_mismatch:
                    warnings.warn("Could not load weights in object %s. Skipping object. "
                                  "Exception encountered: %s" % (obj, err), stacklevel=3)
                    pairs = None
                    break
                raise err
            pairs.append((var, value))
        if pairs:
            assign.extend(pairs)
    for var, value in assign:
        dtype = var.true_dtype if hasattr(var, "true_dtype") else var.dtype
        var.assign(np.asarray(value).astype(dtype.as_numpy_dtype))


# ------------------------------------------------------------------ .keras


def save_model(model, filepath):
    """Writes ``filepath`` (a ``.keras`` zip) crash-safely: the previous file stays whole
    until the new one is complete."""
    filepath = str(filepath)
    if not filepath.endswith(".keras"):
        raise ValueError("Invalid `filepath` argument: expected a `.keras` extension. "
                         "Received: filepath=%s" % filepath)
    h5py = _h5.h5py("Saving a model (model.save('....keras'))")
    if not model.built:
        warnings.warn("You are saving a model that has not yet been built. It might not "
                      "contain any weights yet. Consider building the model first by calling "
                      "it on some data.", stacklevel=3)
    with _ser.ObjectSharingScope():
        config = _ser.serialize_keras_object(model)
    config_json = json.dumps(config, default=_json_default)
    metadata = json.dumps({"keras_version": KERAS_VERSION, "date_saved":
                           datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")})
    buf = io.BytesIO()
    with h5py.File(buf, "w") as f:
        write_h5(f, model)
    weights = buf.getvalue()

    def write(fh):
        with zipfile.ZipFile(fh, "w") as zf:
            zf.writestr(METADATA_FILENAME, metadata)
            zf.writestr(CONFIG_FILENAME, config_json)
            zf.writestr(VARS_FILENAME, weights)

    _fileio.atomic_write(filepath, write)


def _json_default(obj):
    from mixprec.keras.saving.model_config import _json_default as default

    return default(obj)


def _open_archive(filepath):
    _fileio.check_regular_file(filepath, "model file")
    try:
        return zipfile.ZipFile(filepath, "r")
    except zipfile.BadZipFile as e:
        raise ValueError("Unable to load the model from %r: not a .keras zip archive (%s)"
                         % (filepath, e)) from None


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    filepath = str(filepath)
    if not filepath.endswith(".keras"):
        raise ValueError("Invalid filename: expected a `.keras` extension. Received: "
                         "filepath=%s" % filepath)
    with _open_archive(filepath) as zf:
        names = zf.namelist()
        if CONFIG_FILENAME not in names:
            raise ValueError("Unable to load the model from %r: the archive has no %s"
                             % (filepath, CONFIG_FILENAME))
        config = json.loads(zf.read(CONFIG_FILENAME))
        if not compile:
            config["compile_config"] = None
        with _ser.ObjectSharingScope():
            model = _ser.deserialize_keras_object(config, custom_objects, safe_mode=safe_mode)
        if VARS_FILENAME in names:
            h5py = _h5.h5py("Loading a .keras model")
            with h5py.File(io.BytesIO(zf.read(VARS_FILENAME)), "r") as f:
                read_h5(f, model)
        elif "model.weights.npz" in names:
            raise ValueError("%r stores its weights as model.weights.npz (tf-keras' "
                             "weights_format='npz'), which mixprec does not read; save it "
                             "with the default HDF5 weights" % filepath)
        else:
            raise ValueError("Expected a model.weights.h5 or model.weights.npz file.")
    return model


# ------------------------------------------------------------------ .weights.h5


def save_weights_only(model, filepath):
    filepath = str(filepath)
    if not filepath.endswith(".weights.h5"):
        raise ValueError("Invalid `filepath` argument: expected a `.weights.h5` extension. "
                         "Received: filepath=%s" % filepath)
    h5py = _h5.h5py("save_weights('....weights.h5')")
    buf = io.BytesIO()
    with h5py.File(buf, "w") as f:
        write_h5(f, model)
    data = buf.getvalue()
    _fileio.atomic_write(filepath, lambda fh: fh.write(data))


def load_weights_only(model, filepath, skip_mismatch=False):
    filepath = str(filepath)
    h5py = _h5.h5py("load_weights('....weights.h5')")
    if filepath.endswith(".keras"):
        with _open_archive(filepath) as zf:
            with h5py.File(io.BytesIO(zf.read(VARS_FILENAME)), "r") as f:
                read_h5(f, model, skip_mismatch=skip_mismatch)
        return
    _fileio.check_regular_file(filepath, "weights file")
    with h5py.File(filepath, "r") as f:
        read_h5(f, model, skip_mismatch=skip_mismatch)
