"""Object configs as tf-keras 2.21 writes them: ``serialize_keras_object`` gives
``{'module', 'class_name', 'config', 'registered_name'[, 'build_config', 'compile_config']}``
and ``deserialize_keras_object`` finds the class (custom objects and the registry first,
then mixprec's built-in names under the tf-keras module names, then an import) and calls
``from_config``. Owns the format and the name resolution; it must not know how a model's
layers are wired (model_config.py) or how files are written (saving_lib.py)."""

import base64
import importlib
import inspect
import marshal
import threading
import types
import warnings

import numpy as np

from mixprec.keras.saving import object_registration

__all__ = ["serialize_keras_object", "deserialize_keras_object", "ObjectSharingScope",
           "SafeModeScope", "enable_unsafe_deserialization"]

PLAIN_TYPES = (str, int, float, bool)
_SHARED = threading.local()
_SAFE = threading.local()

# tf-keras' public modules, in the order a function name is searched in them
BUILTIN_MODULES = ("activations", "constraints", "initializers", "losses", "metrics",
                   "optimizers", "regularizers")
_FUNCTIONAL = ("tf_keras.src.engine.functional", "Functional")
_LSO = ("tf_keras.src.mixed_precision.loss_scale_optimizer", "LossScaleOptimizerV3")
_OP_LAYER_MODULE = "tf_keras.src.layers.core.tf_op_layer"


# ------------------------------------------------------------------ scopes


class SafeModeScope:
    """Scope forbidding (True) or allowing (False) the deserialization of lambdas."""

    def __init__(self, safe_mode=True):
        self.safe_mode = safe_mode

    def __enter__(self):
        self.original = in_safe_mode()
        _SAFE.safe_mode = self.safe_mode

    def __exit__(self, *exc):
        _SAFE.safe_mode = self.original
        return False


def enable_unsafe_deserialization():
    """Allows lambdas to be deserialized on this thread (tf-keras'
    ``keras.__internal__.enable_unsafe_deserialization``)."""
    _SAFE.safe_mode = False


def in_safe_mode():
    return getattr(_SAFE, "safe_mode", None)


class ObjectSharingScope:
    """Inside it, an object serialized twice (a layer shared by two models) gets a
    ``shared_object_id`` and is deserialized once."""

    def __enter__(self):
        self.prev = (getattr(_SHARED, "enabled", False), getattr(_SHARED, "objs", {}),
                     getattr(_SHARED, "configs", {}))
        _SHARED.enabled, _SHARED.objs, _SHARED.configs = True, {}, {}
        return self

    def __exit__(self, *exc):
        _SHARED.enabled, _SHARED.objs, _SHARED.configs = self.prev
        return False


def _record_serialized(obj, config):
    if config.get("module") == "__main__":
        config["module"] = None  # tf-keras: a class of __main__ cannot be imported back
    if not getattr(_SHARED, "enabled", False):
        return
    key = id(obj)
    if key not in _SHARED.configs:
        _SHARED.configs[key] = config
    else:
        config["shared_object_id"] = key
        _SHARED.configs[key]["shared_object_id"] = key


# ------------------------------------------------------------------ public names


_PUBLIC = None  # class -> (module, class_name)
_BY_MODULE = None  # 'layers' -> {name: class}


def _tables():
    """mixprec's public classes under the tf-keras module names they are exported as."""
    global _PUBLIC, _BY_MODULE
    if _PUBLIC is not None:
        return _PUBLIC, _BY_MODULE
    from mixprec import keras
    from mixprec.keras import (activations, constraints, initializers, layers, losses, metrics,
                               mixed_precision, optimizers, regularizers)
    from mixprec.keras.optimizers import schedules

    mods = {"layers": layers, "initializers": initializers, "regularizers": regularizers,
            "constraints": constraints, "optimizers.schedules": schedules,
            "optimizers.legacy": optimizers.legacy,
            "optimizers": optimizers, "losses": losses, "metrics": metrics,
            "activations": activations, "mixed_precision": mixed_precision}
    public, by_module = {}, {}
    for short, mod in mods.items():
        names = {}
        for name, obj in vars(mod).items():
            if name.startswith("_") or not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            if not getattr(obj, "__module__", "").startswith("mixprec."):
                continue
            names[name] = obj
            if inspect.isclass(obj) and name == obj.__name__ and obj not in public:
                public[obj] = ("keras." + short, name)
        by_module[short] = names
    top = {"Sequential": keras.Sequential, "Model": keras.Model, "Functional": keras.Model,
           "Input": keras.Input}
    by_module[""] = top
    public[keras.Sequential] = ("keras", "Sequential")
    public[keras.Model] = ("keras", "Model")
    from mixprec.keras.mixed_precision import loss_scale_optimizer as lso

    for name in ("LossScaleOptimizer", "LossScaleOptimizerV3", "LossScaleOptimizerV2"):
        by_module["mixed_precision"][name] = lso.LossScaleOptimizer
    by_module["mixed_precision"]["LossScaleOptimizerV1"] = lso.LossScaleOptimizerV1
    # LossScaleOptimizer(legacy optimizer) is tf-keras' legacy class, named so
    public[lso.LossScaleOptimizer] = (_LSO[0], "LossScaleOptimizer")
    public[lso.LossScaleOptimizerV3] = _LSO
    from mixprec.keras.layers import tf_op_layer

    for cls in (tf_op_layer.TFOpLambda, tf_op_layer.SlicingOpLambda):
        by_module["layers"][cls.__name__] = cls
        public[cls] = (_OP_LAYER_MODULE, cls.__name__)
    _PUBLIC, _BY_MODULE = public, by_module
    return public, by_module


def _public_config(obj, inner):
    from mixprec.keras.engine.training import Model

    cls = type(obj)
    if cls is Model and getattr(obj, "_is_graph_network", False):
        return {"module": _FUNCTIONAL[0], "class_name": _FUNCTIONAL[1], "config": inner,
                "registered_name": _FUNCTIONAL[1]}
    public, _ = _tables()
    if cls in public:
        module, name = public[cls]
        registered = name if module.startswith("tf_keras.") else None
        return {"module": module, "class_name": name, "config": inner,
                "registered_name": registered}
    if object_registration.is_registered(cls):
        return {"module": cls.__module__, "class_name": cls.__name__, "config": inner,
                "registered_name": object_registration.get_registered_name(cls)}
    return None


# ------------------------------------------------------------------ serialize


def _func_dump(fn):
    """A lambda as tf-keras stores it: (base64 of its marshalled code, defaults, closure
    values)."""
    code = base64.encodebytes(marshal.dumps(fn.__code__)).decode("ascii")
    closure = tuple(c.cell_contents for c in fn.__closure__) if fn.__closure__ else None
    return code, fn.__defaults__, closure


def _func_load(value, globs=None):
    if isinstance(value, (list, tuple)):
        code, defaults, closure = (list(value) + [None, None])[:3]
    else:
        code, defaults, closure = value, None, None
    try:
        code = marshal.loads(base64.decodebytes(code.encode("ascii")))
    except (ValueError, EOFError, TypeError) as e:
        raise ValueError("Could not load the function's code (written by another Python "
                         "version?): %s" % e) from None
    if closure is not None:
        closure = tuple(types.CellType(v) for v in closure)
    if isinstance(defaults, list):
        defaults = tuple(defaults)
    return types.FunctionType(code, globs if globs is not None else globals(), code.co_name,
                              defaults, closure)


# ------------------------------------------------------------------ Lambda layers


def lambda_layer_config(layer, config):
    """tf-keras' Lambda config: the function as code ('function_type': 'lambda'; a named
    Python function too, as tf-keras), its module (for its globals), the output shape."""
    fn = layer.function
    if isinstance(fn, types.FunctionType):
        function, ftype = _func_dump(fn), "lambda"
    else:
        function, ftype = getattr(fn, "__name__", repr(fn)), "function"
    shape = layer._output_shape
    if isinstance(shape, types.FunctionType):
        shape_cfg, shape_type, shape_module = _func_dump(shape), "lambda", shape.__module__
    else:
        shape_cfg, shape_type, shape_module = shape, "raw", None
    config.update(function=function, function_type=ftype,
                  module=getattr(fn, "__module__", None), output_shape=shape_cfg,
                  output_shape_type=shape_type, output_shape_module=shape_module,
                  arguments=serialize_keras_object(dict(layer.arguments)))
    return config


def _parse_function(config, custom_objects, attr, module_attr, type_attr):
    import sys

    globs = dict(globals())
    module = config.pop(module_attr, None)
    if module in sys.modules:
        globs.update(vars(sys.modules[module]))
    elif module is not None:
        warnings.warn("%s is not loaded, but a Lambda layer uses it. It may cause errors."
                      % module, UserWarning, stacklevel=3)
    if custom_objects:
        globs.update(custom_objects)
    ftype = config.pop(type_attr, "raw")
    value = config.get(attr)
    if ftype == "function":
        return deserialize_keras_object(value, custom_objects)
    if ftype == "lambda":
        if in_safe_mode():
            raise ValueError("Requested the deserialization of a Lambda layer with a Python "
                             "`lambda` inside it. This carries a potential risk of arbitrary "
                             "code execution and thus it is disallowed by default. If you "
                             "trust the source of the saved model, you can pass "
                             "`safe_mode=False` to the loading function in order to allow "
                             "Lambda layer loading.")
        return _func_load(value, globs)
    return value


def lambda_layer_from_config(cls, config, custom_objects=None):
    config = dict(config)
    config["function"] = _parse_function(config, custom_objects, "function", "module",
                                         "function_type")
    if "output_shape" in config:
        config["output_shape"] = _parse_function(config, custom_objects, "output_shape",
                                                 "output_shape_module", "output_shape_type")
    config.pop("output_shape_module", None)
    config.pop("output_shape_type", None)
    if config.get("arguments"):
        config["arguments"] = deserialize_keras_object(config["arguments"], custom_objects)
    return cls(**config)


def serialize_dict(obj):
    return {key: serialize_keras_object(value) for key, value in obj.items()}


def serialize_keras_object(obj):
    """The config dict of a Keras object (tf-keras 2.21's format); plain values, lists and
    dicts are returned with their elements serialized."""
    from mixprec import _core
    from mixprec._dtypes import DType
    from mixprec._shape import TensorShape
    from mixprec._variable import Variable

    if obj is None or isinstance(obj, PLAIN_TYPES):
        return obj
    if isinstance(obj, (list, tuple)):
        out = [serialize_keras_object(x) for x in obj]
        return tuple(out) if isinstance(obj, tuple) else out
    if isinstance(obj, dict):
        return serialize_dict(obj)
    if isinstance(obj, bytes):
        return {"class_name": "__bytes__", "config": {"value": obj.decode("utf-8")}}
    if isinstance(obj, TensorShape):
        return obj.as_list() if obj.rank is not None else None
    if isinstance(obj, (_core.Tensor, Variable)):
        arr = np.asarray(obj.numpy())
        return {"class_name": "__tensor__",
                "config": {"value": arr.tolist(), "dtype": obj.dtype.name}}
    if isinstance(obj, np.ndarray) and obj.ndim > 0:
        return {"class_name": "__numpy__",
                "config": {"value": obj.tolist(), "dtype": obj.dtype.name}}
    if isinstance(obj, (np.generic, np.ndarray)):
        return obj.item()
    if isinstance(obj, DType):
        return obj.name
    if isinstance(obj, types.FunctionType) and obj.__name__ == "<lambda>":
        try:
            source = inspect.getsource(obj)
        except (OSError, TypeError):
            source = repr(obj)
        warnings.warn("The object being serialized includes a `lambda`. This is unsafe. In "
                      "order to reload the object, you will have to pass `safe_mode=False` "
                      "to the loading function. Please avoid using `lambda` in the future, "
                      "and use named Python functions instead. This is the `lambda` being "
                      "serialized: %s" % source, stacklevel=2)
        return {"class_name": "__lambda__", "config": {"value": _func_dump(obj)}}
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)):
        # tf-keras: every function is {'module': 'builtins', 'class_name': 'function'} with
        # its registered name (or __name__) as the config
        config = {"module": "builtins", "class_name": "function",
                  "config": object_registration.get_registered_name(obj),
                  "registered_name": "function"}
        return config
    if hasattr(obj, "get_config"):
        inner = obj.get_config()
        if not isinstance(inner, dict):
            raise TypeError("The `get_config()` method of %s should return a dict. It "
                            "returned: %s" % (obj, inner))
        inner = serialize_dict(inner)
    elif hasattr(obj, "__name__"):
        inner = object_registration.get_registered_name(obj)
    else:
        raise TypeError("Cannot serialize object %s of type %s. To be serializable, a class "
                        "must implement the `get_config()` method." % (obj, type(obj)))
    config = _public_config(obj, inner)
    if config is None:
        cls = type(obj)
        config = {"module": cls.__module__, "class_name": cls.__name__, "config": inner,
                  "registered_name": object_registration.get_registered_name(cls)}
    _add_build_and_compile_config(obj, config)
    _record_serialized(obj, config)
    return config


def _add_build_and_compile_config(obj, config):
    if hasattr(obj, "get_build_config"):
        build = obj.get_build_config()
        if build is not None:
            config["build_config"] = serialize_dict(build)
    if hasattr(obj, "get_compile_config"):
        comp = obj.get_compile_config()
        if comp is not None:
            config["compile_config"] = serialize_dict(comp)


# ------------------------------------------------------------------ deserialize


def _module_hint(module):
    """'keras.layers', 'tf_keras.src.losses', 'keras.optimizers.schedules' -> the mixprec
    submodule names to search ('layers'; 'losses'; 'optimizers.schedules' then
    'optimizers'); None when the module is not Keras'."""
    if module is None:
        return None
    for prefix in ("tf_keras.src.", "tf_keras.", "keras.src.", "keras.", "mixprec.keras."):
        if module.startswith(prefix):
            rest = module[len(prefix):]
            break
    else:
        if module in ("keras", "tf_keras", "mixprec.keras"):
            rest = ""
        else:
            return None
    parts = rest.split(".") if rest else []
    hints = [".".join(parts[:i]) for i in range(len(parts), 0, -1)] + [""]
    return hints


def _builtin(name, hints, obj_type):
    _, by_module = _tables()
    for hint in hints:
        if hint in by_module and name in by_module[hint]:
            return by_module[hint][name]
    for hint in hints:  # 'engine.functional', 'mixed_precision.loss_scale_optimizer'
        for short in by_module:
            if short and (hint.startswith(short + ".") or hint == short):
                if name in by_module[short]:
                    return by_module[short][name]
    if name in by_module[""]:
        return by_module[""][name]
    for short in (BUILTIN_MODULES if obj_type == "function" else ()):
        obj = by_module.get(short, {}).get(name)
        if obj is not None:
            return obj
    for short in ("layers", "mixed_precision"):  # classes written by another module name
        obj = by_module[short].get(name) if obj_type == "class" else None
        if obj is not None and inspect.isclass(obj):
            return obj
    return None


def _retrieve(name, registered_name, module, obj_type, full_config, custom_objects):
    key = name if obj_type == "function" else registered_name
    obj = object_registration.get_registered_object(key, custom_objects)
    if obj is None and obj_type == "class":
        obj = object_registration.get_registered_object(name, custom_objects)
    if obj is not None:
        return obj
    if module == "builtins" and obj_type == "function":
        obj = _builtin(name, [""], "function")
        if obj is not None:
            return obj
    hints = _module_hint(module)
    if hints is not None:
        obj = _builtin(name, hints, obj_type)
        if obj is not None:
            return obj
    elif module and module != "builtins":
        try:
            mod = importlib.import_module(module)
        except ImportError:
            raise TypeError("Could not deserialize %s '%s' because its parent module %s cannot "
                            "be imported. Full object config: %s"
                            % (obj_type, name, module, full_config)) from None
        obj = vars(mod).get(name)
        if obj is None and registered_name is not None:
            obj = vars(mod).get(registered_name)
        if obj is None and name.count(".") == 1:  # a __qualname__
            outer, inner = name.split(".")
            obj = getattr(vars(mod).get(outer), inner, None)
        if obj is not None:
            return obj
    hint = ""
    if hints is not None or module == "builtins":
        hint = (" (a Keras built-in that mixprec does not implement yet, or a custom object "
                "not passed in custom_objects; docs/porting.md lists what mixprec has)")
    raise TypeError("Could not locate %s '%s'%s. Make sure custom classes are decorated with "
                    "`@keras.saving.register_keras_serializable()`. Full object config: %s"
                    % (obj_type, name, hint, full_config))


def deserialize_keras_object(config, custom_objects=None, safe_mode=True, **kwargs):
    """The object a config describes (the inverse of ``serialize_keras_object``). Reads
    tf-keras' current format and the legacy ``{'class_name', 'config'}`` one."""
    scoped = in_safe_mode()
    safe_mode = scoped if scoped is not None else safe_mode
    module_objects = kwargs.pop("module_objects", None)
    kwargs.pop("printable_module_name", None)
    if kwargs:
        raise ValueError("The following argument(s) are not supported: %s" % list(kwargs))
    custom_objects = dict(custom_objects or {})
    if config is None:
        return None
    if isinstance(config, str) and object_registration.get_registered_object(
            config, custom_objects) is not None:
        return object_registration.get_registered_object(config, custom_objects)
    if isinstance(config, (list, tuple)):
        return [deserialize_keras_object(x, custom_objects, safe_mode) for x in config]
    if module_objects is not None and isinstance(config, (str, dict)):
        name = config if isinstance(config, str) else config.get("class_name")
        if name in module_objects and not object_registration.lookup_config(
                config, custom_objects):
            obj = module_objects[name]
            if isinstance(config, str):
                return obj() if inspect.isclass(obj) else obj
            return obj.from_config(config.get("config") or {}) if inspect.isclass(obj) \
                else obj
    if isinstance(config, PLAIN_TYPES):
        return config
    if not isinstance(config, dict):
        raise TypeError("Could not parse config: %s" % (config,))
    if "class_name" not in config or "config" not in config:
        return {k: deserialize_keras_object(v, custom_objects, safe_mode)
                for k, v in config.items()}
    class_name = config["class_name"]
    inner = config["config"] or {}
    if class_name == "__tensor__":
        from mixprec import _core

        return _core.constant(inner["value"], dtype=inner["dtype"])
    if class_name == "__numpy__":
        return np.array(inner["value"], dtype=inner["dtype"])
    if class_name == "__bytes__":
        return inner["value"].encode("utf-8")
    if class_name == "__lambda__":
        if safe_mode:
            raise ValueError("Requested the deserialization of a `lambda` object. This carries "
                             "a potential risk of arbitrary code execution and thus it is "
                             "disallowed by default. If you trust the source of the saved "
                             "model, you can pass `safe_mode=False` to the loading function "
                             "in order to allow `lambda` loading.")
        return _func_load(inner["value"])
    # a legacy config ({'class_name', 'config'} only: model_from_json of tf-keras'
    # to_json, TF <= 2.12 files) names a built-in: every Keras module is searched
    module = config.get("module", "keras")
    registered_name = config.get("registered_name", class_name)
    if class_name == "function":
        return _retrieve(inner, registered_name, module, "function", config, custom_objects)
    if "shared_object_id" in config and getattr(_SHARED, "enabled", False):
        obj = _SHARED.objs.get(config["shared_object_id"])
        if obj is not None:
            return obj
    cls = _retrieve(class_name, registered_name, module, "class", config, custom_objects)
    if isinstance(cls, types.FunctionType):
        return cls
    if not hasattr(cls, "from_config"):
        raise TypeError("Unable to reconstruct an instance of '%s' because the class is "
                        "missing a `from_config()` method. Full object config: %s"
                        % (class_name, config))
    with object_registration.custom_object_scope(custom_objects), SafeModeScope(safe_mode):
        instance = _from_config(cls, inner, custom_objects)
        build_config = config.get("build_config")
        if build_config and hasattr(instance, "build_from_config"):
            instance.build_from_config(build_config)
        compile_config = config.get("compile_config")
        if compile_config and hasattr(instance, "compile_from_config"):
            instance.compile_from_config(compile_config)
    if "shared_object_id" in config and getattr(_SHARED, "enabled", False):
        _SHARED.objs[config["shared_object_id"]] = instance
    return instance


def _from_config(cls, inner, custom_objects):
    try:
        params = inspect.signature(cls.from_config).parameters
    except (TypeError, ValueError):
        params = {}
    if "custom_objects" in params:
        return cls.from_config(inner, custom_objects=custom_objects or None)
    return cls.from_config(inner)
