"""tf-keras 2.21's other optimizers: Adagrad, Adadelta, Adamax, Nadam, AdamW, Ftrl, Lion.

Each is its constructor (arguments, defaults, checks), its slots (names, initial values,
order) and its config; the update rule itself is the C core's (csrc/optim_rule.h, one
fused call per step through Optimizer._apply). No arithmetic on tensors here.
"""

from mixprec import _core, _ops
from mixprec._dtypes import float32
from mixprec._variable import Variable
from mixprec.keras.optimizers.optimizer import Optimizer

__all__ = ["Adagrad", "Adadelta", "Adamax", "Nadam", "AdamW", "Ftrl", "Lion"]


def _f(x):
    """A hyperparameter's value for this step (a number, tensor or variable)."""
    return float(x._peek() if isinstance(x, Variable) else x)


class _PlainHypers(Optimizer):
    """tf-keras 2.21's new optimizers keep every hyperparameter but the learning rate as the
    Python value given (``opt.beta_1`` is 0.9, not a variable)."""

    def _base_hparams(self, lr=None, momentum=0.0, rho=0.0, epsilon=0.0, beta_1=0.0,
                      beta_2=0.0, amsgrad=False):
        return (self._current_lr() if lr is None else lr, float(momentum), False, float(rho),
                float(epsilon), False, float(beta_1), float(beta_2), bool(amsgrad), False)

    def _config_with(self, **items):
        config = super().get_config()
        config["learning_rate"] = self._serialize_hyper("learning_rate")
        config.update(items)
        return config


class Adagrad(_PlainHypers):
    """Adagrad (tf-keras 2.21): ``acc += g^2; w -= lr * g / sqrt(acc + epsilon)``; the
    accumulator starts at ``initial_accumulator_value``."""

    _KIND = _core.OPTIM_ADAGRAD
    _SLOT_NAMES = ("accumulator",)
    _SLOT_INIT = {"accumulator": "initial_accumulator_value"}

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 use_ema=False, ema_momentum=0.99, ema_overwrite_frequency=None,
                 jit_compile=True, name="Adagrad", **kwargs):
        super().__init__(name, learning_rate, clipnorm=clipnorm, clipvalue=clipvalue,
                         global_clipnorm=global_clipnorm, weight_decay=weight_decay,
                         use_ema=use_ema, ema_momentum=ema_momentum,
                         ema_overwrite_frequency=ema_overwrite_frequency,
                         jit_compile=jit_compile, **kwargs)
        self.initial_accumulator_value = initial_accumulator_value
        self.epsilon = epsilon

    def _hparams(self):
        return self._base_hparams(epsilon=_f(self.epsilon))

    def get_config(self):
        return self._config_with(initial_accumulator_value=self.initial_accumulator_value,
                                 epsilon=self.epsilon)


class Adadelta(_PlainHypers):
    """Adadelta (tf-keras 2.21): ``ag = rho*ag + (1-rho)*g^2;
    d = -sqrt(adv + eps) * g / sqrt(ag + eps); adv = rho*adv + (1-rho)*d^2; w += lr*d``."""

    _KIND = _core.OPTIM_ADADELTA
    _SLOT_NAMES = ("accumulated_grad", "accumulated_delta_var")

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, use_ema=False,
                 ema_momentum=0.99, ema_overwrite_frequency=None, jit_compile=True,
                 name="Adadelta", **kwargs):
        super().__init__(name, learning_rate, clipnorm=clipnorm, clipvalue=clipvalue,
                         global_clipnorm=global_clipnorm, weight_decay=weight_decay,
                         use_ema=use_ema, ema_momentum=ema_momentum,
                         ema_overwrite_frequency=ema_overwrite_frequency,
                         jit_compile=jit_compile, **kwargs)
        self.rho = rho
        self.epsilon = epsilon

    def _hparams(self):
        return self._base_hparams(rho=_f(self.rho), epsilon=_f(self.epsilon))

    def get_config(self):
        return self._config_with(rho=self.rho, epsilon=self.epsilon)


class _BetasEpsilon(_PlainHypers):
    """Adamax and Nadam: the rule reads beta_1, beta_2 and epsilon, and the config lists them
    after the base keys."""

    def _hparams(self):
        return self._base_hparams(epsilon=_f(self.epsilon), beta_1=_f(self.beta_1),
                                  beta_2=_f(self.beta_2))

    def get_config(self):
        return self._config_with(beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon)


class Adamax(_BetasEpsilon):
    """Adamax (tf-keras 2.21): ``m += (g-m)(1-b1); u = max(b2*u, |g|);
    w -= lr*m / ((1 - b1^t)(u + eps))``."""

    _KIND = _core.OPTIM_ADAMAX
    _SLOT_NAMES = ("m", "u")

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 use_ema=False, ema_momentum=0.99, ema_overwrite_frequency=None,
                 jit_compile=True, name="Adamax", **kwargs):
        super().__init__(name, learning_rate, clipnorm=clipnorm, clipvalue=clipvalue,
                         global_clipnorm=global_clipnorm, weight_decay=weight_decay,
                         use_ema=use_ema, ema_momentum=ema_momentum,
                         ema_overwrite_frequency=ema_overwrite_frequency,
                         jit_compile=jit_compile, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon


class Nadam(_BetasEpsilon):
    """Nadam (tf-keras 2.21): Adam with Nesterov momentum and the momentum schedule
    ``u_t = b1 (1 - 0.5 * 0.96^t)``; the running product of the u_t is one float32 scalar
    variable (not in ``variables``, as tf-keras), advanced once per applied step in C."""

    _KIND = _core.OPTIM_NADAM
    _SLOT_NAMES = ("m", "v")
    _SCHEDULE_DECAY = 1.0

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 use_ema=False, ema_momentum=0.99, ema_overwrite_frequency=None,
                 jit_compile=True, name="Nadam", **kwargs):
        super().__init__(name, learning_rate, clipnorm=clipnorm, clipvalue=clipvalue,
                         global_clipnorm=global_clipnorm, weight_decay=weight_decay,
                         use_ema=use_ema, ema_momentum=ema_momentum,
                         ema_overwrite_frequency=ema_overwrite_frequency,
                         jit_compile=jit_compile, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon

    def _extra_hparams(self):
        return (0.0, 0.0, 0.0, 0.0, 0.0, float(self._SCHEDULE_DECAY), False)

    def _state_variable(self):
        var = self.__dict__.get("_u_product")
        if var is None:
            with _ops.device("/CPU:0"):
                var = Variable(1.0, dtype=float32, trainable=False, name=self._u_product_name())
            object.__setattr__(self, "_u_product", var)
        return var

    def _u_product_name(self):
        return "%s/Variable" % self._name


class AdamW(_PlainHypers):
    """AdamW (tf-keras 2.21): Adam (optionally AMSGrad) with decoupled weight decay
    ``w -= w * weight_decay * lr`` before each update."""

    _KIND = _core.OPTIM_ADAM
    _SLOT_GROUPS = (("m", "v"), ("vhat",))

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-7, amsgrad=False, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, use_ema=False, ema_momentum=0.99,
                 ema_overwrite_frequency=None, jit_compile=True, name="AdamW", **kwargs):
        if weight_decay is None:
            raise ValueError("Missing value of `weight_decay` which is required and must be a "
                             "float value.")
        super().__init__(name, learning_rate, clipnorm=clipnorm, clipvalue=clipvalue,
                         global_clipnorm=global_clipnorm, weight_decay=weight_decay,
                         use_ema=use_ema, ema_momentum=ema_momentum,
                         ema_overwrite_frequency=ema_overwrite_frequency,
                         jit_compile=jit_compile, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.amsgrad = bool(amsgrad)

    def _slot_names_used(self):
        return ("m", "v", "vhat") if self.amsgrad else ("m", "v")

    def _hparams(self):
        return self._base_hparams(epsilon=_f(self.epsilon), beta_1=_f(self.beta_1),
                                  beta_2=_f(self.beta_2), amsgrad=self.amsgrad)

    def get_config(self):
        config = self._config_with()
        # tf-keras' AdamW lists weight_decay again after learning_rate (same key: its place
        # in the dict stays the base class's)
        config.update(weight_decay=self.weight_decay, beta_1=self.beta_1, beta_2=self.beta_2,
                      epsilon=self.epsilon, amsgrad=self.amsgrad)
        return config


class Ftrl(_PlainHypers):
    """FTRL-proximal (tf-keras 2.21's update, l2 shrinkage and beta included); the
    accumulator starts at ``initial_accumulator_value``."""

    _KIND = _core.OPTIM_FTRL
    _SLOT_NAMES = ("accumulator", "linear")
    _SLOT_INIT = {"accumulator": "initial_accumulator_value"}

    def __init__(self, learning_rate=0.001, learning_rate_power=-0.5,
                 initial_accumulator_value=0.1, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, l2_shrinkage_regularization_strength=0.0,
                 beta=0.0, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, use_ema=False, ema_momentum=0.99,
                 ema_overwrite_frequency=None, jit_compile=True, name="Ftrl", **kwargs):
        super().__init__(name, learning_rate, clipnorm=clipnorm, clipvalue=clipvalue,
                         global_clipnorm=global_clipnorm, weight_decay=weight_decay,
                         use_ema=use_ema, ema_momentum=ema_momentum,
                         ema_overwrite_frequency=ema_overwrite_frequency,
                         jit_compile=jit_compile, **kwargs)
        _check_ftrl(initial_accumulator_value, learning_rate_power, l1_regularization_strength,
                    l2_regularization_strength, l2_shrinkage_regularization_strength)
        self.learning_rate_power = learning_rate_power
        self.initial_accumulator_value = initial_accumulator_value
        self.l1_regularization_strength = l1_regularization_strength
        self.l2_regularization_strength = l2_regularization_strength
        self.l2_shrinkage_regularization_strength = l2_shrinkage_regularization_strength
        self.beta = beta

    def _hparams(self):
        return self._base_hparams()

    def _extra_hparams(self):
        return (_f(self.learning_rate_power), _f(self.l1_regularization_strength),
                _f(self.l2_regularization_strength),
                _f(self.l2_shrinkage_regularization_strength), _f(self.beta), 1.0, False)

    def get_config(self):
        return self._config_with(
            learning_rate_power=self.learning_rate_power,
            initial_accumulator_value=self.initial_accumulator_value,
            l1_regularization_strength=self.l1_regularization_strength,
            l2_regularization_strength=self.l2_regularization_strength,
            l2_shrinkage_regularization_strength=self.l2_shrinkage_regularization_strength,
            beta=self.beta)


def _check_ftrl(initial_accumulator_value, learning_rate_power, l1, l2, l2_shrinkage):
    """tf-keras 2.21's argument checks (ValueError, its messages)."""
    if initial_accumulator_value < 0.0:
        raise ValueError("`initial_accumulator_value` needs to be positive or zero. Received: "
                         "initial_accumulator_value=%s." % (initial_accumulator_value,))
    if learning_rate_power > 0.0:
        raise ValueError("`learning_rate_power` needs to be negative or zero. Received: "
                         "learning_rate_power=%s." % (learning_rate_power,))
    if l1 < 0.0:
        raise ValueError("`l1_regularization_strength` needs to be positive or zero. Received: "
                         "l1_regularization_strength=%s." % (l1,))
    if l2 < 0.0:
        raise ValueError("`l2_regularization_strength` needs to be positive or zero. Received: "
                         "l2_regularization_strength=%s." % (l2,))
    if l2_shrinkage < 0.0:
        raise ValueError("`l2_shrinkage_regularization_strength` needs to be positive or zero. "
                         "Received: l2_shrinkage_regularization_strength=%s." % (l2_shrinkage,))


class Lion(_PlainHypers):
    """Lion (tf-keras 2.21): ``w -= lr * sign(b1*m + (1-b1)*g); m = b2*m + (1-b2)*g``."""

    _KIND = _core.OPTIM_LION
    _SLOT_NAMES = ("m",)

    def __init__(self, learning_rate=0.0001, beta_1=0.9, beta_2=0.99, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, use_ema=False,
                 ema_momentum=0.99, ema_overwrite_frequency=None, jit_compile=True,
                 name="Lion", **kwargs):
        super().__init__(name, learning_rate, clipnorm=clipnorm, clipvalue=clipvalue,
                         global_clipnorm=global_clipnorm, weight_decay=weight_decay,
                         use_ema=use_ema, ema_momentum=ema_momentum,
                         ema_overwrite_frequency=ema_overwrite_frequency,
                         jit_compile=jit_compile, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        if beta_1 <= 0 or beta_1 > 1:
            raise ValueError("`beta_1`=%s must be between ]0, 1]. Otherwise, the optimizer "
                             "degenerates to SignSGD." % (beta_1,))

    def _hparams(self):
        return self._base_hparams(beta_1=_f(self.beta_1), beta_2=_f(self.beta_2))

    def get_config(self):
        return self._config_with(beta_1=self.beta_1, beta_2=self.beta_2)
