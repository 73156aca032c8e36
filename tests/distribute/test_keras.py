"""Model.fit/evaluate/predict compiled inside strategy.scope(): each batch is split over the
replicas and the result equals training without a strategy (tf-keras' behaviour)."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from tolerances import assert_close


def _model(init=None):
    m = keras.Sequential([keras.layers.Dense(16, activation="relu", input_shape=(8,)),
                          keras.layers.Dense(3, activation="softmax")])
    if init is not None:
        m.set_weights(init)
    return m


@pytest.mark.parametrize("policy", ["float32", "mixed_float16"])
def test_fit_in_scope_equals_fit_without_strategy(two_cpus, rng, policy):
    keras.mixed_precision.set_global_policy(policy)
    x = rng.standard_normal((70, 8)).astype(np.float32)  # 32 + 32 + a last batch of 6
    y = rng.integers(0, 3, 70)
    init = [w.numpy() for w in _model().weights]
    ref = _model(init)
    ref.compile(keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy", ["accuracy"])
    ref_hist = ref.fit(x, y, batch_size=32, epochs=2, shuffle=False, verbose=0)
    s = tf.distribute.MirroredStrategy(two_cpus)
    with s.scope():
        model = _model(init)
        model.compile(keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy",
                      ["accuracy"])
    hist = model.fit(x, y, batch_size=32, epochs=2, shuffle=False, verbose=0)
    kind = "replicas" if policy == "float32" else "optimizer"
    for a, b in zip(model.weights, ref.weights):
        assert_close(a.numpy(), b.numpy(), "float32" if policy == "float32" else "float16", kind)
    assert_close(np.array(hist.history["loss"]), np.array(ref_hist.history["loss"]),
                 "float32" if policy == "float32" else "float16", kind)
    assert hist.history["accuracy"] == ref_hist.history["accuracy"]
    ev = model.evaluate(x, y, batch_size=32, verbose=0)
    ref_ev = ref.evaluate(x, y, batch_size=32, verbose=0)
    assert_close(np.array(ev), np.array(ref_ev), "float32" if policy == "float32" else "float16",
                 kind)
    pred = model.predict(x, batch_size=32, verbose=0)
    assert pred.shape == (70, 3)
    assert_close(pred, ref.predict(x, batch_size=32, verbose=0),
                 "float32" if policy == "float32" else "float16", kind)


def test_fit_with_a_batch_smaller_than_the_replicas(two_cpus, rng):
    x = rng.standard_normal((3, 8)).astype(np.float32)  # batches of 2 and 1 (1 + empty)
    y = rng.integers(0, 3, 3)
    s = tf.distribute.MirroredStrategy(two_cpus)
    with s.scope():
        model = _model()
        model.compile("sgd", "sparse_categorical_crossentropy")
    hist = model.fit(x, y, batch_size=2, epochs=1, verbose=0)
    assert np.isfinite(hist.history["loss"][0])
    assert model.predict(x, batch_size=2, verbose=0).shape == (3, 3)


def _bn_model(sync, momentum=0.5):
    bn = keras.layers.BatchNormalization(momentum=momentum, synchronized=sync)
    model = keras.Sequential([keras.Input((3,)), bn])
    model.compile(optimizer="sgd", loss="mse")
    return model, bn


@pytest.mark.parametrize("sync", [False, True])
def test_batch_norm_moving_statistics_on_two_replicas(two_cpus, rng, sync):
    # tf-keras keeps one copy of the moving statistics per replica and reads their mean:
    # synchronized, the copies take the global batch's statistics; otherwise each
    # replica's own half (numbers checked against tf-keras 2.21 on two logical CPUs)
    s = tf.distribute.MirroredStrategy(two_cpus)
    x = rng.standard_normal((8, 3)).astype(np.float32)
    x[4:] += 3
    with s.scope():
        model, bn = _bn_model(sync)
    model.fit(x, np.zeros_like(x), batch_size=8, epochs=1, verbose=0, shuffle=False)
    xd = x.astype(np.float64)
    if sync:
        mean, var = xd.mean(0), xd.var(0)
    else:
        mean = (xd[:4].mean(0) + xd[4:].mean(0)) / 2
        var = (xd[:4].var(0) + xd[4:].var(0)) / 2
    assert_close(bn.moving_mean.numpy(), 0.5 * mean, "float32", "reduction")
    assert_close(bn.moving_variance.numpy(), 0.5 + 0.5 * var, "float32", "reduction")
    # inference on the replicas: each normalises with its own copy, as tf-keras' replicas
    # read their ON_READ copy (predict splits the 8 rows 4 + 4 as fit did)
    out = model.predict(x, batch_size=8, verbose=0)
    g, b = bn.gamma.numpy().astype(np.float64), bn.beta.numpy().astype(np.float64)
    for rows in (slice(0, 4), slice(4, 8)):
        half = xd[rows]
        m, v = (mean, var) if sync else (half.mean(0), half.var(0))
        want = g * (half - 0.5 * m) / np.sqrt(0.5 + 0.5 * v + 1e-3) + b
        assert_close(out[rows], want, "float32", "replicas")


def test_synchronized_batch_norm_step_equals_one_replica_on_the_whole_batch(two_cpus, rng):
    # the statistics and their gradient cross the replicas (the AllReduce op on the tape):
    # one step on 2 replicas is the one-replica step on the global batch
    x = rng.standard_normal((8, 3)).astype(np.float32)
    x[4:] += 3
    y = rng.standard_normal((8, 3)).astype(np.float32)
    kernel = rng.standard_normal((3, 3)).astype(np.float32)

    def build():
        m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(3, use_bias=False),
                              keras.layers.BatchNormalization(synchronized=True)])
        m.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse")
        m.layers[0].kernel.assign(kernel)
        return m

    one = build()
    one.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    s = tf.distribute.MirroredStrategy(two_cpus)
    with s.scope():
        two = build()
    two.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    for a, b in zip(two.get_weights(), one.get_weights()):
        assert_close(a, b, "float32", "replicas")
    # without synchronization the replicas normalise their own halves: another step
    with s.scope():
        local = build()
        local.layers[1].synchronized = False
    local.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    assert not np.allclose(local.layers[0].kernel.numpy(), one.layers[0].kernel.numpy())


def test_all_reduce_gradient_reaches_every_replica(two_cpus, rng):
    # custom loop: d/dx_i of sum_j f(sum_r x_r) on replica i is the sum over replicas
    s = tf.distribute.MirroredStrategy(two_cpus)
    xs = [rng.standard_normal(4).astype(np.float32) for _ in range(2)]

    def step(_):
        ctx = tf.distribute.get_replica_context()
        x = tf.constant(xs[ctx._replica_id])
        with tf.GradientTape() as tape:
            tape.watch(x)
            total = s.extended._replica_sum_on_tape(ctx, [x])[0]
            loss = tf.reduce_sum(total * total) * float(ctx._replica_id + 1)
        return tape.gradient(loss, x)

    grads = s.experimental_local_results(s.run(step, args=(None,)))
    total = xs[0] + xs[1]
    for g in grads:  # (1 + 2) * 2 * total on both replicas
        assert_close(g.numpy(), 6 * total, "float32", "elementwise")


def test_synchronized_batch_norm_with_a_replica_without_rows(two_cpus):
    # 9 rows in batches of 8: the last batch gives replica 1 no rows. It still joins the
    # statistics' sums (forward and backward) and keeps its copy of the moving statistics,
    # as tf-keras; the numbers are tf-keras 2.21's on two logical CPUs (same data, weights)
    s = tf.distribute.MirroredStrategy(two_cpus)
    x = np.random.default_rng(0).standard_normal((9, 3)).astype(np.float32)
    with s.scope():
        m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(3, kernel_initializer="ones"),
                              keras.layers.BatchNormalization(synchronized=True)])
        m.compile("sgd", "mse")
    m.fit(x, x, batch_size=8, epochs=1, verbose=0, shuffle=False)
    assert_close(m.layers[1].moving_mean.numpy(), [-0.00213505, -0.00213497, -0.00214133],
                 "float32", "replicas")
