"""``tf.keras.regularizers``: penalties on weights and activations (L1, L2, L1L2), their
names, configs and lookup. A regularizer only computes a loss from a tensor; which layer
collects it and when (weights: on every access of ``losses``; activations: per call) is
base_layer's business, and the arithmetic is the core's ops.
"""

import math
import warnings

import numpy as np

from mixprec import _core
from mixprec._variable import Variable

__all__ = ["Regularizer", "L1", "L2", "L1L2", "l1", "l2", "l1_l2", "OrthogonalRegularizer",
           "orthogonal_regularizer", "get", "serialize", "deserialize"]


def _check_penalty_number(x):
    if isinstance(x, bool) or not isinstance(x, (float, int, np.floating, np.integer)):
        raise ValueError("Value %s is not a valid regularization penalty number, expected an "
                         "int or float value." % (x,))
    if math.isinf(x) or math.isnan(x):
        raise ValueError("Value %s is not a valid regularization penalty number, an infinite "
                         "number or NaN are not valid values." % (x,))


def _floatx(x):
    # tf-keras stores factors with backend.cast_to_floatx: L2(0.01).l2 is float32(0.01),
    # and its config says 0.009999999776482582
    return np.float32(x)


def _value(x):
    if not isinstance(x, (_core.Tensor, Variable)):  # a Variable is read by the op (taped)
        return _core.convert_to_tensor(x)
    return x


class Regularizer:
    """Base class: ``__call__(x)`` returns a scalar loss for the tensor ``x``."""

    def __call__(self, x):
        return 0.0

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def get_config(self):
        raise NotImplementedError("%s does not implement get_config()" % (self,))


class L1L2(Regularizer):
    """``l1 * sum(|x|) + l2 * sum(x**2)``; both factors default to 0 (the string
    ``'l1_l2'`` gives 0.01 each)."""

    def __init__(self, l1=0.0, l2=0.0):
        l1 = 0.0 if l1 is None else l1
        l2 = 0.0 if l2 is None else l2
        _check_penalty_number(l1)
        _check_penalty_number(l2)
        self.l1 = _floatx(l1)
        self.l2 = _floatx(l2)

    def __call__(self, x):
        x = _value(x)
        out = _core.fill([], 0, x.dtype)
        if self.l1:
            out = out + _core.reduce_sum(_core.abs(x)) * float(self.l1)
        if self.l2:
            out = out + _core.reduce_sum(_core.square(x)) * float(self.l2)
        return out

    def get_config(self):
        return {"l1": float(self.l1), "l2": float(self.l2)}


class L1(Regularizer):
    """``l1 * sum(|x|)`` (default factor 0.01)."""

    def __init__(self, l1=0.01, **kwargs):
        l1 = kwargs.pop("l", l1)  # tf-keras' backwards-compatible spelling
        if kwargs:
            raise TypeError("Argument(s) not recognized: %s" % (kwargs,))
        l1 = 0.01 if l1 is None else l1
        _check_penalty_number(l1)
        self.l1 = _floatx(l1)

    def __call__(self, x):
        return _core.reduce_sum(_core.abs(_value(x))) * float(self.l1)

    def get_config(self):
        return {"l1": float(self.l1)}


class L2(Regularizer):
    """``l2 * sum(x**2)`` (default factor 0.01)."""

    def __init__(self, l2=0.01, **kwargs):
        l2 = kwargs.pop("l", l2)
        if kwargs:
            raise TypeError("Argument(s) not recognized: %s" % (kwargs,))
        l2 = 0.01 if l2 is None else l2
        _check_penalty_number(l2)
        self.l2 = _floatx(l2)

    def __call__(self, x):
        return _core.reduce_sum(_core.square(_value(x))) * float(self.l2)

    def get_config(self):
        return {"l2": float(self.l2)}


class OrthogonalRegularizer(Regularizer):
    """Pushes the rows (or columns) of a 2-D weight towards orthogonality: ``factor`` times
    the mean absolute cosine similarity over distinct pairs (tf-keras' formula)."""

    def __init__(self, factor=0.01, mode="rows"):
        _check_penalty_number(factor)
        self.factor = _floatx(factor)
        if mode not in ("rows", "columns"):
            raise ValueError('Invalid value for argument `mode`. Expected one of {"rows", '
                             '"columns"}. Received: mode=%s' % (mode,))
        self.mode = mode

    def __call__(self, inputs):
        x = _value(inputs)
        if x.shape.rank != 2:
            raise ValueError("Inputs to OrthogonalRegularizer must have rank 2. Received: "
                             "inputs.shape == %s" % (x.shape,))
        from mixprec import math as _math
        axis = 1 if self.mode == "rows" else 0
        n = _math.l2_normalize(x, axis=axis)
        prod = _core.matmul(n, n, transpose_b=True) if axis == 1 else \
            _core.matmul(n, n, transpose_a=True)
        size = prod.shape[0]
        off = prod * _core.constant(1.0 - np.eye(size), x.dtype.name)
        pairs = size * (size - 1.0) / 2.0
        return float(self.factor) * 0.5 * _core.reduce_sum(_core.abs(off)) / pairs

    def get_config(self):
        return {"factor": float(self.factor), "mode": self.mode}


def l1_l2(l1=0.01, l2=0.01):
    """An L1L2 regularizer with tf-keras' defaults for this function (0.01 each)."""
    return L1L2(l1=l1, l2=l2)


l1 = L1
l2 = L2
orthogonal_regularizer = OrthogonalRegularizer

_BY_NAME = {"Regularizer": Regularizer, "L1": L1, "L2": L2, "L1L2": L1L2, "l1": L1,
            "l2": L2, "OrthogonalRegularizer": OrthogonalRegularizer,
            "orthogonal_regularizer": OrthogonalRegularizer}


def serialize(regularizer, use_legacy_format=False):
    """A regularizer's config as tf-keras 2.21 writes it:
    ``{'module': 'keras.regularizers', 'class_name': 'L2', 'config': {...},
    'registered_name': None}`` (``use_legacy_format=True``: class_name and config only)."""
    if regularizer is None:
        return None
    if not isinstance(regularizer, Regularizer):
        warnings.warn("The `keras.regularizers.serialize()` API should only be used for objects "
                      "of type `keras.regularizers.Regularizer`. Found an instance of type %s, "
                      "which may lead to improper serialization." % (type(regularizer),),
                      stacklevel=2)
        if callable(regularizer) and not hasattr(regularizer, "get_config"):
            return getattr(regularizer, "__name__", None)
    cls = type(regularizer)
    if use_legacy_format:
        return {"class_name": cls.__name__, "config": regularizer.get_config()}
    builtin = _BY_NAME.get(cls.__name__) is cls
    return {"module": "keras.regularizers" if builtin else cls.__module__,
            "class_name": cls.__name__, "config": regularizer.get_config(),
            "registered_name": _registered_name(cls, builtin)}


def _registered_name(cls, builtin):
    from mixprec.keras.saving import object_registration

    return object_registration.registered_name_or_none(cls, builtin)


def deserialize(config, custom_objects=None, use_legacy_format=False):
    """A regularizer from a config dict or a name ('l2' is L2(0.01), 'l1_l2' is
    L1L2(0.01, 0.01))."""
    from mixprec.keras.saving import object_registration as _reg

    found = _reg.deserialize_registered(config, custom_objects)
    if found is not _reg._MISSING:
        return found
    if config == "l1_l2":
        # the string's defaults differ from those of the L1L2 class, as in tf-keras
        return L1L2(l1=0.01, l2=0.01)
    objs = dict(_BY_NAME)
    objs["l1_l2"] = l1_l2
    objs.update(custom_objects or {})
    if isinstance(config, str):
        obj = objs.get(config)
        if obj is None:
            raise ValueError("Unknown regularizer: '%s'. Please ensure you are using a "
                             "`keras.utils.custom_object_scope` and that this object is "
                             "included in the scope." % (config,))
        return obj() if isinstance(obj, type) else obj
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError("Could not interpret regularizer identifier: %s" % (config,))
    name = config["class_name"]
    obj = objs.get(name)
    if obj is None:
        raise ValueError("Unknown regularizer: '%s'. Please ensure you are using a "
                         "`keras.utils.custom_object_scope` and that this object is included "
                         "in the scope." % (name,))
    inner = config.get("config") or {}
    if isinstance(obj, type):
        return obj.from_config(inner)
    return obj(**inner)


def get(identifier):
    """None, a Regularizer, a name, a config dict or any callable ``f(weights) -> loss``."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        return deserialize(str(identifier))
    if callable(identifier):
        return identifier
    raise ValueError("Could not interpret regularizer identifier: %s" % (identifier,))

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
