"""``keras.layers.Masking``: zeroes the timesteps whose features all equal ``mask_value`` and
masks them for the layers downstream (the mask rides on the output as ``_keras_mask``, see
keras/engine/masking.py). Core ops (not_equal, reduce_any, multiply) compute it."""

from mixprec import _core
from mixprec.keras.engine.base_layer import Layer

__all__ = ["Masking"]


class Masking(Layer):
    """Masks a timestep when all its features equal ``mask_value`` (default 0.0)."""

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.mask_value = mask_value
        self._compute_output_and_mask_jointly = True
        self._creates_masks = True

    def _keep(self, inputs, keepdims):
        value = _core.cast(_core.constant(self.mask_value), inputs.dtype)
        return _core.reduce_any(_core.not_equal(inputs, value), [-1 % inputs.ndim], keepdims)

    def compute_mask(self, inputs, mask=None):
        return self._keep(inputs, False)

    def call(self, inputs):
        keep = self._keep(inputs, True)
        outputs = inputs * _core.cast(keep, inputs.dtype)
        outputs._keras_mask = _core.reshape(keep, list(keep.shape)[:-1])
        return outputs

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config["mask_value"] = self.mask_value
        return config
