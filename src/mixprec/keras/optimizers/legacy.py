"""``tf.keras.optimizers.legacy``: tf-keras 2.21's OptimizerV2 family (SGD, Adam, RMSprop,
Adagrad, Adadelta, Adamax, Nadam, Ftrl) as thin subclasses of the new classes: what differs
is API shape only — the ``decay`` argument and its config keys, slot names and order
('<optimizer>/<variable>/<slot>', slot by slot over the variables), the 'iter' variable,
epsilon outside Adagrad's root, the legacy Nadam's schedule. The rules stay the C core's.
"""

import numpy as _np

from mixprec._variable import Variable
from mixprec.keras.optimizers import adaptive as _adaptive
from mixprec.keras.optimizers import optimizer as _opt

__all__ = ["Optimizer", "SGD", "Adam", "RMSprop", "Adagrad", "Adadelta", "Adamax", "Nadam",
           "Ftrl"]

_ALLOWED = {"lr", "global_clipnorm", "clipnorm", "clipvalue", "decay"}


class Optimizer(_opt.Optimizer):
    """Base class of the legacy optimizers (``isinstance(legacy.Adam(),
    keras.optimizers.Optimizer)`` is False, as in tf-keras 2.21)."""

    _IS_LEGACY = True
    _LEGACY_KEYS = ()  # the class's own config keys after name, learning_rate, decay
    # OptimizerV2's hyperparameter variables (checkpoint children, sorted there)
    _CKPT_HYPERS = ("decay", "learning_rate")

    def __init__(self, name, **kwargs):
        _check_kwargs(kwargs)
        super().__init__(name, **kwargs)

    @staticmethod
    def _iter_name(name):
        return "%s/iter" % name  # OptimizerV2's step counter

    @property
    def name(self):
        # OptimizerV2 has no `name` (only `_name`): AttributeError, as tf-keras 2.21
        raise AttributeError("'%s' object has no attribute 'name'" % type(self).__name__)

    def _slot_var_name(self, slot, var_name):
        return "%s/%s/%s" % (self._name, var_name, slot)  # OptimizerV2: 'Adam/dense/kernel/m'

    @property
    def _SLOT_GROUPS(self):  # noqa: N802 - the base class's class attribute, per instance
        return tuple((n,) for n in self._slot_names_used())

    # keys OptimizerV2 keeps as hyperparameter variables: numbers given until the first step,
    # np.float32 of the variables after it (its get_config reads them)
    _LEGACY_HYPERS = ()

    def get_config(self):
        config = {"name": self._name}
        for key in ("clipnorm", "clipvalue", "global_clipnorm"):
            if getattr(self, key) is not None:
                config[key] = getattr(self, key)
        config["learning_rate"] = self._legacy_value("learning_rate")
        config["decay"] = self._initial_decay
        for key in self._LEGACY_KEYS:
            config[key] = self._legacy_value(key)
        return config

    def _legacy_value(self, key):
        built = bool(self._vars)
        hyper = self.__dict__.get("_hyper", {})
        if key in hyper:
            value = hyper[key]
            if not isinstance(value, Variable):
                return self._serialize_hyper(key)
            if built:
                return _np.float32(value._peek())
            exact = self.__dict__.get("_hyper_exact", {}).get(key)
            return exact if exact is not None else float(value._peek())
        value = getattr(self, key)
        if built and key in self._LEGACY_HYPERS:
            return _np.float32(value)
        return value

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if "lr" in config:
            config["learning_rate"] = config.pop("lr")
        if isinstance(config.get("learning_rate"), dict):
            from mixprec.keras.optimizers import schedules

            config["learning_rate"] = schedules.deserialize(config["learning_rate"])
        return cls(**config)

    def __repr__(self):
        return "<mixprec.keras.optimizers.legacy.%s name=%r>" % (type(self).__name__,
                                                                 self._name)


class SGD(Optimizer, _opt.SGD):
    _CKPT_HYPERS = ("decay", "learning_rate", "momentum")
    _LEGACY_KEYS = ("momentum", "nesterov")

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD", **kwargs):
        _check_kwargs(kwargs)
        _opt.SGD.__init__(self, learning_rate, momentum, nesterov, name, **kwargs)


class Adam(Optimizer, _opt.Adam):
    _CKPT_HYPERS = ("beta_1", "beta_2", "decay", "learning_rate")
    _LEGACY_KEYS = ("beta_1", "beta_2", "epsilon", "amsgrad")

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, name="Adam", **kwargs):
        _check_kwargs(kwargs)
        _opt.Adam.__init__(self, learning_rate, beta_1, beta_2, epsilon, amsgrad, name, **kwargs)


class RMSprop(Optimizer, _opt.RMSprop):
    _CKPT_HYPERS = ("decay", "learning_rate", "momentum", "rho")
    _LEGACY_KEYS = ("rho", "momentum", "epsilon", "centered")

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7,
                 centered=False, name="RMSprop", **kwargs):
        _check_kwargs(kwargs)
        _opt.RMSprop.__init__(self, learning_rate, rho, momentum, epsilon, centered, name,
                              **kwargs)


class Adagrad(Optimizer, _adaptive.Adagrad):
    """OptimizerV2's Adagrad: epsilon outside the root (ResourceApplyAdagradV2)."""

    _LEGACY_KEYS = ("initial_accumulator_value", "epsilon")

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7,
                 name="Adagrad", **kwargs):
        _check_kwargs(kwargs)
        if initial_accumulator_value < 0.0:
            raise ValueError("initial_accumulator_value must be non-negative: %s"
                             % (initial_accumulator_value,))
        _adaptive.Adagrad.__init__(self, learning_rate, initial_accumulator_value,
                                   1e-7 if epsilon is None else epsilon, name=name, **kwargs)

    def _extra_hparams(self):
        return (0.0, 0.0, 0.0, 0.0, 0.0, 1.0, True)


class Adadelta(Optimizer, _adaptive.Adadelta):
    _CKPT_HYPERS = ("decay", "learning_rate", "rho")
    _LEGACY_KEYS = ("rho", "epsilon")
    _LEGACY_HYPERS = ("rho",)
    _SLOT_NAMES = ("accum_grad", "accum_var")

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, name="Adadelta", **kwargs):
        _check_kwargs(kwargs)
        _adaptive.Adadelta.__init__(self, learning_rate, rho, 1e-7 if epsilon is None else
                                    epsilon, name=name, **kwargs)


class Adamax(Optimizer, _adaptive.Adamax):
    _CKPT_HYPERS = ("beta_1", "beta_2", "decay", "learning_rate")
    _LEGACY_KEYS = ("beta_1", "beta_2", "epsilon")
    _LEGACY_HYPERS = ("beta_1", "beta_2")
    _SLOT_NAMES = ("m", "v")

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 name="Adamax", **kwargs):
        _check_kwargs(kwargs)
        _adaptive.Adamax.__init__(self, learning_rate, beta_1, beta_2,
                                  1e-7 if epsilon is None else epsilon, name=name, **kwargs)


class Nadam(Optimizer, _adaptive.Nadam):
    """OptimizerV2's Nadam: ``decay`` (default 0.004, also ``schedule_decay``) is the
    momentum schedule's (u_t = b1 (1 - 0.5 * 0.96^(decay t))), not the learning rate's; the
    running product is the 'momentum_cache' weight, listed after 'iter'."""

    _CKPT_HYPERS = ("beta_1", "beta_2", "decay", "learning_rate")
    _LEGACY_KEYS = ("beta_1", "beta_2", "epsilon")
    _LEGACY_HYPERS = ("beta_1", "beta_2")

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 name="Nadam", **kwargs):
        kwargs["decay"] = kwargs.pop("schedule_decay", kwargs.get("decay", 0.004))
        _check_kwargs(kwargs)
        _adaptive.Nadam.__init__(self, learning_rate, beta_1, beta_2,
                                 1e-7 if epsilon is None else epsilon, name=name, **kwargs)

    @property
    def _SCHEDULE_DECAY(self):  # noqa: N802
        return self._initial_decay

    def _current_lr(self):
        return self._hyper_value("learning_rate")  # the decay is the schedule's

    def _u_product_name(self):
        return "%s/momentum_cache" % self._name

    def _extra_variables(self):
        var = self.__dict__.get("_u_product")
        return [var] if var is not None else []


class Ftrl(Optimizer, _adaptive.Ftrl):
    _CKPT_HYPERS = ("beta", "decay", "l1_regularization_strength", "l2_regularization_strength",
                    "learning_rate", "learning_rate_power")
    _LEGACY_KEYS = ("initial_accumulator_value", "learning_rate_power",
                    "l1_regularization_strength", "l2_regularization_strength", "beta",
                    "l2_shrinkage_regularization_strength")
    _LEGACY_HYPERS = ("learning_rate_power", "l1_regularization_strength",
                      "l2_regularization_strength", "beta")

    def __init__(self, learning_rate=0.001, learning_rate_power=-0.5,
                 initial_accumulator_value=0.1, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, name="Ftrl",
                 l2_shrinkage_regularization_strength=0.0, beta=0.0, **kwargs):
        _check_kwargs(kwargs)
        _adaptive.Ftrl.__init__(
            self, learning_rate, learning_rate_power, initial_accumulator_value,
            l1_regularization_strength, l2_regularization_strength,
            l2_shrinkage_regularization_strength, beta, name=name, **kwargs)

    @property
    def _SLOT_GROUPS(self):  # noqa: N802 - OptimizerV2's Ftrl adds both slots per variable
        return None


def _check_kwargs(kwargs):
    for k in kwargs:
        if k not in _ALLOWED:
            raise TypeError("Unexpected keyword argument passed to optimizer: %s. Allowed "
                            "kwargs are %s." % (k, _ALLOWED))


_CLASSES = (SGD, Adam, RMSprop, Adagrad, Adadelta, Adamax, Nadam, Ftrl)

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
