"""MaxPooling3D and AveragePooling3D (aliases MaxPool3D, AvgPool3D) as tf-keras 2.21: the
2-D pooling op over the rows and columns of each depth slice, then a maximum or a mean over
the ``pool_size[0]`` strided depth slices of the result ('same' depth padding: the lowest
finite value for max, zeros and a per-output count of the real slices for the mean, so
windows divide by their non-padded elements as TensorFlow's). Core ops only."""

import numpy as np

from mixprec import _core
from mixprec._shape import TensorShape
from mixprec import nn as _nn
from mixprec.keras.engine.base_layer import Layer
from mixprec.keras.engine.input_spec import InputSpec
from mixprec.keras.utils import conv_utils

__all__ = ["MaxPooling3D", "AveragePooling3D", "MaxPool3D", "AvgPool3D"]


class _Pooling3D(Layer):
    _MAX = True

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(**kwargs)
        if strides is None:
            strides = pool_size
        self.pool_size = conv_utils.normalize_tuple(pool_size, 3, "pool_size")
        self.strides = conv_utils.normalize_tuple(strides, 3, "strides", allow_zero=True)
        self.padding = conv_utils.normalize_padding(padding)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=5)

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        first = 2 if self.data_format == "channels_first" else 1
        for i in range(3):
            shape[first + i] = conv_utils.conv_output_length(
                shape[first + i], self.pool_size[i], self.padding, self.strides[i])
        if any(d is not None and d <= 0 for d in shape[first:first + 3]):
            raise ValueError(
                "Computed output size would be negative. Received: inputs.shape=%s, "
                "pool_size=%s, strides=%s, padding='%s'." % (tuple(input_shape), self.pool_size,
                                                             self.strides, self.padding))
        return TensorShape(shape)

    def build(self, input_shape):
        if not all(self.strides):
            raise ValueError("The `strides` of %s cannot contain 0(s). Received: strides=%s"
                             % (self.name, self.strides))
        self.compute_output_shape(input_shape)
        self.built = True

    def call(self, inputs):
        x = inputs
        if self.data_format == "channels_first":
            x = _core.transpose(x, [0, 2, 3, 4, 1])
        n, d, h, w, c = x.shape
        kd, kh, kw = self.pool_size
        sd, sh, sw = self.strides
        if self.padding == "same":
            out_d = -(-d // sd)
            total = max((out_d - 1) * sd + kd - d, 0)
            before, after = total // 2, total - total // 2
        else:
            out_d = (d - kd + sd) // sd
            before = after = 0
        # (N * D, H, W, C) pooled over rows and columns, back to (N, D, H', W', C)
        pool2d = _nn.max_pool2d if self._MAX else _nn.avg_pool2d
        y = pool2d(_core.reshape(x, [n * d, h, w, c]), [kh, kw], [sh, sw],
                   self.padding.upper())
        y = _core.reshape(y, [n, d] + list(y.shape[1:]))
        if before or after:
            fill = float("-inf") if self._MAX else 0.0  # padding never wins a max
            parts = [y]
            if before:
                parts.insert(0, _core.fill([n, before] + list(y.shape[2:]), fill, y.dtype))
            if after:
                parts.append(_core.fill([n, after] + list(y.shape[2:]), fill, y.dtype))
            y = _core.concat(parts, 1)
        out = None
        for i in range(kd):  # one strided depth slice per window offset
            s = y[:, i:i + (out_d - 1) * sd + 1:sd]
            out = s if out is None else (_core.maximum(out, s) if self._MAX else out + s)
        if not self._MAX:
            # the real (non-padded) depth slices under each window
            starts = np.arange(out_d) * sd - before
            count = np.minimum(starts + kd, d) - np.maximum(starts, 0)
            inv = _core.cast(_core.constant((1.0 / count).astype(np.float32)), out.dtype)
            out = out * _core.reshape(inv, [1, out_d, 1, 1, 1])
        if self.data_format == "channels_first":
            out = _core.transpose(out, [0, 4, 1, 2, 3])
        return out

    def get_config(self):
        config = super().get_config()
        config.update(pool_size=self.pool_size, padding=self.padding, strides=self.strides,
                      data_format=self.data_format)
        return config


class MaxPooling3D(_Pooling3D):
    """Max over ``pool_size`` windows of depth, rows and columns."""

    _MAX = True


class AveragePooling3D(_Pooling3D):
    """Mean over ``pool_size`` windows ('same': over the non-padded elements)."""

    _MAX = False


MaxPool3D, AvgPool3D = MaxPooling3D, AveragePooling3D
