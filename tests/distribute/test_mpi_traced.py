"""``strategy.run`` inside ``tf.function`` under MultiWorkerMirroredStrategy over 2 MPI
processes (``mpiexec -n 2`` with the MPICH wheel; skipped without it): the step traces
once, its cross-process sums are AllReduce ops of the graph that call the MPI engine at
every replay, and the traced run equals the eager run bit for bit on every rank (and the
one-process step on the whole batch within the tolerance table). A peer that dies during
a replay makes the survivor raise the clear error naming it, never hang."""

import json
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
pytestmark = [  # as tests/distribute/test_mpi.py
    pytest.mark.skipif(MPIEXEC is None or not os.path.exists(multi_worker._mpi_library()),
                       reason="the MPICH wheel (pip install mpich) is not installed"),
    pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                       reason="MPI processes are not run under the sanitizer runtimes"),
]


def _mpiexec(args, timeout=240, env=None, extra=(), n=2):
    e = dict(os.environ, MIXPREC_NUM_THREADS="1")
    e.pop("TF_CONFIG", None)
    e.update(env or {})
    return subprocess.run([MPIEXEC, *extra, "-n", str(n), sys.executable, *args],
                          capture_output=True, text=True, timeout=timeout, env=e)


def _one_process(x, y, init, kind, scaled):
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
    for _ in range(2):
        for i in range(0, len(x), 32):
            xb, yb = x[i:i + 32], y[i:i + 32]
            with tf.GradientTape() as tape:
                loss = tf.nn.compute_average_loss(loss_obj(yb, model(xb)), global_batch_size=32)
                s = opt.get_scaled_loss(loss) if scaled else loss
            grads = tape.gradient(s, model.trainable_variables)
            if scaled:
                grads = opt.get_unscaled_gradients(grads)
            opt.apply_gradients(zip(grads, model.trainable_variables))
    return [w.numpy() for w in model.weights]


def test_traced_distributed_step_equals_the_eager_one_on_two_processes(tmp_path, rng):
    x = rng.standard_normal((96, 8)).astype(np.float32)
    y = rng.integers(0, 4, 96)
    w = [rng.standard_normal((8, 16)).astype(np.float32) * 0.3, np.zeros(16, np.float32),
         rng.standard_normal((16, 4)).astype(np.float32) * 0.3, np.zeros(4, np.float32)]
    np.savez(tmp_path / "data.npz", x=x, y=y, w0=w[0], w1=w[1], w2=w[2], w3=w[3])
    r = _mpiexec([os.path.join(HERE, "mpi_traced_worker.py"), str(tmp_path)], timeout=400)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    reports = [json.loads((tmp_path / ("report%d.json" % k)).read_text()) for k in (0, 1)]
    for kind in ("sgd", "adam"):
        for scaled in (0, 1):
            ref = _one_process(x, y, w, kind, scaled)
            eager = [np.load(tmp_path / ("%s_%d_0_rank%d.npz" % (kind, scaled, k))) for k in (0, 1)]
            traced = [np.load(tmp_path / ("%s_%d_1_rank%d.npz" % (kind, scaled, k))) for k in (0, 1)]
            for k in (0, 1):
                for key in eager[k].files:  # traced == eager, bit for bit, on every rank
                    np.testing.assert_array_equal(traced[k][key], eager[k][key], err_msg=key)
                    np.testing.assert_array_equal(traced[k][key], traced[0][key], err_msg=key)
            for i in range(4):
                assert_close(traced[0]["arr_%d" % i], ref[i], "float32", "replicas")
            for rep in reports:
                t = rep["%s_%d_1" % (kind, scaled)]
                e = rep["%s_%d_0" % (kind, scaled)]
                assert t["count"] == 1 and not t["broke"], t  # traced once: a graph
                # one fused AllReduce of the gradients, one of the loss (strategy.reduce)
                assert t["all_reduces"] == [2], t
                assert t["warnings"] == [], t["warnings"]
                assert t["accuracy"] == e["accuracy"]
    # synchronized batch normalization: the statistics' AllReduce ops (and their gradients)
    # recorded; traced == eager bit for bit
    for k in (0, 1):
        e = np.load(tmp_path / ("sgd_0_0_bn_rank%d.npz" % k))
        t = np.load(tmp_path / ("sgd_0_1_bn_rank%d.npz" % k))
        for key in e.files:
            np.testing.assert_array_equal(t[key], e[key], err_msg=key)
        rep = reports[k]["sgd_0_1_bn"]
        assert rep["count"] == 1 and not rep["broke"] and rep["warnings"] == [], rep


def test_a_peer_that_dies_during_a_replay_is_named_by_the_survivor(tmp_path):
    script = tmp_path / "s.py"
    report = tmp_path / "rank0.txt"
    script.write_text(textwrap.dedent("""
        import os, sys, time
        import mixprec as tf
        s = tf.distribute.MultiWorkerMirroredStrategy()
        rank = s.cluster_resolver.task_id
        with s.scope():
            v = tf.Variable([1.0, 2.0])

        @tf.function
        def step(x):
            def replica(x):
                ctx = tf.distribute.get_replica_context()
                total = ctx.all_reduce("SUM", x * v)
                v.assign_add(total)
                return total
            return s.run(replica, args=(x,))

        step(tf.constant([1.0, 1.0]))        # traces
        step(tf.constant([1.0, 1.0]))        # replays: the all-reduce over MPI
        assert step.experimental_get_tracing_count() == 1
        if rank == 1:
            os._exit(1)
        t0 = time.time()
        try:
            step(tf.constant([1.0, 1.0]))
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
    assert report.exists(), r.stdout[-2000:] + r.stderr[-3000:]
    text = report.read_text()
    assert "UnavailableError" in text and "lost peer rank 1" in text, text
    assert float(text.rsplit("after ", 1)[1].split()[0]) < 10  # noticed long before the timeout
