"""Model architectures as configs, in tf-keras 2.21's layout: a functional model's
``{'name', 'trainable', 'layers': [... 'name', 'inbound_nodes'], 'input_layers',
'output_layers'}``, a Sequential's ``{'name', 'layers'}``, the build and compile configs,
and their inverses (``from_config``, ``model_from_json``). Owns the wiring of layers into
configs and back; it must not read or write files (saving_lib.py) nor train."""

import json

import numpy as np

from mixprec import _core, _nest
from mixprec.keras.saving import serialization_lib as _ser

__all__ = ["functional_get_config", "functional_from_config", "sequential_get_config",
           "sequential_from_config", "model_to_json", "model_from_json", "model_from_config"]

_CONSTANT = "_CONSTANT_VALUE"


def _is_graph_model(layer):
    from mixprec.keras.engine.training import Model

    return isinstance(layer, Model) and getattr(layer, "_is_graph_network", False)


def _first_node_offset(layer):
    """tf-keras numbers a nested functional model's calls from 1 (its node 0 is the one
    linking its own inputs to its outputs); mixprec's models have no such node."""
    return 1 if _is_graph_model(layer) else 0


# ------------------------------------------------------------------ functional


def _call_arg_names(layer):
    import inspect

    try:
        params = list(inspect.signature(layer.call).parameters.values())
    except (TypeError, ValueError):
        return []
    return [p.name for p in params
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def functional_get_config(model):
    from mixprec.keras.engine.input_layer import InputLayer
    from mixprec.keras.engine.keras_tensor import KerasTensor
    from mixprec.keras.layers.tf_op_layer import SlicingOpLambda, TFOpLambda

    nodes = {id(n) for n in model._nodes}
    for t in model.inputs:
        layer, index, _ = t._keras_history
        nodes.add(id(layer._inbound_nodes[index]))
    conversion = {}  # (id(layer), original node index) -> index in the config
    for layer in model.layers:
        kept = _first_node_offset(layer)
        for i, node in enumerate(layer._inbound_nodes):
            if id(node) in nodes:
                conversion[(id(layer), i)] = kept
                kept += 1

    def ref(kt):
        layer, index, tensor_index = kt._keras_history
        return [layer.name, conversion.get((id(layer), index), 0), tensor_index]

    def plain(v):
        if isinstance(v, KerasTensor):
            return ref(v)
        if isinstance(v, (_core.Tensor, np.ndarray)):
            return np.asarray(v).tolist()
        if isinstance(v, np.generic):
            return v.item()
        return v

    layer_configs = []
    for layer in model.layers:
        filtered = []
        if not isinstance(layer, InputLayer):
            op_layer = isinstance(layer, TFOpLambda)
            names = [] if op_layer else _call_arg_names(layer)[1:]
            for node in layer._inbound_nodes:
                if id(node) not in nodes:
                    continue
                args = node.call_args
                kwargs = dict(zip(names, args[1:]))
                kwargs.update(node.call_kwargs)
                if op_layer and not isinstance(layer, SlicingOpLambda):
                    kwargs.setdefault("name", None)  # as tf-keras records tf.* calls
                kwargs = _nest.map_structure(plain, kwargs)
                try:
                    json.dumps(kwargs)
                except TypeError:
                    raise TypeError("Layer %s was passed non-JSON-serializable arguments. "
                                    "Arguments had types: %s. They cannot be serialized out "
                                    "when saving the model." % (
                                        layer.name, {k: type(v).__name__
                                                     for k, v in kwargs.items()})) from None

                def first(t):
                    if isinstance(t, KerasTensor):
                        return ref(t) + [kwargs]
                    return [_CONSTANT, -1, plain(t), kwargs]

                first_arg = args[0] if args else None
                if isinstance(first_arg, (list, tuple, dict)):
                    data = _map_leaves(first, first_arg)
                elif op_layer:  # tf-keras keeps an op layer's input structure unwrapped
                    data = first(first_arg)
                else:
                    data = [first(first_arg)]
                filtered.append(data)
        config = _ser.serialize_keras_object(layer)
        config["name"] = layer.name
        config["inbound_nodes"] = filtered
        layer_configs.append(config)

    def endpoints(structure, flat):
        refs = [ref(t) for t in flat]
        packed = _nest.pack_sequence_as(structure, refs) if isinstance(
            structure, (list, tuple, dict)) else refs[0]
        if isinstance(packed, dict):
            return packed
        if not isinstance(packed, list) or (packed and not isinstance(packed[0], list)):
            packed = [packed]  # tf-keras: a single input is written as a list of one
        return [list(p) if isinstance(p, tuple) else p for p in packed]

    return {"name": model.name, "trainable": model.trainable, "layers": layer_configs,
            "input_layers": endpoints(model._nested_inputs, model.inputs),
            "output_layers": endpoints(model._nested_outputs, model.outputs)}


def _map_leaves(fn, structure):
    """Maps a nest of tensors whose leaves are KerasTensors or constants (a list of
    tensors stays a list; tuples become lists, as JSON has them)."""
    if isinstance(structure, dict):
        return {k: _map_leaves(fn, v) for k, v in structure.items()}
    if isinstance(structure, (list, tuple)):
        return [_map_leaves(fn, v) for v in structure]
    return fn(structure)


def _is_ref(x):
    return (isinstance(x, list) and len(x) in (3, 4) and isinstance(x[0], str)
            and isinstance(x[1], int) and (len(x) == 3 or isinstance(x[3], dict)))


def functional_from_config(cls, config, custom_objects=None, created_layers=None,
                           input_tensors=None):
    """The functional model of ``config`` (tf-keras' reconstruction: layers are created in
    order, then called node by node, a node waiting until its inputs exist).
    ``created_layers`` ({name: layer}) are used instead of deserializing those entries, and
    ``input_tensors`` ({input layer name: KerasTensor}) instead of new Inputs (cloning)."""
    from mixprec.keras.engine.input_layer import InputLayer

    created_layers = created_layers or {}
    input_tensors = input_tensors or {}

    if not isinstance(config, dict) or not {"layers", "input_layers",
                                            "output_layers"} <= set(config):
        raise ValueError("Improper config format for a functional model: it needs 'layers', "
                         "'input_layers' and 'output_layers'. Received: %.300r" % (config,))
    created, order, pending = {}, [], {}
    outputs = {}  # (layer name, node index in the config) -> the call's outputs
    counts = {}
    for layer_data in config["layers"]:
        name = layer_data.get("name") or (layer_data.get("config") or {}).get("name")
        data = {k: v for k, v in layer_data.items() if k not in ("name", "inbound_nodes")}
        if name in input_tensors:
            layer = input_tensors[name]._keras_history[0]
            outputs[(name, 0)] = input_tensors[name]
        else:
            layer = created_layers.get(name)
            if layer is None:
                layer = _ser.deserialize_keras_object(data, custom_objects)
            if isinstance(layer, InputLayer):
                outputs[(name, 0)] = layer._output_kt
        created[name] = layer
        order.append(name)
        counts[name] = 1 if isinstance(layer, InputLayer) else _first_node_offset(layer)
        pending[name] = list(layer_data.get("inbound_nodes") or [])

    def tensor(r):
        out = outputs.get((r[0], r[1]))
        if out is None:
            raise KeyError
        flat = _nest.flatten(out)
        return flat[r[2]]

    def resolve_kwargs(kw):
        def one(v):
            if _is_ref(v) and len(v) == 3 and v[0] in created:
                try:
                    return tensor(v)
                except KeyError:
                    raise
            return v
        return {k: one(v) for k, v in (kw or {}).items()}

    def process(name, node_data):
        if isinstance(node_data, dict) and "args" in node_data:
            raise ValueError("This config was written by Keras 3 (inbound nodes with 'args'); "
                             "mixprec reads tf-keras 2.x configs")
        kwargs = {}

        def leaf(d):
            nonlocal kwargs
            if d and d[0] == _CONSTANT:
                if len(d) > 3:
                    kwargs = d[3]
                return d[2]
            if len(d) > 3:
                kwargs = d[3]
            return tensor(d)

        def walk(d):
            if _is_ref(d):
                return leaf(d)
            if isinstance(d, dict):
                return {k: walk(v) for k, v in d.items()}
            if isinstance(d, list):
                return [walk(v) for v in d]
            return d

        args = walk(node_data)
        if isinstance(args, list) and len(args) == 1 and not isinstance(node_data, dict):
            args = args[0]
        out = created[name](args, **resolve_kwargs(kwargs))
        outputs[(name, counts[name])] = out
        counts[name] += 1

    while any(pending.values()):
        progress = False
        for name in order:
            queue = pending[name]
            while queue:
                try:
                    process(name, queue[0])
                except KeyError:
                    break
                queue.pop(0)
                progress = True
        if not progress:
            missing = [n for n in order if pending[n]]
            raise ValueError("Graph disconnected in the model config: the inbound nodes of "
                             "layers %s refer to layers or nodes that the config does not "
                             "define." % missing)

    def endpoints(spec):
        if _is_ref(spec):
            return tensor(spec)
        if isinstance(spec, dict):
            return {k: endpoints(v) for k, v in spec.items()}
        if isinstance(spec, list):
            out = [endpoints(v) for v in spec]
            return out[0] if len(out) == 1 else out
        raise ValueError("Improper endpoint in a functional model config: %r" % (spec,))

    try:
        inputs = endpoints(config["input_layers"])
        outs = endpoints(config["output_layers"])
    except KeyError:
        raise ValueError("The model config's input_layers/output_layers name layers or nodes "
                         "that it does not define: %r, %r"
                         % (config["input_layers"], config["output_layers"])) from None
    from mixprec.keras.engine.training import Model

    kwargs = {"name": config.get("name")}
    if "trainable" in config:
        kwargs["trainable"] = config["trainable"]
    if cls is Model or not isinstance(cls, type) or not issubclass(cls, Model):
        return Model(inputs=inputs, outputs=outs, **kwargs)
    return cls(inputs=inputs, outputs=outs, **kwargs)


# ------------------------------------------------------------------ sequential


def sequential_get_config(model):
    from mixprec.keras.engine.input_layer import InputLayer

    layers = []
    stack = list(model._stack)
    if model._input_kt is not None and not (stack and isinstance(stack[0], InputLayer)):
        stack.insert(0, model._input_kt._keras_history[0])
    for layer in stack:
        layers.append(_ser.serialize_keras_object(layer))
    return {"name": model.name, "layers": layers}


def sequential_from_config(cls, config, custom_objects=None):
    if isinstance(config, list):  # Keras <= 2.2: the config was the list of layers
        config = {"layers": config}
    model = cls(name=config.get("name"))
    for layer_config in config.get("layers", []):
        layer = _ser.deserialize_keras_object(layer_config, custom_objects)
        model.add(layer)
    shape = config.get("build_input_shape")
    if shape is not None and not model._is_graph_network:
        model.build(tuple(shape))
    return model


# ------------------------------------------------------------------ json


def model_to_json(model, **kwargs):
    """``model.to_json()``: tf-keras' ``{'class_name', 'config', 'keras_version',
    'backend'}``."""
    from mixprec.keras.saving import saving_lib

    class_name = type(model).__name__
    if class_name == "Model" and model._is_graph_network:
        class_name = "Functional"
    doc = {"class_name": class_name, "config": model.get_config(),
           "keras_version": saving_lib.KERAS_VERSION, "backend": "tensorflow"}
    return json.dumps(doc, default=_json_default, **kwargs)


def _json_default(obj):
    if isinstance(obj, (np.generic,)):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, tuple):
        return list(obj)
    if hasattr(obj, "as_list"):
        return obj.as_list()
    if hasattr(obj, "name") and type(obj).__name__ == "DType":
        return obj.name
    raise TypeError("Not JSON Serializable: %r" % (obj,))


def model_from_config(config, custom_objects=None):
    """The model (or layer) a ``{'class_name', 'config'}`` dict describes."""
    if isinstance(config, list):
        raise TypeError("`model_from_config` expects a dictionary, not a list. Received: "
                        "config=%s. Did you meant to use `Sequential.from_config(config)`?"
                        % (config,))
    return _ser.deserialize_keras_object(config, custom_objects)


def model_from_json(json_string, custom_objects=None):
    """The model of ``model.to_json()`` (fresh weights)."""
    return model_from_config(json.loads(json_string), custom_objects)


# ------------------------------------------------------------------ build/compile


def input_shapes(model):
    """A graph model's build input shape as tf-keras records it: a tuple for one input, a
    list of tuples (or a dict) for several."""
    shapes = [tuple(t.shape) for t in model.inputs]
    nested = model._nested_inputs
    if isinstance(nested, dict):
        return dict(zip(nested.keys(), shapes))
    return shapes[0] if len(shapes) == 1 else shapes  # [i] too, as tf-keras


def get_compile_config(model):
    config = model.__dict__.get("_compile_config")
    if not getattr(model, "_compiled", False) or config is None:
        return None
    return _ser.serialize_keras_object(config)


def compile_from_config(model, config):
    from mixprec import _logging
    from mixprec.keras.engine.training import Model

    if type(model).compile is not Model.compile:
        _logging.get_logger().warning(
            "`compile()` was not called as part of model loading because the model's "
            "`compile()` method is custom. All subclassed Models that have `compile()` "
            "overridden should also override `get_compile_config()` and "
            "`compile_from_config(config)`. Alternatively, you can call `compile()` "
            "manually after loading.")
        return
    config = _ser.deserialize_keras_object(config)
    model.compile(**config)
    if model.built and model.optimizer is not None and hasattr(model.optimizer, "build"):
        model.optimizer.build(model.trainable_variables)


def _shape_value(shape):
    """A build shape as JSON-able tuples (None for unknown dimensions)."""
    if shape is None:
        return None
    if isinstance(shape, dict):
        return {k: _shape_value(v) for k, v in shape.items()}
    if hasattr(shape, "as_list"):
        return tuple(shape.as_list()) if getattr(shape, "rank", 0) is not None else None
    if isinstance(shape, (list, tuple)) and shape and all(
            s is None or isinstance(s, (list, tuple)) or hasattr(s, "as_list") for s in shape):
        return [_shape_value(s) for s in shape]
    return tuple(None if d is None else int(d) for d in shape)


def layer_build_config(layer):
    from mixprec.keras.engine.sequential import Sequential

    if _is_graph_model(layer):
        return {"input_shape": input_shapes(layer)}
    if isinstance(layer, Sequential):
        return None
    shape = layer.__dict__.get("_build_input_shape")
    if shape is None:
        return None
    shape = _shape_value(shape)
    from mixprec.keras.engine.training import Model

    if isinstance(layer, Model) and isinstance(shape, tuple) and shape:
        shape = (None,) + shape[1:]  # a model runs on batches of any size (tf-keras: None)
    return {"input_shape": shape}


def _as_shape(shape):
    if isinstance(shape, dict):
        return {k: _as_shape(v) for k, v in shape.items()}
    if isinstance(shape, (list, tuple)) and shape and all(
            s is None or isinstance(s, (list, tuple)) for s in shape):
        return [_as_shape(s) for s in shape]
    return tuple(shape)


def layer_build_from_config(layer, config):
    from mixprec.keras.engine.sequential import Sequential
    from mixprec.keras.engine.training import Model

    shape = (config or {}).get("input_shape")
    if shape is None or _is_graph_model(layer):
        return
    shape = _as_shape(shape)
    if isinstance(layer, Sequential):
        layer.build(shape if isinstance(shape, tuple) else shape[0])
        return
    if isinstance(layer, Model):  # subclassed: run once on zeros to create the weights
        def zeros(s):
            return _core.fill([1 if d is None else d for d in s], 0, "float32")
        if isinstance(shape, dict):
            layer({k: zeros(v) for k, v in shape.items()})
        elif isinstance(shape, list):
            layer([zeros(s) for s in shape])
        else:
            layer(zeros(shape))
        return
    if layer.built:
        return
    from mixprec.keras.engine.base_layer import _BUILD_LOCK

    with _BUILD_LOCK:
        if not layer.built:
            prev = _core.autocast(None)
            try:
                layer.build(shape)
            finally:
                _core.autocast(prev)
            layer.built = True
            layer._build_input_shape = shape


# ------------------------------------------------------------------ Model.get_config


def model_get_config(model):
    from mixprec.keras.engine.sequential import Sequential

    if isinstance(model, Sequential):
        return sequential_get_config(model)
    if _is_graph_model(model):
        return functional_get_config(model)
    # a subclassed model: the arguments its constructor was called with (tf-keras'
    # auto-config), when they serialize; {} otherwise, as tf-keras
    args = model.__dict__.get("_auto_config")
    if not args:
        return {}
    try:
        config = _ser.serialize_keras_object(dict(args))
        json.dumps(config, default=_json_default)
    except (TypeError, ValueError):
        return {}
    return config


def model_from_class_config(cls, config, custom_objects=None):
    from mixprec.keras.engine.sequential import Sequential

    if isinstance(cls, type) and issubclass(cls, Sequential):
        return sequential_from_config(cls, config, custom_objects)
    if isinstance(config, dict) and {"layers", "input_layers", "output_layers"} <= set(config):
        return functional_from_config(cls, config, custom_objects)
    try:
        return cls(**(config or {}))
    except TypeError as e:
        raise TypeError(
            "Unable to revive model from config. When overriding the `get_config()` method, "
            "make sure that the returned config contains all items used as arguments in the "
            "constructor to %s, which is the default behavior. You can override this default "
            "behavior by defining a `from_config(cls, config)` class method to specify how "
            "to create an instance of %s from its config.\n\nReceived config=%s\n\nError "
            "encountered during deserialization: %s" % (cls, cls.__name__, config, e)) from e


def record_init_args(obj, cls, args, kwargs):
    """Layer.__new__'s hook: the explicit constructor arguments of a user's layer or
    subclassed model (their auto-config, as tf-keras records them). mixprec's own classes
    and functional constructions (``Model(inputs, outputs)``) are skipped."""
    import inspect

    from mixprec.keras.engine.keras_tensor import KerasTensor
    from mixprec.keras.engine.sequential import Sequential
    from mixprec.keras.engine.training import Model

    if cls.__module__.startswith("mixprec.") or issubclass(cls, Sequential) or (
            issubclass(cls, Model) and ("inputs" in kwargs or any(
                isinstance(a, (KerasTensor, list, tuple, dict)) for a in args[:1]))):
        return
    try:
        sig = inspect.signature(cls.__init__)
        bound = sig.bind_partial(None, *args, **kwargs)
    except (TypeError, ValueError):
        return
    out = {}
    for name, value in list(bound.arguments.items())[1:]:
        param = sig.parameters[name]
        if param.kind == param.VAR_KEYWORD:
            out.update(value)
        elif param.kind == param.VAR_POSITIONAL:
            return
        else:
            out[name] = value
    object.__setattr__(obj, "_auto_config", out)


def layer_auto_config(layer, base):
    """A user's layer without its own get_config: the base config plus its constructor
    arguments (tf-keras' auto-config; base keys its __init__ cannot take are dropped)."""
    import inspect

    args = layer.__dict__.get("_auto_config")
    if args is None:
        return base
    try:
        extra = _ser.serialize_keras_object(dict(args))
        json.dumps(extra, default=_json_default)
    except (TypeError, ValueError):
        raise NotImplementedError(
            "Layer %s was passed non-JSON-serializable arguments. Arguments had types: %s. "
            "They cannot be serialized out when saving the model. hint: define get_config() "
            "(and from_config()) on %s" % (
                type(layer).__name__, {k: type(v).__name__ for k, v in args.items()},
                type(layer).__name__)) from None
    params = inspect.signature(type(layer).__init__).parameters
    if not any(p.kind == p.VAR_KEYWORD for p in params.values()):
        base = {k: v for k, v in base.items() if k in params}
    base.update(extra)
    return base
