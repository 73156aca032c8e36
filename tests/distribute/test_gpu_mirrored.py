"""MirroredStrategy over several GPUs: the engine choice, NCCL's library search and error,
the bucket plan, and — on two emulated GPUs (the CPU kernels registered as GPU:0 and GPU:1,
host memory, so the thread engine sums) — one copy of every variable per GPU, updated by
every replica identically, equal to one replica on the whole batch. The NCCL engine itself
runs only where two real GPUs are (marked `gpu`; skipped elsewhere), and against the fake
libnccl in test_nccl_fake.py, which reruns the training cases here on it."""

import gc
import os

import numpy as np
import pytest

import mixprec as tf
from mixprec import _core, keras
from mixprec.distribute import _gpu_mirror
from tolerances import assert_close


@pytest.fixture
def two_gpus():
    """GPU:0 and GPU:1: the real ones when the CUDA backend has two, else two emulated."""
    real = _core.backend_name(1)
    if real is not None and real != "emulated-gpu":
        if _core.device_count(1) < 2:
            pytest.skip("needs two GPUs")
        yield real
        return
    before = _core.device_count(1) if real else 0
    _core._emulate_gpu(2)
    try:
        yield "emulated-gpu"
    finally:
        gc.collect()
        _core._emulate_gpu(before)


def test_the_engine_follows_the_devices():
    gpus = ["/job:localhost/replica:0/task:0/device:GPU:%d" % i for i in range(2)]
    cpus = ["/device:CPU:0", "/device:CPU:1"]
    assert _gpu_mirror.select_engine(gpus, "cuda") == "nccl"
    assert _gpu_mirror.select_engine(gpus, "emulated-gpu") == "threads"
    assert _gpu_mirror.select_engine(cpus, "cuda") == "threads"
    assert _gpu_mirror.select_engine(gpus[:1], "cuda") == "none"
    with pytest.raises(ValueError, match="cannot mix CPU and GPU"):
        _gpu_mirror.select_engine([cpus[0], gpus[1]], "cuda")


def test_buckets_group_consecutive_buffers_up_to_the_limit():
    # 40, 40, 40, 400, 20 bytes with 100-byte buckets: [0, 1], [2], [3], [4]
    assert _core.coll_plan_buckets([10, 10, 10, 100, 5], 4, 100) == [0, 2, 3, 4, 5]
    assert _core.coll_plan_buckets([1] * 5, 4, 1 << 20) == [0, 5]
    assert _core.coll_plan_buckets([], 4, 64) == [0]
    assert _core.COLL_BUCKET_BYTES == 32 << 20
    with pytest.raises(ValueError):
        _core.coll_plan_buckets([1], 0, 64)


def test_nccl_is_found_in_the_wheel_or_named(tmp_path, monkeypatch):
    monkeypatch.delenv("MIXPREC_NCCL_LIBRARY", raising=False)
    lib = tmp_path / "nvidia" / "nccl" / "lib"
    lib.mkdir(parents=True)
    (lib / "libnccl.so.2").write_bytes(b"")
    monkeypatch.setattr("sys.path", [str(tmp_path)])
    assert _gpu_mirror.nccl_library() == str(lib / "libnccl.so.2")
    monkeypatch.setattr("sys.path", [])
    assert _gpu_mirror.nccl_library() == "libnccl.so.2"
    monkeypatch.setenv("MIXPREC_NCCL_LIBRARY", "/opt/nccl/libnccl.so.2")
    assert _gpu_mirror.nccl_library() == "/opt/nccl/libnccl.so.2"


def test_a_missing_nccl_names_what_to_install():
    with pytest.raises(NotImplementedError, match="nvidia-nccl-cu13"):
        _core.nccl_load("/nonexistent/libnccl.so.2")


def test_an_nccl_communicator_needs_gpus():
    if _core.backend_name(1) == "cuda":
        pytest.skip("a CUDA backend is registered")
    with pytest.raises(Exception, match="GPU|NCCL"):
        _core.comm_nccl("/nonexistent/libnccl.so.2", [0, 1], None, 5.0)


def test_variables_have_one_copy_per_gpu(two_gpus):
    strategy = tf.distribute.MirroredStrategy(["/gpu:0", "/gpu:1"])
    assert strategy.num_replicas_in_sync == 2
    with strategy.scope():
        v = tf.Variable([1.0, 2.0])
    comps = v.values
    assert [c.device.endswith("GPU:%d" % i) for i, c in enumerate(comps)] == [True, True]
    assert comps[0] is v and comps[1] is not v
    seen = strategy.run(lambda: tf.identity(v) * 1.0)  # each replica reads its GPU's copy
    assert [t.device[-5:] for t in strategy.experimental_local_results(seen)] == ["GPU:0", "GPU:1"]
    v.assign([5.0, 6.0])  # outside a replica: every copy follows
    np.testing.assert_array_equal(comps[1].numpy(), [5.0, 6.0])
    v.assign_add([1.0, 1.0])
    np.testing.assert_array_equal(comps[1].numpy(), [6.0, 7.0])
    total = strategy.reduce(tf.distribute.ReduceOp.SUM,
                            strategy.run(lambda: tf.reduce_sum(tf.identity(v))), axis=None)
    assert float(total) == 26.0


def _train(strategy, make_opt, x, y, steps=3, scale=False):
    with strategy.scope():
        tf.random.set_seed(1)
        model = keras.Sequential([keras.layers.Dense(8, activation="relu", input_shape=(4,),
                                                     kernel_initializer=keras.initializers.GlorotUniform(seed=1)),
                                  keras.layers.Dense(2, kernel_initializer=keras.initializers.GlorotUniform(seed=2))])
        opt = make_opt()
        if scale:
            opt = keras.mixed_precision.LossScaleOptimizer(opt)
        loss_fn = keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction=keras.losses.Reduction.NONE)
    n = strategy.num_replicas_in_sync
    if n > 1 and os.environ.get("MIXPREC_EXPECT_NCCL") == "1":  # test_nccl_fake.py's rerun
        assert strategy.extended._engine == "nccl", strategy.extended._engine

    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(loss_fn(yb, model(xb, training=True)), global_batch_size=len(x))
            if scale:
                loss = opt.get_scaled_loss(loss)
        grads = tape.gradient(loss, model.trainable_variables)
        if scale:
            grads = opt.get_unscaled_gradients(grads)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    ds = strategy.experimental_distribute_dataset(
        tf.data.Dataset.from_tensor_slices((x, y)).batch(len(x)))
    for _ in range(steps):
        for xb, yb in ds:
            strategy.run(step, args=(xb, yb))
    return model, opt, n


@pytest.mark.parametrize("kind", ["sgd", "adam", "adam_scaled"])
def test_two_gpus_of_32_equal_one_replica_of_64(two_gpus, kind):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    make = (lambda: keras.optimizers.SGD(0.1)) if kind == "sgd" else (lambda: keras.optimizers.Adam(0.01))
    scale = kind.endswith("scaled")
    two, opt2, n = _train(tf.distribute.MirroredStrategy(["/gpu:0", "/gpu:1"]), make, x, y, scale=scale)
    assert n == 2
    one, _, _ = _train(tf.distribute.OneDeviceStrategy("/gpu:0"), make, x, y, scale=scale)
    for a, b in zip(two.trainable_variables, one.trainable_variables):
        comps = a.values
        assert comps[1].device.endswith("GPU:1")
        np.testing.assert_array_equal(comps[0].numpy(), comps[1].numpy())  # kept identical
        assert_close(a.numpy(), b.numpy(), "float32", "replicas")
    assert int(opt2.iterations.numpy()) == 3


def test_a_nan_on_one_gpu_skips_the_step_on_both(two_gpus):
    strategy = tf.distribute.MirroredStrategy(["/gpu:0", "/gpu:1"])
    with strategy.scope():
        w = tf.Variable([1.0, 1.0])
        opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(1.0))
    before = float(opt.loss_scale)

    def step():
        rid = tf.distribute.get_replica_context().replica_id_in_sync_group
        g = tf.constant([float("nan") if rid == 1 else 1.0, 1.0])
        opt.apply_gradients([(g, w)])

    strategy.run(step)
    for c in w.values:
        np.testing.assert_array_equal(c.numpy(), [1.0, 1.0])
    assert float(opt.loss_scale) == before / 2


def test_metrics_in_scope_sum_over_gpus(two_gpus):
    strategy = tf.distribute.MirroredStrategy(["/gpu:0", "/gpu:1"])
    with strategy.scope():
        m = keras.metrics.Mean()

    def step():
        rid = tf.distribute.get_replica_context().replica_id_in_sync_group
        m.update_state(tf.constant([1.0, 3.0]) + tf.cast(rid, tf.float32) * 10.0)

    strategy.run(step)
    assert float(m.result()) == pytest.approx((1 + 3 + 11 + 13) / 4)
    m.reset_state()
    assert float(m.result()) == 0.0
    strategy.run(step)
    assert float(m.result()) == pytest.approx(7.0)


@pytest.mark.gpu
@pytest.mark.skipif(_core.backend_name(1) != "cuda" or _core.device_count(1) < 2,
                    reason="needs two real GPUs")
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_nccl_all_reduce_and_broadcast_on_two_gpus(dtype):
    import threading

    comm = _core.comm_nccl(_gpu_mirror.nccl_library(), [0, 1], None, 60.0)
    assert _core.comm_info(comm)[0] == "nccl"
    outs = [None, None]

    def replica(r):
        with tf.device("/GPU:%d" % r):
            xs = [tf.cast(tf.fill([n], float(r + 1)), dtype) for n in (3, 1000, 7)]
        s = _core.comm_all_reduce(comm, r, xs, _core.COLL_SUM)
        m = _core.comm_all_reduce(comm, r, xs, _core.COLL_MEAN)
        b = _core.comm_broadcast(comm, r, xs, 1)
        outs[r] = ([t.numpy().astype(np.float32) for t in s], [t.numpy().astype(np.float32) for t in m],
                   [t.numpy().astype(np.float32) for t in b])

    ts = [threading.Thread(target=replica, args=(r,)) for r in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for r in range(2):
        s, m, b = outs[r]
        assert all((a == 3.0).all() for a in s) and all((a == 1.5).all() for a in m)
        assert all((a == 2.0).all() for a in b)


def test_workers_pick_nccl_only_with_real_gpus_and_their_local_gpu():
    from mixprec.distribute import multi_worker

    assert multi_worker.worker_engine("cuda", 2) == "nccl"
    assert multi_worker.worker_engine("cuda", 0) == "mpi"
    assert multi_worker.worker_engine("emulated-gpu", 1) == "mpi"
    assert multi_worker.worker_engine(None, 0) == "mpi"
    assert multi_worker.local_rank(5, {"MPI_LOCALRANKID": "1"}) == 1      # MPICH's Hydra
    assert multi_worker.local_rank(5, {"OMPI_COMM_WORLD_LOCAL_RANK": "3"}) == 3
    assert multi_worker.local_rank(5, {}) == 5


def test_keras_fit_on_two_gpus_equals_one_device(two_gpus):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 8)).astype(np.float32)
    y = (x.sum(axis=1) > 0).astype(np.int64)
    init = None
    results = []
    for strategy in (tf.distribute.MirroredStrategy(["/gpu:0", "/gpu:1"]),
                     tf.distribute.OneDeviceStrategy("/gpu:0")):
        with strategy.scope():
            m = keras.Sequential([keras.layers.Dense(16, activation="relu", input_shape=(8,)),
                                  keras.layers.Dense(2)])
            if init is None:
                init = m.get_weights()
            m.set_weights(init)
            m.compile(optimizer=keras.optimizers.SGD(0.1), metrics=["accuracy"],
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        hist = m.fit(x, y, batch_size=32, epochs=2, verbose=0, shuffle=False)
        results.append((m, hist.history, m.predict(x, verbose=0)))
    (two, h2, p2), (one, h1, p1) = results
    assert [c.device[-5:] for c in two.trainable_variables[0].values] == ["GPU:0", "GPU:1"]
    for a, b in zip(two.get_weights(), one.get_weights()):
        assert_close(a, b, "float32", "replicas")
    assert_close(np.array(h2["loss"]), np.array(h1["loss"]), "float32", "replicas")
    assert h2["accuracy"] == h1["accuracy"]
    assert_close(p2, p1, "float32", "replicas")


def test_extended_update_reaches_every_gpu_copy(two_gpus):
    strategy = tf.distribute.MirroredStrategy(["/gpu:0", "/gpu:1"])
    with strategy.scope():
        v = tf.Variable([1.0, 2.0])
    strategy.extended.update(v, lambda var, d: var.assign_add(d), args=(tf.constant([1.0, 1.0]),))
    for c in v.values:
        np.testing.assert_array_equal(c.numpy(), [2.0, 3.0])


def test_a_variable_made_in_another_replica_lives_on_the_first_gpu(two_gpus):
    strategy = tf.distribute.MirroredStrategy(["/gpu:0", "/gpu:1"])
    made = []

    def fn():
        if tf.distribute.get_replica_context().replica_id_in_sync_group == 1:
            made.append(tf.Variable([1.0, 2.0]))  # made on GPU:1, in replica 1's thread
            made.append(tf.identity(made[0]) * 1.0)  # replica 1 reads its own copy

    strategy.run(fn)
    v, seen = made
    assert v.device.endswith("GPU:0") and seen.device.endswith("GPU:1")
    assert [c.device[-5:] for c in v.values] == ["GPU:0", "GPU:1"]
    np.testing.assert_array_equal(v.values[1].numpy(), [1.0, 2.0])


def test_a_traced_function_around_run_over_gpus_runs_eagerly(two_gpus):
    # one variable copy per GPU: strategy.run cannot be recorded into one graph there; the
    # function still gives the eager results (its Python runs at every call, silently)
    strategy = tf.distribute.MirroredStrategy(["/gpu:0", "/gpu:1"])
    with strategy.scope():
        v = tf.Variable([1.0, 2.0])
    calls = []

    @tf.function
    def f(k):
        calls.append(1)
        total = strategy.reduce("SUM", strategy.run(lambda: tf.reduce_sum(tf.identity(v))),
                                axis=None)
        v.assign_add([k, k])
        return total

    assert [float(f(tf.constant(1.0))) for _ in range(3)] == [6.0, 10.0, 14.0]
    assert len(calls) == 3
