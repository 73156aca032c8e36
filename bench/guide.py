"""The guide's model on this CPU: step time and peak memory per dtype policy, and the
float32 step against the sgemm-bound floor (the same GEMMs through OpenBLAS), in one run.

    python bench/guide.py [--units 64 4096] [--steps 15]

Each policy runs in its own process so its peak resident memory is its own. Targets
(issue 4): mixed_float16 step <= 1.15x float32 at 4096 units; float32 >= 90% of the
sgemm floor; activation memory under mixed_float16 about half of float32's.
Activations: the tensor bytes the tape holds after the forward pass; step peak: the most
tensor bytes alive during one training step above what the model holds between steps
(both from tf.config.experimental.get_memory_info('CPU:0'), mixprec's own count).
The sgemm floor is timed in the float32 process, alternating with its steps. CPU ms/step is
the process's user + system time per step (all threads), which other jobs on a loaded
machine disturb less than the wall time.
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
from _common import machine, median_time, print_table  # noqa: E402

BATCH = 8192


def child(policy, units, steps):
    import mixprec as tf
    from mixprec import keras
    from mixprec.keras import layers, mixed_precision

    mixed_precision.set_global_policy(policy)
    tf.random.set_seed(0)
    inputs = keras.Input(shape=(784,))
    x = layers.Dense(units, activation="relu")(inputs)
    x = layers.Dense(units, activation="relu")(x)
    x = layers.Dense(10)(x)
    out = layers.Activation("softmax", dtype="float32")(x)
    model = keras.Model(inputs, out)
    model.compile(loss="sparse_categorical_crossentropy", optimizer=keras.optimizers.RMSprop(),
                  metrics=["accuracy"])
    rng = np.random.default_rng(0)
    xb = tf.constant(rng.random((BATCH, 784), dtype=np.float32))
    yb = tf.constant(rng.integers(0, 10, BATCH))
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cpus = []

    def step():
        c = cpu_seconds()
        model.train_on_batch(xb, yb)
        cpus.append(cpu_seconds() - c)
    t = median_time(step, steps, warmup=1)
    cpu = float(np.median(cpus[2:] or cpus))  # after the warm-up and the probe call
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    floor = floor_ratio = None
    if policy == "float32":
        # the step and its sgemm floor alternate, so a noisy moment of this shared machine
        # slows both and their ratio stays meaningful (after the RSS reading: the floor's
        # matrices are not the model's memory)
        gemms = sgemm_floor(units)
        gemms()
        ts, fs = [], []
        for _ in range(steps):
            t0 = time.perf_counter()
            step()
            t1 = time.perf_counter()
            gemms()
            fs.append(time.perf_counter() - t1)
            ts.append(t1 - t0)
        # the step reported is this loop's too, so the two rows of the table agree
        t, floor = float(np.median(ts)), float(np.median(fs))
        cpu = float(np.median(cpus[-steps:]))
        floor_ratio = floor / t
    # tensor memory (mixprec's own count, tf.config.experimental.get_memory_info): what the
    # tape keeps alive after the forward pass (the activations), and the peak of one step
    mem = tf.config.experimental
    before = mem.get_memory_info("CPU:0")["current"]
    with tf.GradientTape() as tape:
        loss = model.compute_loss(xb, yb, model(xb, training=True))
    act = mem.get_memory_info("CPU:0")["current"] - before
    del tape, loss
    mem.reset_memory_stats("CPU:0")
    before = mem.get_memory_info("CPU:0")["current"]
    model.train_on_batch(xb, yb)
    step_peak = mem.get_memory_info("CPU:0")["peak"] - before
    print(json.dumps({"step": t, "cpu": cpu, "floor": floor, "floor_ratio": floor_ratio, "peak_mb": peak / 1024.0, "base_mb": base / 1024.0,
                      "act_mb": act / 2.0**20, "step_peak_mb": step_peak / 2.0**20}))


def cpu_seconds():
    """User + system CPU seconds of this process (all threads): less disturbed by other jobs
    on a loaded machine than wall time."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def sgemm_floor(units):
    """A function running the float32 GEMMs of one training step (forward, dX, dW) through
    mixprec's OpenBLAS."""
    import mixprec as tf

    rng = np.random.default_rng(0)
    dims = [(784, units), (units, units), (units, 10)]
    mats = []
    for k, n in dims:
        a = tf.constant(rng.random((BATCH, k), dtype=np.float32))
        w = tf.constant(rng.random((k, n), dtype=np.float32))
        dy = tf.constant(rng.random((BATCH, n), dtype=np.float32))
        mats.append((a, w, dy))

    def step():
        for i, (a, w, dy) in enumerate(mats):
            tf.matmul(a, w)                      # forward
            tf.matmul(a, dy, transpose_a=True)   # dW
            if i > 0:
                tf.matmul(dy, w, transpose_b=True)  # dX (not needed for the first layer)
    return step


def main(argv=None):
    global BATCH
    ap = argparse.ArgumentParser()
    ap.add_argument("--units", type=int, nargs="+", default=[64, 4096])
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--batch", type=int, default=BATCH)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    BATCH = args.batch
    if args.child:
        child(args.child[0], int(args.child[1]), int(args.child[2]))
        return 0
    print("# bench/guide.py — %s" % machine())
    rows = []
    for units in args.units:
        steps = args.steps if units <= 1024 else max(3, args.steps // 3)
        res = {}
        for policy in ("float32", "mixed_float16", "mixed_bfloat16"):
            out = subprocess.run([sys.executable, __file__, "--child", policy, str(units),
                                  str(steps), "--batch", str(BATCH)], capture_output=True, text=True, check=True)
            res[policy] = json.loads(out.stdout.strip().splitlines()[-1])
        f32 = res["float32"]
        floor = f32["floor"]
        for policy, r in res.items():
            rows.append([units, policy, "%.1f" % (1e3 * r["step"]),
                         "%.2f" % (r["step"] / f32["step"]),
                         "%.1f" % (1e3 * r["cpu"]), "%.2f" % (r["cpu"] / f32["cpu"]),
                         "%.0f%%" % (100 * r["floor_ratio"]) if policy == "float32" else "",
                         "%.0f" % r["act_mb"], "%.2f" % (r["act_mb"] / f32["act_mb"]),
                         "%.0f" % r["step_peak_mb"], "%.0f" % r["peak_mb"]])
        rows.append([units, "(sgemm floor)", "%.1f" % (1e3 * floor), "", "", "", "", "", "", "", ""])
    print_table("Guide MLP (784-units-units-10), batch %d, RMSprop, train_on_batch" % BATCH,
                ["units", "policy", "step ms", "vs float32 (<=1.15 at 4096)", "CPU ms/step",
                 "CPU vs float32",
                 "floor/step (>=90%)", "activations MB", "vs float32 (~0.5)",
                 "step peak MB", "process peak RSS MB"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
