"""Core layers: Dense, Activation, Dropout, Flatten, Reshape, Lambda (the layers behind
arithmetic on KerasTensors are tf_op_layer.py's)."""

from mixprec import _core, _static, random as _random
from mixprec._dtypes import as_dtype
from mixprec.keras import activations, constraints, initializers, regularizers
from mixprec.keras.engine.base_layer import Layer

__all__ = ["Dense", "Activation", "Dropout", "Flatten", "Reshape", "Lambda"]


def _shape_str(shape):
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + \
        ("," if len(shape) == 1 else "") + ")"


class Dense(Layer):
    """``activation(inputs @ kernel + bias)``, computed in the layer's compute dtype (float16
    under mixed_float16) with float32 variables read as float16."""

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        units = int(units) if not isinstance(units, int) else units
        if units <= 0:
            raise ValueError("Received an invalid value for `units`, expected a positive integer. "
                             "Received: units=%s" % (units,))
        self.units = units
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.kernel = None
        self.bias = None
        self.supports_masking = True

    def build(self, input_shape):
        if not as_dtype(self.dtype).is_floating:  # as tf-keras
            raise TypeError("Unable to build `Dense` layer with non-floating point dtype %s"
                            % (self.dtype,))
        last = input_shape[-1] if input_shape else None
        if last is None:
            raise ValueError("The last dimension of the inputs to a Dense layer should be "
                             "defined. Found None. Full input shape received: %s"
                             % (tuple(input_shape),))
        self.kernel = self.add_weight("kernel", (int(last), self.units),
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.units,), initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.built = True

    def call(self, inputs):
        if inputs.dtype.name != self.compute_dtype:  # integer inputs too, as tf-keras' Dense
            inputs = _core.cast(inputs, self.compute_dtype)
        relu = self.activation is activations.relu
        if inputs.ndim == 2 and self.use_bias and (relu or self.activation is activations.linear):
            # MatMul + bias (+ ReLU) as one op (TensorFlow's _FusedMatMul)
            return _core.matmul_bias_act(inputs, self.kernel, self.bias, False, False, int(relu))
        if inputs.ndim == 2:
            out = _core.matmul(inputs, self.kernel)
        else:
            shape = list(inputs.shape)
            flat = _core.reshape(inputs, [-1, shape[-1]])
            out = _core.reshape(_core.matmul(flat, self.kernel), shape[:-1] + [self.units])
            _static.declare(out, list(_static.shape(inputs))[:-1] + [self.units])
        if self.use_bias:
            out = out + self.bias
        return self.activation(out)

    def compute_output_shape(self, input_shape):
        input_shape = tuple(input_shape)
        if not input_shape or input_shape[-1] is None:
            raise ValueError("The last dimension of the input shape of a Dense layer should be "
                             "defined. Found None. Received: input_shape=%s" % (input_shape,))
        if self.kernel is not None and input_shape[-1] != self.kernel.shape[0]:
            raise ValueError(
                'Input 0 of layer "%s" is incompatible with the layer: expected axis -1 of input '
                "shape to have value %d, but received input with shape %s"
                % (self.name, self.kernel.shape[0], _shape_str(input_shape)))
        return input_shape[:-1] + (self.units,)

    def _symbolic_dtype(self, input_dtype):
        return as_dtype(self.compute_dtype)  # Dense casts integer inputs too

    def get_config(self):
        config = super().get_config()
        config.update(units=self.units, activation=activations.serialize(self.activation),
                      use_bias=self.use_bias,
                      kernel_initializer=initializers.serialize(self.kernel_initializer),
                      bias_initializer=initializers.serialize(self.bias_initializer))
        config.update(weight_configs(self))
        return config


def weight_configs(layer, prefixes=("kernel", "bias")):
    """The regularizer and constraint entries of a layer's config, in tf-keras' order."""
    config = {}
    for p in prefixes:
        config[p + "_regularizer"] = regularizers.serialize(getattr(layer, p + "_regularizer"))
    config["activity_regularizer"] = regularizers.serialize(layer.activity_regularizer)
    for p in prefixes:
        config[p + "_constraint"] = constraints.serialize(getattr(layer, p + "_constraint"))
    return config


class Activation(Layer):
    """Applies an activation function. ``Activation('linear', dtype='float32')`` is the
    guide's idiom to cast a model's output to float32."""

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config["activation"] = activations.serialize(self.activation)
        return config


class Dropout(Layer):
    """Zeroes a ``rate`` fraction of inputs during training and scales the rest by
    1 / (1 - rate); the identity at inference."""

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0 <= rate <= 1:
            raise ValueError("Invalid value received for argument `rate`. Expected a float value "
                             "between 0 and 1. Received: rate=%s" % (rate,))
        self.rate = float(rate)
        self.noise_shape = noise_shape
        self.seed = seed
        self.supports_masking = True

    def call(self, inputs, training=None):
        if not training or self.rate == 0:
            return inputs
        if self.rate == 1:
            return inputs * 0
        shape = list(self.noise_shape) if self.noise_shape is not None else list(inputs.shape)
        shape = [inputs.shape[i] if d is None else d for i, d in enumerate(shape)]
        keep = _random.uniform(shape, 0, 1, "float32", self.seed) >= self.rate
        scale = _core.cast(keep, inputs.dtype) * (1.0 / (1.0 - self.rate))
        return inputs * scale

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(rate=self.rate, noise_shape=self.noise_shape, seed=self.seed)
        return config


class Flatten(Layer):
    """Flattens every dimension but the batch: (B, 28, 28) -> (B, 784)."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format

    def get_config(self):
        config = super().get_config()
        config["data_format"] = self.data_format or "channels_last"
        return config

    def call(self, inputs):
        if inputs.ndim == 0:
            return _core.reshape(inputs, [1, 1])
        if inputs.ndim == 1:
            return _core.reshape(inputs, [inputs.shape[0], 1])
        # the trailing sizes, not -1: an empty batch (a replica's share of a last partial
        # batch) flattens to (0, rest), as TensorFlow's
        rest = 1
        for d in inputs.shape.as_list()[1:]:
            rest *= d
        static = _static.shape(inputs)
        return _static.declare(_core.reshape(inputs, [inputs.shape[0], rest]), [
            static[0], None if None in static[1:] else rest])

    def compute_output_shape(self, input_shape):
        n = 1
        for d in input_shape[1:]:
            n = None if d is None or n is None else n * d
        return (input_shape[0], n)


class Reshape(Layer):
    """Reshapes each sample to ``target_shape`` (one dimension may be -1)."""

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(target_shape)

    def call(self, inputs):
        out = _core.reshape(inputs, [inputs.shape[0]] + list(self.target_shape))
        static = _static.shape(inputs)
        open_rest = None in static[1:]
        return _static.declare(out, [static[0]] + [
            None if d == -1 and open_rest else out.shape[k + 1]
            for k, d in enumerate(self.target_shape)])

    def compute_output_shape(self, input_shape):
        input_shape = tuple(input_shape)
        target = list(self.target_shape)
        unknown = [i for i, d in enumerate(target) if d == -1]
        if len(unknown) > 1:
            raise ValueError("There must be at most one unknown dimension in output_shape. "
                             "Received: output_shape=%s." % (self.target_shape,))
        if unknown:
            known = 1
            for d in target:
                if d != -1:
                    known *= d
            total = 1
            for d in input_shape[1:]:
                total = None if d is None or total is None else total * d
            if total is None:
                target[unknown[0]] = None
            elif known == 0 or total % known:
                raise ValueError("total size of new array must be unchanged, input_shape = %s, "
                                 "output_shape = %s" % (list(input_shape[1:]),
                                                        list(self.target_shape)))
            else:
                target[unknown[0]] = total // known
        else:
            total = 1
            for d in input_shape[1:]:
                total = None if d is None or total is None else total * d
            want = 1
            for d in target:
                want *= d
            if total is not None and total != want:
                raise ValueError("total size of new array must be unchanged, input_shape = %s, "
                                 "output_shape = %s" % (list(input_shape[1:]),
                                                        list(self.target_shape)))
        return (input_shape[0],) + tuple(target)

    def get_config(self):
        config = super().get_config()
        config["target_shape"] = self.target_shape
        return config


class Lambda(Layer):
    """Wraps a function of tensors as a layer."""

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        self.function = function
        self._output_shape = output_shape
        self.arguments = dict(arguments or {})
        self.mask = mask
        self.supports_masking = True
        self._creates_masks = mask is not None
        import inspect

        try:
            params = inspect.signature(function).parameters
        except (TypeError, ValueError):
            params = {}
        self._fn_expects_training = "training" in params
        self._fn_expects_mask = "mask" in params

    def call(self, inputs, mask=None, training=None):
        kwargs = dict(self.arguments)
        if self._fn_expects_mask:
            kwargs["mask"] = mask
        if self._fn_expects_training:
            kwargs["training"] = training
        return self.function(inputs, **kwargs)

    def compute_mask(self, inputs, mask=None):
        """tf-keras: ``mask`` (a callable of (inputs, mask), or a fixed mask) when given,
        else the input mask passed on."""
        if callable(self.mask):
            return self.mask(inputs, mask)
        return self.mask if self.mask is not None else mask

    def get_config(self):
        """tf-keras' format: the function as code (keras/saving/serialization_lib.py)."""
        from mixprec.keras.saving import serialization_lib

        return serialization_lib.lambda_layer_config(self, super().get_config())

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """A lambda's code loads only outside safe mode (``safe_mode=False``), as tf-keras."""
        from mixprec.keras.saving import serialization_lib

        return serialization_lib.lambda_layer_from_config(cls, config, custom_objects)
