"""Keras optimizers (``tf.keras.optimizers``): SGD, RMSprop, Adam.

The update itself is one fused C call over every variable (csrc/optim.c and the backend's
optim_update): slots are float32 variables, the rules are TensorFlow's. This module keeps
what Keras keeps in Python: hyperparameters, the learning-rate schedule, slot bookkeeping,
gradient clipping, configs.
"""

import abc
import math
import numbers
import operator
import warnings

import numpy as _np

from mixprec._function import untraced as _untraced
from mixprec import _core, _nest, _ops
from mixprec._dtypes import float32, float64, int64
from mixprec._tape import GradientTape
from mixprec._variable import Variable
from mixprec.keras.optimizers import _ema
from mixprec.keras.optimizers import schedules as _schedules
from mixprec.train import _checkpoint

__all__ = ["Optimizer", "SGD", "RMSprop", "Adam"]


class _VariableList(list):
    """``optimizer.variables``: a list (tf-keras 2.21's optimizers have a ``variables``
    property); calling it returns itself, so OptimizerV2-era code that calls
    ``optimizer.variables()`` keeps working."""

    def __call__(self):
        return self


def _is_number(x):
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _gpu_visible():
    try:
        from mixprec import config as _config

        return bool(_config.list_physical_devices("GPU"))
    except Exception:  # noqa: BLE001 - no device query: no GPU
        return False


def _check_momentum(momentum):
    """TensorFlow's rule: numbers must lie in [0, 1]; a variable, tensor or callable is
    taken as is (and means the momentum slot is used)."""
    if _is_number(momentum):
        if not 0 <= momentum <= 1:
            raise ValueError("`momentum` must be between [0, 1]. Received: momentum=%s"
                             % (momentum,))
        return momentum > 0
    if isinstance(momentum, (Variable, _core.Tensor)) or callable(momentum):
        return True
    raise ValueError("`momentum` must be between [0, 1]. Received: momentum=%s" % (momentum,))


class _APIMeta(abc.ABCMeta):
    """tf-keras 2.21 keeps two optimizer families apart: ``keras.optimizers.legacy.X()`` is
    no ``keras.optimizers.Optimizer`` (nor ``keras.optimizers.X``) and a new one is no
    ``legacy.Optimizer``. mixprec's legacy classes reuse the new ones' code (subclasses),
    so instance checks compare the family (``_IS_LEGACY``, which a LossScaleOptimizer
    takes from its inner optimizer) before the class."""

    def __instancecheck__(cls, inst):
        if bool(getattr(cls, "_IS_LEGACY", False)) != bool(getattr(inst, "_IS_LEGACY", False)):
            return False
        return super().__instancecheck__(inst)

    def __subclasscheck__(cls, sub):
        # a class whose family is per instance (a LossScaleOptimizer's property) is left
        # to the instance check
        flag = getattr(sub, "_IS_LEGACY", False) if isinstance(sub, type) else False
        if isinstance(flag, bool) and bool(getattr(cls, "_IS_LEGACY", False)) != flag:
            return False
        return super().__subclasscheck__(sub)


class _BaseOptimizer(metaclass=abc.ABCMeta):
    """What every mixprec optimizer is (new-style and legacy): internal checks use this;
    ``Optimizer`` below is the public, family-aware class."""


class Optimizer(_BaseOptimizer, metaclass=_APIMeta):
    """Base class of mixprec's Keras optimizers (the OptimizerV2 API the guide uses)."""

    _KIND = None
    _SLOT_NAMES = ()
    _TF_SLOT_NAMES = {}  # slot kind -> tf-keras' name in the slot variables' names
    _SLOT_INIT = {}  # slot kind -> the attribute holding its initial value (default 0)
    _IS_LEGACY = False

    def __init__(self, name, learning_rate=0.001, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, decay=0.0, weight_decay=None, use_ema=False,
                 ema_momentum=0.99, ema_overwrite_frequency=None, jit_compile=True, **kwargs):
        _ema.validate(use_ema, ema_momentum, ema_overwrite_frequency)
        if weight_decay is not None and not _is_number(weight_decay):
            raise ValueError("`weight_decay` must be a number, got %r" % (weight_decay,))
        allowed = {"lr", "epsilon"}
        unknown = set(kwargs) - allowed
        if unknown:
            raise TypeError("Unexpected keyword argument passed to optimizer: %s"
                            % ", ".join(sorted(unknown)))
        if "lr" in kwargs:
            learning_rate = kwargs.pop("lr")
        if clipnorm is not None and global_clipnorm is not None:
            raise ValueError("Cannot accept both `clipnorm` and `global_clipnorm`. Received: "
                             "`clipnorm`=%s, `global_clipnorm`=%s." % (clipnorm, global_clipnorm))
        for arg, val in (("clipnorm", clipnorm), ("clipvalue", clipvalue),
                         ("global_clipnorm", global_clipnorm)):
            if val is not None and (not _is_number(val) or val < 0):
                raise ValueError("`%s` must be a non-negative number, got %r" % (arg, val))
        if not _is_number(decay) or decay < 0:
            raise ValueError("decay cannot be less than 0. Received: decay=%s." % (decay,))
        self._name = name
        self.weight_decay = weight_decay
        self.use_ema = bool(use_ema)
        self.ema_momentum = ema_momentum
        self.ema_overwrite_frequency = ema_overwrite_frequency
        # tf-keras 2.21 keeps jit_compile only where a GPU is visible (its XLA update step)
        self.jit_compile = bool(jit_compile) and _gpu_visible()
        self.clipnorm = clipnorm
        self.clipvalue = clipvalue
        self.global_clipnorm = global_clipnorm
        self._initial_decay = float(decay)
        self._iterations = Variable(0, dtype=int64, trainable=False, name=self._iter_name(name))
        self._hyper = {}
        self._set_hyper("learning_rate", learning_rate)
        self._slots = {}   # variable id -> list of slot Variables, in C order
        self._pending_slots = {}  # (variable id, slot name) -> saved value (load_weights)
        self._vars = []    # variables seen, in order
        self._is_wrapped = False

    @staticmethod
    def _iter_name(name):
        return "iteration"

    def _slot_var_name(self, slot, var_name):
        """tf-keras' names: '<optimizer>/<slot>/<variable>', e.g. 'Adam/m/dense/kernel';
        inside a LossScaleOptimizer(V3) without the optimizer's scope: 'm/dense/kernel'."""
        name = "%s/%s" % (self._TF_SLOT_NAMES.get(slot, slot), var_name)
        if not self.__dict__.get("_unscoped_slots", False):
            name = "%s/%s" % (self._name, name)
        return name

    # ---------------------------------------------------------------- hyperparameters

    def _set_hyper(self, name, value):
        if name == "learning_rate" and isinstance(value, _schedules.LearningRateSchedule):
            self._hyper[name] = value
            return
        if isinstance(value, Variable) and (not isinstance(self._hyper.get(name), Variable)
                                            or not self._vars):
            # TensorFlow uses the user's variable itself until the first step has created
            # the hyperparameter variables; afterwards it copies the value into them
            if value.shape.rank != 0:
                raise ValueError("The hyperparameter %s must be a scalar, got a variable of "
                                 "shape %s" % (name, value.shape))
            self._hyper[name] = value
            return
        if callable(value) and not isinstance(value, (Variable, _core.Tensor)):
            if name == "learning_rate":
                # tf-keras 2.21 makes its learning-rate variable from the callable: called
                # once, here
                value = value()
            else:
                self._hyper[name] = value
                return
        value = float(value._peek() if isinstance(value, Variable) else value)
        self.__dict__.setdefault("_hyper_exact", {})[name] = value
        if name in self._hyper and isinstance(self._hyper[name], Variable):
            self._hyper[name].assign(value)
        else:
            # Hyperparameters are read on the host every step (_hparams): they live on the
            # CPU even when a GPU is the default device, so reading them never waits for it.
            with _ops.device("/CPU:0"):
                self._hyper[name] = Variable(value, dtype=float32, trainable=False, name=name)

    def _get_hyper(self, name):
        return self._hyper[name]

    def _hyper_value(self, name):
        """The hyperparameter's float value for this step."""
        v = self._hyper[name]
        if isinstance(v, _schedules.LearningRateSchedule):
            return float(v(self.iterations))
        if isinstance(v, Variable):
            value = float(v._peek())
            # NOTE: tf-keras 2.21 keeps beta_1, beta_2, rho and momentum as Python floats
            # and forms constants such as 1 - beta_2 in double: the number the user gave
            # is used while the float32 variable still holds its rounding (only the
            # learning rate is a float32 variable in tf-keras).
            exact = self.__dict__.get("_hyper_exact", {}).get(name)
            if (name != "learning_rate" and exact is not None
                    and float(_np.float32(exact)) == value):
                return exact
            return value
        if callable(v):
            return float(v())
        return float(v)

    def __getattr__(self, name):
        # hyperparameters read as attributes (opt.learning_rate, opt.beta_1, ...)
        hyper = self.__dict__.get("_hyper")
        if hyper is not None:
            if name == "lr":
                name = "learning_rate"
            if name in hyper:
                value = hyper[name]
                if name == "learning_rate" and isinstance(value,
                                                          _schedules.LearningRateSchedule):
                    return self._current_learning_rate()
                return value
        raise AttributeError("'%s' object has no attribute '%s'" % (type(self).__name__, name))

    def __setattr__(self, name, value):
        hyper = self.__dict__.get("_hyper")
        if hyper is not None:
            if name == "lr":
                name = "learning_rate"
            if name in hyper:
                if (name == "learning_rate"
                        and isinstance(hyper[name], _schedules.LearningRateSchedule)
                        and not isinstance(value, _schedules.LearningRateSchedule)):
                    raise TypeError(
                        "This optimizer was created with a `LearningRateSchedule` object as its "
                        "`learning_rate` constructor argument, hence its learning rate is not "
                        "settable. If you need the learning rate to be settable, you should "
                        "instantiate the optimizer with a float `learning_rate` argument.")
                self._set_hyper(name, value)
                return
        object.__setattr__(self, name, value)

    def _current_learning_rate(self):
        """tf-keras 2.21's ``learning_rate`` under a schedule: a float32 variable named
        'current_learning_rate' holding the rate of the last step (the schedule at
        ``iterations - 1``; at 0 before the first step)."""
        schedule = self._hyper["learning_rate"]
        step = max(int(self._iterations._peek()) - 1, 0)
        value = float(schedule(step))
        var = self.__dict__.get("_current_lr_var")
        if var is None:
            with _ops.device("/CPU:0"):
                var = Variable(value, dtype=float32, trainable=False,
                               name="current_learning_rate")
            object.__setattr__(self, "_current_lr_var", var)
        else:
            var.assign(value)
        return var

    @property
    def iterations(self):
        """The number of training steps run (an int64 variable)."""
        return self._iterations

    @iterations.setter
    def iterations(self, value):
        if isinstance(value, Variable):
            # the step count lives in the C core as one int64 (on the variables' device)
            if value.dtype != int64 or value.shape.rank != 0:
                raise TypeError(
                    "An optimizer's iterations must be an int64 scalar variable, got %s with "
                    "shape %s. hint: tf.Variable(0, dtype=tf.int64)" % (value.dtype.name,
                                                                       value.shape))
            self._iterations = value
        else:
            value = operator.index(value)
            if not -2**63 <= value < 2**63:
                raise ValueError("iterations %d does not fit in int64" % value)
            self._iterations.assign(value)

    @property
    def name(self):
        return self._name

    def _current_lr(self):
        lr = self._hyper_value("learning_rate")
        if self._initial_decay > 0:
            lr = lr / (1.0 + self._initial_decay * int(self._iterations._peek()))
        return lr

    def _hparams(self):
        """(lr, momentum, nesterov, rho, epsilon, centered, beta_1, beta_2, amsgrad,
        use_momentum)"""
        raise NotImplementedError

    def _extra_hparams(self):
        """The rule's (lr_power, l1, l2, l2_shrinkage, beta, schedule_decay, eps_outside)."""
        return (0.0, 0.0, 0.0, 0.0, 0.0, 1.0, False)

    def _all_hparams(self):
        """The C core's hyperparameter tuple: the rule's, then the weight decay's."""
        wd = self.weight_decay
        return tuple(self._hparams()) + (wd is not None, float(wd or 0.0)) + \
            tuple(self._extra_hparams())

    def _state_variable(self):
        """The rule's per-optimizer scalar state variable (Nadam's u_product), or None."""
        return None

    # ---------------------------------------------------------------- weight decay

    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Excludes variables (or variables whose name matches one of the regular
        expressions ``var_names``) from weight decay; only before the first step."""
        if self._vars:
            raise ValueError("`exclude_from_weight_decay()` can only be configued before the "
                             "optimizer is built.")
        object.__setattr__(self, "_exclude_ids", {v._id for v in (var_list or [])})
        object.__setattr__(self, "_exclude_names", list(var_names or []))

    def _use_weight_decay(self, variable):
        import re

        if variable._id in self.__dict__.get("_exclude_ids", ()):
            return False
        return not any(re.search(n, variable.name) is not None
                       for n in self.__dict__.get("_exclude_names", ()))

    # ---------------------------------------------------------------- slots

    def _slots_for(self, var):
        slots = self._slots.get(var._id)
        if slots is None:
            names = self._slot_names_used()
            shape = list(var.shape)
            # float64 variables get float64 slots (TensorFlow's rule); the others float32
            # (csrc: mp_optim_slot_dtype)
            dtype = float64 if var.true_dtype == float64 else float32
            slots = []
            for n in names:
                saved = self._pending_slots.pop((var._id, n), None)
                fill = float(getattr(self, self._SLOT_INIT[n])) if n in self._SLOT_INIT else 0
                init = _core.fill(shape, fill, dtype) if saved is None else \
                    _core.convert_to_tensor(saved, dtype)
                name = self._slot_var_name(n, var.name.split(":")[0])
                slots.append(Variable(init, trainable=False, name=name))
            self._slots[var._id] = slots
            self._vars.append(var)
            if self.use_ema:
                _ema.averages_for(self, [var])
        return slots

    def _slot_names_used(self):
        return self._SLOT_NAMES

    def build(self, var_list):
        """Creates the slots of ``var_list`` (in that order) before the first step."""
        created = len(self._vars)
        for v in _nest.flatten(var_list):
            if v.trainable:
                self._slots_for(v)
        if len(self._vars) != created:
            self._state_variable()  # the rule's own state (Nadam) with the slots, as tf-keras
            _checkpoint.notify_created()

    def get_slot_names(self):
        return list(self._slot_names_used())

    def get_slot(self, var, slot_name):
        names = self._slot_names_used()
        if slot_name not in names:
            raise KeyError("Unknown slot %r; this optimizer has %s" % (slot_name, list(names)))
        slots = self._slots.get(var._id)
        if slots is None:
            raise KeyError("No slot %r for variable %s (the optimizer has not updated it yet)"
                           % (slot_name, var.name))
        return slots[list(names).index(slot_name)]

    def add_slot(self, var, slot_name, initializer="zeros", shape=None):
        return self.get_slot(var, slot_name) if var._id in self._slots else \
            self._slots_for(var)[list(self._slot_names_used()).index(slot_name)]

    # ---------------------------------------------------------------- applying

    def _clip(self, grads):
        if self.clipvalue is not None:
            c = float(self.clipvalue)
            grads = [None if g is None else _ops.clip_by_value(g, -c, c) for g in grads]
        if self.clipnorm is not None:
            c = float(self.clipnorm)
            out = []
            for g in grads:
                if g is None:
                    out.append(None)
                    continue
                norm = float(_core.sqrt(_core.reduce_sum(_core.square(_core.cast(g, float32)))))
                out.append(g * (c / norm) if norm > c else g)
            grads = out
        if self.global_clipnorm is not None:
            c = float(self.global_clipnorm)
            total = 0.0
            for g in grads:
                if g is not None:
                    total += float(_core.reduce_sum(_core.square(_core.cast(g, float32))))
            norm = math.sqrt(total)
            if norm > c:
                grads = [None if g is None else g * (c / norm) for g in grads]
        return grads

    def _clips(self):
        return (self.clipvalue is not None or self.clipnorm is not None
                or self.global_clipnorm is not None)

    def _prepare(self, grads_and_vars, clip=True):
        """Validated (gradient, variable) lists, None gradients dropped; clipped unless
        ``clip`` is False (a LossScaleOptimizer clips after its finite check)."""
        pairs = list(grads_and_vars)
        for pair in pairs:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError("apply_gradients expects (gradient, variable) pairs, got %r"
                                 % (pair,))
        filtered = [(g, v) for g, v in pairs if g is not None]
        missing = [v for g, v in pairs if g is None]
        if not filtered:
            raise ValueError("No gradients provided for any variable: %s."
                             % [getattr(v, "name", repr(v)) for _, v in pairs])
        if missing:
            names = [getattr(v, "name", repr(v)) for v in missing]
            warnings.warn("Gradients do not exist for variables %s when minimizing the loss. "
                          "If you're using `model.compile()`, did you forget to provide a "
                          "`loss` argument?" % names)
        grads, variables = [], []
        seen = set()
        for g, v in filtered:
            if not isinstance(v, Variable):
                raise TypeError("apply_gradients: %r is not a mixprec.Variable" % (v,))
            if v._id in seen:
                raise ValueError("apply_gradients: variable %s appears twice" % v.name)
            seen.add(v._id)
            if not v.trainable:
                raise ValueError("apply_gradients: variable %s is not trainable" % v.name)
            g = _core.convert_to_tensor(g)
            if list(g.shape) != list(v.shape):
                raise ValueError("apply_gradients: the gradient of %s has shape %s, the variable %s"
                                 % (v.name, tuple(g.shape), tuple(v.shape)))
            if g.dtype != v.true_dtype:
                raise _core.InvalidDTypeError(
                    "apply_gradients: the gradient of %s is %s but the variable is %s. hint: "
                    "gradients must have their variable's dtype" % (
                        v.name, g.dtype.name, v.true_dtype.name))
            grads.append(g)
            variables.append(v)
        return (self._clip(grads) if clip else grads), variables

    def _apply(self, grads, variables, loss_scale=None, check_finite=False, grad_scale=1.0,
               unscale=False):
        """The fused C step (issued to the variables' device without waiting for it).
        ``unscale``: the gradients are also divided by ``loss_scale``'s current value, read
        on the device. Returns whether the update was applied: True, or a bool scalar tensor
        when the finite check decided it on the device."""
        slots = []
        created = len(self._vars)
        for v in variables:
            slots.extend(self._slots_for(v))
        if len(self._vars) != created:
            _checkpoint.notify_created()  # a checkpoint restored earlier may hold them
        with _untraced():
            hp = self._all_hparams()
        refresh = None
        if _core.graph_recording() is not None:
            # a traced step re-reads its hyperparameters (schedules, assigned rates) at
            # every replay, from the host, as this eager call just did
            def refresh(gs=float(grad_scale)):
                return self._all_hparams(), gs
        no_decay = None
        if self.weight_decay is not None:
            no_decay = [not self._use_weight_decay(v) for v in variables]
        applied = _core.optimizer_apply(self._KIND, hp, list(variables), list(grads), slots,
                                        self._iterations, loss_scale, bool(check_finite),
                                        float(grad_scale), bool(unscale), refresh,
                                        self._state_variable(), no_decay)
        for v in variables:  # as tf-keras: a variable's constraint projects it after its update
            constraint = v.constraint
            if constraint is not None:
                v.assign(constraint(v))
        if self.use_ema:
            _ema.update(self, variables, applied)
        return applied

    def finalize_variable_values(self, var_list):
        """With ``use_ema``, the variables take their moving averages (Model.fit calls it at
        the end of training, as tf-keras); otherwise nothing."""
        if self.use_ema:
            _ema.overwrite(self, _nest.flatten(var_list))

    def apply_gradients(self, grads_and_vars, name=None, experimental_aggregate_gradients=True):
        """Applies (gradient, variable) pairs; returns the iterations variable. In a replica
        of a tf.distribute strategy the gradients are summed across replicas first."""
        from mixprec.distribute import _sync

        return _sync.apply_in_replica(grads_and_vars, self._apply_gradients_local,
                                      experimental_aggregate_gradients,
                                      state=self._mirrored_state)

    def _mirrored_state(self):
        """The step's state variables (a strategy over GPUs keeps a copy of each per GPU):
        iterations and the rule's own state (Nadam's u_product)."""
        state = self._state_variable()
        return [self._iterations] + ([state] if state is not None else [])

    def _apply_gradients_local(self, grads_and_vars):
        grads, variables = self._prepare(grads_and_vars)
        self._apply(grads, variables)
        return self._iterations

    def _compute_gradients(self, loss, var_list, grad_loss=None, tape=None):
        if not callable(loss) and tape is None:
            raise ValueError("`tape` is required when a `Tensor` loss is passed.")
        tape = tape if tape is not None else GradientTape()
        if callable(loss):
            with tape:
                if not callable(var_list):
                    tape.watch(var_list)
                loss = loss()
        if callable(var_list):
            var_list = var_list()
        var_list = _nest.flatten(var_list)
        grads = tape.gradient(loss, var_list, grad_loss)
        return list(zip(grads, var_list))

    def minimize(self, loss, var_list, grad_loss=None, name=None, tape=None):
        """Computes gradients of ``loss`` (a tensor with ``tape``, or a callable) and applies
        them; returns None (tf-keras 2.21)."""
        self.apply_gradients(self._compute_gradients(loss, var_list, grad_loss, tape))

    def compute_gradients(self, loss, var_list, tape=None):
        """(gradient, variable) pairs of ``loss`` (a tensor with ``tape``, or a callable)."""
        return self._compute_gradients(loss, var_list, None, tape)

    # ---------------------------------------------------------------- state

    # slots created in one build loop over the variables, loop after loop (tf-keras' build
    # order: Adam's vhat come after every m and v); None: one loop, all of a variable's slots
    _SLOT_GROUPS = None

    @property
    def variables(self):
        """iterations, then every slot variable (TensorFlow's order); a list."""
        out = _VariableList([self._iterations])
        out.extend(self.__dict__.get("_ema_order", []))  # tf-keras builds them first
        out.extend(self._extra_variables())
        names = list(self._slot_names_used())
        groups = self._SLOT_GROUPS or (tuple(names),)
        for group in groups:
            for v in self._vars:
                slots = self._slots[v._id]
                out.extend(slots[names.index(n)] for n in group if n in names)
        return out

    def _extra_variables(self):
        """Non-slot variables listed after iterations (the legacy Nadam's momentum_cache)."""
        return []

    @property
    def weights(self):
        return list(self.variables)

    def get_weights(self):
        return [v.numpy() for v in self.variables]

    def set_weights(self, weights):
        params = self.variables
        if len(params) != len(weights):
            raise ValueError(
                "You called `set_weights(weights)` on optimizer %s with a weight list of length "
                "%d, but the optimizer was expecting %d weights." % (self._name, len(weights),
                                                                     len(params)))
        for p, w in zip(params, weights):
            p.assign(w)

    def _serialize_hyper(self, name):
        v = self._hyper[name]
        if isinstance(v, _schedules.LearningRateSchedule):
            return _schedules.serialize(v)
        exact = self.__dict__.get("_hyper_exact", {})
        if name != "learning_rate" and name in exact and isinstance(v, Variable) and \
                float(v._peek()) == float(_np.float32(exact[name])):
            # tf-keras keeps beta_1, beta_2, rho and momentum as the user's Python floats
            # (its config says 0.9, not 0.8999999761581421): a reloaded optimizer then
            # forms 1 - beta_1 from the same number (only the learning rate is a variable)
            return exact[name]
        if isinstance(v, Variable):
            # tf-keras' get_config holds the variable's numpy value (np.float32(0.1));
            # serialize() turns it into a Python float
            return _np.float32(v._peek()) if name == "learning_rate" else float(v._peek())
        return v

    _EMA_OVERWRITE_FREQUENCY = None  # tf-keras' default per optimizer (RMSprop: 100)

    def get_config(self):
        # tf-keras 2.21's keys, in its order (weight decay, EMA and XLA are not implemented
        # by mixprec: their defaults; from_config refuses other values)
        config = {"name": self._name, "weight_decay": self.weight_decay,
                  "clipnorm": self.clipnorm,
                  "global_clipnorm": self.global_clipnorm, "clipvalue": self.clipvalue,
                  "use_ema": self.use_ema, "ema_momentum": self.ema_momentum,
                  "ema_overwrite_frequency": (self._EMA_OVERWRITE_FREQUENCY
                                              if self.ema_overwrite_frequency is None
                                              else self.ema_overwrite_frequency),
                  "jit_compile": self.jit_compile, "is_legacy_optimizer": False}
        if self._initial_decay:
            config["decay"] = self._initial_decay
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        # tf-keras 2.21's optimizer configs (its 'new' optimizers, the .keras file) carry
        # EMA arguments mixprec does not implement: accepted at their defaults, refused
        # otherwise
        config.pop("is_legacy_optimizer", None)
        if not config.get("use_ema"):
            # the EMA arguments only matter with use_ema (a default frequency of 100 in an
            # RMSprop config must not become an explicit one)
            config.pop("ema_momentum", None)
            config.pop("ema_overwrite_frequency", None)
        if "lr" in config:
            config["learning_rate"] = config.pop("lr")
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = _schedules.deserialize(config["learning_rate"])
        return cls(**config)

    def __repr__(self):
        return "<mixprec.keras.optimizers.%s name=%r>" % (type(self).__name__, self._name)


class SGD(Optimizer):
    """Gradient descent with optional (Nesterov) momentum: ``v = m*v - lr*g; w += v``."""

    _KIND = _core.OPTIM_SGD

    _TF_SLOT_NAMES = {"momentum": "m"}

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD", **kwargs):
        super().__init__(name, learning_rate, **kwargs)
        self._momentum = _check_momentum(momentum)
        self._set_hyper("momentum", momentum)
        self.nesterov = bool(nesterov)

    def _slot_names_used(self):
        return ("momentum",) if self._momentum else ()

    def _hparams(self):
        return (self._current_lr(), self._hyper_value("momentum"), self.nesterov, 0.0, 0.0,
                False, 0.0, 0.0, False, self._momentum)

    def get_config(self):
        config = super().get_config()
        config.update(learning_rate=self._serialize_hyper("learning_rate"),
                      momentum=self._serialize_hyper("momentum"), nesterov=self.nesterov)
        return config


class RMSprop(Optimizer):
    """RMSprop as Keras: ``ms = rho*ms + (1-rho)*g^2; w -= lr*g/(sqrt(ms)+eps)`` (with
    momentum: ``mom = m*mom + lr*g/sqrt(ms+eps); w -= mom``; centered subtracts mg^2)."""

    _KIND = _core.OPTIM_RMSPROP
    _EMA_OVERWRITE_FREQUENCY = 100
    _SLOT_GROUPS = (("rms",), ("momentum",), ("mg",))  # tf-keras builds one kind per loop
    _TF_SLOT_NAMES = {"rms": "velocity", "mg": "average_gradient"}

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False,
                 name="RMSprop", **kwargs):
        super().__init__(name, learning_rate, **kwargs)
        self._momentum = _check_momentum(momentum)
        self._set_hyper("rho", rho)
        self._set_hyper("momentum", momentum)
        self.epsilon = 1e-7 if epsilon is None else float(epsilon)
        self.centered = bool(centered)

    def _slot_names_used(self):
        names = ["rms"]
        if self._momentum:
            names.append("momentum")
        if self.centered:
            names.append("mg")
        return tuple(names)

    def _hparams(self):
        return (self._current_lr(), self._hyper_value("momentum"), False, self._hyper_value("rho"),
                self.epsilon, self.centered, 0.0, 0.0, False, self._momentum)

    def get_config(self):
        config = super().get_config()
        config.update(learning_rate=self._serialize_hyper("learning_rate"),
                      rho=self._serialize_hyper("rho"), momentum=self._serialize_hyper("momentum"),
                      epsilon=self.epsilon, centered=self.centered)
        return config


class Adam(Optimizer):
    """Adam as Keras: bias-corrected step ``lr*sqrt(1-b2^t)/(1-b1^t)``, epsilon outside
    the root, optional AMSGrad."""

    _KIND = _core.OPTIM_ADAM
    _SLOT_GROUPS = (("m", "v"), ("vhat",))  # tf-keras builds vhat after every m and v

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False,
                 name="Adam", **kwargs):
        super().__init__(name, learning_rate, **kwargs)
        self._set_hyper("beta_1", beta_1)
        self._set_hyper("beta_2", beta_2)
        self.epsilon = 1e-7 if epsilon is None else float(epsilon)
        self.amsgrad = bool(amsgrad)

    def _slot_names_used(self):
        return ("m", "v", "vhat") if self.amsgrad else ("m", "v")

    def _hparams(self):
        return (self._current_lr(), 0.0, False, 0.0, self.epsilon, False,
                self._hyper_value("beta_1"), self._hyper_value("beta_2"), self.amsgrad, False)

    def get_config(self):
        config = super().get_config()
        config.update(learning_rate=self._serialize_hyper("learning_rate"),
                      beta_1=self._serialize_hyper("beta_1"), beta_2=self._serialize_hyper("beta_2"),
                      epsilon=self.epsilon, amsgrad=self.amsgrad)
        return config
