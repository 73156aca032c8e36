"""``keras.layers.TimeDistributed``: one layer applied to every temporal slice of a
(batch, time, ...) input, as one call on (batch * time, ...) folded back (tf-keras 2.21's
reshape path), with the wrapped layer's weights, its config nested, and masks passed per
slice. Reshapes only; the wrapped layer does the arithmetic."""

from mixprec import _core, _nest
from mixprec._shape import TensorShape
from mixprec.keras.engine.base_layer import Layer
from mixprec.keras.layers.wrappers import Wrapper

__all__ = ["TimeDistributed"]


class TimeDistributed(Wrapper):
    """Applies ``layer`` to every index of axis 1."""

    def __init__(self, layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError("Please initialize `TimeDistributed` layer with a "
                             "`tf.keras.layers.Layer` instance. Received: %s" % (layer,))
        super().__init__(**kwargs)
        self.layer = layer
        self.supports_masking = True

    def _check_rank(self, input_shape):
        if len(input_shape) < 3:
            raise ValueError("`TimeDistributed` Layer should be passed an `input_shape ` with "
                             "at least 3 dimensions, received: %s" % (tuple(input_shape),))

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        self._check_rank(input_shape)
        child = (input_shape[0],) + input_shape[2:]
        if not self.layer.built:
            from mixprec.keras.engine import base_layer

            with base_layer._NameScope(self.layer):
                self.layer.build(TensorShape(list(child)))
            self.layer.built = True
        self.built = True

    def compute_output_shape(self, input_shape):
        input_shape = tuple(input_shape)
        self._check_rank(input_shape)
        child = self.layer.compute_output_shape(TensorShape([input_shape[0]] +
                                                            list(input_shape[2:])))
        child = list(child)
        return TensorShape([child[0], input_shape[1]] + child[1:])

    def call(self, inputs, training=None, mask=None):
        shape = list(inputs.shape)
        self._check_rank(shape)
        batch, steps = shape[0], shape[1]
        x = _core.reshape(inputs, [batch * steps] + shape[2:])
        kwargs = {}
        from mixprec.keras.engine.base_layer import Layer as _Layer

        accepts_training, accepts_mask = _Layer._CALL_ACCEPTS.get(type(self.layer),
                                                                  (False, False))
        if accepts_training:
            kwargs["training"] = training
        if accepts_mask and mask is not None:
            kwargs["mask"] = _core.reshape(mask, [batch * steps] + list(mask.shape[2:]))
        y = self.layer(x, **kwargs)
        return _nest.map_structure(
            lambda t: _core.reshape(t, [batch, steps] + list(t.shape[1:])), y)

    def compute_mask(self, inputs, mask=None):
        """The input mask, or the wrapped layer's per-slice mask folded back (tf-keras)."""
        shape = list(inputs.shape)
        batch, steps = shape[0], shape[1]
        x = _core.reshape(inputs, [batch * steps] + shape[2:])
        inner_mask = None if mask is None else \
            _core.reshape(mask, [batch * steps] + list(mask.shape[2:]))
        if not self.layer.supports_masking:
            return mask
        out = self.layer.compute_mask(x, inner_mask)
        if out is None:
            return mask
        out = _core.reshape(out, [batch, steps] + list(out.shape[1:]))
        if mask is not None:
            out = _core.logical_and(out, _core.cast(mask, "bool")) if \
                len(out.shape) == len(mask.shape) else out
        return out

    def get_config(self):
        from mixprec.keras.layers import serialize

        config = super().get_config()
        config["layer"] = serialize(self.layer)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from mixprec.keras.layers import deserialize

        config = dict(config)
        layer = deserialize(config.pop("layer"), custom_objects=custom_objects) \
            if custom_objects else deserialize(config.pop("layer"))
        return cls(layer, **config)
