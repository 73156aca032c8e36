"""The exponential moving average of the weights behind tf-keras 2.21's ``use_ema``,
``ema_momentum`` and ``ema_overwrite_frequency``: one ``average`` variable per trained
variable (created with the slots, listed after ``iterations``), updated after every applied
step as ``m * average + (1 - m) * var`` and copied into the variables every
``ema_overwrite_frequency`` steps and by ``finalize_variable_values``. Core ops only (they
record into traced steps); the step's own arithmetic stays in the fused C update."""

__all__ = ["validate", "averages_for", "update", "overwrite"]


def _tf():
    import mixprec

    return mixprec


def validate(use_ema, ema_momentum, ema_overwrite_frequency):
    """tf-keras' argument checks (only when ``use_ema``)."""
    if not use_ema:
        return
    if ema_momentum > 1 or ema_momentum < 0:
        raise ValueError("`ema_momentum` must be in the range [0, 1]. Received: "
                         "ema_momentum=%s" % (ema_momentum,))
    if ema_overwrite_frequency and (not isinstance(ema_overwrite_frequency, int)
                                    or ema_overwrite_frequency < 1):
        raise ValueError("`ema_overwrite_frequency` must be an integer > 1 or None. Received: "
                         "ema_overwrite_frequency=%s" % (ema_overwrite_frequency,))


def averages_for(opt, variables):
    """The average variable of each of ``variables`` (created from its current value the
    first time, named '<optimizer>/average/<variable>')."""
    from mixprec._variable import Variable

    store = opt.__dict__.setdefault("_ema_averages", {})
    order = opt.__dict__.setdefault("_ema_order", [])
    out = []
    for v in variables:
        avg = store.get(v._id)
        if avg is None:
            name = opt._slot_var_name("average", v.name.split(":")[0])
            avg = Variable(v.read_value(), trainable=False, name=name)
            store[v._id] = avg
            order.append(avg)
        out.append(avg)
    return out


def _where(cond, a, b):
    return b if cond is False else (a if cond is True else _tf().where(cond, a, b))


def update(opt, variables, applied):
    """After a step: the averages move towards the variables (only where the step was
    applied: ``applied`` is True or a bool scalar the finite check decided on the device),
    then every ``ema_overwrite_frequency``-th step the variables take their averages."""
    tf = _tf()
    m = float(opt.ema_momentum)
    averages = averages_for(opt, variables)
    for v, avg in zip(variables, averages):
        value = v.read_value()
        new = m * avg.read_value() + tf.cast(1 - m, value.dtype) * value
        avg.assign(_where(applied, new, avg.read_value()))
    freq = opt.ema_overwrite_frequency or getattr(opt, "_EMA_OVERWRITE_FREQUENCY", None)
    if freq:
        it = opt.iterations.read_value()  # already counts this step (tf-keras: iterations + 1)
        due = tf.equal(tf.math.floormod(it, tf.constant(int(freq), it.dtype)),
                       tf.constant(0, it.dtype))
        if applied is not True:
            due = tf.logical_and(due, applied)
        for v, avg in zip(variables, averages):
            v.assign(tf.where(due, avg.read_value(), v.read_value()))


def overwrite(opt, var_list):
    """finalize_variable_values: each variable with an average takes its value."""
    store = opt.__dict__.get("_ema_averages", {})
    for v in var_list:
        avg = store.get(getattr(v, "_id", None))
        if avg is not None:
            v.assign(avg.read_value())
