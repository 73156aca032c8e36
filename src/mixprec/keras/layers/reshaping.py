"""Padding layers (ZeroPadding2D) and ``zero_pad``, the zero border that causal
convolution and ZeroPadding2D share. The border is made by the core's concat of zero
tensors (differentiable on the tape); no element is touched in Python."""

from mixprec import _core
from mixprec._shape import TensorShape
from mixprec.keras.engine.base_layer import Layer
from mixprec.keras.engine.input_spec import InputSpec
from mixprec.keras.utils import conv_utils

__all__ = ["ZeroPadding2D", "zero_pad"]


def zero_pad(x, pads):
    """``x`` with ``pads[i] = (before, after)`` zeros along each axis i."""
    for axis, (before, after) in enumerate(pads):
        if not before and not after:
            continue
        parts = []
        shape = list(x.shape)
        if before:
            shape[axis] = before
            parts.append(_core.fill(list(shape), 0, x.dtype))
        parts.append(x)
        if after:
            shape[axis] = after
            parts.append(_core.fill(list(shape), 0, x.dtype))
        x = _core.concat(parts, axis)
    return x


class ZeroPadding2D(Layer):
    """Adds rows and columns of zeros: ``padding`` is an int, (sym_rows, sym_cols) or
    ((top, bottom), (left, right))."""

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = conv_utils.normalize_data_format(data_format)
        if isinstance(padding, int) and not isinstance(padding, bool):
            self.padding = ((padding, padding), (padding, padding))
        elif hasattr(padding, "__len__"):
            if len(padding) != 2:
                raise ValueError("`padding` should have two elements. Received: %s."
                                 % (padding,))
            rows = conv_utils.normalize_tuple(padding[0], 2, "1st entry of padding",
                                              allow_zero=True)
            cols = conv_utils.normalize_tuple(padding[1], 2, "2nd entry of padding",
                                              allow_zero=True)
            self.padding = (rows, cols)
        else:
            raise ValueError("`padding` should be either an int, a tuple of 2 ints "
                             "(symmetric_height_pad, symmetric_width_pad), or a tuple of 2 "
                             "tuples of 2 ints ((top_pad, bottom_pad), (left_pad, right_pad)). "
                             "Received: %s." % (padding,))
        self.input_spec = InputSpec(ndim=4)

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        first = 2 if self.data_format == "channels_first" else 1
        for i in range(2):
            d = shape[first + i]
            shape[first + i] = None if d is None else d + sum(self.padding[i])
        return TensorShape(shape)

    def call(self, inputs):
        first = 2 if self.data_format == "channels_first" else 1
        pads = [(0, 0)] * 4
        pads[first], pads[first + 1] = self.padding
        return zero_pad(inputs, pads)

    def get_config(self):
        config = super().get_config()
        config.update(padding=self.padding, data_format=self.data_format)
        return config
