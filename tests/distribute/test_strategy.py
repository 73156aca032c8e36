"""MirroredStrategy on two (three) logical CPUs, replicas as threads: contexts, run/reduce/
gather, dataset rebatching (TensorFlow 2.21's recorded splits), compute_average_loss, merge
calls, mirrored variables and metrics, and failures that propagate instead of hanging."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from tolerances import assert_close


def test_contexts_and_defaults(two_cpus):
    assert not tf.distribute.has_strategy()
    assert not tf.distribute.in_cross_replica_context()
    default = tf.distribute.get_strategy()
    assert default.num_replicas_in_sync == 1
    ctx = tf.distribute.get_replica_context()
    assert ctx is not None and ctx.num_replicas_in_sync == 1
    s = tf.distribute.MirroredStrategy(two_cpus)
    assert s.num_replicas_in_sync == 2
    assert s.extended.worker_devices[1].endswith("/device:CPU:1")
    with s.scope():
        assert tf.distribute.has_strategy()
        assert tf.distribute.get_strategy() is s
        assert tf.distribute.in_cross_replica_context()
        assert tf.distribute.get_replica_context() is None

    def fn():
        c = tf.distribute.get_replica_context()
        assert not tf.distribute.in_cross_replica_context()
        assert tf.distribute.get_strategy() is s
        return c.replica_id_in_sync_group, c.num_replicas_in_sync

    ids, nums = s.run(fn)
    assert [int(v) for v in s.experimental_local_results(ids)] == [0, 1]
    assert nums == 2  # the same Python value from both replicas
    assert tf.distribute.get_strategy() is default


def test_one_device_and_device_lists(two_cpus):
    one = tf.distribute.OneDeviceStrategy("/cpu:0")
    assert one.num_replicas_in_sync == 1
    assert float(one.run(lambda: tf.constant(2.0))) == 2.0
    s = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"],
                                       cross_device_ops=tf.distribute.ReductionToOneDevice())
    assert s.num_replicas_in_sync == 2
    tf.distribute.MirroredStrategy(["CPU:1"], cross_device_ops=tf.distribute.NcclAllReduce())
    tf.distribute.HierarchicalCopyAllReduce()
    with pytest.raises(ValueError):
        tf.distribute.MirroredStrategy(["/cpu:5"])
    with pytest.raises(ValueError):
        tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:0"])


def test_reduce_values_as_tensorflow(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)
    vals = s.experimental_distribute_values_from_function(
        lambda ctx: tf.constant([1.25, 2.25][ctx.replica_id_in_sync_group]))
    assert float(s.reduce(tf.distribute.ReduceOp.SUM, vals, axis=None)) == 3.5
    assert float(s.reduce("MEAN", vals, axis=None)) == 1.75
    vecs = s.experimental_distribute_values_from_function(
        lambda ctx: tf.constant([[2.0, 3.0], [4.0, 5.0]][ctx.replica_id_in_sync_group]))
    assert float(s.reduce("SUM", vecs, axis=0)) == 14.0
    assert float(s.reduce("MEAN", vecs, axis=0)) == 3.5
    np.testing.assert_array_equal(s.reduce("SUM", vecs, axis=None).numpy(), [6, 8])
    np.testing.assert_array_equal(s.reduce("MEAN", vecs, axis=None).numpy(), [3, 4])
    uneven = s.experimental_distribute_values_from_function(
        lambda ctx: tf.constant([[1.0, 2.0, 3.0], [4.0, 10.0]][ctx.replica_id_in_sync_group]))
    assert float(s.reduce("MEAN", uneven, axis=0)) == 4.0  # count-weighted
    np.testing.assert_array_equal(s.gather(uneven, axis=0).numpy(), [1, 2, 3, 4, 10])
    with pytest.raises(ValueError, match="cannot be reduced"):
        s.reduce("SUM", 8.0, axis=None)
    assert float(s.reduce("MEAN", 8.0, axis=None)) == 8.0


def _split_sizes(strategy, n_rows, batch, drop=False):
    ds = tf.data.Dataset.from_tensor_slices(np.arange(n_rows, dtype=np.float32)).batch(
        batch, drop_remainder=drop)
    out = []
    for x in strategy.experimental_distribute_dataset(ds):
        out.append([int(v.shape[0]) for v in strategy.experimental_local_results(x)])
    return out


def test_rebatching_as_tensorflow(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)
    assert _split_sizes(s, 8, 8) == [[4, 4]]
    assert _split_sizes(s, 13, 8) == [[4, 4], [3, 2]]
    assert _split_sizes(s, 11, 8) == [[4, 4], [2, 1]]
    assert _split_sizes(s, 15, 8) == [[4, 4], [4, 3]]
    assert _split_sizes(s, 9, 8) == [[4, 4], [1, 0]]
    assert _split_sizes(s, 7, 7, drop=True) == [[4, 3]]
    # the rows stay in order across the replicas, and iter/next works
    ds = tf.data.Dataset.from_tensor_slices(np.arange(6, dtype=np.float32)).batch(6)
    it = iter(s.experimental_distribute_dataset(ds))
    x = next(it)
    a, b = s.experimental_local_results(x)
    np.testing.assert_array_equal(np.concatenate([a.numpy(), b.numpy()]), np.arange(6))
    with pytest.raises(StopIteration):
        next(it)


def test_rebatching_three_replicas(three_cpus):
    s = tf.distribute.MirroredStrategy(three_cpus)
    assert s.num_replicas_in_sync == 3
    assert _split_sizes(s, 4, 4) == [[2, 2, 0]]
    assert _split_sizes(s, 4, 4, drop=True) == [[2, 1, 1]]


def test_datasets_from_function(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)
    seen = []

    def dataset_fn(ctx):
        seen.append((ctx.num_input_pipelines, ctx.input_pipeline_id, ctx.num_replicas_in_sync,
                     ctx.get_per_replica_batch_size(8)))
        return tf.data.Dataset.from_tensor_slices(np.arange(12, dtype=np.float32)).batch(4)

    dist = s.distribute_datasets_from_function(dataset_fn)
    steps = [[v.numpy().tolist() for v in s.experimental_local_results(x)] for x in dist]
    assert seen == [(1, 0, 2, 4)]
    assert steps[0] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert steps[1] == [[8, 9, 10, 11], []]


def test_compute_average_loss_in_and_out_of_replicas(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)
    assert_close(tf.nn.compute_average_loss([2.5, 6.2, 5.0]).numpy(), (2.5 + 6.2 + 5) / 3,
                 "float32", "reduction")

    def fn():
        return (tf.nn.compute_average_loss(tf.constant([2.5, 6.2, 5.0])),
                tf.nn.compute_average_loss(tf.constant([1.0, 2, 3, 4, 5]), global_batch_size=10),
                tf.nn.compute_average_loss(tf.constant([2.0, 4, 6]), sample_weight=2),
                tf.nn.compute_average_loss(tf.constant([2.0, 4, 6]),
                                           sample_weight=[0.3, 0.5, 0.2]),
                tf.nn.compute_average_loss(tf.constant([1.0]), global_batch_size=0),
                tf.nn.scale_regularization_loss(tf.constant([2.5, 6.2, 5.0])))

    out = [s.reduce("SUM", v, axis=None).numpy() for v in s.run(fn)]
    assert_close(out[0], (2.5 + 6.2 + 5) / 3, "float32", "reduction")
    assert_close(out[1], 3.0, "float32", "reduction")  # 1.5 per replica
    assert_close(out[2], 2 * (2 + 4 + 6) * 2 / 6, "float32", "reduction")
    assert_close(out[3], 2 * (2 * .3 + 4 * .5 + 6 * .2) / 6, "float32", "reduction")
    assert out[4] == 0.0
    assert_close(out[5], 13.7, "float32", "reduction")
    with s.scope():
        with pytest.raises(RuntimeError, match="cross replica context"):
            tf.nn.compute_average_loss([1.0, 2.0])
        with pytest.raises(RuntimeError):
            tf.nn.scale_regularization_loss(1.0)
    with pytest.raises(ValueError, match="at least rank 1"):
        tf.nn.compute_average_loss(tf.constant(1.0))
    with pytest.raises(TypeError):
        tf.nn.compute_average_loss([1.0], global_batch_size=2.0)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.nn.compute_average_loss([1.0], global_batch_size=-1)
    with pytest.raises(ValueError, match="scalar"):
        tf.nn.compute_average_loss([1.0], global_batch_size=[10])


def test_merge_call_and_all_reduce(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)
    calls = []

    def merge_fn(strategy, value):
        calls.append(tf.distribute.in_cross_replica_context())
        return strategy.reduce("SUM", value, axis=None)

    def fn():
        ctx = tf.distribute.get_replica_context()
        r = float(ctx.replica_id_in_sync_group)
        summed = ctx.all_reduce("SUM", [tf.constant(r + 1.0), tf.constant([r, 2 * r])])
        mean = ctx.all_reduce(tf.distribute.ReduceOp.MEAN, tf.constant(r))
        merged = ctx.merge_call(merge_fn, args=(tf.constant(r + 10.0),))
        return summed[0], summed[1], mean, merged

    a, b, m, merged = s.run(fn)
    assert calls == [True]
    for v in s.experimental_local_results(a):
        assert float(v) == 3.0
    for v in s.experimental_local_results(b):
        np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    assert [float(v) for v in s.experimental_local_results(m)] == [0.5, 0.5]
    assert float(merged) == 21.0


def test_a_failing_replica_raises_its_error_without_hanging(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)

    def fn():
        ctx = tf.distribute.get_replica_context()
        if int(ctx.replica_id_in_sync_group) == 1:
            raise KeyError("replica one failed")
        return ctx.all_reduce("SUM", tf.constant(1.0))

    with pytest.raises(KeyError, match="replica one failed"):
        s.run(fn)
    # the strategy still works afterwards (a fresh communicator)
    out = s.run(lambda: tf.distribute.get_replica_context().all_reduce("SUM", tf.constant(1.0)))
    assert [float(v) for v in s.experimental_local_results(out)] == [2.0, 2.0]


def test_variables_in_scope_are_mirrored_and_metrics_aggregate(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)
    with s.scope():
        v = tf.Variable(1.0)
        metric = keras.metrics.Mean()
    assert len(v.values) == 2
    assert all(float(c) == 1.0 for c in v.values)
    assert len(s.experimental_local_results(v)) == 2
    plain = tf.Variable(1.0)
    with pytest.raises(AttributeError):
        plain.values

    def fn(x):
        metric.update_state(x)
        return x

    vals = s.experimental_distribute_values_from_function(
        lambda ctx: tf.constant([[2.0, 3.0], [4.0, 5.0]][ctx.replica_id_in_sync_group]))
    s.run(fn, args=(vals,))
    assert float(metric.result()) == 3.5
    metric.reset_states()
    assert float(metric.result()) == 0.0


def test_losses_that_average_per_replica_are_refused_outside_compile(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)
    with s.scope():
        auto = keras.losses.SparseCategoricalCrossentropy()
        none = keras.losses.SparseCategoricalCrossentropy(reduction=keras.losses.Reduction.NONE)
    y, p = tf.constant([0, 1]), tf.constant([[0.9, 0.1], [0.2, 0.8]])
    with s.scope():
        with pytest.raises(ValueError, match="Reduction.SUM"):
            auto(y, p)
        assert none(y, p).shape == (2,)
    assert float(auto(y, p)) > 0  # outside any strategy: fine


def test_run_inside_tf_function_and_iter_next(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)

    def step(x):
        return tf.reduce_sum(x)

    @tf.function
    def distributed_step(x):
        return s.reduce(tf.distribute.ReduceOp.SUM, s.run(step, args=(x,)), axis=None)

    ds = tf.data.Dataset.from_tensor_slices(np.arange(10, dtype=np.float32)).batch(4)
    it = iter(s.experimental_distribute_dataset(ds))
    totals = [float(distributed_step(next(it))) for _ in range(3)]
    assert totals == [6.0, 22.0, 17.0]
    with pytest.raises(StopIteration):
        next(it)



def test_a_distributed_batch_is_traced_once_per_shape_and_never_replayed_stale(two_cpus):
    """tf.function keys a PerReplica argument by its components' specs (TensorFlow's
    PerReplicaSpec): the steps of an epoch share one trace (each step used to trace anew,
    and the traces piled up); a function that reads the components without strategy.run
    runs eagerly, so every call sees its own batch."""
    s = tf.distribute.MirroredStrategy(two_cpus)

    @tf.function
    def distributed_step(x):
        return s.reduce("SUM", s.run(tf.reduce_sum, args=(x,)), axis=None)

    @tf.function
    def local_sum(x):
        return tf.add_n([tf.reduce_sum(v) for v in s.experimental_local_results(x)])

    ds = tf.data.Dataset.from_tensor_slices(np.arange(24, dtype=np.float32)).batch(4)
    dist = s.experimental_distribute_dataset(ds)
    for _ in range(2):
        totals = [float(distributed_step(b)) for b in dist]
        local = [float(local_sum(b)) for b in dist]
        assert totals == local == [float(np.arange(4 * i, 4 * i + 4).sum()) for i in range(6)]
    assert distributed_step.experimental_get_tracing_count() == 1
    assert local_sum.experimental_get_tracing_count() == 1
    # another split (5 rows: 3 + 2) is another signature
    odd = s.experimental_distribute_dataset(
        tf.data.Dataset.from_tensor_slices(np.arange(5, dtype=np.float32)).batch(5))
    assert [float(distributed_step(b)) for b in odd] == [10.0]
    assert distributed_step.experimental_get_tracing_count() == 2


def test_seed004_epoch_function_iterates_the_distributed_dataset(two_cpus):
    """Seed 004's `distributed_train_epoch`: `for x in dataset` inside tf.function over a
    distributed dataset, strategy.run in the body. No graph-break warning (strategy.run runs
    its replicas on threads, documented), and the same numbers as the epoch run eagerly."""
    import warnings

    rs = np.random.RandomState(0)
    x = rs.rand(40, 4).astype(np.float32)
    y = (x.sum(1) > 2).astype(np.int64)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)  # a last partial batch
    results = []
    for traced in (False, True):
        s = tf.distribute.MirroredStrategy(two_cpus)
        dist = s.experimental_distribute_dataset(ds)
        with s.scope():
            model = keras.Sequential([keras.layers.Dense(2, kernel_initializer="ones")])
            model.build((None, 4))
            opt = keras.optimizers.SGD(0.1)
            loss_obj = keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                                  reduction="none")

        def train_step(inputs):
            a, b = inputs
            with tf.GradientTape() as tape:
                loss = tf.nn.compute_average_loss(loss_obj(b, model(a, training=True)),
                                                  global_batch_size=16)
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        def distributed_train_epoch(dataset):
            total_loss = 0.0
            num_batches = 0
            for x in dataset:
                per_replica_losses = s.run(train_step, args=(x,))
                total_loss += s.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses,
                                       axis=None)
                num_batches += 1
            return total_loss / tf.cast(num_batches, dtype=tf.float32)

        epoch = tf.function(distributed_train_epoch) if traced else distributed_train_epoch
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            losses = [float(epoch(dist)) for _ in range(2)]
        results.append((losses, model.get_weights()[0]))
    assert_close(np.array(results[1][0]), np.array(results[0][0]), "float32", "elementwise")
    assert_close(results[1][1], results[0][1], "float32", "elementwise")
