"""Where a traced training step's time goes: the per-node replay timings of a graph
(`_core.Graph.profile`, csrc/graph_profile.c) for bench/train_step.py's small-batch model
(784 -> 256 x3 -> 10, batch 32, the guide's custom loop through mixprec.function), grouped
by op, with each matrix product's FLOPs and GFLOP/s.

    python bench/step_profile.py [--threads 2] [--policy float32] [--replays 300] [--nodes]

Per node: the fastest of --replays replays (the least disturbed on a shared machine) and
the mean. Products are MatMul / _FusedMatMul nodes: 2*M*N*K FLOPs from their shapes.
OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are removed for this process, as in train_step.py.
"""
import argparse
import os
import sys

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
p.add_argument("--policy", default="float32")
p.add_argument("--units", type=int, default=256)
p.add_argument("--layers", type=int, default=3)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--replays", type=int, default=300)
p.add_argument("--nodes", action="store_true", help="print every node, not only the groups")
p.add_argument("--gemm", default=None, help="float32 GEMM path: openblas or onednn (default: auto)")
ARGS = p.parse_args()
os.environ["MIXPREC_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    os.environ.pop(v, None)

import time  # noqa: E402

import numpy as np  # noqa: E402

import mixprec as tf  # noqa: E402
from mixprec import _core, keras  # noqa: E402

if ARGS.gemm:
    _core.gemm_path("float32", ARGS.gemm)


def build():
    keras.mixed_precision.set_global_policy(ARGS.policy)
    tf.random.set_seed(0)
    inp = keras.Input(shape=(784,))
    h = inp
    for _ in range(ARGS.layers):
        h = keras.layers.Dense(ARGS.units, activation="relu")(h)
    h = keras.layers.Dense(10)(h)
    out = keras.layers.Activation("softmax", dtype="float32")(h)
    return keras.Model(inputs=inp, outputs=out)


def main():
    rng = np.random.default_rng(0)
    x = tf.constant(rng.uniform(0.01, 1.0, (ARGS.batch, 784)).astype(np.float32))
    y = tf.constant(rng.integers(0, 10, ARGS.batch).astype(np.int64))
    model = build()
    opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.RMSprop())
    loss_fn = keras.losses.SparseCategoricalCrossentropy()

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x))
            scaled = opt.get_scaled_loss(loss)
        grads = opt.get_unscaled_gradients(tape.gradient(scaled, model.trainable_variables))
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    for _ in range(5):
        float(step(x, y))
    # the graph the replays run (the trace's graph for these shapes; mixprec.function internals)
    g = [h for t in step._traces.values() for h in t.shapes.values() if h is not None][-1]
    g.profile = True
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(ARGS.replays):
        float(step(x, y))
    wall = (time.perf_counter() - t0) / ARGS.replays * 1e3
    cpu = (time.process_time() - c0) / ARGS.replays * 1e3
    st = g.profile_stats()
    g.profile = False
    nodes = g.nodes()

    def numel(s):
        n = 1
        for d in s:
            n *= d
        return n

    groups = {}
    rows = []
    for r in st["nodes"]:
        n = nodes[r["node"]]
        name = n["op"] or n["kind"]
        flops = 0
        if name in ("MatMul", "_FusedMatMul"):
            a = nodes[n["inputs"][0][0]]["shape"]
            M, N = n["shape"][-2], n["shape"][-1]
            K = numel(a) // M if M else 0
            flops = 2 * M * N * K
            name = "%s" % name
        gr = groups.setdefault(name, [0, 0.0, 0.0, 0])
        gr[0] += 1
        gr[1] += r["min_us"]
        gr[2] += r["sum_us"] / r["calls"]
        gr[3] += flops
        rows.append((r["node"], name, tuple(n["shape"]), r["min_us"], r["sum_us"] / r["calls"], flops))
    print("policy %s, %d threads, %d replays: replay fastest %.1f us, mean %.1f us; whole call "
          "mean %.3f ms wall, %.3f ms CPU (process)" % (
              ARGS.policy, ARGS.threads, st["replays"], st["replay_min_us"],
              st["replay_sum_us"] / st["replays"], wall, cpu))
    if ARGS.nodes:
        print("| node | op | shape | fastest us | mean us | GFLOP/s (fastest) |")
        print("|---:|---|---|---:|---:|---:|")
        for i, name, shape, mn, mean, fl in rows:
            print("| %d | %s | %s | %.1f | %.1f | %s |" % (i, name, shape, mn, mean,
                                                          "%.0f" % (fl / mn / 1e3) if fl else ""))
    total_min = sum(g[1] for g in groups.values())
    print("| op | nodes | fastest us (sum) | share | mean us (sum) | MFLOP | GFLOP/s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, (cnt, mn, mean, fl) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
        print("| %s | %d | %.1f | %.0f %% | %.1f | %s | %s |" % (
            name, cnt, mn, 100 * mn / total_min, mean, "%.1f" % (fl / 1e6) if fl else "",
            "%.0f" % (fl / mn / 1e3) if fl else ""))
    print("| sum of nodes | %d | %.1f | | %.1f | | |" % (
        sum(g[0] for g in groups.values()), total_min, sum(g[2] for g in groups.values())))


if __name__ == "__main__":
    sys.exit(main())
