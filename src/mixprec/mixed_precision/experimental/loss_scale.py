"""Loss-scale objects of TF 2.1–2.3 (``tensorflow/python/training/experimental/loss_scale.py``).

``DynamicLossScale`` follows TensorFlow's state machine exactly: after
``increment_period`` finite steps in a row the scale is multiplied by ``multiplier`` (only
if the result is finite); a step with an inf/NaN gradient divides it by ``multiplier``,
never below ``min_loss_scale`` (1 in TensorFlow; configurable here, and it may be below 1 —
a mixprec extension users of TensorFlow ask for); either event resets the counter.
"""

import numbers

import numpy as np

from mixprec import _core, _nest
from mixprec._dtypes import float32

__all__ = ["LossScale", "FixedLossScale", "DynamicLossScale", "get", "serialize", "deserialize"]


def _float32_scale(value, what):
    """``value`` as a Python float, refused where the float32 state cannot hold it.
    NOTE: the scale is a float32 variable; 1e300 there is a silent inf (and 1e-300 a
    silent 0), every step then skipped or every gradient inf."""
    value = float(value)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        stored = np.float32(value)
    if not np.isfinite(stored):
        raise ValueError("%s must be a finite float32 (at most %s), got %r"
                         % (what, np.finfo(np.float32).max, value))
    if value > 0 and stored == 0:
        raise ValueError("%s must be a finite float32, got %r, which is 0 in float32"
                         % (what, value))
    return value


class LossScale:
    """Base class: a callable returning the current loss scale (a float32 scalar tensor)."""

    def __call__(self):
        raise NotImplementedError("Must be implemented in subclasses.")

    def update(self, grads):
        """Updates the scale from ``grads``; returns ``(update_op, should_apply_gradients)``."""
        raise NotImplementedError("Must be implemented in subclasses.")

    def get_config(self):
        raise NotImplementedError("Must be implemented in subclasses.")

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    # the C state (mixprec._core.LossScale) and its variables
    @property
    def _state(self):
        return self._c

    @property
    def variables(self):
        """[current_loss_scale (float32), good_steps (int64)]: the state, for checkpoints."""
        scale, good = self._c.variables()
        if "_name" not in scale.__dict__:
            scale._name, good._name = "current_loss_scale:0", "good_steps:0"
        return [scale, good]

    def _current(self):
        """The scale as a Python float (reads it back from a GPU)."""
        return self._c.value()

    def _scale_tensor(self):
        """The current scale: a float32 scalar tensor on the state's device (no read-back).
        A snapshot: later updates do not change it (copy-on-write)."""
        return self._c.variables()[0]._peek()


class FixedLossScale(LossScale):
    """A loss scale that never changes."""

    def __init__(self, loss_scale_value):
        if isinstance(loss_scale_value, bool) or not isinstance(loss_scale_value, numbers.Real):
            raise ValueError("loss_scale_value must be a Python int or float.")
        if loss_scale_value < 1:
            raise ValueError("loss_scale_value must be at least 1.")
        self._loss_scale_value = _float32_scale(loss_scale_value, "loss_scale_value")
        self._c = _core.LossScale(False, self._loss_scale_value)

    def __call__(self):
        return _core.constant(self._loss_scale_value, float32)

    def update(self, grads):
        del grads
        return None, True

    def get_config(self):
        return {"loss_scale_value": self._loss_scale_value}

    def __repr__(self):
        return "FixedLossScale(%s)" % self._loss_scale_value


class DynamicLossScale(LossScale):
    """A loss scale that grows after a run of finite steps and shrinks on inf/NaN."""

    def __init__(self, initial_loss_scale=2 ** 15, increment_period=2000, multiplier=2.,
                 min_loss_scale=1.0):
        if min_loss_scale is None or not float(min_loss_scale) > 0:
            raise ValueError("min_loss_scale must be positive, got %r" % (min_loss_scale,))
        self._initial_loss_scale = _float32_scale(initial_loss_scale, "initial_loss_scale")
        self._increment_period = int(increment_period)
        self._multiplier = float(multiplier)  # a growth past float32's range is not taken
        self._min_loss_scale = _float32_scale(min_loss_scale, "min_loss_scale")
        self._c = _core.LossScale(True, self._initial_loss_scale, self._increment_period,
                                  self._multiplier, self._min_loss_scale)

    @property
    def initial_loss_scale(self):
        return self._initial_loss_scale

    @property
    def increment_period(self):
        return self._increment_period

    @property
    def multiplier(self):
        return self._multiplier

    @property
    def min_loss_scale(self):
        """mixprec extension: the floor of the scale (TensorFlow's is always 1)."""
        return self._min_loss_scale

    def __call__(self):
        return self._scale_tensor()

    def update(self, grads):
        """One step of the state machine on ``grads`` (None entries are ignored)."""
        finite = _core.all_finite([g for g in _nest.flatten(grads) if g is not None])
        self._c.update(finite)
        return None, _core.constant(finite)

    def get_config(self):
        config = {"initial_loss_scale": self._initial_loss_scale,
                  "increment_period": self._increment_period,
                  "multiplier": self._multiplier}
        if self._min_loss_scale != 1.0:
            config["min_loss_scale"] = self._min_loss_scale
        return config

    def __repr__(self):
        # the scale as TensorFlow prints current_loss_scale.numpy(): a float32
        return ("DynamicLossScale(current_loss_scale=%s, num_good_steps=%s, "
                "initial_loss_scale=%s, increment_period=%s, multiplier=%s)" % (
                    np.float32(self._c.value()), self._c.good_steps(), self._initial_loss_scale,
                    self._increment_period, self._multiplier))


_CLASSES = {"FixedLossScale": FixedLossScale, "DynamicLossScale": DynamicLossScale}


def serialize(loss_scale):
    return {"class_name": type(loss_scale).__name__, "config": loss_scale.get_config()}


def deserialize(config, custom_objects=None):
    classes = dict(_CLASSES)
    classes.update(custom_objects or {})
    name = config.get("class_name") if isinstance(config, dict) else None
    if name not in classes:
        raise ValueError("Unknown loss scale class: %r" % (name,))
    return classes[name].from_config(config.get("config", {}))


def get(identifier):
    """None, 'dynamic', a number, a LossScale or a serialized dict -> LossScale (or None)."""
    if identifier is None:
        return None
    if isinstance(identifier, LossScale):
        return identifier
    if isinstance(identifier, str) and identifier == "dynamic":
        return DynamicLossScale()
    if isinstance(identifier, numbers.Real) and not isinstance(identifier, bool):
        return FixedLossScale(identifier)
    if isinstance(identifier, dict):
        return deserialize(identifier)
    raise ValueError("Could not interpret loss scale identifier: %s" % (identifier,))
