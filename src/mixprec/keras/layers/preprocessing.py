"""Preprocessing layers of tf-keras 2.21 that work on numbers: Normalization (given or
adapted mean/variance, merged batch by batch as tf-keras), Discretization (given
or adapted boundaries), CategoryEncoding, and the image layers Resizing, CenterCrop, RandomFlip,
RandomCrop, RandomBrightness, RandomContrast (random ones act only when training, as
tf-keras). Compositions of core ops and mixprec.image; adapt() reads data on the host."""

import numpy as np

from mixprec import _core
from mixprec.keras.engine.base_layer import Layer

__all__ = ["Normalization", "Discretization", "CategoryEncoding", "Resizing", "CenterCrop",
           "RandomFlip", "RandomCrop", "RandomBrightness", "RandomContrast"]


def _tf():
    import mixprec

    return mixprec


def _batches(data, batch_size, steps):
    """Host arrays of the data, batch by batch (a Dataset as it batches itself)."""
    from mixprec.data import Dataset

    if isinstance(data, Dataset):
        for i, elem in enumerate(data):
            if steps is not None and i >= steps:
                return
            yield np.asarray(elem[0] if isinstance(elem, tuple) else elem)
        return
    arr = np.asarray(data.numpy() if hasattr(data, "numpy") else data)
    if arr.ndim == 0:
        raise ValueError("adapt() needs data with a batch dimension, got a scalar")
    bs = batch_size or 32
    for i, lo in enumerate(range(0, len(arr), bs)):
        if steps is not None and i >= steps:
            return
        yield arr[lo:lo + bs]


class Normalization(Layer):
    """(x - mean) / max(sqrt(variance), epsilon) per position of ``axis`` (``invert``: the
    inverse); mean and variance given, or learnt by ``adapt``."""

    def __init__(self, axis=-1, mean=None, variance=None, invert=False, **kwargs):
        super().__init__(**kwargs)
        if axis is None:
            axis = ()
        elif isinstance(axis, int):
            axis = (axis,)
        else:
            axis = tuple(axis)
        self.axis = axis
        if (mean is None) != (variance is None):
            raise ValueError("When setting values directly, both `mean` and `variance` must "
                             "be set. Got mean: %s and variance: %s" % (mean, variance))
        self.input_mean, self.input_variance = mean, variance
        self.invert = invert

    def build(self, input_shape):
        shape = tuple(input_shape)
        ndim = len(shape)
        if any(a < -ndim or a >= ndim for a in self.axis):
            raise ValueError("All `axis` values must be in the range [-ndim, ndim). Received "
                             "inputs with ndim=%d, while axis=%s" % (ndim, self.axis))
        self._keep = sorted(a % ndim for a in self.axis)
        for d in self._keep:
            if shape[d] is None:
                raise ValueError("All `axis` values to be kept must have known shape. Got "
                                 "axis: %s, input shape: %s, with unknown axis at index: %d"
                                 % (self.axis, shape, d))
        self._reduce = [d for d in range(ndim) if d not in self._keep]
        stat_shape = [shape[d] for d in self._keep]
        self._broadcast = [shape[d] if d in self._keep else 1 for d in range(ndim)]
        dtype = self.compute_dtype
        if self.input_mean is None:
            self.adapt_mean = self.add_weight("mean", stat_shape, initializer="zeros",
                                              trainable=False)
            self.adapt_variance = self.add_weight("variance", stat_shape, initializer="ones",
                                                  trainable=False)
            self.count = self.add_weight("count", (), dtype="int64", initializer="zeros",
                                         trainable=False)
            self._finalize()
        else:
            mean = np.broadcast_to(np.asarray(self.input_mean, "float64"), stat_shape)
            var = np.broadcast_to(np.asarray(self.input_variance, "float64"), stat_shape)
            self.mean = _core.constant(mean.reshape(self._broadcast).tolist(), dtype)
            self.variance = _core.constant(var.reshape(self._broadcast).tolist(), dtype)
        self.built = True

    def _finalize(self):
        dtype = self.compute_dtype
        self.mean = _core.cast(_core.reshape(self.adapt_mean.read_value(), self._broadcast),
                               dtype)
        self.variance = _core.cast(_core.reshape(self.adapt_variance.read_value(),
                                                 self._broadcast), dtype)

    def adapt(self, data, batch_size=None, steps=None):
        """Learns mean and variance from ``data`` (arrays, a tensor or a Dataset)."""
        if self.input_mean is not None:
            raise ValueError("Cannot `adapt` a Normalization layer that is initialized with "
                             "static `mean` and `variance`, you passed mean %s and variance "
                             "%s." % (self.input_mean, self.input_variance))
        count, mean, var = 0, None, None
        for batch in _batches(data, batch_size, steps):
            batch = batch.astype("float64")
            if not self.built:
                self.build((None,) + batch.shape[1:])
            axes = tuple(self._reduce)
            n = int(np.prod([batch.shape[d] for d in axes])) if axes else 1
            b_mean = batch.mean(axis=axes) if axes else batch
            b_var = batch.var(axis=axes) if axes else np.zeros_like(batch)
            if mean is None:
                count, mean, var = n, b_mean, b_var
                continue
            total = count + n
            w_new = n / total
            w_old = 1.0 - w_new
            new_mean = mean * w_old + b_mean * w_new
            var = w_old * (var + (mean - new_mean) ** 2) + w_new * (b_var + (b_mean -
                                                                             new_mean) ** 2)
            mean, count = new_mean, total
        if mean is None:
            raise ValueError("adapt() got no data")
        self.adapt_mean.assign(mean.astype("float32"))
        self.adapt_variance.assign(var.astype("float32"))
        self.count.assign(np.int64(count))
        self._finalize()

    def finalize_state(self):
        if self.input_mean is None and self.built:
            self._finalize()

    def call(self, inputs):
        x = _core.cast(inputs, self.compute_dtype) if inputs.dtype.name != self.compute_dtype \
            else inputs
        from mixprec.keras import backend

        scale = _core.maximum(_core.sqrt(self.variance),
                              _core.fill([], backend.epsilon(), self.variance.dtype))
        if self.invert:
            return self.mean + x * scale
        return (x - self.mean) / scale

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()

        def plain(v):
            if v is None:
                return None
            arr = np.asarray(v)
            return arr.item() if arr.ndim == 0 else arr.tolist()

        config.update(axis=self.axis, invert=self.invert, mean=plain(self.input_mean),
                      variance=plain(self.input_variance))
        return config


class Discretization(Layer):
    """Bucket ids of the inputs by ``bin_boundaries`` (a value on a boundary goes to the
    upper bucket); output_mode int, one_hot, multi_hot or count."""

    def __init__(self, bin_boundaries=None, num_bins=None, epsilon=0.01, output_mode="int",
                 sparse=False, **kwargs):
        if "dtype" not in kwargs or kwargs["dtype"] is None:
            kwargs["dtype"] = "int64" if output_mode == "int" else "float32"
        super().__init__(**kwargs)
        if sparse:
            raise ValueError("`sparse=True` is not supported by mixprec (no sparse tensors)")
        if output_mode not in ("int", "one_hot", "multi_hot", "count"):
            raise ValueError('Invalid value for argument `output_mode`. Expected one of '
                             '("int", "one_hot", "multi_hot", "count"). Received: '
                             'output_mode=%s' % (output_mode,))
        if num_bins is not None and num_bins < 0:
            raise ValueError("`num_bins` must be greater than or equal to 0. You passed "
                             "`num_bins=%s`" % (num_bins,))
        if num_bins is not None and bin_boundaries is not None:
            raise ValueError("Both `num_bins` and `bin_boundaries` should not be set. You "
                             "passed `num_bins=%s` and `bin_boundaries=%s`"
                             % (num_bins, bin_boundaries))
        if bin_boundaries is not None and hasattr(bin_boundaries, "numpy"):
            bin_boundaries = bin_boundaries.numpy()
        self.input_bin_boundaries = ([float(b) for b in np.asarray(bin_boundaries).reshape(-1)]
                                     if bin_boundaries is not None else None)
        self.bin_boundaries = (list(self.input_bin_boundaries)
                               if bin_boundaries is not None else [])
        self.num_bins = num_bins
        self.epsilon = epsilon
        self.output_mode = output_mode
        self.sparse = sparse

    def adapt(self, data, batch_size=None, steps=None):
        """Learns ``num_bins`` quantile boundaries from ``data`` (tf-keras' approximate
        quantile summary, merged batch by batch; _quantile_summary.py)."""
        if self.input_bin_boundaries is not None:
            raise ValueError("Cannot adapt a Discretization layer that has been initialized "
                             "with `bin_boundaries`, use `num_bins` instead. You passed "
                             "`bin_boundaries=%s`." % (self.input_bin_boundaries,))
        from mixprec.keras.layers import _quantile_summary as qs

        summary = qs.empty()
        for batch in _batches(data, batch_size, steps):
            if not self.built:  # as tf-keras' adapt: the batch shape becomes all None
                self._batch_input_shape = (None,) * batch.ndim
                self.build((None,) + tuple(batch.shape[1:]))
            summary = qs.merge_summaries(qs.summarize(batch, self.epsilon), summary,
                                         self.epsilon)
        self._summary = summary
        self.bin_boundaries = [float(b) for b in qs.get_bin_boundaries(summary, self.num_bins)]

    def reset_state(self):
        if self.input_bin_boundaries is None:
            from mixprec.keras.layers import _quantile_summary as qs

            self._summary = qs.empty()

    def call(self, inputs):
        x = inputs if inputs.dtype.is_floating else _core.cast(inputs, "float32")
        b = _core.constant([float(v) for v in self.bin_boundaries], x.dtype.name)
        ids = _core.reduce_sum(_core.cast(_core.greater_equal(
            _core.reshape(x, list(x.shape) + [1]), b), "int64"), -1)
        if self.output_mode == "int":
            return ids
        depth = len(self.bin_boundaries) + 1
        return _encode(ids, depth, self.output_mode, self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(bin_boundaries=self.input_bin_boundaries, num_bins=self.num_bins,
                      epsilon=self.epsilon, output_mode=self.output_mode, sparse=self.sparse)
        return config


def _encode(ids, depth, mode, dtype, count_weights=None):
    """Integer ids as one_hot / multi_hot / count vectors of ``depth`` (tf-keras: a 1-D input
    is one id per sample; a 2-D input's rows are bags of ids)."""
    if ids.ndim == 0:
        ids = _core.reshape(ids, [1])
    if ids.ndim == 2 and (mode == "one_hot" or ids.shape[-1] == 1):
        ids = _core.reshape(ids, [-1])
        if count_weights is not None:
            count_weights = _core.reshape(_core.convert_to_tensor(count_weights), [-1])
    oh = _core.one_hot(_core.cast(ids, "int64"), depth, dtype=dtype)
    if count_weights is not None and mode == "count":
        w = _core.cast(_core.convert_to_tensor(count_weights), dtype)
        oh = oh * _core.reshape(w, list(w.shape) + [1])
    if ids.ndim == 1:
        return oh
    summed = _core.reduce_sum(oh, -2)
    if mode == "multi_hot":
        return _core.cast(_core.greater(summed, 0.0), dtype)
    return summed


class CategoryEncoding(Layer):
    """Integer ids in [0, num_tokens) encoded as one_hot, multi_hot or count vectors."""

    def __init__(self, num_tokens=None, output_mode="multi_hot", sparse=False, **kwargs):
        super().__init__(**kwargs)
        if num_tokens is None:
            raise ValueError("num_tokens must be set to use this layer. If the number of tokens "
                             "is not known beforehand, use the IntegerLookup layer instead.")
        if num_tokens < 1:
            raise ValueError("`num_tokens` must be >= 1. Received: num_tokens=%s"
                             % (num_tokens,))
        if output_mode not in ("count", "one_hot", "multi_hot"):
            raise ValueError('Invalid value for argument `output_mode`. Expected one of '
                             '("count", "one_hot", "multi_hot"). Received: output_mode=%s'
                             % (output_mode,))
        if sparse:
            raise ValueError("`sparse=True` is not supported by mixprec (no sparse tensors)")
        self.num_tokens, self.output_mode, self.sparse = num_tokens, output_mode, sparse

    def call(self, inputs, count_weights=None):
        ids = _core.convert_to_tensor(inputs)
        if ids.dtype.is_floating:
            ids = _core.cast(ids, "int64")
        if ids.ndim > 2:
            raise ValueError("When output_mode is not `'int'`, maximum supported output rank "
                             "is 2. Received output_mode %s and input shape %s, which would "
                             "result in output rank %d."
                             % (self.output_mode, tuple(ids.shape), ids.ndim + 1))
        if ids._numel:
            from mixprec._function import tracing

            if not tracing():
                lo = int(_core.reduce_min(ids).numpy())
                hi = int(_core.reduce_max(ids).numpy())
                if lo < 0 or hi >= self.num_tokens:
                    from mixprec import errors

                    raise errors.InvalidArgumentError(
                        "Input values must be in the range 0 <= values < num_tokens with "
                        "num_tokens=%d" % self.num_tokens)
        if self.output_mode == "one_hot" and ids.ndim == 2 and ids.shape[-1] != 1:
            raise ValueError("When output_mode='one_hot', inputs must have a last dimension "
                             "of 1 (or be 1-D); got %s" % (tuple(ids.shape),))
        return _encode(ids, self.num_tokens, self.output_mode, self.compute_dtype,
                       count_weights)

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        if not shape:
            return (self.num_tokens,)
        if self.output_mode == "one_hot" and shape[-1] != 1:
            return shape + (self.num_tokens,)
        return shape[:-1] + (self.num_tokens,)

    def get_config(self):
        config = super().get_config()
        config.update(num_tokens=self.num_tokens, output_mode=self.output_mode,
                      sparse=self.sparse)
        return config


class Resizing(Layer):
    """Images resized to (height, width) (``crop_to_aspect_ratio``: centre-cropped to the
    target's aspect ratio first)."""

    def __init__(self, height, width, interpolation="bilinear", crop_to_aspect_ratio=False,
                 **kwargs):
        super().__init__(**kwargs)
        self.height, self.width = height, width
        self.interpolation = interpolation
        self.crop_to_aspect_ratio = crop_to_aspect_ratio

    def call(self, inputs):
        tf = _tf()
        x = inputs
        if self.crop_to_aspect_ratio:
            h, w = (x.shape[-3], x.shape[-2])
            target = self.width / self.height
            ch = min(h, int(round(w / target)))
            cw = min(w, int(round(h * target)))
            x = tf.image.crop_to_bounding_box(x, (h - ch) // 2, (w - cw) // 2, ch, cw)
        out = tf.image.resize(x, (self.height, self.width), method=self.interpolation)
        return _core.cast(out, self.compute_dtype) if out.dtype.name != self.compute_dtype \
            else out

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        shape[-3], shape[-2] = self.height, self.width
        return tuple(shape)

    def get_config(self):
        config = super().get_config()
        config.update(height=self.height, width=self.width, interpolation=self.interpolation,
                      crop_to_aspect_ratio=self.crop_to_aspect_ratio)
        return config


class CenterCrop(Layer):
    """The central (height, width) window (resized up first when the image is smaller, as
    tf-keras)."""

    def __init__(self, height, width, **kwargs):
        super().__init__(**kwargs)
        self.height, self.width = height, width

    def call(self, inputs):
        tf = _tf()
        h, w = inputs.shape[-3], inputs.shape[-2]
        x = inputs
        if h < self.height or w < self.width:
            x = tf.image.resize(x, (max(h, self.height), max(w, self.width)))
            h, w = x.shape[-3], x.shape[-2]
        top, left = (h - self.height) // 2, (w - self.width) // 2
        out = tf.image.crop_to_bounding_box(x, top, left, self.height, self.width)
        return _core.cast(out, self.compute_dtype) if out.dtype.name != self.compute_dtype \
            else out

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        shape[-3], shape[-2] = self.height, self.width
        return tuple(shape)

    def get_config(self):
        config = super().get_config()
        config.update(height=self.height, width=self.width)
        return config


class _RandomImageLayer(Layer):
    def __init__(self, seed=None, **kwargs):
        self.rng_type = kwargs.pop("rng_type", "stateful")
        super().__init__(**kwargs)
        self.seed = seed

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def _base_config(self):
        config = super().get_config()
        config["rng_type"] = self.rng_type
        return config


class RandomFlip(_RandomImageLayer):
    """Flips each image horizontally and/or vertically with probability 1/2 in training."""

    def __init__(self, mode="horizontal_and_vertical", seed=None, **kwargs):
        super().__init__(seed, **kwargs)
        if mode not in ("horizontal", "vertical", "horizontal_and_vertical"):
            raise ValueError("RandomFlip layer %s received an unknown mode argument %s"
                             % (kwargs.get("name", "random_flip"), mode))
        self.mode = mode

    def call(self, inputs, training=True):
        if not training:
            return inputs
        tf = _tf()
        x = inputs
        if self.mode in ("horizontal", "horizontal_and_vertical"):
            x = tf.image.random_flip_left_right(x, seed=self.seed)
        if self.mode in ("vertical", "horizontal_and_vertical"):
            x = tf.image.random_flip_up_down(x, seed=self.seed)
        return x

    def get_config(self):
        config = self._base_config()
        config.update(mode=self.mode, seed=self.seed)
        return config


class RandomCrop(_RandomImageLayer):
    """A random (height, width) window in training; the centre crop otherwise."""

    def __init__(self, height, width, seed=None, **kwargs):
        super().__init__(seed, **kwargs)
        self.height, self.width = height, width

    def call(self, inputs, training=True):
        tf = _tf()
        h, w = inputs.shape[-3], inputs.shape[-2]
        if not training or h < self.height or w < self.width:
            return CenterCrop(self.height, self.width, dtype=self.dtype_policy)(inputs)
        size = list(inputs.shape)
        size[-3], size[-2] = self.height, self.width
        return tf.image.random_crop(inputs, size, seed=self.seed)

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        shape[-3], shape[-2] = self.height, self.width
        return tuple(shape)

    def get_config(self):
        config = self._base_config()
        config.update(height=self.height, width=self.width, seed=self.seed)
        return config


def _factor_pair(factor, name):
    if isinstance(factor, (tuple, list)):
        if len(factor) != 2:
            raise ValueError("The `%s` argument should be a number (or a list of two "
                             "numbers). Received: %s=%s" % (name, name, factor))
        return float(factor[0]), float(factor[1])
    return -abs(float(factor)), abs(float(factor))


class RandomBrightness(_RandomImageLayer):
    """Adds a random delta in ``factor`` × the value range to each image in training (the
    result clipped to ``value_range``)."""

    def __init__(self, factor, value_range=(0, 255), seed=None, **kwargs):
        super().__init__(seed, **kwargs)
        lo, hi = _factor_pair(factor, "factor")
        if lo < -1.0 or hi > 1.0:
            raise ValueError("The `factor` argument should be a number (or a list of two "
                             "numbers) in the range [-1.0, 1.0]. Received: factor=%s"
                             % (factor,))
        self.factor = [lo, hi] if isinstance(factor, (tuple, list)) else [lo, hi]
        self._factor = (lo, hi)
        if len(value_range) != 2:
            raise ValueError("The `value_range` argument should be a list of two numbers. "
                             "Received: value_range=%s" % (value_range,))
        self.value_range = sorted(value_range)

    def call(self, inputs, training=True):
        if not training:
            return inputs
        tf = _tf()
        x = inputs if inputs.dtype.is_floating else _core.cast(inputs, self.compute_dtype)
        n = 1 if x.ndim == 3 else x.shape[0]
        shape = [1, 1, 1] if x.ndim == 3 else [n, 1, 1, 1]
        span = self.value_range[1] - self.value_range[0]
        delta = tf.random.uniform(shape, self._factor[0], self._factor[1], seed=self.seed,
                                  dtype=x.dtype) * span
        out = x + delta
        return tf.clip_by_value(out, float(self.value_range[0]), float(self.value_range[1]))

    def get_config(self):
        config = self._base_config()
        config.update(factor=self.factor, value_range=self.value_range, seed=self.seed)
        return config


class RandomContrast(_RandomImageLayer):
    """Scales each image's deviation from its mean by a random factor in
    [1 - lower, 1 + upper] in training."""

    def __init__(self, factor, seed=None, **kwargs):
        super().__init__(seed, **kwargs)
        self.factor = factor
        if isinstance(factor, (tuple, list)):
            self.lower, self.upper = float(factor[0]), float(factor[1])
        else:
            self.lower = self.upper = float(factor)
        if self.lower < 0.0 or self.upper < 0.0 or self.lower > 1.0:
            raise ValueError("`factor` argument cannot have negative values or values greater "
                             "than 1. Received: factor=%s" % (factor,))

    def call(self, inputs, training=True):
        if not training:
            return inputs
        tf = _tf()
        x = inputs if inputs.dtype.is_floating else _core.cast(inputs, self.compute_dtype)
        f = tf.random.uniform([], 1.0 - self.lower, 1.0 + self.upper, seed=self.seed)
        return tf.image.adjust_contrast(x, f)

    def get_config(self):
        config = self._base_config()
        config.update(factor=self.factor, seed=self.seed)
        return config

