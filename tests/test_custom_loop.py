"""The acceptance check of the training core: the mixed precision guide's custom training
loop (GradientTape + LossScaleOptimizer.get_scaled_loss + get_unscaled_gradients +
apply_gradients) trains a two-layer MLP written with mixprec.Variable and mixprec.matmul
on real data, and float16 compute reaches the accuracy of float32 compute.

Data: Fashion-MNIST as Debian's ``dataset-fashion-mnist`` package installs it (the
original idx files); the test is skipped where that package is absent.
"""

import gzip
import os
import time

import numpy as np
import pytest

import mixprec as tf

DATA_DIR = "/usr/share/datasets/fashion-mnist"
N_TRAIN, N_TEST = 60000, 10000
HIDDEN, BATCH, EPOCHS = 64, 128, 2


def _idx(name):
    with gzip.open(os.path.join(DATA_DIR, name), "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(dims)


@pytest.fixture(scope="module")
def data():
    if not os.path.isdir(DATA_DIR):
        pytest.skip("Fashion-MNIST not installed (Debian package dataset-fashion-mnist)")
    x = _idx("train-images-idx3-ubyte.gz")[:N_TRAIN].reshape(N_TRAIN, 784)
    y = _idx("train-labels-idx1-ubyte.gz")[:N_TRAIN].astype(np.int64)
    xt = _idx("t10k-images-idx3-ubyte.gz")[:N_TEST].reshape(N_TEST, 784)
    yt = _idx("t10k-labels-idx1-ubyte.gz")[:N_TEST].astype(np.int64)
    # the guide: inputs preprocessed on the CPU in float32
    return (x.astype(np.float32) / 255, y), (xt.astype(np.float32) / 255, yt)


def _glorot(rng, n_in, n_out):
    lim = np.sqrt(6.0 / (n_in + n_out))
    return rng.uniform(-lim, lim, (n_in, n_out)).astype(np.float32)


def _train(data, compute_dtype):
    (x, y), (xt, yt) = data
    rng = np.random.default_rng(0)
    w1 = tf.Variable(_glorot(rng, 784, HIDDEN), name="w1")
    b1 = tf.Variable(np.zeros(HIDDEN, np.float32), name="b1")
    w2 = tf.Variable(_glorot(rng, HIDDEN, 10), name="w2")
    b2 = tf.Variable(np.zeros(10, np.float32), name="b2")
    params = [w1, b1, w2, b2]
    opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.RMSprop(1e-3))

    def forward(xb):
        # the layers' autocasting written out: inputs and weights cast to the compute dtype
        c = lambda t: tf.cast(t, compute_dtype)  # noqa: E731
        h = tf.nn.relu(tf.matmul(c(xb), c(w1)) + c(b1))
        logits = tf.matmul(h, c(w2)) + c(b2)
        return tf.cast(logits, "float32")  # the softmax and the loss in float32

    def train_step(xb, yb):
        with tf.GradientTape() as tape:
            logits = forward(xb)
            loss = -tf.reduce_mean(tf.reduce_sum(
                tf.one_hot(yb, 10) * tf.nn.log_softmax(logits), axis=1))
            scaled_loss = opt.get_scaled_loss(loss)
        scaled_grads = tape.gradient(scaled_loss, params)
        grads = opt.get_unscaled_gradients(scaled_grads)
        opt.apply_gradients(zip(grads, params))
        return loss

    order = np.random.default_rng(1)
    losses = []
    for _ in range(EPOCHS):
        perm = order.permutation(len(x))
        for i in range(0, len(x) - BATCH + 1, BATCH):
            idx = perm[i:i + BATCH]
            losses.append(float(train_step(tf.constant(x[idx]), tf.constant(y[idx]))))
    pred = tf.argmax(forward(tf.constant(xt)), axis=1).numpy()
    return float(np.mean(pred == yt)), losses, opt, params


@pytest.fixture(scope="module")
def runs(data):
    t0 = time.perf_counter()
    out = {dt: _train(data, dt) for dt in ("float32", "float16")}
    out["seconds"] = time.perf_counter() - t0
    return out


def test_float32_training_learns(runs):
    acc, losses, opt, params = runs["float32"]
    assert acc > 0.83, acc
    assert np.mean(losses[-20:]) < 0.6 * np.mean(losses[:20])
    assert all(p.dtype == tf.float32 for p in params)


def test_float16_compute_matches_float32_accuracy(runs):
    acc32 = runs["float32"][0]
    acc16, losses, opt, params = runs["float16"]
    assert acc16 > 0.83, acc16
    assert abs(acc16 - acc32) <= 0.01, (acc16, acc32)
    assert all(np.isfinite(losses))
    assert all(p.dtype == tf.float32 for p in params)  # float32 master weights


def test_loss_scale_stays_high_and_steps_count(runs):
    for dt in ("float32", "float16"):
        _, losses, opt, _ = runs[dt]
        assert int(opt.iterations) == len(losses)
        # no overflow here: the dynamic scale never had to drop far from 2**15
        assert float(opt.loss_scale) >= 2.0 ** 12


@pytest.mark.skipif("asan" in os.environ.get("LD_PRELOAD", ""),
                    reason="a time budget means nothing under the sanitizers")
def test_fast_enough(runs):
    assert runs["seconds"] < 10.0, runs["seconds"]
