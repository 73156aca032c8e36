"""Whole models in tf-keras' legacy HDF5 file (``model.save('m.h5')``): root attributes
``model_config`` (``{'class_name', 'config'}`` JSON), ``training_config`` (loss, metrics,
``optimizer_config``), ``keras_version``, ``backend``; the ``model_weights`` group in the
legacy weights layout (legacy_h5.py) and ``optimizer_weights`` (the optimizer's variables
in tf-keras' order, by name). Files move both ways with tf-keras. Owns this file only."""

import io
import json

import numpy as np

from mixprec import _fileio, _logging
from mixprec.keras.saving import _h5, legacy_h5, model_config, saving_lib
from mixprec.keras.saving import serialization_lib as _ser

__all__ = ["save_model", "load_model"]


def _legacy(obj):
    """tf-keras' legacy serialization: ``{'class_name', 'config'}`` for objects, names for
    functions, plain values as they are."""
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    if isinstance(obj, (list, tuple)):
        return [_legacy(o) for o in obj]
    if isinstance(obj, dict):
        return {k: _legacy(v) for k, v in obj.items()}
    if callable(obj) and not hasattr(obj, "get_config"):
        from mixprec.keras.saving import object_registration

        return object_registration.get_registered_name(obj)
    config = _ser.serialize_keras_object(obj)
    return {"class_name": config["class_name"], "config": config["config"]}


def _optimizer_config(opt):
    """As tf-keras 2.21 writes it: a built-in optimizer under its registered name
    ('Custom>Adam'), a loss-scale optimizer as 'LossScaleOptimizerV3' with its own config.
    (tf-keras reads a config without 'is_legacy_optimizer' as one of its legacy OptimizerV2
    optimizers, whose variables are ordered differently.)"""
    from mixprec.keras.mixed_precision import loss_scale_optimizer as lso

    if isinstance(opt, str):
        return opt
    if isinstance(opt, lso.LossScaleOptimizer):
        name = "LossScaleOptimizer" if opt._IS_LEGACY else "LossScaleOptimizerV3"
        return {"class_name": name, "config": opt.get_config()}
    opt = getattr(opt, "inner_optimizer", opt)  # TF 2.1-2.3's experimental wrapper
    if opt._IS_LEGACY:
        # OptimizerV2: its plain class name and config (float32 hyperparameters as floats)
        config = {k: float(v) if isinstance(v, np.floating) else v
                  for k, v in opt.get_config().items()}
        return {"class_name": type(opt).__name__, "config": config}
    config = dict(opt.get_config())
    config["is_legacy_optimizer"] = False
    return {"class_name": "Custom>" + type(opt).__name__, "config": config}


def _optimizer_state(model):
    """(inner optimizer, [(name, variable)]) in tf-keras' variable order."""
    opt = model.optimizer
    inner = getattr(opt, "inner_optimizer", opt)
    if inner._IS_LEGACY:
        # OptimizerV2's weights: 'Adam/iter:0', then slot by slot ('Adam/dense/kernel/m:0')
        variables = list(inner.variables)
        names = [var.name for var in variables]
    else:
        variables = saving_lib._optimizer_variables(inner)
        # the variables' own names, as tf-keras: 'iteration:0', 'Adam/m/dense/kernel:0'
        # (under a LossScaleOptimizer 'm/dense/kernel:0')
        names = ["iteration:0"] + [var.name for var in variables[1:]]
    seen, out = {}, []
    for n, v in zip(names, variables):
        if n in seen:  # unique dataset names
            seen[n] += 1
            n = "%s_%d" % (n, seen[n])
        else:
            seen[n] = 0
        out.append((n, v))
    return inner, out


def save_model(model, filepath, include_optimizer=True, **kwargs):
    unknown = set(kwargs) - {"signatures", "options", "save_traces"}
    if unknown:
        raise TypeError("save_model() got unexpected keyword arguments %s" % sorted(unknown))
    h5py = _h5.h5py("`save_model()` using h5 format")
    doc = json.loads(model_config.model_to_json(model))
    model_cfg = {"class_name": doc["class_name"], "config": doc["config"]}
    buf = io.BytesIO()
    with h5py.File(buf, "w") as f:
        f.attrs["keras_version"] = saving_lib.KERAS_VERSION
        f.attrs["backend"] = "tensorflow"
        f.attrs["model_config"] = json.dumps(model_cfg, default=model_config._json_default)
        compile_args = model.__dict__.get("_compile_config")
        if include_optimizer and model.optimizer is not None and compile_args is not None:
            opt = compile_args["optimizer"]
            opt = model.optimizer if not isinstance(opt, str) else opt
            training = {"loss": _legacy(compile_args["loss"]),
                        "metrics": _legacy(compile_args["metrics"]),
                        "weighted_metrics": _legacy(compile_args["weighted_metrics"]),
                        "loss_weights": _legacy(compile_args["loss_weights"]),
                        "optimizer_config": _optimizer_config(opt)}
            f.attrs["training_config"] = json.dumps(training,
                                                    default=model_config._json_default)
        legacy_h5.write_weights_group(f.create_group("model_weights"), model)
        if include_optimizer and model.optimizer is not None:
            _, state = _optimizer_state(model)
            if len(state) > 1:
                group = f.create_group("optimizer_weights")
                legacy_h5._save_attr(group, "weight_names", [n for n, _ in state])
                for name, var in state:
                    group.create_dataset(name, data=saving_lib._value(var))
    data = buf.getvalue()
    _fileio.atomic_write(filepath, lambda fh: fh.write(data))


def _attr_json(f, name):
    value = f.attrs.get(name)
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("utf8")
    return json.loads(value)


def _compile_args(training, custom_objects):
    from mixprec.keras import optimizers

    opt_cfg = training.get("optimizer_config")
    if isinstance(opt_cfg, dict):
        opt_cfg = dict(opt_cfg)
        name = str(opt_cfg.get("class_name", ""))
        if name.startswith("Custom>"):  # tf-keras registers its new optimizers so
            opt_cfg["class_name"] = name[len("Custom>"):]
        optimizer = optimizers.deserialize(opt_cfg, custom_objects)
    else:
        optimizer = opt_cfg or "rmsprop"

    def objects(spec):
        if isinstance(spec, list):
            return [objects(s) for s in spec]
        if isinstance(spec, dict) and "class_name" in spec:
            cfg = spec.get("config") or {}
            if spec["class_name"] == "MeanMetricWrapper" and "name" in cfg:
                return cfg.get("name")  # a metric given by its name
            return _ser.deserialize_keras_object(spec, custom_objects)
        if isinstance(spec, dict):
            return {k: objects(v) for k, v in spec.items()}
        return spec

    metrics = objects(training.get("metrics"))
    if isinstance(metrics, list) and len(metrics) == 1 and isinstance(metrics[0], list):
        metrics = metrics[0]  # tf-keras writes one list per output
    return {"optimizer": optimizer, "loss": objects(training.get("loss")), "metrics": metrics,
            "weighted_metrics": objects(training.get("weighted_metrics")),
            "loss_weights": training.get("loss_weights")}


def load_model(filepath, custom_objects=None, compile=True):
    h5py = _h5.h5py("load_model of an HDF5 file")
    _fileio.check_regular_file(filepath, "model file")
    with h5py.File(filepath, "r") as f:
        config = _attr_json(f, "model_config")
        if config is None:
            raise ValueError("No model config found in the file at %s." % filepath)
        model = model_config.model_from_config(config, custom_objects)
        weights = f["model_weights"] if "model_weights" in f else f
        pairs = legacy_h5._by_topology(weights, model)
        legacy_h5.assign_checked(pairs)
        training = _attr_json(f, "training_config") if compile else None
        if training is None:
            if compile:
                _logging.get_logger().warning(
                    "No training configuration found in the save file, so the model was "
                    "*not* compiled. Compile it manually.")
            return model
        model.compile(**_compile_args(training, custom_objects))
        opt_cfg = training.get("optimizer_config")
        if isinstance(opt_cfg, dict) and "inner_optimizer" in (opt_cfg.get("config") or {}):
            opt_cfg = opt_cfg["config"]["inner_optimizer"]  # a LossScaleOptimizer's
        legacy_opt = isinstance(opt_cfg, dict) and (opt_cfg.get("config") or {}).get(
            "is_legacy_optimizer", True)
        inner_opt = getattr(model.optimizer, "inner_optimizer", model.optimizer)
        if "optimizer_weights" in f and legacy_opt and not inner_opt._IS_LEGACY:
            # an OptimizerV2 state (slots by kind: every m, then every v) read into a new
            # optimizer: assigning it in the new optimizers' order would be silently wrong
            _logging.get_logger().warning(
                "The file's optimizer state comes from a legacy (TF < 2.11) optimizer, whose "
                "variables mixprec does not map; the model starts with a freshly initialized "
                "optimizer.")
        elif "optimizer_weights" in f:
            group = f["optimizer_weights"]
            values = [np.asarray(group[n][()])
                      for n in legacy_h5._load_attr(group, "weight_names")]
            model.optimizer.build(model.trainable_variables)
            inner, state = _optimizer_state(model)
            if len(values) != len(state):
                _logging.get_logger().warning(
                    "Error in loading the saved optimizer state. As a result, your model is "
                    "starting with a freshly initialized optimizer.")
            else:
                legacy_h5.assign_checked([(v, a) for (_, v), a in zip(state, values)
                                          if hasattr(v, "assign")])
    return model
