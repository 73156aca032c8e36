"""Writes tf_more_layers.npz: for each layer of more_cases.py, tf-keras 2.21's output,
regularization losses, config (JSON), compute_output_shape on a None batch, gradients of
sum(y * r) with respect to the inputs and weights (float32), and the output, its dtype and
the variables' dtypes under mixed_float16; plus masked-model results (evaluate and one fit
step). For tests/keras/test_more_layers_tf.py. Not run by the tests (it needs TensorFlow):
``python tests/keras/golden/make_tf_more_layers.py`` in an environment with tensorflow 2.21
and tf-keras 2.21."""

import json
import os
import sys

os.environ["TF_USE_LEGACY_KERAS"] = "1"

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402

L = keras.layers
HERE = os.path.dirname(os.path.abspath(__file__))

sys.path.insert(0, HERE)
from more_cases import CASES  # noqa: E402


def inputs():
    rng = np.random.default_rng(0)
    x3m = rng.standard_normal((4, 10, 6)).astype("float32")
    x3m[0, 3:, :] = 0.0
    x3m[2, 5, :] = 0.0
    return {"x4": rng.standard_normal((2, 6, 5, 4)).astype("float32") * 2 + 1,
            "x3": rng.standard_normal((4, 10, 6)).astype("float32"),
            "x2": rng.standard_normal((16, 5)).astype("float32") * 3,
            "x5": rng.standard_normal((2, 3, 5, 5, 2)).astype("float32"),
            "x2a": rng.standard_normal((4, 5)).astype("float32"),
            "x2b": rng.standard_normal((4, 5)).astype("float32"),
            "x3a": rng.standard_normal((4, 7, 6)).astype("float32"),
            "x3b": rng.standard_normal((4, 8, 6)).astype("float32"),
            "x3c": rng.standard_normal((4, 7, 5)).astype("float32"),
            "x3m": x3m}


def weights_for(layer):
    wrng = np.random.default_rng(1)
    return [wrng.standard_normal(w.shape).astype("float32") * 0.3 for w in layer.get_weights()]


def run_case(name, src, xnames, data, out):
    multi = isinstance(xnames, list)
    xs = [data[n] for n in xnames] if multi else [data[xnames]]
    layer = eval(src)
    x_in = xs if multi else xs[0]
    layer.build([x.shape for x in xs] if multi else xs[0].shape)
    ws = weights_for(layer)
    layer.set_weights(ws)
    for i, w in enumerate(ws):
        out["%s_w%d" % (name, i)] = w
    xt = [tf.constant(x) for x in xs]
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = layer(xt if multi else xt[0])
        r = tf.constant(np.random.default_rng(2).standard_normal(y.shape).astype("float32"))
        obj = tf.reduce_sum(y * r)
    grads = tape.gradient(obj, xt + layer.trainable_weights)
    out[name] = y.numpy()
    out[name + "_r"] = r.numpy()
    mask = getattr(y, "_keras_mask", None)
    if mask is not None:
        out[name + "_mask"] = mask.numpy()
    for i, g in enumerate(grads):
        out["%s_g%d" % (name, i)] = np.zeros(0, "float32") if g is None else g.numpy()
    out[name + "_losses"] = np.array([float(v) for v in layer.losses], "float64")
    shapes = [(None,) + x.shape[1:] for x in xs]
    cos = layer.compute_output_shape(shapes if multi else shapes[0])
    cos = tf.TensorShape(cos).as_list()
    cfg = layer.get_config()
    out[name + "_meta"] = np.array(json.dumps({"config": cfg, "output_shape": cos},
                                              default=str, sort_keys=True))
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        mixed = eval(src)
        mixed.build([x.shape for x in xs] if multi else xs[0].shape)
        mixed.set_weights(ws)
        meta = {"variables": [v.dtype.name for v in mixed.weights],
                "compute_dtype": mixed.compute_dtype, "dtype_attr": mixed.dtype}
        try:
            ym = mixed(x_in)
        except tf.errors.OpError as e:
            # TensorFlow's CPU kernels lack some float16 cases (dilated transposed
            # convolutions): recorded, and the test holds mixprec to float64 instead
            lines = [ln for ln in str(e).splitlines() if "function_node" in ln] or [str(e)]
            meta.update(dtype="float16", error=lines[0][:300])
            out[name + "_mixed"] = np.zeros(0, "float32")
        else:
            meta["dtype"] = ym.dtype.name
            out[name + "_mixed"] = tf.cast(ym, "float32").numpy()
        out[name + "_mixed_meta"] = np.array(json.dumps(meta))
    finally:
        keras.mixed_precision.set_global_policy("float32")


def masked_models(out):
    ids = np.array([[1, 4, 2, 0, 0], [3, 0, 0, 0, 0], [5, 6, 7, 8, 9], [2, 2, 0, 0, 0]],
                   "int32")
    y = np.random.default_rng(3).standard_normal((4, 5, 3)).astype("float32")
    out["mask_ids"], out["mask_y"] = ids, y
    model = keras.Sequential([L.Embedding(10, 4, mask_zero=True), L.Dense(3)])
    model.build((None, 5))
    ws = weights_for(model)
    model.set_weights(ws)
    for i, w in enumerate(ws):
        out["mask_model_w%d" % i] = w
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse", metrics=["mae"],
                  weighted_metrics=["mse"])
    pred = model(ids)
    out["mask_model_pred"] = pred.numpy()
    out["mask_model_mask"] = pred._keras_mask.numpy()
    sw = np.array([1.0, 2.0, 0.5, 1.0], "float32")
    out["mask_model_eval"] = np.array(model.evaluate(ids, y, verbose=0), "float64")
    out["mask_model_eval_sw"] = np.array(model.evaluate(ids, y, sample_weight=sw, verbose=0),
                                         "float64")
    hist = model.fit(ids, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    out["mask_model_fit_loss"] = np.array(hist.history["loss"], "float64")
    for i, w in enumerate(model.get_weights()):
        out["mask_model_after_w%d" % i] = w
    # the same model under mixed_float16 (float16 predictions and masks)
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        mixed = keras.Sequential([L.Embedding(10, 4, mask_zero=True), L.Dense(3)])
        mixed.build((None, 5))
        mixed.set_weights(ws)
        mixed.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse", metrics=["mae"],
                      weighted_metrics=["mse"])
        out["mask_model_eval_mixed"] = np.array(mixed.evaluate(ids, y, verbose=0), "float64")
    finally:
        keras.mixed_precision.set_global_policy("float32")
    # BatchNormalization takes the mask implicitly: the statistics of the unmasked steps
    bn = L.BatchNormalization(momentum=0.5)
    out["mask_bn_train"] = bn(L.Masking()(out["x3m"]), training=True).numpy()
    out["mask_bn_mean"], out["mask_bn_var"] = bn.moving_mean.numpy(), bn.moving_variance.numpy()
    # a standalone Loss object on a masked y_pred: the mean over the unmasked entries
    out["mask_loss_standalone"] = np.array(
        [float(keras.losses.MeanSquaredError()(y, pred)),
         float(keras.losses.MeanAbsoluteError(reduction="sum")(y, pred))], "float64")
    # functional: Masking -> TimeDistributed(Dense) -> GlobalAveragePooling1D
    inp = keras.Input((10, 6))
    h = L.Masking()(inp)
    h = L.TimeDistributed(L.Dense(4))(h)
    o = L.GlobalAveragePooling1D()(h)
    fmodel = keras.Model(inp, o)
    fws = weights_for(fmodel)
    fmodel.set_weights(fws)
    for i, w in enumerate(fws):
        out["mask_fmodel_w%d" % i] = w
    out["mask_fmodel_out"] = fmodel(out["x3m"]).numpy()
    out["mask_fmodel_td_mask"] = np.array(h._keras_mask is not None)
    # a masked sequence loss through a functional model with a Masking layer
    inp = keras.Input((10, 6))
    o = L.Dense(2)(L.Masking()(inp))
    smodel = keras.Model(inp, o)
    sws = weights_for(smodel)
    smodel.set_weights(sws)
    for i, w in enumerate(sws):
        out["mask_smodel_w%d" % i] = w
    ys = np.random.default_rng(4).standard_normal((4, 10, 2)).astype("float32")
    out["mask_smodel_y"] = ys
    smodel.compile(loss="mae", metrics=["mse"])
    out["mask_smodel_eval"] = np.array(smodel.evaluate(out["x3m"], ys, verbose=0), "float64")


# tf.nn / tf.math functions: name -> source over tf, x (NHWC), k2t (3, 3, 2, 4), dw, pw, x5,
# k3 and v, evaluated by both sides
NN_CASES = {
    "nn_conv2d_transpose": "tf.nn.conv2d_transpose(x, k2t, [2, 12, 10, 2], [1, 2, 2, 1])",
    "nn_conv2d_transpose_valid": "tf.nn.conv2d_transpose(x, k2t, [2, 13, 11, 2], 2, 'VALID')",
    "nn_conv1d_transpose": "tf.nn.conv1d_transpose(x[:, 0], k2t[0], [2, 10, 2], 2)",
    "nn_separable_conv2d": "tf.nn.separable_conv2d(x, dw, pw, [1, 1, 1, 1], 'SAME')",
    "nn_conv3d": "tf.nn.conv3d(x5, k3, [1, 1, 2, 1, 1], 'SAME')",
    "nn_conv3d_valid_dil": "tf.nn.conv3d(x5, k3, [1, 1, 1, 1, 1], 'VALID', "
                           "dilations=[1, 2, 1, 1, 1])",
    "math_l2_normalize": "tf.math.l2_normalize(v, axis=1)",
    "nn_l2_normalize_all": "tf.nn.l2_normalize(v)",
}


def nn_inputs():
    rng = np.random.default_rng(5)
    return {"x": rng.standard_normal((2, 6, 5, 4)).astype("float32"),
            "k2t": rng.standard_normal((3, 3, 2, 4)).astype("float32"),
            "dw": rng.standard_normal((3, 3, 4, 2)).astype("float32"),
            "pw": rng.standard_normal((1, 1, 8, 3)).astype("float32"),
            "x5": rng.standard_normal((2, 5, 4, 4, 3)).astype("float32"),
            "k3": rng.standard_normal((2, 3, 2, 3, 4)).astype("float32"),
            "v": rng.standard_normal((3, 5)).astype("float32")}


def mirrored(out):
    """The masked model under a MirroredStrategy of two CPUs: each replica averages over
    its own unmasked entries (tf-keras' per-replica loss, then the mean of the replicas)."""
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        model = keras.Sequential([L.Embedding(10, 4, mask_zero=True), L.Dense(3)])
        model.build((None, 5))
        model.set_weights([out["mask_model_w%d" % i] for i in range(3)])
        model.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse", metrics=["mae"],
                      weighted_metrics=["mse"])
    out["mask_mirrored_eval"] = np.array(model.evaluate(out["mask_ids"], out["mask_y"],
                                                        batch_size=4, verbose=0), "float64")
    hist = model.fit(out["mask_ids"], out["mask_y"], batch_size=4, epochs=2, shuffle=False,
                     verbose=0)
    out["mask_mirrored_fit_loss"] = np.array(hist.history["loss"], "float64")
    for i, w in enumerate(model.get_weights()):
        out["mask_mirrored_after_w%d" % i] = w


def main():
    cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(cpus[0],
                                               [tf.config.LogicalDeviceConfiguration()] * 2)
    data = inputs()
    out = dict(data)
    for name, (src, xnames) in CASES.items():
        run_case(name, src, xnames, data, out)
    masked_models(out)
    mirrored(out)
    scope = nn_inputs()
    for key, value in scope.items():
        out["nn_in_" + key] = value
    for name, src in NN_CASES.items():
        out[name] = eval(src, dict(scope, tf=tf)).numpy()
    out["nn_cases"] = np.array(json.dumps(NN_CASES))
    out["versions"] = np.array([tf.__version__, keras.__version__])
    np.savez_compressed(os.path.join(HERE, "tf_more_layers.npz"), **out)


if __name__ == "__main__":
    main()
