"""tf-keras 2.21's vocabulary and text preprocessing layers: StringLookup, IntegerLookup,
Hashing and TextVectorization.

Keras bookkeeping only (the id layout [mask][OOV...][vocabulary], adapt's ordering by count,
IDF weights, output modes); the element work is the core's: the vocabulary hash table and
unique-with-counts (csrc/strings_lookup.c), FarmHash/SipHash (csrc/strings_hash.c), the
tf.strings ops and one_hot/reduce_sum. String tensors live on the host, so these layers run
eagerly (a traced Keras step falls back to eager execution when it meets them).
"""

import os

import numpy as np

from mixprec import _core, _dtypes, _ragged
from mixprec import strings as _strings
from mixprec.keras.engine.base_layer import Layer

__all__ = ["StringLookup", "IntegerLookup", "Hashing", "TextVectorization"]

_MODES = ("int", "one_hot", "multi_hot", "count", "tf_idf")
_STRIP_REGEX = r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']'


def _tf():
    import mixprec

    return mixprec


def _check_mode(output_mode, allowed=_MODES):
    if output_mode not in allowed:
        raise ValueError("Invalid value for argument `output_mode`. Expected one of %s. "
                         "Received: output_mode=%s" % (allowed, output_mode))


def _bag_encode(ids, depth, mode, dtype, weights=None):
    """ids (..., k) int64 with -1 for nothing -> (..., depth) multi_hot / count / tf_idf;
    one_hot: ids (...) -> (..., depth)."""
    tf = _tf()
    oh = tf.one_hot(ids, depth, dtype=dtype)
    if mode == "one_hot":
        return oh
    counts = tf.reduce_sum(oh, axis=-2)
    if mode == "multi_hot":
        return tf.cast(tf.greater(counts, 0), dtype)
    if mode == "tf_idf":
        return counts * tf.cast(tf.constant(weights), dtype)
    return counts


def _encode_ids(ids, depth, mode, dtype, weights=None):
    """Keras' categorical encoding of a dense id tensor (-1 = masked out)."""
    tf = _tf()
    if mode == "one_hot":
        if ids.ndim >= 1 and ids.shape[-1] == 1:
            ids = tf.squeeze(ids, -1)
        return _bag_encode(ids, depth, mode, dtype)
    if ids.ndim == 0:
        ids = tf.reshape(ids, [1, 1])
        return tf.squeeze(_bag_encode(ids, depth, mode, dtype, weights), 0)
    if ids.ndim == 1:
        ids = tf.expand_dims(ids, 1)
    if ids.ndim > 2:
        raise ValueError("When output_mode is not `'int'`, maximum supported output rank is 2. "
                         "Received output_mode %s and input shape %s, which would result in "
                         "output rank %d." % (mode, tuple(ids.shape), ids.ndim + 1))
    return _bag_encode(ids, depth, mode, dtype, weights)


def _read_vocab_file(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


class _IndexLookup(Layer):
    """The shared id layout and lookup of StringLookup and IntegerLookup."""

    _string = True

    def __init__(self, max_tokens, num_oov_indices, mask_token, oov_token, vocabulary,
                 idf_weights, invert, output_mode, sparse, pad_to_max_tokens, **kwargs):
        kwargs.pop("vocabulary_dtype", None)
        kwargs.pop("vocabulary_size", None)
        super().__init__(**kwargs)
        _check_mode(output_mode)
        if max_tokens is not None and max_tokens <= 1:
            raise ValueError("If set, `max_tokens` must be greater than 1. Received: "
                             "max_tokens=%s" % (max_tokens,))
        if num_oov_indices < 0:
            raise ValueError("`num_oov_indices` must be greater than or equal to 0. Received: "
                             "num_oov_indices=%s" % (num_oov_indices,))
        if invert and output_mode != "int":
            raise ValueError("`output_mode` must be `'int'` when `invert` is true. Received: "
                             "output_mode=%s" % (output_mode,))
        if sparse:
            raise ValueError("`sparse=True` is not supported by mixprec (no sparse tensors)")
        if output_mode == "tf_idf" and idf_weights is None and vocabulary is not None:
            raise ValueError("`idf_weights` must be set if output_mode is 'tf_idf'")
        self.max_tokens, self.num_oov_indices = max_tokens, int(num_oov_indices)
        self.mask_token, self.oov_token = mask_token, oov_token
        self.invert, self.output_mode, self.sparse = invert, output_mode, sparse
        self.pad_to_max_tokens = pad_to_max_tokens
        self._vocab = self._empty_vocab()
        self._idf = None
        self._table = None
        self._adapt_data = []
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)

    # ------------------------------------------------------------------ vocabulary
    def _empty_vocab(self):
        return np.array([], dtype=object if self._string else np.int64)

    def _as_token(self, v):
        if self._string:
            return v.decode("utf-8") if isinstance(v, bytes) else str(v)
        return int(v)

    def _token_start(self):
        return (0 if self.mask_token is None else 1) + self.num_oov_indices

    def _oov_start(self):
        return 0 if self.mask_token is None else 1

    def set_vocabulary(self, vocabulary, idf_weights=None):
        if isinstance(vocabulary, str) and os.path.isfile(vocabulary):
            vocabulary = _read_vocab_file(vocabulary)
        if isinstance(vocabulary, _core.Tensor):
            vocabulary = vocabulary.numpy()
        tokens = [self._as_token(v) for v in np.ravel(np.asarray(vocabulary, dtype=object))]
        if self.mask_token is not None and tokens[:1] == [self._as_token(self.mask_token)]:
            tokens = tokens[1:]
        k = self.num_oov_indices
        if k and tokens[:k] == [self._as_token(self.oov_token)] * k:
            tokens = tokens[k:]
        if len(set(tokens)) != len(tokens):
            repeated = sorted({t for t in tokens if tokens.count(t) > 1}, key=str)
            raise ValueError("The passed vocabulary has at least one repeated term. Please "
                             "uniquify your dataset. The repeated terms are %s" % (repeated,))
        specials = {self._as_token(self.oov_token)}
        if self.mask_token is not None:
            specials.add(self._as_token(self.mask_token))
        bad = [t for t in tokens if t in specials]
        if bad:
            raise ValueError("Found reserved tokens in `vocabulary`: %s. Special tokens (mask "
                             "and OOV) may only be at the start of the vocabulary." % (bad,))
        if self.max_tokens is not None and len(tokens) + self._token_start() > self.max_tokens:
            raise ValueError("Attempted to set a vocabulary larger than the maximum vocab size. "
                             "Passed vocab size is %d, max vocab size is %d." % (
                                 len(tokens) + self._token_start(), self.max_tokens))
        self._vocab = np.array(tokens, dtype=object if self._string else np.int64)
        if idf_weights is not None:
            w = np.asarray(idf_weights.numpy() if hasattr(idf_weights, "numpy") else idf_weights,
                           dtype=np.float64).ravel()
            if len(w) != len(self._vocab):
                raise ValueError("`idf_weights` must be the same length as vocabulary. "
                                 "len(idf_weights) is %d; len(vocabulary) is %d" % (
                                     len(w), len(self._vocab)))
            self._idf = w
        elif self.output_mode == "tf_idf":
            raise ValueError("`idf_weights` must be set if output_mode is 'tf_idf'")
        self._table = None

    def _keys(self):
        if self._string:
            return _core.constant(np.array([t.encode("utf-8") for t in self._vocab], dtype=object)
                                  if len(self._vocab) else np.array([], dtype=object))
        return _core.constant(np.asarray(self._vocab, dtype=np.int64), "int64")

    def _lookup_table(self):
        if self._table is None:
            self._table = _core.str_table(self._keys())
        return self._table

    def get_vocabulary(self, include_special_tokens=True):
        tokens = [self._as_token(t) for t in self._vocab]
        if not include_special_tokens:
            return tokens
        head = [] if self.mask_token is None else [self._as_token(self.mask_token)]
        return head + [self._as_token(self.oov_token)] * self.num_oov_indices + tokens

    def vocabulary_size(self):
        return len(self._vocab) + self._token_start()

    def _depth(self):
        n = self.max_tokens if self.pad_to_max_tokens and self.max_tokens else \
            self.vocabulary_size()
        return n - (0 if self.mask_token is None else 1)

    # ------------------------------------------------------------------ adapt
    def adapt(self, data, batch_size=None, steps=None):
        """Learns the vocabulary (most frequent first, ties by token, descending as tf-keras)
        and, for tf_idf, the IDF weights."""
        from mixprec.keras.layers.preprocessing import _batches
        docs = []
        for batch in _batches(data, batch_size, steps):
            docs.append(self._tokens_of(batch))
        self._learn(docs)

    def _tokens_of(self, batch):
        """(flat token tensor, row id per token) of one adapt batch."""
        x = self._convert(batch)
        rows = np.arange(int(np.prod(x.shape.as_list())), dtype=np.int64)
        if x.ndim >= 2:
            rows = rows // int(np.prod(x.shape.as_list()[1:]))
        return _tf().reshape(x, [-1]), rows

    def _learn(self, docs):
        tf = _tf()
        if not docs:
            raise ValueError("adapt() got no data")
        flat = tf.concat([d[0] for d in docs], 0) if len(docs) > 1 else docs[0][0]
        uniq, counts = _core.str_unique_counts(flat)
        tokens = uniq.numpy()
        counts = counts.numpy()
        specials = [self.oov_token] + ([] if self.mask_token is None else [self.mask_token])
        if self._string:
            specials = [s.encode("utf-8") if isinstance(s, str) else s for s in specials]
        keep = ~np.isin(tokens, np.array(specials, dtype=tokens.dtype if not self._string
                                         else object))
        tokens, counts = tokens[keep], counts[keep]
        order = np.lexsort((tokens, counts))[::-1]
        if self.max_tokens is not None:
            order = order[:max(self.max_tokens - self._token_start(), 0)]
        tokens = tokens[order]
        self._vocab = np.array([self._as_token(t) for t in tokens],
                               dtype=object if self._string else np.int64)
        self._table = None
        if self.output_mode == "tf_idf":
            table = self._lookup_table()
            n_docs, seen = 0, []
            for flat_d, rows in docs:
                ids = _core.str_table_lookup(table, flat_d, 0, -1).numpy()
                ok = ids >= 0
                seen.append(np.unique((rows[ok] + n_docs) * max(len(tokens), 1) + ids[ok]))
                n_docs += int(rows.max()) + 1 if rows.size else 0
            pairs = np.concatenate(seen) if seen else np.zeros(0, np.int64)
            df = np.bincount(pairs % max(len(tokens), 1), minlength=len(tokens))[:len(tokens)]
            self._idf = np.log1p(n_docs / (1.0 + df))

    # ------------------------------------------------------------------ call
    def _convert(self, inputs):
        if self._string:
            x = inputs if isinstance(inputs, _core.Tensor) else _core.convert_to_tensor(
                np.asarray(inputs, dtype=object) if isinstance(inputs, (list, tuple)) else inputs)
            if x.dtype != _dtypes.string:
                raise TypeError("StringLookup expects string inputs, got %s" % x.dtype.name)
            return x
        x = _core.convert_to_tensor(inputs)
        if not x.dtype.is_integer:
            raise ValueError("When `output_mode=\"int\"`, IntegerLookup expects integer inputs "
                             "(int32 or int64); got %s" % x.dtype.name)
        return x

    def _idf_full(self):
        w = self._idf if self._idf is not None else np.zeros(len(self._vocab))
        oov = float(np.mean(w)) if len(w) else 0.0
        full = np.concatenate([[oov] * self.num_oov_indices, w])
        depth = self._depth()
        if len(full) < depth:
            full = np.concatenate([full, np.zeros(depth - len(full))])
        return full.astype(np.float32)

    def _ids(self, x):
        """int64 ids of x in [mask][OOV...][vocabulary] (mask -> 0)."""
        tf = _tf()
        table = self._lookup_table()
        oov_start, k = self._oov_start(), self.num_oov_indices
        ids = _core.str_table_lookup(table, x, self._token_start(), oov_start if k == 1 else -1)
        if k == 0:
            missing = tf.equal(ids, -1)
            if self.mask_token is not None:
                missing = tf.logical_and(missing, tf.not_equal(x, self._mask_value(x)))
            if bool(tf.reduce_any(missing).numpy()):
                raise _core.InvalidArgumentError(
                    "When `num_oov_indices=0` all inputs should be in vocabulary, found OOV "
                    "values %s, consider setting `num_oov_indices=1`." % (
                        tf.boolean_mask(x, missing).numpy(),))
        elif k > 1:
            if self._string:
                bucket = _strings.to_hash_bucket_fast(x, k)
            else:
                bucket = tf.math.floormod(tf.cast(x, "int64"), k)
            ids = tf.where(tf.equal(ids, -1), bucket + oov_start, ids)
        if self.mask_token is not None:
            ids = tf.where(tf.equal(x, self._mask_value(x)), tf.zeros_like(ids), ids)
        return ids

    def _mask_value(self, x):
        if self._string:
            return _core.convert_to_tensor(self.mask_token, "string")
        return tf_cast_int(self.mask_token, x.dtype)

    def _invert(self, ids):
        tf = _tf()
        ids = tf.cast(_core.convert_to_tensor(ids), "int64")
        vocab = self.get_vocabulary()
        n = len(vocab)
        if self._string:
            table = _core.constant(np.array([t.encode("utf-8") for t in vocab], dtype=object))
        else:
            table = _core.constant(np.array(vocab, dtype=np.int64), "int64")
        oov = self._oov_start() if self.num_oov_indices else 0
        bad = tf.logical_or(tf.less(ids, 0), tf.greater_equal(ids, n))
        idx = tf.where(bad, tf.fill(tf.shape(ids), tf.constant(oov, "int64")), ids)
        out = tf.gather(table, idx)
        if not self.num_oov_indices:  # no OOV token to return: out-of-range ids are errors
            if bool(tf.reduce_any(bad).numpy()):
                raise _core.InvalidArgumentError("indices out of range of the vocabulary")
        return out

    def call(self, inputs):
        tf = _tf()
        if self.invert:
            return self._invert(inputs)
        x = self._convert(inputs)
        if not self._string and x.dtype != _dtypes.int64:
            x = tf.cast(x, "int64")
        ids = self._ids(x)
        if self.output_mode == "int":
            return ids
        if self.mask_token is not None:  # the mask has no column: masked ids become -1
            ids = ids - 1
        return _encode_ids(ids, self._depth(), self.output_mode, self.compute_dtype,
                           self._idf_full() if self.output_mode == "tf_idf" else None)

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        if self.output_mode == "int":
            return shape
        depth = self._depth()
        if self.output_mode == "one_hot" and shape and shape[-1] == 1:
            return shape[:-1] + (depth,)
        if self.output_mode == "one_hot":
            return shape + (depth,)
        return (shape[0] if shape else None, depth) if len(shape) <= 2 else shape[:-1] + (depth,)

    def get_config(self):
        config = super().get_config()
        config.update(max_tokens=self.max_tokens, num_oov_indices=self.num_oov_indices,
                      mask_token=self.mask_token, oov_token=self.oov_token,
                      vocabulary=self.get_vocabulary(include_special_tokens=False) or None,
                      idf_weights=None if self._idf is None else self._idf.tolist(),
                      invert=self.invert, output_mode=self.output_mode, sparse=self.sparse,
                      pad_to_max_tokens=self.pad_to_max_tokens)
        return config


def tf_cast_int(value, dtype):
    return _tf().cast(_core.convert_to_tensor(int(value), "int64"), dtype)


class StringLookup(_IndexLookup):
    """Strings to integer ids through a vocabulary (tf-keras' StringLookup)."""

    _string = True

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token="[UNK]",
                 vocabulary=None, idf_weights=None, encoding="utf-8", invert=False,
                 output_mode="int", sparse=False, pad_to_max_tokens=False, **kwargs):
        self.encoding = encoding
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, vocabulary,
                         idf_weights, invert, output_mode, sparse, pad_to_max_tokens, **kwargs)

    def get_config(self):
        config = super().get_config()
        config["encoding"] = self.encoding
        return config


class IntegerLookup(_IndexLookup):
    """Integers to contiguous ids through a vocabulary (tf-keras' IntegerLookup)."""

    _string = False

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token=-1,
                 vocabulary=None, vocabulary_dtype="int64", idf_weights=None, invert=False,
                 output_mode="int", sparse=False, pad_to_max_tokens=False, **kwargs):
        if vocabulary_dtype != "int64":
            raise ValueError("When `output_mode='int'`, `vocabulary_dtype` must be 'int64'. "
                             "Received: vocabulary_dtype=%s" % (vocabulary_dtype,))
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, vocabulary,
                         idf_weights, invert, output_mode, sparse, pad_to_max_tokens, **kwargs)


class Hashing(Layer):
    """Strings or integers hashed into ``num_bins`` bins: FarmHash Fingerprint64, or keyed
    SipHash with ``salt`` (tf-keras' Hashing); ``mask_value`` goes to bin 0."""

    def __init__(self, num_bins, mask_value=None, salt=None, output_mode="int", sparse=False,
                 **kwargs):
        super().__init__(**kwargs)
        if num_bins is None or num_bins <= 0:
            raise ValueError("The `num_bins` for `Hashing` cannot be `None` or non-positive "
                             "values. Received: num_bins=%s." % (num_bins,))
        _check_mode(output_mode, ("int", "one_hot", "multi_hot", "count"))
        if sparse:
            raise ValueError("`sparse=True` is not supported by mixprec (no sparse tensors)")
        self.num_bins, self.mask_value, self.output_mode, self.sparse = (
            num_bins, mask_value, output_mode, sparse)
        if salt is not None:
            if isinstance(salt, (tuple, list)) and len(salt) == 2 and all(
                    isinstance(s, int) for s in salt):
                self.salt = list(salt)
            elif isinstance(salt, int):
                self.salt = [salt, salt]
            else:
                raise ValueError("The `salt` argument for `Hashing` can only be a tuple of size 2 "
                                 "integers, or a single integer. Received: salt=%s." % (salt,))
        else:
            self.salt = None

    def _hash(self, s, bins):
        if self.salt is not None:
            return _strings.to_hash_bucket_strong(s, bins, self.salt)
        return _strings.to_hash_bucket_fast(s, bins)

    def call(self, inputs):
        tf = _tf()
        x = inputs if isinstance(inputs, _core.Tensor) else _core.convert_to_tensor(inputs)
        if x.dtype.is_integer:
            s = _strings.as_string(x)
        elif x.dtype == _dtypes.string:
            s = x
        else:
            raise _core.InvalidArgumentError(
                "cannot compute StringToHashBucketFast as input #0(zero-based) was expected to "
                "be a string tensor but is a %s tensor [Op:StringToHashBucketFast]"
                % ("float" if x.dtype == _dtypes.float32 else x.dtype.name))
        if self.mask_value is None:
            out = self._hash(s, self.num_bins)
        else:
            mask = tf.equal(s, _core.convert_to_tensor(str(self.mask_value)
                                                       if not isinstance(self.mask_value, bytes)
                                                       else self.mask_value, "string"))
            h = self._hash(s, self.num_bins - 1) + 1
            out = tf.where(mask, tf.zeros_like(h), h)
        if self.output_mode == "int":
            return out
        return _encode_ids(out, self.num_bins, self.output_mode, self.compute_dtype)

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        if self.output_mode == "int":
            return shape
        if self.output_mode == "one_hot" and shape and shape[-1] != 1:
            return shape + (self.num_bins,)
        return shape[:-1] + (self.num_bins,) if shape else (self.num_bins,)

    def get_config(self):
        config = super().get_config()
        config.update(num_bins=self.num_bins, salt=self.salt, mask_value=self.mask_value,
                      output_mode=self.output_mode, sparse=self.sparse)
        return config


class TextVectorization(Layer):
    """Text to token ids or bag vectors: standardize (lower-case, strip punctuation), split
    (whitespace / character), n-grams, then a StringLookup (tf-keras' TextVectorization)."""

    def __init__(self, max_tokens=None, standardize="lower_and_strip_punctuation",
                 split="whitespace", ngrams=None, output_mode="int", output_sequence_length=None,
                 pad_to_max_tokens=False, vocabulary=None, idf_weights=None, sparse=False,
                 ragged=False, encoding="utf-8", **kwargs):
        kwargs.pop("vocabulary_size", None)
        super().__init__(**kwargs)
        _check_mode(output_mode, ("int", "multi_hot", "count", "tf_idf"))
        if standardize not in (None, "lower_and_strip_punctuation", "lower",
                               "strip_punctuation") and not callable(standardize):
            raise ValueError("Invalid value for argument `standardize`. Received: "
                             "standardize=%s" % (standardize,))
        if split not in (None, "whitespace", "character") and not callable(split):
            raise ValueError("Invalid value for argument `split`. Received: split=%s" % (split,))
        if ngrams is not None and not (isinstance(ngrams, int) and ngrams > 0) and not (
                isinstance(ngrams, (tuple, list)) and all(isinstance(n, int) and n > 0
                                                          for n in ngrams)):
            raise ValueError("`ngrams` must be None, an integer, or a tuple of integers. "
                             "Received: ngrams=%s" % (ngrams,))
        if output_mode != "int" and output_sequence_length is not None:
            raise ValueError("`output_sequence_length` must not be set if `output_mode` is not "
                             "'int'. Received output_sequence_length=%s." % (
                                 output_sequence_length,))
        if ragged and output_mode != "int":
            raise ValueError("`ragged` must not be true if `output_mode` is `'int'`. ")
        if sparse:
            raise ValueError("`sparse=True` is not supported by mixprec (no sparse tensors)")
        self._max_tokens, self._standardize, self._split = max_tokens, standardize, split
        self._ngrams_arg = ngrams
        self._ngrams = tuple(range(1, ngrams + 1)) if isinstance(ngrams, int) else (
            tuple(ngrams) if ngrams is not None else None)
        self._output_mode, self._output_sequence_length = output_mode, output_sequence_length
        self._pad_to_max_tokens, self._ragged, self._encoding = pad_to_max_tokens, ragged, encoding
        self._lookup_layer = StringLookup(
            max_tokens=max_tokens, vocabulary=vocabulary, idf_weights=idf_weights,
            mask_token="" if output_mode == "int" else None, output_mode=output_mode,
            pad_to_max_tokens=pad_to_max_tokens, dtype=kwargs.get("dtype"),
            name=(self.name + "_lookup"))

    # ------------------------------------------------------------------ preprocessing
    def _standardized(self, x):
        s = self._standardize
        if s in ("lower", "lower_and_strip_punctuation"):
            x = _strings.lower(x)
        if s in ("strip_punctuation", "lower_and_strip_punctuation"):
            x = _strings.regex_replace(x, _STRIP_REGEX, "")
        if callable(s):
            x = s(x)
        return x

    def _tokens(self, inputs):
        """(flat tokens, row_splits numpy, scalar?) of a batch of texts."""
        tf = _tf()
        x = inputs if isinstance(inputs, _core.Tensor) else _core.convert_to_tensor(
            np.asarray(inputs, dtype=object) if isinstance(inputs, (list, tuple)) else inputs)
        if x.dtype != _dtypes.string:
            raise ValueError("TextVectorization expects string inputs, got %s" % x.dtype.name)
        scalar = x.ndim == 0
        if scalar:
            x = tf.reshape(x, [1])
        if x.ndim == 2 and x.shape[-1] == 1:
            x = tf.squeeze(x, -1)
        if x.ndim != 1:
            raise ValueError("TextVectorization expects a batch of texts of shape (batch,) or "
                             "(batch, 1); got %s" % (tuple(x.shape),))
        x = self._standardized(x)
        if self._split is None:
            values, splits = x, np.arange(x.shape[0] + 1, dtype=np.int64)
        else:
            if self._split == "whitespace":
                r = _strings.split(x)
            elif self._split == "character":
                r = _strings.unicode_split(x, "UTF-8")
            else:
                r = self._split(x)
            if isinstance(r, _ragged.RaggedTensor):
                values, splits = r.values, r._splits_np()
            else:  # a dense (batch, k) result of a custom split
                values = tf.reshape(r, [-1])
                k = r.shape[-1] if r.ndim > 1 else 1
                splits = np.arange(0, x.shape[0] * k + 1, k, dtype=np.int64)
        if self._ngrams is not None:
            values, splits = _ngram_rows(values, splits, self._ngrams, " ")
        return values, splits, scalar

    # ------------------------------------------------------------------ vocabulary
    def adapt(self, data, batch_size=None, steps=None):
        """Learns the vocabulary (and IDF weights for tf_idf) from texts: an array, a tensor
        or a Dataset of batches."""
        from mixprec.keras.layers.preprocessing import _batches
        docs = []
        for batch in _batches(data, batch_size, steps):
            values, splits, _ = self._tokens(batch)
            rows = np.repeat(np.arange(len(splits) - 1, dtype=np.int64), np.diff(splits))
            docs.append((values, rows))
        self._lookup_layer._learn(docs)

    def get_vocabulary(self, include_special_tokens=True):
        return self._lookup_layer.get_vocabulary(include_special_tokens)

    def vocabulary_size(self):
        return self._lookup_layer.vocabulary_size()

    def set_vocabulary(self, vocabulary, idf_weights=None):
        self._lookup_layer.set_vocabulary(vocabulary, idf_weights)

    # ------------------------------------------------------------------ call
    def call(self, inputs):
        tf = _tf()
        values, splits, scalar = self._tokens(inputs)
        lk = self._lookup_layer
        ids = lk._ids(values)
        if self._output_mode == "int":
            r = _ragged.RaggedTensor(ids, _core.constant(splits, "int64"))
            if self._ragged:
                return r
            width = self._output_sequence_length
            dense = r.to_tensor(0, shape=[None, width] if width is not None else None)
            return tf.squeeze(dense, 0) if scalar else dense
        lengths = np.diff(splits)
        width = int(lengths.max()) if lengths.size else 0
        padded = _ragged.RaggedTensor(ids, _core.constant(splits, "int64")).to_tensor(
            -1, shape=[None, max(width, 1)])
        out = _bag_encode(padded, lk._depth(), self._output_mode, self.compute_dtype,
                          lk._idf_full() if self._output_mode == "tf_idf" else None)
        return tf.squeeze(out, 0) if scalar else out

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        batch = shape[0] if shape else None
        if self._output_mode == "int":
            return (batch, self._output_sequence_length)
        return (batch, self._lookup_layer._depth())

    def get_config(self):
        config = super().get_config()
        config.update(max_tokens=self._max_tokens, standardize=self._standardize
                      if not callable(self._standardize) else None,
                      split=self._split if not callable(self._split) else None,
                      ngrams=self._ngrams_arg, output_mode=self._output_mode,
                      output_sequence_length=self._output_sequence_length,
                      pad_to_max_tokens=self._pad_to_max_tokens, sparse=False,
                      ragged=self._ragged, encoding=self._encoding,
                      vocabulary=self.get_vocabulary(include_special_tokens=False) or None,
                      idf_weights=None if self._lookup_layer._idf is None
                      else self._lookup_layer._idf.tolist())
        return config


def _ngram_rows(values, splits, widths, separator):
    """n-grams of every row of a ragged (values, row_splits): per row all ``widths[0]``-grams,
    then all ``widths[1]``-grams ... (tf.strings.ngrams' order). Index arithmetic in NumPy,
    joining in the core."""
    tf = _tf()
    lengths = np.diff(splits)
    starts = splits[:-1]
    pieces, counts = [], []
    for n in widths:
        c = np.maximum(lengths - n + 1, 0)
        counts.append(c)
        first = np.repeat(starts, c) + (np.arange(int(c.sum())) - np.repeat(np.cumsum(c) - c, c))
        cols = [tf.gather(values, _core.constant(first + j, "int64")) for j in range(n)]
        pieces.append(_strings.join(cols, separator) if n > 1 else cols[0])
    # interleave by row: row r's grams of each width, widths in order
    total = np.stack(counts, 1) if counts else np.zeros((len(lengths), 0), np.int64)
    row_total = total.sum(1)
    new_splits = np.concatenate([[0], np.cumsum(row_total)]).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum([c.sum() for c in counts])])[:-1]
    order = []
    for w, c in enumerate(counts):  # flat index of each gram in the concatenation of pieces
        within = np.cumsum(c) - c
        order.append((w, c, within))
    idx = np.zeros(int(row_total.sum()), dtype=np.int64)
    pos = np.repeat(new_splits[:-1], 1) if len(lengths) else np.zeros(0, np.int64)
    cursor = pos.copy()
    for w, c, within in order:
        dest = np.repeat(cursor, c) + (np.arange(int(c.sum())) - np.repeat(within, c))
        idx[dest] = offsets[w] + np.arange(int(c.sum()))
        cursor = cursor + c
    flat = tf.concat(pieces, 0) if len(pieces) > 1 else pieces[0]
    return tf.gather(flat, _core.constant(idx, "int64")), new_splits
