"""Acceptance: a custom training step on 2 replicas x 32 examples gives the weights of
1 replica x 64 examples of the same global batch (SGD and Adam, with and without loss
scaling), and a NaN gradient on one replica skips the step on every replica."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from tolerances import assert_close


def _model(seed_weights=None):
    model = keras.Sequential([keras.layers.Dense(16, activation="relu", input_shape=(8,)),
                              keras.layers.Dense(4)])
    if seed_weights is not None:
        model.set_weights(seed_weights)
    return model


OPTS = {"sgd": lambda: keras.optimizers.SGD(0.1), "adam": lambda: keras.optimizers.Adam(0.01),
        "adagrad": lambda: keras.optimizers.Adagrad(0.05),
        "adadelta": lambda: keras.optimizers.Adadelta(1.0),
        "adamax": lambda: keras.optimizers.Adamax(0.01),
        "nadam": lambda: keras.optimizers.Nadam(0.01),
        "adamw": lambda: keras.optimizers.AdamW(0.01, weight_decay=0.1),
        "ftrl": lambda: keras.optimizers.Ftrl(0.05, l1_regularization_strength=0.01),
        "legacy_nadam": lambda: keras.optimizers.legacy.Nadam(0.01),
        "legacy_adagrad": lambda: keras.optimizers.legacy.Adagrad(0.05)}


def _make_opt(kind, scaled):
    opt = OPTS[kind]()
    if scaled:
        opt = keras.mixed_precision.LossScaleOptimizer(opt)
    return opt


def _step_fn(model, opt, loss_obj, scaled, global_batch):
    def step(x, y):
        with tf.GradientTape() as tape:
            pred = model(x, training=True)
            loss = tf.nn.compute_average_loss(loss_obj(y, pred), global_batch_size=global_batch)
            scaled_loss = opt.get_scaled_loss(loss) if scaled else loss
        grads = tape.gradient(scaled_loss, model.trainable_variables)
        if scaled:
            grads = opt.get_unscaled_gradients(grads)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return step


@pytest.mark.parametrize("kind", sorted(OPTS))
@pytest.mark.parametrize("scaled", [False, True])
def test_two_replicas_equal_one_replica_on_the_global_batch(two_cpus, rng, kind, scaled):
    x = rng.standard_normal((64, 8)).astype(np.float32)
    y = rng.integers(0, 4, 64)
    init = [w.numpy() for w in _model().weights]
    loss_obj = keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction=keras.losses.Reduction.NONE)

    # one replica, 64 examples
    ref = _model(init)
    ref_opt = _make_opt(kind, scaled)
    ref_step = _step_fn(ref, ref_opt, loss_obj, scaled, 64)
    ref_losses = [float(ref_step(tf.constant(x), tf.constant(y))) for _ in range(3)]

    # two replicas, 32 examples each
    s = tf.distribute.MirroredStrategy(two_cpus)
    with s.scope():
        model = _model(init)
        opt = _make_opt(kind, scaled)
    step = _step_fn(model, opt, loss_obj, scaled, 64)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(64)
    losses = []
    for _ in range(3):
        for batch in s.experimental_distribute_dataset(ds):
            per_replica = s.run(step, args=batch)
            losses.append(float(s.reduce("SUM", per_replica, axis=None)))
    for a, b in zip(model.weights, ref.weights):
        assert_close(a.numpy(), b.numpy(), "float32", "replicas")
    assert_close(np.array(losses), np.array(ref_losses), "float32", "replicas")
    assert int(opt.iterations) == 3


def test_nan_on_one_replica_skips_the_step_everywhere(two_cpus, rng):
    s = tf.distribute.MirroredStrategy(two_cpus)
    with s.scope():
        model = _model()
        opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.1))
    before = [w.numpy() for w in model.weights]
    scale = float(opt.loss_scale)

    def step(x):
        ctx = tf.distribute.get_replica_context()
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(x)) / 8.0
            if int(ctx.replica_id_in_sync_group) == 1:
                loss = loss * float("nan")
            scaled = opt.get_scaled_loss(loss)
        grads = opt.get_unscaled_gradients(tape.gradient(scaled, model.trainable_variables))
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    x = tf.constant(rng.standard_normal((8, 8)).astype(np.float32))
    ds = tf.data.Dataset.from_tensor_slices(x).batch(8)
    for batch in s.experimental_distribute_dataset(ds):
        s.run(step, args=(batch,))
    for a, b in zip(model.weights, before):
        np.testing.assert_array_equal(a.numpy(), b)
    assert float(opt.loss_scale) == scale / 2
    assert int(opt.iterations) == 1

    def good(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(x)) / 8.0
            scaled = opt.get_scaled_loss(loss)
        grads = opt.get_unscaled_gradients(tape.gradient(scaled, model.trainable_variables))
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    for batch in s.experimental_distribute_dataset(ds):
        s.run(good, args=(batch,))
    assert not np.array_equal(model.weights[0].numpy(), before[0])
    assert float(opt.loss_scale) == scale / 2
