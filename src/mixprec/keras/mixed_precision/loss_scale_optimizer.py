"""LossScaleOptimizer, both API generations.

- ``LossScaleOptimizer(inner_optimizer, dynamic=True, initial_scale=None,
  dynamic_growth_steps=None)`` — tf-keras (TF 2.4+), ``tf.keras.mixed_precision``.
- ``LossScaleOptimizerV1(optimizer, loss_scale)`` — TF 2.1–2.3, exported as
  ``tf.keras.mixed_precision.experimental.LossScaleOptimizer``.

Both hold a loss-scale object whose state is C (mixprec._core.LossScale) and apply through
one fused C call: non-finite check, update or skip, loss-scale update and the iteration
count together (csrc/optim.c). Skipped steps still count in ``iterations`` (TF >= 2.3).

NOTE: on a GPU the scale lives in device memory and a step must not read it back: scaling
multiplies by the scale *tensor*, unscaling divides on the device. Only converting the scale
to a Python number (``float(opt.loss_scale)``, ``repr``) waits for the GPU.
"""

from mixprec import _core, _logging, _nest, _ops
from mixprec._dtypes import float32, float64
from mixprec.keras.optimizers import legacy as _legacy
from mixprec.keras.optimizers.optimizer import Optimizer, _BaseOptimizer
from mixprec.mixed_precision.experimental import loss_scale as _ls

_SCALING_EXAMPLE = """
    with tf.GradientTape() as tape:
      loss = loss_fn()
      scaled_loss = opt.get_scaled_loss(loss)
    scaled_grads = tape.gradient(scaled_loss, vars)
    grads = opt.get_unscaled_gradients(scaled_grads)
    opt.apply_gradients([(grads, var)])"""

__all__ = ["LossScaleOptimizer", "LossScaleOptimizerV3", "LossScaleOptimizerV1"]


def _same_device(t, like):
    """t, copied explicitly to like's device if it lives elsewhere (the loss-scale state
    moves to the variables' device at the first step; until then it may be elsewhere)."""
    if t.device == like.device:
        return t
    with _ops.device(like.device):
        return _core.identity(t)


class _LossScaleOptimizerBase:
    """What both generations share: scaling, unscaling, the fused apply, delegation."""

    def _wrap(self, inner, loss_scale):
        if isinstance(inner, _LossScaleOptimizerBase):
            raise TypeError("LossScaleOptimizer cannot wrap another LossScaleOptimizer, but got: "
                            "%s" % (inner,))
        if getattr(inner, "_is_wrapped", False):
            raise ValueError('"inner_optimizer" is already wrapped by a LossScaleOptimizer. An '
                             "optimizer can only be wrapped by a single LossScaleOptimizer")
        object.__setattr__(self, "_optimizer", inner)
        object.__setattr__(self, "_loss_scale_obj", loss_scale)
        object.__setattr__(self, "_loss_has_been_scaled", False)
        object.__setattr__(self, "_gradients_have_been_unscaled", False)
        object.__setattr__(self, "_last_applied", True)
        inner._is_wrapped = True

    # ---------------------------------------------------------------- scaling

    def _scale_value(self):
        """The scale as a Python float (waits for a GPU: not for the training step)."""
        return self._loss_scale_obj._current()

    def _scale_tensor(self):
        """The current scale, a float32 scalar tensor where the state lives (no wait)."""
        from mixprec.distribute import _sync

        _sync.mirror_state(self._mirrored_state)  # over GPUs: the replica's copy of the scale
        return self._loss_scale_obj._scale_tensor()

    def get_scaled_loss(self, loss):
        """``loss * loss_scale`` (the scale cast to the loss's dtype); a callable gives a
        callable."""
        object.__setattr__(self, "_loss_has_been_scaled", True)
        if callable(loss):
            def scaled():
                return self._scale(loss())
            return scaled
        return self._scale(loss)

    def _scale(self, loss):
        loss = _core.convert_to_tensor(loss)
        return loss * _core.cast(_same_device(self._scale_tensor(), loss), loss.dtype)

    def get_unscaled_gradients(self, grads):
        """Each gradient times ``1 / loss_scale`` in its own dtype; None stays None."""
        object.__setattr__(self, "_gradients_have_been_unscaled", True)
        inv_t = _core.reciprocal(self._scale_tensor())  # float32, correctly rounded as 1.0 / s
        out = []
        for g in grads:
            if g is None:
                out.append(None)
            else:
                g = _core.convert_to_tensor(g)
                out.append(g * _core.cast(_same_device(inv_t, g), g.dtype))
        return out

    # ---------------------------------------------------------------- applying

    def _warn_if_unscaled(self):
        # tf-keras logs these (WARNING on its logger), it does not raise a Python warning
        scaled, unscaled = self._loss_has_been_scaled, self._gradients_have_been_unscaled
        if scaled and unscaled:
            return
        if not scaled and not unscaled:
            head = ("You forgot to call LossScaleOptimizer.get_scaled_loss() and "
                    "LossScaleOptimizer.get_unscaled_gradients() before calling "
                    "LossScaleOptimizer.apply_gradients(). This will likely result in worse "
                    "model quality, so please call them in the correct places! For example:")
        elif not scaled:
            head = ("You forgot to call LossScaleOptimizer.get_scaled_loss() before calling "
                    "LossScaleOptimizer.apply_gradients() (you did call "
                    "get_unscaled_gradients() however). This will likely result in worse model "
                    "quality, so please call get_scaled_loss() in the correct place! For "
                    "example:")
        else:
            head = ("You forgot to call LossScaleOptimizer.get_unscaled_gradients() before "
                    "calling LossScaleOptimizer.apply_gradients() (you did call "
                    "get_scaled_loss() however). This will likely result in worse model "
                    "quality, so please call get_unscaled_gradients() in the correct place! "
                    "For example:")
        _logging.get_logger().warning(
            head + _SCALING_EXAMPLE + "\nFor more information, see https://www.tensorflow.org/"
            "api_docs/python/tf/tf_keras/mixed_precision/LossScaleOptimizer")

    def apply_gradients(self, grads_and_vars, name=None, experimental_aggregate_gradients=True):
        """Applies unscaled gradients if they are all finite, otherwise skips the step; in
        both cases updates the loss scale and counts the iteration (one C call)."""
        self._warn_if_unscaled()
        return self._apply_scaled(grads_and_vars, unscale=False)

    def _apply_scaled(self, grads_and_vars, unscale):
        """One fused step; ``unscale``: the gradients are still scaled (divided by the
        scale on the device, inside the update). In a replica of a tf.distribute strategy
        the gradients are summed across replicas *before* the finite check (tf-keras'
        order), so every replica takes the same skip/apply decision and the loss-scale
        state, updated once, stays the same everywhere."""
        from mixprec.distribute import _sync

        return _sync.apply_in_replica(
            grads_and_vars, lambda pairs: self._apply_scaled_local(pairs, unscale),
            state=self._mirrored_state)

    def _mirrored_state(self):
        """The step's state variables (a strategy over GPUs keeps a copy of each per GPU)."""
        out = self._optimizer._mirrored_state()
        state = getattr(self._loss_scale_obj, "_state", None)
        if state is not None and hasattr(state, "variables"):
            out.extend(state.variables())
        return out

    def _apply_scaled_local(self, grads_and_vars, unscale):
        inner = self._optimizer
        pairs = [(g, v) for g, v in grads_and_vars]
        grads, variables = inner._prepare(pairs, clip=False)
        check = self._dynamic_state()
        state = self._loss_scale_obj._state
        # NOTE: as tf-keras, the inner optimizer clips *unscaled* gradients and only after
        # the finite check (an inf gradient is skipped, not clipped to a finite value); a
        # step that will be skipped is left to the fused check unclipped. Clipping needs the
        # finite answer and the scale on the host; without clipping nothing waits.
        if inner._clips() and (not check or _core.all_finite(grads)):
            if unscale:
                factor = _core.constant(1.0 / state.value(), float32)
                grads = [_core.cast(_core.cast(g, float32) * factor, g.dtype)
                         if g.dtype != float64 else g * (1.0 / state.value()) for g in grads]
                unscale = False
            grads = inner._clip(grads)
        applied = inner._apply(grads, variables, loss_scale=state, check_finite=check,
                               unscale=unscale)
        # True, or a bool scalar on the device (read only by whoever asks: Model.fit's History)
        object.__setattr__(self, "_last_applied", applied)
        return inner.iterations

    def _dynamic_state(self):
        return isinstance(self._loss_scale_obj, _ls.DynamicLossScale)

    def minimize(self, loss, var_list, grad_loss=None, name=None, tape=None):
        """Scales the loss, differentiates, and applies the gradients unscaled inside the
        fused step (no separate unscaling pass) — what ``Model.fit`` does."""
        from mixprec._tape import GradientTape

        if not callable(loss) and tape is None:
            raise ValueError("`tape` is required when a `Tensor` loss is passed.")
        tape = tape if tape is not None else GradientTape()
        if callable(loss):
            with tape:
                scaled = self._scale(loss())
        else:
            with tape:
                scaled = self._scale(loss)
        if callable(var_list):
            var_list = var_list()
        var_list = _nest.flatten(var_list)
        grads = tape.gradient(scaled, var_list, grad_loss)
        return self._apply_scaled(list(zip(grads, var_list)), unscale=True)

    # ---------------------------------------------------------------- delegation

    @property
    def inner_optimizer(self):
        return self._optimizer

    @property
    def iterations(self):
        return self._optimizer.iterations

    @iterations.setter
    def iterations(self, value):
        self._optimizer.iterations = value

    @property
    def learning_rate(self):
        return self._optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        self._optimizer.learning_rate = value

    lr = learning_rate

    @property
    def clipnorm(self):
        return self._optimizer.clipnorm

    @property
    def clipvalue(self):
        return self._optimizer.clipvalue

    @property
    def global_clipnorm(self):
        return self._optimizer.global_clipnorm

    @property
    def name(self):
        return "LossScaleOptimizer"

    def build(self, var_list):
        """Creates the inner optimizer's slots of ``var_list``."""
        self._optimizer.build(var_list)

    @property
    def variables(self):
        """The inner optimizer's variables (tf-keras 2.21: without the loss scale's); a
        list, also callable (OptimizerV2-era code calls ``variables()``)."""
        return self._optimizer.variables

    def _all_variables(self):
        """The inner optimizer's variables, then the loss scale's (scale, good steps)."""
        return list(self._optimizer.variables) + list(self._loss_scale_obj.variables)

    @property
    def weights(self):
        return self._all_variables()

    def get_weights(self):
        return [v.numpy() for v in self._all_variables()]

    def compute_gradients(self, loss, var_list, tape=None):
        """(gradient, variable) pairs of ``loss``, scaled then unscaled (tf-keras)."""
        from mixprec._tape import GradientTape

        if not callable(loss) and tape is None:
            raise ValueError("`tape` is required when a `Tensor` loss is passed.")
        tape = tape if tape is not None else GradientTape()
        with tape:
            scaled = self.get_scaled_loss(loss() if callable(loss) else loss)
        if callable(var_list):
            var_list = var_list()
        var_list = _nest.flatten(var_list)
        grads = self.get_unscaled_gradients(tape.gradient(scaled, var_list))
        return list(zip(grads, var_list))

    def set_weights(self, weights):
        params = self._all_variables()
        if len(weights) == len(params) - 2:  # saved without loss-scale state
            self._optimizer.set_weights(weights)
            return
        if len(params) != len(weights):
            raise ValueError("You called `set_weights(weights)` on a LossScaleOptimizer with %d "
                             "weights, but it has %d." % (len(weights), len(params)))
        for p, w in zip(params, weights):
            p.assign(w)

    def get_slot(self, var, slot_name):
        return self._optimizer.get_slot(var, slot_name)

    def get_slot_names(self):
        return self._optimizer.get_slot_names()

    def add_slot(self, var, slot_name, initializer="zeros"):
        return self._optimizer.add_slot(var, slot_name, initializer)

    @property
    def _IS_LEGACY(self):  # noqa: N802 - the optimizer family is the inner optimizer's
        inner = self.__dict__.get("_optimizer")
        return bool(getattr(inner, "_IS_LEGACY", False))

    def finalize_variable_values(self, var_list):
        """The inner optimizer's (its EMA weights, if any, replace the variables)."""
        fn = getattr(self._optimizer, "finalize_variable_values", None)
        if fn is not None:
            fn(var_list)

    def __getattr__(self, name):
        # only hyperparameters of the inner optimizer are delegated (tf-keras' rule)
        inner = self.__dict__.get("_optimizer")
        if inner is not None and name in inner.__dict__.get("_hyper", {}):
            return getattr(inner, name)
        raise AttributeError("'%s' object has no attribute '%s'" % (type(self).__name__, name))

    def __setattr__(self, name, value):
        if name in ("loss_scale", "dynamic_counter", "dynamic", "initial_scale",
                    "dynamic_growth_steps"):
            raise AttributeError("can't set attribute %r of a LossScaleOptimizer" % name)
        inner = self.__dict__.get("_optimizer")
        if inner is not None and name in inner.__dict__.get("_hyper", {}):
            setattr(inner, name, value)
            return
        object.__setattr__(self, name, value)


def _check_inner(inner, message):
    if not isinstance(inner, _BaseOptimizer):
        raise TypeError(message % (inner,))


class LossScaleOptimizer(_LossScaleOptimizerBase):
    """Wraps an optimizer and applies loss scaling (``tf.keras.mixed_precision.LossScaleOptimizer``).

    As tf-keras 2.21 with its (new-style) optimizers, ``LossScaleOptimizer(opt)`` is an
    instance of the subclass ``LossScaleOptimizerV3`` (``type(opt).__name__``), and of
    ``tf.keras.optimizers.Optimizer``; wrapping a ``keras.optimizers.legacy`` optimizer it
    is this class itself, an instance of ``legacy.Optimizer`` and not of
    ``keras.optimizers.Optimizer`` (tf-keras' legacy LossScaleOptimizer).

    Args:
      inner_optimizer: the optimizer to wrap.
      dynamic: True for a dynamic loss scale (the default), False for a fixed one.
      initial_scale: the first scale (default 2**15); required when ``dynamic=False``.
      dynamic_growth_steps: finite steps before the scale doubles (default 2000).
      min_loss_scale: mixprec extension — the floor the dynamic scale halves down to
        (TensorFlow's is always 1; values below 1 are allowed).
    """

    def __new__(cls, *args, **kwargs):
        inner = args[0] if args else kwargs.get("inner_optimizer")
        if cls is LossScaleOptimizer and not getattr(inner, "_IS_LEGACY", False):
            cls = LossScaleOptimizerV3
        return object.__new__(cls)

    def __init__(self, inner_optimizer, dynamic=True, initial_scale=None,
                 dynamic_growth_steps=None, min_loss_scale=None):
        if isinstance(inner_optimizer, _LossScaleOptimizerBase):
            raise TypeError("LossScaleOptimizer cannot wrap another LossScaleOptimizer, but got: "
                            "%s" % (inner_optimizer,))
        _check_inner(inner_optimizer, '"inner_optimizer" must be an instance of '
                     "`tf.keras.optimizers.Optimizer` or `tf.keras.optimizers.experimental."
                     "Optimizer`, but got: %s.")
        if not isinstance(dynamic, bool):
            raise TypeError('"dynamic" argument to LossScaleOptimizer.__init__ must be a bool, '
                            "but got: %r" % (dynamic,))
        if dynamic:
            initial = 2.0 ** 15 if initial_scale is None else _ls._float32_scale(
                initial_scale, "initial_scale")
            steps = 2000 if dynamic_growth_steps is None else int(dynamic_growth_steps)
            floor = 1.0 if min_loss_scale is None else float(min_loss_scale)
            ls = _ls.DynamicLossScale(initial, steps, 2.0, floor)
        else:
            if initial_scale is None:
                raise ValueError('"initial_scale" must be specified if "dynamic" is False')
            if dynamic_growth_steps is not None:
                raise ValueError('"dynamic_growth_steps" must be None if "dynamic" is False, but '
                                 "got: %s" % (dynamic_growth_steps,))
            ls = _FixedScale(float(initial_scale))
        self._wrap(inner_optimizer, ls)
        # tf-keras 2.21 creates the inner optimizer's slots outside its name scope
        # ('m/dense/kernel:0', not 'Adam/m/dense/kernel:0'); legacy ones keep their names
        if not inner_optimizer._IS_LEGACY:
            inner_optimizer._unscoped_slots = True

    def apply_gradients(self, grads_and_vars, name=None, experimental_aggregate_gradients=True):
        """Applies unscaled gradients if they are all finite, otherwise skips the step; in
        both cases updates the loss scale and counts the iteration. Returns None
        (tf-keras 2.21's LossScaleOptimizerV3)."""
        super().apply_gradients(grads_and_vars, name, experimental_aggregate_gradients)

    def minimize(self, loss, var_list, grad_loss=None, name=None, tape=None):
        """Scales the loss, differentiates and applies (unscaled inside the fused step);
        returns None."""
        super().minimize(loss, var_list, grad_loss, name, tape)

    @property
    def dynamic(self):
        return self._dynamic_state()

    @property
    def loss_scale(self):
        """The current loss scale as a float32 scalar tensor (``float()`` of it waits for a
        GPU; the tensor itself does not)."""
        return self._scale_tensor()

    @property
    def dynamic_counter(self):
        """Steps since the scale last changed (an int64 variable), or None if fixed."""
        return self._loss_scale_obj.variables[1] if self.dynamic else None

    @property
    def initial_scale(self):
        obj = self._loss_scale_obj
        return obj.initial_loss_scale if self.dynamic else obj._value

    @property
    def dynamic_growth_steps(self):
        return self._loss_scale_obj.increment_period if self.dynamic else None

    @property
    def min_loss_scale(self):
        return self._loss_scale_obj.min_loss_scale if self.dynamic else None

    def get_config(self):
        from mixprec.keras import optimizers

        config = {"inner_optimizer": optimizers.serialize(self._optimizer),
                  "dynamic": self.dynamic, "initial_scale": float(self.initial_scale),
                  "dynamic_growth_steps": self.dynamic_growth_steps}
        if self.dynamic and self.min_loss_scale != 1.0:
            config["min_loss_scale"] = self.min_loss_scale
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """Also reads TF <= 2.3 configs ({'optimizer', 'loss_scale'})."""
        from mixprec.keras import optimizers

        config = dict(config)
        if "loss_scale" in config and isinstance(config["loss_scale"], dict):
            ls = config.pop("loss_scale")
            kind, lsc = ls.get("class_name"), ls.get("config", {})
            if kind == "FixedLossScale":
                config.update(dynamic=False, initial_scale=lsc["loss_scale_value"])
            elif kind == "DynamicLossScale":
                if float(lsc.get("multiplier", 2.0)) != 2.0:
                    raise ValueError(
                        "Cannot deserialize LossScaleOptimizer with a DynamicLossScale whose "
                        "multiplier is not 2. Got DynamicLossScale: %s"
                        % (_ls.DynamicLossScale.from_config(lsc),))
                config.update(dynamic=True, initial_scale=lsc.get("initial_loss_scale", 2 ** 15),
                              dynamic_growth_steps=lsc.get("increment_period", 2000))
        inner = config.pop("inner_optimizer", None) or config.pop("optimizer", None)
        inner = optimizers.deserialize(inner, custom_objects) if isinstance(inner, dict) else inner
        return cls(inner, **config)

    def __repr__(self):
        return "<%s inner=%r dynamic=%s loss_scale=%s>" % (
            type(self).__name__, self._optimizer, self.dynamic, self._scale_value())


class LossScaleOptimizerV3(LossScaleOptimizer):
    """What ``LossScaleOptimizer(opt)`` makes (tf-keras 2.21's class name for a loss-scale
    optimizer wrapping a new-style optimizer)."""


# tf-keras' loss-scale optimizers are optimizers: isinstance(lso, keras.optimizers.Optimizer)
# (or legacy.Optimizer when the inner one is legacy: the family check is _APIMeta's)
Optimizer.register(_LossScaleOptimizerBase)
_BaseOptimizer.register(_LossScaleOptimizerBase)
_legacy.Optimizer.register(_LossScaleOptimizerBase)


class _FixedScale(_ls.FixedLossScale):
    """A fixed scale for the stable API (which, unlike FixedLossScale, takes any value)."""

    def __init__(self, value):
        self._loss_scale_value = _ls._float32_scale(value, "initial_scale")
        self._value = self._loss_scale_value
        self._c = _core.LossScale(False, self._loss_scale_value)


class LossScaleOptimizerV1(_LossScaleOptimizerBase):
    """TF 2.1–2.3's ``tf.keras.mixed_precision.experimental.LossScaleOptimizer(optimizer,
    loss_scale)``: ``loss_scale`` is 'dynamic', a number or a ``LossScale`` object, and
    ``opt.loss_scale`` is that object (call it for the current value)."""

    def __init__(self, optimizer, loss_scale):
        if loss_scale is None:
            raise ValueError("loss_scale cannot be None.")
        if isinstance(optimizer, _LossScaleOptimizerBase):
            raise TypeError("LossScaleOptimizer cannot wrap another LossScaleOptimizer, but got: "
                            "%s" % (optimizer,))
        if not isinstance(optimizer, _BaseOptimizer):
            raise ValueError('"optimizer" must be an instance of OptimizerV2, but got: %s'
                             % (optimizer,))
        if optimizer.clipnorm is not None:
            raise ValueError("LossScaleOptimizer does not support wrapping optimizers with a "
                             "clipnorm. Optimizer %s has clipnorm %s" % (optimizer,
                                                                          optimizer.clipnorm))
        if optimizer.clipvalue is not None:
            raise ValueError("LossScaleOptimizer does not support wrapping optimizers with a "
                             "clipvalue. Optimizer %s has clipvalue %s" % (optimizer,
                                                                            optimizer.clipvalue))
        ls = _ls.get(loss_scale)
        self._wrap(optimizer, ls)

    @property
    def loss_scale(self):
        """The LossScale object (call it for the current scale tensor)."""
        return self._loss_scale_obj

    def get_config(self):
        from mixprec.keras import optimizers

        return {"optimizer": optimizers.serialize(self._optimizer, use_legacy_format=True),
                "loss_scale": _ls.serialize(self._loss_scale_obj)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from mixprec.keras import optimizers

        config = dict(config)
        inner = optimizers.deserialize(config.pop("optimizer"), custom_objects)
        return cls(inner, _ls.deserialize(config.pop("loss_scale")))

    def __repr__(self):
        return "<LossScaleOptimizer(experimental) inner=%r loss_scale=%r>" % (
            self._optimizer, self._loss_scale_obj)
