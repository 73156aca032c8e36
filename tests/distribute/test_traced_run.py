"""strategy.run inside tf.function traces and replays (issues 13, 15): every replica's ops,
the all-reduce, merge_call and the optimizer update are recorded once and replayed in C.

TensorFlow 2.21 facts (measured with 2 logical CPUs, /tmp/tfenv, seed 004's step with the
model and optimizer built before the first call): the decorated function's body runs once
(one "outer" print), ``train_step`` runs once per replica during that trace (2 prints, with
replica ids 0 then 1), later calls print nothing, ``experimental_get_tracing_count()`` is 1
after 4 steps. The epoch-in-a-function variant (``for x in dist_dataset`` inside): the same,
1 trace and 2 inner prints over two epochs. A function returning ``strategy.run``'s result
returns a PerReplica."""

import warnings

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from tolerances import assert_bits_equal, assert_close

GB = 16  # global batch: 8 per replica


def _data(rng, n=48):
    x = rng.random((n, 8, 8, 1)).astype(np.float32)
    y = rng.integers(0, 10, n).astype(np.int64)
    return x, y


def _cnn(init=None):
    """Seed 004's model, small: Conv2D, MaxPooling2D, Flatten, Dense relu, Dense."""
    m = keras.Sequential([
        keras.layers.Conv2D(4, 3, activation="relu", input_shape=(8, 8, 1)),
        keras.layers.MaxPooling2D(),
        keras.layers.Flatten(),
        keras.layers.Dense(16, activation="relu"),
        keras.layers.Dense(10)])
    if init is not None:
        m.set_weights(init)
    return m


OPTS = {"sgd": lambda: keras.optimizers.SGD(0.1), "adam": lambda: keras.optimizers.Adam(),
        "adagrad": lambda: keras.optimizers.Adagrad(0.05),
        "adadelta": lambda: keras.optimizers.Adadelta(1.0),
        "adamax": lambda: keras.optimizers.Adamax(),
        "nadam": lambda: keras.optimizers.Nadam(),
        "adamw": lambda: keras.optimizers.AdamW(weight_decay=0.1),
        "ftrl": lambda: keras.optimizers.Ftrl(0.05),
        "lion": lambda: keras.optimizers.Lion(),
        "legacy_nadam": lambda: keras.optimizers.legacy.Nadam()}


class _Seed004:
    """Seed 004's objects and steps under a strategy; ``traced``: its steps decorated with
    tf.function (the tutorial), else the same Python run eagerly."""

    def __init__(self, strategy, init, opt_kind, scaled, traced):
        self.s = strategy
        self.prints = {"outer": 0, "inner": []}
        with strategy.scope():
            self.model = _cnn(init)
            opt = OPTS[opt_kind]()
            if scaled:
                opt = keras.mixed_precision.LossScaleOptimizer(opt)
            self.opt = opt
            self.acc = keras.metrics.SparseCategoricalAccuracy()
            self.loss_object = keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, reduction=keras.losses.Reduction.NONE)
        self.scaled = scaled
        wrap = tf.function if traced else (lambda f: f)
        self.step = wrap(self._distributed_train_step)
        self.epoch = wrap(self._distributed_train_epoch)

    def train_step(self, inputs):
        ctx = tf.distribute.get_replica_context()
        self.prints["inner"].append(int(ctx.replica_id_in_sync_group))
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
        self.acc.update_state(labels, pred)
        return loss

    def _distributed_train_step(self, dataset_inputs):
        self.prints["outer"] += 1
        per_replica_losses = self.s.run(self.train_step, args=(dataset_inputs,))
        return self.s.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)

    def _distributed_train_epoch(self, dataset):
        self.prints["outer"] += 1
        total_loss = 0.0
        num_batches = 0
        for x in dataset:
            per_replica_losses = self.s.run(self.train_step, args=(x,))
            total_loss += self.s.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses,
                                        axis=None)
            num_batches += 1
        return total_loss / tf.cast(num_batches, dtype=tf.float32)

    def weights(self):
        return [w.numpy() for w in self.model.weights]


def _pair(two_cpus, rng, opt_kind, scaled):
    x, y = _data(rng)
    init = [w.numpy() for w in _cnn().weights]
    runs = []
    for traced in (False, True):
        s = tf.distribute.MirroredStrategy(two_cpus)
        runs.append(_Seed004(s, init, opt_kind, scaled, traced))
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(GB)
    return runs, ds


@pytest.fixture
def policy():
    yield keras.mixed_precision.set_global_policy
    keras.mixed_precision.set_global_policy("float32")


@pytest.mark.parametrize("opt_kind", sorted(OPTS))
@pytest.mark.parametrize("scaled", [False, True])
def test_traced_seed004_step_equals_eager(two_cpus, rng, policy, opt_kind, scaled):
    policy("mixed_float16" if scaled else "float32")
    (eager, traced), ds = _pair(two_cpus, rng, opt_kind, scaled)
    for run in (eager, traced):
        run.opt.build(run.model.trainable_variables)
    losses = {}
    for name, run in (("eager", eager), ("traced", traced)):
        dds = run.s.experimental_distribute_dataset(ds)
        losses[name] = [run.step(x).numpy() for _ in range(2) for x in dds]
    # the traced step is the eager one's arithmetic (the all-reduce sums in rank order as
    # the thread engine does): the same bits
    assert_bits_equal(np.array(losses["traced"]), np.array(losses["eager"]))
    for a, b in zip(traced.weights(), eager.weights()):
        assert_bits_equal(a, b)
    assert float(traced.acc.result()) == float(eager.acc.result())
    assert int(traced.opt.iterations) == int(eager.opt.iterations) == 6
    if scaled:
        assert float(traced.opt.loss_scale) == float(eager.opt.loss_scale)
    # TensorFlow's counts: one trace; the step's Python ran once, train_step once per replica
    assert traced.step.experimental_get_tracing_count() == 1
    assert traced.prints == {"outer": 1, "inner": [0, 1]}
    assert eager.prints["outer"] == 6 and len(eager.prints["inner"]) == 12


def test_traced_step_iterator_outside_replays(two_cpus, rng):
    """The tutorial's iterator variant: next(iter(dist_dataset)) outside the function."""
    (eager, traced), ds = _pair(two_cpus, rng, "adam", False)
    for run in (eager, traced):
        run.opt.build(run.model.trainable_variables)
        it = iter(run.s.experimental_distribute_dataset(ds))
        for _ in range(3):
            run.step(next(it))
    for a, b in zip(traced.weights(), eager.weights()):
        assert_bits_equal(a, b)
    assert traced.step.experimental_get_tracing_count() == 1
    assert traced.prints == {"outer": 1, "inner": [0, 1]}


def test_epoch_in_a_function_traces_once(two_cpus, rng):
    """``for x in dist_dataset`` inside the function (seed 004's last variant)."""
    (eager, traced), ds = _pair(two_cpus, rng, "adam", False)
    out = {}
    for name, run in (("eager", eager), ("traced", traced)):
        run.opt.build(run.model.trainable_variables)
        dds = run.s.experimental_distribute_dataset(ds)
        out[name] = [run.epoch(dds).numpy() for _ in range(2)]
    assert_bits_equal(np.array(out["traced"]), np.array(out["eager"]))
    for a, b in zip(traced.weights(), eager.weights()):
        assert_bits_equal(a, b)
    assert int(traced.opt.iterations) == 6
    assert traced.epoch.experimental_get_tracing_count() == 1
    assert traced.prints == {"outer": 1, "inner": [0, 1]}


def test_nan_on_one_replica_skips_in_the_replayed_step(two_cpus, rng, policy):
    """The skip decision is in the graph: a replay with a NaN on replica 1's rows skips the
    update on every replica and halves the scale; a replay with finite data applies it."""
    policy("mixed_float16")
    x, y = _data(rng, GB)
    bad = x.copy()
    bad[GB // 2:] = np.nan  # replica 1's half of the global batch
    s = tf.distribute.MirroredStrategy(two_cpus)
    run = _Seed004(s, None, "sgd", True, traced=True)
    run.opt.build(run.model.trainable_variables)

    def batch(images):
        return next(iter(s.experimental_distribute_dataset(
            tf.data.Dataset.from_tensor_slices((images, y)).batch(GB))))

    before = run.weights()
    scale = float(run.opt.loss_scale)
    run.step(batch(bad))  # traces
    for a, b in zip(run.weights(), before):
        np.testing.assert_array_equal(a, b)
    assert float(run.opt.loss_scale) == scale / 2
    run.step(batch(x))  # replays: finite, applied
    after = run.weights()
    assert not np.array_equal(after[0], before[0])
    assert float(run.opt.loss_scale) == scale / 2
    run.step(batch(bad))  # replays: skipped again
    for a, b in zip(run.weights(), after):
        np.testing.assert_array_equal(a, b)
    assert float(run.opt.loss_scale) == scale / 4
    assert int(run.opt.iterations) == 3
    assert run.step.experimental_get_tracing_count() == 1
    assert run.prints["outer"] == 1


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "int32"])
def test_traced_all_reduce_has_the_thread_engines_bits(two_cpus, rng, dtype):
    s = tf.distribute.MirroredStrategy(two_cpus)
    vals = [rng.standard_normal(257) * 100 for _ in range(2)]

    def fn(v):
        ctx = tf.distribute.get_replica_context()
        return ctx.all_reduce("SUM", v), ctx.all_reduce("MEAN", v)

    def run(v):
        return s.run(fn, args=(v,))

    traced = tf.function(run)
    for _ in range(2):
        vals = [rng.standard_normal(257) * 100 for _ in range(2)]
        v = s.experimental_distribute_values_from_function(
            lambda ctx: tf.cast(tf.constant(vals[ctx.replica_id_in_sync_group]), dtype))
        want = run(v)
        got = traced(v)
        for g, w in zip(got, want):
            for a, b in zip(s.experimental_local_results(g), s.experimental_local_results(w)):
                assert_bits_equal(a.numpy(), b.numpy())
    assert traced.experimental_get_tracing_count() == 1


def test_traced_function_returns_per_replica_values(two_cpus):
    """distributed_test_step returns strategy.run's PerReplica: replayed with new values."""
    s = tf.distribute.MirroredStrategy(two_cpus)
    calls = []

    @tf.function
    def f(v):
        calls.append(1)
        return s.run(lambda x: (x * 2.0, tf.distribute.get_replica_context()
                                .replica_id_in_sync_group), args=(v,))

    for k in range(3):
        v = s.experimental_distribute_values_from_function(
            lambda ctx: tf.constant([float(k + ctx.replica_id_in_sync_group)]))
        doubled, rid = f(v)
        assert [float(t.numpy()[0]) for t in s.experimental_local_results(doubled)] == \
            [2.0 * k, 2.0 * k + 2.0]
        assert [int(t) for t in s.experimental_local_results(rid)] == [0, 1]
    assert len(calls) == 1


def test_merge_call_runs_once_per_trace_in_cross_replica_context(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)
    merges = []

    def merge_fn(strategy, value):
        merges.append(tf.distribute.in_cross_replica_context())
        return strategy.reduce("SUM", value, axis=None)

    def fn(x):
        return tf.distribute.get_replica_context().merge_call(merge_fn, args=(x,)) + x

    @tf.function
    def f(v):
        return s.reduce("SUM", s.run(fn, args=(v,)), axis=None)

    for k in range(3):
        v = s.experimental_distribute_values_from_function(
            lambda ctx: tf.constant(float(k + 10 * ctx.replica_id_in_sync_group)))
        # merge: k + (k + 10); each replica adds its own value; reduce sums both
        assert float(f(v)) == 2 * (2 * k + 10) + (2 * k + 10)
    assert merges == [True]


def test_error_in_one_traced_replica_is_raised(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)

    def fn():
        if tf.distribute.get_replica_context()._replica_id == 1:
            raise ValueError("replica one fails")
        return tf.distribute.get_replica_context().all_reduce("SUM", tf.constant(1.0))

    with pytest.raises(ValueError, match="replica one fails"):
        tf.function(lambda: s.run(fn))()


@pytest.mark.parametrize("make", ["one_device", "default"])
def test_one_replica_strategies_trace(make):
    s = tf.distribute.OneDeviceStrategy("/cpu:0") if make == "one_device" \
        else tf.distribute.get_strategy()
    with s.scope():
        v = tf.Variable(1.0)
    prints = []

    def fn(x):
        prints.append(1)
        return tf.distribute.get_replica_context().all_reduce("SUM", x * v)

    @tf.function
    def f(x):
        return s.reduce("SUM", s.run(fn, args=(x,)), axis=None)

    assert [float(f(tf.constant(float(k)))) for k in range(3)] == [0.0, 1.0, 2.0]
    assert len(prints) == 1 and f.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("opt_kind", ["sgd", "adam"])
def test_synchronized_batch_norm_under_a_trace_replays_with_the_eager_bits(two_cpus, rng,
                                                                           opt_kind):
    """The cross-replica sums of synchronized batch normalization are recorded (their
    gradient too: the replicas hand over inside tape.gradient), so the traced step traces
    once and replays in C with the eager step's bits; both equal one replica on the whole
    global batch within the tolerance table."""
    x = rng.standard_normal((8, 3)).astype(np.float32)
    x[4:] += 3
    kernel = rng.standard_normal((3, 3)).astype(np.float32)
    results = []
    for traced in (False, True, None):  # None: one replica, the whole batch
        s = tf.distribute.MirroredStrategy(two_cpus) if traced is not None else \
            tf.distribute.OneDeviceStrategy("/cpu:0")
        with s.scope():
            m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(3, use_bias=False),
                                  keras.layers.BatchNormalization(synchronized=True)])
            m.layers[0].kernel.assign(kernel)
            opt = keras.optimizers.SGD(0.5) if opt_kind == "sgd" else keras.optimizers.Adam(0.1)
            opt.build(m.trainable_variables)

        def step(v):
            with tf.GradientTape() as tape:
                # (not a plain sum of squares of the normalised outputs: its gradient is
                # rounding noise, which Adam would scale up)
                loss = tf.reduce_sum((m(v, training=True) - 0.5 * v) ** 2) / 8.0
            opt.apply_gradients(zip(tape.gradient(loss, m.trainable_variables),
                                    m.trainable_variables))
            return loss

        def dstep(v):
            return s.reduce("SUM", s.run(step, args=(v,)), axis=None)

        f = tf.function(dstep) if traced else dstep
        dds = s.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices(x).batch(8))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            losses = [float(f(b)) for _ in range(3) for b in dds]
        assert not w, [str(m.message) for m in w]
        if traced:
            assert f.experimental_get_tracing_count() == 1
            assert not any(t.eager for t in f._traces.values())  # replayed, no graph break
        results.append((losses, m.get_weights()))
    assert results[0][0] == results[1][0]
    for a, b in zip(results[1][1], results[0][1]):
        assert_bits_equal(a, b)
    assert_close(np.array(results[1][0]), np.array(results[2][0]), "float32", "replicas")
    for a, b in zip(results[1][1], results[2][1]):
        assert_close(a, b, "float32", "replicas")


def test_slots_created_at_the_first_traced_call(two_cpus, rng):
    """The tutorial does not build the optimizer: its slots are made in the first call,
    which then traces twice (as TensorFlow's first call of a function creating variables;
    TensorFlow 2.21 itself fails this case under MirroredStrategy with "You must feed a
    value for placeholder tensor"). The steps still equal the eager ones."""
    (eager, traced), ds = _pair(two_cpus, rng, "adam", False)
    for run in (eager, traced):
        for x in run.s.experimental_distribute_dataset(ds):
            run.step(x)
    for a, b in zip(traced.weights(), eager.weights()):
        assert_bits_equal(a, b)
    assert int(traced.opt.iterations) == int(eager.opt.iterations) == 3
    assert traced.step.experimental_get_tracing_count() == 2
    assert traced.prints == {"outer": 2, "inner": [0, 1, 0, 1]}


@pytest.mark.parametrize("first", [0, 1])
def test_replicas_that_disagree_on_merge_call_raise_not_hang(two_cpus, first):
    s = tf.distribute.MirroredStrategy(two_cpus)

    def fn():
        ctx = tf.distribute.get_replica_context()
        if ctx._replica_id == first:
            return ctx.all_reduce("SUM", tf.constant(1.0))
        return tf.constant(0.0)

    with pytest.raises(RuntimeError, match="different number of replica_context"):
        tf.function(lambda: s.run(fn))()


@pytest.mark.parametrize("examples", [40, 41, 33])
def test_epoch_in_a_function_with_a_partial_last_batch(two_cpus, rng, examples):
    """The last global batch splits 4 + 4, 5 + 4 or 1 + an empty batch: the loop's body is
    traced for that element shape too, and the epochs equal the eager ones."""
    x, y = _data(rng, examples)
    init = [w.numpy() for w in _cnn().weights]
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(GB)
    out = {}
    runs = {}
    for traced in (False, True):
        s = tf.distribute.MirroredStrategy(two_cpus)
        run = _Seed004(s, init, "sgd", False, traced)
        run.opt.build(run.model.trainable_variables)
        dds = s.experimental_distribute_dataset(ds)
        out[traced] = [run.epoch(dds).numpy() for _ in range(2)]
        runs[traced] = run
    assert_bits_equal(np.array(out[True]), np.array(out[False]))
    for a, b in zip(runs[True].weights(), runs[False].weights()):
        assert_bits_equal(a, b)
    assert int(runs[True].opt.iterations) == 6
    assert runs[True].prints["outer"] == 1


def test_a_graph_break_in_a_replica_finishes_the_call_eagerly(two_cpus, rng):
    """A host read of a traced value in train_step (mixprec's graph break, one warning
    naming the line): the call goes on in turns with real values, later calls run
    eagerly, and the steps equal the eager ones."""
    (eager, traced), ds = _pair(two_cpus, rng, "sgd", False)
    seen = {False: [], True: []}
    for is_traced, run in ((False, eager), (True, traced)):
        run.opt.build(run.model.trainable_variables)
        inner = run.train_step

        def noisy(inputs, inner=inner, out=seen[is_traced]):
            loss = inner(inputs)
            out.append(float(loss))  # a host read
            return loss
        run.train_step = noisy
        with pytest.warns(UserWarning, match="graph break") if is_traced else \
                _no_warning():
            for x in run.s.experimental_distribute_dataset(ds):
                run.step(x)
    assert sorted(seen[True]) == sorted(seen[False])  # (eager replicas append in any order)
    for a, b in zip(traced.weights(), eager.weights()):
        assert_bits_equal(a, b)
    assert int(traced.opt.iterations) == 3


class _no_warning:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_keras_fit_and_evaluate_under_a_strategy_trace_their_steps(two_cpus, rng):
    """fit/evaluate's steps run strategy.run inside their traced functions, as tf-keras'
    (TensorFlow 2.21, 2 logical CPUs: evaluate runs the model's test_step twice, once per
    replica, for 4 batches; fit's train_step runs per replica per trace, not per step),
    and give run_eagerly=True's numbers."""
    x = rng.standard_normal((64, 4)).astype(np.float32)
    y = x[:, :2] * 2.0
    init = None
    out = {}
    for eager in (True, False):
        calls = []

        class M(keras.Sequential):
            def train_step(self, data):
                calls.append("train")
                return super().train_step(data)

            def test_step(self, data):
                calls.append("test")
                return super().test_step(data)

            def predict_step(self, data):
                calls.append("predict")
                return super().predict_step(data)

        s = tf.distribute.MirroredStrategy(two_cpus)
        with s.scope():
            m = M([keras.layers.Dense(2, input_shape=(4,))])
            if init is None:
                init = m.get_weights()
            m.set_weights(init)
            m.compile(keras.optimizers.SGD(0.1), "mse", run_eagerly=eager)
        hist = m.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False)
        ev = m.evaluate(x, y, batch_size=16, verbose=0)
        pred = m.predict(x[:40], batch_size=16, verbose=0)  # a last batch of 8: 4 + 4
        out[eager] = (hist.history["loss"], ev, m.get_weights(), list(calls), pred)
    # (the loss metric is shared by the replicas: eagerly they add to it in either order)
    assert_close(np.array(out[False][0] + [out[False][1]]),
                 np.array(out[True][0] + [out[True][1]]), "float32", "replicas")
    for a, b in zip(out[False][2], out[True][2]):
        assert_bits_equal(a, b)
    assert out[True][3].count("train") == 16  # eagerly: 8 steps x 2 replicas
    assert out[False][3].count("test") == 2
    assert out[False][3].count("train") == 2
    # (predict: TensorFlow traces once for every batch size, 2 calls; mixprec's Keras steps
    # trace the first batch size exactly, then the last batch's: 4, with or without a
    # strategy)
    assert_bits_equal(out[False][4], out[True][4])
    assert out[False][4].shape == (40, 2)


def test_traced_gather_and_reduce_with_an_axis_equal_eager(two_cpus, rng):
    """all_gather in a replica, gather and reduce(MEAN, axis=0) across replicas, with an
    uneven split (5 rows: 3 + 2): replayed results equal the eager ones."""
    s = tf.distribute.MirroredStrategy(two_cpus)

    def fn(x):
        ctx = tf.distribute.get_replica_context()
        return ctx.all_gather(x * 2.0, axis=0), x + 1.0

    def run(b):
        gathered, plus = s.run(fn, args=(b,))
        return (s.experimental_local_results(gathered)[-1], s.gather(plus, axis=0),
                s.reduce("MEAN", plus, axis=0), s.reduce("SUM", plus, axis=0))

    traced = tf.function(run)
    for _ in range(2):
        x = rng.standard_normal((5, 3)).astype(np.float32)
        b = next(iter(s.experimental_distribute_dataset(
            tf.data.Dataset.from_tensor_slices(x).batch(5))))
        for got, want in zip(traced(b), run(b)):
            assert_bits_equal(got.numpy(), want.numpy())
    assert traced.experimental_get_tracing_count() == 1
