"""Pooling layers: Max/AveragePooling1D/2D (and their MaxPool2D-style aliases) and the
global poolings, with tf-keras' arguments, configs, shape arithmetic and errors. Window
pooling is mixprec.nn's (the core's kernels); global pooling is a core reduction."""

from mixprec import _core
from mixprec._shape import TensorShape
from mixprec import nn as _nn
from mixprec.keras.engine.base_layer import Layer
from mixprec.keras.engine.input_spec import InputSpec
from mixprec.keras.utils import conv_utils

__all__ = ["MaxPooling1D", "MaxPooling2D", "AveragePooling1D", "AveragePooling2D",
           "MaxPool1D", "MaxPool2D", "AvgPool1D", "AvgPool2D", "GlobalAveragePooling1D",
           "GlobalAveragePooling2D", "GlobalMaxPooling1D", "GlobalMaxPooling2D",
           "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalMaxPool1D", "GlobalMaxPool2D"]


class _Pooling(Layer):
    """Windows of ``pool_size`` every ``strides`` (default: pool_size) over the spatial
    axes of a rank ``rank + 2`` input."""

    _RANK = 2

    def __init__(self, pool_function, pool_size, strides, padding="valid", data_format=None,
                 name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        rank = self._RANK
        if data_format is None:
            data_format = "channels_last" if rank == 1 else None
        if strides is None:
            strides = pool_size
        self.pool_function = pool_function
        self.pool_size = conv_utils.normalize_tuple(pool_size, rank, "pool_size")
        # tf-keras accepts zero strides here; the call refuses them (build below)
        self.strides = conv_utils.normalize_tuple(strides, rank, "strides", allow_zero=True)
        self.padding = conv_utils.normalize_padding(padding)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=rank + 2)

    def _check_call_args(self):
        if not all(self.strides):
            raise ValueError("The `strides` of %s cannot contain 0(s). Received: strides=%s"
                             % (self.name, self.strides))
        if self.padding not in ("valid", "same"):
            raise ValueError('The `padding` of %s must be one of "valid", "same". Received: %s'
                             % (self.name, self.padding))

    def compute_output_shape(self, input_shape):
        self._check_call_args()
        shape = list(input_shape)
        first = 2 if self.data_format == "channels_first" else 1
        for i in range(self._RANK):
            shape[first + i] = conv_utils.conv_output_length(
                shape[first + i], self.pool_size[i], self.padding, self.strides[i])
        if any(d is not None and d < 0 for d in shape):
            self._negative_output(input_shape)
        return TensorShape(shape)

    def _negative_output(self, input_shape):
        raise ValueError(
            "Computed output size would be negative. Received: inputs.shape=%s, pool_size=%s, "
            "strides=%s, padding='%s'." % (tuple(input_shape), self.pool_size, self.strides,
                                           self.padding))

    def build(self, input_shape):
        out = self.compute_output_shape(input_shape)
        if any(d is not None and d <= 0 for d in out):
            self._negative_output(input_shape)
        self.built = True

    def call(self, inputs):
        fmt = conv_utils.tf_data_format(self.data_format, self._RANK + 2)
        return self.pool_function(inputs, list(self.pool_size), list(self.strides),
                                  self.padding.upper(), data_format=fmt)

    def get_config(self):
        config = super().get_config()
        if self._RANK == 1:  # tf-keras' key orders differ between 1-D and 2-D pooling
            config.update(strides=self.strides, pool_size=self.pool_size)
        else:
            config.update(pool_size=self.pool_size)
        config.update(padding=self.padding, strides=self.strides, data_format=self.data_format)
        return config


def _max_pool1d(x, ksize, strides, padding, data_format):
    return _nn.max_pool1d(x, ksize, strides, padding, data_format=data_format)


def _avg_pool1d(x, ksize, strides, padding, data_format):
    return _nn.avg_pool1d(x, ksize, strides, padding, data_format=data_format)


def _max_pool2d(x, ksize, strides, padding, data_format):
    return _nn.max_pool2d(x, ksize, strides, padding, data_format=data_format)


def _avg_pool2d(x, ksize, strides, padding, data_format):
    return _nn.avg_pool2d(x, ksize, strides, padding, data_format=data_format)


class MaxPooling1D(_Pooling):
    """Max over windows of ``pool_size`` steps (data_format defaults to channels_last)."""

    _RANK = 1

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format="channels_last",
                 **kwargs):
        super().__init__(_max_pool1d, pool_size, strides, padding, data_format, **kwargs)


class AveragePooling1D(_Pooling):
    """Mean over windows of ``pool_size`` steps ('same': over the non-padded ones)."""

    _RANK = 1

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format="channels_last",
                 **kwargs):
        super().__init__(_avg_pool1d, pool_size, strides, padding, data_format, **kwargs)


class MaxPooling2D(_Pooling):
    """Max over ``pool_size`` windows of rows and columns."""

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(_max_pool2d, pool_size, strides, padding, data_format, **kwargs)


class AveragePooling2D(_Pooling):
    """Mean over ``pool_size`` windows ('same': over the non-padded elements)."""

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(_avg_pool2d, pool_size, strides, padding, data_format, **kwargs)


class _GlobalPooling(Layer):
    """A reduction over every spatial axis; ``keepdims`` keeps them as size 1."""

    _RANK = 2
    _REDUCE = None

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        if data_format is None and self._RANK == 1:
            data_format = "channels_last"
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.keepdims = bool(keepdims)
        self.input_spec = InputSpec(ndim=self._RANK + 2)

    def _axes(self):
        first = 2 if self.data_format == "channels_first" else 1
        return list(range(first, first + self._RANK))

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        axes = self._axes()
        if self.keepdims:
            return TensorShape([1 if i in axes else d for i, d in enumerate(shape)])
        return TensorShape([d for i, d in enumerate(shape) if i not in axes])

    def call(self, inputs):
        reduce = getattr(_core, self._REDUCE)
        return reduce(inputs, self._axes(), self.keepdims)

    def get_config(self):
        config = super().get_config()
        config.update(data_format=self.data_format, keepdims=self.keepdims)
        return config


class GlobalAveragePooling1D(_GlobalPooling):
    """The mean over steps; with a mask, over the unmasked steps only."""

    _RANK, _REDUCE = 1, "reduce_mean"

    def __init__(self, data_format="channels_last", **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if mask is None:
            return super().call(inputs)
        steps_axis = 1 if self.data_format == "channels_last" else 2
        mask = _core.cast(mask, inputs.dtype)
        mask = _core.reshape(mask, list(mask.shape) + [1] if self.data_format ==
                             "channels_last" else [mask.shape[0], 1] + list(mask.shape[1:]))
        total = _core.reduce_sum(inputs * mask, [steps_axis], self.keepdims)
        return total / _core.reduce_sum(mask, [steps_axis], self.keepdims)

    def compute_mask(self, inputs, mask=None):
        return None


class GlobalMaxPooling1D(_GlobalPooling):
    _RANK, _REDUCE = 1, "reduce_max"

    def __init__(self, data_format="channels_last", keepdims=False, **kwargs):
        super().__init__(data_format=data_format, keepdims=keepdims, **kwargs)


class GlobalAveragePooling2D(_GlobalPooling):
    _RANK, _REDUCE = 2, "reduce_mean"


class GlobalMaxPooling2D(_GlobalPooling):
    _RANK, _REDUCE = 2, "reduce_max"


MaxPool1D, AvgPool1D, MaxPool2D, AvgPool2D = (MaxPooling1D, AveragePooling1D, MaxPooling2D,
                                              AveragePooling2D)
GlobalAvgPool1D, GlobalMaxPool1D = GlobalAveragePooling1D, GlobalMaxPooling1D
GlobalAvgPool2D, GlobalMaxPool2D = GlobalAveragePooling2D, GlobalMaxPooling2D
