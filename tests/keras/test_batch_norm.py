"""BatchNormalization as tf-keras 2.21 (semantics.md, last section).

What is checked: training normalises with the batch's biased variance and moves the
moving statistics by ``moving = m * moving + (1 - m) * batch`` with the unbiased variance
for 4-D input (tf-keras' fused path) and the biased one for 2-D; inference (and a frozen
layer, even with training=True) uses the moving statistics; fit updates them, evaluate and
predict do not; under mixed_float16 the output is float16 and every statistic float32.
"""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.keras import layers, mixed_precision
from mixprec.testing.tolerances import TOLERANCE

HAS_NN = all(hasattr(tf.nn, f) for f in ("moments", "batch_normalization"))
pytestmark = pytest.mark.skipif(not HAS_NN, reason="mixprec.nn.moments not built")
RTOL, ATOL = TOLERANCE[("float32", "reduction")]


def _ref(x, mean, var, gamma, beta, eps):
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


@pytest.mark.parametrize("shape,axis,unbiased", [((8, 3, 3, 4), -1, True),
                                                 ((8, 4, 3, 3), 1, True),
                                                 ((16, 5), -1, False),
                                                 ((6, 5, 4), -1, False),
                                                 ((8, 3, 3, 4), 2, False)])
def test_training_step_and_moving_update(shape, axis, unbiased):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3 + 2).astype("float32")
    bn = layers.BatchNormalization(axis=axis, momentum=0.9, gamma_initializer="random_normal",
                                   beta_initializer="random_normal")
    y = bn(x, training=True).numpy()
    ax = axis % len(shape)
    red = tuple(i for i in range(len(shape)) if i != ax)
    xd = x.astype(np.float64)
    mean, var = xd.mean(axis=red), xd.var(axis=red)
    bshape = [1] * len(shape)
    bshape[ax] = shape[ax]
    g, b = bn.gamma.numpy().reshape(bshape), bn.beta.numpy().reshape(bshape)
    ref = _ref(xd, mean.reshape(bshape), var.reshape(bshape), g, b, 1e-3)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    n = xd.size // shape[ax]
    batch_var = var * n / (n - 1) if unbiased else var
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.1 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn.moving_variance.numpy(), 0.9 + 0.1 * batch_var, rtol=1e-5)


def test_inference_uses_moving_statistics():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3)).astype("float32")
    bn = layers.BatchNormalization(moving_mean_initializer="ones",
                                   moving_variance_initializer=keras.initializers.Constant(4.0))
    for y in (bn(x), bn(x, training=False)):
        np.testing.assert_allclose(y.numpy(), (x - 1) / np.sqrt(4 + 1e-3), rtol=1e-5)
    assert float(bn.moving_mean.numpy()[0]) == 1.0  # untouched


def test_frozen_layer_runs_in_inference_mode():
    x = np.random.default_rng(2).standard_normal((4, 2, 2, 3)).astype("float32")
    bn = layers.BatchNormalization()
    bn.trainable = False
    y = bn(x, training=True)
    np.testing.assert_allclose(y.numpy(), x / np.sqrt(1 + 1e-3), rtol=1e-5)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), 0)
    assert bn.trainable_weights == [] and len(bn.non_trainable_weights) == 4


def test_mixed_float16_dtypes():
    mixed_precision.set_global_policy("mixed_float16")
    x = np.random.default_rng(3).standard_normal((8, 4, 4, 3)).astype("float32")
    bn = layers.BatchNormalization()
    y = bn(x, training=True)
    assert y.dtype == tf.float16
    assert all(w.dtype == tf.float32 for w in bn.weights)
    xd = x.astype(np.float16).astype(np.float64)
    mean = xd.mean(axis=(0, 1, 2))
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.01 * mean, rtol=1e-3, atol=1e-6)
    ref = (xd - mean) / np.sqrt(xd.var(axis=(0, 1, 2)) + 1e-3)
    rtol, atol = TOLERANCE[("float16", "reduction")]
    np.testing.assert_allclose(y.numpy().astype(np.float64), ref, rtol=rtol * 4, atol=atol * 4)


def test_fit_updates_moving_stats_evaluate_and_predict_do_not():
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((32, 4, 4, 2)) + 5).astype("float32")
    y = rng.integers(0, 3, 32)
    inp = keras.Input((4, 4, 2))
    h = layers.BatchNormalization()(inp)
    out = layers.Dense(3)(layers.Flatten()(h))
    m = keras.Model(inp, out)
    bn = m.layers[1]
    np.testing.assert_array_equal(bn.moving_mean.numpy(), 0)  # building did not update
    m.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    m.evaluate(x, y, verbose=0)
    m.predict(x, verbose=0)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), 0)
    m.fit(x, y, batch_size=8, epochs=1, verbose=0)
    mm = bn.moving_mean.numpy()
    assert (mm > 0.1).all() and (mm < 0.3).all()  # 4 steps towards ~5 at momentum 0.99


def test_symbolic_training_call_does_not_update():
    inp = keras.Input((3, 3, 2))
    bn = layers.BatchNormalization()
    bn(inp, training=True)
    np.testing.assert_array_equal(bn.moving_variance.numpy(), 1)


# ------------------------------------------------ renorm, virtual batches, adjustment, sync
# NumPy float64 references of tf-keras 2.21's non-fused path (values checked against
# tf_keras 2.21 while writing these: equal to ~2e-7).

def _moments(x, axes, keepdims=True):
    return x.mean(axis=axes, keepdims=keepdims), x.var(axis=axes, keepdims=keepdims)


def test_renorm_steps_match_reference():
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((8, 4, 4, 3)) * 2 + 1).astype("float32")
    clip = {"rmax": 1.5, "rmin": 0.5, "dmax": 0.3}
    bn = layers.BatchNormalization(renorm=True, renorm_clipping=clip, renorm_momentum=0.9,
                                   momentum=0.8)
    assert not bn.fused
    eps = 1e-3
    mm, mv, ms, rm, rs = 0.0, 1.0, 1.0, 0.0, 1.0  # moving mean/var/stddev, renorm mean/stddev
    for step in range(3):
        xs = x * (step + 1)
        y = bn(xs, training=True).numpy()
        mean, var = _moments(xs.astype(np.float64), (0, 1, 2), keepdims=False)
        std = np.sqrt(var + eps)
        rsc = np.maximum(rs, np.sqrt(eps))
        r = np.clip(std / rsc, 0.5, 1.5)
        d = np.clip((mean - rm) / rsc, -0.3, 0.3)
        ref = (xs - mean) / std * r + d
        np.testing.assert_allclose(y, ref, rtol=RTOL * 10, atol=ATOL * 10)
        rm, rs = rm - (rm - mean) * 0.1, rs - (rs - std) * 0.1
        mm = mm - (mm - mean) * 0.2
        ms = ms - (ms - std) * 0.2
        mv = np.maximum(ms * ms - eps, 0)
    names = [w.name.split("/")[-1] for w in bn.weights]
    assert names == ["gamma:0", "beta:0", "moving_mean:0", "moving_variance:0",
                     "moving_stddev:0", "renorm_mean:0", "renorm_stddev:0"]
    got = {n[:-2]: w.numpy() for n, w in zip(names, bn.weights)}
    for name, want in (("moving_mean", mm), ("moving_variance", mv), ("moving_stddev", ms),
                       ("renorm_mean", rm), ("renorm_stddev", rs)):
        np.testing.assert_allclose(got[name], want, rtol=RTOL * 10, atol=ATOL * 10)
    # inference: the moving statistics, no correction
    np.testing.assert_allclose(bn(x).numpy(), (x - mm) / np.sqrt(mv + eps), rtol=RTOL * 10,
                               atol=ATOL * 10)
    cfg = bn.get_config()
    assert cfg["renorm"] is True and cfg["renorm_clipping"] == clip
    assert cfg["renorm_momentum"] == 0.9
    assert "renorm" not in layers.BatchNormalization().get_config()


def test_renorm_gradient_treats_r_and_d_as_constants():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 3)).astype("float32")
    bn = layers.BatchNormalization(renorm=True, renorm_clipping={"rmax": 1.2})
    bn.build((None, 3))
    bn.renorm_stddev.assign(np.full(3, 0.5, np.float32))
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = bn(xt, training=True)
        loss = tf.reduce_sum(y * y)
    g = tape.gradient(loss, [bn.gamma, bn.beta])
    mean, var = _moments(x.astype(np.float64), 0, keepdims=False)
    xhat = (x - mean) / np.sqrt(var + 1e-3)
    std = np.sqrt(var + 1e-3)
    r = np.minimum(std / 0.5, 1.2)
    d = (mean - 0.0) / 0.5
    yref = xhat * r + d
    np.testing.assert_allclose(y.numpy(), yref, rtol=RTOL * 10, atol=ATOL * 10)
    # y = gamma * (xhat * r + d) + beta with r, d constant
    np.testing.assert_allclose(g[0].numpy(), (2 * yref * (xhat * r + d)).sum(0), rtol=RTOL * 50)
    np.testing.assert_allclose(g[1].numpy(), (2 * yref).sum(0), rtol=RTOL * 50, atol=ATOL * 50)


@pytest.mark.parametrize("shape,vbs", [((8, 4, 4, 3), 2), ((6, 3), 3)])
def test_virtual_batch_size_ghost_batches(shape, vbs):
    rng = np.random.default_rng(4)
    x = (rng.standard_normal(shape) * 2 + 1).astype("float32")
    bn = layers.BatchNormalization(virtual_batch_size=vbs, momentum=0.5)
    y = bn(x, training=True).numpy()
    # tf-keras reshapes (B, ...) to (vbs, B / vbs, ...): virtual batch g holds rows g, g + G ...
    xv = x.astype(np.float64).reshape((vbs, -1) + shape[1:])
    red = (0,) + tuple(range(2, xv.ndim - 1))
    mean, var = _moments(xv, red)
    ref = ((xv - mean) / np.sqrt(var + 1e-3)).reshape(shape)
    np.testing.assert_allclose(y, ref, rtol=RTOL * 10, atol=ATOL * 10)
    pshape = (1, 1) + (1,) * (len(shape) - 2) + (shape[-1],)
    assert tuple(bn.moving_mean.shape) == pshape and tuple(bn.gamma.shape) == pshape
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.5 * mean.mean(1, keepdims=True),
                               rtol=RTOL * 10, atol=ATOL * 10)
    np.testing.assert_allclose(bn.moving_variance.numpy(),
                               0.5 + 0.5 * var.mean(1, keepdims=True), rtol=RTOL * 10)
    mm, mv = bn.moving_mean.numpy().reshape(-1), bn.moving_variance.numpy().reshape(-1)
    np.testing.assert_allclose(bn(x).numpy(), (x - mm) / np.sqrt(mv + 1e-3), rtol=RTOL * 10,
                               atol=ATOL * 10)
    assert bn.get_config()["virtual_batch_size"] == vbs
    assert bn.get_config()["axis"] == [len(shape)]  # shifted by the virtual axis, as tf-keras
    with pytest.raises(tf.errors.InvalidArgumentError):
        layers.BatchNormalization(virtual_batch_size=5)(x, training=True)


def test_adjustment_applies_before_gamma_beta_in_training_only(caplog):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((8, 4, 4, 3)).astype("float32")
    seen = []

    def adjustment(shape):
        seen.append(shape.numpy().tolist())
        return tf.constant([1.1, 0.9, 1.0]), tf.constant([0.1, -0.1, 0.0])

    bn = layers.BatchNormalization(adjustment=adjustment, momentum=0.5,
                                   beta_initializer=keras.initializers.Constant(0.5))
    assert not bn.fused
    y = bn(x, training=True).numpy()
    assert seen == [[8, 4, 4, 3]]
    mean, var = _moments(x.astype(np.float64), (0, 1, 2), keepdims=False)
    ref = (x - mean) / np.sqrt(var + 1e-3) * [1.1, 0.9, 1.0] + [0.1, -0.1, 0.0] + 0.5
    np.testing.assert_allclose(y, ref, rtol=RTOL * 10, atol=ATOL * 10)
    np.testing.assert_allclose(bn.moving_variance.numpy(), 0.5 + 0.5 * var, rtol=RTOL * 10)
    bn(x)  # inference: no adjustment
    assert len(seen) == 1
    with caplog.at_level("WARNING", logger="mixprec"):
        assert "adjustment" not in bn.get_config()
    assert "cannot be serialized" in caplog.text


def test_synchronized_uses_sum_moments_and_is_not_fused():
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((8, 4, 4, 3)) + 2).astype("float32")
    bn = layers.BatchNormalization(synchronized=True, momentum=0.5)
    y = bn(x, training=True).numpy()
    assert bn.fused is False and "synchronized" not in bn.get_config()
    xd = x.astype(np.float64)
    mean = xd.mean((0, 1, 2))
    var = np.maximum((xd * xd).mean((0, 1, 2)) - mean ** 2, 0)  # E[x^2] - E[x]^2
    np.testing.assert_allclose(y, (xd - mean) / np.sqrt(var + 1e-3), rtol=RTOL * 10, atol=ATOL * 10)
    # not the fused path: the moving variance takes the biased batch variance
    np.testing.assert_allclose(bn.moving_variance.numpy(), 0.5 + 0.5 * var, rtol=RTOL * 10)


def test_fused_false_on_4d_keeps_the_biased_variance():
    x = np.random.default_rng(7).standard_normal((8, 2, 2, 3)).astype("float32")
    bn = layers.BatchNormalization(fused=False, momentum=0.5)
    bn(x, training=True)
    var = x.astype(np.float64).var((0, 1, 2))
    np.testing.assert_allclose(bn.moving_variance.numpy(), 0.5 + 0.5 * var, rtol=RTOL * 10)


@pytest.mark.parametrize("kwargs,msg", [
    (dict(fused=True, renorm=True), "Passing both `fused=True` and `renorm=True`"),
    (dict(fused=True, axis=2), "only supported when axis is 1 or 3 for input rank = 4"),
    (dict(fused=True, virtual_batch_size=2), "not supported when `virtual_batch_size`"),
    (dict(fused=True, adjustment=lambda s: (1.0, 0.0)), "not supported when `adjustment`"),
    (dict(fused=True, synchronized=True), "`fused=True` is not supported when `synchronized"),
    (dict(renorm=True, renorm_clipping={"x": 1}), "invalid keys for `renorm_clipping`"),
    (dict(fused=True, dtype="float64"), "compute dtype is float16, bfloat16, or float32"),
])
def test_constructor_errors_as_tf_keras(kwargs, msg):
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        layers.BatchNormalization(**kwargs)


@pytest.mark.parametrize("kwargs,shape,result", [
    (dict(fused=True), (2, 3), "only support 4D or 5D input"),
    (dict(fused=True, axis=-4), (2, 3, 4, 5), "Unsupported axis"),
    (dict(fused=True, axis=3), (2, 3, 4, 5, 6), False),  # 5-D, other axis: quietly unfused
    (dict(fused=True, axis=-4), (2, 3, 4, 5, 6), True),
    (dict(axis=2), (2, 3, 4, 5), False),
    (dict(), (2, 3, 4, 5), True),
    (dict(), (2, 3), False),
    (dict(virtual_batch_size=0), (4, 3), "`virtual_batch_size` must be a positive integer"),
    (dict(virtual_batch_size=2, axis=0), (4, 3), "axis cannot include 0"),
    (dict(virtual_batch_size=2, adjustment=lambda s: (1.0, 0.0)), (4, 3),
     "adjustment cannot be specified"),
])
def test_build_resolves_fused_as_tf_keras(kwargs, shape, result):
    bn = layers.BatchNormalization(**kwargs)
    if isinstance(result, str):
        with pytest.raises(ValueError, match=result):
            bn.build(shape)
    else:
        bn.build(shape)
        assert bn.fused is result


def test_renorm_and_virtual_batch_under_mixed_float16():
    mixed_precision.set_global_policy("mixed_float16")
    x = np.random.default_rng(8).standard_normal((8, 4, 4, 3)).astype("float32")
    bn = layers.BatchNormalization(renorm=True, virtual_batch_size=4)
    y = bn(x, training=True)
    assert y.dtype == tf.float16
    assert all(w.dtype == tf.float32 for w in bn.weights) and len(bn.weights) == 7
    xv = x.astype(np.float16).astype(np.float64).reshape((4, 2, 4, 4, 3))  # autocast input
    mean, var = _moments(xv, (0, 2, 3))
    # renorm_stddev starts at 1 and renorm_mean at 0: r and d are the virtual batches'
    # mean standard deviation and mean
    m, v = mean.mean(1, keepdims=True), var.mean(1, keepdims=True)
    ref = ((xv - mean) / np.sqrt(var + 1e-3) * np.sqrt(v + 1e-3) + m).reshape(x.shape)
    rtol, atol = TOLERANCE[("float16", "reduction")]
    np.testing.assert_allclose(y.numpy().astype(np.float64), ref, rtol=rtol, atol=atol * 4)


def test_sync_batch_normalization_endpoint(caplog):
    from mixprec.keras.layers import experimental

    experimental._warned[0] = False
    with caplog.at_level("WARNING", logger="mixprec"):
        bn = layers.experimental.SyncBatchNormalization(momentum=0.5)
        layers.experimental.SyncBatchNormalization()
    assert caplog.text.count("SyncBatchNormalization` endpoint is deprecated") == 1
    assert bn.synchronized and isinstance(bn, layers.BatchNormalization)
    x = np.random.default_rng(9).standard_normal((8, 3)).astype("float32")
    bn(x, training=True)
    assert_var = x.astype(np.float64).var(0)
    np.testing.assert_allclose(bn.moving_variance.numpy(), 0.5 + 0.5 * assert_var,
                               rtol=RTOL * 10)
