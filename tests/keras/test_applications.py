"""keras.applications against tf-keras 2.21 (golden/tf_applications.json, written by
golden/make_tf_applications.py): model names, layer names/classes/output shapes/parameter
counts, count_params; preprocess_input per family; the weights/decode_predictions errors;
one mixed_float16 training step of a small MobileNetV2."""

import json
import os
import sys

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.testing.tolerances import assert_close

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "golden"))
from applications_cases import CASES, PREPROCESS_FAMILIES, preprocess_image  # noqa: E402

with open(os.path.join(HERE, "golden", "tf_applications.json")) as _f:
    GOLDEN = json.load(_f)

# the deepest builds take a while under load: the default run checks one of each family
_SLOW = {"resnet101", "resnet152", "resnet101v2", "resnet152v2", "efficientnetb2",
         "efficientnetb3", "densenet169", "mobilenet_v2_a130"}


def _build(key):
    fn, kwargs = CASES[key]
    family, name = fn.split(".")
    keras.backend.clear_session()
    return getattr(getattr(keras.applications, family), name)(weights=None, **kwargs)


def _shape(s):
    return [list(t) for t in s] if isinstance(s, list) else list(s)


@pytest.mark.parametrize("key", [pytest.param(k, marks=pytest.mark.slow) if k in _SLOW else k
                                 for k in CASES])
def test_architecture_matches_tf_keras(key):
    gold = GOLDEN["models"][key]
    model = _build(key)
    assert model.name == gold["name"]
    got = [[l.name, type(l).__name__, _shape(l.output_shape), int(l.count_params())]
           for l in model.layers]
    assert len(got) == len(gold["layers"])
    for g, t in zip(got, gold["layers"]):
        assert g == t, (g, t)
    assert model.count_params() == gold["count_params"]
    assert sum(int(np.prod(w.shape)) for w in model.trainable_weights) == gold["trainable"]
    assert len(model.weights) == gold["n_weights"]
    assert [w.name for w in model.weights][:40] == gold["weight_names"]
    assert _shape(model.output_shape) == gold["output_shape"]


@pytest.mark.parametrize("family", PREPROCESS_FAMILIES)
def test_preprocess_input_numpy_and_tensor(family):
    mod = getattr(keras.applications, family)
    want = np.asarray(GOLDEN["preprocess"][family], dtype="float32")
    got_np = mod.preprocess_input(preprocess_image())
    assert isinstance(got_np, np.ndarray)
    assert_close(got_np, want, "float32", "elementwise")
    got_t = mod.preprocess_input(tf.constant(preprocess_image()))
    assert_close(got_t, want, "float32", "elementwise")


def test_preprocess_modes_channels_first_and_errors():
    from mixprec.keras.applications import imagenet_utils

    x = preprocess_image()                                  # (2, 4, 5, 3)
    xf = np.ascontiguousarray(np.moveaxis(x, -1, 1))        # (2, 3, 4, 5)
    for mode in ("caffe", "torch", "tf"):
        last = imagenet_utils.preprocess_input(x.copy(), mode=mode)
        first = imagenet_utils.preprocess_input(xf.copy(), data_format="channels_first",
                                                mode=mode)
        assert_close(np.moveaxis(first, 1, -1), last, "float32", "exact")
        first_t = imagenet_utils.preprocess_input(tf.constant(xf),
                                                  data_format="channels_first", mode=mode)
        assert_close(np.moveaxis(first_t.numpy(), 1, -1), last, "float32", "elementwise")
    # caffe mode on one image in RGB: BGR minus the means
    img = np.array([[[10.0, 20.0, 30.0]]], dtype="float32")
    assert_close(keras.applications.vgg16.preprocess_input(img),
                 np.float32([[[30 - 103.939, 20 - 116.779, 10 - 123.68]]]), "float32",
                 "elementwise")
    # integers become floatx
    u8 = np.full((1, 2, 2, 3), 255, dtype="uint8")
    out = keras.applications.mobilenet_v2.preprocess_input(u8)
    assert out.dtype == np.float32 and np.allclose(out, 1.0)
    with pytest.raises(ValueError, match="mode"):
        imagenet_utils.preprocess_input(x, mode="bogus")
    with pytest.raises(ValueError, match="data_format"):
        imagenet_utils.preprocess_input(x, data_format="NHWC")


def test_weights_argument():
    with pytest.raises(ValueError, match="cannot be downloaded"):
        keras.applications.MobileNetV2(input_shape=(96, 96, 3), weights="imagenet",
                                       include_top=False)
    with pytest.raises(ValueError, match="`weights` argument"):
        keras.applications.VGG16(weights="/nonexistent/file.h5")
    with pytest.raises(ValueError, match="`classes` should be 1000"):
        keras.applications.ResNet50(weights="imagenet", classes=10)
    with pytest.raises(ValueError, match="static"):
        keras.applications.VGG16(weights=None, input_shape=(None, None, 3))
    with pytest.raises(ValueError, match="at least 32x32"):
        keras.applications.ResNet50(weights=None, input_shape=(16, 16, 3))
    with pytest.raises(ValueError, match="Unknown argument"):
        keras.applications.ResNet50(weights=None, bogus=1)


def test_local_weights_file_round_trip(tmp_path):
    pytest.importorskip("h5py")
    keras.backend.clear_session()
    m = keras.applications.MobileNet(input_shape=(32, 32, 3), alpha=0.25, weights=None,
                                     include_top=False, pooling="avg")
    path = str(tmp_path / "w.h5")
    m.save_weights(path)
    keras.backend.clear_session()
    m2 = keras.applications.MobileNet(input_shape=(32, 32, 3), alpha=0.25, weights=path,
                                      include_top=False, pooling="avg")
    for a, b in zip(m.weights, m2.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_input_tensor_and_notop_shapes():
    keras.backend.clear_session()
    inp = keras.Input((64, 64, 3))
    m = keras.applications.ResNet50V2(include_top=False, weights=None, input_tensor=inp)
    assert m.inputs[0] is inp and m.output_shape == (None, 2, 2, 2048)
    m = keras.applications.VGG16(include_top=False, weights=None)
    assert m.input_shape == (None, None, None, 3)
    with pytest.raises(ValueError, match="Keras tensor"):
        keras.applications.VGG16(include_top=False, weights=None,
                                 input_tensor=tf.zeros((1, 32, 32, 3)))


def test_decode_predictions(tmp_path):
    from mixprec.keras.applications import imagenet_utils

    index = {str(i): ["n%08d" % i, "class_%d" % i] for i in range(1000)}
    path = tmp_path / "imagenet_class_index.json"
    path.write_text(json.dumps(index))
    preds = np.zeros((2, 1000), dtype="float32")
    preds[0, [5, 17, 900]] = [0.2, 0.5, 0.3]
    preds[1, 3] = 1.0
    out = keras.applications.resnet50.decode_predictions(preds, top=3,
                                                         class_index=str(path))
    assert [r[:2] for r in out[0]] == [("n00000017", "class_17"), ("n00000900", "class_900"),
                                       ("n00000005", "class_5")]
    assert out[0][0][2] == np.float32(0.5) and out[1][0][0] == "n00000003"
    with pytest.raises(ValueError, match=r"\(samples, 1000\)"):
        imagenet_utils.decode_predictions(np.zeros((2, 10)))
    os.environ["KERAS_HOME"] = str(tmp_path / "empty_home")
    try:
        imagenet_utils.CLASS_INDEX = None
        with pytest.raises(ValueError, match="imagenet_class_index.json"):
            imagenet_utils.decode_predictions(preds)
    finally:
        del os.environ["KERAS_HOME"]


def test_mobilenet_v2_one_mixed_float16_step():
    keras.backend.clear_session()
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = keras.applications.MobileNetV2(input_shape=(32, 32, 3), weights=None,
                                               classes=10, alpha=0.35)
        assert model.layers[1].compute_dtype == "float16"
        assert model.output.dtype == tf.float16  # as tf-keras: the top Dense is float16 too
        # tf-keras skips every step here at the default initial scale 2**15 (float16
        # gradients overflow; checked with TF 2.21): start lower so the steps apply
        opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.01),
                                                       initial_scale=256.0)
        model.compile(optimizer=opt, loss="sparse_categorical_crossentropy")
        rng = np.random.default_rng(0)
        x = rng.random((16, 32, 32, 3)).astype("float32")
        y = rng.integers(0, 10, size=(16,))
        before = model.get_layer("Conv1").kernel.numpy().copy()
        hist = model.fit(x, y, batch_size=8, epochs=1, verbose=0)
        assert float(model.optimizer.loss_scale) == 256.0  # no step was skipped
        assert np.isfinite(hist.history["loss"][0])
        assert model.get_layer("Conv1").kernel.dtype == tf.float32
        assert not np.array_equal(before, model.get_layer("Conv1").kernel.numpy())
    finally:
        keras.mixed_precision.set_global_policy("float32")
