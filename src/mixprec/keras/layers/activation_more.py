"""PReLU (a learned slope per input element, shared along ``shared_axes``) and
ThresholdedReLU (x where x > theta, else 0), with tf-keras 2.21's arguments, weights and
configs; the arithmetic is core ops (relu, multiply, compare)."""

import numpy as np

from mixprec import _core
from mixprec.keras import constraints, initializers, regularizers
from mixprec.keras.engine.base_layer import Layer
from mixprec.keras.engine.input_spec import InputSpec

__all__ = ["PReLU", "ThresholdedReLU"]


class PReLU(Layer):
    """``relu(x) - alpha * relu(-x)`` with a trainable ``alpha`` of the input's shape (less
    the batch), of size 1 along ``shared_axes``."""

    def __init__(self, alpha_initializer="zeros", alpha_regularizer=None, alpha_constraint=None,
                 shared_axes=None, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.alpha_initializer = initializers.get(alpha_initializer)
        self.alpha_regularizer = regularizers.get(alpha_regularizer)
        self.alpha_constraint = constraints.get(alpha_constraint)
        if shared_axes is None:
            self.shared_axes = None
        elif not isinstance(shared_axes, (list, tuple)):
            self.shared_axes = [shared_axes]
        else:
            self.shared_axes = list(shared_axes)
        self.alpha = None

    def build(self, input_shape):
        param_shape = list(input_shape[1:])
        if self.shared_axes is not None:
            for i in self.shared_axes:
                param_shape[i - 1] = 1
        if any(d is None for d in param_shape):
            raise ValueError("The non-shared dimensions of the input of PReLU must be defined; "
                             "got input shape %s (shared_axes=%s)"
                             % (tuple(input_shape), self.shared_axes))
        self.alpha = self.add_weight("alpha", tuple(param_shape),
                                     initializer=self.alpha_initializer,
                                     regularizer=self.alpha_regularizer,
                                     constraint=self.alpha_constraint)
        axes = {}
        if self.shared_axes:
            for i in range(1, len(input_shape)):
                if i not in self.shared_axes:
                    axes[i] = input_shape[i]
        self.input_spec = InputSpec(ndim=len(input_shape), axes=axes)
        self.built = True

    def call(self, inputs):
        pos = _core.relu(inputs)
        neg = -self.alpha * _core.relu(-inputs)
        return pos + neg

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(alpha_initializer=initializers.serialize(self.alpha_initializer),
                      alpha_regularizer=regularizers.serialize(self.alpha_regularizer),
                      alpha_constraint=constraints.serialize(self.alpha_constraint),
                      shared_axes=self.shared_axes)
        return config


class ThresholdedReLU(Layer):
    """``x`` where ``x > theta``, 0 elsewhere (default theta 1.0)."""

    def __init__(self, theta=1.0, **kwargs):
        super().__init__(**kwargs)
        if theta is None:
            raise ValueError("Theta of a Thresholded ReLU layer cannot be None, expecting a "
                             "float. Received: %s" % (theta,))
        if theta < 0:
            raise ValueError("The theta value of a Thresholded ReLU layer should be >=0. "
                             "Received: %s" % (theta,))
        self.supports_masking = True
        self.theta = np.float32(theta)  # tf-keras' backend.cast_to_floatx

    def call(self, inputs):
        theta = _core.cast(_core.constant(float(self.theta)), inputs.dtype)
        return inputs * _core.cast(_core.greater(inputs, theta), inputs.dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config["theta"] = float(self.theta)
        return config
