"""Seed 004 (the tf.distribute custom-training tutorial) by changing the import only: one
epoch on 2 logical CPUs reaches the 1-replica run's accuracy (the same global batches, so
the same training up to summation order), and its checkpoint restores without a strategy."""

import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _run(replicas, work):
    env = {k: v for k, v in os.environ.items() if k != "MIXPREC_EMULATE_GPU"}
    r = subprocess.run([sys.executable, os.path.join(HERE, "seed004_worker.py"), str(replicas),
                        str(work)], capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    return [float(v) for v in r.stdout.split("RESULT")[1].split()]


@pytest.mark.slow
def test_seed_004_on_two_logical_cpus(tmp_path):
    one = _run(1, tmp_path / "one")
    two = _run(2, tmp_path / "two")
    loss1, train1, test1, restored1 = one
    loss2, train2, test2, restored2 = two
    assert test2 > 0.5  # ten classes: it learned
    assert abs(test2 - test1) <= 0.015  # the bar against TensorFlow: ±1.5 points
    assert abs(train2 - train1) <= 0.015
    assert abs(loss2 - loss1) <= 0.01 * loss1
    assert restored2 == test2 and restored1 == test1  # the restored model, without a strategy


@pytest.mark.slow
def test_seed_004_on_two_mpi_processes(tmp_path):
    """MultiWorkerMirroredStrategy under ``mpiexec -n 2``: the tutorial's
    ``distributed_train_step`` traces at its first call only (its gradient sums are
    AllReduce ops of the graph, replayed over MPI) and the epoch reaches the one-replica run's accuracy."""
    from mixprec.distribute import multi_worker

    mpiexec = shutil.which("mpiexec", path=os.path.dirname(sys.executable))
    if mpiexec is None or not os.path.exists(multi_worker._mpi_library()):
        pytest.skip("the MPICH wheel (pip install mpich) is not installed")
    if "libasan" in os.environ.get("LD_PRELOAD", ""):
        pytest.skip("MPI processes are not run under the sanitizer runtimes")
    one = _run(1, tmp_path / "one")
    env = {k: v for k, v in os.environ.items() if k not in ("MIXPREC_EMULATE_GPU", "TF_CONFIG")}
    env["MIXPREC_NUM_THREADS"] = "1"
    r = subprocess.run([mpiexec, "-n", "2", sys.executable, os.path.join(HERE, "seed004_worker.py"),
                        "mpi", str(tmp_path / "mpi")], capture_output=True, text=True,
                       timeout=900, env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    results = [[float(v) for v in part.split("\n")[0].split()]
               for part in r.stdout.split("RESULT")[1:]]
    traced = [line.split()[1:] for line in r.stdout.splitlines() if line.startswith("TRACED")]
    assert len(results) == 2 and results[0] == results[1]  # both workers agree
    # traced on the first call only, twice then (Adam makes its slots in it: TensorFlow's
    # rule for a first call that creates variables), replayed since (no graph break)
    assert traced == [["2", "0"], ["2", "0"]]
    loss2, train2, test2, restored2 = results[0]
    loss1, train1, test1, restored1 = one
    assert test2 > 0.5
    assert abs(test2 - test1) <= 0.015
    assert abs(train2 - train1) <= 0.015
    assert abs(loss2 - loss1) <= 0.01 * loss1
    assert restored2 == test2
