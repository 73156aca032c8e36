"""Regularization layers beyond Dropout: ActivityRegularization, SpatialDropout1D/2D/3D (whole
feature maps dropped), GaussianNoise, GaussianDropout and AlphaDropout, with tf-keras 2.21's
arguments, configs and training-only behaviour. Noise comes from mixprec.random (the core's
Philox generator); the arithmetic is core ops."""

import math

from mixprec import _core, random as _random
from mixprec.keras import regularizers
from mixprec.keras.engine.base_layer import Layer
from mixprec.keras.engine.input_spec import InputSpec
from mixprec.keras.layers.core import Dropout
from mixprec.keras.utils import conv_utils

__all__ = ["ActivityRegularization", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D",
           "GaussianNoise",
           "GaussianDropout", "AlphaDropout"]


class ActivityRegularization(Layer):
    """The identity, adding ``l1 * sum(|x|) + l2 * sum(x**2)`` (per batch size) to the
    layer's losses."""

    def __init__(self, l1=0.0, l2=0.0, **kwargs):
        super().__init__(activity_regularizer=regularizers.L1L2(l1=l1, l2=l2), **kwargs)
        self.supports_masking = True
        self.l1 = l1
        self.l2 = l2

    def call(self, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(l1=self.l1, l2=self.l2)
        return config


class SpatialDropout1D(Dropout):
    """Dropout of whole channels of a (batch, steps, channels) input."""

    def __init__(self, rate, **kwargs):
        super().__init__(rate, **kwargs)
        self.input_spec = InputSpec(ndim=3)

    def _noise_shape(self, inputs):
        return [inputs.shape[0], 1, inputs.shape[2]]

    def call(self, inputs, training=None):
        if not training or self.rate == 0:
            return inputs
        return _drop(inputs, self.rate, self._noise_shape(inputs), self.seed)


class SpatialDropout2D(Dropout):
    """Dropout of whole feature maps of a 4-D input."""

    def __init__(self, rate, data_format=None, **kwargs):
        super().__init__(rate, **kwargs)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=4)

    def _noise_shape(self, inputs):
        s = inputs.shape
        if self.data_format == "channels_first":
            return [s[0], s[1], 1, 1]
        return [s[0], 1, 1, s[3]]

    def call(self, inputs, training=None):
        if not training or self.rate == 0:
            return inputs
        return _drop(inputs, self.rate, self._noise_shape(inputs), self.seed)

    # NOTE: tf-keras 2.21's config has no data_format (from_config restores the default)


class SpatialDropout3D(Dropout):
    """Dropout of whole feature volumes of a 5-D input."""

    def __init__(self, rate, data_format=None, **kwargs):
        super().__init__(rate, **kwargs)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=5)

    def _noise_shape(self, inputs):
        s = inputs.shape
        if self.data_format == "channels_first":
            return [s[0], s[1], 1, 1, 1]
        return [s[0], 1, 1, 1, s[4]]

    def call(self, inputs, training=None):
        if not training or self.rate == 0:
            return inputs
        return _drop(inputs, self.rate, self._noise_shape(inputs), self.seed)


def _drop(inputs, rate, noise_shape, seed):
    if rate >= 1:
        return inputs * 0
    keep = _random.uniform(noise_shape, 0, 1, "float32", seed) >= rate
    return inputs * (_core.cast(keep, inputs.dtype) * (1.0 / (1.0 - rate)))


class GaussianNoise(Layer):
    """Adds zero-mean Gaussian noise of ``stddev`` during training."""

    def __init__(self, stddev, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.stddev = stddev
        self.seed = seed

    def call(self, inputs, training=None):
        if not training:
            return inputs
        noise = _random.normal(list(inputs.shape), 0.0, self.stddev, inputs.dtype, self.seed)
        return inputs + noise

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(stddev=self.stddev, seed=self.seed)
        return config


class GaussianDropout(Layer):
    """Multiplies by Gaussian noise of mean 1 and stddev sqrt(rate / (1 - rate)) during
    training."""

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.rate = rate
        self.seed = seed

    def call(self, inputs, training=None):
        if not training or not 0 < self.rate < 1:
            return inputs
        stddev = math.sqrt(self.rate / (1.0 - self.rate))
        noise = _random.normal(list(inputs.shape), 1.0, stddev, inputs.dtype, self.seed)
        return inputs * noise

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(rate=self.rate, seed=self.seed)
        return config


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


class AlphaDropout(Layer):
    """Dropout that keeps SELU's self-normalisation: dropped units take SELU's negative
    saturation value, then an affine map restores the mean and variance."""

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.rate = rate
        self.noise_shape = noise_shape
        self.seed = seed

    def call(self, inputs, training=None):
        if not training or not 0 < self.rate < 1:
            return inputs
        shape = list(self.noise_shape) if self.noise_shape is not None else list(inputs.shape)
        shape = [inputs.shape[i] if d is None else d for i, d in enumerate(shape)]
        alpha_p = -_SELU_ALPHA * _SELU_SCALE
        kept = _core.cast(_random.uniform(shape, 0, 1, "float32", self.seed) >= self.rate,
                          inputs.dtype)
        a = ((1 - self.rate) * (1 + self.rate * alpha_p ** 2)) ** -0.5
        b = -a * alpha_p * self.rate
        x = inputs * kept + alpha_p * (1 - kept)
        return a * x + b

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(rate=self.rate, seed=self.seed)
        return config
