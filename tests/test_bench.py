"""The bench/ scripts run and print their tables (tiny shapes: this checks that they work,
not how fast anything is; the numbers live in docs/performance.md)."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")

pytestmark = pytest.mark.skipif(not os.path.isdir(BENCH), reason="bench/ is not in this tree")


def run(script, *args):
    env = dict(os.environ, MIXPREC_NUM_THREADS="1")
    out = subprocess.run([sys.executable, os.path.join(BENCH, script), *args],
                         capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    return out.stdout


def table_rows(text):
    return [line for line in text.splitlines()
            if line.startswith("|") and not set(line) <= set("|- ")]


def test_ops():
    out = run("ops.py", "--quick", "--repeat", "3")
    assert "Matmul" in out and "Casts" in out
    assert len(table_rows(out)) == 2 + 5  # header + 1 shape, header + 4 casts


def test_guide():
    out = run("guide.py", "--units", "8", "--steps", "2", "--batch", "64")
    rows = table_rows(out)
    assert [r.split("|")[2].strip() for r in rows[1:]] == [
        "float32", "mixed_float16", "mixed_bfloat16", "(sgemm floor)"]


def test_train_step():
    out = run("train_step.py", "--steps", "2", "--batch", "64", "--hidden", "8")
    assert "NumPy float32, by hand" in out and "mixprec, float16 compute" in out


def test_train_step_tracing():
    out = run("train_step.py", "--tracing", "--steps", "2", "--batch", "64", "--rounds", "1")
    rows = [r for r in table_rows(out) if "float32 |" in r or "float16 |" in r]
    assert len(rows) == 3 * 3  # three tables (CPU time, custom loop, fit) of three models
    assert "OpenBLAS" in out
    assert all("| - |" in r for r in rows)  # no TensorFlow columns without --tf-python


@pytest.mark.skipif(not os.environ.get("MIXPREC_TF_PYTHON"),
                    reason="TensorFlow's columns need MIXPREC_TF_PYTHON (a Python with tensorflow)")
def test_train_step_tracing_tensorflow():
    out = run("train_step.py", "--tracing", "--steps", "2", "--batch", "64", "--rounds", "1",
              "--tf-python", os.environ["MIXPREC_TF_PYTHON"])
    rows = [r for r in table_rows(out) if "float32 |" in r or "float16 |" in r]
    assert len(rows) == 9 and not any("| - |" in r for r in rows)


def test_guide_reference_mixprec_only():
    out = run("guide_reference.py", "--frameworks", "mixprec", "--units", "8", "--batch", "64",
              "--steps", "2")
    rows = table_rows(out)
    assert len(rows) == 4  # header + three precisions
    assert all("error" not in r and "timeout" not in r for r in rows)


def test_cnn():
    out = run("cnn.py", "--batch", "2", "--size", "12", "--block-batch", "1", "--block-size", "6",
              "--steps", "1", "--repeat", "1")
    rows = table_rows(out)
    assert len(rows) == 1 + 3 * 3  # header + (CNN, Keras CNN, block) x 3 dtypes
    assert all("not installed" in r for r in rows[1:])
    assert "oneDNN 3." in out


def test_gemm_paths():
    out = run("gemm_paths.py", "--units", "8", "--batch", "16", "--repeat", "1")
    assert len(table_rows(out)) == 1 + 4


def test_checkpoint():
    out = run("checkpoint.py", "--mb", "2", "--parts", "2", "--no-tf")
    rows = table_rows(out)
    assert len(rows) == 2 and "mixprec" in rows[1]


def test_distribute():
    out = run("distribute.py", "--mib", "1", "--examples", "256", "--repeat", "2",
              "--cnn-examples", "256", "--overhead-steps", "5", "--small-tensors", "50")
    rows = table_rows(out)
    # header, threads, many small tensors, mpiexec (ours, MPICH's blocking call twice and the
    # ratio; or "no MPICH"), MLP, the step overhead x 1, 2 and seed 004 x 1, 2 (traced, and
    # the step run eagerly, with their ratio)
    mpi = "(no MPICH)" not in out
    assert len(rows) == (17 if mpi else 14), out
    assert out.count("strategy.run step, Dense 8-4 (overhead)") == 2
    assert "all-reduce 50 tensors of 16 float32" in out
    assert "2 replica threads" in out and "2 replicas" in out
    assert out.count("seed 004 epoch, 256 images") == 4
    assert out.count("mixprec traced / eager step") == 2
    assert not mpi or "mixprec / MPI_Allreduce" in out
