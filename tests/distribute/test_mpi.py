"""MultiWorkerMirroredStrategy over 2 MPI processes (``mpiexec -n 2`` from the MPICH wheel of
the test extras; skipped without it): a step on 2 workers x 32 examples equals 1 replica x 64,
both ranks end bit-identical, a NaN on one rank skips the step on both, TF_CONFIG is checked
against the MPI world, and a rank that dies makes the other fail with an error naming it
instead of hanging."""

import os
import shutil
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from mixprec.distribute import multi_worker
from tolerances import assert_close

HERE = os.path.dirname(os.path.abspath(__file__))
MPIEXEC = shutil.which("mpiexec", path=os.path.dirname(sys.executable))
pytestmark = [
    pytest.mark.skipif(MPIEXEC is None or not os.path.exists(multi_worker._mpi_library()),
                       reason="the MPICH wheel (pip install mpich) is not installed"),
    # CI's sanitizer pass preloads ASan into every process; MPICH's libraries (UCX,
    # libfabric) are not built for it and its launcher would run them under it too
    pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                       reason="MPI processes are not run under the sanitizer runtimes"),
]


def _mpiexec(args, timeout=240, env=None, extra=(), n=2):
    e = dict(os.environ, MIXPREC_NUM_THREADS="1")
    e.pop("TF_CONFIG", None)
    e.update(env or {})
    return subprocess.run([MPIEXEC, *extra, "-n", str(n), sys.executable, *args],
                          capture_output=True, text=True, timeout=timeout, env=e)


def _reference(x, y, init, kind, scaled):
    import mixprec as tf
    from mixprec import keras

    model = keras.Sequential([keras.layers.Dense(16, activation="relu", input_shape=(8,)),
                              keras.layers.Dense(4)])
    model.set_weights(init)
    opt = keras.optimizers.SGD(0.1) if kind == "sgd" else keras.optimizers.Adam(0.01)
    if scaled:
        opt = keras.mixed_precision.LossScaleOptimizer(opt)
    loss_obj = keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction=keras.losses.Reduction.NONE)
    losses = []
    for _ in range(3):
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(loss_obj(y, model(x, training=True)),
                                              global_batch_size=64)
            s = opt.get_scaled_loss(loss) if scaled else loss
        grads = tape.gradient(s, model.trainable_variables)
        if scaled:
            grads = opt.get_unscaled_gradients(grads)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        losses.append(float(loss))
    return [w.numpy() for w in model.weights], losses


def keras_fit_reference(x, y, init):
    from mixprec import keras

    model = keras.Sequential([keras.layers.Dense(16, activation="relu", input_shape=(8,)),
                              keras.layers.Dense(4, activation="softmax")])
    model.set_weights(init)
    model.compile(keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy", ["accuracy"])
    hist = model.fit(x, y, batch_size=32, epochs=2, shuffle=False, verbose=0)
    return ([w.numpy() for w in model.weights], np.array(hist.history["loss"]),
            model.predict(x, batch_size=32, verbose=0))


def test_two_processes_equal_one_replica(tmp_path, rng):
    x = rng.standard_normal((64, 8)).astype(np.float32)
    y = rng.integers(0, 4, 64)
    w = [rng.standard_normal((8, 16)).astype(np.float32) * 0.3, np.zeros(16, np.float32),
         rng.standard_normal((16, 4)).astype(np.float32) * 0.3, np.zeros(4, np.float32)]
    np.savez(tmp_path / "data.npz", x=x, y=y, w0=w[0], w1=w[1], w2=w[2], w3=w[3])
    r = _mpiexec([os.path.join(HERE, "mpi_worker.py"), str(tmp_path)])
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    for kind in ("sgd", "adam"):
        for scaled in (False, True):
            ref_w, ref_losses = _reference(x, y, w, kind, scaled)
            got = [np.load(tmp_path / ("%s_%d_rank%d.npz" % (kind, scaled, r)))
                   for r in (0, 1)]
            for i in range(4):
                key = "arr_%d" % i
                np.testing.assert_array_equal(got[0][key], got[1][key])  # bit-identical ranks
                assert_close(got[0][key], ref_w[i], "float32", "replicas")
            assert_close(got[0]["losses"], np.array(ref_losses), "float32", "replicas")
    # Model.fit under the strategy equals fit in one process
    ref = keras_fit_reference(x, y, w)
    for r in (0, 1):
        got = np.load(tmp_path / ("fit_rank%d.npz" % r))
        for i in range(4):
            assert_close(got["arr_%d" % i], ref[0][i], "float32", "replicas")
        assert_close(got["loss"], ref[1], "float32", "replicas")
        assert got["pred"].shape == (64, 4)
        assert_close(got["pred"], ref[2], "float32", "replicas")
    # metrics created in the scope report the global value on every worker
    import json

    for r in (0, 1):
        done = json.loads((tmp_path / ("done%d.json" % r)).read_text())
        assert done["mean"] == 2.25  # (1 + 2 + 2 + 4) / 4
        assert done["accuracy"] == 0.75  # 1 of 2 right on rank 0, 2 of 2 on rank 1
        # a NaN on rank 1 only: both workers skip the step and halve the loss scale
        assert done["nan_skipped"] and done["nan_halved"], done
        assert done["nan_iterations"] == 1  # a skipped step still counts, as in TensorFlow


def test_tf_config_must_match_the_mpi_world(tmp_path):
    script = tmp_path / "s.py"
    script.write_text(textwrap.dedent("""
        import mixprec as tf
        try:
            tf.distribute.MultiWorkerMirroredStrategy()
        except ValueError as e:
            print("VALUEERROR", e)
    """))
    cfg = '{"cluster": {"worker": ["a:1", "b:2", "c:3"]}, "task": {"type": "worker", "index": 0}}'
    r = _mpiexec([str(script)], env={"TF_CONFIG": cfg})
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.count("VALUEERROR") == 2 and "3 workers" in r.stdout


def test_a_killed_rank_is_named_by_the_survivor(tmp_path):
    # rank 1 ends abruptly (no MPI_Finalize, as a crash). A rank killed by a *signal* makes
    # MPICH's mpiexec kill the others itself, even with -disable-auto-cleanup, racing the
    # survivor's own error (~50 ms); an exit status leaves the survivor to report. It also
    # writes its error to a file: mpiexec may return and drop its stderr.
    script = tmp_path / "s.py"
    report = tmp_path / "rank0.txt"
    script.write_text(textwrap.dedent("""
        import os, sys, time
        import mixprec as tf
        s = tf.distribute.MultiWorkerMirroredStrategy()
        rank = s.cluster_resolver.task_id
        s.extended._cross_worker_all_reduce([tf.constant([1.0])], 0)
        if rank == 1:
            os._exit(1)
        t0 = time.time()
        try:
            s.extended._cross_worker_all_reduce([tf.constant([1.0])], 0)
            print("NOT REACHED")
        except tf.errors.UnavailableError as e:
            with open(sys.argv[1] + ".tmp", "w") as f:
                f.write("%s: %s after %.1f s" % (type(e).__name__, e, time.time() - t0))
            os.rename(sys.argv[1] + ".tmp", sys.argv[1])
            raise
    """))
    t0 = time.time()
    r = _mpiexec([str(script), str(report)], timeout=120,
                 env={"MIXPREC_COLLECTIVE_TIMEOUT": "60"}, extra=("-disable-auto-cleanup",))
    assert r.returncode != 0
    assert "NOT REACHED" not in r.stdout
    while not report.exists() and time.time() - t0 < 60:
        time.sleep(0.1)
    text = report.read_text()
    assert "UnavailableError" in text and "lost peer rank 1" in text, text
    assert float(text.rsplit("after ", 1)[1].split()[0]) < 10  # noticed long before the timeout


@pytest.mark.parametrize("n", [2, 3])
def test_engine_sums_large_and_small_buffers_identically_on_every_rank(tmp_path, n):
    """The MPI engine's paths: one large float32/float64 buffer (chunked reduce-scatter +
    all-gather straight into the output, uneven blocks), a small one, a packed bucket of
    several (16-bit included) and MEAN/MAX; every rank gets the same bits, equal to the sum
    in float64 within the table's tolerance."""
    script = tmp_path / "s.py"
    script.write_text(textwrap.dedent("""
        import sys
        import numpy as np
        import mixprec as tf
        from mixprec import _core
        from mixprec.distribute import multi_worker
        comm = multi_worker.mpi_world()
        rank = _core.comm_info(comm)[2]
        rng = np.random.default_rng(rank)
        big = rng.standard_normal(4 * 1024 * 1024 + 7).astype(np.float32)  # 16 MiB + 7
        ins = [big, rng.standard_normal(1001), rng.standard_normal(33).astype(np.float32),
               rng.standard_normal(5).astype(np.float16)]
        out = {"sum_big": _core.comm_all_reduce(comm, rank, [tf.constant(big)], 0)[0],
               "sum_f64": _core.comm_all_reduce(comm, rank, [tf.constant(ins[1])], 0)[0],
               "mean_big": _core.comm_all_reduce(comm, rank, [tf.constant(big)], 1)[0],
               "max_small": _core.comm_all_reduce(comm, rank, [tf.constant(ins[2])], 2)[0]}
        bucket = _core.comm_all_reduce(comm, rank, [tf.constant(a) for a in ins], 0)
        out.update(("bucket%d" % i, t) for i, t in enumerate(bucket))
        np.savez(sys.argv[1] + "/r%d.npz" % rank, **{k: v.numpy() for k, v in out.items()})
    """))
    r = _mpiexec([str(script), str(tmp_path)], n=n)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    got = [np.load(tmp_path / ("r%d.npz" % k)) for k in range(n)]
    for key in got[0].files:
        for k in range(1, n):
            np.testing.assert_array_equal(got[k][key], got[0][key], err_msg=key)
    ins = []
    for k in range(n):
        rng = np.random.default_rng(k)
        big = rng.standard_normal(4 * 1024 * 1024 + 7).astype(np.float32)
        ins.append([big, rng.standard_normal(1001), rng.standard_normal(33).astype(np.float32),
                    rng.standard_normal(5).astype(np.float16)])
    total = [sum(a[i].astype(np.float64) for a in ins) for i in range(4)]
    g = got[0]
    assert_close(g["sum_big"], total[0], "float32", "replicas")
    assert_close(g["mean_big"], total[0] / n, "float32", "replicas")
    assert_close(g["sum_f64"], total[1], "float64", "replicas")
    np.testing.assert_array_equal(g["max_small"], np.max([a[2] for a in ins], axis=0))
    for i, dt in enumerate(("float32", "float64", "float32", "float16")):
        assert g["bucket%d" % i].dtype == ins[0][i].dtype
        assert_close(g["bucket%d" % i], total[i], dt, "replicas")
