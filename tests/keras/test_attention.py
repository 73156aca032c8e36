"""Attention, AdditiveAttention and MultiHeadAttention against tf-keras 2.21 on the same
inputs and weights (golden/tf_attention.npz, written by golden/make_tf_attention.py):
outputs, attention scores, gradients with respect to the query and every weight, weight
names; plus configs, Keras masks, mixed_float16 and errors."""

import os
import re
import sys

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.testing.tolerances import TOLERANCE

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
sys.path.insert(0, HERE)
from attention_cases import CASES, data, weights_for  # noqa: E402

GOLD = np.load(os.path.join(HERE, "tf_attention.npz"))
L = keras.layers
RTOL, ATOL = TOLERANCE[("float32", "matmul")]


def _plain(n):
    return re.sub(r"_\d+(?=/|:)", "", str(n))


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tf_keras(name):
    d = data(np.random.default_rng(5))
    src, call = CASES[name]
    lay = eval(src, {"L": L})
    scope = {k: tf.constant(v) for k, v in d.items()}
    scope["lay"] = lay
    eval(call, scope)
    assert [_plain(w.name) for w in lay.weights] == [_plain(n) for n in GOLD[name + "/names"]]
    lay.set_weights(weights_for(lay, np.random.default_rng(sum(map(ord, name)))))
    first = "Q4" if "Q4" in call else "Q"
    x = tf.Variable(d[first])
    scope[first] = x
    with tf.GradientTape() as tape:
        ys = tf.nest.flatten(eval(call, scope))
        loss = 0.0
        for i, t in enumerate(ys):
            r = np.random.default_rng(50 + i).standard_normal(t.shape).astype("float32")
            loss += tf.reduce_sum(t * r)
    grads = tape.gradient(loss, [x] + lay.weights)
    for i, t in enumerate(ys):
        np.testing.assert_allclose(t.numpy(), GOLD["%s/out%d" % (name, i)], rtol=RTOL,
                                   atol=ATOL, err_msg="%s out%d" % (name, i))
    for i, g in enumerate(grads):
        np.testing.assert_allclose(g.numpy(), GOLD["%s/grad%d" % (name, i)], rtol=RTOL,
                                   atol=ATOL, err_msg="%s grad%d" % (name, i))


def test_mha_in_a_functional_model_with_masks_and_config():
    ids = keras.Input((5,), dtype="int32")
    emb = L.Embedding(10, 8, mask_zero=True)(ids)
    att = L.MultiHeadAttention(num_heads=2, key_dim=4, name="mha")(emb, emb)
    out = L.GlobalAveragePooling1D()(att)
    model = keras.Model(ids, L.Dense(1)(out))
    names = [w.name for w in model.get_layer("mha").weights]
    assert names[0] == "mha/query/kernel:0" and names[-1] == "mha/attention_output/bias:0"
    x = np.array([[1, 2, 3, 0, 0], [4, 5, 0, 0, 0]])
    y = model(x).numpy()
    assert y.shape == (2, 1) and np.isfinite(y).all()
    # padded keys change nothing: the first row's attention over its 3 real tokens
    x2 = np.array([[1, 2, 3, 7, 9], [4, 5, 0, 0, 0]])
    x2[0, 3:] = 0
    np.testing.assert_allclose(model(x2).numpy(), y, rtol=RTOL, atol=ATOL)
    mha = model.get_layer("mha")
    config = mha.get_config()
    assert config["query_shape"] == (None, 5, 8)
    again = L.MultiHeadAttention.from_config(config)
    assert len(again.weights) == len(mha.weights)
    model.compile("adam", "mse")
    model.fit(x, np.ones((2, 1)), epochs=2, verbose=0)


def test_mixed_float16_dtypes():
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        lay = L.MultiHeadAttention(num_heads=2, key_dim=3)
        q = np.random.default_rng(0).standard_normal((2, 4, 6)).astype("float32")
        out, scores = lay(q, q, return_attention_scores=True)
        assert out.dtype == tf.float16 and scores.dtype == tf.float16
        assert all(w.dtype == tf.float32 for w in lay.weights)
        a = L.Attention()([tf.cast(q, "float16"), tf.cast(q, "float16")])
        assert a.dtype == tf.float16
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_errors():
    with pytest.raises(ValueError, match="list of inputs"):
        L.Attention()(np.ones((1, 2, 3), "float32"))
    with pytest.raises(ValueError, match="length 2 or 3"):
        L.Attention()([np.ones((1, 2, 3), "float32")])
    with pytest.raises(ValueError, match="score_mode"):
        L.Attention(score_mode="cos")
    with pytest.raises(ValueError, match="last dimension of `query_shape`"):
        L.MultiHeadAttention(2, 2).compute_output_shape((None, 3, 4), (None, 3, 5))
