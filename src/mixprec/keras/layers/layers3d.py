"""The 3-D shape layers of tf-keras 2.21: ZeroPadding3D, Cropping3D, UpSampling3D (nearest)
and GlobalAveragePooling3D/GlobalMaxPooling3D, with tf-keras' arguments, configs and shape
arithmetic; the element moves are resampling.py's helpers and core reductions."""

from mixprec._shape import TensorShape
from mixprec.keras.engine.base_layer import Layer
from mixprec.keras.engine.input_spec import InputSpec
from mixprec.keras.layers.pooling import _GlobalPooling
from mixprec.keras.layers.reshaping import zero_pad
from mixprec.keras.layers.resampling import _crop, _repeat
from mixprec.keras.utils import conv_utils

__all__ = ["ZeroPadding3D", "Cropping3D", "UpSampling3D", "GlobalAveragePooling3D",
           "GlobalMaxPooling3D", "GlobalAvgPool3D", "GlobalMaxPool3D"]


def _pairs3(value, name, what):
    """An int, 3 ints (symmetric) or 3 pairs -> ((a, b), (c, d), (e, f))."""
    if isinstance(value, int) and not isinstance(value, bool):
        return ((value, value),) * 3
    if hasattr(value, "__len__"):
        if len(value) != 3:
            raise ValueError("`%s` should have 3 elements. Received: %s." % (name, value))
        return tuple(conv_utils.normalize_tuple(v, 2, "%s entry of %s" % (o, name),
                                                allow_zero=True)
                     for v, o in zip(value, ("1st", "2nd", "3rd")))
    raise ValueError("`%s` should be either an int, a tuple of 3 ints (%s), or a tuple of 3 "
                     "tuples of 2 ints. Received: %s." % (name, what, value))


class _Spatial3D(Layer):
    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=5)

    def _first(self):
        return 2 if self.data_format == "channels_first" else 1


class ZeroPadding3D(_Spatial3D):
    """Zeros around the three spatial axes: an int, 3 ints or 3 pairs."""

    def __init__(self, padding=(1, 1, 1), data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.padding = _pairs3(padding, "padding", "symmetric_dim1_pad, symmetric_dim2_pad, "
                                                   "symmetric_dim3_pad")

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        first = self._first()
        for i in range(3):
            d = shape[first + i]
            shape[first + i] = None if d is None else d + sum(self.padding[i])
        return TensorShape(shape)

    def call(self, inputs):
        pads = [(0, 0)] * 5
        first = self._first()
        for i in range(3):
            pads[first + i] = self.padding[i]
        return zero_pad(inputs, pads)

    def get_config(self):
        config = super().get_config()
        config.update(padding=self.padding, data_format=self.data_format)
        return config


class Cropping3D(_Spatial3D):
    """Crops the three spatial axes: an int, 3 ints or 3 pairs."""

    def __init__(self, cropping=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.cropping = _pairs3(cropping, "cropping", "symmetric_dim1_crop, "
                                                      "symmetric_dim2_crop, symmetric_dim3_crop")

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        first = self._first()
        for i in range(3):
            d = shape[first + i]
            shape[first + i] = None if d is None else d - sum(self.cropping[i])
        return TensorShape(shape)

    def call(self, inputs):
        first = self._first()
        for i in range(3):
            d = inputs.shape[first + i]
            if d is not None and sum(self.cropping[i]) >= d:
                raise ValueError("Argument `cropping` must be greater than the input shape. "
                                 "Received: inputs.shape=%s, and cropping=%s"
                                 % (tuple(inputs.shape), self.cropping))
        x = inputs
        for i in range(3):
            x = _crop(x, first + i, *self.cropping[i])
        return x

    def get_config(self):
        config = super().get_config()
        config.update(cropping=self.cropping, data_format=self.data_format)
        return config


class UpSampling3D(_Spatial3D):
    """Repeats the three spatial axes ``size`` times (nearest)."""

    def __init__(self, size=(2, 2, 2), data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.size = conv_utils.normalize_tuple(size, 3, "size")

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        first = self._first()
        for i in range(3):
            d = shape[first + i]
            shape[first + i] = None if d is None else d * self.size[i]
        return TensorShape(shape)

    def call(self, inputs):
        first = self._first()
        x = inputs
        for i in range(3):
            x = _repeat(x, first + i, self.size[i])
        return x

    def get_config(self):
        config = super().get_config()
        config.update(size=self.size, data_format=self.data_format)
        return config


class GlobalAveragePooling3D(_GlobalPooling):
    _RANK, _REDUCE = 3, "reduce_mean"


class GlobalMaxPooling3D(_GlobalPooling):
    _RANK, _REDUCE = 3, "reduce_max"


GlobalAvgPool3D, GlobalMaxPool3D = GlobalAveragePooling3D, GlobalMaxPooling3D
