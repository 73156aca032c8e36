"""TensorFlow's own initializers (``tf.constant_initializer``, ``tf.zeros_initializer``,
``tf.ones_initializer``, ``tf.random_normal_initializer``, ``tf.random_uniform_initializer``;
init_ops_v2), distinct from the Keras ones ``tf.initializers`` names.

A seeded random initializer draws ``stateless_*(seed=[seed, 0])`` (TensorFlow's rule, so
its values are TensorFlow's); an unseeded one draws from the op-seed sequence, new values
each call. The values come from the core's random ops; this module only checks arguments.
"""

import numpy as np

from mixprec import _core
from mixprec._dtypes import as_dtype, float32

__all__ = ["Initializer", "Zeros", "Ones", "Constant", "RandomUniform", "RandomNormal",
           "TruncatedNormal", "constant_initializer", "zeros_initializer", "ones_initializer",
           "random_normal_initializer", "random_uniform_initializer"]

_PARTITION_ARGS = ["partition_shape", "partition_offset"]


class Initializer:
    """``tf.initializers.Initializer`` of init_ops_v2: ``__call__(shape, dtype)``."""

    def __call__(self, shape, dtype=None, **kwargs):
        raise NotImplementedError("Initializer subclasses must implement the `__call__()` "
                                  "method.")

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config.pop("dtype", None)
        return cls(**config)

    @staticmethod
    def _shape(shape, kwargs):
        for k in kwargs:
            if k not in _PARTITION_ARGS:
                raise TypeError("Keyword argument should be one of %s. Received: %s"
                                % (_PARTITION_ARGS, k))
        shape = kwargs.get("partition_shape", shape)
        return [int(d) for d in (shape.as_list() if hasattr(shape, "as_list") else shape)]


class Zeros(Initializer):
    """Tensors of zeros (``tf.zeros_initializer``)."""

    def __call__(self, shape, dtype=float32, **kwargs):
        shape = self._shape(shape, kwargs)
        return _core.fill(shape, 0, _dtype_or_error(dtype))


class Ones(Initializer):
    """Tensors of ones (``tf.ones_initializer``)."""

    def __call__(self, shape, dtype=float32, **kwargs):
        shape = self._shape(shape, kwargs)
        return _core.fill(shape, 1, _dtype_or_error(dtype))


def _dtype_or_error(dtype):
    try:
        return as_dtype(dtype)
    except TypeError:
        raise ValueError("Argument `dtype` expected to be numeric or boolean. Received %s."
                         % (dtype,)) from None


class Constant(Initializer):
    """Tensors holding ``value`` (a scalar fills; a list or array must have the shape's
    number of elements); the dtype is the call's, else ``value``'s."""

    def __init__(self, value=0):
        if not (np.isscalar(value) or isinstance(value, (list, tuple, np.ndarray))):
            raise TypeError("Invalid type for initial value: %s. Expected Python scalar, "
                            "list or tuple of values, or numpy.ndarray." % type(value).__name__)
        self.value = value

    def __call__(self, shape, dtype=None, **kwargs):
        shape = self._shape(shape, kwargs)
        dtype = None if dtype is None else as_dtype(dtype)
        if dtype is None:
            return _core.constant(self.value, None, shape)
        return _core.constant(self.value, dtype, shape)

    def get_config(self):
        return {"value": self.value}


class _Random(Initializer):
    def _check(self, dtype, ints):
        dtype = as_dtype(dtype)
        if ints and not (dtype.is_floating or dtype.is_integer) or dtype.is_bool:
            raise ValueError("Argument `dtype` expected to be numeric or boolean. Received %s."
                             % (dtype,))
        if not ints and not dtype.is_floating:
            raise ValueError("Argument `dtype` is expected to be floating point. Received: "
                             "%s." % (dtype,))
        return dtype

    def get_config(self):
        return {k: getattr(self, k) for k in self._CONFIG}


class RandomUniform(_Random):
    """Uniform values in [minval, maxval) (``tf.random_uniform_initializer``)."""
    _CONFIG = ("minval", "maxval", "seed")

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape, dtype=float32, **kwargs):
        from mixprec import random
        shape = self._shape(shape, kwargs)
        dtype = self._check(dtype, True)
        if self.seed is not None:
            return random.stateless_uniform(shape, [int(self.seed), 0], self.minval,
                                            self.maxval, dtype)
        return random.uniform(shape, self.minval, self.maxval, dtype)


class RandomNormal(_Random):
    """Normal values (``tf.random_normal_initializer``)."""
    _CONFIG = ("mean", "stddev", "seed")

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=float32, **kwargs):
        from mixprec import random
        shape = self._shape(shape, kwargs)
        dtype = self._check(dtype, False)
        if self.seed is not None:
            return random.stateless_normal(shape, [int(self.seed), 0], self.mean, self.stddev,
                                           dtype)
        return random.normal(shape, self.mean, self.stddev, dtype)


class TruncatedNormal(_Random):
    """Normal values within two standard deviations."""
    _CONFIG = ("mean", "stddev", "seed")

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=float32, **kwargs):
        from mixprec import random
        shape = self._shape(shape, kwargs)
        dtype = self._check(dtype, False)
        if self.seed is not None:
            return random.stateless_truncated_normal(shape, [int(self.seed), 0], self.mean,
                                                     self.stddev, dtype)
        return random.truncated_normal(shape, self.mean, self.stddev, dtype)


constant_initializer = Constant
zeros_initializer = Zeros
ones_initializer = Ones
random_normal_initializer = RandomNormal
random_uniform_initializer = RandomUniform
