"""``tf.keras.optimizers``: SGD, RMSprop, Adam, Adagrad, Adadelta, Adamax, Nadam, AdamW,
Ftrl, Lion, the ``legacy`` family and the string/config lookups."""

from mixprec.keras.optimizers import experimental, schedules  # noqa: F401
from mixprec.keras.optimizers.adaptive import (  # noqa: F401
    Adadelta, Adagrad, Adamax, AdamW, Ftrl, Lion, Nadam)
from mixprec.keras.optimizers.optimizer import SGD, Adam, Optimizer, RMSprop  # noqa: F401
from mixprec.keras.optimizers import legacy  # noqa: F401,E402

__all__ = ["Optimizer", "SGD", "RMSprop", "Adam", "Adagrad", "Adadelta", "Adamax", "Nadam",
           "AdamW", "Ftrl", "Lion", "get", "serialize", "deserialize", "schedules",
           "experimental", "legacy"]

# tf-keras 2.21's names for get('...'): Lion has none (get('lion') raises)
_BY_NAME = {"sgd": SGD, "rmsprop": RMSprop, "adam": Adam, "adagrad": Adagrad,
            "adadelta": Adadelta, "adamax": Adamax, "nadam": Nadam, "adamw": AdamW,
            "ftrl": Ftrl}
_CLASSES = (SGD, RMSprop, Adam, Adagrad, Adadelta, Adamax, Nadam, AdamW, Ftrl, Lion)


def serialize(optimizer, use_legacy_format=False):
    """tf-keras 2.21's dict: {'module', 'class_name', 'config', 'registered_name'}."""
    from mixprec.keras.saving import serialization_lib

    if use_legacy_format:
        return {"class_name": type(optimizer).__name__, "config": optimizer.get_config()}
    return serialization_lib.serialize_keras_object(optimizer)


def deserialize(config, custom_objects=None):
    """A config dict ({'class_name', 'config'}) -> optimizer."""
    from mixprec.keras.saving import object_registration as _reg

    found = _reg.deserialize_registered(config, custom_objects)
    if found is not _reg._MISSING:
        return found
    name = config.get("class_name", "")
    inner = config.get("config") or {}
    # tf-keras 2.21's rule: a non-empty config without is_legacy_optimizer (or with it
    # true) makes the legacy class where there is one ('adam' with {} is the new Adam)
    is_legacy = bool(inner) and inner.get("is_legacy_optimizer", True) is not False
    classes = {}
    for c in _CLASSES + (legacy._CLASSES if is_legacy else ()):
        classes[c.__name__] = c
        classes[c.__name__.lower()] = c
    classes.update(custom_objects or {})
    cls = classes.get(name) or classes.get(str(name).lower())
    if cls is None and str(name).startswith("Custom>"):
        # tf-keras registers its new optimizers as 'Custom>Adam' (also inside a
        # LossScaleOptimizerV3's inner_optimizer)
        cls = classes.get(name[len("Custom>"):])
    if cls is None:
        from mixprec.keras.mixed_precision import loss_scale_optimizer as lso

        if name in ("LossScaleOptimizer", "LossScaleOptimizerV3", "LossScaleOptimizerV1"):
            return lso.LossScaleOptimizer.from_config(config.get("config", {}), custom_objects)
        raise ValueError("Unknown optimizer: %r" % (name,))
    inner = dict(inner)
    if getattr(cls, "_IS_LEGACY", False):
        inner.pop("is_legacy_optimizer", None)
    return cls.from_config(inner)


def get(identifier):
    """An optimizer from an instance, a name ('adam', 'rmsprop', 'sgd') or a config dict."""
    from mixprec.keras.optimizers.optimizer import _BaseOptimizer

    if isinstance(identifier, _BaseOptimizer) or hasattr(identifier, "apply_gradients"):
        return identifier
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(
                "Unknown optimizer: %r. Please ensure you are using a "
                "`keras.utils.custom_object_scope` and that this object is included in the "
                "scope. See https://www.tensorflow.org/guide/keras/save_and_serialize"
                "#registering_the_custom_object for details." % (identifier,))
        return cls()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    raise ValueError("Could not interpret optimizer identifier: %s" % (identifier,))

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
