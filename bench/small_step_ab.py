"""A/B of the small-batch training step (bench/train_step.py's 3x256 model, batch 32, the
guide's custom loop), eager and traced, interleaved in one process: per round each variant
runs --calls steps; reported: each variant's fastest step (wall) and its CPU time per step
(process, all threads). --switch gemm: the float32 small-batch GEMM route on (auto) and off
(openblas); --switch spin: the thread pool polling --spin-us before sleeping, or not.

    python bench/small_step_ab.py [--switch gemm|spin] [--threads 2] [--policy float32] [--rounds 5] [--calls 40]
"""
import argparse
import os

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
p.add_argument("--policy", default="float32")
p.add_argument("--rounds", type=int, default=5)
p.add_argument("--calls", type=int, default=40)
p.add_argument("--switch", choices=["gemm", "spin"], default="gemm")
p.add_argument("--spin-us", type=int, default=50)
ARGS = p.parse_args()
os.environ["MIXPREC_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    os.environ.pop(v, None)

import time  # noqa: E402

import numpy as np  # noqa: E402

import mixprec as tf  # noqa: E402
from mixprec import _core, keras  # noqa: E402


def make_step(traced):
    keras.mixed_precision.set_global_policy(ARGS.policy)
    tf.random.set_seed(0)
    inp = keras.Input(shape=(784,))
    h = inp
    for _ in range(3):
        h = keras.layers.Dense(256, activation="relu")(h)
    out = keras.layers.Activation("softmax", dtype="float32")(keras.layers.Dense(10)(h))
    model = keras.Model(inputs=inp, outputs=out)
    opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.RMSprop())
    loss_fn = keras.losses.SparseCategoricalCrossentropy()

    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x))
            scaled = opt.get_scaled_loss(loss)
        grads = opt.get_unscaled_gradients(tape.gradient(scaled, model.trainable_variables))
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return tf.function(step) if traced else step


def main():
    rng = np.random.default_rng(0)
    x = tf.constant(rng.uniform(0.01, 1.0, (32, 784)).astype(np.float32))
    y = tf.constant(rng.integers(0, 10, 32).astype(np.int64))
    if ARGS.switch == "gemm":
        modes = {"auto": lambda: _core.gemm_path("float32", "auto"),
                 "openblas": lambda: _core.gemm_path("float32", "openblas")}
    else:
        modes = {"spin %d us" % ARGS.spin_us: lambda: _core.pool_spin_us(ARGS.spin_us),
                 "no spin": lambda: _core.pool_spin_us(0)}
    steps = {(mode, traced): make_step(traced) for mode in modes for traced in (False, True)}
    best = {k: float("inf") for k in steps}
    cpu = {k: 0.0 for k in steps}
    for k, s in steps.items():
        modes[k[0]]()
        for _ in range(3):
            float(s(x, y))
    for _ in range(ARGS.rounds):
        for k, s in steps.items():
            modes[k[0]]()
            c0 = time.process_time()
            for _ in range(ARGS.calls):
                t0 = time.perf_counter()
                float(s(x, y))
                best[k] = min(best[k], time.perf_counter() - t0)
            cpu[k] += time.process_time() - c0
    _core.gemm_path("float32", "auto")
    _core.pool_spin_us(0)
    n = ARGS.rounds * ARGS.calls
    print("policy %s, %d threads, load %s" % (ARGS.policy, ARGS.threads, open("/proc/loadavg").read().split()[:3]))
    print("| %s | eager ms (CPU ms) | traced ms (CPU ms) | traced / eager (CPU) |" % ARGS.switch)
    print("|---|---:|---:|---:|")
    for mode in modes:
        e, t = (mode, False), (mode, True)
        print("| %s | %.3f (%.3f) | %.3f (%.3f) | %.2f (%.2f) |" % (
            mode, best[e] * 1e3, cpu[e] / n * 1e3, best[t] * 1e3, cpu[t] / n * 1e3,
            best[e] / best[t], cpu[e] / cpu[t]))


if __name__ == "__main__":
    main()
