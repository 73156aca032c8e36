"""The ReLU layer (max_value, negative_slope, threshold) with tf-keras' checks and config;
the arithmetic is keras.activations.relu's (core ops)."""

import numpy as np

from mixprec.keras import activations
from mixprec.keras.engine.base_layer import Layer

__all__ = ["ReLU"]


class ReLU(Layer):
    """``max_value`` clips from above, inputs below ``threshold`` get
    ``negative_slope * (x - threshold)``."""

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        super().__init__(**kwargs)
        if max_value is not None and max_value < 0.0:
            raise ValueError("max_value of a ReLU layer cannot be a negative value. Received: %s"
                             % (max_value,))
        if negative_slope is None or negative_slope < 0.0:
            raise ValueError("negative_slope of a ReLU layer cannot be a negative value. "
                             "Received: %s" % (negative_slope,))
        if threshold is None or threshold < 0.0:
            raise ValueError("threshold of a ReLU layer cannot be a negative value. Received: %s"
                             % (threshold,))
        self.supports_masking = True
        # stored as floatx numbers, as tf-keras' backend.cast_to_floatx
        self.max_value = None if max_value is None else np.float32(max_value)
        self.negative_slope = np.float32(negative_slope)
        self.threshold = np.float32(threshold)

    def call(self, inputs):
        return activations.relu(inputs, alpha=float(self.negative_slope),
                                max_value=None if self.max_value is None else
                                float(self.max_value), threshold=float(self.threshold))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update(max_value=self.max_value, negative_slope=self.negative_slope,
                      threshold=self.threshold)
        return config
