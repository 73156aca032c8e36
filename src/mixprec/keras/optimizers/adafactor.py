"""``tf.keras.optimizers.Adafactor`` (tf-keras 2.21): factored second moments — a row (r) and
a column (c) accumulator over the last two axes of each variable with two or more dims, a full
one (v) otherwise — a relative step size min(lr, 1/sqrt(t)) scaled by the variable's RMS and an
update clipped by its own RMS. Its reductions do not fit the elementwise fused C rules
(optim_rule.h), so the step is composed from core ops (each computed in C; they record into
traced steps); no element loops here."""

from mixprec.keras.optimizers import _ema
from mixprec.keras.optimizers import schedules as _schedules
from mixprec.keras.optimizers.optimizer import Optimizer, _VariableList

__all__ = ["Adafactor"]


def _tf():
    import mixprec

    return mixprec


def _rms(x):
    tf = _tf()
    return tf.sqrt(tf.reduce_mean(tf.square(x)))


class Adafactor(Optimizer):
    """Adafactor as tf-keras 2.21 (``beta_2_decay``, ``epsilon_1``, ``epsilon_2``,
    ``clip_threshold``, ``relative_step``)."""

    _KIND = None

    def __init__(self, learning_rate=0.001, beta_2_decay=-0.8, epsilon_1=1e-30, epsilon_2=1e-3,
                 clip_threshold=1.0, relative_step=True, name="Adafactor", **kwargs):
        super().__init__(name, learning_rate, **kwargs)
        self.beta_2_decay = beta_2_decay
        self.epsilon_1 = epsilon_1
        self.epsilon_2 = epsilon_2
        self.clip_threshold = clip_threshold
        self.relative_step = relative_step
        self._factored = {}  # variable id -> (r or None, c or None, v)

    # ------------------------------------------------------------ state

    def _slots_for(self, var):
        from mixprec._variable import Variable

        slots = self._factored.get(var._id)
        if slots is None:
            tf = _tf()
            base = var.name.split(":")[0]
            shape = list(var.shape)
            dt = var.true_dtype
            r = c = None
            if len(shape) >= 2:
                r = Variable(tf.zeros(shape[:-1], dt), trainable=False,
                             name=self._slot_var_name("r", base))
                c = Variable(tf.zeros(shape[:-2] + shape[-1:], dt), trainable=False,
                             name=self._slot_var_name("c", base))
            v = Variable(tf.zeros(shape, dt), trainable=False,
                         name=self._slot_var_name("v", base))
            slots = (r, c, v)
            self._factored[var._id] = slots
            self._vars.append(var)
            if self.use_ema:
                _ema.averages_for(self, [var])
        return [s for s in slots if s is not None]

    @property
    def variables(self):
        out = _VariableList([self._iterations])
        out.extend(self.__dict__.get("_ema_order", []))
        for var in self._vars:
            out.extend(s for s in self._factored[var._id] if s is not None)
        return out

    def get_slot_names(self):
        return ["r", "c", "v"]

    def get_slot(self, var, slot_name):
        slots = self._factored.get(var._id)
        if slots is None or slot_name not in ("r", "c", "v"):
            raise KeyError("No slot %r for %s" % (slot_name, var.name))
        return slots[("r", "c", "v").index(slot_name)]

    # ------------------------------------------------------------ the step

    def _lr_tensor(self):
        tf = _tf()
        lr = self._hyper["learning_rate"]
        if isinstance(lr, _schedules.LearningRateSchedule):
            return tf.cast(lr(self._iterations), tf.float32), True
        return tf.cast(lr.read_value(), tf.float32), False

    def _apply(self, grads, variables, loss_scale=None, check_finite=False, grad_scale=1.0,
               unscale=False):
        tf = _tf()
        from mixprec import _core

        applied = True
        if loss_scale is not None:
            if _core.graph_recording() is not None:
                raise NotImplementedError(
                    "Adafactor inside a LossScaleOptimizer in a traced step is not implemented "
                    "by mixprec (its loss-scale update needs the finite check on the host): "
                    "compile with run_eagerly=True, or use float32")
            if unscale:
                inv = 1.0 / loss_scale.value()
                grads = [tf.cast(tf.cast(g, tf.float32) * inv, g.dtype) for g in grads]
            if check_finite:
                applied = bool(_core.all_finite(grads))
                loss_scale.update(applied)
        if grad_scale != 1.0:
            grads = [g * grad_scale for g in grads]
        if applied:
            for v in variables:
                self._slots_for(v)
            lr, scheduled = self._lr_tensor()
            # the hyperparameters live on the CPU (Optimizer._set_hyper): one copy to the
            # variables' device per step
            with tf.device(variables[0].device if variables else None):
                lr = tf.identity(lr)
            if self.weight_decay is not None:
                for v in variables:
                    if self._use_weight_decay(v):
                        v.assign_sub(v.read_value() * tf.cast(lr * self.weight_decay,
                                                              v.true_dtype))
            for g, v in zip(grads, variables):
                self._update_one(g, v, lr, scheduled)
            for v in variables:
                if v.constraint is not None:
                    v.assign(v.constraint(v))
        self._iterations.assign_add(1)
        if self.use_ema and applied:
            # the EMA reads iterations after the step, as the fused path (_ema.update)
            _ema.update(self, variables, True)
        return applied

    def _update_one(self, gradient, variable, lr, scheduled):
        tf = _tf()
        dt = variable.true_dtype
        r, c, v = self._factored[variable._id]
        lr = tf.cast(lr, dt)
        eps2 = tf.cast(self.epsilon_2, dt)
        one = tf.cast(1.0, dt)
        step = tf.cast(self._iterations.read_value() + 1, dt)
        if not scheduled and self.relative_step:
            lr = tf.minimum(lr, tf.math.rsqrt(step))
        rho = tf.minimum(lr, tf.math.rsqrt(step))
        value = variable.read_value()
        alpha = tf.maximum(eps2, _rms(value)) * rho
        g = tf.convert_to_tensor(gradient)
        sq = tf.square(g) + tf.cast(self.epsilon_1, dt)
        beta = 1 - tf.pow(step, tf.cast(self.beta_2_decay, dt))
        if r is not None:
            r.assign(beta * r.read_value() + (1 - beta) * tf.reduce_mean(sq, axis=-1))
            c.assign(beta * c.read_value() + (1 - beta) * tf.reduce_mean(sq, axis=-2))
            rv = r.read_value()
            v.assign(tf.expand_dims(rv / tf.reduce_mean(rv, axis=-1, keepdims=True), axis=-1)
                     * tf.expand_dims(c.read_value(), -2))
        else:
            v.assign(beta * v.read_value() + (1 - beta) * sq)
        u = g * tf.math.rsqrt(v.read_value())
        u_hat = u / tf.maximum(one, _rms(u) / tf.cast(self.clip_threshold, dt))
        variable.assign_add(-alpha * u_hat)

    def get_config(self):
        config = super().get_config()
        config.update(learning_rate=self._serialize_hyper("learning_rate"),
                      beta_2_decay=self.beta_2_decay, epsilon_1=self.epsilon_1,
                      epsilon_2=self.epsilon_2, clip_threshold=self.clip_threshold,
                      relative_step=self.relative_step)
        return config
