"""The registry of custom Keras objects (``register_keras_serializable``,
``custom_object_scope``, ``get_registered_name/object``) that deserialization consults
before mixprec's built-in names. Owns only the name <-> object tables; it must not know
any config format (serialization_lib.py does)."""

import inspect
import threading

__all__ = ["CustomObjectScope", "custom_object_scope", "get_custom_objects",
           "register_keras_serializable", "get_registered_name", "get_registered_object"]

_GLOBAL_CUSTOM_OBJECTS = {}  # 'package>Name' (or a user's key) -> class or function
_GLOBAL_CUSTOM_NAMES = {}  # class or function -> 'package>Name'
_LOCAL = threading.local()  # .objects: the custom_object_scope dicts active on this thread


def _scoped():
    objs = getattr(_LOCAL, "objects", None)
    if objs is None:
        objs = _LOCAL.objects = {}
    return objs


class CustomObjectScope:
    """``with custom_object_scope({'MyLayer': MyLayer}):`` makes the names visible to
    deserialization (``load_model``, ``from_config``, ``model_from_json``) on this thread,
    as tf-keras' scope."""

    def __init__(self, *args):
        self.custom_objects = args
        self.backup = None

    def __enter__(self):
        objs = _scoped()
        self.backup = dict(objs)
        for d in self.custom_objects:
            objs.update(d or {})
        return self

    def __exit__(self, *exc):
        objs = _scoped()
        objs.clear()
        objs.update(self.backup)
        return False


custom_object_scope = CustomObjectScope


def get_custom_objects():
    """The live global dictionary of registered objects (scopes are not in it)."""
    return _GLOBAL_CUSTOM_OBJECTS


def register_keras_serializable(package="Custom", name=None):
    """Decorator registering a class (which must define ``get_config``) or a function under
    ``'package>name'`` (``name`` defaults to the object's ``__name__``)."""

    def decorator(arg):
        class_name = name if name is not None else arg.__name__
        registered_name = package + ">" + class_name
        if inspect.isclass(arg) and not hasattr(arg, "get_config"):
            raise ValueError("Cannot register a class that does not have a get_config() "
                             "method.")
        _GLOBAL_CUSTOM_OBJECTS[registered_name] = arg
        _GLOBAL_CUSTOM_NAMES[arg] = registered_name
        return arg

    return decorator


def get_registered_name(obj):
    """The name ``obj`` is registered under, else its ``__name__``."""
    try:
        if obj in _GLOBAL_CUSTOM_NAMES:
            return _GLOBAL_CUSTOM_NAMES[obj]
    except TypeError:  # unhashable
        pass
    return obj.__name__


def is_registered(obj):
    try:
        return obj in _GLOBAL_CUSTOM_NAMES
    except TypeError:
        return False


def get_registered_object(name, custom_objects=None, module_objects=None):
    """The object under ``name``: a custom_object_scope first, then the global registry,
    then ``custom_objects``, then ``module_objects`` (tf-keras' order); None if none."""
    if not isinstance(name, str):
        return None
    objs = _scoped()
    if name in objs:
        return objs[name]
    if name in _GLOBAL_CUSTOM_OBJECTS:
        return _GLOBAL_CUSTOM_OBJECTS[name]
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    if module_objects and name in module_objects:
        return module_objects[name]
    return None


def lookup_config(config, custom_objects=None):
    """The registered or custom object a config dict (or a name) refers to, for the
    per-module ``deserialize`` functions (initializers, losses, ...): by its
    ``registered_name``, then its ``class_name``; None when neither is known."""
    if isinstance(config, str):
        return get_registered_object(config, custom_objects)
    if not isinstance(config, dict):
        return None
    for key in ("registered_name", "class_name"):
        obj = get_registered_object(config.get(key), custom_objects)
        if obj is not None:
            return obj
    if config.get("class_name") == "function":
        return get_registered_object(config.get("config"), custom_objects)
    return None


_MISSING = object()


def deserialize_registered(config, custom_objects=None):
    """For the per-module ``deserialize`` functions: the object a config (or name) gives
    when it names a registered or custom object (a class is built with ``from_config``, a
    function returned), else ``_MISSING``."""
    obj = lookup_config(config, custom_objects)
    if obj is None:
        return _MISSING
    if inspect.isclass(obj):
        inner = config.get("config") if isinstance(config, dict) else None
        if isinstance(inner, dict) and hasattr(obj, "from_config"):
            return obj.from_config(inner)
        return obj() if not isinstance(inner, dict) else obj(**inner)
    return obj


def registered_name_or_none(cls, builtin):
    """The 'registered_name' of a config: None for a built-in, else the registered name
    (or the class name), as tf-keras writes it."""
    return None if builtin else get_registered_name(cls)
