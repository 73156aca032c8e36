"""tf.distribute against TensorFlow 2.21 on two logical CPUs: each expected value below is
what TensorFlow 2.21 (tf-keras 2.21, MirroredStrategy over two logical CPUs) returned for
the same lines (recorded with /tmp/tfenv; this module never imports TensorFlow)."""

import numpy as np
import pytest

import mixprec as tf


def _rid():
    return tf.distribute.get_replica_context().replica_id_in_sync_group


def test_strategy_run_inside_merge_call_does_not_deadlock(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)

    def step():
        return tf.distribute.get_replica_context().merge_call(
            lambda strat: strat.run(lambda: 1))
    assert s.run(step) == 1  # TensorFlow: 1

    def nested_sum(strat):  # a nested run with its own collectives
        out = strat.run(lambda: tf.distribute.get_replica_context().all_reduce(
            "SUM", tf.cast(_rid(), tf.float32) + 1.0))
        return strat.reduce("MEAN", out, axis=None)
    got = s.run(lambda: tf.distribute.get_replica_context().merge_call(nested_sum))
    assert float(got) == 3.0
    # the outer strategy still runs afterwards, on its own threads
    assert [float(x) for x in s.experimental_local_results(
        s.run(lambda: tf.cast(_rid(), tf.float32)))] == [0.0, 1.0]


def test_experimental_local_results_of_nests_and_plain_values(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)
    assert s.experimental_local_results([1, 2]) == ([1, 2], [1, 2])  # TensorFlow
    c = tf.constant(1.0)
    assert s.experimental_local_results(c) == (c,)
    pr = s.run(lambda: tf.cast(_rid(), tf.float32))
    out = s.experimental_local_results((pr, {"a": pr}, 7))
    assert len(out) == 2
    assert [float(o[0]) for o in out] == [0.0, 1.0]
    assert [float(o[1]["a"]) for o in out] == [0.0, 1.0]
    assert [o[2] for o in out] == [7, 7]


def test_per_replica_str_uses_the_components_str(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)
    pr = s.run(lambda: tf.constant([1.0, 2.0]) + tf.cast(_rid(), tf.float32))
    assert str(pr) == "PerReplica:{\n  0: %s,\n  1: %s\n}" % tuple(str(v) for v in pr.values)
    assert repr(pr) == "PerReplica:{\n  0: %r,\n  1: %r\n}" % tuple(pr.values)


def test_reduce_and_gather_of_non_distributed_values(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)
    assert s.reduce("MEAN", 2.0, axis=None) == 2.0  # TensorFlow: the Python float itself
    t = tf.constant(3.0)
    assert s.reduce("MEAN", t, axis=None) is t
    with s.scope():
        v = tf.Variable(1.0)
    assert s.reduce("MEAN", v, axis=None) is v  # TensorFlow returns the variable
    with pytest.raises(ValueError, match="cannot be reduced with the given reduce op"):
        s.reduce("SUM", tf.constant(1.0), axis=None)
    with pytest.raises(ValueError, match="'MAX' is not a valid ReduceOp"):
        s.reduce("MAX", t, axis=None)
    g = s.gather(tf.constant([1.0]), axis=0)  # TensorFlow: shape (1,), not one per replica
    assert g.shape == (1,) and g.numpy().tolist() == [1.0]
    with pytest.raises(ValueError):  # a scalar per replica cannot be concatenated
        s.gather(s.run(lambda: tf.constant(1.0)), axis=0)


def test_replica_context_errors_use_tensorflows_words(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)
    msg = "Method requires being in cross-replica context"
    with pytest.raises(RuntimeError, match=msg):
        s.run(lambda: s.reduce("SUM", tf.constant(1.0), axis=None))
    with pytest.raises(RuntimeError, match=msg):
        s.run(lambda: s.run(lambda: 1))


def test_all_reduce_mean_of_integers_is_float64_and_all_gather_per_replica(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)
    out = s.run(lambda: tf.distribute.get_replica_context().all_reduce(
        "MEAN", tf.constant([1, 2])))
    parts = s.experimental_local_results(out)
    assert [p.dtype.name for p in parts] == ["float64", "float64"]  # TensorFlow: float64
    assert [p.numpy().tolist() for p in parts] == [[1.0, 2.0], [1.0, 2.0]]
    s_out = s.run(lambda: tf.distribute.get_replica_context().all_reduce(
        "SUM", _rid()))
    assert [p.dtype.name for p in s.experimental_local_results(s_out)] == ["int32", "int32"]
    g = s.run(lambda: tf.distribute.get_replica_context().all_gather(
        tf.reshape(tf.cast(_rid(), tf.float32), [1]), axis=0))
    assert isinstance(g, tf.distribute.PerReplica)  # TensorFlow: a PerReplica
    assert [p.numpy().tolist() for p in g.values] == [[0.0, 1.0], [0.0, 1.0]]


def test_values_from_function_is_per_replica_even_when_equal(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)
    rid, num = s.experimental_distribute_values_from_function(
        lambda ctx: (ctx.replica_id_in_sync_group, ctx.num_replicas_in_sync))
    assert isinstance(num, tf.distribute.PerReplica) and num.values == (2, 2)
    assert rid.values == (0, 1)


def test_default_replica_context_id_is_a_python_int():
    ctx = tf.distribute.get_replica_context()
    assert type(ctx).__name__ == "_DefaultReplicaContext"
    assert ctx.replica_id_in_sync_group == 0
    assert isinstance(ctx.replica_id_in_sync_group, int)
    assert ctx.num_replicas_in_sync == 1
    # inside the default strategy's run: an int32 tensor (TensorFlow)
    d = tf.distribute.get_strategy()
    rid = d.run(lambda: tf.distribute.get_replica_context().replica_id_in_sync_group)
    assert isinstance(rid, tf.Tensor) and rid.dtype == tf.int32 and int(rid) == 0


def test_default_strategy_hands_datasets_back():
    d = tf.distribute.get_strategy()
    ds = tf.data.Dataset.range(5).batch(2)
    assert d.experimental_distribute_dataset(ds) is ds  # TensorFlow: the dataset itself
    got = d.distribute_datasets_from_function(
        lambda c: tf.data.Dataset.range(3).batch(c.get_per_replica_batch_size(2)))
    assert [b.numpy().tolist() for b in got] == [[0, 1], [2]]


def test_distributed_dataset_cardinality_is_a_property(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)
    dd = s.experimental_distribute_dataset(tf.data.Dataset.range(6).batch(4))
    assert dd.cardinality == 2 and isinstance(dd.cardinality, np.int64)


def test_model_distribute_strategy(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)
    with s.scope():
        m = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    assert m.distribute_strategy is s
    m.compile(optimizer="sgd", loss="mse")  # compiled outside: still the creation strategy
    assert m.distribute_strategy is s
    plain = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    assert plain.distribute_strategy is tf.distribute.get_strategy()


def test_compute_average_loss_messages():
    x = tf.constant([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"Received per_example_loss=1.0 with rank 0"):
        tf.nn.compute_average_loss(tf.constant(1.0))
    with pytest.raises(ValueError, match=r"global_batch_size must be scalar"):
        tf.nn.compute_average_loss(x, global_batch_size=[10])
    with pytest.raises(TypeError, match=r"global_batch_size must be an integer"):
        tf.nn.compute_average_loss(x, global_batch_size=10.0)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"global_batch_size must be non-negative"):
        tf.nn.compute_average_loss(x, global_batch_size=-1)


def test_assign_in_a_replica_follows_the_variables_aggregation(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)
    with s.scope():
        vm = tf.Variable(1.0, aggregation=tf.VariableAggregation.MEAN)
        vs = tf.Variable(1.0, aggregation=tf.VariableAggregation.SUM)
        vf = tf.Variable(1.0, aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    s.run(lambda: vm.assign(tf.cast(_rid(), tf.float32)))
    assert float(vm.numpy()) == 0.5  # TensorFlow: 0.5 (the replicas' mean)
    s.run(lambda: vm.assign_add(tf.cast(_rid(), tf.float32) + 1.0))
    assert float(vm.numpy()) == 2.0  # 0.5 + mean(1, 2)
    with pytest.raises(ValueError, match="A non-DistributedValues value 2.0 cannot be reduced"):
        s.run(lambda: vs.assign(2.0))  # TensorFlow's error: the same value on every replica
    s.run(lambda: vs.assign_add(tf.cast(_rid(), tf.float32) + 1.0))
    assert float(vs.numpy()) == 4.0  # 1 + (1 + 2)
    s.run(lambda: vf.assign_sub(tf.cast(_rid(), tf.float32) + 1.0))
    assert float(vf.numpy()) == 0.0  # replica 0's delta only


def test_sync_on_read_sum_variable_rejects_cross_replica_increments(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)
    with s.scope():
        v = tf.Variable(0.0, synchronization=tf.VariableSynchronization.ON_READ,
                        aggregation=tf.VariableAggregation.SUM)
    msg = ("SyncOnReadVariable does not support `assign_add` in cross-replica context when "
           "aggregation is set to `tf.VariableAggregation.SUM`.")
    with s.scope():
        with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(".", r"\.")):
            v.assign_add(1.0)
    with pytest.raises(ValueError, match="does not support `assign_sub`"):
        v.assign_sub(1.0)  # outside the scope too (TensorFlow enters the variable's strategy)
    s.run(lambda: v.assign_add(1.0))  # in the replicas: allowed
    v.assign(0.0)  # assign is allowed in cross-replica context


def test_replicas_disagreeing_on_merge_call_fail_at_once(two_cpus):
    import time

    s = tf.distribute.MirroredStrategy(two_cpus)

    def partial():
        ctx = tf.distribute.get_replica_context()
        if int(ctx.replica_id_in_sync_group) == 0:
            return ctx.merge_call(lambda st: 1)
        return 2
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"Some replicas made a different number of "
                                           r"replica_context\(\)\.merge_call\(\) calls\."):
        s.run(partial)
    assert time.monotonic() - t0 < 30  # not the collective timeout
    assert [float(x) for x in s.experimental_local_results(
        s.run(lambda: tf.cast(_rid(), tf.float32)))] == [0.0, 1.0]  # still usable


def test_run_argument_and_scope_errors(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)
    with pytest.raises(ValueError, match="positional args must be a list or tuple"):
        s.run(lambda x: x, args=tf.constant([1.0, 2.0]))
    assert float(s.run(lambda x: x, args=[tf.constant(1.0)])) == 1.0
    with s.scope():
        with pytest.raises(RuntimeError, match="Mixing different tf.distribute.Strategy"):
            with tf.distribute.OneDeviceStrategy("/cpu:0").scope():
                pass


@pytest.mark.parametrize("batch,loss,mae,kernel0,eval_", [
    # TensorFlow 2.21 / tf-keras 2.21, MirroredStrategy on two logical CPUs, shuffle=False
    (6, [1.02702, 0.36929, 0.273325], [0.869931, 0.514769, 0.441726],
     [0.8212779760360718, 0.816208004951477], [0.240451, 0.422655]),
    (5, [0.740505, 0.359808, 0.253798], [0.76095, 0.506822, 0.426892],
     [0.8265659809112549, 0.821698009967804], [0.210387, 0.385169]),
])
def test_fit_under_mirrored_strategy_matches_tensorflow(two_cpus, batch, loss, mae, kernel0,
                                                        eval_):
    """Partial last batches (20 rows in batches of 6 or 5 over two replicas): the losses,
    metrics and weights of three epochs equal TensorFlow's."""
    from tolerances import assert_close

    s = tf.distribute.MirroredStrategy(two_cpus)
    x = np.arange(40, dtype=np.float32).reshape(20, 2) / 40.0
    y = (x[:, :1] * 3 - x[:, 1:] + 0.5).astype(np.float32)
    with s.scope():
        m = tf.keras.Sequential([
            tf.keras.layers.Dense(3, activation="relu", kernel_initializer="ones",
                                  bias_initializer="zeros", input_shape=(2,)),
            tf.keras.layers.Dense(1, kernel_initializer="ones")])
        m.compile(tf.keras.optimizers.SGD(0.05), "mse", metrics=["mae"])
    h = m.fit(x, y, batch_size=batch, epochs=3, verbose=0, shuffle=False)
    # TensorFlow's values are printed to 6 decimals: compare at that resolution too
    assert_close(np.round(h.history["loss"], 6), loss, "float32", "optimizer")
    assert_close(np.round(h.history["mae"], 6), mae, "float32", "optimizer")
    assert_close(m.get_weights()[0][:, 0], kernel0, "float32", "optimizer")
    assert_close(np.round(m.evaluate(x, y, batch_size=7, verbose=0), 6), eval_, "float32",
                 "optimizer")


@pytest.mark.parametrize("traced", [False, True])
def test_custom_loop_with_partial_batches_matches_tensorflow(two_cpus, traced):
    """Seed 004's loop on a tiny model (default global batch in compute_average_loss, Adam,
    metrics updated in the replicas, 20 rows in batches of 6 over two replicas: the last
    step gives 1 row to each replica), eagerly and in tf.function: TensorFlow's numbers."""
    from tolerances import assert_close

    s = tf.distribute.MirroredStrategy(two_cpus)
    x = np.arange(40, dtype=np.float32).reshape(20, 2) / 40.0
    y = (np.arange(20) % 3).astype(np.int64)
    ds = s.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices((x, y)).batch(6))
    with s.scope():
        m = tf.keras.Sequential([
            tf.keras.layers.Dense(4, activation="relu", kernel_initializer="ones",
                                  bias_initializer="zeros", input_shape=(2,)),
            tf.keras.layers.Dense(3, kernel_initializer=tf.keras.initializers.Constant(0.1))])
        opt = tf.keras.optimizers.Adam(0.01)
        lo = tf.keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction=tf.keras.losses.Reduction.NONE)
        acc = tf.keras.metrics.SparseCategoricalAccuracy()
        tl = tf.keras.metrics.Mean()

    def train_step(inp):
        xb, yb = inp
        with tf.GradientTape() as t:
            p = m(xb, training=True)
            loss = tf.nn.compute_average_loss(lo(yb, p))
        g = t.gradient(loss, m.trainable_variables)
        opt.apply_gradients(zip(g, m.trainable_variables))
        acc.update_state(yb, p)
        tl.update_state(lo(yb, p))
        return loss

    def dstep(inp):
        return s.reduce("SUM", s.run(train_step, args=(inp,)), axis=None)
    if traced:
        dstep = tf.function(dstep)
    losses = [float(dstep(b)) for _ in range(2) for b in ds]
    # TensorFlow 2.21 / tf-keras 2.21 (printed to 6 decimals)
    assert_close(np.round(losses, 6), [1.098612, 1.09637, 1.097562, 1.186107, 1.093849,
                                       1.095318, 1.097135, 1.08409], "float32", "optimizer")
    assert_close(round(float(acc.result()), 6), 0.325, "float32", "optimizer")
    assert_close(round(float(tl.result()), 6), 1.100337, "float32", "optimizer")
    assert int(opt.iterations.numpy()) == 8
    assert_close(m.get_weights()[0][:, 0], [0.9829609990119934, 0.9825090169906616],
                 "float32", "optimizer")
    assert_close(m.get_weights()[3], [0.04473499953746796, 0.021903999149799347,
                                      -0.04171400144696236], "float32", "optimizer")


def test_metric_of_a_strategy_updates_only_in_its_replicas(two_cpus):
    s = tf.distribute.MirroredStrategy(two_cpus)
    with s.scope():
        mt = tf.keras.metrics.Mean()
    s.run(lambda: mt.update_state(tf.cast(_rid(), tf.float32) + 1.0))
    assert float(mt.result()) == 1.5  # TensorFlow: 1.5
    msg = "SyncOnReadVariable does not support `assign_add` in cross-replica context"
    with s.scope():
        with pytest.raises(ValueError, match=msg):
            mt.update_state(5.0)
    with pytest.raises(ValueError, match=msg):  # outside the scope as well (TensorFlow)
        mt.update_state(7.0)
    assert float(mt.result()) == 1.5
    mt.reset_state()
    assert float(mt.result()) == 0.0
    plain = tf.keras.metrics.Mean()  # created outside any strategy: anywhere
    s.run(lambda: plain.update_state(1.0))
    plain.update_state(4.0)
    assert float(plain.result()) == 2.0
