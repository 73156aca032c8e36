"""Activation layers beyond ReLU: Softmax (its output keeps its logits for the
cross-entropies, as keras.activations.softmax), LeakyReLU and ELU, with tf-keras 2.21's
defaults and configs; the arithmetic is keras.activations' (core ops)."""

import numpy as np

from mixprec import _core
from mixprec.keras import activations
from mixprec.keras.engine.base_layer import Layer

__all__ = ["Softmax", "LeakyReLU", "ELU"]


class Softmax(Layer):
    """softmax over ``axis`` (default -1)."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.axis = axis

    def call(self, inputs, mask=None):
        inputs = _core.convert_to_tensor(inputs)
        if mask is not None:
            # masked positions get a large negative logit (tf-keras: float16's min, else -1e9)
            big = -65504.0 if inputs.dtype.name == "float16" else -1e9
            adder = (1.0 - _core.cast(mask, inputs.dtype)) * \
                _core.cast(_core.constant(big), inputs.dtype)
            inputs = inputs + adder
        if isinstance(self.axis, (tuple, list)):
            # several axes: exp(x - max) / sum, as tf-keras
            shifted = inputs - _core.reduce_max(inputs, list(self.axis), True)
            e = _core.exp(shifted)
            return e / _core.reduce_sum(e, list(self.axis), True)
        return activations.softmax(inputs, axis=self.axis)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config["axis"] = self.axis
        return config


class LeakyReLU(Layer):
    """x where x >= 0, ``alpha * x`` below (default alpha 0.3)."""

    def __init__(self, alpha=0.3, **kwargs):
        super().__init__(**kwargs)
        if alpha is None:
            raise ValueError("The alpha value of a Leaky ReLU layer cannot be None. Expecting a "
                             "float. Received: %s" % (alpha,))
        self.supports_masking = True
        self.alpha = np.float32(alpha)  # tf-keras' backend.cast_to_floatx

    def call(self, inputs):
        return activations.relu(inputs, alpha=float(self.alpha))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config["alpha"] = float(self.alpha)
        return config


class ELU(Layer):
    """x where x > 0, ``alpha * (exp(x) - 1)`` below (default alpha 1.0)."""

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        if alpha is None:
            raise ValueError("Alpha of an ELU layer cannot be None, expecting a float. "
                             "Received: %s" % (alpha,))
        self.supports_masking = True
        self.alpha = np.float32(alpha)

    def call(self, inputs):
        return activations.elu(inputs, alpha=float(self.alpha))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config["alpha"] = float(self.alpha)
        return config
