"""``tf.keras.optimizers.schedules``: learning rates as a function of the step.

Schedules are host-side arithmetic on one number per step (the optimizer reads
``float(schedule(iterations))``); they return float32 scalar tensors like TensorFlow's.
"""

import math

from mixprec import _core
from mixprec._dtypes import float32

__all__ = ["LearningRateSchedule", "ExponentialDecay", "PiecewiseConstantDecay",
           "InverseTimeDecay", "PolynomialDecay", "CosineDecay", "serialize", "deserialize"]


def _step(step):
    if isinstance(step, _core.Variable):
        step = step._peek()
    return float(step)


class LearningRateSchedule:
    """Base class: ``schedule(step)`` returns the learning rate for that step."""

    def __call__(self, step):
        raise NotImplementedError("Learning rate schedule must override __call__")

    def get_config(self):
        raise NotImplementedError("Learning rate schedule must override get_config")

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class _StepDecay(LearningRateSchedule):
    """initial_learning_rate decayed by a function of p = step / decay_steps (floored when
    ``staircase``): ExponentialDecay and InverseTimeDecay."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False, name=None):
        if decay_steps <= 0:
            raise ValueError("decay_steps must be positive, got %s" % (decay_steps,))
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = decay_steps
        self.decay_rate = float(decay_rate)
        self.staircase = bool(staircase)
        self.name = name

    def _decayed(self, p):
        raise NotImplementedError

    def __call__(self, step):
        p = _step(step) / self.decay_steps
        if self.staircase:
            p = math.floor(p)
        return _core.constant(self._decayed(p), float32)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


class ExponentialDecay(_StepDecay):
    """initial_learning_rate * decay_rate ** (step / decay_steps)."""

    def _decayed(self, p):
        return self.initial_learning_rate * self.decay_rate ** p


class InverseTimeDecay(_StepDecay):
    """initial_learning_rate / (1 + decay_rate * step / decay_steps)."""

    def _decayed(self, p):
        return self.initial_learning_rate / (1 + self.decay_rate * p)


class PiecewiseConstantDecay(LearningRateSchedule):
    def __init__(self, boundaries, values, name=None):
        if len(boundaries) != len(values) - 1:
            raise ValueError("The length of boundaries should be 1 less than the length of "
                             "values")
        self.boundaries = list(boundaries)
        self.values = list(values)
        self.name = name

    def __call__(self, step):
        s = _step(step)
        for b, v in zip(self.boundaries, self.values):
            if s <= b:
                return _core.constant(float(v), float32)
        return _core.constant(float(self.values[-1]), float32)

    def get_config(self):
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class PolynomialDecay(LearningRateSchedule):
    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0,
                 cycle=False, name=None):
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = decay_steps
        self.end_learning_rate = float(end_learning_rate)
        self.power = float(power)
        self.cycle = bool(cycle)
        self.name = name

    def __call__(self, step):
        s, ds = _step(step), float(self.decay_steps)
        if self.cycle:
            ds = ds * max(1.0, math.ceil(s / ds)) if s > 0 else ds
        else:
            s = min(s, ds)
        frac = (1 - s / ds) ** self.power
        lr = (self.initial_learning_rate - self.end_learning_rate) * frac + self.end_learning_rate
        return _core.constant(lr, float32)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "end_learning_rate": self.end_learning_rate,
                "power": self.power, "cycle": self.cycle, "name": self.name}


class CosineDecay(LearningRateSchedule):
    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name=None):
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = decay_steps
        self.alpha = float(alpha)
        self.name = name

    def __call__(self, step):
        s = min(_step(step), float(self.decay_steps))
        cos = 0.5 * (1 + math.cos(math.pi * s / self.decay_steps))
        return _core.constant(self.initial_learning_rate * ((1 - self.alpha) * cos + self.alpha),
                              float32)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "alpha": self.alpha, "name": self.name}


_CLASSES = {c.__name__: c for c in (ExponentialDecay, PiecewiseConstantDecay, InverseTimeDecay,
                                     PolynomialDecay, CosineDecay)}


def serialize(schedule, use_legacy_format=False):
    """tf-keras 2.21's dict: {'module', 'class_name', 'config', 'registered_name'}."""
    from mixprec.keras.saving import serialization_lib

    if use_legacy_format:
        return {"class_name": type(schedule).__name__, "config": schedule.get_config()}
    return serialization_lib.serialize_keras_object(schedule)


def deserialize(config, custom_objects=None):
    classes = dict(_CLASSES)
    classes.update(custom_objects or {})
    name = config.get("class_name")
    if name not in classes:
        raise ValueError("Unknown learning rate schedule: %r" % (name,))
    return classes[name].from_config(config.get("config", {}))

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
