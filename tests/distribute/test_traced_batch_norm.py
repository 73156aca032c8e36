"""BatchNormalization in a traced strategy.run: each replica's batch statistics and the
updates of its copy of the moving statistics are recorded in the graph (the copies are
variables), so the step traces once and replays, with the eager strategy step's bits.
With synchronized=True the cross-replica sums (and their gradients) are recorded too.

TensorFlow 2.21 facts (2 logical CPUs): train_step's Python runs once per replica during
the first trace only; the moving statistics read as the mean of the replicas' ON_READ
copies; training=False reads each replica's copy."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from tolerances import assert_bits_equal

GB = 16


def _bn_cnn(init=None, synchronized=False):
    m = keras.Sequential([
        keras.layers.Conv2D(4, 3, input_shape=(8, 8, 1)),
        keras.layers.BatchNormalization(synchronized=synchronized),
        keras.layers.Activation("relu"),
        keras.layers.MaxPooling2D(),
        keras.layers.Flatten(),
        keras.layers.Dense(10)])
    if init is not None:
        m.set_weights(init)
    return m


class _Run:
    def __init__(self, strategy, init, opt_kind, scaled, traced, synchronized=False):
        self.s = strategy
        self.prints = {"outer": 0, "inner": []}
        with strategy.scope():
            self.model = _bn_cnn(init, synchronized)
            opt = keras.optimizers.SGD(0.1) if opt_kind == "sgd" else keras.optimizers.Adam()
            if scaled:
                opt = keras.mixed_precision.LossScaleOptimizer(opt)
            self.opt = opt
            self.loss_object = keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, reduction=keras.losses.Reduction.NONE)
        self.opt.build(self.model.trainable_variables)
        self.scaled = scaled
        wrap = tf.function if traced else (lambda f: f)
        self.step = wrap(self._dstep)
        self.infer = wrap(self._dinfer)

    def train_step(self, inputs):
        self.prints["inner"].append(int(tf.distribute.get_replica_context()
                                        .replica_id_in_sync_group))
        images, labels = inputs
        with tf.GradientTape() as tape:
            pred = self.model(images, training=True)
            loss = tf.nn.compute_average_loss(self.loss_object(labels, pred),
                                              global_batch_size=GB)
            scaled = self.opt.get_scaled_loss(loss) if self.scaled else loss
        grads = tape.gradient(scaled, self.model.trainable_variables)
        if self.scaled:
            grads = self.opt.get_unscaled_gradients(grads)
        self.opt.apply_gradients(zip(grads, self.model.trainable_variables))
        return loss

    def _dstep(self, x):
        self.prints["outer"] += 1
        return self.s.reduce("SUM", self.s.run(self.train_step, args=(x,)), axis=None)

    def _dinfer(self, x):
        images, _ = x
        return self.s.run(lambda v: tf.cast(self.model(v, training=False), tf.float32),
                          args=(images,))


@pytest.fixture
def policy():
    yield keras.mixed_precision.set_global_policy
    keras.mixed_precision.set_global_policy("float32")


def _data(rng, n=48):
    x = rng.random((n, 8, 8, 1)).astype(np.float32)
    x[n // 2:] += 2.0  # the replicas' batches differ: their statistics copies differ
    y = rng.integers(0, 10, n).astype(np.int64)
    return x, y


@pytest.mark.parametrize("opt_kind", ["sgd", "adam"])
@pytest.mark.parametrize("scaled", [False, True])
@pytest.mark.parametrize("synchronized", [False, True])
def test_traced_batch_norm_step_equals_eager(two_cpus, rng, policy, opt_kind, scaled,
                                             synchronized):
    policy("mixed_float16" if scaled else "float32")
    x, y = _data(rng)
    init = [w.numpy() for w in _bn_cnn().weights]
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(GB)
    runs = {}
    for traced in (False, True):
        run = _Run(tf.distribute.MirroredStrategy(two_cpus), init, opt_kind, scaled, traced,
                   synchronized)
        dds = run.s.experimental_distribute_dataset(ds)
        losses = [run.step(b).numpy() for _ in range(2) for b in dds]
        infer = [np.concatenate([t.numpy() for t in
                                 run.s.experimental_local_results(run.infer(b))])
                 for b in dds]
        runs[traced] = (run, losses, infer)
    (eager, el, ei), (traced, tl, ti) = runs[False], runs[True]
    assert_bits_equal(np.array(tl), np.array(el))
    for a, b in zip(traced.model.weights, eager.model.weights):  # moving statistics too
        assert_bits_equal(a.numpy(), b.numpy())
    for a, b in zip(ti, ei):  # training=False: each replica its own copy
        assert_bits_equal(a, b)
    assert traced.step.experimental_get_tracing_count() == 1
    assert not any(t.eager for t in traced.step._traces.values())  # replayed in C
    assert traced.prints == {"outer": 1, "inner": [0, 1]}
    assert eager.prints["outer"] == 6 and len(eager.prints["inner"]) == 12
    if scaled:
        assert float(traced.opt.loss_scale) == float(eager.opt.loss_scale)


def test_moving_statistics_are_the_mean_of_the_replicas_copies(two_cpus, rng):
    """One traced step, replicas with different batches: the moving mean is the mean of
    the two copies, each moved towards its replica's batch mean (momentum 0.5)."""
    x = rng.standard_normal((8, 3)).astype(np.float32)
    x[4:] += 3.0
    s = tf.distribute.MirroredStrategy(two_cpus)
    with s.scope():
        bn = keras.layers.BatchNormalization(momentum=0.5)
        bn.build((None, 3))

    calls = []

    def replica_fn(t):
        calls.append(1)  # Python side effect: while tracing only
        return bn(t, training=True)

    @tf.function
    def f(v):
        return s.run(replica_fn, args=(v,))

    dds = s.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices(x).batch(8))
    for b in dds:
        f(b)
        f(b)
    assert f.experimental_get_tracing_count() == 1 and len(calls) == 2
    c0 = x[:4].mean(0) * 0.75  # two steps from 0 towards each replica's mean
    c1 = x[4:].mean(0) * 0.75
    np.testing.assert_allclose(bn.moving_mean.numpy(), (c0 + c1) / 2, rtol=1e-6, atol=1e-6)


def test_an_assignment_between_replays_restarts_the_copies(two_cpus, rng):
    """moving_mean assigned outside the step (set_weights, a restore): the replayed step
    moves every copy from the assigned value, as the eager step does."""
    x = rng.standard_normal((8, 3)).astype(np.float32)
    x[4:] += 3.0
    out = []
    for traced in (False, True):
        s = tf.distribute.MirroredStrategy(two_cpus)
        with s.scope():
            bn = keras.layers.BatchNormalization(momentum=0.5)
            bn.build((None, 3))

        def f(v):
            return s.run(lambda t: bn(t, training=True), args=(v,))

        g = tf.function(f) if traced else f
        dds = s.experimental_distribute_dataset(
            tf.data.Dataset.from_tensor_slices(x).batch(8))
        b = next(iter(dds))
        g(b)
        bn.moving_mean.assign([10.0, 20.0, 30.0])
        g(b)
        out.append(bn.moving_mean.numpy())
    assert_bits_equal(out[1], out[0])
    expect = (np.array([10.0, 20.0, 30.0]) + x[:4].mean(0)) / 2 / 2 + \
        (np.array([10.0, 20.0, 30.0]) + x[4:].mean(0)) / 2 / 2
    np.testing.assert_allclose(out[1], expect, rtol=1e-5, atol=1e-5)


def test_first_call_that_creates_slots_traces_twice_and_equals_eager(two_cpus, rng):
    """Adam not built: the first call makes its slots and the copies, then traces again
    dry (no state changes); the steps still have the eager ones' bits."""
    x, y = _data(rng)
    init = [w.numpy() for w in _bn_cnn().weights]
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(GB)
    runs = []
    for traced in (False, True):
        s = tf.distribute.MirroredStrategy(two_cpus)
        with s.scope():
            model = _bn_cnn(init)
            opt = keras.optimizers.Adam()
            lo = keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, reduction=keras.losses.Reduction.NONE)

        def step(b, model=model, opt=opt, lo=lo):
            with tf.GradientTape() as tape:
                loss = tf.nn.compute_average_loss(lo(b[1], model(b[0], training=True)),
                                                  global_batch_size=GB)
            opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                    model.trainable_variables))
            return loss

        def dstep(b, s=s, step=step):
            return s.reduce("SUM", s.run(step, args=(b,)), axis=None)

        f = tf.function(dstep) if traced else dstep
        losses = [float(f(b)) for b in s.experimental_distribute_dataset(ds)]
        runs.append((losses, [w.numpy() for w in model.weights]))
        if traced:
            assert f.experimental_get_tracing_count() == 2
    assert runs[0][0] == runs[1][0]
    for a, b in zip(runs[1][1], runs[0][1]):
        assert_bits_equal(a, b)


def test_keras_fit_with_batch_norm_under_a_strategy_traces(two_cpus, rng):
    """model.fit's traced steps under MirroredStrategy with BatchNormalization: train_step
    runs once per replica per trace (not per step) and the weights, moving statistics
    included, are run_eagerly=True's."""
    x = rng.standard_normal((64, 4)).astype(np.float32)
    x[32:] += 1.5
    y = x[:, :2] * 2.0
    init = None
    out = {}
    for eager in (True, False):
        calls = []

        class M(keras.Sequential):
            def train_step(self, data):
                calls.append("train")
                return super().train_step(data)

        s = tf.distribute.MirroredStrategy(two_cpus)
        with s.scope():
            m = M([keras.layers.Dense(3, input_shape=(4,)),
                   keras.layers.BatchNormalization(), keras.layers.Dense(2)])
            if init is None:
                init = m.get_weights()
            m.set_weights(init)
            m.compile(keras.optimizers.SGD(0.1), "mse", run_eagerly=eager)
        m.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False)
        pred = m.predict(x[:32], batch_size=16, verbose=0)
        out[eager] = (m.get_weights(), calls.count("train"), pred)
    for a, b in zip(out[False][0], out[True][0]):
        assert_bits_equal(a, b)
    assert_bits_equal(out[False][2], out[True][2])
    assert out[True][1] == 16 and out[False][1] == 2
