"""Keras models in TensorFlow's SavedModel directory (``model.save('my_model')``,
``save_format='tf'``, ``load_model('my_model')``): the per-object Keras metadata
(keras_metadata.pb: each layer's ``{'class_name', 'config'}``, the root's
``training_config``) and the variables checkpoint, read from directories tf-keras 2.21
wrote and written the same way. Architecture comes from the configs, never from traced
graphs (mixprec stores none). Owns the Keras side only; the directory and its protobufs are
mixprec/saved_model's."""

import json
import os

from mixprec import _logging
from mixprec.keras.saving import legacy_model_h5, model_config, saving_lib
from mixprec.saved_model import _directory, _objects

__all__ = ["save_model", "load_model", "is_saved_model_dir"]

# tf-keras' SavedUserObject identifiers (keras/saving/legacy/saved_model/constants.py)
SEQUENTIAL = "_tf_keras_sequential"
NETWORK = "_tf_keras_network"
MODEL = "_tf_keras_model"
LAYER = "_tf_keras_layer"
INPUT_LAYER = "_tf_keras_input_layer"
METRIC = "_tf_keras_metric"
_MODEL_IDS = (SEQUENTIAL, NETWORK, MODEL)


def is_saved_model_dir(path):
    return _directory.contains_saved_model(path)


# ------------------------------------------------------------------ saving


def identifier(obj):
    """The SavedUserObject identifier tf-keras gives a Keras object ('' for others)."""
    from mixprec.keras.engine.base_layer import Layer
    from mixprec.keras.engine.input_layer import InputLayer
    from mixprec.keras.engine.sequential import Sequential
    from mixprec.keras.engine.training import Model
    from mixprec.keras.metrics import Metric

    if isinstance(obj, Sequential):
        return SEQUENTIAL
    if isinstance(obj, Model):
        return NETWORK if getattr(obj, "_is_graph_network", False) else MODEL
    if isinstance(obj, InputLayer):
        return INPUT_LAYER
    if isinstance(obj, Metric):
        return METRIC
    if isinstance(obj, Layer):
        return LAYER
    return ""


def _registered(obj, class_name):
    """tf-keras writes a custom class under its registered name ('package>Name')."""
    from mixprec.keras.saving import object_registration

    name = object_registration.get_registered_name(type(obj))
    return name if "Custom>" not in name and ">" in name else class_name


def _layer_metadata(layer):
    from mixprec.keras.engine.training import Model

    doc = legacy_model_h5._legacy(layer)
    meta = {"name": layer.name, "trainable": bool(layer.trainable),
            "expects_training_arg": "training" in model_config._call_arg_names(layer),
            "dtype": getattr(layer.dtype_policy, "name", None) if hasattr(layer, "dtype_policy")
            else None,
            "batch_input_shape": None, "stateful": bool(getattr(layer, "stateful", False)),
            "must_restore_from_config": False,
            "preserve_input_structure_in_config": False, "autocast": True,
            "class_name": _registered(layer, doc["class_name"]), "config": doc["config"]}
    build = model_config.layer_build_config(layer)
    if build and build.get("input_shape") is not None:
        meta["build_input_shape"] = build["input_shape"]
    if isinstance(layer, Model):
        meta["is_graph_network"] = bool(getattr(layer, "_is_graph_network", False))
    return meta


def _metric_metadata(metric):
    doc = legacy_model_h5._legacy(metric)
    return {"class_name": doc["class_name"], "name": metric.name,
            "dtype": getattr(metric, "dtype", "float32"), "config": doc["config"]}


def _training_config(model):
    compile_args = model.__dict__.get("_compile_config")
    if model.optimizer is None or compile_args is None:
        return None
    opt = compile_args["optimizer"]
    opt = model.optimizer if not isinstance(opt, str) else opt
    return {"loss": legacy_model_h5._legacy(compile_args["loss"]),
            "metrics": legacy_model_h5._legacy(compile_args["metrics"]),
            "weighted_metrics": legacy_model_h5._legacy(compile_args["weighted_metrics"]),
            "loss_weights": legacy_model_h5._legacy(compile_args["loss_weights"]),
            "optimizer_config": legacy_model_h5._optimizer_config(opt)}


def _root_metadata(model):
    meta = _layer_metadata(model)
    doc = json.loads(model_config.model_to_json(model))
    meta["class_name"] = _registered(model, doc["class_name"])
    meta["config"] = doc["config"]
    meta["keras_version"] = saving_lib.KERAS_VERSION
    meta["backend"] = "tensorflow"
    meta["model_config"] = {"class_name": doc["class_name"], "config": doc["config"]}
    training = _training_config(model)
    if training is not None:
        meta["training_config"] = training
    return meta


def metadata_records(objects, paths):
    """keras_metadata.pb's [(node id, 'root.layer-0', identifier, JSON)] for the Keras
    objects among a walk's ``objects``."""
    records = []
    for nid, obj in enumerate(objects):
        ident = identifier(obj)
        if not ident:
            continue
        if nid == 0:
            meta = _root_metadata(obj) if ident in _MODEL_IDS else _layer_metadata(obj)
        elif ident == METRIC:
            meta = _metric_metadata(obj)
        else:
            meta = _layer_metadata(obj)
        path = "root" + ("." + paths[nid].replace("/", ".") if paths[nid] else "")
        records.append((nid, path, ident,
                        json.dumps(meta, default=model_config._json_default)))
    return records


def save_model(model, filepath, overwrite=True, include_optimizer=True, signatures=None,
               options=None, save_traces=True, metadata_file=True):
    """``model.save(dir)``: a SavedModel directory (saved_model.pb with the object graph,
    keras_metadata.pb, variables/, assets/, fingerprint.pb), written crash-safely."""
    del options, save_traces  # mixprec stores no traces: configs are the architecture
    if not model.built:
        raise ValueError(
            "Model %s cannot be saved either because the input shape is not available or "
            "because the forward pass of the model is not defined. To define a forward pass, "
            "please override `Model.call()`. To specify an input shape, either call "
            "`build(input_shape)` directly, or call the model on actual data using "
            "`Model()`, `Model.fit()`, or `Model.predict()`." % model.name)
    root = model if include_optimizer else _objects.WithoutOptimizer(model)
    return _objects.save(root, filepath, signatures=signatures,
                         metadata=lambda objects, paths: metadata_records(objects, paths),
                         keras_model=model, keras_identifier=identifier,
                         metadata_file=metadata_file)


# ------------------------------------------------------------------ loading


def _json_hook(d):
    """tf-keras' metadata encoder writes tuples and shapes as ``{'class_name': '__tuple__'
    | 'TensorShape', 'items': [...]}``; its decoder turns them back into tuples."""
    if d.get("class_name") in ("__tuple__", "TensorShape") and "items" in d and len(d) == 2:
        return tuple(d["items"])
    return d


def decode_json(text):
    return json.loads(text, object_hook=_json_hook)


def _root_record(records):
    for nid, path, ident, meta in records:
        if nid == 0 or path == "root":
            return ident, decode_json(meta)
    raise ValueError("keras_metadata.pb has no record of the root object")


def load_model(filepath, custom_objects=None, compile=True, options=None):
    """The Keras model of a SavedModel directory (tf-keras 2.21's or mixprec's): rebuilt
    from its config, weights and (mixprec's addition, see docs/saving.md) optimizer state
    restored from the variables checkpoint."""
    del options
    filepath = os.fspath(filepath)
    proto = _directory.read_saved_model(filepath)
    records = _directory.read_metadata(filepath)
    if records is None:
        # older tf-keras (and tf.saved_model.save of a mixprec model): metadata in the nodes
        keras_nodes = [(i, n) for i, n in enumerate(proto.nodes)
                       if n.kind == "user_object" and n.identifier.startswith("_tf_keras")]
        if any(not n.metadata for _, n in keras_nodes):
            raise ValueError(
                "Unable to create a TF-Keras model from SavedModel at %s. This SavedModel "
                "was exported with `tf.saved_model.save`, and lacks the TF-Keras metadata "
                "file. Please save your TF-Keras model by calling `model.save` or "
                "`tf.keras.models.save_model`. Note that you can still load this SavedModel "
                "with `tf.saved_model.load`." % filepath)
        records = [(i, "root" if i == 0 else "", n.identifier, n.metadata)
                   for i, n in keras_nodes]
    if not records:
        from mixprec.saved_model import load as _load

        return _load(filepath)  # TensorFlow does the same: not a Keras SavedModel
    try:
        ident, meta = _root_record(records)
    except (ValueError, json.JSONDecodeError) as e:
        raise OSError("Cannot read the Keras metadata of %s: %s" % (filepath, e)) from None
    if "class_name" not in meta or "config" not in meta:
        raise ValueError("The SavedModel at %s has a root Keras object without a config; "
                         "mixprec rebuilds models from their configs only" % filepath)
    if ident == MODEL and not meta.get("is_graph_network", False) and not meta["config"]:
        raise NotImplementedError(
            "The SavedModel at %s holds a subclassed model (%s) saved without a config. "
            "TensorFlow revives such a model from its traced graphs, which mixprec cannot "
            "run. hint: give the class a get_config() and pass it in custom_objects, or "
            "save it as 'model.keras'." % (filepath, meta["class_name"]))
    model = model_config.model_from_config(
        {"class_name": meta["class_name"], "config": meta["config"]}, custom_objects)
    shape = meta.get("build_input_shape")
    if not model.built and shape is not None:
        model.build(_as_shape(shape))
    training = meta.get("training_config") if compile else None
    if compile and training is None:
        _logging.get_logger().warning(
            "No training configuration found in save file, so the model was *not* compiled. "
            "Compile it manually.")
    if training is not None:
        model.compile(**legacy_model_h5._compile_args(training, custom_objects))
        if model.optimizer is not None and hasattr(model.optimizer, "build"):
            model.optimizer.build(model.trainable_variables)
    _objects.restore_variables(model, filepath)
    return model


def _as_shape(shape):
    if isinstance(shape, dict) and "items" in shape:  # {'class_name': 'TensorShape', ...}
        return tuple(shape["items"])
    if isinstance(shape, dict):
        return {k: _as_shape(v) for k, v in shape.items()}
    if isinstance(shape, list) and shape and all(
            isinstance(s, (list, dict)) or s is None for s in shape):
        return [_as_shape(s) for s in shape]
    return tuple(shape)
