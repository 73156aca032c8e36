"""UnitNormalization (x / its L2 norm over ``axis``) and GroupNormalization (statistics
per sample over groups of channels, then a per-channel gamma and beta), with tf-keras
2.21's arguments, weights, configs and errors. Statistics are mixprec.nn.moments (float16
computed in float32, as TensorFlow); the rest is core ops."""

from mixprec import _core
from mixprec import nn as _nn
from mixprec._nn_more import l2_normalize
from mixprec.keras import constraints, initializers, regularizers
from mixprec.keras.engine.base_layer import Layer
from mixprec.keras.engine.input_spec import InputSpec

__all__ = ["UnitNormalization", "GroupNormalization"]


class UnitNormalization(Layer):
    """Scales each sample to unit L2 norm over ``axis`` (an int or a list of ints)."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axis, (list, tuple)):
            self.axis = list(axis)
        elif isinstance(axis, int) and not isinstance(axis, bool):
            self.axis = axis
        else:
            raise TypeError("Invalid value for `axis` argument: expected an int or a list/tuple "
                            "of ints. Received: axis=%s" % (axis,))
        self.supports_masking = True

    def build(self, input_shape):
        rank = len(input_shape)
        for a in self.axis if isinstance(self.axis, list) else [self.axis]:
            if not -rank <= a < rank:
                raise ValueError("Invalid value for `axis` argument: %s for an input of rank %d"
                                 % (self.axis, rank))
        self.built = True

    def call(self, inputs):
        if inputs.dtype.name != self.compute_dtype:
            inputs = _core.cast(inputs, self.compute_dtype)
        axes = self.axis if isinstance(self.axis, list) else [self.axis]
        return l2_normalize(inputs, [a % inputs.ndim for a in axes])

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config["axis"] = self.axis
        return config


class GroupNormalization(Layer):
    """Normalizes each sample over groups of ``axis`` channels (``groups=-1``: one group per
    channel, InstanceNormalization)."""

    def __init__(self, groups=32, axis=-1, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.groups = groups
        self.axis = axis
        self.epsilon = epsilon
        self.center = center
        self.scale = scale
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_constraint = constraints.get(gamma_constraint)
        self.gamma = None
        self.beta = None

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        dim = input_shape[self.axis]
        if dim is None:
            raise ValueError("Axis %s of input tensor should have a defined dimension but the "
                             "layer received an input with shape %s." % (self.axis, input_shape))
        if self.groups == -1:
            self.groups = dim
        if dim < self.groups:
            raise ValueError("Number of groups (%s) cannot be more than the number of channels "
                             "(%s)." % (self.groups, dim))
        if dim % self.groups != 0:
            raise ValueError("Number of groups (%s) must be a multiple of the number of channels "
                             "(%s)." % (self.groups, dim))
        self.input_spec = InputSpec(ndim=len(input_shape), axes={self.axis: dim})
        if self.scale:
            self.gamma = self.add_weight("gamma", (dim,), initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint)
        if self.center:
            self.beta = self.add_weight("beta", (dim,), initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint)
        self.built = True

    def call(self, inputs):
        shape = list(inputs.shape)
        rank = len(shape)
        axis = self.axis % rank
        dim = shape[axis]
        # (..., C, ...) -> (..., groups, C // groups, ...)
        grouped_shape = shape[:axis] + [self.groups, dim // self.groups] + shape[axis + 1:]
        x = _core.reshape(inputs, grouped_shape)
        axes = [a for a in range(1, rank + 1) if a != axis]
        mean, variance = _nn.moments(x, axes, keepdims=True)
        wshape = [1] * (rank + 1)
        wshape[axis], wshape[axis + 1] = self.groups, dim // self.groups
        gamma = None if self.gamma is None else _core.reshape(self.gamma, wshape)
        beta = None if self.beta is None else _core.reshape(self.beta, wshape)
        y = _nn.batch_normalization(x, mean, variance, beta, gamma, self.epsilon)
        return _core.reshape(y, shape)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            groups=self.groups, axis=self.axis, epsilon=self.epsilon, center=self.center,
            scale=self.scale, beta_initializer=initializers.serialize(self.beta_initializer),
            gamma_initializer=initializers.serialize(self.gamma_initializer),
            beta_regularizer=regularizers.serialize(self.beta_regularizer),
            gamma_regularizer=regularizers.serialize(self.gamma_regularizer),
            beta_constraint=constraints.serialize(self.beta_constraint),
            gamma_constraint=constraints.serialize(self.gamma_constraint))
        return config
