"""``keras.layers.Embedding`` as tf-keras 2.21: rows of a float32 table (the variable dtype,
never autocast) picked by integer ids with tf.gather, cast to the compute dtype (float16
under mixed_float16). With mask_zero, ``compute_mask`` gives ``ids != 0``, the mask the
layers downstream get (keras/engine/masking.py). The numbers are the core's gather and its
gradient."""

from mixprec import _core
from mixprec.keras import constraints, initializers, regularizers
from mixprec.keras.engine.base_layer import Layer


class Embedding(Layer):
    """Turns non-negative integer ids into dense vectors of size ``output_dim``."""

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform",
                 embeddings_regularizer=None, activity_regularizer=None, embeddings_constraint=None,
                 mask_zero=False, input_length=None, sparse=False, **kwargs):
        if "input_shape" not in kwargs:
            kwargs["input_shape"] = (input_length,) if input_length else (None,)
        if input_dim <= 0 or output_dim <= 0:
            raise ValueError("Both `input_dim` and `output_dim` should be positive, Received "
                             "input_dim = %s and output_dim = %s" % (input_dim, output_dim))
        if sparse:
            raise NotImplementedError("mixprec: Embedding(sparse=True) is not supported")
        kwargs["autocast"] = False  # floating ids are cast to int32, never to the compute dtype
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.input_dim = input_dim
        self.output_dim = output_dim
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer)
        self.embeddings_constraint = constraints.get(embeddings_constraint)
        self.mask_zero = bool(mask_zero)
        self.supports_masking = self.mask_zero
        self._creates_masks = self.mask_zero
        self.input_length = input_length
        self.sparse = False
        self.embeddings = None

    def build(self, input_shape=None):
        self.embeddings = self.add_weight(
            name="embeddings", shape=(self.input_dim, self.output_dim),
            initializer=self.embeddings_initializer, regularizer=self.embeddings_regularizer,
            constraint=self.embeddings_constraint, experimental_autocast=False)
        self.built = True

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        return _core.not_equal(inputs, 0)

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        if self.input_length is None:
            return shape + (self.output_dim,)
        lengths = (self.input_length,) if isinstance(self.input_length, int) else \
            tuple(self.input_length)
        if len(lengths) != len(shape) - 1:
            raise ValueError('"input_length" is %s, but received input has shape %s'
                             % (self.input_length, shape))
        for i, (s1, s2) in enumerate(zip(lengths, shape[1:])):
            if s1 is not None and s2 is not None and s1 != s2:
                raise ValueError('"input_length" is %s, but received input has shape %s'
                                 % (self.input_length, shape))
            if s1 is None:
                lengths = lengths[:i] + (s2,) + lengths[i + 1:]
        return (shape[0],) + lengths + (self.output_dim,)

    def call(self, inputs):
        if not isinstance(inputs, _core.Tensor):
            inputs = _core.convert_to_tensor(inputs)
        if inputs.dtype.name not in ("int32", "int64"):
            inputs = _core.cast(inputs, "int32")
        out = _core.gather(self.embeddings, inputs, 0)
        compute = self._dtype_policy.compute_dtype
        if compute != self._dtype_policy.variable_dtype:
            out = _core.cast(out, compute)
        return out

    def get_config(self):
        config = super().get_config()
        config.update(
            input_dim=self.input_dim, output_dim=self.output_dim,
            embeddings_initializer=initializers.serialize(self.embeddings_initializer),
            embeddings_regularizer=regularizers.serialize(self.embeddings_regularizer),
            activity_regularizer=regularizers.serialize(self.activity_regularizer),
            embeddings_constraint=constraints.serialize(self.embeddings_constraint),
            mask_zero=self.mask_zero, input_length=self.input_length)
        return config
