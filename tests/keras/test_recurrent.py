"""Recurrent layers (LSTM, GRU, SimpleRNN, RNN over cells, Bidirectional) against tf-keras
2.21 on the same inputs and weights (golden/tf_rnn.npz, written by golden/make_tf_rnn.py):
outputs, gradients with respect to the input and every weight, and weight names; plus
configs, masks from Embedding(mask_zero=True), stateful layers, mixed_float16 dtypes,
traced fit and errors."""

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
from rnn_cases import CASES, data, weights_for  # noqa: E402

GOLD = np.load(os.path.join(HERE, "tf_rnn.npz"))
L = keras.layers
# five steps of products and saturating activations, then their gradients
RTOL, ATOL = TOLERANCE[("float32", "matmul")]


def _kwargs(kw, d):
    return {k: (tf.constant(v) if not isinstance(v, list) else [tf.constant(a) for a in v])
            for k, v in eval(kw, d).items()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tf_keras(name):
    d = data(np.random.default_rng(11))
    src, kw = CASES[name]
    layer = eval(src, {"L": L})
    layer(tf.constant(d["X"]), **_kwargs(kw, d))
    names = [w.name for w in layer.weights]
    def plain(n):  # the layers' unique-name counters depend on what ran before
        return re.sub(r"_\d+(?=/|:)", "", str(n))

    assert [plain(n) for n in names] == [plain(n) for n in GOLD[name + "/names"]]
    layer.set_weights(weights_for(layer, np.random.default_rng(sum(map(ord, name)))))
    x = tf.Variable(d["X"])
    with tf.GradientTape() as tape:
        y = layer(x, **_kwargs(kw, d))
        ys = tf.nest.flatten(y)
        loss = 0.0
        for i, t in enumerate(ys):
            r = np.random.default_rng(100 + i).standard_normal(t.shape).astype("float32")
            loss += tf.reduce_sum(t * r)
    grads = tape.gradient(loss, [x] + layer.weights)
    for i, t in enumerate(ys):
        np.testing.assert_allclose(t.numpy(), GOLD["%s/out%d" % (name, i)], rtol=RTOL,
                                   atol=ATOL, err_msg="%s out%d" % (name, i))
    for i, g in enumerate(grads):
        np.testing.assert_allclose(g.numpy(), GOLD["%s/grad%d" % (name, i)], rtol=RTOL,
                                   atol=ATOL, err_msg="%s grad%d" % (name, i))


def test_weight_names_inside_a_model_and_configs():
    model = keras.Sequential([keras.Input((5, 4)), L.LSTM(3, name="lstm"), L.Dense(1)])
    assert [w.name for w in model.layers[0].weights] == [
        "lstm/lstm_cell/kernel:0", "lstm/lstm_cell/recurrent_kernel:0", "lstm/lstm_cell/bias:0"]
    config = L.GRU(4, return_sequences=True, reset_after=False).get_config()
    assert list(config)[:9] == ["name", "trainable", "dtype", "return_sequences",
                                "return_state", "go_backwards", "stateful", "unroll",
                                "time_major"]
    assert config["reset_after"] is False and config["units"] == 4
    again = L.GRU.from_config(config)
    assert again.get_config() | {"name": config["name"]} == config
    bidi = L.Bidirectional(L.LSTM(2, name="enc"))
    assert bidi.forward_layer.name == "forward_enc" and bidi.backward_layer.go_backwards
    c = bidi.get_config()
    assert c["layer"]["class_name"] == "LSTM" and c["layer"]["config"]["name"] == "enc"
    assert type(L.Bidirectional.from_config(c).forward_layer) is L.LSTM
    rnn = L.RNN([L.LSTMCell(2), L.SimpleRNNCell(3)])
    assert type(L.deserialize(L.serialize(rnn)).cell).__name__ == "StackedRNNCells"


def test_embedding_mask_reaches_the_lstm():
    ids = np.array([[3, 4, 0, 0], [1, 2, 5, 0]])
    model = keras.Sequential([L.Embedding(8, 4, mask_zero=True), L.LSTM(3)])
    full = model(ids).numpy()
    # the padded steps change nothing: the same rows without the padding
    emb, lstm = model.layers
    short = lstm(emb(np.array([[3, 4]]))).numpy()
    np.testing.assert_allclose(full[0], short[0], rtol=RTOL, atol=ATOL)


def test_stateful_lstm_carries_its_states_across_calls():
    layer = L.LSTM(3, stateful=True, return_state=True)
    x = np.random.default_rng(0).standard_normal((2, 4, 5)).astype("float32")
    _, h1, c1 = layer(x[:, :2])
    out2, _, _ = layer(x[:, 2:])
    ref = L.LSTM(3, return_state=True)
    ref(x)
    ref.set_weights(layer.get_weights())
    out_full, _, _ = ref(x)
    np.testing.assert_allclose(out2.numpy(), out_full.numpy(), rtol=RTOL, atol=ATOL)
    layer.reset_states()
    assert float(tf.reduce_sum(tf.abs(layer.states[0]))) == 0.0
    with pytest.raises(AttributeError, match="stateful"):
        L.LSTM(2).reset_states()


def test_mixed_float16_computes_in_float16_with_float32_weights():
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        layer = L.GRU(3, return_sequences=True)
        y = layer(np.ones((2, 4, 5), "float32"))
        assert y.dtype == tf.float16
        assert all(w.dtype == tf.float32 for w in layer.weights)
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_traced_fit_equals_eager_fit():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 6, 3)).astype("float32")
    y = rng.standard_normal((16, 1)).astype("float32")
    results = []
    for eager in (True, False):
        keras.utils.set_random_seed(3)
        model = keras.Sequential([keras.Input((6, 3)), L.Bidirectional(L.GRU(4)), L.Dense(1)])
        model.compile("adam", "mse", run_eagerly=eager)
        h = model.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False)
        results.append((h.history["loss"], [w.numpy() for w in model.weights]))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=RTOL, atol=ATOL)
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)


def test_dropout_only_in_training():
    layer = L.LSTM(3, dropout=0.5, recurrent_dropout=0.5)
    x = np.ones((4, 3, 2), "float32")
    a = layer(x).numpy()
    np.testing.assert_array_equal(a, layer(x, training=False).numpy())
    assert not np.allclose(a, layer(x, training=True).numpy())


def test_bad_arguments():
    with pytest.raises(ValueError, match="units"):
        L.LSTM(0)
    with pytest.raises(ValueError, match="dropout"):
        L.GRU(2, dropout=1.5)
    with pytest.raises(ValueError, match="ndim=3"):
        L.SimpleRNN(2)(np.ones((2, 3), "float32"))
    with pytest.raises(ValueError, match="merge mode"):
        L.Bidirectional(L.LSTM(2), merge_mode="max")
    with pytest.raises(ValueError, match="initial_state"):
        L.LSTM(2)(np.ones((1, 3, 2), "float32"), initial_state=[np.zeros((1, 2), "float32")])


def test_bidirectional_config_is_the_wrapped_layers():
    c = L.Bidirectional(L.LSTM(2, return_sequences=True)).get_config()
    assert "zero_output_for_mask" not in c["layer"]["config"]
    assert list(c) == ["name", "trainable", "dtype", "layer", "merge_mode"]
