"""The tensor functions of ``tf.keras.backend`` (tf-keras 2.21's legacy functional API:
``K.mean``, ``K.dot``, ``K.batch_dot``, ``K.relu``, ``K.switch``, ``K.variable`` …), each a thin
composition of mixprec's ops with tf-keras' argument rules (bool means cast to floatx, a
``max_value`` below ``min_value`` in ``clip``, ``dot``'s N-d contraction). Graph-mode-only
names (placeholder, function, gradients) raise what tf-keras raises eagerly. Exported by
``mixprec.keras.backend``; holds no state of its own."""

import numpy as _np

from mixprec import _core

from mixprec.keras.backend import floatx

_py_all, _py_any, _py_sum = all, any, sum


def _tf():
    import mixprec

    return mixprec


def _t(x, dtype=None):
    tf = _tf()
    if isinstance(x, (tf.Tensor, tf.Variable)):
        return x if dtype is None else tf.cast(x, dtype)
    return tf.convert_to_tensor(x, dtype=dtype)


def _floaty(x):
    x = _t(x)
    return _tf().cast(x, floatx()) if x.dtype.name == "bool" else x


# ------------------------------------------------------------------ creation


def variable(value, dtype=None, name=None, constraint=None):
    tf = _tf()
    v = tf.Variable(_np.asarray(value) if not hasattr(value, "dtype") else value,
                    dtype=dtype or floatx(), name=name, constraint=constraint)
    return v


def constant(value, dtype=None, shape=None, name=None):
    return _tf().constant(value, dtype=dtype or floatx(), shape=shape, name=name)


def placeholder(shape=None, ndim=None, dtype=None, sparse=False, name=None, ragged=False):
    raise RuntimeError("tf.keras.backend.placeholder is graph-mode (TF1) only and mixprec runs "
                       "eagerly; use keras.Input(shape=...) for a symbolic input")


def function(inputs, outputs, updates=None, name=None, **kwargs):
    """tf-keras' eager form: a callable that feeds ``inputs`` (a functional model's inputs)
    and returns the ``outputs`` values as NumPy."""
    from mixprec import keras

    model = keras.Model(inputs, outputs)

    def run(values):
        out = model(values if len(model.inputs) > 1 else values[0], training=False)
        outs = out if isinstance(out, (list, tuple)) else [out]
        return [o.numpy() for o in outs]

    return run


def gradients(loss, variables):
    raise RuntimeError("tf.gradients is not supported when eager execution is enabled. Use "
                       "tf.GradientTape instead.")


def zeros(shape, dtype=None, name=None):
    return variable(_tf().zeros(shape, dtype=dtype or floatx()), dtype or floatx(), name)


def ones(shape, dtype=None, name=None):
    return variable(_tf().ones(shape, dtype=dtype or floatx()), dtype or floatx(), name)


def eye(size, dtype=None, name=None):
    dtype = dtype or floatx()
    rows = size if isinstance(size, int) else size[0]
    cols = size if isinstance(size, int) else size[1]
    return variable(_np.eye(rows, cols, dtype=dtype), dtype, name)


def zeros_like(x, dtype=None, name=None):
    return _tf().zeros_like(_t(x), dtype=dtype)


def ones_like(x, dtype=None, name=None):
    return _tf().ones_like(_t(x), dtype=dtype)


def identity(x, name=None):
    return _tf().identity(x)


def random_uniform_variable(shape, low, high, dtype=None, name=None, seed=None):
    dtype = dtype or floatx()
    return variable(_tf().random.uniform(shape, low, high, dtype=dtype, seed=seed), dtype, name)


def random_normal_variable(shape, mean, scale, dtype=None, name=None, seed=None):
    dtype = dtype or floatx()
    return variable(_tf().random.normal(shape, mean, scale, dtype=dtype, seed=seed), dtype, name)


def random_uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    return _tf().random.uniform(shape, minval, maxval, dtype=dtype or floatx(), seed=seed)


def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    return _tf().random.normal(shape, mean, stddev, dtype=dtype or floatx(), seed=seed)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    return _tf().random.truncated_normal(shape, mean, stddev, dtype=dtype or floatx(),
                                         seed=seed)


def random_bernoulli(shape, p=0.0, dtype=None, seed=None):
    tf = _tf()
    dtype = dtype or floatx()
    return tf.cast(tf.less_equal(tf.random.uniform(shape, dtype=dtype, seed=seed), p), dtype)


random_binomial = random_bernoulli


def arange(start, stop=None, step=1, dtype="int32"):
    if stop is None and start < 0:
        start = 0
    tf = _tf()
    out = tf.range(start, stop, step) if stop is not None else tf.range(start, delta=step)
    return out if dtype == "int32" and out.dtype.name == "int32" else tf.cast(out, dtype)


# ------------------------------------------------------------------ shapes


def shape(x):
    return _tf().shape(x)


def ndim(x):
    return len(x.shape)


def dtype(x):
    return x.dtype.base_dtype.name if hasattr(x.dtype, "base_dtype") else x.dtype.name


def cast(x, dtype):
    return _tf().cast(x, dtype)


def reshape(x, shape):
    return _tf().reshape(x, shape)


def permute_dimensions(x, pattern):
    return _tf().transpose(x, perm=pattern)


def transpose(x):
    return _tf().transpose(x)


def expand_dims(x, axis=-1):
    return _tf().expand_dims(x, axis)


def squeeze(x, axis):
    return _tf().squeeze(x, [axis])


def flatten(x):
    return _tf().reshape(x, [-1])


def batch_flatten(x):
    x = _t(x)
    n = 1
    for d in x.shape[1:]:
        n *= d
    return _tf().reshape(x, [-1, n])


def concatenate(tensors, axis=-1):
    tensors = [_t(t) for t in tensors]
    if axis < 0:
        rank = len(tensors[0].shape)
        axis = axis % rank if rank else 0
    return _tf().concat(tensors, axis)


def stack(x, axis=0):
    return _tf().stack(x, axis=axis)


def tile(x, n):
    if isinstance(n, int):
        n = [n]
    return _tf().tile(x, n)


def repeat(x, n):
    x = _t(x)
    if len(x.shape) != 2:
        raise AssertionError("keras.backend.repeat expects a 2D tensor, got shape %s"
                             % (tuple(x.shape),))
    return _tf().tile(_tf().expand_dims(x, 1), [1, n, 1])


def repeat_elements(x, rep, axis):
    x = _t(x)
    tf = _tf()
    axis = axis % len(x.shape)
    ex = tf.expand_dims(x, axis + 1)
    mult = [1] * (len(x.shape) + 1)
    mult[axis + 1] = rep
    out_shape = list(x.shape)
    out_shape[axis] *= rep
    return tf.reshape(tf.tile(ex, mult), out_shape)


def gather(reference, indices):
    return _tf().gather(reference, indices)


def one_hot(indices, num_classes):
    return _tf().one_hot(indices, depth=num_classes, axis=-1)


def reverse(x, axes):
    if isinstance(axes, int):
        axes = [axes]
    return _tf().reverse(x, axes)


def spatial_2d_padding(x, padding=((1, 1), (1, 1)), data_format=None):
    from mixprec.keras.backend import image_data_format

    data_format = data_format or image_data_format()
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError("Unknown data_format: " + str(data_format))
    pads = [list(padding[0]), list(padding[1])]
    full = [[0, 0]] + ([[0, 0]] + pads if data_format == "channels_first" else pads + [[0, 0]])
    return _tf().pad(x, full)


def temporal_padding(x, padding=(1, 1)):
    return _tf().pad(x, [[0, 0], list(padding), [0, 0]])


# ------------------------------------------------------------------ reductions


def sum(x, axis=None, keepdims=False):  # noqa: A001 (tf-keras' name)
    return _tf().reduce_sum(x, axis, keepdims)


def prod(x, axis=None, keepdims=False):
    return _tf().reduce_prod(x, axis, keepdims)


def max(x, axis=None, keepdims=False):  # noqa: A001
    return _tf().reduce_max(x, axis, keepdims)


def min(x, axis=None, keepdims=False):  # noqa: A001
    return _tf().reduce_min(x, axis, keepdims)


def mean(x, axis=None, keepdims=False):
    return _tf().reduce_mean(_floaty(x), axis, keepdims)


def var(x, axis=None, keepdims=False):
    return _tf().math.reduce_variance(_floaty(x), axis=axis, keepdims=keepdims)


def std(x, axis=None, keepdims=False):
    return _tf().math.reduce_std(_floaty(x), axis=axis, keepdims=keepdims)


def any(x, axis=None, keepdims=False):  # noqa: A001
    return _tf().reduce_any(_tf().cast(x, "bool"), axis, keepdims)


def all(x, axis=None, keepdims=False):  # noqa: A001
    return _tf().reduce_all(_tf().cast(x, "bool"), axis, keepdims)


def argmax(x, axis=-1):
    return _tf().argmax(x, axis)


def argmin(x, axis=-1):
    return _tf().argmin(x, axis)


def cumsum(x, axis=0):
    return _tf().math.cumsum(x, axis=axis)


def cumprod(x, axis=0):
    return _tf().math.cumprod(x, axis=axis)


# ------------------------------------------------------------------ element-wise


def _unary(name, path):
    def fn(x):
        obj = _tf()
        for p in path.split("."):
            obj = getattr(obj, p)
        return obj(x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = "tf-keras' ``backend.%s``: ``tf.%s``." % (name, path)
    return fn


square = _unary("square", "square")
abs = _unary("abs", "abs")  # noqa: A001
exp = _unary("exp", "exp")
log = _unary("log", "math.log")
round = _unary("round", "round")  # noqa: A001
sign = _unary("sign", "sign")
sin = _unary("sin", "sin")
cos = _unary("cos", "cos")
sigmoid = _unary("sigmoid", "sigmoid")
tanh = _unary("tanh", "tanh")
softplus = _unary("softplus", "math.softplus")


def softsign(x):
    """x / (1 + |x|) (the core's Softsign, as tf-keras' tf.nn.softsign)."""
    return _core.softsign(_t(x))


def sqrt(x):
    """sqrt of x clipped below at 0 (tf-keras)."""
    tf = _tf()
    x = _t(x)
    return tf.sqrt(tf.maximum(x, tf.zeros([], x.dtype)))


def pow(x, a):  # noqa: A001
    return _tf().pow(x, a)


def clip(x, min_value, max_value):
    if isinstance(min_value, (int, float)) and isinstance(max_value, (int, float)):
        if max_value < min_value:
            max_value = min_value
    if min_value is None:
        min_value = -_np.inf
    if max_value is None:
        max_value = _np.inf
    return _tf().clip_by_value(x, min_value, max_value)


def _binary(name):
    def fn(x, y):
        return getattr(_tf(), name)(x, y)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = "tf-keras' ``backend.%s``: ``tf.%s``." % (name, name)
    return fn


equal, not_equal = _binary("equal"), _binary("not_equal")
greater, greater_equal = _binary("greater"), _binary("greater_equal")
less, less_equal = _binary("less"), _binary("less_equal")
maximum, minimum = _binary("maximum"), _binary("minimum")


def stop_gradient(variables):
    tf = _tf()
    if isinstance(variables, (list, tuple)):
        return [tf.stop_gradient(v) for v in variables]
    return tf.stop_gradient(variables)


def hard_sigmoid(x):
    x = _t(x)
    return _tf().clip_by_value(x * 0.2 + 0.5, 0.0, 1.0)


def relu(x, alpha=0.0, max_value=None, threshold=0.0):
    tf = _tf()
    x = _t(x)
    if alpha != 0.0:
        if max_value is None and threshold == 0:
            return tf.nn.leaky_relu(x, alpha=alpha)
        negative = tf.nn.relu(-x + threshold) if threshold != 0 else tf.nn.relu(-x)
    clip_max = max_value is not None
    if threshold != 0:
        x = x * tf.cast(tf.greater(x, threshold), x.dtype)
    elif max_value == 6:
        x = tf.nn.relu6(x)
        clip_max = False
    else:
        x = tf.nn.relu(x)
    if clip_max:
        x = tf.clip_by_value(x, 0.0, float(max_value))
    if alpha != 0.0:
        x = x - alpha * negative
    return x


def elu(x, alpha=1.0):
    tf = _tf()
    res = tf.nn.elu(x)
    return res if alpha == 1 else tf.where(tf.greater(x, 0.0), res, alpha * res)


def softmax(x, axis=-1):
    return _tf().nn.softmax(x, axis=axis)


def l2_normalize(x, axis=None):
    return _tf().math.l2_normalize(x, axis=axis)


def in_top_k(predictions, targets, k):
    return _tf().math.in_top_k(targets, predictions, k)


def bias_add(x, bias, data_format=None):
    from mixprec.keras.backend import image_data_format

    tf = _tf()
    data_format = data_format or image_data_format()
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError("Unknown data_format: " + str(data_format))
    x, bias = _t(x), _t(bias)
    if len(bias.shape) != 1 and len(bias.shape) != len(x.shape) - 1:
        raise ValueError("Unexpected bias dimensions %d. Expected it to be 1 or %d dimensions"
                         % (len(bias.shape), len(x.shape) - 1))
    if len(bias.shape) == 1:
        if data_format == "channels_first" and len(x.shape) > 2:
            return tf.nn.bias_add(x, bias, data_format="NCHW" if len(x.shape) == 4 else
                                  "NC" + "DHW"[3 - (len(x.shape) - 2):])
        return tf.nn.bias_add(x, bias)
    if data_format == "channels_first":
        bias = tf.transpose(bias, [len(bias.shape) - 1] + list(range(len(bias.shape) - 1)))
    return x + tf.reshape(bias, [1] + list(bias.shape))


def dropout(x, level, noise_shape=None, seed=None):
    return _tf().nn.dropout(x, rate=level, noise_shape=noise_shape, seed=seed)


# ------------------------------------------------------------------ products


def dot(x, y):
    """matmul for 2-D; for N-D, x's last axis contracted with y's second-to-last (Theano's
    dot, as tf-keras)."""
    tf = _tf()
    x, y = _t(x), _t(y)
    if len(x.shape) > 2 or len(y.shape) > 2:
        xs, ys = list(x.shape), list(y.shape)
        perm = list(range(len(ys)))
        perm = [perm.pop(-2)] + perm
        xt = tf.reshape(x, [-1, xs[-1]])
        yt = tf.reshape(tf.transpose(y, perm), [ys[-2], -1])
        return tf.reshape(tf.matmul(xt, yt), xs[:-1] + ys[:-2] + ys[-1:])
    return tf.matmul(x, y)


def batch_dot(x, y, axes=None):
    """Per-example dot product over ``axes`` (tf-keras' rules: default the last axis of x
    with the last of a 2-D y or the second-to-last of y; a 2-D result gains an axis)."""
    tf = _tf()
    x, y = _t(x), _t(y)
    xs, ys = list(x.shape), list(y.shape)
    xn, yn = len(xs), len(ys)
    if xn < 2 or yn < 2:
        raise ValueError("Cannot do batch_dot on inputs with rank < 2. Received inputs with "
                         "shapes %s and %s." % (tuple(xs), tuple(ys)))
    if xs[0] != ys[0]:
        raise ValueError("Cannot do batch_dot on inputs with different batch sizes. Received "
                         "inputs with shapes %s and %s." % (tuple(xs), tuple(ys)))
    if isinstance(axes, int):
        axes = [axes, axes]
    if axes is None:
        axes = [xn - 1, yn - 1] if yn == 2 else [xn - 1, yn - 2]
    if _py_any(isinstance(a, (list, tuple)) for a in axes):
        raise ValueError("Multiple target dimensions are not supported. Expected: None, int, "
                         "(int, int), Provided: %s" % (axes,))
    a0, a1 = axes[0] % xn, axes[1] % yn
    if 0 in (a0, a1):
        raise ValueError("Cannot perform batch_dot over axis 0. If your inputs are not "
                         "batched, add a dummy batch dimension to your inputs using "
                         "K.expand_dims(x, 0)")
    if xs[a0] != ys[a1]:
        raise ValueError("Cannot do batch_dot on inputs with shapes %s and %s with axes=%s. "
                         "x.shape[%d] != y.shape[%d] (%d != %d)."
                         % (tuple(xs), tuple(ys), axes, a0, a1, xs[a0], ys[a1]))
    # move the contracted axes: x's to the end, y's to position 1; flatten the rest
    xp = [0] + [i for i in range(1, xn) if i != a0] + [a0]
    yp = [0, a1] + [i for i in range(1, yn) if i != a1]
    xt, yt = tf.transpose(x, xp), tf.transpose(y, yp)
    x_rest = [xs[i] for i in xp[1:-1]]
    y_rest = [ys[i] for i in yp[2:]]
    nx, ny = 1, 1
    for d in x_rest:
        nx *= d
    for d in y_rest:
        ny *= d
    out = tf.matmul(tf.reshape(xt, [xs[0], nx, xs[a0]]), tf.reshape(yt, [ys[0], ys[a1], ny]))
    out = tf.reshape(out, [xs[0]] + x_rest + y_rest)
    if len(out.shape) == 1:
        out = tf.expand_dims(out, 1)
    return out


# ------------------------------------------------------------------ control and state


def switch(condition, then_expression, else_expression):
    tf = _tf()
    condition = _t(condition)
    if condition.dtype.name != "bool":
        condition = tf.cast(condition, "bool")
    if len(condition.shape) == 0:
        t = then_expression if callable(then_expression) else (lambda: then_expression)
        e = else_expression if callable(else_expression) else (lambda: else_expression)
        return tf.cond(condition, t, e)
    then_expression = then_expression() if callable(then_expression) else then_expression
    else_expression = else_expression() if callable(else_expression) else else_expression
    then_expression, else_expression = _t(then_expression), _t(else_expression)
    cn, en = len(condition.shape), len(then_expression.shape)
    if cn > en:
        raise ValueError("Rank of `condition` should be less than or equal to rank of "
                         "`then_expression` and `else_expression`. ndim(condition)=%d, "
                         "ndim(then_expression)=%d" % (cn, en))
    if cn > 1:  # tf-keras tiles a rank-2+ condition over the trailing axes (not rank 1)
        condition = tf.broadcast_to(
            tf.reshape(condition, list(condition.shape) + [1] * (en - cn)),
            list(then_expression.shape))
    return tf.where(condition, then_expression, else_expression)


def in_train_phase(x, alt, training=None):
    from mixprec.keras.backend import learning_phase

    if training is None:
        training = learning_phase()
    if training in (1, True):
        return x() if callable(x) else x
    if training in (0, False):
        return alt() if callable(alt) else alt
    return switch(training, x, alt)


def in_test_phase(x, alt, training=None):
    return in_train_phase(alt, x, training=training)


def update(x, new_x):
    return x.assign(new_x)


def update_add(x, increment):
    return x.assign_add(increment)


def update_sub(x, decrement):
    return x.assign_sub(decrement)


def moving_average_update(x, value, momentum):
    """x ← x * momentum + value * (1 - momentum) (tf-keras' zero_debias=False form)."""
    tf = _tf()
    value = tf.cast(value, x.dtype)
    return x.assign(x * momentum + value * (1.0 - momentum))


def batch_get_value(tensors):
    return [t.numpy() for t in tensors]


def batch_set_value(tuples):
    for x, value in tuples:
        x.assign(_np.asarray(value, dtype=getattr(x, "true_dtype", x.dtype).name))


def eval(x):  # noqa: A001 (tf-keras' name)
    return _np.asarray(x.numpy() if hasattr(x, "numpy") else x)


def print_tensor(x, message="", summarize=3):
    _tf().print(message, x, summarize=summarize)
    return x


def is_sparse(tensor):
    return False


def to_dense(tensor):
    return tensor


def map_fn(fn, elems, name=None, dtype=None):
    return _tf().map_fn(fn, elems, fn_output_signature=dtype)


def foldl(fn, elems, initializer=None, name=None):
    return _tf().foldl(fn, elems, initializer=initializer)


def foldr(fn, elems, initializer=None, name=None):
    return _tf().foldr(fn, elems, initializer=initializer)


# ------------------------------------------------------------------ losses and nn


def binary_crossentropy(target, output, from_logits=False):
    """The element-wise binary cross-entropy (no mean), tf-keras' clipping."""
    tf = _tf()
    target, output = _t(target), _t(output)
    if from_logits:
        return tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.cast(target, output.dtype),
                                                       logits=output)
    from mixprec.keras.backend import epsilon

    eps = epsilon()
    target = tf.cast(target, output.dtype)
    output = tf.clip_by_value(output, eps, 1.0 - eps)
    return -(target * tf.math.log(output + eps) + (1 - target) * tf.math.log(1 - output + eps))


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    from mixprec.keras import losses

    return losses.categorical_crossentropy(target, output, from_logits=from_logits, axis=axis)


def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1,
                                    ignore_class=None):
    from mixprec.keras import losses

    return losses.sparse_categorical_crossentropy(target, output, from_logits=from_logits,
                                                  axis=axis, ignore_class=ignore_class)


def binary_focal_crossentropy(target, output, apply_class_balancing=False, alpha=0.25,
                              gamma=2.0, from_logits=False):
    tf = _tf()
    target, output = _t(target), _t(output)
    target = tf.cast(target, output.dtype)
    p = tf.sigmoid(output) if from_logits else output
    p_t = target * p + (1 - target) * (1 - p)
    out = tf.pow(1.0 - p_t, gamma) * binary_crossentropy(target, output, from_logits)
    if apply_class_balancing:
        out = (target * alpha + (1 - target) * (1 - alpha)) * out
    return out


def categorical_focal_crossentropy(target, output, alpha=0.25, gamma=2.0, from_logits=False,
                                   axis=-1):
    from mixprec.keras import losses

    return losses.categorical_focal_crossentropy(target, output, alpha=alpha, gamma=gamma,
                                                 from_logits=from_logits, axis=axis)


def _conv_format(data_format, rank):
    from mixprec.keras.backend import image_data_format

    data_format = data_format or image_data_format()
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError("Unknown data_format: " + str(data_format))
    return {1: "NWC", 2: "NHWC"}[rank] if data_format == "channels_last" else \
        {1: "NCW", 2: "NCHW"}[rank]


def conv1d(x, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    if padding not in ("valid", "same", "causal"):
        raise ValueError("Unknown padding: " + str(padding))
    tf = _tf()
    fmt = _conv_format(data_format, 1)
    if padding == "causal":
        left = dilation_rate * (int(kernel.shape[0]) - 1)
        x = tf.pad(x, [[0, 0], [left, 0], [0, 0]] if fmt == "NWC" else
                   [[0, 0], [0, 0], [left, 0]])
        padding = "valid"
    return tf.nn.conv1d(x, kernel, strides, padding.upper(), data_format=fmt,
                        dilations=dilation_rate)


def conv2d(x, kernel, strides=(1, 1), padding="valid", data_format=None,
           dilation_rate=(1, 1)):
    if padding not in ("valid", "same"):
        raise ValueError("Unknown padding: " + str(padding))
    return _tf().nn.conv2d(x, kernel, list(strides), padding.upper(),
                           data_format=_conv_format(data_format, 2),
                           dilations=list(dilation_rate))


def depthwise_conv2d(x, depthwise_kernel, strides=(1, 1), padding="valid", data_format=None,
                     dilation_rate=(1, 1)):
    if padding not in ("valid", "same"):
        raise ValueError("Unknown padding: " + str(padding))
    return _tf().nn.depthwise_conv2d(x, depthwise_kernel, [1] + list(strides) + [1],
                                     padding.upper(), data_format=_conv_format(data_format, 2),
                                     dilations=list(dilation_rate))


def pool2d(x, pool_size, strides=(1, 1), padding="valid", data_format=None, pool_mode="max"):
    if padding not in ("valid", "same"):
        raise ValueError("Unknown padding: " + str(padding))
    if pool_mode not in ("max", "avg"):
        raise ValueError("Invalid pooling mode: " + str(pool_mode))
    tf = _tf()
    fn = tf.nn.max_pool2d if pool_mode == "max" else tf.nn.avg_pool2d
    return fn(x, list(pool_size), list(strides), padding.upper(),
              data_format=_conv_format(data_format, 2))


def batch_normalization(x, mean, var, beta, gamma, axis=-1, epsilon=1e-3):
    return _tf().nn.batch_normalization(x, mean, var, beta, gamma, epsilon)


def normalize_batch_in_training(x, gamma, beta, reduction_axes, epsilon=1e-3):
    tf = _tf()
    m, v = tf.nn.moments(x, list(reduction_axes))
    keep = [d for d in range(len(x.shape)) if d not in reduction_axes]
    shape = [x.shape[d] if d in keep else 1 for d in range(len(x.shape))]
    bm, bv = tf.reshape(m, shape), tf.reshape(v, shape)
    g = None if gamma is None else tf.reshape(gamma, shape)
    b = None if beta is None else tf.reshape(beta, shape)
    return tf.nn.batch_normalization(x, bm, bv, b, g, epsilon), m, v


_uids = {}


def get_uid(prefix=""):
    _uids[prefix] = _uids.get(prefix, 0) + 1
    return _uids[prefix]


def reset_uids():
    _uids.clear()


def manual_variable_initialization(value):
    """Accepted for compatibility: variables are initialized when created (eager)."""


def set_learning_phase(value):
    import warnings

    if value not in (0, 1):
        raise ValueError("Expected learning phase to be 0 or 1.")
    warnings.warn("`tf.keras.backend.set_learning_phase` is deprecated and will be removed "
                  "after 2020-10-11. To update it, simply pass a True/False value to the "
                  "`training` argument of the `__call__` method of your layer or model.",
                  stacklevel=2)
    from mixprec.keras import backend

    backend._LEARNING_PHASE = value


class learning_phase_scope:  # noqa: N801 (tf-keras' name)
    """Sets the learning phase within the block (0 or 1), restoring it after."""

    def __init__(self, value):
        if value not in (0, 1):
            raise ValueError("Expected learning phase to be 0 or 1.")
        self.value = value

    def __enter__(self):
        from mixprec.keras import backend

        self._old = getattr(backend, "_LEARNING_PHASE", None)
        backend._LEARNING_PHASE = self.value
        return self

    def __exit__(self, *exc):
        from mixprec.keras import backend

        backend._LEARNING_PHASE = self._old
        return False


def name_scope(name):
    return _tf().name_scope(name)


__all__ = [n for n in dir() if not n.startswith("_") and n not in ("floatx", "int_shape")]
