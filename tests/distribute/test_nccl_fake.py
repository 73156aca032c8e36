"""The NCCL engine (csrc/collective_nccl.c) run end to end without a GPU, against the fake
libnccl of tests/distribute/fake_nccl.c (compiled here with the system cc; NCCL's ABI over
host memory — a test double of NCCL for the engine's logic, never a substitute for a run on
real GPUs, see docs/cuda.md) on the emulated GPU: the unique id broadcast over MPI, all-reduce
sum/mean of float32/float16/bfloat16 buckets, MultiWorkerMirroredStrategy over it equal to one
replica, and the watchdog — a killed, stalled or never-arriving peer makes the survivor raise
UnavailableError within the bound instead of hanging. Each case runs in fresh processes (a
process loads one libnccl for good). Skipped without a C compiler or the MPICH wheel."""

import importlib.util
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


def needs_mpi(test):
    """Skipped without the MPICH wheel, or under the sanitizer pass (as tests/distribute/
    test_mpi.py)."""
    test = pytest.mark.skipif(MPIEXEC is None or not os.path.exists(multi_worker._mpi_library()),
                              reason="the MPICH wheel (pip install mpich) is not installed")(test)
    return pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                              reason="MPI processes are not run under the sanitizer runtimes")(test)


def _env(lib, tmp_path, **extra):
    e = dict(os.environ, MIXPREC_NUM_THREADS="1", MIXPREC_EMULATE_GPU="1",
             MIXPREC_NCCL_ON_EMULATED_GPU="1", MIXPREC_NCCL_LIBRARY=lib,
             MIXPREC_FAKE_NCCL_DIR=str(tmp_path))
    e.pop("TF_CONFIG", None)
    e.update(extra)
    return e


def _mpiexec(args, env, n=2, timeout=240, extra=()):
    return subprocess.run([MPIEXEC, *extra, "-n", str(n), sys.executable, *args],
                          capture_output=True, text=True, timeout=timeout, env=env)


def _script(tmp_path, body):
    p = tmp_path / "s.py"
    p.write_text(textwrap.dedent(body))
    return str(p)


# --------------------------------------------------------------- one process, two GPUs

def test_one_process_drives_two_gpus_and_a_missing_replica_times_out(fake_nccl, tmp_path):
    """ncclCommInitRankConfig for both GPUs in one group, one replica thread per GPU; then
    only replica 0 calls: it fails within the timeout, the communicator is aborted, and the
    other replica's next call fails cleanly too."""
    script = _script(tmp_path, """
        import sys, threading, time
        import numpy as np
        import mixprec as tf
        from mixprec import _core
        _core._emulate_gpu(2)
        comm = _core.comm_nccl(sys.argv[1], [0, 1], None, 1.5, 4096)
        assert _core.comm_info(comm)[:3] == ("nccl", 2, -1)
        res = {}
        def replica(r):
            with tf.device("/GPU:%d" % r):
                xs = [tf.constant(np.arange(3000, dtype=np.float32) * (r + 1)),
                      tf.constant(np.full(7, r, np.float32))]
            res[r] = [t.numpy() for t in _core.comm_all_reduce(comm, r, xs, 0)]
        ts = [threading.Thread(target=replica, args=(r,)) for r in range(2)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        np.testing.assert_array_equal(res[0][0], np.arange(3000) * 3.0)
        np.testing.assert_array_equal(res[1][1], np.ones(7))
        t0 = time.time()
        try:
            with tf.device("/GPU:0"):
                _core.comm_all_reduce(comm, 0, [tf.constant([1.0])], 0)
        except tf.errors.UnavailableError as e:
            print("FIRST", time.time() - t0, e)
        try:
            with tf.device("/GPU:1"):
                _core.comm_all_reduce(comm, 1, [tf.constant([1.0])], 0)
        except tf.errors.UnavailableError as e:
            print("SECOND", e)
    """)
    r = subprocess.run([sys.executable, script, fake_nccl], capture_output=True, text=True,
                       timeout=120, env=_env(fake_nccl, tmp_path, MIXPREC_EMULATE_GPU="0"))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    first = r.stdout.split("FIRST ", 1)[1].splitlines()[0]
    assert 1.4 < float(first.split()[0]) < 10, first
    assert "no answer from the other ranks within 1.5 s" in first and "ncclCommAbort" in first
    assert "aborted earlier and cannot be used any more" in r.stdout.split("SECOND ", 1)[1]


def test_a_gpu_backend_without_stream_idle_fails_cleanly(fake_nccl, tmp_path):
    """The watchdog needs the backend's stream_idle slot; without it each replica's call
    raises UnavailableError (the communicator aborted), never waits unbounded or crashes."""
    script = _script(tmp_path, """
        import sys, threading
        import mixprec as tf
        from mixprec import _core
        _core._emulate_gpu(2, "stream_idle")
        comm = _core.comm_nccl(sys.argv[1], [0, 1], None, 30.0)
        errs = {}
        def replica(r):
            try:
                with tf.device("/GPU:%d" % r):
                    _core.comm_all_reduce(comm, r, [tf.constant([1.0, 2.0])], 0)
            except Exception as e:
                errs[r] = "%s: %s" % (type(e).__name__, e)
        ts = [threading.Thread(target=replica, args=(r,)) for r in range(2)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        for r in range(2):
            print("ERR%d %s" % (r, errs.get(r)))
    """)
    r = subprocess.run([sys.executable, script, fake_nccl], capture_output=True, text=True,
                       timeout=120, env=_env(fake_nccl, tmp_path, MIXPREC_EMULATE_GPU="0"))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    errs = [line for line in r.stdout.splitlines() if line.startswith("ERR")]
    assert len(errs) == 2 and all("UnavailableError" in e for e in errs), r.stdout
    assert any("stream_idle" in e for e in errs), r.stdout


def test_mirrored_strategy_over_two_gpus_on_the_nccl_engine(fake_nccl, tmp_path):
    """tests/distribute/test_gpu_mirrored.py's training, NaN and metric cases rerun with the
    two emulated GPUs summed by the NCCL engine (one process: both communicators made in
    one NCCL group, one replica thread each) instead of the thread engine."""
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        os.path.join(HERE, "test_gpu_mirrored.py"), "-k",
                        "equal_one_replica or nan_on_one_gpu or metrics_in_scope or one_copy_per_gpu"],
                       capture_output=True, text=True, timeout=300,
                       env=_env(fake_nccl, tmp_path, MIXPREC_EMULATE_GPU="0", MIXPREC_EXPECT_NCCL="1"))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "6 passed" in r.stdout, r.stdout[-1000:]


def test_a_replica_that_raises_releases_the_other_at_once(fake_nccl, tmp_path):
    """MirroredStrategy on the NCCL engine: replica 1 raises before the all-reduce replica 0
    waits in; the strategy aborts the communicator (ncclCommAbort), so replica 0 is released
    long before the 60 s timeout, the error is replica 1's, and the next run (a new
    communicator) trains."""
    script = _script(tmp_path, """
        import time
        import mixprec as tf
        from mixprec import _core, keras
        _core._emulate_gpu(2)
        s = tf.distribute.MirroredStrategy(["/gpu:0", "/gpu:1"])
        assert s.extended._engine == "nccl"
        with s.scope():
            w = tf.Variable([1.0, 1.0])
            opt = keras.optimizers.SGD(1.0)
        def step():
            if tf.distribute.get_replica_context().replica_id_in_sync_group == 1:
                raise ValueError("replica 1 fails")
            opt.apply_gradients([(tf.constant([1.0, 1.0]), w)])
        t0 = time.time()
        try:
            s.run(step)
        except ValueError as e:
            print("RAISED %.2f %s" % (time.time() - t0, e))
        s.run(lambda: opt.apply_gradients([(tf.constant([1.0, 1.0]), w)]))
        print("AFTER", [c.numpy().tolist() for c in w.values])
    """)
    r = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=120,
                       env=_env(fake_nccl, tmp_path, MIXPREC_EMULATE_GPU="0",
                                MIXPREC_COLLECTIVE_TIMEOUT="60"))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    raised = r.stdout.split("RAISED ", 1)[1].splitlines()[0]
    assert float(raised.split()[0]) < 10 and "replica 1 fails" in raised, raised
    assert "AFTER [[-1.0, -1.0], [-1.0, -1.0]]" in r.stdout, r.stdout  # summed over 2 replicas


def test_an_nccl_older_than_2_14_is_refused(fake_nccl, tmp_path):
    script = _script(tmp_path, """
        import sys
        from mixprec import _core
        try:
            _core.nccl_load(sys.argv[1])
        except NotImplementedError as e:
            print("REFUSED", e)
    """)
    r = subprocess.run([sys.executable, script, fake_nccl], capture_output=True, text=True,
                       timeout=60, env=_env(fake_nccl, tmp_path, FAKE_NCCL_VERSION="21303"))
    assert "REFUSED" in r.stdout and "NCCL 2.13.3" in r.stdout and "2.14" in r.stdout, r.stdout + r.stderr


# --------------------------------------------------------------- processes under mpiexec

@needs_mpi
@pytest.mark.parametrize("n", [2, 3])
def test_unique_id_broadcast_and_bucketed_all_reduce(fake_nccl, tmp_path, n):
    """Rank 0's unique id reaches the others over MPI (they join its communicator); sums and
    means of float32 (one buffer larger than the fake's 1 MiB rounds), float16 and bfloat16
    buffers in 4 KiB buckets, and a broadcast from the last rank: every rank gets the same
    bits, equal to the float64 sum within the table's tolerance."""
    script = _script(tmp_path, """
        import os, sys
        import numpy as np
        import mixprec as tf
        from mixprec import _core
        from mixprec.distribute import multi_worker
        comm = multi_worker.mpi_world()
        rank, size = _core.comm_info(comm)[2], _core.comm_info(comm)[1]
        nccl = _core.comm_nccl(os.environ["MIXPREC_NCCL_LIBRARY"], [0], comm, 60.0, 4096)
        assert _core.comm_info(nccl)[:3] == ("nccl", size, rank)
        rng = np.random.default_rng(rank)
        f32 = [rng.standard_normal(300_001).astype(np.float32), rng.standard_normal(1000).astype(np.float32),
               rng.standard_normal(5).astype(np.float32)]
        f16 = [rng.standard_normal(2000).astype(np.float16), rng.standard_normal(3).astype(np.float16)]
        b16 = [rng.standard_normal(1500).astype(np.float32)]
        with tf.device("/GPU:0"):
            ins = [tf.constant(a) for a in f32 + f16] + [tf.cast(tf.constant(b16[0]), tf.bfloat16)]
        assert all("GPU:0" in t.device for t in ins)
        out = {}
        for op, name in ((0, "sum"), (1, "mean")):
            res = _core.comm_all_reduce(nccl, rank, ins, op)
            for i, t in enumerate(res):
                assert t.dtype == ins[i].dtype and "GPU:0" in t.device
                out["%s%d" % (name, i)] = tf.cast(t, tf.float32).numpy() if t.dtype == tf.bfloat16 else t.numpy()
        got = _core.comm_broadcast(nccl, rank, [ins[1], ins[3]], size - 1)
        out["bcast0"], out["bcast1"] = got[0].numpy(), got[1].numpy()
        np.savez(sys.argv[1] + "/r%d.npz" % rank, **out)
        print("FILES", sorted(os.listdir(sys.argv[1])))
    """)
    r = _mpiexec([script, str(tmp_path)], _env(fake_nccl, tmp_path), n=n)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    assert not any(f.startswith("fake-nccl-") for f in os.listdir(tmp_path))  # one id, joined, removed
    got = [np.load(tmp_path / ("r%d.npz" % k)) for k in range(n)]
    for key in got[0].files:
        for k in range(1, n):
            np.testing.assert_array_equal(got[k][key], got[0][key], err_msg=key)
    per_rank = []
    for k in range(n):
        rng = np.random.default_rng(k)
        a = [rng.standard_normal(300_001).astype(np.float32), rng.standard_normal(1000).astype(np.float32),
             rng.standard_normal(5).astype(np.float32), rng.standard_normal(2000).astype(np.float16),
             rng.standard_normal(3).astype(np.float16), rng.standard_normal(1500).astype(np.float32)]
        per_rank.append(a)
    dts = ["float32"] * 3 + ["float16"] * 2 + ["bfloat16"]
    for i, dt in enumerate(dts):
        # the inputs as the ranks held them (bfloat16: rounded from float32 first)
        held = [np.asarray(p[i], np.float64) for p in per_rank]
        if dt == "bfloat16":
            import mixprec as tf
            held = [tf.cast(tf.cast(tf.constant(p[i]), tf.bfloat16), tf.float64).numpy() for p in per_rank]
        total = sum(held)
        assert_close(got[0]["sum%d" % i], total, dt, "replicas")
        assert_close(got[0]["mean%d" % i], total / n, dt, "replicas")
    np.testing.assert_array_equal(got[0]["bcast0"], per_rank[n - 1][1])
    np.testing.assert_array_equal(got[0]["bcast1"], per_rank[n - 1][3])


def _test_mpi_module():
    spec = importlib.util.spec_from_file_location("_mixprec_test_mpi", os.path.join(HERE, "test_mpi.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@needs_mpi
def test_multi_worker_training_over_nccl_equals_one_replica(fake_nccl, tmp_path, rng):
    """tests/distribute/mpi_worker.py (custom steps with SGD/Adam, loss scaling, Model.fit,
    metrics, a NaN on one rank) with its gradients summed by the NCCL engine: equal to one
    replica on the whole batch, both ranks bit-identical."""
    ref = _test_mpi_module()
    x = rng.standard_normal((64, 8)).astype(np.float32)
    y = rng.integers(0, 4, 64)
    w = [rng.standard_normal((8, 16)).astype(np.float32) * 0.3, np.zeros(16, np.float32),
         rng.standard_normal((16, 4)).astype(np.float32) * 0.3, np.zeros(4, np.float32)]
    np.savez(tmp_path / "data.npz", x=x, y=y, w0=w[0], w1=w[1], w2=w[2], w3=w[3])
    r = _mpiexec([os.path.join(HERE, "mpi_worker.py"), str(tmp_path)],
                 _env(fake_nccl, tmp_path, MIXPREC_EXPECT_NCCL="1"))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    for kind in ("sgd", "adam"):
        for scaled in (False, True):
            ref_w, ref_losses = ref._reference(x, y, w, kind, scaled)
            got = [np.load(tmp_path / ("%s_%d_rank%d.npz" % (kind, scaled, k))) for k in (0, 1)]
            for i in range(4):
                key = "arr_%d" % i
                np.testing.assert_array_equal(got[0][key], got[1][key])
                assert_close(got[0][key], ref_w[i], "float32", "replicas")
            assert_close(got[0]["losses"], np.array(ref_losses), "float32", "replicas")
    fit_ref = ref.keras_fit_reference(x, y, w)
    for k in (0, 1):
        got = np.load(tmp_path / ("fit_rank%d.npz" % k))
        for i in range(4):
            assert_close(got["arr_%d" % i], fit_ref[0][i], "float32", "replicas")
        assert_close(got["loss"], fit_ref[1], "float32", "replicas")
        done = json.loads((tmp_path / ("done%d.json" % k)).read_text())
        assert done["mean"] == 2.25 and done["accuracy"] == 0.75
        assert done["nan_skipped"] and done["nan_halved"], done


WATCHDOG_SCRIPT = """
    import os, sys, time
    import mixprec as tf
    report, mode = sys.argv[1], sys.argv[2]

    def write(text):
        with open(report + ".tmp", "w") as f:
            f.write(text)
        os.rename(report + ".tmp", report)

    def wait_report_then_exit():
        t0 = time.time()
        while not os.path.exists(report) and time.time() - t0 < 60:
            time.sleep(0.05)
        os._exit(0)

    if mode == "never-arrives":
        from mixprec import _core
        from mixprec.distribute import multi_worker
        comm = multi_worker.mpi_world()
        if _core.comm_info(comm)[2] == 1:
            wait_report_then_exit()  # never makes its NCCL communicator
        t0 = time.time()
        try:
            _core.comm_nccl(os.environ["MIXPREC_NCCL_LIBRARY"], [0], comm, 2.0)
            write("NOT REACHED")
        except tf.errors.UnavailableError as e:
            write("%s: %s after %.2f s" % (type(e).__name__, e, time.time() - t0))
        os._exit(0)

    s = tf.distribute.MultiWorkerMirroredStrategy()
    assert s.extended._nccl is not None, "not on the NCCL engine"
    rank = s.cluster_resolver.task_id
    s.extended._cross_worker_all_reduce([tf.constant([1.0])], 0)
    if rank == 1:
        if mode == "killed":
            os._exit(1)
        wait_report_then_exit()  # stalled: alive, never calls again
    t0 = time.time()
    try:
        s.extended._cross_worker_all_reduce([tf.constant([1.0])], 0)
        write("NOT REACHED")
        os._exit(0)
    except tf.errors.UnavailableError as e:
        first = "%s: %s after %.2f s" % (type(e).__name__, e, time.time() - t0)
    try:
        s.extended._cross_worker_all_reduce([tf.constant([2.0])], 0)
        second = "NOT REACHED"
    except tf.errors.UnavailableError as e:
        second = "%s: %s" % (type(e).__name__, e)
    write(first + "\\nTHEN " + second)
    os._exit(0)
"""


def _run_watchdog(fake_nccl, tmp_path, mode, timeout_s, **env):
    script = _script(tmp_path, WATCHDOG_SCRIPT)
    report = tmp_path / "rank0.txt"
    t0 = time.time()
    _mpiexec([script, str(report), mode],
             _env(fake_nccl, tmp_path, MIXPREC_COLLECTIVE_TIMEOUT=str(timeout_s), **env),
             timeout=120, extra=("-disable-auto-cleanup",))
    while not report.exists() and time.time() - t0 < 60:
        time.sleep(0.1)
    text = report.read_text()
    assert "NOT REACHED" not in text, text
    return text, float(text.split(" after ", 1)[1].split()[0])


@needs_mpi
@pytest.mark.parametrize("remote_error", ["0", "1"])
def test_a_killed_peer_is_named_by_the_survivor_long_before_the_timeout(fake_nccl, tmp_path,
                                                                       remote_error):
    """Rank 1 exits after the first all-reduce; rank 0's next NCCL all-reduce never
    completes (the fake, as NCCL, waits forever; with FAKE_NCCL_REMOTE_ERROR=1 it reports
    ncclRemoteError as NCCL's network transports do): the watchdog names rank 1 through the
    MPI engine, aborts the communicator, and a later call fails cleanly."""
    text, took = _run_watchdog(fake_nccl, tmp_path, "killed", 60, FAKE_NCCL_REMOTE_ERROR=remote_error)
    assert text.startswith("UnavailableError") and "lost peer rank 1" in text, text
    assert "ncclCommAbort" in text
    assert took < 10, text  # noticed long before the 60 s timeout
    assert "THEN UnavailableError" in text and "aborted earlier" in text, text
    if remote_error == "1":  # NCCL's own report (from ncclGroupEnd or asynchronously) is
        assert "remote process exited" in text, text  # kept beside the dead peer's name


@needs_mpi
def test_a_stalled_peer_fails_the_survivor_at_the_timeout(fake_nccl, tmp_path):
    text, took = _run_watchdog(fake_nccl, tmp_path, "stalled", 2)
    assert text.startswith("UnavailableError") and "within 2 s" in text, text
    assert "MIXPREC_COLLECTIVE_TIMEOUT" in text
    assert 1.9 < took < 10, text
    assert "THEN UnavailableError" in text and "aborted earlier" in text, text


@needs_mpi
def test_a_peer_that_never_arrives_bounds_the_set_up(fake_nccl, tmp_path):
    text, took = _run_watchdog(fake_nccl, tmp_path, "never-arrives", 60)
    assert text.startswith("UnavailableError") and "communicator set-up" in text, text
    assert "within 2 s" in text and 1.9 < took < 10, text
