"""``tf.keras.activations``: relu, softmax, sigmoid, tanh, linear, gelu, elu, softplus …

Each is a core op; ``softmax`` and ``sigmoid`` remember their logits so a following
cross-entropy loss computes from the logits (stable; tf-keras does the same through
``_keras_logits``, whichever cross-entropy gets the output).
"""

import weakref

from mixprec import _core

__all__ = ["relu", "softmax", "sigmoid", "tanh", "linear", "gelu", "elu", "softplus",
           "softsign", "swish", "selu", "exponential", "leaky_relu", "relu6", "hard_sigmoid",
           "mish", "silu", "get", "serialize", "deserialize"]

# id of a softmax or sigmoid output -> (logits, weak output); read by keras.losses
_softmax_logits = {}


def _remember_logits(out, logits):
    key = out._id
    _softmax_logits[key] = (logits, weakref.ref(out, lambda _r, k=key: _softmax_logits.pop(k, None)))


def logits_of(y_pred):
    """The logits ``y_pred`` was computed from by a softmax activation, or None.

    Keyed by the core tensor id, which is never reused, so any Python handle on the same
    tensor finds them."""
    entry = _softmax_logits.get(getattr(y_pred, "_id", None))
    return None if entry is None else entry[0]


def relu(x, alpha=0.0, max_value=None, threshold=0.0):
    x = _core.convert_to_tensor(x)
    if alpha == 0.0 and max_value is None and threshold == 0.0:
        return _core.relu(x)
    if threshold != 0.0:
        y = _core.where(_core.greater(x, threshold), x, alpha * (x - threshold) if alpha else 0.0)
    elif alpha:
        y = _core.leaky_relu(x, alpha=float(alpha))
    else:
        y = _core.relu(x)
    if max_value is not None:
        y = _core.minimum(y, max_value)
    return y


def softmax(x, axis=-1):
    x = _core.convert_to_tensor(x)
    if x.ndim <= 1:
        raise ValueError("Cannot apply softmax to a tensor that is 1D. Received input: %r" % (x,))
    y = _core.softmax(x, axis)
    if axis in (-1, x.ndim - 1):
        _remember_logits(y, x)
    return y


def sigmoid(x):
    x = _core.convert_to_tensor(x)
    y = _core.sigmoid(x)
    _remember_logits(y, x)  # tf-keras caches them too (_keras_logits)
    return y


def tanh(x):
    return _core.tanh(x)


def linear(x):
    return x


def gelu(x, approximate=False):
    return _core.gelu(x, approximate=bool(approximate))


def elu(x, alpha=1.0):
    return _core.elu(x, alpha=float(alpha))


def selu(x):
    alpha, scale = 1.67326324, 1.05070098
    return _core.elu(x, alpha=alpha) * scale


def softplus(x):
    return _core.softplus(x)


def softsign(x):
    x = _core.convert_to_tensor(x)
    return x / (_core.abs(x) + 1)


def swish(x):
    x = _core.convert_to_tensor(x)
    return x * _core.sigmoid(x)


silu = swish


def exponential(x):
    return _core.exp(x)


def leaky_relu(x, alpha=0.2):
    return _core.leaky_relu(x, alpha=float(alpha))


def relu6(x):
    """min(max(x, 0), 6)."""
    return _core.minimum(_core.relu(x), 6.0)


def hard_sigmoid(x):
    """tf-keras 2.21's piecewise-linear sigmoid: clip(0.2 * x + 0.5, 0, 1)."""
    x = _core.convert_to_tensor(x)
    return _core.minimum(_core.maximum(x * 0.2 + 0.5, 0.0), 1.0)


def mish(x):
    """x * tanh(softplus(x))."""
    x = _core.convert_to_tensor(x)
    return x * _core.tanh(_core.softplus(x))


_BY_NAME = {f.__name__: f for f in (relu, softmax, sigmoid, tanh, linear, gelu, elu, selu,
                                     softplus, softsign, swish, exponential, leaky_relu, relu6,
                                     hard_sigmoid, mish)}


def _log_softmax(x, axis=-1):
    return _core.log_softmax(_core.convert_to_tensor(x), axis)


# tf-keras resolves the name 'log_softmax' although keras.activations has no such attribute
_log_softmax.__name__ = _log_softmax.__qualname__ = "log_softmax"
_BY_NAME["log_softmax"] = _log_softmax
_BY_NAME["silu"] = swish


def get(identifier):
    """An activation function from a name, a function or None (linear)."""
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        fn = _BY_NAME.get(identifier)
        if fn is None:
            from mixprec.keras.saving import object_registration

            fn = object_registration.get_registered_object(identifier)
        if fn is None:
            raise ValueError("Unknown activation function '%s' cannot be deserialized."
                             % (identifier,))
        return fn
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise TypeError("Could not interpret activation function identifier: %r" % (identifier,))


def serialize(activation):
    """A built-in's name; a custom function's registered name (or ``__name__``, found
    again through custom_objects or custom_object_scope); a layer's config dict."""
    name = getattr(activation, "__name__", None)
    if name in _BY_NAME and _BY_NAME[name] is activation:
        return name
    from mixprec.keras.saving import object_registration, serialization_lib

    if hasattr(activation, "get_config"):
        return serialization_lib.serialize_keras_object(activation)
    if name is not None and callable(activation):
        return object_registration.get_registered_name(activation)
    raise ValueError("Cannot serialize activation %r" % (activation,))


def _lookup(name, custom_objects):
    from mixprec.keras.saving import object_registration

    found = object_registration.get_registered_object(name, custom_objects)
    if found is not None:
        return found
    if name in _BY_NAME:
        return _BY_NAME[name]
    from mixprec.keras import layers  # activation layers (ReLU, Softmax …) where they exist
    obj = getattr(layers, name, None) if name[:1].isupper() else None
    if isinstance(obj, type):
        return obj
    raise ValueError(
        "Unknown activation function: '%s'. Please ensure you are using a "
        "`keras.utils.custom_object_scope` and that this object is included in the scope. See "
        "https://www.tensorflow.org/guide/keras/save_and_serialize"
        "#registering_the_custom_object for details." % (name,))


def deserialize(name, custom_objects=None):
    """An activation from its name or config dict, as tf-keras: a dict with a 'module' key is
    the current format ({'class_name': 'function', 'config': 'relu', ...}); a dict without
    one is the legacy format, where 'class_name' names a function or an activation layer and
    'config' holds its keyword arguments (so {'class_name': 'relu', 'config': {}} calls relu()
    without x, a TypeError in tf-keras too)."""
    if isinstance(name, dict):
        if "class_name" not in name or "config" not in name:
            raise ValueError("Could not interpret serialized activation function: %r" % (name,))
        class_name, config = name["class_name"], name["config"]
        if "module" in name and class_name == "function":
            if not isinstance(config, str):
                raise ValueError("Could not interpret serialized activation function: %r"
                                 % (name,))
            return _lookup(name.get("registered_name") or config, custom_objects)
        if not isinstance(class_name, str):
            raise ValueError("Could not interpret serialized activation function: %r" % (name,))
        obj = _lookup(class_name, custom_objects)
        config = config or {}
        if hasattr(obj, "from_config"):
            return obj.from_config(config)
        return obj(**config)
    if isinstance(name, str):
        return _lookup(name, custom_objects)
    return get(name)

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
