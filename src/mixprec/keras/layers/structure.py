"""Layers that only move elements: Identity, Permute (a transpose of the non-batch axes)
and RepeatVector ((batch, features) -> (batch, n, features)), with tf-keras 2.21's checks and
configs; core ops (transpose, broadcast) do the moving."""

from mixprec import _core
from mixprec.keras.engine.base_layer import Layer

__all__ = ["Identity", "Permute", "RepeatVector"]


class Identity(Layer):
    """Returns its input."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)  # tf-keras: supports_masking False; the input's mask stays

    def call(self, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)


class Permute(Layer):
    """Permutes the non-batch axes: ``dims`` counts them from 1, e.g. (2, 1)."""

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        self.dims = tuple(dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError("Invalid permutation argument `dims` for Permute Layer. The set of "
                             "indices in `dims` must be consecutive and start from 1. Received "
                             "dims=%s" % (dims,))

    def call(self, inputs):
        return _core.transpose(_core.convert_to_tensor(inputs), (0,) + self.dims)

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        return tuple([shape[0]] + [shape[d] for d in self.dims])

    def get_config(self):
        config = super().get_config()
        config["dims"] = self.dims
        return config


class RepeatVector(Layer):
    """Repeats a (batch, features) input ``n`` times: (batch, n, features)."""

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(n, int):
            raise TypeError("Expected an integer value for `n`, got %s." % (type(n),))
        self.n = n

    def call(self, inputs):
        x = _core.convert_to_tensor(inputs)
        if x.ndim != 2:
            raise ValueError("Input 0 of layer \"%s\" is incompatible with the layer: expected "
                             "ndim=2, found ndim=%d. Full shape received: %s"
                             % (self.name, x.ndim, tuple(x.shape)))
        x = _core.reshape(x, [x.shape[0], 1, x.shape[1]])
        return _core.broadcast_to(x, [x.shape[0], self.n, x.shape[2]])

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        if len(shape) != 2:
            raise ValueError("Input 0 of layer \"%s\" is incompatible with the layer: expected "
                             "ndim=2, found ndim=%d. Full shape received: %s"
                             % (self.name, len(shape), tuple(shape)))
        return (shape[0], self.n, shape[1])

    def get_config(self):
        config = super().get_config()
        config["n"] = self.n
        return config
