"""The Rescaling preprocessing layer: ``inputs * scale + offset`` in the layer's compute
dtype (tf-keras 2.21's config); one multiply and one add of the core."""

from mixprec import _core
from mixprec.keras.engine.base_layer import Layer

__all__ = ["Rescaling"]


class Rescaling(Layer):
    """``inputs * scale + offset``, e.g. ``Rescaling(1. / 255)`` for pixel values."""

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale
        self.offset = offset

    def call(self, inputs):
        inputs = _core.convert_to_tensor(inputs)
        dtype = self.compute_dtype or inputs.dtype
        scale = _core.cast(_core.convert_to_tensor(self.scale), dtype)
        offset = _core.cast(_core.convert_to_tensor(self.offset), dtype)
        return _core.cast(inputs, dtype) * scale + offset

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update(scale=self.scale, offset=self.offset)
        return config
