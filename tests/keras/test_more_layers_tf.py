"""The layers added to keras.layers for tf-keras 2.21 parity (transposed, separable and
depthwise-1-D convolutions, cropping, padding, upsampling, PReLU, ThresholdedReLU,
regularization and noise layers, Unit/GroupNormalization, Dot, TimeDistributed, EinsumDense,
Masking) against tf-keras 2.21 itself: golden/tf_more_layers.npz holds TensorFlow's outputs,
input and weight gradients, losses, configs, symbolic output shapes and mixed_float16
dtypes and outputs for fixed inputs and weights (written by golden/make_tf_more_layers.py;
the layers are listed once in golden/more_cases.py), and the results of masked models."""

import importlib.util
import json
import os

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.keras import layers as L  # noqa: N812  (the name more_cases.py's sources use)
from mixprec.keras import mixed_precision
from mixprec.testing.tolerances import TOLERANCE

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
_spec = importlib.util.spec_from_file_location("golden_more_cases",
                                               os.path.join(HERE, "more_cases.py"))
_cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_cases)
CASES = _cases.CASES
GOLD = dict(np.load(os.path.join(HERE, "tf_more_layers.npz")))


def test_golden_file_is_from_tf_keras_2_21():
    assert [str(v)[:4] for v in GOLD["versions"]] == ["2.21", "2.21"]


def _build(name):
    src, xnames = CASES[name]
    layer = eval(src, {"L": L, "keras": keras})
    multi = isinstance(xnames, list)
    xs = [GOLD[n] for n in xnames] if multi else [GOLD[xnames]]
    layer.build([x.shape for x in xs] if multi else xs[0].shape)
    layer.set_weights([GOLD["%s_w%d" % (name, i)] for i in range(len(layer.weights))])
    return layer, xs, multi


def _strip(cfg):
    """A config as JSON data without layer names (they depend on creation order)."""
    if isinstance(cfg, dict):
        return {k: _strip(v) for k, v in cfg.items() if k not in ("name", "build_config")}
    if isinstance(cfg, list):
        return [_strip(v) for v in cfg]
    return cfg


@pytest.mark.parametrize("name", sorted(CASES))
def test_layer_matches_tf_keras(name):
    layer, xs, multi = _build(name)
    xt = [tf.constant(x) for x in xs]
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = layer(xt if multi else xt[0])
        obj = tf.reduce_sum(y * tf.constant(GOLD[name + "_r"]))
    want = GOLD[name]
    assert tuple(y.shape) == want.shape
    rtol, atol = TOLERANCE[("float32", "matmul")]
    np.testing.assert_allclose(y.numpy(), want, rtol=rtol, atol=atol)
    grads = tape.gradient(obj, xt + layer.trainable_weights)
    for i, g in enumerate(grads):
        gw = GOLD["%s_g%d" % (name, i)]
        if gw.size == 0:
            assert g is None
            continue
        np.testing.assert_allclose(tf.convert_to_tensor(g).numpy(), gw, rtol=rtol, atol=atol)
    mask = getattr(y, "_keras_mask", None)
    if name + "_mask" in GOLD:
        np.testing.assert_array_equal(mask.numpy(), GOLD[name + "_mask"])
    else:
        assert mask is None
    rtol, atol = TOLERANCE[("float32", "reduction")]
    np.testing.assert_allclose([float(v) for v in layer.losses], GOLD[name + "_losses"],
                               rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_config_and_shape_match_tf_keras(name):
    layer, xs, multi = _build(name)
    meta = json.loads(str(GOLD[name + "_meta"]))
    ours = json.loads(json.dumps(layer.get_config(), default=str, sort_keys=True))
    assert _strip(ours) == _strip(meta["config"])
    shapes = [(None,) + x.shape[1:] for x in xs]
    out = layer.compute_output_shape(shapes if multi else shapes[0])
    assert list(tf.TensorShape(list(out)).as_list()) == meta["output_shape"]
    again = type(layer).from_config(layer.get_config())
    assert _strip(json.loads(json.dumps(again.get_config(), default=str, sort_keys=True))) == \
        _strip(ours)


@pytest.mark.parametrize("name", sorted(CASES))
def test_mixed_float16_matches_tf_keras(name):
    mixed_precision.set_global_policy("mixed_float16")
    layer, xs, multi = _build(name)
    y = layer(xs if multi else xs[0])
    meta = json.loads(str(GOLD[name + "_mixed_meta"]))
    assert y.dtype.name == meta["dtype"]
    assert [v.dtype.name for v in layer.weights] == meta["variables"]
    assert layer.compute_dtype == meta["compute_dtype"] and layer.dtype == meta["dtype_attr"]
    kind = "convolution" if name.startswith(("conv", "sep", "dw", "time_conv")) else "matmul"
    rtol, atol = TOLERANCE[(meta["dtype"], kind)]
    want = GOLD[name + "_mixed"]
    if name.startswith("conv2dT") or "error" in meta:
        # TensorFlow's CPU float16 Conv2DBackpropInput rounds partial sums to float16 (about
        # twice mixprec's error against float64); mixprec accumulates in float32 and rounds
        # once, so it is held to the float64 result of the float16-rounded operands (also
        # where TensorFlow's CPU has no float16 kernel: meta["error"])
        want = _float64_reference(name, xs[0])
    np.testing.assert_allclose(tf.cast(y, "float32").numpy(), want, rtol=rtol, atol=atol)


def _float64_reference(name, x):
    """The case's layer in float64 on x and weights rounded to float16."""
    layer = eval(CASES[name][0], {"L": L, "keras": keras})
    layer = type(layer).from_config(dict(layer.get_config(), dtype="float64"))
    layer.build(x.shape)
    layer.set_weights([GOLD["%s_w%d" % (name, i)].astype(np.float16).astype(np.float64)
                       for i in range(len(layer.weights))])
    return layer(x.astype(np.float16).astype(np.float64)).numpy()


# ------------------------------------------------------------------ masks in models

def _masked_model():
    model = keras.Sequential([L.Embedding(10, 4, mask_zero=True), L.Dense(3)])
    model.build((None, 5))
    model.set_weights([GOLD["mask_model_w%d" % i] for i in range(len(model.weights))])
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse", metrics=["mae"],
                  weighted_metrics=["mse"])
    return model


def test_mask_reaches_the_model_output():
    model = _masked_model()
    pred = model(GOLD["mask_ids"])
    rtol, atol = TOLERANCE[("float32", "matmul")]
    np.testing.assert_allclose(pred.numpy(), GOLD["mask_model_pred"], rtol=rtol, atol=atol)
    np.testing.assert_array_equal(pred._keras_mask.numpy(), GOLD["mask_model_mask"])


def test_masked_timesteps_do_not_count_in_evaluate():
    model = _masked_model()
    rtol, atol = TOLERANCE[("float32", "reduction")]
    got = model.evaluate(GOLD["mask_ids"], GOLD["mask_y"], verbose=0)
    np.testing.assert_allclose(got, GOLD["mask_model_eval"], rtol=rtol, atol=atol)
    got = model.evaluate(GOLD["mask_ids"], GOLD["mask_y"], verbose=0,
                         sample_weight=np.array([1.0, 2.0, 0.5, 1.0], "float32"))
    np.testing.assert_allclose(got, GOLD["mask_model_eval_sw"], rtol=rtol, atol=atol)


@pytest.mark.parametrize("run_eagerly", [True, False])
def test_masked_fit_matches_tf_keras(run_eagerly):
    model = _masked_model()
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse", run_eagerly=run_eagerly)
    hist = model.fit(GOLD["mask_ids"], GOLD["mask_y"], batch_size=4, epochs=2, shuffle=False,
                     verbose=0)
    rtol, atol = TOLERANCE[("float32", "reduction")]
    np.testing.assert_allclose(hist.history["loss"], GOLD["mask_model_fit_loss"], rtol=rtol,
                               atol=atol)
    for i, w in enumerate(model.get_weights()):
        np.testing.assert_allclose(w, GOLD["mask_model_after_w%d" % i], rtol=rtol, atol=atol)


def test_masking_time_distributed_global_average_pooling():
    inp = keras.Input((10, 6))
    h = L.Masking()(inp)
    h = L.TimeDistributed(L.Dense(4))(h)
    assert h._keras_mask is not None and h._keras_mask.shape.as_list() == [None, 10]
    model = keras.Model(inp, L.GlobalAveragePooling1D()(h))
    model.set_weights([GOLD["mask_fmodel_w%d" % i] for i in range(len(model.weights))])
    rtol, atol = TOLERANCE[("float32", "matmul")]
    np.testing.assert_allclose(model(GOLD["x3m"]).numpy(), GOLD["mask_fmodel_out"], rtol=rtol,
                               atol=atol)


def test_masking_layer_masks_the_sequence_loss():
    inp = keras.Input((10, 6))
    model = keras.Model(inp, L.Dense(2)(L.Masking()(inp)))
    model.set_weights([GOLD["mask_smodel_w%d" % i] for i in range(len(model.weights))])
    model.compile(loss="mae", metrics=["mse"])
    got = model.evaluate(GOLD["x3m"], GOLD["mask_smodel_y"], verbose=0)
    rtol, atol = TOLERANCE[("float32", "reduction")]
    np.testing.assert_allclose(got, GOLD["mask_smodel_eval"], rtol=rtol, atol=atol)


def test_masked_evaluate_under_mixed_float16_matches_tf_keras():
    mixed_precision.set_global_policy("mixed_float16")
    model = _masked_model()
    assert model(GOLD["mask_ids"]).dtype == tf.float16
    got = model.evaluate(GOLD["mask_ids"], GOLD["mask_y"], verbose=0)
    rtol, atol = TOLERANCE[("float16", "reduction")]
    np.testing.assert_allclose(got, GOLD["mask_model_eval_mixed"], rtol=rtol, atol=atol)


def test_loss_objects_average_over_the_unmasked_entries():
    pred = _masked_model()(GOLD["mask_ids"])
    got = [float(keras.losses.MeanSquaredError()(GOLD["mask_y"], pred)),
           float(keras.losses.MeanAbsoluteError(reduction="sum")(GOLD["mask_y"], pred))]
    rtol, atol = TOLERANCE[("float32", "reduction")]
    np.testing.assert_allclose(got, GOLD["mask_loss_standalone"], rtol=rtol, atol=atol)


def test_batch_normalization_uses_the_statistics_of_unmasked_steps():
    bn = L.BatchNormalization(momentum=0.5)
    y = bn(L.Masking()(GOLD["x3m"]), training=True)
    rtol, atol = TOLERANCE[("float32", "reduction")]
    np.testing.assert_allclose(y.numpy(), GOLD["mask_bn_train"], rtol=rtol, atol=atol)
    np.testing.assert_allclose(bn.moving_mean.numpy(), GOLD["mask_bn_mean"], rtol=rtol, atol=atol)
    np.testing.assert_allclose(bn.moving_variance.numpy(), GOLD["mask_bn_var"], rtol=rtol,
                               atol=atol)


NN_CASES = json.loads(str(GOLD["nn_cases"]))


@pytest.mark.parametrize("name", sorted(NN_CASES))
def test_nn_functions_match_tensorflow(name):
    scope = {k[len("nn_in_"):]: tf.constant(v) for k, v in GOLD.items()
             if k.startswith("nn_in_")}
    y = eval(NN_CASES[name], dict(scope, tf=tf))
    rtol, atol = TOLERANCE[("float32", "convolution")]
    np.testing.assert_allclose(y.numpy(), GOLD[name], rtol=rtol, atol=atol)


def test_nn_convolution_of_rank_5_is_conv3d():
    x, k = tf.constant(GOLD["nn_in_x5"]), tf.constant(GOLD["nn_in_k3"])
    rtol, atol = TOLERANCE[("float32", "convolution")]
    np.testing.assert_allclose(tf.nn.convolution(x, k, strides=[1, 2, 1], padding="SAME").numpy(),
                               GOLD["nn_conv3d"], rtol=rtol, atol=atol)
    np.testing.assert_allclose(tf.nn.convolution(x, k, dilations=[2, 1, 1]).numpy(),
                               GOLD["nn_conv3d_valid_dil"], rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_mixed_bfloat16_computes_in_bfloat16_with_float32_variables(name):
    """The mixed_float16 rule with bfloat16 (tf-keras' policies): outputs in bfloat16 (bilinear
    upsampling: float32, as tf.image.resize), float32 variables, values near float32's."""
    mixed_precision.set_global_policy("mixed_bfloat16")
    layer, xs, multi = _build(name)
    y = layer(xs if multi else xs[0])
    meta = json.loads(str(GOLD[name + "_mixed_meta"]))
    assert y.dtype.name == meta["dtype"].replace("float16", "bfloat16")
    assert [v.dtype.name for v in layer.weights] == meta["variables"]
    assert layer.compute_dtype == "bfloat16" and layer.dtype == "float32"
    rtol, atol = TOLERANCE[("bfloat16", "matmul")]
    np.testing.assert_allclose(tf.cast(y, "float32").numpy(), GOLD[name], rtol=rtol, atol=atol)
