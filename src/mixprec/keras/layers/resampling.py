"""Layers that crop, pad or upsample along the spatial axes: Cropping1D/2D, ZeroPadding1D,
UpSampling1D/2D (nearest, and bilinear with TensorFlow's half-pixel centres), with tf-keras
2.21's arguments, configs, shape arithmetic and errors. Elements are moved by core ops
(slicing, concat, gather); the only numbers made here are the bilinear source rows and
weights, which depend on the sizes alone."""

import numpy as np

from mixprec import _core
from mixprec._shape import TensorShape
from mixprec.keras.engine.base_layer import Layer
from mixprec.keras.engine.input_spec import InputSpec
from mixprec.keras.layers.reshaping import zero_pad
from mixprec.keras.utils import conv_utils

__all__ = ["Cropping1D", "Cropping2D", "ZeroPadding1D", "UpSampling1D", "UpSampling2D"]


def _crop(x, axis, before, after):
    n = x.shape[axis]
    index = [slice(None)] * x.ndim
    index[axis] = slice(before, n - after)
    return x[tuple(index)]


class Cropping1D(Layer):
    """Crops ``cropping = (start, end)`` steps off axis 1 of a (batch, steps, features)
    input."""

    def __init__(self, cropping=(1, 1), **kwargs):
        super().__init__(**kwargs)
        self.cropping = conv_utils.normalize_tuple(cropping, 2, "cropping", allow_zero=True)
        self.input_spec = InputSpec(ndim=3)

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        length = None if shape[1] is None else shape[1] - self.cropping[0] - self.cropping[1]
        return TensorShape([shape[0], length, shape[2]])

    def call(self, inputs):
        if inputs.shape[1] is not None and sum(self.cropping) >= inputs.shape[1]:
            raise ValueError(
                "cropping parameter of Cropping layer must be greater than the input shape. "
                "Received: inputs.shape=%s, and cropping=%s" % (tuple(inputs.shape),
                                                                self.cropping))
        return _crop(inputs, 1, *self.cropping)

    def get_config(self):
        config = super().get_config()
        config["cropping"] = self.cropping
        return config


class Cropping2D(Layer):
    """Crops rows and columns: ``cropping`` is an int, (sym_rows, sym_cols) or
    ((top, bottom), (left, right))."""

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = conv_utils.normalize_data_format(data_format)
        if isinstance(cropping, int) and not isinstance(cropping, bool):
            self.cropping = ((cropping, cropping), (cropping, cropping))
        elif hasattr(cropping, "__len__"):
            if len(cropping) != 2:
                raise ValueError("`cropping` should have two elements. Received: %s."
                                 % (cropping,))
            height = conv_utils.normalize_tuple(cropping[0], 2, "1st entry of cropping",
                                                allow_zero=True)
            width = conv_utils.normalize_tuple(cropping[1], 2, "2nd entry of cropping",
                                               allow_zero=True)
            self.cropping = (height, width)
        else:
            raise ValueError("`cropping` should be either an int, a tuple of 2 ints "
                             "(symmetric_height_crop, symmetric_width_crop), or a tuple of 2 "
                             "tuples of 2 ints ((top_crop, bottom_crop), (left_crop, "
                             "right_crop)). Received: %s." % (cropping,))
        self.input_spec = InputSpec(ndim=4)

    def _first(self):
        return 2 if self.data_format == "channels_first" else 1

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        first = self._first()
        for i in range(2):
            d = shape[first + i]
            shape[first + i] = None if d is None else d - sum(self.cropping[i])
        return TensorShape(shape)

    def call(self, inputs):
        first = self._first()
        for i in range(2):
            d = inputs.shape[first + i]
            if d is not None and sum(self.cropping[i]) >= d:
                raise ValueError(
                    "Argument `cropping` must be greater than the input shape. Received: "
                    "inputs.shape=%s, and cropping=%s" % (tuple(inputs.shape), self.cropping))
        x = _crop(inputs, first, *self.cropping[0])
        return _crop(x, first + 1, *self.cropping[1])

    def get_config(self):
        config = super().get_config()
        config.update(cropping=self.cropping, data_format=self.data_format)
        return config


class ZeroPadding1D(Layer):
    """Adds ``padding = (start, end)`` zero steps to axis 1 of (batch, steps, features)."""

    def __init__(self, padding=1, **kwargs):
        super().__init__(**kwargs)
        self.padding = conv_utils.normalize_tuple(padding, 2, "padding", allow_zero=True)
        self.input_spec = InputSpec(ndim=3)

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        if shape[1] is not None:
            shape[1] = shape[1] + self.padding[0] + self.padding[1]
        return TensorShape(shape)

    def call(self, inputs):
        return zero_pad(inputs, [(0, 0), tuple(self.padding), (0, 0)])

    def get_config(self):
        config = super().get_config()
        config["padding"] = self.padding
        return config


def _repeat(x, axis, n):
    """Each element of ``axis`` repeated ``n`` times in place (tf.repeat): a broadcast along
    a new axis after it, folded back."""
    if n == 1:
        return x
    shape = list(x.shape)
    expanded = _core.reshape(x, shape[:axis + 1] + [1] + shape[axis + 1:])
    tiled = _core.broadcast_to(expanded, shape[:axis + 1] + [n] + shape[axis + 1:])
    return _core.reshape(tiled, shape[:axis] + [shape[axis] * n] + shape[axis + 1:])


def _bilinear_axis(x, axis, n_out):
    """Linear interpolation along ``axis`` to ``n_out`` samples with half-pixel centres
    (tf.image.resize 'bilinear', no antialiasing): TensorFlow's source coordinate
    (o + 0.5) * in / out - 0.5, its floor and ceil clamped to the input."""
    n_in = x.shape[axis]
    src = (np.arange(n_out, dtype=np.float64) + 0.5) * (n_in / n_out) - 0.5
    low = np.floor(src)
    lerp = (src - low).astype(np.float32)
    lower = np.maximum(low, 0).astype(np.int32)
    upper = np.minimum(np.ceil(src), n_in - 1).astype(np.int32)
    x0 = _core.gather(x, _core.convert_to_tensor(lower), axis)
    x1 = _core.gather(x, _core.convert_to_tensor(upper), axis)
    shape = [1] * x.ndim
    shape[axis] = n_out
    w = _core.reshape(_core.convert_to_tensor(lerp), shape)
    if w.dtype != x.dtype:
        w = _core.cast(w, x.dtype)
    return x0 + (x1 - x0) * w


class UpSampling1D(Layer):
    """Repeats each step ``size`` times along axis 1."""

    def __init__(self, size=2, **kwargs):
        super().__init__(**kwargs)
        self.size = int(size)
        self.input_spec = InputSpec(ndim=3)

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        size = self.size * shape[1] if shape[1] is not None else None
        return TensorShape([shape[0], size, shape[2]])

    def call(self, inputs):
        return _repeat(inputs, 1, self.size)

    def get_config(self):
        config = super().get_config()
        config["size"] = self.size
        return config


_INTERPOLATIONS = ("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian",
                   "mitchellcubic")


class UpSampling2D(Layer):
    """Repeats rows and columns ``size`` times ('nearest') or interpolates them
    ('bilinear')."""

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        super().__init__(**kwargs)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.size = conv_utils.normalize_tuple(size, 2, "size")
        if interpolation not in _INTERPOLATIONS:
            raise NotImplementedError(
                "Value not recognized for `interpolation`: %s. Supported values are: "
                "dict_keys(%s)" % (interpolation, list(_INTERPOLATIONS)))
        if interpolation not in ("nearest", "bilinear"):
            raise NotImplementedError(
                "mixprec: UpSampling2D(interpolation=%r) is not supported; 'nearest' and "
                "'bilinear' are" % (interpolation,))
        self.interpolation = interpolation
        self.input_spec = InputSpec(ndim=4)

    def _first(self):
        return 2 if self.data_format == "channels_first" else 1

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        first = self._first()
        for i in range(2):
            d = shape[first + i]
            shape[first + i] = None if d is None else d * self.size[i]
        return TensorShape(shape)

    def call(self, inputs):
        first = self._first()
        if self.interpolation == "nearest":
            return _repeat(_repeat(inputs, first, self.size[0]), first + 1, self.size[1])
        # tf.image.resize computes bilinear in float32 and returns float32 whatever the
        # input (float16 under mixed_float16, or float64, gives float32, as tf-keras)
        x = inputs if inputs.dtype.name == "float32" else _core.cast(inputs, "float32")
        x = _bilinear_axis(x, first, x.shape[first] * self.size[0])
        return _bilinear_axis(x, first + 1, x.shape[first + 1] * self.size[1])

    def _symbolic_dtype(self, input_dtype):
        dt = super()._symbolic_dtype(input_dtype)
        if self.interpolation == "bilinear" and dt.is_floating:
            from mixprec._dtypes import as_dtype

            return as_dtype("float32")
        return dt

    def get_config(self):
        config = super().get_config()
        config.update(size=self.size, data_format=self.data_format,
                      interpolation=self.interpolation)
        return config
