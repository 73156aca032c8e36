"""Recurrent layers of tf-keras 2.21: the cells (SimpleRNNCell, LSTMCell, GRUCell,
StackedRNNCells, AbstractRNNCell), the generic RNN layer over any cell, SimpleRNN, LSTM,
GRU and Bidirectional — tf-keras' weights, names, configs, gate orders (LSTM i f c o, GRU
z r h with reset_after), masks (a masked step keeps the states; its output is the previous
one, zeros inside Bidirectional with return_sequences), go_backwards, return_sequences/return_state,
initial_state, stateful states and dropout masks drawn once per call. Every step is a
composition of core ops (so autodiff and tracing come from the core); the standard cells
project all timesteps' inputs with one matrix product before the time loop. No kernels here."""

from mixprec import _core
from mixprec._dtypes import as_dtype
from mixprec.keras import activations, constraints, initializers, regularizers
from mixprec.keras.engine import base_layer
from mixprec.keras.engine.base_layer import Layer

__all__ = ["AbstractRNNCell", "SimpleRNNCell", "LSTMCell", "GRUCell", "StackedRNNCells", "RNN",
           "SimpleRNN", "LSTM", "GRU", "Bidirectional"]


def _tf():
    import mixprec

    return mixprec


def _flat(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _dropout_mask(like, rate, training):
    """One dropout mask (kept entries scaled by 1 / (1 - rate)) for a whole call, or None."""
    if not 0 < rate < 1 or not training:
        return None
    keep = _core.cast(_core.greater_equal(_tf().random.uniform(list(like.shape), dtype=like.dtype),
                                          rate), like.dtype)
    return keep * (1.0 / (1.0 - rate))


def _time_steps(x):
    """The (batch, ...) slices of a (batch, time, ...) tensor, as a list. Its gradient is
    one stack of the steps' gradients (a custom gradient): slicing step by step would give
    every step a gradient the size of the whole sequence."""
    tf = _tf()
    steps = x.shape[1]

    @tf.custom_gradient
    def split(z):
        outs = [z[:, t] for t in range(steps)]

        def grad(*dys):
            like = outs[0]
            return tf.stack([dy if dy is not None else _core.fill(list(like.shape), 0,
                                                                  like.dtype) for dy in dys], 1)
        return outs, grad

    return split(x)


def _check_rate(name, rate):
    rate = float(rate)
    if not 0 <= rate <= 1:
        raise ValueError("Invalid value received for argument `%s`. Expected a float value "
                         "between 0 and 1. Received: %s=%s" % (name, name, rate))
    return min(1.0, max(0.0, rate))


def _serialize(obj, kind):
    return kind.serialize(obj)


class AbstractRNNCell(Layer):
    """Base of a user's cell: ``call(inputs, states)`` returns ``(output, new_states)``;
    ``state_size`` and ``output_size`` say the sizes."""

    @property
    def state_size(self):
        raise NotImplementedError

    @property
    def output_size(self):
        raise NotImplementedError

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        return _zero_states(self, batch_size, dtype)


def _zero_states(cell, batch_size, dtype):
    sizes = cell.state_size
    sizes = list(sizes) if isinstance(sizes, (list, tuple)) else [sizes]
    out = [_core.fill([batch_size] + _flat(s), 0, as_dtype(dtype)) for s in sizes]
    return out if isinstance(cell.state_size, (list, tuple)) else out[0]


class _StandardCell(Layer):
    """What SimpleRNNCell, LSTMCell and GRUCell share: arguments, weights, config."""

    _GATES = 1
    _NAME = None

    def __init__(self, units, activation="tanh", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, kernel_constraint=None, recurrent_constraint=None,
                 bias_constraint=None, dropout=0.0, recurrent_dropout=0.0, **kwargs):
        units = int(units)
        if units <= 0:
            raise ValueError("Received an invalid value for argument `units`, expected a "
                             "positive integer, got %s." % (units,))
        super().__init__(**kwargs)
        self.units = units
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.recurrent_constraint = constraints.get(recurrent_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.dropout = _check_rate("dropout", dropout)
        self.recurrent_dropout = _check_rate("recurrent_dropout", recurrent_dropout)

    @property
    def state_size(self):
        return self.units

    @property
    def output_size(self):
        return self.units

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        return _zero_states(self, batch_size, dtype or self.compute_dtype)

    def _bias_shape(self):
        return (self._GATES * self.units,)

    def _bias_initializer(self):
        return self.bias_initializer

    def build(self, input_shape):
        dim = input_shape[-1]
        if dim is None:
            raise ValueError("The last dimension of the inputs to a recurrent cell should be "
                             "defined. Found None. Full input shape received: %s"
                             % (tuple(input_shape),))
        n = self._GATES * self.units
        self.kernel = self.add_weight("kernel", (int(dim), n), initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.recurrent_kernel = self.add_weight(
            "recurrent_kernel", (self.units, n), initializer=self.recurrent_initializer,
            regularizer=self.recurrent_regularizer, constraint=self.recurrent_constraint)
        self.bias = self.add_weight(
            "bias", self._bias_shape(), initializer=self._bias_initializer(),
            regularizer=self.bias_regularizer,
            constraint=self.bias_constraint) if self.use_bias else None
        self.built = True

    # ---- the step, in two parts: the input projection (one product for all timesteps in
    # the layers) and the recurrent update
    def _project(self, x, dp_mask=None):
        """x @ kernel (+ the input bias), x of shape (..., input_dim)."""
        if dp_mask is not None:
            x = x * dp_mask
        shape = list(x.shape)
        flat = x if len(shape) == 2 else _core.reshape(x, [-1, shape[-1]])
        z = _core.matmul(flat, self.kernel)
        if len(shape) != 2:
            z = _core.reshape(z, shape[:-1] + [z.shape[-1]])
        return z + self._input_bias() if self.use_bias else z

    def _input_bias(self):
        return self.bias

    def call(self, inputs, states, training=None):
        dp = _dropout_mask(inputs, self.dropout, training)
        rdp = _dropout_mask(_flat(states)[0], self.recurrent_dropout, training)
        out, new = self._step(self._project(inputs, dp), _flat(states), rdp)
        return out, (new if isinstance(states, (list, tuple)) else new[0])

    def get_config(self):
        config = super().get_config()
        config.update(units=self.units, activation=activations.serialize(self.activation))
        config.update(self._extra_config_head())
        config.update(
            use_bias=self.use_bias,
            kernel_initializer=initializers.serialize(self.kernel_initializer),
            recurrent_initializer=initializers.serialize(self.recurrent_initializer),
            bias_initializer=initializers.serialize(self.bias_initializer))
        config.update(self._extra_config_mid())
        for p in ("kernel", "recurrent", "bias"):
            config[p + "_regularizer"] = regularizers.serialize(getattr(self, p + "_regularizer"))
        for p in ("kernel", "recurrent", "bias"):
            config[p + "_constraint"] = constraints.serialize(getattr(self, p + "_constraint"))
        config.update(dropout=self.dropout, recurrent_dropout=self.recurrent_dropout)
        config.update(self._extra_config_tail())
        return config

    def _extra_config_head(self):
        return {}

    def _extra_config_mid(self):
        return {}

    def _extra_config_tail(self):
        return {}


class SimpleRNNCell(_StandardCell):
    """h = activation(x @ kernel + bias + h_prev @ recurrent_kernel)."""

    _GATES = 1

    def _step(self, zx, states, rdp):
        h = states[0] if rdp is None else states[0] * rdp
        out = self.activation(zx + _core.matmul(h, self.recurrent_kernel))
        return out, [out]


class LSTMCell(_StandardCell):
    """Gates i, f, c, o from x @ kernel + h @ recurrent_kernel + bias; c = f*c + i*act(c~),
    h = o * act(c). ``unit_forget_bias`` starts the forget gate's bias at 1."""

    _GATES = 4

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", unit_forget_bias=True, kernel_regularizer=None,
                 recurrent_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0,
                 recurrent_dropout=0.0, **kwargs):
        self.implementation = kwargs.pop("implementation", 2)
        super().__init__(units, activation, use_bias, kernel_initializer, recurrent_initializer,
                         bias_initializer, kernel_regularizer, recurrent_regularizer,
                         bias_regularizer, kernel_constraint, recurrent_constraint,
                         bias_constraint, dropout, recurrent_dropout, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = unit_forget_bias

    @property
    def state_size(self):
        return [self.units, self.units]

    def _bias_initializer(self):
        if not self.unit_forget_bias:
            return self.bias_initializer
        base, u = self.bias_initializer, self.units

        def init(shape, dtype=None, **kwargs):
            tf = _tf()
            return tf.concat([base((u,), dtype=dtype), tf.ones([u], dtype=dtype),
                              base((2 * u,), dtype=dtype)], 0)
        return init

    def _step(self, zx, states, rdp):
        h, c = states[0], states[1]
        if rdp is not None:
            h = h * rdp
        z = zx + _core.matmul(h, self.recurrent_kernel)
        u = self.units
        i = self.recurrent_activation(z[:, :u])
        f = self.recurrent_activation(z[:, u:2 * u])
        c = f * c + i * self.activation(z[:, 2 * u:3 * u])
        o = self.recurrent_activation(z[:, 3 * u:])
        h = o * self.activation(c)
        return h, [h, c]

    def _extra_config_head(self):
        return {"recurrent_activation": activations.serialize(self.recurrent_activation)}

    def _extra_config_mid(self):
        return {"unit_forget_bias": self.unit_forget_bias}

    def _extra_config_tail(self):
        return {"implementation": self.implementation}


class GRUCell(_StandardCell):
    """Gates z, r, h; with ``reset_after`` (TF2's default, cuDNN's form) the reset gate
    multiplies the recurrent projection including its own bias (bias of shape (2, 3u))."""

    _GATES = 3

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, kernel_constraint=None, recurrent_constraint=None,
                 bias_constraint=None, dropout=0.0, recurrent_dropout=0.0, reset_after=True,
                 **kwargs):
        self.implementation = kwargs.pop("implementation", 2)
        super().__init__(units, activation, use_bias, kernel_initializer, recurrent_initializer,
                         bias_initializer, kernel_regularizer, recurrent_regularizer,
                         bias_regularizer, kernel_constraint, recurrent_constraint,
                         bias_constraint, dropout, recurrent_dropout, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.reset_after = reset_after

    def _bias_shape(self):
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def _input_bias(self):
        return self.bias[0] if self.reset_after else self.bias

    def _step(self, zx, states, rdp):
        h_prev = states[0]
        h = h_prev if rdp is None else h_prev * rdp
        u = self.units
        if self.reset_after:
            inner = _core.matmul(h, self.recurrent_kernel)
            if self.use_bias:
                inner = inner + self.bias[1]
            z = self.recurrent_activation(zx[:, :u] + inner[:, :u])
            r = self.recurrent_activation(zx[:, u:2 * u] + inner[:, u:2 * u])
            hh = self.activation(zx[:, 2 * u:] + r * inner[:, 2 * u:])
        else:
            inner = _core.matmul(h, self.recurrent_kernel[:, :2 * u])
            z = self.recurrent_activation(zx[:, :u] + inner[:, :u])
            r = self.recurrent_activation(zx[:, u:2 * u] + inner[:, u:2 * u])
            hh = self.activation(zx[:, 2 * u:] +
                                 _core.matmul(r * h, self.recurrent_kernel[:, 2 * u:]))
        out = z * h_prev + (1.0 - z) * hh
        return out, [out]

    def _extra_config_head(self):
        return {"recurrent_activation": activations.serialize(self.recurrent_activation)}

    def _extra_config_tail(self):
        return {"implementation": self.implementation, "reset_after": self.reset_after}


class StackedRNNCells(Layer):
    """Cells run one after another at every step (the states of all of them)."""

    def __init__(self, cells, **kwargs):
        for cell in cells:
            if "call" not in dir(cell) or not hasattr(cell, "state_size"):
                raise ValueError("All cells must have a `call` method and a `state_size` "
                                 "attribute. Received cells: %s" % (cells,))
        super().__init__(**kwargs)
        self.cells = list(cells)

    @property
    def state_size(self):
        return [s for cell in self.cells for s in _flat(cell.state_size)]

    @property
    def output_size(self):
        last = self.cells[-1]
        return getattr(last, "output_size", _flat(last.state_size)[0])

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        return [s for cell in self.cells for s in _flat(
            _zero_states(cell, batch_size, dtype or self.compute_dtype))]

    def build(self, input_shape):
        shape = list(input_shape)
        for cell in self.cells:
            if not cell.built:
                with base_layer._NameScope(cell):
                    cell.build(tuple(shape))
            shape = shape[:-1] + [getattr(cell, "output_size", _flat(cell.state_size)[0])]
        self.built = True

    def call(self, inputs, states, training=None):
        out, new, k = inputs, [], 0
        for cell in self.cells:
            n = len(_flat(cell.state_size))
            mine = states[k:k + n]
            k += n
            cell_states = mine if isinstance(cell.state_size, (list, tuple)) else mine[0]
            out, s = _call_cell(cell, out, cell_states, training)
            new.extend(_flat(s))
        return out, new

    def get_config(self):
        from mixprec.keras.layers import serialize

        config = {"cells": [serialize(c) for c in self.cells]}
        return {**super().get_config(), **config}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from mixprec.keras.layers import deserialize

        config = dict(config)
        cells = [deserialize(c, custom_objects=custom_objects) for c in config.pop("cells")]
        return cls(cells, **config)


def _call_cell(cell, x, states, training):
    accepts_training, _ = Layer._CALL_ACCEPTS.get(type(cell), (False, False))
    if not accepts_training:
        import inspect

        accepts_training = "training" in inspect.signature(cell.call).parameters
    if accepts_training:
        return cell.call(x, states, training=training)
    return cell.call(x, states)


class RNN(Layer):
    """Runs ``cell`` over the time axis of (batch, time, features) inputs."""

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, time_major=False, **kwargs):
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
        if "call" not in dir(cell):
            raise ValueError("Argument `cell` should have a `call` method. Received: cell=%s"
                             % (cell,))
        if not hasattr(cell, "state_size"):
            raise ValueError("The RNN cell should have a `state_size` attribute (tuple of "
                             "integers, one integer per RNN state). Received: cell=%s" % (cell,))
        self.zero_output_for_mask = kwargs.pop("zero_output_for_mask", False)
        super().__init__(**kwargs)
        self.cell = cell
        self.return_sequences = return_sequences
        self.return_state = return_state
        self.go_backwards = go_backwards
        self.stateful = stateful
        self.unroll = unroll
        self.time_major = time_major
        self.supports_masking = True
        self.states = None if not stateful else [None] * len(_flat(cell.state_size))

    @property
    def _state_sizes(self):
        return _flat(self.cell.state_size)

    def build(self, input_shape):
        shape = tuple(input_shape[0] if isinstance(input_shape, list) and input_shape and
                      isinstance(input_shape[0], (tuple, list)) else input_shape)
        if len(shape) < 3:
            raise ValueError("Input %s of layer \"%s\" is incompatible with the layer: "
                             "expected ndim=3, found ndim=%d. Full shape received: %s"
                             % (0, self.name, len(shape), shape))
        step = (shape[1],) + tuple(shape[2:]) if self.time_major else (shape[0],) + tuple(
            shape[2:])
        if isinstance(self.cell, Layer) and not self.cell.built:
            with base_layer._NameScope(self.cell):
                self.cell.build(step)
        self.built = True

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        batch, steps = (shape[1], shape[0]) if self.time_major else (shape[0], shape[1])
        out_size = getattr(self.cell, "output_size", self._state_sizes[0])
        out = (steps, batch) if self.time_major else (batch, steps)
        out = out + tuple(_flat(out_size)) if self.return_sequences else (batch,) + tuple(
            _flat(out_size))
        if self.return_state:
            return [out] + [(batch,) + tuple(_flat(s)) for s in self._state_sizes]
        return out

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, list):
            mask = mask[0]
        out_mask = mask if self.return_sequences else None
        if self.return_state:
            return [out_mask] + [None] * len(self._state_sizes)
        return out_mask

    def get_initial_state(self, inputs):
        batch = inputs.shape[1] if self.time_major else inputs.shape[0]
        fn = getattr(self.cell, "get_initial_state", None)
        if fn is not None:
            states = fn(inputs=None, batch_size=batch, dtype=inputs.dtype)
        else:
            states = _zero_states(self.cell, batch, inputs.dtype)
        return _flat(states)

    def reset_states(self, states=None):
        if not self.stateful:
            raise AttributeError("Layer must be stateful.")
        if self.states is None or self.states[0] is None:
            if states is None:
                return
        if states is None:
            for v in self.states:
                if v is not None:
                    v.assign(_core.fill(list(v.shape), 0, v.dtype))
            return
        states = _flat(states)
        if len(states) != len(self.states):
            raise ValueError("Layer %s expects %d state(s), but it received %d state value(s). "
                             "Input received: %s" % (self.name, len(self.states), len(states),
                                                     states))
        for v, s in zip(self.states, states):
            v.assign(s)

    reset_state = reset_states

    def _initial(self, inputs, initial_state):
        if initial_state is not None:
            states = [_core.cast(_core.convert_to_tensor(s), inputs.dtype)
                      for s in _flat(initial_state)]
            if len(states) != len(self._state_sizes):
                raise ValueError("An `initial_state` was passed that is not compatible with "
                                 "`cell.state_size`. Received `state_spec`=%d states; however "
                                 "`cell.state_size` is %s" % (len(states), self.cell.state_size))
            return states
        if self.stateful:
            from mixprec import Variable

            batch = inputs.shape[1] if self.time_major else inputs.shape[0]
            if self.states[0] is None:
                self.states = [Variable(s, trainable=False) for s in self.get_initial_state(
                    inputs)]
            elif self.states[0].shape[0] != batch:
                raise ValueError("If a RNN is stateful, it needs to know its batch size. The "
                                 "batch size of the states (%d) differs from the input's (%d)"
                                 % (self.states[0].shape[0], batch))
            return [_core.cast(v.read_value(), inputs.dtype) for v in self.states]
        return self.get_initial_state(inputs)

    def call(self, inputs, mask=None, training=None, initial_state=None, constants=None):
        if isinstance(inputs, (list, tuple)):
            inputs, extra = inputs[0], list(inputs[1:])
            if initial_state is None and extra:
                initial_state = extra
        x = inputs if not self.time_major else _core.transpose(
            inputs, [1, 0] + list(range(2, inputs.ndim)))
        if x.ndim < 3:
            raise ValueError("Input 0 of layer \"%s\" is incompatible with the layer: expected "
                             "ndim=3, found ndim=%d. Full shape received: %s"
                             % (self.name, x.ndim, tuple(inputs.shape)))
        states = self._initial(inputs, initial_state)
        steps = x.shape[1]
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        if mask is not None:
            mask = _core.cast(_core.convert_to_tensor(mask), "bool")
        order = range(steps - 1, -1, -1) if self.go_backwards else range(steps)
        cell = self.cell
        fast = isinstance(cell, _StandardCell)
        if fast:
            dp = _dropout_mask(x[:, 0], cell.dropout, training)
            rdp = _dropout_mask(states[0], cell.recurrent_dropout, training)
            zx = cell._project(x, None if dp is None else _core.reshape(
                dp, [dp.shape[0], 1, dp.shape[1]]))
        step_inputs = _time_steps(zx if fast else x)
        outputs, prev = [], None
        for t in order:
            if fast:
                out, new = cell._step(step_inputs[t], states, rdp)
            else:
                cs = states if isinstance(cell.state_size, (list, tuple)) else states[0]
                out, new = _call_cell(cell, step_inputs[t], cs, training)
                new = _flat(new)
            if mask is not None:
                m = _core.reshape(mask[:, t], [-1, 1])
                new = [_core.where(_core.reshape(m, [-1] + [1] * (n.ndim - 1)) if n.ndim > 2
                                   else m, n, s) for n, s in zip(new, states)]
                if self.zero_output_for_mask:
                    base = _core.fill(list(out.shape), 0, out.dtype)
                else:
                    base = prev if prev is not None else _core.fill(list(out.shape), 0, out.dtype)
                out = _core.where(m, out, base)
            states, prev = new, out
            if self.return_sequences:
                outputs.append(out)
        if self.stateful:
            for v, s in zip(self.states, states):
                v.assign(_core.cast(s, v.dtype))
        if self.return_sequences:
            out = _core.stack(outputs, 0 if self.time_major else 1)
        else:
            out = prev
        if self.return_state:
            return [out] + list(states)
        return out

    def get_config(self):
        config = super().get_config()
        config.update(return_sequences=self.return_sequences, return_state=self.return_state,
                      go_backwards=self.go_backwards, stateful=self.stateful,
                      unroll=self.unroll, time_major=self.time_major)
        if self.zero_output_for_mask:
            config["zero_output_for_mask"] = True
        from mixprec.keras.layers import serialize

        config["cell"] = serialize(self.cell)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from mixprec.keras.layers import deserialize

        config = dict(config)
        cell = deserialize(config.pop("cell"), custom_objects=custom_objects)
        config.pop("build_config", None)
        return cls(cell, **config)


class _CellLayer(RNN):
    """SimpleRNN / LSTM / GRU: an RNN over their own cell, configured flat."""

    _CELL = None
    _CELL_NAME = None
    _RNN_KEYS = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll",
                 "time_major")

    def __init__(self, units, **kwargs):
        rnn_kwargs = {k: kwargs.pop(k) for k in self._RNN_KEYS if k in kwargs}
        layer_kwargs = {k: kwargs.pop(k) for k in ("name", "trainable", "dtype",
                                                   "activity_regularizer", "input_shape",
                                                   "batch_input_shape", "batch_size",
                                                   "input_dim", "input_length",
                                                   "zero_output_for_mask") if k in kwargs}
        if "input_dim" in layer_kwargs or "input_length" in layer_kwargs:
            dim = layer_kwargs.pop("input_dim", None)
            length = layer_kwargs.pop("input_length", None)
            layer_kwargs["input_shape"] = (length, dim)
        cell = self._CELL(units, name=self._CELL_NAME, dtype=layer_kwargs.get("dtype"),
                          trainable=layer_kwargs.get("trainable", True), **kwargs)
        super().__init__(cell, **rnn_kwargs, **layer_kwargs)

    def __getattr__(self, name):
        cell = self.__dict__.get("cell")
        if cell is not None and not name.startswith("_") and hasattr(cell, name):
            return getattr(cell, name)
        raise AttributeError("'%s' object has no attribute '%s'" % (type(self).__name__, name))

    def get_config(self):
        config = super().get_config()
        cell_config = self.cell.get_config()
        for k in ("name", "trainable", "dtype"):
            cell_config.pop(k, None)
        del config["cell"]
        config.update(cell_config)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config.pop("build_config", None)
        units = config.pop("units")
        return cls(units, **config)


class SimpleRNN(_CellLayer):
    _CELL = SimpleRNNCell
    _CELL_NAME = "simple_rnn_cell"


class LSTM(_CellLayer):
    _CELL = LSTMCell
    _CELL_NAME = "lstm_cell"


class GRU(_CellLayer):
    _CELL = GRUCell
    _CELL_NAME = "gru_cell"


from mixprec.keras.layers.wrappers import Wrapper as _Wrapper  # noqa: E402

_MERGE_MODES = ("sum", "mul", "ave", "concat", None)


class Bidirectional(_Wrapper):
    """Runs a recurrent layer forwards and a copy backwards and merges their outputs
    (``merge_mode`` concat / sum / mul / ave / None for a list)."""

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError("Please initialize `Bidirectional` layer with a `tf.keras.layers."
                             "Layer` instance. Received: %s" % (layer,))
        if backward_layer is not None and not isinstance(backward_layer, Layer):
            raise ValueError("`backward_layer` need to be a `tf.keras.layers.Layer` instance. "
                             "Received: %s" % (backward_layer,))
        if merge_mode not in _MERGE_MODES:
            raise ValueError("Invalid merge mode. Received: %s. Merge mode should be one of "
                             '{"sum", "mul", "ave", "concat", None}' % (merge_mode,))
        super().__init__(**kwargs)
        config = layer.get_config()
        config["name"] = "forward_" + layer.name
        self.forward_layer = type(layer).from_config(config)
        if backward_layer is None:
            bconfig = layer.get_config()
            bconfig["name"] = "backward_" + layer.name
            bconfig["go_backwards"] = not bconfig.get("go_backwards", False)
            self.backward_layer = type(layer).from_config(bconfig)
        else:
            self.backward_layer = backward_layer
        for attr in ("return_sequences", "return_state", "stateful"):
            if getattr(self.forward_layer, attr) != getattr(self.backward_layer, attr):
                raise ValueError("Forward layer and backward layer should have the same "
                                 "`%s`." % attr)
        # tf-keras: inside Bidirectional a masked step outputs zeros (so the two directions'
        # sequences line up); a plain layer repeats its previous output
        self.forward_layer.zero_output_for_mask = layer.return_sequences
        self.backward_layer.zero_output_for_mask = layer.return_sequences
        self.merge_mode = merge_mode
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state
        self.stateful = layer.stateful
        self.supports_masking = True
        self._initial_weights = weights

    def build(self, input_shape):
        for sub in (self.forward_layer, self.backward_layer):
            if not sub.built:
                with base_layer._NameScope(sub):
                    sub.build(input_shape)
        if self._initial_weights is not None:
            self.set_weights(self._initial_weights)
            self._initial_weights = None
        self.built = True

    def compute_output_shape(self, input_shape):
        shape = self.forward_layer.compute_output_shape(input_shape)
        states = []
        if self.return_state:
            shape, states = shape[0], list(shape[1:]) * 2
        if self.merge_mode == "concat":
            out = tuple(shape[:-1]) + (shape[-1] * 2,)
        elif self.merge_mode is None:
            out = [tuple(shape), tuple(shape)]
        else:
            out = tuple(shape)
        if self.return_state:
            return (out if isinstance(out, list) else [out]) + states
        return out

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, list):
            mask = mask[0]
        out = mask if self.return_sequences else None
        if self.merge_mode is None:
            out = [out, out]
        if self.return_state:
            n = len(_flat(self.forward_layer.cell.state_size)) * 2
            return (out if isinstance(out, list) else [out]) + [None] * n
        return out

    def call(self, inputs, training=None, mask=None, initial_state=None):
        kw = {"training": training, "mask": mask}
        fwd_state = bwd_state = None
        if initial_state is not None:
            half = len(initial_state) // 2
            fwd_state, bwd_state = initial_state[:half], initial_state[half:]
        y = self.forward_layer(inputs, initial_state=fwd_state, **kw)
        y_rev = self.backward_layer(inputs, initial_state=bwd_state, **kw)
        states = []
        if self.return_state:
            states = list(y[1:]) + list(y_rev[1:])
            y, y_rev = y[0], y_rev[0]
        if self.return_sequences:
            time_axis = 0 if self.forward_layer.time_major else 1
            y_rev = _tf().reverse(y_rev, [time_axis])
        if self.merge_mode == "concat":
            out = _core.concat([y, y_rev], -1)
        elif self.merge_mode == "sum":
            out = y + y_rev
        elif self.merge_mode == "ave":
            out = (y + y_rev) / 2.0
        elif self.merge_mode == "mul":
            out = y * y_rev
        else:
            out = [y, y_rev]
        if self.return_state:
            return (out if isinstance(out, list) else [out]) + states
        return out

    def reset_states(self, states=None):
        if not self.stateful:
            raise AttributeError("Layer must be stateful.")
        if states is None:
            self.forward_layer.reset_states()
            self.backward_layer.reset_states()
        else:
            half = len(states) // 2
            self.forward_layer.reset_states(states[:half])
            self.backward_layer.reset_states(states[half:])

    def get_config(self):
        from mixprec.keras.layers import serialize

        config = super().get_config()
        inner = serialize(self.forward_layer)
        inner["config"] = dict(inner["config"], name=self.forward_layer.name[len("forward_"):])
        inner["config"].pop("zero_output_for_mask", None)  # the wrapped layer's own config
        config["layer"] = inner
        config["merge_mode"] = self.merge_mode
        if self.backward_layer is not None and not self.backward_layer.name.startswith(
                "backward_"):
            config["backward_layer"] = serialize(self.backward_layer)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from mixprec.keras.layers import deserialize

        config = dict(config)
        layer = deserialize(config.pop("layer"), custom_objects=custom_objects)
        backward = config.pop("backward_layer", None)
        if backward is not None:
            backward = deserialize(backward, custom_objects=custom_objects)
        return cls(layer, backward_layer=backward, **config)
