"""mixprec's Keras convolution, pooling, padding, ReLU and BatchNormalization layers
against tf-keras 2.21 itself: golden/tf_layers.npz holds TensorFlow's outputs, weight and
activity regularization losses, and BatchNormalization's outputs and moving statistics
(float32 and mixed_float16) for fixed inputs and weights (written by
golden/make_tf_layers.py; the layers are listed once in golden/cases.py)."""

import importlib.util
import os

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.keras import layers as L  # noqa: N812  (the name cases.py's sources use)
from mixprec.keras import mixed_precision
from mixprec.testing.tolerances import TOLERANCE

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
_spec = importlib.util.spec_from_file_location("golden_cases", os.path.join(HERE, "cases.py"))
_cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_cases)
CASES = _cases.CASES
GOLD = dict(np.load(os.path.join(HERE, "tf_layers.npz")))


def test_golden_file_is_from_tf_keras_2_21():
    assert [str(v)[:4] for v in GOLD["versions"]] == ["2.21", "2.21"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_layer_matches_tf_keras(name):
    src, xname = CASES[name]
    layer = eval(src, {"L": L, "keras": keras})
    x = GOLD[xname]
    layer.build(x.shape)
    layer.set_weights([GOLD["%s_w%d" % (name, i)] for i in range(len(layer.weights))])
    y = layer(x).numpy()
    want = GOLD[name]
    assert y.shape == want.shape
    rtol, atol = TOLERANCE[("float32", "matmul")]
    np.testing.assert_allclose(y, want, rtol=rtol, atol=atol)
    losses = [float(v) for v in layer.losses]
    rtol, atol = TOLERANCE[("float32", "reduction")]
    np.testing.assert_allclose(losses, GOLD[name + "_losses"], rtol=rtol, atol=atol)


@pytest.mark.parametrize("policy", ["float32", "mixed_float16"])
@pytest.mark.parametrize("name,xname", [("bn4", "x4"), ("bn2", "x2")])
def test_batch_norm_matches_tf_keras(policy, name, xname):
    mixed_precision.set_global_policy(policy)
    bn = L.BatchNormalization(momentum=0.8)
    x = GOLD[xname]
    train = bn(x, training=True)
    infer = bn(x)
    key = "%s_%s" % (name, policy)
    dt = "float16" if policy == "mixed_float16" else "float32"
    assert train.dtype.name == dt
    rtol, atol = TOLERANCE[(dt, "reduction")]
    np.testing.assert_allclose(tf.cast(train, "float32").numpy(), GOLD[key + "_train"],
                               rtol=rtol, atol=atol * 8)
    np.testing.assert_allclose(tf.cast(infer, "float32").numpy(), GOLD[key + "_infer"],
                               rtol=rtol, atol=atol * 8)
    rtol, atol = TOLERANCE[("float32", "reduction")]
    np.testing.assert_allclose(bn.moving_mean.numpy(), GOLD[key + "_mean"], rtol=rtol,
                               atol=atol)
    np.testing.assert_allclose(bn.moving_variance.numpy(), GOLD[key + "_var"], rtol=rtol,
                               atol=atol)
