"""``tf.keras.constraints``: projections applied to a variable after each optimizer update
(NonNeg, MaxNorm, UnitNorm, MinMaxNorm), their names and configs. The optimizer decides
when to apply them; the arithmetic is the core's ops.
"""

from mixprec import _core

__all__ = ["Constraint", "NonNeg", "MaxNorm", "UnitNorm", "MinMaxNorm", "max_norm", "non_neg",
           "unit_norm", "min_max_norm", "RadialConstraint", "radial_constraint", "get",
           "serialize", "deserialize"]

_EPSILON = 1e-7  # tf-keras' backend.epsilon()


class Constraint:
    """Base class: ``__call__(w)`` returns the projected weight."""

    def __call__(self, w):
        return w

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class NonNeg(Constraint):
    """Weights are non-negative."""

    def __call__(self, w):
        return w * _core.cast(_core.greater_equal(w, 0.0), w.dtype)


def _norms(w, axis):
    return _core.sqrt(_core.reduce_sum(_core.square(w), axis, True))


class MaxNorm(Constraint):
    """Norm along ``axis`` at most ``max_value``."""

    def __init__(self, max_value=2, axis=0):
        self.max_value = max_value
        self.axis = axis

    def __call__(self, w):
        norms = _norms(w, self.axis)
        desired = _core.minimum(_core.maximum(norms, 0.0), float(self.max_value))
        return w * (desired / (norms + _EPSILON))

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


class UnitNorm(Constraint):
    """Norm along ``axis`` equal to one."""

    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        return w / (_norms(w, self.axis) + _EPSILON)

    def get_config(self):
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Norm along ``axis`` moved ``rate`` of the way into [min_value, max_value]."""

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value = min_value
        self.max_value = max_value
        self.rate = rate
        self.axis = axis

    def __call__(self, w):
        norms = _norms(w, self.axis)
        clipped = _core.minimum(_core.maximum(norms, float(self.min_value)),
                                float(self.max_value))
        desired = clipped * float(self.rate) + norms * (1.0 - self.rate)
        return w * (desired / (norms + _EPSILON))

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


max_norm, non_neg, unit_norm, min_max_norm = MaxNorm, NonNeg, UnitNorm, MinMaxNorm
_BY_NAME = {"Constraint": Constraint, "NonNeg": NonNeg, "MaxNorm": MaxNorm,
            "UnitNorm": UnitNorm, "MinMaxNorm": MinMaxNorm, "max_norm": MaxNorm,
            "non_neg": NonNeg, "unit_norm": UnitNorm, "min_max_norm": MinMaxNorm}


class RadialConstraint(Constraint):
    """Makes each (height, width) slice of a 4-D conv kernel radially symmetric: every ring
    around the centre takes one diagonal value, chosen as tf-keras' implementation does
    (odd size 2s+1: centre from [s-1, s-1], ring j from [s+j-1, s+j-1]; even size 2s: the
    inner 2x2 from [s-1, s-1], ring j from [s+j, s+j]). A gather, so differentiable."""

    def __call__(self, w):
        w = _core.convert_to_tensor(w)
        if w.shape.rank != 4:
            raise ValueError("The weight tensor must have rank 4. Received weight tensor with "
                             "shape: %s" % (w.shape,))
        import numpy as np
        h, wd, c, k = w.shape
        if h != wd:
            raise ValueError("RadialConstraint needs a square kernel, got %dx%d" % (h, wd))
        s = h // 2
        r = np.arange(h)
        if h % 2:
            ring = np.maximum(np.abs(r[:, None] - s), np.abs(r[None, :] - s))
            src = np.where(ring == 0, s - 1, s + ring - 1)
        else:
            dist = np.minimum(np.abs(r - (s - 1)), np.abs(r - s))
            ring = np.maximum(dist[:, None], dist[None, :])
            src = np.where(ring == 0, s - 1, s + ring)
        idx = np.stack([src, src], axis=-1).astype("int32")
        from mixprec._array_extra import gather_nd
        flat = _core.reshape(w, (h, wd, c * k))
        return _core.reshape(gather_nd(flat, _core.constant(idx, "int32")), (h, wd, c, k))


radial_constraint = RadialConstraint
_BY_NAME.update(RadialConstraint=RadialConstraint, radial_constraint=RadialConstraint)


def serialize(constraint, use_legacy_format=False):
    if constraint is None:
        return None
    cls = type(constraint)
    if not hasattr(constraint, "get_config"):
        return getattr(constraint, "__name__", None)
    if use_legacy_format:
        return {"class_name": cls.__name__, "config": constraint.get_config()}
    builtin = _BY_NAME.get(cls.__name__) is cls
    return {"module": "keras.constraints" if builtin else cls.__module__,
            "class_name": cls.__name__, "config": constraint.get_config(),
            "registered_name": _registered_name(cls, builtin)}


def _registered_name(cls, builtin):
    from mixprec.keras.saving import object_registration

    return object_registration.registered_name_or_none(cls, builtin)


def deserialize(config, custom_objects=None, use_legacy_format=False):
    from mixprec.keras.saving import object_registration as _reg

    found = _reg.deserialize_registered(config, custom_objects)
    if found is not _reg._MISSING:
        return found
    objs = dict(_BY_NAME)
    objs.update(custom_objects or {})
    name = config if isinstance(config, str) else (config or {}).get("class_name")
    cls = objs.get(name)
    if cls is None:
        raise ValueError("Unknown constraint: '%s'. Please ensure you are using a "
                         "`keras.utils.custom_object_scope` and that this object is included "
                         "in the scope." % (name,))
    if isinstance(config, str):
        return cls()
    return cls.from_config(config.get("config") or {})


def get(identifier):
    if identifier is None:
        return None
    if isinstance(identifier, (dict, str)):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError("Could not interpret constraint identifier: %s" % (identifier,))

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
