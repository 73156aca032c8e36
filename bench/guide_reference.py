"""The guide's model against the reference frameworks on this CPU, in one run: mixprec,
TensorFlow/Keras (the guide's own code) and PyTorch (eager, ``torch.autocast`` +
``GradScaler``), each under float32, float16 mixed precision and bfloat16 mixed precision.

    python bench/guide_reference.py [--units 64 512] [--batch 8192] [--steps 10]
                                    [--frameworks mixprec TensorFlow PyTorch]
                                    [--tf-python PATH]

The same work everywhere: an MLP 784 -> units -> units -> 10 (ReLU), a float32 softmax,
sparse categorical cross-entropy, RMSprop (TensorFlow's defaults), batch 8192 of random
inputs, one optimizer step per call (Keras' ``train_on_batch``; the equivalent loop in
PyTorch), dynamic loss scaling for float16. Every run is its own process on the same number
of threads (``--threads``, default all cores): its median step time after a warm-up, or
"timeout" past ``--budget`` seconds, and its median CPU time (user + system, all threads)
per step, which a loaded machine disturbs less. The frameworks that are not installed are
left out; ``--tf-python`` runs TensorFlow's children with another interpreter (a
TensorFlow venv: TensorFlow is never imported into mixprec's). Ratios are the framework's
step time over mixprec's for the same precision.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _common import machine, print_table, torch_guide_step  # noqa: E402

PRECISIONS = ("float32", "mixed_float16", "mixed_bfloat16")


def _data(batch):
    rng = np.random.default_rng(0)
    return rng.random((batch, 784), dtype=np.float32), rng.integers(0, 10, batch)


def _cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _time(step, steps, budget):
    """Median wall and CPU seconds of one step."""
    step()  # warm-up: slots, caches, kernels chosen
    times, cpus = [], []
    start = time.perf_counter()
    for _ in range(steps):
        t, c = time.perf_counter(), _cpu()
        step()
        times.append(time.perf_counter() - t)
        cpus.append(_cpu() - c)
        if time.perf_counter() - start > budget:
            break
    return float(np.median(times)), float(np.median(cpus))


def _keras_step(tf_mod, keras, policy, units, x, y):
    keras.mixed_precision.set_global_policy(policy)
    inputs = keras.Input(shape=(784,))
    h = keras.layers.Dense(units, activation="relu")(inputs)
    h = keras.layers.Dense(units, activation="relu")(h)
    h = keras.layers.Dense(10)(h)
    out = keras.layers.Activation("softmax", dtype="float32")(h)
    model = keras.Model(inputs, out)
    model.compile(loss="sparse_categorical_crossentropy", optimizer=keras.optimizers.RMSprop())
    xb, yb = tf_mod.constant(x), tf_mod.constant(y)
    return lambda: model.train_on_batch(xb, yb)


def run_mixprec(policy, units, x, y):
    import mixprec as tf
    from mixprec import keras

    return _keras_step(tf, keras, policy, units, x, y)


def run_tensorflow(policy, units, x, y):
    import tensorflow as tf

    keras = tf.keras
    return _keras_step(tf, keras, policy, units, x, y)


def run_torch(policy, units, x, y):
    import torch

    half = {"mixed_float16": torch.float16, "mixed_bfloat16": torch.bfloat16}.get(policy)
    return torch_guide_step(torch, "cpu", units, half, torch.from_numpy(x), torch.from_numpy(y))


RUNNERS = {"mixprec": run_mixprec, "TensorFlow": run_tensorflow, "PyTorch": run_torch}
MODULES = {"mixprec": "mixprec", "TensorFlow": "tensorflow", "PyTorch": "torch"}


def child(framework, policy, units, batch, steps, budget, threads):
    if framework == "TensorFlow":
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    elif framework == "PyTorch":
        import torch

        torch.set_num_threads(threads)
    x, y = _data(batch)
    step = RUNNERS[framework](policy, units, x, y)
    wall, cpu = _time(step, steps, budget)
    print(json.dumps({"step": wall, "cpu": cpu}))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--units", type=int, nargs="+", default=[64, 512])
    ap.add_argument("--batch", type=int, default=8192)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--budget", type=float, default=60.0, help="seconds per run")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--frameworks", nargs="+", choices=list(RUNNERS), default=list(RUNNERS),
                    help="which to run (those not installed are left out)")
    ap.add_argument("--tf-python", default=None,
                    help="interpreter of a TensorFlow venv for TensorFlow's runs")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child[0], args.child[1], args.units[0], args.batch, args.steps, args.budget,
              args.threads)
        return 0
    import importlib.util

    python = {f: sys.executable for f in RUNNERS}
    if args.tf_python:
        python["TensorFlow"] = args.tf_python
    frameworks = [f for f in RUNNERS if f in args.frameworks and
                  (f == "TensorFlow" and args.tf_python or importlib.util.find_spec(MODULES[f]) is not None)]
    if "mixprec" not in frameworks:
        ap.error("mixprec is the baseline of every ratio: keep it in --frameworks")
    versions = []
    for f in frameworks:
        if python[f] != sys.executable:
            ver = subprocess.run([python[f], "-c", "import %s as m; print(m.__version__)" % MODULES[f]],
                                 capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
            versions.append("%s %s" % (f, ver.stdout.strip() or "?"))
            continue
        mod = __import__(MODULES[f])
        versions.append("%s %s" % (f, getattr(mod, "__version__", "?")))
    print("# bench/guide_reference.py — %s" % machine())
    print("# %s; threads: %d; batch %d" % (", ".join(versions), args.threads, args.batch))
    env = dict(os.environ, MIXPREC_NUM_THREADS=str(args.threads),
               OMP_NUM_THREADS=str(args.threads), OPENBLAS_NUM_THREADS=str(args.threads))
    rows = []
    for units in args.units:
        for policy in PRECISIONS:
            res = {}
            for f in frameworks:
                cmd = [python[f], __file__, "--child", f, policy, "--units", str(units),
                       "--batch", str(args.batch), "--steps", str(args.steps), "--budget",
                       str(args.budget), "--threads", str(args.threads)]
                try:
                    out = subprocess.run(cmd, capture_output=True, text=True, env=env,
                                         timeout=args.budget * 3 + 120)
                    last = out.stdout.strip().splitlines()[-1:] if out.returncode == 0 else []
                    res[f] = json.loads(last[0]) if last else "error"
                    if not last:
                        sys.stderr.write("%s %s %d failed:\n%s\n" % (f, policy, units,
                                                                      out.stderr[-2000:]))
                except subprocess.TimeoutExpired:
                    res[f] = "timeout"
            base = res.get("mixprec")
            row = [units, policy]
            for f in frameworks:
                v = res[f]
                row.append("%.1f" % (1e3 * v["step"]) if isinstance(v, dict) else v)
            for f in frameworks:
                v = res[f]
                row.append("%.1f" % (1e3 * v["cpu"]) if isinstance(v, dict) else "")
            for f in frameworks[1:]:
                v = res[f]
                row.append("%.2f" % (v["step"] / base["step"]) if isinstance(v, dict) and isinstance(
                    base, dict) else "")
            rows.append(row)
            print("  done: %d units, %s" % (units, policy), file=sys.stderr)
    header = (["units", "precision"] + ["%s ms" % f for f in frameworks] +
              ["%s CPU ms" % f for f in frameworks] + ["%s / mixprec" % f for f in frameworks[1:]])
    print_table("The guide's MLP, one training step (median)", header, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
