"""``keras.layers.Wrapper`` (the base of layers that wrap one other layer:
TimeDistributed, Bidirectional, SpectralNormalization) and ``SpectralNormalization``
(the wrapped kernel divided by its largest singular value, estimated by power iteration
during training, as tf-keras 2.21). Core ops only."""

from mixprec import _core
from mixprec.keras.engine.base_layer import Layer

__all__ = ["Wrapper", "SpectralNormalization"]


class Wrapper(Layer):
    """Base of the layers that wrap ``layer``; its config nests the wrapped layer's."""

    def __init__(self, layer=None, **kwargs):
        if layer is not None and not isinstance(layer, Layer):
            raise ValueError("Please initialize `Wrapper` layer with a `tf.keras.layers.Layer`"
                             " instance. Received: %s" % (layer,))
        super().__init__(**kwargs)
        if layer is not None:
            self.layer = layer

    def build(self, input_shape=None):
        layer = getattr(self, "layer", None)
        if layer is not None and not layer.built:
            layer.build(input_shape)
            layer.built = True
        self.built = True

    def get_config(self):
        from mixprec.keras.layers import serialize
        config = super().get_config()
        if getattr(self, "layer", None) is not None:
            config["layer"] = serialize(self.layer)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from mixprec.keras.layers import deserialize
        config = dict(config)
        config["layer"] = deserialize(config["layer"], custom_objects=custom_objects)
        return cls(**config)


class SpectralNormalization(Wrapper):
    """Divides the wrapped layer's ``kernel`` (or ``embeddings``) by its spectral norm at
    each training call; ``vector_u`` (non-trainable) carries the power iteration."""

    def __init__(self, layer, power_iterations=1, **kwargs):
        super().__init__(layer, **kwargs)
        if power_iterations <= 0:
            raise ValueError("`power_iterations` should be greater than zero. Received: "
                             "`power_iterations=%s`" % (power_iterations,))
        self.power_iterations = power_iterations

    def build(self, input_shape):
        from mixprec.keras import initializers
        super().build(input_shape)
        if hasattr(self.layer, "kernel"):
            self.kernel = self.layer.kernel
        elif hasattr(self.layer, "embeddings"):
            self.kernel = self.layer.embeddings
        else:
            raise ValueError("%s object has no attribute 'kernel' nor 'embeddings'"
                             % type(self.layer).__name__)
        self.kernel_shape = list(self.kernel.shape)
        self.vector_u = self.add_weight(
            shape=(1, self.kernel_shape[-1]),
            initializer=initializers.TruncatedNormal(stddev=0.02), trainable=False,
            name="vector_u", dtype=self.kernel.dtype)

    def call(self, inputs, training=False):
        if training:
            self.normalize_weights()
        return self.layer(inputs)

    def compute_output_shape(self, input_shape):
        return self.layer.compute_output_shape(input_shape)

    def normalize_weights(self):
        """One power-iteration update of ``vector_u`` and the kernel divided by the
        estimated largest singular value (an all-zero kernel is left as it is)."""
        import mixprec as tf
        w = _core.reshape(self.kernel.read_value(), [-1, self.kernel_shape[-1]])
        u = self.vector_u.read_value()
        v = u
        for _ in range(self.power_iterations):
            v = tf.math.l2_normalize(_core.matmul(u, w, transpose_b=True))
            u = tf.math.l2_normalize(_core.matmul(v, w))
        u, v = tf.stop_gradient(u), tf.stop_gradient(v)
        sigma = _core.matmul(_core.matmul(v, w), u, transpose_b=True)
        zero = tf.reduce_all(tf.equal(w, 0.0))
        new_u = tf.where(zero, self.vector_u.read_value(), _core.cast(u, self.vector_u.dtype))
        new_k = tf.where(zero, self.kernel.read_value(),
                         _core.reshape(self.kernel.read_value() / sigma, self.kernel_shape))
        self.vector_u.assign(new_u)
        self.kernel.assign(_core.cast(new_k, self.kernel.dtype))

    def get_config(self):
        config = super().get_config()
        config["power_iterations"] = self.power_iterations
        return config
