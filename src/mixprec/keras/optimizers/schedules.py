"""``tf.keras.optimizers.schedules``: learning rates as a function of the step.

Schedules are host-side arithmetic on one number per step (the optimizer reads
``float(schedule(iterations))``); they return float32 scalar tensors like TensorFlow's.
"""

import math

import numpy as _np

from mixprec import _core
from mixprec._dtypes import float32

__all__ = ["LearningRateSchedule", "ExponentialDecay", "PiecewiseConstantDecay",
           "InverseTimeDecay", "PolynomialDecay", "CosineDecay", "CosineDecayRestarts",
           "serialize", "deserialize"]


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
    """Cosine decay from ``initial_learning_rate`` (or, with ``warmup_target``, a linear
    warmup to it over ``warmup_steps`` first), in float32 as tf-keras computes it."""

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name=None,
                 warmup_target=None, warmup_steps=0):
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = decay_steps
        self.alpha = float(alpha)
        self.name = name
        self.warmup_target = warmup_target
        self.warmup_steps = warmup_steps

    def _decay(self, step, decay_steps, start):
        f = _np.float32
        cos = f(0.5) * (f(1.0) + f(math.cos(f(math.pi) * (step / decay_steps))))
        return start * ((f(1) - f(self.alpha)) * cos + f(self.alpha))

    def __call__(self, step):
        f = _np.float32
        init, steps, s = f(self.initial_learning_rate), f(self.decay_steps), f(_step(step))
        if self.warmup_target is None:
            return _core.constant(self._decay(min(s, steps), steps, init), float32)
        target, warm = f(self.warmup_target), f(self.warmup_steps)
        s = min(s, steps + warm)
        if s < warm:
            out = (target - init) * (s / warm) + init
        else:
            out = self._decay(s - warm, steps, target)
        return _core.constant(out, float32)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "alpha": self.alpha, "name": self.name,
                "warmup_target": self.warmup_target, "warmup_steps": self.warmup_steps}


class CosineDecayRestarts(LearningRateSchedule):
    """SGDR: cosine decay restarted every period, periods growing by ``t_mul`` and peaks
    scaled by ``m_mul`` (tf-keras' float32 arithmetic)."""

    def __init__(self, initial_learning_rate, first_decay_steps, t_mul=2.0, m_mul=1.0,
                 alpha=0.0, name=None):
        self.initial_learning_rate = float(initial_learning_rate)
        self.first_decay_steps = first_decay_steps
        self._t_mul = t_mul
        self._m_mul = m_mul
        self.alpha = alpha
        self.name = name

    def __call__(self, step):
        f = _np.float32
        frac = f(_step(step)) / f(self.first_decay_steps)
        t_mul, m_mul, alpha = f(self._t_mul), f(self._m_mul), f(self.alpha)
        if t_mul == f(1.0):
            i = f(math.floor(frac))
            frac = frac - i
        else:
            i = f(math.floor(f(math.log(f(1.0) - frac * (f(1.0) - t_mul))) /
                             f(math.log(t_mul))))
            sum_r = (f(1.0) - t_mul ** i) / (f(1.0) - t_mul)
            frac = (frac - sum_r) / t_mul ** i
        cos = f(0.5) * m_mul ** i * (f(1.0) + f(math.cos(f(math.pi) * frac)))
        return _core.constant(f(self.initial_learning_rate) * ((f(1) - alpha) * cos + alpha),
                              float32)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "first_decay_steps": self.first_decay_steps, "t_mul": self._t_mul,
                "m_mul": self._m_mul, "alpha": self.alpha, "name": self.name}


_CLASSES = {c.__name__: c for c in (ExponentialDecay, PiecewiseConstantDecay, InverseTimeDecay,
                                     PolynomialDecay, CosineDecay, CosineDecayRestarts)}


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
