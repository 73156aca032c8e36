"""Convolution, pooling, padding and ReLU layers: arguments, configs, shapes and errors as
tf-keras 2.21, and numerics against float64 NumPy references once mixprec.nn has the ops.

Output shapes are checked against the closed forms (valid: floor((n - d(k-1) - 1)/s) + 1,
same: ceil(n/s)) over a grid; configs must round-trip with tf-keras' keys.
"""

import itertools
import math

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.keras import layers, mixed_precision, regularizers
from mixprec.testing.tolerances import TOLERANCE

HAS_NN = all(hasattr(tf.nn, f) for f in ("conv2d", "conv1d", "max_pool2d", "avg_pool2d",
                                         "bias_add", "depthwise_conv2d"))
needs_nn = pytest.mark.skipif(not HAS_NN, reason="mixprec.nn convolution ops not built")


def expected_len(n, k, s, d, padding):
    if n is None:
        return None
    if padding == "same":
        return math.ceil(n / s)
    return (n - d * (k - 1) - 1) // s + 1


# --------------------------------------------------------------------------- shapes


@pytest.mark.parametrize("n,k,s,d,padding", [
    (n, k, s, d, p) for n, k, s, d, p in itertools.product(
        (5, 8, 28, None), (1, 2, 3), (1, 2, 3), (1, 2), ("valid", "same"))
    if not (s > 1 and d > 1) and (n is None or n >= d * (k - 1) + 1)])
def test_conv2d_output_shape_grid(n, k, s, d, padding):
    for fmt in ("channels_last", "channels_first"):
        layer = layers.Conv2D(6, k, strides=s, padding=padding, dilation_rate=d,
                              data_format=fmt)
        e = expected_len(n, k, s, d, padding)
        shape = (None, n, n + 1 if n else None, 3) if fmt == "channels_last" else \
            (None, 3, n, n + 1 if n else None)
        e2 = expected_len(n + 1 if n else None, k, s, d, padding)
        want = (None, e, e2, 6) if fmt == "channels_last" else (None, 6, e, e2)
        assert layer.compute_output_shape(shape) == want


@pytest.mark.parametrize("n,k,s,padding", list(itertools.product((4, 7, 10), (1, 2, 3), (1, 2, 3),
                                                             ("valid", "same"))))
def test_pooling_and_conv1d_output_shapes(n, k, s, padding):
    e = expected_len(n, k, s, 1, padding)
    assert layers.MaxPooling2D(k, s, padding).compute_output_shape((2, n, n, 3)) == \
        (2, e, e, 3)
    assert layers.AveragePooling2D(k, s, padding, data_format="channels_first") \
        .compute_output_shape((2, 3, n, n)) == (2, 3, e, e)
    assert layers.MaxPooling1D(k, s, padding).compute_output_shape((2, n, 3)) == (2, e, 3)
    assert layers.AveragePooling1D(k, s, padding).compute_output_shape((2, n, 3)) == (2, e, 3)
    assert layers.Conv1D(4, k, strides=s, padding=padding).compute_output_shape((2, n, 3)) == \
        (2, e, 4)
    causal = layers.Conv1D(4, k, strides=s, padding="causal")
    assert causal.compute_output_shape((2, n, 3)) == (2, math.ceil(n / s), 4)


def test_other_output_shapes():
    assert layers.MaxPooling2D().compute_output_shape((None, 28, 28, 3)) == (None, 14, 14, 3)
    assert layers.MaxPooling2D(strides=1).compute_output_shape((None, 5, 5, 3)) == \
        (None, 4, 4, 3)
    assert layers.GlobalAveragePooling2D().compute_output_shape((4, 5, 6, 3)) == (4, 3)
    assert layers.GlobalMaxPooling2D(keepdims=True).compute_output_shape((4, 5, 6, 3)) == \
        (4, 1, 1, 3)
    assert layers.GlobalMaxPooling2D(data_format="channels_first").compute_output_shape(
        (4, 3, 5, 6)) == (4, 3)
    assert layers.GlobalAveragePooling1D().compute_output_shape((4, 5, 3)) == (4, 3)
    assert layers.GlobalMaxPooling1D(keepdims=True).compute_output_shape((4, 5, 3)) == (4, 1, 3)
    assert layers.ZeroPadding2D(((1, 2), (3, 4))).compute_output_shape((1, 5, 6, 3)) == \
        (1, 8, 13, 3)
    assert layers.ZeroPadding2D(2, data_format="channels_first").compute_output_shape(
        (1, 3, 5, 6)) == (1, 3, 9, 10)
    assert layers.DepthwiseConv2D(3, depth_multiplier=2).compute_output_shape(
        (None, 8, 8, 5)) == (None, 6, 6, 10)
    assert layers.BatchNormalization().compute_output_shape((None, 4, 4, 3)) == \
        (None, 4, 4, 3)
    assert layers.ReLU().compute_output_shape((None, 7)) == (None, 7)
    # rank-5 input: extra leading batch dimensions
    assert layers.Conv2D(4, 3).compute_output_shape((2, 3, 8, 8, 1)) == (2, 3, 6, 6, 4)


# --------------------------------------------------------------------------- weights


@pytest.mark.parametrize("layer,shape,weights,count", [
    (lambda: layers.Conv2D(32, 3), (None, 28, 28, 1), [(3, 3, 1, 32), (32,)], 320),
    (lambda: layers.Conv2D(64, (3, 5), use_bias=False), (None, 13, 13, 32),
     [(3, 5, 32, 64)], 30720),
    (lambda: layers.Conv2D(8, 3, groups=4), (None, 9, 9, 12), [(3, 3, 3, 8), (8,)], 224),
    (lambda: layers.Conv2D(4, 1, data_format="channels_first"), (None, 6, 5, 5),
     [(1, 1, 6, 4), (4,)], 28),
    (lambda: layers.Conv1D(5, 4), (None, 10, 3), [(4, 3, 5), (5,)], 65),
    (lambda: layers.DepthwiseConv2D(3, depth_multiplier=2), (None, 8, 8, 5),
     [(3, 3, 5, 2), (10,)], 100),
    (lambda: layers.BatchNormalization(), (None, 6, 6, 7), [(7,)] * 4, 28),
    (lambda: layers.BatchNormalization(axis=1, center=False), (None, 7, 6, 6), [(7,)] * 3, 21),
])
def test_weights_and_param_counts(layer, shape, weights, count):
    layer = layer()
    layer.build(shape)
    assert [tuple(w.shape) for w in layer.weights] == weights
    assert layer.count_params() == count


def test_batch_norm_weights_and_dtypes_under_mixed_policy():
    mixed_precision.set_global_policy("mixed_float16")
    bn = layers.BatchNormalization()
    bn.build((None, 4, 4, 3))
    names = [w.name for w in bn.weights]
    assert [n.split("/")[-1] for n in names] == ["gamma:0", "beta:0", "moving_mean:0",
                                                 "moving_variance:0"]
    assert all(w.dtype == tf.float32 for w in bn.weights)
    assert [w.trainable for w in bn.weights] == [True, True, False, False]
    assert len(bn.trainable_weights) == 2 and len(bn.non_trainable_weights) == 2
    conv = layers.Conv2D(2, 3)
    conv.build((None, 5, 5, 3))
    assert conv.kernel.dtype == tf.float32 and conv.compute_dtype == "float16"
    pure16 = layers.BatchNormalization(dtype="float16")
    pure16.build((None, 3))
    assert all(w.dtype == tf.float32 for w in pure16.weights)  # raised to float32


# --------------------------------------------------------------------------- configs


CONFIG_CASES = [
    (layers.Conv2D, dict(filters=8, kernel_size=(3, 2), strides=2, padding="same",
                         data_format="channels_first", activation="relu", use_bias=False,
                         kernel_regularizer=regularizers.L2(0.1), groups=2)),
    (layers.Conv1D, dict(filters=4, kernel_size=5, padding="causal", dilation_rate=2)),
    (layers.DepthwiseConv2D, dict(kernel_size=3, depth_multiplier=3,
                                  depthwise_regularizer="l1")),
    (layers.MaxPooling2D, dict(pool_size=3, strides=1, padding="same")),
    (layers.AveragePooling2D, dict()),
    (layers.MaxPooling1D, dict(pool_size=4)),
    (layers.AveragePooling1D, dict(strides=1)),
    (layers.GlobalAveragePooling2D, dict(keepdims=True)),
    (layers.GlobalMaxPooling2D, dict()),
    (layers.GlobalAveragePooling1D, dict()),
    (layers.GlobalMaxPooling1D, dict(data_format="channels_first")),
    (layers.ZeroPadding2D, dict(padding=(1, 2))),
    (layers.BatchNormalization, dict(axis=1, momentum=0.9, epsilon=1e-5, center=False,
                                     gamma_regularizer="l2")),
    (layers.ReLU, dict(max_value=6.0, negative_slope=0.1, threshold=0.5)),
]


@pytest.mark.parametrize("cls,kwargs", CONFIG_CASES)
def test_config_round_trip(cls, kwargs):
    layer = cls(name="x", **kwargs)
    config = layer.get_config()
    clone = cls.from_config(config)
    assert clone.get_config() == config
    assert config["name"] == "x" and config["dtype"] == "float32"


def test_config_keys_as_tf_keras():
    c = layers.Conv2D(32, 3, kernel_regularizer="l2").get_config()
    assert list(c) == ["name", "trainable", "dtype", "filters", "kernel_size", "strides",
                       "padding", "data_format", "dilation_rate", "groups", "activation",
                       "use_bias", "kernel_initializer", "bias_initializer",
                       "kernel_regularizer", "bias_regularizer", "activity_regularizer",
                       "kernel_constraint", "bias_constraint"]
    assert c["kernel_size"] == (3, 3) and c["strides"] == (1, 1) and c["padding"] == "valid"
    assert c["data_format"] == "channels_last" and c["activation"] == "linear"
    assert c["kernel_regularizer"]["config"] == {"l2": 0.009999999776482582}
    assert c["kernel_initializer"]["class_name"] == "GlorotUniform"
    d = layers.DepthwiseConv2D(3).get_config()
    assert "filters" not in d and "kernel_initializer" not in d
    assert d["depth_multiplier"] == 1 and d["depthwise_initializer"]["class_name"] == \
        "GlorotUniform"
    p = layers.MaxPooling2D().get_config()
    assert (p["pool_size"], p["strides"], p["padding"], p["data_format"]) == \
        ((2, 2), (2, 2), "valid", "channels_last")
    assert layers.MaxPooling1D().get_config()["pool_size"] == (2,)
    b = layers.BatchNormalization().get_config()
    assert (b["axis"], b["momentum"], b["epsilon"], b["center"], b["scale"]) == \
        (-1, 0.99, 1e-3, True, True)
    bn = layers.BatchNormalization()
    bn.build((None, 4, 4, 3))
    assert bn.get_config()["axis"] == [3]
    r = layers.ReLU().get_config()
    assert (r["max_value"], r["negative_slope"], r["threshold"]) == (None, 0.0, 0.0)
    z = layers.ZeroPadding2D().get_config()
    assert z["padding"] == ((1, 1), (1, 1))
    mixed = layers.Conv2D(1, 1, dtype="mixed_float16").get_config()
    assert mixed["dtype"] == {"module": "keras.mixed_precision", "class_name": "Policy",
                              "config": {"name": "mixed_float16"}, "registered_name": None}


def test_default_names_and_aliases():
    keras.backend.clear_session()
    assert layers.Conv2D(1, 1).name == "conv2d"
    assert layers.MaxPool2D().name == "max_pooling2d"
    assert layers.BatchNormalization().name == "batch_normalization"
    assert layers.ReLU().name == "re_lu"
    assert layers.GlobalAvgPool2D is layers.GlobalAveragePooling2D
    assert layers.Convolution2D is layers.Conv2D
    assert keras.models.Sequential is keras.Sequential and keras.models.Model is keras.Model


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("make,match", [
    (lambda: layers.Conv2D(-1, 3), "Expected a strictly positive value. Received filters=-1"),
    (lambda: layers.Conv2D(0, 3), "strictly positive"),
    (lambda: layers.Conv2D(4, 3, strides=0), "cannot contains 0"),
    (lambda: layers.Conv2D(4, 0), "does not satisfy the requirement `> 0`"),
    (lambda: layers.Conv2D(4, (3, 3, 3)), "must be a tuple of 2 integers"),
    (lambda: layers.Conv2D(4, 3, strides=-1), "requirement `>= 0`"),
    (lambda: layers.Conv2D(4, 3, padding="full"), "The `padding` argument must be"),
    (lambda: layers.Conv2D(4, 3, padding="causal"), "Causal padding is only supported"),
    (lambda: layers.Conv2D(4, 3, data_format="NHWC"), "The `data_format` argument must be"),
    (lambda: layers.Conv2D(5, 3, groups=2), "evenly divisible by the number of groups"),
    (lambda: layers.Conv2D(4, 3, strides=2, dilation_rate=2),
     "`strides > 1` not supported in conjunction with `dilation_rate > 1`"),
    (lambda: layers.MaxPooling2D(strides=-1), "requirement `>= 0`"),
    (lambda: layers.MaxPooling2D(padding="full"), "The `padding` argument must be"),
    (lambda: layers.ZeroPadding2D((1, 2, 3)), "`padding` should have two elements"),
    (lambda: layers.ZeroPadding2D("x"), "`padding` should"),
    (lambda: layers.ReLU(max_value=-1), "max_value of a ReLU layer cannot be a negative"),
    (lambda: layers.ReLU(negative_slope=-0.1), "negative_slope"),
    (lambda: layers.ReLU(threshold=-1), "threshold"),
])
def test_bad_arguments(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_bad_batch_norm_arguments():
    with pytest.raises(TypeError, match="Expected an int or a list/tuple of ints"):
        layers.BatchNormalization(axis="x")
    bn = layers.BatchNormalization(axis=4)
    with pytest.raises(ValueError, match="Invalid value for `axis` argument"):
        bn.build((None, 3, 3, 2))
    with pytest.raises(ValueError, match="undefined `axis` dimension"):
        layers.BatchNormalization().build((None, 3, None))


def test_build_errors():
    with pytest.raises(ValueError, match="channel dimension of the inputs should be defined"):
        layers.Conv2D(2, 3).build((None, 5, 5, None))
    with pytest.raises(ValueError, match="number of input channels must be evenly divisible"):
        layers.Conv2D(4, 3, groups=2).build((None, 5, 5, 3))
    with pytest.raises(ValueError, match="One of the dimensions in the output is <= 0"):
        layers.Conv2D(2, 5).build((None, 3, 3, 1))
    with pytest.raises(ValueError, match="One of the dimensions in the output is <= 0"):
        layers.Conv2D(2, 3).build((None, 2, 2, 1))  # an empty output: refused as tf-keras'
    with pytest.raises(ValueError, match="should have rank 4"):  # functional build does
        layers.DepthwiseConv2D(3).build((None, 5, 5))
    # tf-keras accepts zero pooling strides and 'causal' at construction; the call refuses
    with pytest.raises(ValueError, match="cannot contain 0"):
        layers.MaxPooling2D(strides=0)(keras.Input((4, 4, 1)))
    with pytest.raises(ValueError, match="must be one of"):
        layers.MaxPooling2D(padding="causal")(keras.Input((4, 4, 1)))
    with pytest.raises(ValueError, match="Computed output size would be negative"):
        layers.MaxPooling2D(3, 1)(keras.Input((2, 2, 1)))
    with pytest.raises(ValueError, match="Computed output size would be negative"):
        layers.MaxPooling2D(4, 1)(keras.Input((2, 2, 1)))
    assert layers.Conv2D(2, 3).compute_output_shape((None, 5, 5, 1)).as_list() == \
        [None, 3, 3, 2]  # a TensorShape, as tf-keras returns


def test_input_rank_and_channel_checks():
    x3 = keras.Input((5, 5))
    with pytest.raises(ValueError, match="expected min_ndim=4, found ndim=3"):
        layers.Conv2D(2, 3)(x3)
    with pytest.raises(ValueError, match="expected ndim=4, found ndim=3"):
        layers.MaxPooling2D()(x3)
    with pytest.raises(ValueError, match="expected ndim=3, found ndim=4"):
        layers.GlobalAveragePooling1D()(keras.Input((5, 5, 1)))
    conv = layers.Conv2D(2, 3)
    conv.build((None, 5, 5, 3))
    with pytest.raises(ValueError, match="expected axis -1 of input shape to have value 3"):
        conv(np.zeros((1, 5, 5, 4), "float32"))


# --------------------------------------------------------------------------- numerics


def _np_conv2d(x, w, stride, padding, dilation, groups=1):
    """float64 NHWC convolution (the reference; tests only)."""
    n, h, wd, c = x.shape
    kh, kw, cin_g, f = w.shape
    ekh, ekw = dilation * (kh - 1) + 1, dilation * (kw - 1) + 1
    if padding == "same":
        oh, ow = math.ceil(h / stride), math.ceil(wd / stride)
        ph = max((oh - 1) * stride + ekh - h, 0)
        pw = max((ow - 1) * stride + ekw - wd, 0)
        x = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
    else:
        oh, ow = (h - ekh) // stride + 1, (wd - ekw) // stride + 1
    out = np.zeros((n, oh, ow, f))
    fg = f // groups
    for g in range(groups):
        xs = x[..., g * cin_g:(g + 1) * cin_g]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, i * dilation: i * dilation + (oh - 1) * stride + 1: stride,
                           j * dilation: j * dilation + (ow - 1) * stride + 1: stride, :]
                out[..., g * fg:(g + 1) * fg] += patch @ w[i, j, :, g * fg:(g + 1) * fg]
    return out


@needs_nn
@pytest.mark.parametrize("stride,padding,dilation,groups", [
    (1, "valid", 1, 1), (2, "same", 1, 1), (1, "same", 2, 1), (2, "valid", 1, 2),
    (1, "valid", 1, 3)])
def test_conv2d_layer_matches_numpy(stride, padding, dilation, groups):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 9, 8, 6)).astype("float32")
    layer = layers.Conv2D(6, 3, strides=stride, padding=padding, dilation_rate=dilation,
                          groups=groups, activation="relu", bias_initializer="random_normal")
    y = layer(x).numpy()
    ref = _np_conv2d(x.astype(np.float64), layer.kernel.numpy().astype(np.float64), stride,
                     padding, dilation, groups) + layer.bias.numpy()
    ref = np.maximum(ref, 0)
    rtol, atol = TOLERANCE[("float32", "matmul")]
    assert y.shape == ref.shape
    np.testing.assert_allclose(y, ref, rtol=rtol, atol=atol)


@needs_nn
def test_conv2d_channels_first_and_mixed_dtype():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 7, 7)).astype("float32")
    layer = layers.Conv2D(4, 3, data_format="channels_first", dtype="mixed_float16")
    y = layer(x)
    assert y.dtype == tf.float16 and tuple(y.shape) == (2, 4, 5, 5)
    assert layer.kernel.dtype == tf.float32
    ref = _np_conv2d(x.transpose(0, 2, 3, 1).astype(np.float16).astype(np.float64),
                     layer.kernel.numpy().astype(np.float16).astype(np.float64), 1, "valid", 1)
    rtol, atol = TOLERANCE[("float16", "matmul")]
    np.testing.assert_allclose(y.numpy().astype(np.float64), ref.transpose(0, 3, 1, 2),
                               rtol=rtol, atol=atol)


@needs_nn
def test_conv1d_causal_and_depthwise_match_numpy():
    rng = np.random.default_rng(5)
    rtol, atol = TOLERANCE[("float32", "matmul")]
    x = rng.standard_normal((2, 10, 3)).astype("float32")
    c1 = layers.Conv1D(4, 3, padding="causal", dilation_rate=2, use_bias=False)
    y = c1(x).numpy()
    xp = np.pad(x.astype(np.float64), ((0, 0), (4, 0), (0, 0)))[:, :, None, :]
    ref = _np_conv2d(xp, c1.kernel.numpy()[:, None].astype(np.float64), 1, "valid", 2)[:, :, 0]
    np.testing.assert_allclose(y, ref, rtol=rtol, atol=atol)
    x2 = rng.standard_normal((2, 6, 6, 3)).astype("float32")
    dw = layers.DepthwiseConv2D(3, depth_multiplier=2, use_bias=False)
    y2 = dw(x2).numpy()
    k = dw.depthwise_kernel.numpy().astype(np.float64)  # (3, 3, 3, 2)
    ref2 = np.concatenate([_np_conv2d(x2[..., c:c + 1].astype(np.float64), k[:, :, c:c + 1, :],
                                      1, "valid", 1) for c in range(3)], axis=-1)
    np.testing.assert_allclose(y2, ref2, rtol=rtol, atol=atol)


@needs_nn
@pytest.mark.parametrize("padding", ["valid", "same"])
def test_pooling_layers_match_numpy(padding):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 5, 5, 3)).astype("float32")
    xd = x.astype(np.float64)
    mx = layers.MaxPooling2D(2, padding=padding)(x).numpy()
    av = layers.AveragePooling2D(2, padding=padding)(x).numpy()
    n = 3 if padding == "same" else 2
    ref_max = np.zeros((2, n, n, 3))
    ref_avg = np.zeros((2, n, n, 3))
    for i in range(n):
        for j in range(n):
            win = xd[:, 2 * i:2 * i + 2, 2 * j:2 * j + 2, :]  # 'same' windows at the edge
            ref_max[:, i, j] = win.max(axis=(1, 2))       # hold only the valid elements
            ref_avg[:, i, j] = win.mean(axis=(1, 2))
    rtol, atol = TOLERANCE[("float32", "reduction")]
    np.testing.assert_allclose(mx, ref_max, rtol=rtol, atol=atol)
    np.testing.assert_allclose(av, ref_avg, rtol=rtol, atol=atol)
    g = layers.GlobalAveragePooling2D()(x).numpy()
    np.testing.assert_allclose(g, xd.mean(axis=(1, 2)), rtol=rtol, atol=atol)
    x1 = rng.standard_normal((2, 7, 3)).astype("float32")
    m1 = layers.MaxPooling1D(3, strides=2, padding=padding)(x1).numpy()
    e = 4 if padding == "same" else 3
    assert m1.shape == (2, e, 3)
    first = x1[:, 0:2] if padding == "same" else x1[:, 0:3]  # 'same' pads one step on the left
    np.testing.assert_allclose(m1[:, 0], first.max(axis=1), rtol=rtol, atol=atol)


def test_zero_padding_and_relu_values():
    x = np.arange(12, dtype="float32").reshape(1, 2, 2, 3) - 5
    y = layers.ZeroPadding2D(((1, 0), (0, 2)))(x).numpy()
    np.testing.assert_array_equal(y, np.pad(x, ((0, 0), (1, 0), (0, 2), (0, 0))))
    r = layers.ReLU(max_value=4.0, negative_slope=0.5, threshold=1.0)(x).numpy()
    ref = np.where(x >= 4, 4.0, np.where(x > 1, x, 0.5 * (x - 1)))
    np.testing.assert_allclose(r, ref)
    assert layers.ReLU(dtype="mixed_float16")(x).dtype == tf.float16


@needs_nn
@pytest.mark.parametrize("policy", ["float32", "mixed_float16"])
def test_every_weight_gets_a_gradient(policy):
    mixed_precision.set_global_policy(policy)
    model = keras.Sequential([
        keras.Input((8, 8, 3)), layers.ZeroPadding2D(1), layers.Conv2D(4, 3, groups=1),
        layers.BatchNormalization(), layers.ReLU(), layers.DepthwiseConv2D(3, padding="same"),
        layers.AveragePooling2D(), layers.Conv2D(4, 1, kernel_regularizer="l2"),
        layers.GlobalMaxPooling2D(), layers.Dense(2)])
    x = np.random.default_rng(7).standard_normal((4, 8, 8, 3)).astype("float32")
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.cast(model(x, training=True), "float32")) + \
            tf.add_n(model.losses)
    grads = tape.gradient(loss, model.trainable_weights)
    assert len(grads) == 10
    for w, g in zip(model.trainable_weights, grads):
        assert g is not None, w.name
        assert g.dtype == tf.float32 and tuple(g.shape) == tuple(w.shape)
        assert np.isfinite(g.numpy()).all()


@needs_nn
def test_conv2d_rank5_input_folds_leading_dimensions():
    x = np.random.default_rng(8).standard_normal((2, 3, 6, 6, 2)).astype("float32")
    layer = layers.Conv2D(4, 3, bias_initializer="ones")
    y = layer(x).numpy()
    assert y.shape == (2, 3, 4, 4, 4)
    flat = layer(x.reshape(6, 6, 6, 2)).numpy()
    np.testing.assert_array_equal(y.reshape(6, 4, 4, 4), flat)


@needs_nn
def test_functional_and_channels_first_pipelines():
    inp = keras.Input((3, 8, 8))
    h = layers.ZeroPadding2D(1, data_format="channels_first")(inp)
    h = layers.Conv2D(4, 3, data_format="channels_first", activation="relu")(h)
    h = layers.MaxPooling2D(data_format="channels_first")(h)
    h = layers.BatchNormalization(axis=1)(h)
    out = layers.GlobalAveragePooling2D(data_format="channels_first")(h)
    model = keras.Model(inp, out)
    assert model.output_shape == (None, 4)
    assert tuple(model(np.ones((2, 3, 8, 8), "float32")).shape) == (2, 4)
    assert [la.output_shape for la in model.layers[1:]] == [
        (None, 3, 10, 10), (None, 4, 8, 8), (None, 4, 4, 4), (None, 4, 4, 4), (None, 4)]
