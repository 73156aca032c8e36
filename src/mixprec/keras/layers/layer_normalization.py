"""LayerNormalization as tf-keras 2.21: each sample normalized over ``axis`` (the last by
default), then scaled by gamma and shifted by beta (float32 variables under 16-bit
policies). The statistics and the normalization run in float32 for 16-bit inputs and the
result is rounded once to the compute dtype before gamma and beta are applied in it (the
fused path tf-keras takes for contiguous trailing axes). Core ops only."""

from mixprec import _core
from mixprec import nn as _nn
from mixprec.keras import constraints, initializers, regularizers
from mixprec.keras.engine.base_layer import Layer

__all__ = ["LayerNormalization"]


class LayerNormalization(Layer):
    """``gamma * (x - mean) / sqrt(var + epsilon) + beta`` with per-sample statistics over
    ``axis``."""

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 **kwargs):
        super().__init__(**kwargs)
        if isinstance(axis, (list, tuple)):
            self.axis = list(axis)
        elif isinstance(axis, int) and not isinstance(axis, bool):
            self.axis = axis
        else:
            raise TypeError("Expected an int or a list/tuple of ints for the argument 'axis', "
                            "but received: %r" % (axis,))
        self.epsilon = epsilon
        self.center = bool(center)
        self.scale = bool(scale)
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_constraint = constraints.get(gamma_constraint)
        self.supports_masking = True
        self.gamma = None
        self.beta = None

    def build(self, input_shape):
        shape = list(input_shape)
        ndims = len(shape)
        axes = self.axis if isinstance(self.axis, list) else [self.axis]
        for a in axes:
            if not -ndims <= a < ndims:
                raise ValueError("Invalid value for `axis` argument. Expected 0 <= axis < "
                                 "inputs.rank (with inputs.rank=%d). Received: axis=%s"
                                 % (ndims, self.axis))
        self.axis = sorted({a % ndims for a in axes})  # tf-keras keeps the positive axes
        param_shape = [shape[a] for a in self.axis]
        if self.scale:
            self.gamma = self.add_weight("gamma", param_shape, initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint, trainable=True)
        if self.center:
            self.beta = self.add_weight("beta", param_shape, initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint, trainable=True)
        self.built = True

    def call(self, inputs):
        inputs = _core.convert_to_tensor(inputs)
        dtype = inputs.dtype
        ndims = inputs.ndim
        x = _core.cast(inputs, "float32") if dtype.name in ("float16", "bfloat16") else inputs
        mean, variance = _nn.moments(x, self.axis, keepdims=True)
        out = (x - mean) * _core.rsqrt(variance + self.epsilon)
        out = _core.cast(out, dtype)
        broadcast = [1] * ndims
        for a in self.axis:
            broadcast[a] = inputs.shape[a]

        def param(v):
            v = _core.cast(_core.convert_to_tensor(v), dtype)
            return _core.reshape(v, broadcast) if self.axis != [ndims - 1] else v

        if self.gamma is not None:
            out = out * param(self.gamma)
        if self.beta is not None:
            out = out + param(self.beta)
        return out

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update(axis=self.axis, epsilon=self.epsilon, center=self.center,
                      scale=self.scale,
                      beta_initializer=initializers.serialize(self.beta_initializer),
                      gamma_initializer=initializers.serialize(self.gamma_initializer),
                      beta_regularizer=regularizers.serialize(self.beta_regularizer),
                      gamma_regularizer=regularizers.serialize(self.gamma_regularizer),
                      beta_constraint=constraints.serialize(self.beta_constraint),
                      gamma_constraint=constraints.serialize(self.gamma_constraint))
        return config
