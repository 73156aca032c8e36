"""Attention layers of tf-keras 2.21: Attention (dot or concat scores, optional scale),
AdditiveAttention (Bahdanau) and MultiHeadAttention (EinsumDense projections named
query/key/value/attention_output, scores over ``attention_axes``, masks from
``attention_mask``, the inputs' Keras masks and ``use_causal_mask``, dropout on the
probabilities) — tf-keras' weights, names, configs and errors. Compositions of core ops
(einsum, softmax, matmul); no kernels here."""

import math
import string

from mixprec import _core
from mixprec.keras import initializers
from mixprec.keras.engine import base_layer
from mixprec.keras.engine.base_layer import Layer

__all__ = ["Attention", "AdditiveAttention", "MultiHeadAttention"]

_LETTERS = string.ascii_lowercase


def _tf():
    import mixprec

    return mixprec


def _large_negative(dtype):
    return 65504.0 if dtype.name == "float16" else 1.0e9


def _lower_triangular(rows, cols):
    """(rows, cols) bool: True where row >= col."""
    r = _core.reshape(_core.range(0, rows, 1, "int32"), [rows, 1])
    c = _core.reshape(_core.range(0, cols, 1, "int32"), [1, cols])
    return _core.greater_equal(r, c)


class _DenseAttention(Layer):
    """What Attention and AdditiveAttention share (tf-keras' BaseDenseAttention)."""

    def __init__(self, dropout=0.0, **kwargs):
        self.causal = kwargs.pop("causal", False)
        super().__init__(**kwargs)
        self.dropout = dropout
        self.supports_masking = True

    def _validate(self, inputs, mask):
        name = type(self).__name__
        if not isinstance(inputs, list):
            raise ValueError("%s layer must be called on a list of inputs, namely [query, "
                             "value] or [query, value, key]. Received: %s." % (name, inputs))
        if len(inputs) < 2 or len(inputs) > 3:
            raise ValueError("%s layer accepts inputs list of length 2 or 3, namely [query, "
                             "value] or [query, value, key]. Received length: %d."
                             % (name, len(inputs)))
        if mask:
            if not isinstance(mask, list):
                raise ValueError("%s layer mask must be a list, namely [query_mask, "
                                 "value_mask]. Received: %s." % (name, mask))
            if len(mask) < 2 or len(mask) > len(inputs):
                raise ValueError("%s layer mask must be a list of length 2, namely "
                                 "[query_mask, value_mask]. Received length: %d."
                                 % (name, len(mask)))

    def call(self, inputs, mask=None, training=None, return_attention_scores=False,
             use_causal_mask=False):
        self._validate(inputs, mask)
        q, v = inputs[0], inputs[1]
        k = inputs[2] if len(inputs) > 2 else v
        q_mask = mask[0] if mask else None
        v_mask = mask[1] if mask else None
        scores = self._scores(q, k)
        scores_mask = None
        if v_mask is not None:
            scores_mask = _core.reshape(_core.cast(_core.convert_to_tensor(v_mask), "bool"),
                                        list(v_mask.shape[:-1]) + [1, v_mask.shape[-1]])
        if self.causal or use_causal_mask:
            causal = _lower_triangular(scores.shape[-2], scores.shape[-1])
            scores_mask = causal if scores_mask is None else _core.logical_and(scores_mask,
                                                                               causal)
        if scores_mask is not None:
            pad = _core.cast(_core.logical_not(scores_mask), scores.dtype)
            scores = scores - pad * _large_negative(scores.dtype)
        weights = _core.softmax(scores, -1)
        if self.dropout > 0 and training:
            weights = _tf().nn.dropout(weights, rate=self.dropout)
        result = _core.matmul(weights, v)
        if q_mask is not None:
            qm = _core.cast(_core.convert_to_tensor(q_mask), result.dtype)
            result = result * _core.reshape(qm, list(qm.shape) + [1])
        if return_attention_scores:
            return result, weights
        return result

    def compute_mask(self, inputs, mask=None):
        self._validate(inputs, mask)
        if mask:
            return None if mask[0] is None else _core.convert_to_tensor(mask[0])
        return None

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[0])

    def get_config(self):
        return {**super().get_config(), "dropout": self.dropout}


class Attention(_DenseAttention):
    """Dot-product (Luong) attention: scores = query @ key^T (times ``scale`` when
    ``use_scale``); ``score_mode='concat'``: sum(tanh(query + key)) times a weight."""

    def __init__(self, use_scale=False, score_mode="dot", **kwargs):
        super().__init__(**kwargs)
        self.use_scale = use_scale
        self.score_mode = score_mode
        if score_mode not in ("dot", "concat"):
            raise ValueError('Received: score_mode=%s. Acceptable values are: ["dot", '
                             '"concat"]' % (score_mode,))

    def build(self, input_shape):
        self.scale = self.add_weight("scale", (), initializer="ones") if self.use_scale \
            else None
        self.concat_score_weight = self.add_weight(
            "concat_score_weight", (), initializer="ones") if self.score_mode == "concat" \
            else None
        self.built = True

    def _scores(self, query, key):
        if self.score_mode == "dot":
            scores = _core.matmul(query, key, False, True)
            return scores * self.scale if self.scale is not None else scores
        q = _core.reshape(query, list(query.shape[:-1]) + [1, query.shape[-1]])
        k = _core.reshape(key, list(key.shape[:-2]) + [1] + list(key.shape[-2:]))
        inner = q + k if self.scale is None else self.scale * (q + k)
        return self.concat_score_weight * _core.reduce_sum(_core.tanh(inner), -1)

    def get_config(self):
        return {**super().get_config(), "use_scale": self.use_scale,
                "score_mode": self.score_mode}


class AdditiveAttention(_DenseAttention):
    """Bahdanau attention: scores = sum(scale * tanh(query + key)) over the features."""

    def __init__(self, use_scale=True, **kwargs):
        super().__init__(**kwargs)
        self.use_scale = use_scale

    def build(self, input_shape):
        dim = input_shape[1][-1]
        self.scale = self.add_weight("scale", (dim,), initializer="glorot_uniform") \
            if self.use_scale else None
        self.built = True

    def _scores(self, query, key):
        q = _core.reshape(query, list(query.shape[:-1]) + [1, query.shape[-1]])
        k = _core.reshape(key, list(key.shape[:-2]) + [1] + list(key.shape[-2:]))
        t = _core.tanh(q + k)
        return _core.reduce_sum(t * self.scale if self.scale is not None else t, -1)

    def get_config(self):
        return {**super().get_config(), "use_scale": self.use_scale}


def _projection(free_dims, bound_dims, output_dims):
    """tf-keras' einsum equation for a projection: (equation, bias axes, output rank)."""
    inp = _LETTERS[:free_dims]
    out = inp
    kern = _LETTERS[free_dims:free_dims + bound_dims]
    inp += kern
    tail = _LETTERS[free_dims + bound_dims:free_dims + bound_dims + output_dims]
    kern += tail
    out += tail
    return "%s,%s->%s" % (inp, kern, out), tail, len(out)


def _attention_equations(rank, attn_axes):
    """tf-keras' (dot-product equation, combine equation, scores rank) for projected inputs
    of ``rank`` (batch dims, attention dims, heads, channels)."""
    target = _LETTERS[:rank]
    batch_dims = tuple(d for d in range(rank) if d not in attn_axes and d != rank - 1)
    offset = rank
    source = ""
    for i in range(rank):
        if i in batch_dims or i == rank - 1:
            source += target[i]
        else:
            source += _LETTERS[offset]
            offset += 1
    product = "".join([target[i] for i in batch_dims] + [target[i] for i in attn_axes] +
                      [source[i] for i in attn_axes])
    return ("%s,%s->%s" % (source, target, product), "%s,%s->%s" % (product, source, target),
            len(product))


def _shape(x):
    return tuple(x.shape) if hasattr(x, "shape") else tuple(x)


class MultiHeadAttention(Layer):
    """Multi-head attention (Vaswani et al.): query/key/value projected to ``num_heads``
    heads of ``key_dim``/``value_dim``, scaled dot products softmaxed over
    ``attention_axes``, combined and projected back (``output_shape``, default the query's
    last dimension)."""

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True,
                 output_shape=None, attention_axes=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 softmax_robust_masking=False, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.supports_masking = True
        self._num_heads, self._key_dim = num_heads, key_dim
        self._value_dim = value_dim if value_dim else key_dim
        self._dropout, self._use_bias, self._output_shape = dropout, use_bias, output_shape
        self._kernel_initializer = initializers.get(kernel_initializer)
        self._bias_initializer = initializers.get(bias_initializer)
        from mixprec.keras import constraints, regularizers

        self._kernel_regularizer = regularizers.get(kernel_regularizer)
        self._bias_regularizer = regularizers.get(bias_regularizer)
        self._kernel_constraint = constraints.get(kernel_constraint)
        self._bias_constraint = constraints.get(bias_constraint)
        self._softmax_robust_masking = softmax_robust_masking
        if attention_axes is not None and not isinstance(attention_axes, (list, tuple)):
            attention_axes = (attention_axes,)
        self._attention_axes = attention_axes
        self._built_from_signature = False
        self._query_shape = self._key_shape = self._value_shape = None

    def _sublayer_kwargs(self):
        from mixprec.keras import constraints, regularizers

        return dict(
            dtype=self._dtype_policy,
            kernel_initializer=type(self._kernel_initializer).from_config(
                self._kernel_initializer.get_config()),
            bias_initializer=type(self._bias_initializer).from_config(
                self._bias_initializer.get_config()),
            kernel_regularizer=regularizers.get(regularizers.serialize(self._kernel_regularizer))
            if self._kernel_regularizer is not None else None,
            bias_regularizer=regularizers.get(regularizers.serialize(self._bias_regularizer))
            if self._bias_regularizer is not None else None,
            kernel_constraint=constraints.get(constraints.serialize(self._kernel_constraint))
            if self._kernel_constraint is not None else None,
            bias_constraint=constraints.get(constraints.serialize(self._bias_constraint))
            if self._bias_constraint is not None else None)

    def _build_from_signature(self, query, value, key=None):
        from mixprec.keras.layers.einsum_dense import EinsumDense

        self._built_from_signature = True
        symbolic = getattr(base_layer._ctx, "symbolic", False)  # placeholders of a Keras call

        def recorded(x):  # the shape the config keeps: an unknown batch size stays None
            shape = _shape(x)
            return (None,) + shape[1:] if symbolic and shape else shape

        self._query_shape = recorded(query)
        self._value_shape = recorded(value)
        self._key_shape = self._value_shape if key is None else recorded(key)
        def dense(rank_in, bound, heads_dim, name, out_shape=None):
            eq, bias, out_rank = _projection(rank_in, bound, len(heads_dim))
            shape = [None] * (out_rank - 1 - len(heads_dim)) + list(heads_dim)
            return EinsumDense(eq, output_shape=shape,
                               bias_axes=bias if self._use_bias else None, name=name,
                               **self._sublayer_kwargs())  # fresh initializers per sublayer

        free = len(self._query_shape) - 1
        with base_layer._NameScope(self):
            self._query_dense = dense(free, 1, [self._num_heads, self._key_dim], "query")
            self._key_dense = dense(len(self._key_shape) - 1, 1,
                                    [self._num_heads, self._key_dim], "key")
            self._value_dense = dense(len(self._value_shape) - 1, 1,
                                      [self._num_heads, self._value_dim], "value")
            rank = free + 2  # (batch, attention dims..., heads, channels)
            if self._attention_axes is None:
                self._attention_axes = tuple(range(1, rank - 2))
            else:
                self._attention_axes = tuple(self._attention_axes)
            self._dot_eq, self._combine_eq, scores_rank = _attention_equations(
                rank, self._attention_axes)
            self._norm_axes = tuple(range(scores_rank - len(self._attention_axes), scores_rank))
            if self._output_shape:
                out = list(self._output_shape) if isinstance(self._output_shape, (list, tuple)) \
                    else [self._output_shape]
            else:
                out = [self._query_shape[-1]]
            eq, bias, out_rank = _projection(free, 2, len(out))
            self._output_dense = EinsumDense(
                eq, output_shape=[None] * (out_rank - 1 - len(out)) + out,
                bias_axes=bias if self._use_bias else None, name="attention_output",
                **self._sublayer_kwargs())
            for sub, shape in ((self._query_dense, self._query_shape),
                               (self._key_dense, self._key_shape),
                               (self._value_dense, self._value_shape)):
                with base_layer._NameScope(sub):
                    sub.build(shape)
            out_in = tuple(self._query_shape[:-1]) + (self._num_heads, self._value_dim)
            with base_layer._NameScope(self._output_dense):
                self._output_dense.build(out_in)

    def build(self, input_shape):
        self.built = True

    def _masked_softmax(self, scores, mask):
        if mask is not None:
            axis = -len(self._attention_axes) * 2 - 1
            while mask.ndim < scores.ndim:
                shape = list(mask.shape)
                pos = len(shape) + axis + 1
                mask = _core.reshape(mask, shape[:pos] + [1] + shape[pos:])
            if self._softmax_robust_masking:
                scores = _core.where(mask, scores, _core.fill([], -_large_negative(
                    scores.dtype), scores.dtype))
            else:
                scores = scores + (1.0 - _core.cast(mask, scores.dtype)) * -_large_negative(
                    scores.dtype)
        axes = list(self._norm_axes)
        if len(axes) == 1:
            return _core.softmax(scores, axes[0])
        tf = _tf()
        return _core.exp(scores - tf.reduce_logsumexp(scores, axis=axes, keepdims=True))

    def _attention_mask(self, query, value, key, attention_mask, use_causal_mask):
        from mixprec.keras.engine import masking

        auto = None
        for t, pos in ((query, "q"), (value, "v"), (key, "k")):
            m = masking.get_mask(t) if t is not None else None
            if m is None:
                continue
            m = _core.cast(m, "bool")
            m = _core.reshape(m, list(m.shape) + [1]) if pos == "q" else \
                _core.reshape(m, [m.shape[0], 1] + list(m.shape[1:]))
            auto = m if auto is None else _core.logical_and(auto, m)
        if use_causal_mask:
            causal = _core.reshape(_lower_triangular(query.shape[1], value.shape[1]),
                                   [1, query.shape[1], value.shape[1]])
            auto = causal if auto is None else _core.logical_and(auto, causal)
        if auto is not None:
            if attention_mask is None:
                return auto
            return _core.logical_and(_core.cast(_core.convert_to_tensor(attention_mask),
                                                "bool"), auto)
        if attention_mask is not None:
            attention_mask = _core.cast(_core.convert_to_tensor(attention_mask), "bool")
        return attention_mask

    def call(self, query, value, key=None, attention_mask=None, return_attention_scores=False,
             training=None, use_causal_mask=False):
        if not self._built_from_signature:
            self._build_from_signature(query, value, key)
        mask = self._attention_mask(query, value, key if key is not None else None,
                                    attention_mask, use_causal_mask)
        if key is None:
            key = value
        tf = _tf()
        q = self._query_dense(query)
        k = self._key_dense(key)
        v = self._value_dense(value)
        q = q * (1.0 / math.sqrt(float(self._key_dim)))
        scores = tf.einsum(self._dot_eq, k, q)
        probs = self._masked_softmax(scores, mask)
        dropped = tf.nn.dropout(probs, rate=self._dropout) if self._dropout > 0 and training \
            else probs
        out = self._output_dense(tf.einsum(self._combine_eq, dropped, v))
        if return_attention_scores:
            return out, probs
        return out

    def compute_output_shape(self, query_shape, value_shape=None, key_shape=None):
        query_shape = tuple(query_shape)
        if value_shape is None:
            value_shape = query_shape
        value_shape = tuple(value_shape)
        key_shape = value_shape if key_shape is None else tuple(key_shape)
        if query_shape[-1] != value_shape[-1]:
            raise ValueError("The last dimension of `query_shape` and `value_shape` must be "
                             "equal, but are %s, %s. Received: query_shape=%s, value_shape=%s"
                             % (query_shape[-1], value_shape[-1], query_shape, value_shape))
        if value_shape[1:-1] != key_shape[1:-1]:
            raise ValueError("All dimensions of `value` and `key`, except the last one, must "
                             "be equal. Received %s and %s" % (value_shape, key_shape))
        if self._output_shape:
            extra = tuple(self._output_shape) if isinstance(self._output_shape, (list, tuple)) \
                else (self._output_shape,)
            return query_shape[:-1] + extra
        return query_shape

    def get_config(self):
        from mixprec.keras import constraints, regularizers

        config = {
            "num_heads": self._num_heads, "key_dim": self._key_dim,
            "value_dim": self._value_dim, "dropout": self._dropout,
            "use_bias": self._use_bias, "output_shape": self._output_shape,
            "attention_axes": self._attention_axes,
            "kernel_initializer": initializers.serialize(self._kernel_initializer),
            "bias_initializer": initializers.serialize(self._bias_initializer),
            "kernel_regularizer": regularizers.serialize(self._kernel_regularizer),
            "bias_regularizer": regularizers.serialize(self._bias_regularizer),
            "activity_regularizer": regularizers.serialize(self.activity_regularizer),
            "kernel_constraint": constraints.serialize(self._kernel_constraint),
            "bias_constraint": constraints.serialize(self._bias_constraint),
            "query_shape": self._query_shape, "key_shape": self._key_shape,
            "value_shape": self._value_shape,
            "softmax_robust_masking": self._softmax_robust_masking,
        }
        return {**super().get_config(), **config}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        shapes = [config.pop(k, None) for k in ("query_shape", "key_shape", "value_shape")]
        layer = cls(**config)
        if None not in shapes:
            layer._build_from_signature(shapes[0], shapes[2], shapes[1])
        return layer
