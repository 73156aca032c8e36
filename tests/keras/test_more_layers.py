"""The layers added for tf-keras 2.21 parity, beyond the golden comparison
(test_more_layers_tf.py): backward rules against float64 finite differences, use in a
traced fit (float32 and mixed_float16), tf-keras' errors, the training-time behaviour of
the noise layers, mask propagation and keras.initializers.Orthogonal/Identity."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.keras import layers as L  # noqa: N812
from mixprec.keras import mixed_precision
from mixprec.testing.tolerances import TOLERANCE
from test_tape import check_grad

R = np.random.default_rng(7)


def _f64(layer, shape, weights=None):
    """A float64 copy of ``layer`` built for ``shape`` with random weights."""
    layer = type(layer).from_config(dict(layer.get_config(), dtype="float64"))
    layer.build(shape)
    layer.set_weights(weights or [R.uniform(-1, 1, w.shape) for w in layer.get_weights()])
    return layer


def _with_weights(layer, names):
    """f(x, *w): the layer's call with its weights ``names`` replaced by the tensors w."""
    def f(x, *ws):
        saved = [getattr(layer, n) for n in names]
        for n, w in zip(names, ws):
            setattr(layer, n, w)
        try:
            return layer(x)
        finally:
            for n, w in zip(names, saved):
                setattr(layer, n, w)
    return f


FD_CASES = {
    "conv2dT": (L.Conv2DTranspose(2, 3, strides=2, output_padding=1), (1, 3, 3, 2),
                ["kernel", "bias"]),
    "conv2dT_same_cf": (L.Conv2DTranspose(2, 2, strides=2, padding="same",
                                          data_format="channels_first"), (1, 2, 2, 3),
                        ["kernel"]),
    "conv1dT": (L.Conv1DTranspose(2, 3, strides=2, padding="same"), (2, 3, 2),
                ["kernel", "bias"]),
    "sep2d": (L.SeparableConv2D(3, 2, depth_multiplier=2, padding="same"), (1, 3, 3, 2),
              ["depthwise_kernel", "pointwise_kernel", "bias"]),
    "sep1d_causal": (L.SeparableConv1D(2, 2, padding="causal", dilation_rate=2), (1, 5, 2),
                     ["depthwise_kernel", "pointwise_kernel"]),
    "dw1d": (L.DepthwiseConv1D(3, depth_multiplier=2, strides=2), (2, 6, 2),
             ["depthwise_kernel", "bias"]),
    "prelu": (L.PReLU(shared_axes=[1]), (2, 3, 2), ["alpha"]),
    "group_norm": (L.GroupNormalization(groups=2), (2, 3, 4), ["gamma", "beta"]),
    "einsum": (L.EinsumDense("abc,cd->abd", (None, 3), bias_axes="d"), (2, 2, 3),
               ["kernel", "bias"]),
    "up1d": (L.UpSampling1D(2), (1, 3, 2), []),
    "crop2d": (L.Cropping2D(((1, 0), (0, 1))), (1, 3, 3, 2), []),
    "zpad1d": (L.ZeroPadding1D((2, 1)), (1, 3, 2), []),
    "unit_norm": (L.UnitNormalization(axis=[1, 2]), (2, 2, 3), []),
    "thresholded_relu": (L.ThresholdedReLU(0.1), (2, 5), []),
    "conv3d_same_s2": (L.Conv3D(2, 2, strides=(2, 1, 1), padding="same"), (1, 3, 3, 2, 2),
                       ["kernel", "bias"]),
    "conv3dT_cf_dil": (L.Conv3DTranspose(2, (2, 1, 2), dilation_rate=(2, 1, 1),
                                         padding="same", data_format="channels_first"),
                       (1, 2, 3, 2, 2), ["kernel", "bias"]),
    "conv3dT_op": (L.Conv3DTranspose(2, 3, strides=2, output_padding=1), (1, 2, 2, 1, 2),
                   ["kernel"]),
    "conv3d_cf_groups": (L.Conv3D(4, (2, 1, 2), groups=2, dilation_rate=(1, 1, 2),
                                  data_format="channels_first"), (1, 4, 3, 2, 4), ["kernel"]),
}


@pytest.mark.parametrize("name", sorted(FD_CASES))
def test_gradients_match_finite_differences(name):
    proto, shape, names = FD_CASES[name]
    layer = _f64(proto, shape)
    x = R.uniform(-2, 2, shape)
    if name == "thresholded_relu":
        x = np.where(np.abs(x - 0.1) < 0.05, 0.5, x)  # away from the step
    ws = [getattr(layer, n).numpy() for n in names]
    check_grad(_with_weights(layer, names), x, *ws)


def test_dot_gradients_match_finite_differences():
    layer = L.Dot(axes=(2, 1), normalize=True, dtype="float64")
    check_grad(lambda a, b: layer([a, b]), R.uniform(-1, 1, (2, 3, 4)),
               R.uniform(-1, 1, (2, 4, 2)))


def test_time_distributed_gradients_match_finite_differences():
    td = L.TimeDistributed(L.Dense(2, activation="tanh", dtype="float64"), dtype="float64")
    td.build((2, 3, 4))
    inner = td.layer
    check_grad(lambda x, k: _with_weights(inner, ["kernel"])(
        tf.reshape(x, [6, 4]), k), R.uniform(-1, 1, (2, 3, 4)), inner.kernel.numpy())
    check_grad(td, R.uniform(-1, 1, (2, 3, 4)))


TRAIN_CASES = {
    "conv2dT": lambda: [L.Conv2DTranspose(3, 3, strides=2, padding="same"),
                        L.GlobalAveragePooling2D()],
    "conv1dT": lambda: [L.Reshape((12, 2)), L.Conv1DTranspose(3, 2, strides=2),
                        L.GlobalAveragePooling1D()],
    "sep2d": lambda: [L.SeparableConv2D(4, 3, padding="same", depth_multiplier=2),
                      L.Flatten()],
    "sep1d": lambda: [L.Reshape((12, 2)), L.SeparableConv1D(3, 2, padding="causal"),
                      L.Flatten()],
    "dw1d": lambda: [L.Reshape((12, 2)), L.DepthwiseConv1D(3), L.Flatten()],
    "prelu_group_norm": lambda: [L.GroupNormalization(2), L.PReLU(), L.Flatten()],
    "einsum_dense": lambda: [L.EinsumDense("abcd,de->abce", (3, 4, 3), bias_axes="e"),
                             L.Flatten()],
    "time_distributed": lambda: [L.Reshape((12, 2)), L.TimeDistributed(L.Dense(3)),
                                 L.Flatten()],
    "upsample_crop_pad": lambda: [L.UpSampling2D(interpolation="bilinear"),
                                  L.Cropping2D(1), L.Conv2D(2, 3), L.Flatten()],
    "unit_norm_dot": None,
    "conv3d": lambda: [L.Reshape((3, 4, 2, 1)), L.Conv3D(3, 2, padding="same"), L.Flatten()],
    "conv3d_transpose": lambda: [L.Reshape((3, 4, 2, 1)),
                                 L.Conv3DTranspose(2, 2, strides=2, padding="same"),
                                 L.GlobalMaxPooling3D()],
    "layers3d": lambda: [L.Reshape((3, 4, 2, 1)), L.ZeroPadding3D(1), L.Conv3D(2, 2),
                         L.MaxPooling3D(2, padding="same"), L.UpSampling3D(2),
                         L.AveragePooling3D(2, strides=1, padding="same"), L.Cropping3D(1),
                         L.GlobalAveragePooling3D()],
}


def _train_model(name):
    if name == "unit_norm_dot":
        a = keras.Input((6, 2))
        b = L.Dense(2)(L.UnitNormalization()(a))
        out = L.Flatten()(L.Dot(axes=(2, 2))([a, b]))
        return keras.Model(a, L.Dense(1)(out))
    return keras.Sequential([keras.Input((3, 4, 2))] + TRAIN_CASES[name]() +
                            [L.Dense(1, dtype="float32")])


@pytest.mark.parametrize("policy", ["float32", "mixed_float16"])
@pytest.mark.parametrize("name", sorted(TRAIN_CASES))
def test_traced_fit_trains(name, policy):
    mixed_precision.set_global_policy(policy)
    tf.random.set_seed(1)
    shape = (6, 2) if name == "unit_norm_dot" else (3, 4, 2)
    x = R.standard_normal((32,) + shape).astype("float32")
    y = (x.reshape(32, -1).sum(axis=1, keepdims=True) > 0).astype("float32")
    model = _train_model(name)
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    assert not model.run_eagerly
    hist = model.fit(x, y, batch_size=8, epochs=4, verbose=0)
    losses = hist.history["loss"]
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]
    if policy == "mixed_float16":
        assert model.layers[-2].compute_dtype == "float16"
        assert all(v.dtype == tf.float32 for v in model.trainable_weights)


# ------------------------------------------------------------------ errors, as tf-keras

ERRORS = [
    (lambda: L.Cropping1D((2, 2))(np.ones((1, 4, 2), "float32")), ValueError,
     "cropping parameter of Cropping layer must be greater than the input shape"),
    (lambda: L.Cropping2D(((2, 2), (0, 0)))(np.ones((1, 4, 3, 2), "float32")), ValueError,
     "Argument `cropping` must be greater than the input shape"),
    (lambda: L.Cropping2D((1, 2, 3)), ValueError, "`cropping` should have two elements"),
    (lambda: L.UpSampling2D(interpolation="foo"), NotImplementedError,
     "Value not recognized for `interpolation`: foo"),
    (lambda: L.ThresholdedReLU(None), ValueError, "Theta of a Thresholded ReLU layer cannot"),
    (lambda: L.ThresholdedReLU(-1), ValueError, "should be >=0. Received: -1"),
    (lambda: L.GroupNormalization(4)(np.ones((1, 3), "float32")), ValueError,
     r"Number of groups \(4\) cannot be more than the number of channels \(3\)"),
    (lambda: L.GroupNormalization(2)(np.ones((1, 3), "float32")), ValueError,
     r"Number of groups \(2\) must be a multiple of the number of channels \(3\)"),
    (lambda: L.Dot(1)([np.ones((2, 3), "float32"), np.ones((2, 4), "float32")]), ValueError,
     r"Incompatible input shapes: axis values 3 \(at axis 1\) != 4 \(at axis 1\)"),
    (lambda: L.Dot(1)(np.ones((2, 3), "float32")), ValueError,
     "A `Dot` layer should be called on a list of 2 inputs"),
    (lambda: L.TimeDistributed(3), ValueError, "Please initialize `TimeDistributed` layer"),
    (lambda: L.TimeDistributed(L.Dense(2))(np.ones((2, 3), "float32")), ValueError,
     "should be passed an `input_shape ` with at least 3 dimensions"),
    (lambda: L.UnitNormalization(axis="a"), TypeError, "Invalid value for `axis` argument"),
    (lambda: L.Conv2DTranspose(2, 3, strides=2, output_padding=2), ValueError,
     "Strides must be greater than output padding"),
    (lambda: L.Conv2DTranspose(2, 3)(np.ones((1, 3, 3), "float32")), ValueError,
     "expected min_ndim=4, found ndim=3"),
    (lambda: L.EinsumDense("ab,bc->ad", 3)(np.ones((2, 3), "float32")), ValueError,
     "Dimension 'd' was specified in the output 'ad' but has no corresponding dim"),
    (lambda: L.EinsumDense("ab", 3)(np.ones((2, 3), "float32")), ValueError,
     "Invalid einsum equation 'ab'"),
    (lambda: keras.initializers.Orthogonal()((3,)), ValueError,
     "must be at least two-dimensional"),
    (lambda: keras.initializers.Identity()((3, 3, 3)), ValueError,
     "Identity matrix initializer can only be used for 2D matrices"),
    (lambda: L.SpatialDropout1D(0.5)(np.ones((2, 3), "float32")), ValueError,
     "expected ndim=3, found ndim=2"),
    (lambda: L.DepthwiseConv1D(3, padding="causal"), ValueError,
     "Causal padding is only supported for `Conv1D`"),
    (lambda: L.SeparableConv2D(2, 3)(np.ones((1, 3, 3), "float32")), ValueError,
     "expected min_ndim=4, found ndim=3"),
    (lambda: L.Conv2DTranspose(2, 3, dilation_rate=(2, 1))(np.ones((1, 5, 5, 2), "float32")),
     ValueError, "Expected the 2 dimensions of the `dilation_rate` argument to be equal"),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_tf_keras(i):
    fn, exc, match = ERRORS[i]
    with pytest.raises(exc, match=match):
        fn()


# ------------------------------------------------------------------ noise layers in training

def test_spatial_dropout_drops_whole_channels():
    x = np.ones((8, 5, 16), "float32")
    y = L.SpatialDropout1D(0.5, seed=3)(x, training=True).numpy()
    per_channel = y.reshape(8, 5, 16)
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert np.all(per_channel.min(axis=1) == per_channel.max(axis=1))  # same along steps
    x4 = np.ones((8, 3, 4, 5), "float32")
    y4 = L.SpatialDropout2D(0.5, data_format="channels_first")(x4, training=True).numpy()
    flat = y4.reshape(8, 3, 20)
    assert np.all(flat.min(axis=2) == flat.max(axis=2))
    np.testing.assert_array_equal(L.SpatialDropout1D(0.5)(x).numpy(), x)  # inference


def test_gaussian_noise_and_dropout_statistics():
    x = np.ones((256, 256), "float32")
    rtol, atol = TOLERANCE[("float32", "random_moment")]
    n = L.GaussianNoise(0.5, seed=1)(x, training=True).numpy() - 1.0
    np.testing.assert_allclose([n.mean(), n.std()], [0.0, 0.5], rtol=rtol, atol=atol * 4)
    d = L.GaussianDropout(0.2, seed=2)(x, training=True).numpy()
    np.testing.assert_allclose([d.mean(), d.std()], [1.0, np.sqrt(0.2 / 0.8)], rtol=rtol,
                               atol=atol * 4)
    np.testing.assert_array_equal(L.GaussianNoise(0.5)(x).numpy(), x)
    np.testing.assert_array_equal(L.GaussianDropout(0.5)(x).numpy(), x)


def test_alpha_dropout_keeps_mean_and_variance():
    x = np.random.default_rng(0).standard_normal((256, 256)).astype("float32")
    y = L.AlphaDropout(0.2, seed=4)(x, training=True).numpy()
    rtol, atol = TOLERANCE[("float32", "random_moment")]
    np.testing.assert_allclose([y.mean(), y.var()], [x.mean(), x.var()], rtol=rtol,
                               atol=atol * 4)
    np.testing.assert_array_equal(L.AlphaDropout(0.2)(x).numpy(), x)


# ------------------------------------------------------------------ masks

IDS = np.array([[3, 1, 0, 0], [2, 0, 0, 0]], "int32")


def test_keras_mask_attribute_is_unset_on_a_new_tensor():
    t = tf.constant([1.0, 2.0])
    with pytest.raises(AttributeError):
        t._keras_mask  # noqa: B018
    t._keras_mask = tf.constant([True, False])
    np.testing.assert_array_equal(t._keras_mask.numpy(), [True, False])
    del t._keras_mask
    assert getattr(t, "_keras_mask", None) is None


def test_embedding_mask_flows_through_sequential_layers():
    model = keras.Sequential([L.Embedding(5, 3, mask_zero=True), L.Dense(4), L.Dropout(0.2),
                              L.Activation("relu")])
    y = model(IDS)
    np.testing.assert_array_equal(y._keras_mask.numpy(), IDS != 0)
    flat = L.Flatten()(y)  # a layer without masking support drops the mask
    assert getattr(flat, "_keras_mask", None) is None
    assert L.Embedding(5, 3).supports_masking is False
    assert L.Embedding(5, 3, mask_zero=True).supports_masking is True


def test_global_average_pooling_1d_averages_unmasked_steps():
    x = R.standard_normal((2, 4, 3)).astype("float32")
    mask = np.array([[True, True, False, True], [False, True, False, False]])
    y = L.GlobalAveragePooling1D()(x, mask=tf.constant(mask)).numpy()
    want = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    rtol, atol = TOLERANCE[("float32", "reduction")]
    np.testing.assert_allclose(y, want, rtol=rtol, atol=atol)
    t = tf.constant(x)
    t._keras_mask = tf.constant(mask)
    np.testing.assert_allclose(L.GlobalAveragePooling1D()(t).numpy(), want, rtol=rtol,
                               atol=atol)


def test_masking_layer():
    x = np.array([[[1.0, 2.0], [0.0, 0.0], [0.0, 3.0]]], "float32")
    y = L.Masking()(x)
    np.testing.assert_array_equal(y._keras_mask.numpy(), [[True, False, True]])
    y = L.Masking(mask_value=3.0)(np.full((1, 2, 2), 3.0, "float32"))
    np.testing.assert_array_equal(y.numpy(), np.zeros((1, 2, 2)))
    np.testing.assert_array_equal(y._keras_mask.numpy(), [[False, False]])


def test_explicit_mask_to_a_functional_model():
    inp = keras.Input((4, 3))
    model = keras.Model(inp, L.GlobalAveragePooling1D()(L.Dense(2)(inp)))
    x = R.standard_normal((2, 4, 3)).astype("float32")
    mask = np.array([[True, False, False, False], [True, True, True, True]])
    y = model(x, mask=tf.constant(mask)).numpy()
    dense = model.layers[1](x).numpy()
    rtol, atol = TOLERANCE[("float32", "matmul")]
    np.testing.assert_allclose(y[0], dense[0, 0], rtol=rtol, atol=atol)
    np.testing.assert_allclose(y[1], dense[1].mean(0), rtol=rtol, atol=atol)


def test_layers_that_take_a_mask_get_it_implicitly():
    seen = {}

    class Probe(L.Layer):
        def call(self, inputs, mask=None):
            seen["mask"] = mask
            return inputs

    e = L.Embedding(5, 3, mask_zero=True)(IDS)
    Probe()(e)
    np.testing.assert_array_equal(seen["mask"].numpy(), IDS != 0)
    Probe()(e, mask=None)  # an explicit mask wins
    assert seen["mask"] is None
    with pytest.raises(TypeError, match="does not support masking"):
        L.Flatten().compute_mask(e, tf.constant(IDS != 0))


def test_softmax_and_lambda_masks():
    logits = tf.constant([[1.0, 2.0, 3.0]])
    y = L.Softmax()(logits, mask=tf.constant([[True, True, False]])).numpy()
    e = np.exp([1.0, 2.0])
    rtol, atol = TOLERANCE[("float32", "softmax")]
    np.testing.assert_allclose(y, [[e[0] / e.sum(), e[1] / e.sum(), 0.0]], rtol=rtol, atol=atol)
    lam = L.Lambda(lambda x: x * 2, mask=lambda x, m: tf.logical_not(m))
    emb = L.Embedding(5, 3, mask_zero=True)(IDS)
    np.testing.assert_array_equal(lam(emb)._keras_mask.numpy(), IDS == 0)


def test_time_distributed_passes_the_mask_per_step():
    seen = {}

    class Probe(L.Layer):
        def call(self, inputs, mask=None):
            seen["mask"] = mask
            return inputs * 2

    td = L.TimeDistributed(Probe())
    x = np.ones((2, 3, 4), "float32")
    mask = tf.constant([[True, False, True], [False, False, True]])
    td(x, mask=mask)
    np.testing.assert_array_equal(seen["mask"].numpy(), mask.numpy().reshape(6))


# ------------------------------------------------------------------ initializers

@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (3, 2, 5), (5, 5)])
def test_orthogonal_initializer(shape):
    init = keras.initializers.Orthogonal(gain=2.0, seed=5)
    w = init(shape).numpy()
    assert w.shape == shape and w.dtype == np.float32
    m = w.reshape(-1, shape[-1]) / 2.0
    rtol, atol = TOLERANCE[("float32", "matmul")]
    gram = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
    np.testing.assert_allclose(gram, np.eye(min(m.shape)), rtol=rtol, atol=atol)
    np.testing.assert_array_equal(keras.initializers.Orthogonal(2.0, seed=5)(shape).numpy(), w)
    assert init.get_config() == {"gain": 2.0, "seed": 5}
    assert isinstance(keras.initializers.get("orthogonal"), keras.initializers.Orthogonal)


def test_identity_initializer():
    w = keras.initializers.Identity(gain=3.0)((2, 4), dtype="float64").numpy()
    np.testing.assert_array_equal(w, 3.0 * np.eye(2, 4))
    assert keras.initializers.Identity().get_config() == {"gain": 1.0}
    layer = L.Dense(3, kernel_initializer="identity")
    layer.build((None, 3))
    np.testing.assert_array_equal(layer.kernel.numpy(), np.eye(3))


def test_models_support_masking_and_compute_output_masks():
    inp = keras.Input((4,), dtype="int32")
    model = keras.Model(inp, L.Dense(2)(L.Embedding(5, 3, mask_zero=True)(inp)))
    assert model.supports_masking
    assert keras.Sequential([L.Dense(2)]).supports_masking
    sym = model.compute_mask(inp, None)
    assert sym.shape.as_list() == [None, 4] and sym.dtype == tf.bool
    np.testing.assert_array_equal(model.compute_mask(tf.constant(IDS)).numpy(), IDS != 0)
    outer_in = keras.Input((4,), dtype="int32")
    nested = model(outer_in)
    assert nested._keras_mask.shape.as_list() == [None, 4]
    outer = keras.Model(outer_in, L.GlobalAveragePooling1D()(nested))
    emb = model.layers[1](IDS)
    want = model.layers[2](emb).numpy()
    m = (IDS != 0)[..., None]
    rtol, atol = TOLERANCE[("float32", "reduction")]
    np.testing.assert_allclose(outer(IDS).numpy(), (want * m).sum(1) / m.sum(1), rtol=rtol,
                               atol=atol)


def test_symbolic_masks_of_a_users_layer_and_huge_inputs():
    class MakesMask(L.Layer):
        def __init__(self):
            super().__init__()
            self.supports_masking = True

        def compute_mask(self, inputs, mask=None):
            return tf.greater(inputs[..., 0], 0.0)

    out = MakesMask()(keras.Input((5, 3)))
    assert out._keras_mask.shape.as_list() == [None, 5]
    big = keras.Input((2**28,))
    added = L.Add()([big, big])  # no masks: nothing is allocated for them
    assert getattr(added, "_keras_mask", None) is None


@pytest.mark.parametrize("eq,out_shape,want", [
    ("abc,cd->abd", (None, 2), [None, 7, 2]),
    ("abc,cde->abde", (None, 3, 2), [None, 7, 3, 2]),
    ("...b,bc->...c", 3, [None, 7, 3]),
    ("ab...,bc->ac...", 3, [None, 3, 5]),
])
def test_einsum_dense_functional_shape_takes_shared_dims_from_the_input(eq, out_shape, want):
    """tf-keras' functional API runs the einsum symbolically: a None of output_shape that
    an input axis shares is known (compute_output_shape itself keeps the None)."""
    inp = keras.Input((7, 5))
    out = L.EinsumDense(eq, out_shape)(inp)
    assert out.shape.as_list() == want
    model = keras.Model(inp, L.Flatten()(out))
    assert model(np.ones((2, 7, 5), "float32")).shape[1] == np.prod(want[1:])


def test_batch_normalization_fused_path_ignores_a_mask_with_a_warning():
    x = R.standard_normal((2, 3, 3, 2)).astype("float32")
    bn = L.BatchNormalization()
    with pytest.warns(UserWarning, match="Masking is not supported with `fused=True`"):
        y = bn(x, training=True, mask=tf.constant(np.ones((2, 3, 3), bool)))
    np.testing.assert_allclose(y.numpy(), L.BatchNormalization()(x, training=True).numpy(),
                               *TOLERANCE[("float32", "reduction")])


def test_bilinear_upsampling_returns_float32_as_tf_image_resize():
    for dtype in ("float64", "bfloat16", "float16"):
        y = L.UpSampling2D(interpolation="bilinear", dtype=dtype)(np.ones((1, 2, 2, 1)))
        assert y.dtype == tf.float32
    assert L.UpSampling1D(dtype="float64")(np.ones((1, 2, 2))).dtype == tf.float64
    sym = L.UpSampling2D(interpolation="bilinear", dtype="float64")(keras.Input((2, 2, 1)))
    assert sym.dtype == tf.float32


def test_bilinear_upsampling_gradient_matches_finite_differences():
    """The interpolation UpSampling2D runs (in float32 there), differentiated in float64."""
    from mixprec.keras.layers.resampling import _bilinear_axis

    check_grad(lambda x: _bilinear_axis(_bilinear_axis(x, 1, 4), 2, 9),
               R.uniform(-2, 2, (1, 2, 3, 2)))
