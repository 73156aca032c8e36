"""Training-step benchmark (CPU): the mixed precision guide's custom training loop in mixprec
against the same step written by hand in NumPy, and the Python dispatch cost of one op.

    python bench/train_step.py [--threads N] [--steps 15] [--batch 8192]
    python bench/train_step.py --tracing [--threads N]   (eager vs traced steps only)

Workload: an MLP 784 -> 64 -> 64 -> 10 (ReLU), batch 8192, sparse softmax cross-entropy,
RMSprop, dynamic loss scaling. mixprec runs the guide's loop (GradientTape,
get_scaled_loss, get_unscaled_gradients, apply_gradients) with float32 compute and with
float16 compute (inputs and weights cast to float16, float32 master weights); NumPy runs
forward, backward, the unscale + finite check and RMSprop by hand in float32. Both use the
same thread count (mixprec's pool; NumPy's OpenBLAS), set before anything is imported.
Reported: the median of --steps timed steps after 3 warm-up steps, random data (never zeros).
One run; paste the printed table into docs/performance.md.

--tracing: per-step time of the guide's custom loop (a mixprec.function train step) and of
Keras fit (steps traced by default; run_eagerly=True for eager), eager vs traced, for the
guide's 64-unit model (batch 8192, mixed_float16) and a 3-layer 256-unit model at batch 32
(where per-op overhead dominates), and the tracing time of the guide's train step (the
first call, which runs the step while recording it plus TensorFlow's second, dry trace when
it creates variables, minus one replayed step; also in CPU time of the process, all threads,
which the machine's load does not inflate). With --tf-python PATH the same functions (the
model, the guide's step, the fit calls are written against TensorFlow's API: `tf` and `keras`
are TensorFlow 2.21 and tf-keras there) run under that interpreter in a subprocess, per model
right after mixprec's rows: TensorFlow eager and tf.function / fit with run_eagerly=True and
with its default tf.function steps, same threads (intra- and inter-op), same CPU, one run;
--rounds alternates the two frameworks per model and keeps each measure's fastest.
OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are removed from this process's environment (and the
subprocess's) before OpenBLAS loads, so OpenBLAS picks its kernels for this CPU (printed).

    python bench/train_step.py --tracing --threads 2 --steps 30 --tf-python <tensorflow 2.21 venv>/bin/python
"""

import argparse
import os
import sys


def _args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--steps", type=int, default=15)
    p.add_argument("--batch", type=int, default=8192)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--tracing", action="store_true", help="eager vs traced steps only")
    p.add_argument("--rounds", type=int, default=2,
                   help="--tracing: alternate mixprec and TensorFlow this many times per model "
                        "and keep each measure's fastest (the machine's load moves)")
    p.add_argument("--tf-python", default=None,
                   help="--tracing: a Python with tensorflow and tf_keras (TensorFlow's columns)")
    p.add_argument("--tf-worker", nargs=4, default=None, metavar=("UNITS", "LAYERS", "BATCH", "POLICY"),
                   help=argparse.SUPPRESS)  # the subprocess: one model's rows under TensorFlow
    return p.parse_args()


ARGS = _args()
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "MIXPREC_NUM_THREADS"):
    os.environ[var] = str(ARGS.threads)
# Some machines export a core type / L2 size for an older OpenBLAS: this benchmark measures
# what OpenBLAS picks for the CPU it runs on (bench only; tests never touch these).
UNSET = [v for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if os.environ.pop(v, None) is not None]

import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

if ARGS.tf_worker:  # TensorFlow's side of --tracing: the same functions, TensorFlow's modules
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf  # noqa: E402
    import tf_keras as keras  # noqa: E402
    _core = None
    tf.config.threading.set_intra_op_parallelism_threads(ARGS.threads)
    tf.config.threading.set_inter_op_parallelism_threads(ARGS.threads)
else:
    import mixprec as tf  # noqa: E402
    from mixprec import _core, keras  # noqa: E402

LR, RHO, EPS = 1e-3, 0.9, 1e-7
SCALE = 2.0 ** 15


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _init(rng, sizes):
    """Glorot-uniform weights and small random biases, float32."""
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        lim = np.sqrt(6.0 / (n_in + n_out))
        params.append(rng.uniform(-lim, lim, (n_in, n_out)).astype(np.float32))
        params.append(rng.uniform(-0.1, 0.1, n_out).astype(np.float32))
    return params


def _median_ms(step, n):
    """(median step time in ms, loss of the last step): the same loss for every
    implementation shows they do the same work."""
    for _ in range(3):
        step()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        loss = step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3, float(loss)


# --------------------------------------------------------------------------- mixprec

def mixprec_step(x, y, init, compute_dtype):
    params = [tf.Variable(p) for p in init]
    opt = tf.keras.mixed_precision.LossScaleOptimizer(
        tf.keras.optimizers.RMSprop(LR, rho=RHO, epsilon=EPS))
    xt, yt = tf.constant(x), tf.constant(y)

    def forward(h):
        c = (lambda t: t) if compute_dtype == "float32" else \
            (lambda t: tf.cast(t, compute_dtype))
        h = c(h)
        for i in range(0, len(params) - 2, 2):
            h = tf.nn.relu(tf.matmul(h, c(params[i])) + c(params[i + 1]))
        logits = tf.matmul(h, c(params[-2])) + c(params[-1])
        return tf.cast(logits, "float32")

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=yt, logits=forward(xt)))
            scaled = opt.get_scaled_loss(loss)
        grads = opt.get_unscaled_gradients(tape.gradient(scaled, params))
        opt.apply_gradients(zip(grads, params))
        return loss

    return step


# --------------------------------------------------------------------------- NumPy

def numpy_step(x, y, init):
    params = [p.copy() for p in init]
    ms = [np.zeros_like(p) for p in params]
    onehot = np.eye(10, dtype=np.float32)[y]
    n = x.shape[0]

    def step():
        # forward
        acts, h = [x], x
        for i in range(0, len(params) - 2, 2):
            h = np.maximum(h @ params[i] + params[i + 1], 0)
            acts.append(h)
        logits = h @ params[-2] + params[-1]
        z = logits - logits.max(axis=1, keepdims=True)
        e = np.exp(z)
        s = e.sum(axis=1, keepdims=True)
        loss = float(np.mean(np.log(s[:, 0]) - (z * onehot).sum(axis=1)))
        # backward of the scaled loss
        g = (e / s - onehot) * np.float32(SCALE / n)
        grads = [None] * len(params)
        for i in range(len(params) - 2, -1, -2):
            a = acts[i // 2]
            grads[i] = a.T @ g
            grads[i + 1] = g.sum(axis=0)
            if i:
                g = (g @ params[i].T) * (a > 0)
        # unscale, finite check, RMSprop (Keras' rule, epsilon outside the root)
        inv = np.float32(1.0 / SCALE)
        grads = [gr * inv for gr in grads]
        if all(np.isfinite(gr).all() for gr in grads):
            for p, m, gr in zip(params, ms, grads):
                m *= RHO
                m += np.float32(1 - RHO) * gr * gr
                p -= np.float32(LR) * gr / (np.sqrt(m) + np.float32(EPS))
        return loss

    return step


# --------------------------------------------------------------------------- dispatch

def dispatch_us(repeats=7):
    """Per-op time of ``x + y`` on 4-element tensors; the configurations are interleaved
    across repeats (the machine is shared) and each reports its fastest repeat."""
    x = tf.constant([1.0, 2.0, 3.0, 4.0])
    y = tf.constant([4.0, 3.0, 2.0, 1.0])
    a, b = np.ones(4, np.float32), np.ones(4, np.float32)
    k = 50_000

    def plain():
        t0 = time.perf_counter()
        for _ in range(k):
            x + y
        return (time.perf_counter() - t0) / k

    def tape_unwatched():
        with tf.GradientTape():
            return plain()

    def tape_recording():
        with tf.GradientTape() as tape:
            tape.watch(x)
            return plain()

    def numpy_add():
        t0 = time.perf_counter()
        for _ in range(k):
            a + b
        return (time.perf_counter() - t0) / k

    cases = {"no tape": plain, "tape active, inputs not watched": tape_unwatched,
             "tape recording (x watched: one node per op)": tape_recording,
             "NumPy a + b (reference)": numpy_add}
    best = {name: float("inf") for name in cases}
    for _ in range(repeats):
        for name, fn in cases.items():
            best[name] = min(best[name], fn())
    return {name: t * 1e6 for name, t in best.items()}


def _keras_model(units, layers, policy):
    keras.mixed_precision.set_global_policy(policy)
    tf.random.set_seed(0)
    inp = keras.Input(shape=(784,))
    h = inp
    for _ in range(layers):
        h = keras.layers.Dense(units, activation="relu")(h)
    h = keras.layers.Dense(10)(h)
    out = keras.layers.Activation("softmax", dtype="float32")(h)
    return keras.Model(inputs=inp, outputs=out)


def _guide_step(model, opt, loss_fn):
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x))
            scaled = opt.get_scaled_loss(loss)
        grads = opt.get_unscaled_gradients(tape.gradient(scaled, model.trainable_variables))
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return train_step


def _min_ms(fn, n):
    """The fastest of n timed calls after 3 warm-up calls: on a machine shared with other
    jobs the minimum is the least disturbed measure."""
    for _ in range(3):
        fn()
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def _batch_timer():
    """A callback timing each training batch (begin to end, the step's logs read back: a
    callback without TensorFlow's `_supports_tf_logs` gets them as Python numbers)."""
    class BatchTimer(keras.callbacks.Callback):
        times = []

        def on_train_batch_begin(self, batch, logs=None):
            self.t0 = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            self.times.append(time.perf_counter() - self.t0)
    return BatchTimer()


def tracing_rows(units, layers, batch, policy, steps):
    """{loop_eager, loop_traced, fit_eager, fit_traced, tracing} in ms for one model, with
    whichever framework `tf`/`keras` are in this process."""
    rng = np.random.default_rng(0)
    x = tf.constant(rng.uniform(0.01, 1.0, (batch, 784)).astype(np.float32))
    y = tf.constant(rng.integers(0, 10, batch).astype(np.int64))
    out = {}
    for traced in (False, True):
        model = _keras_model(units, layers, policy)
        opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.RMSprop())
        loss_fn = keras.losses.SparseCategoricalCrossentropy()
        step = _guide_step(model, opt, loss_fn)
        if traced:
            step = tf.function(step)
            t0, c0 = time.perf_counter(), time.process_time()
            float(step(x, y))  # the traced call (runs once for real while recording)
            trace_ms = (time.perf_counter() - t0) * 1e3
            trace_cpu = (time.process_time() - c0) * 1e3
        c0 = time.process_time()
        ms = _min_ms(lambda: float(step(x, y)), steps)
        # CPU time per step of the process, all threads (warm-up included): the work done,
        # which other jobs on the machine do not inflate as they do the wall time
        out["cpu_traced" if traced else "cpu_eager"] = (time.process_time() - c0) * 1e3 / (steps + 3)
        out["loop_traced" if traced else "loop_eager"] = ms
        if traced:  # the traced call runs the step for real: tracing is what it adds
            out["tracing"] = trace_ms - ms
            c0 = time.process_time()
            for _ in range(3):
                float(step(x, y))
            out["tracing_cpu"] = trace_cpu - (time.process_time() - c0) / 3 * 1e3
    reps = max(steps, 8)
    xs = np.asarray(x.numpy()).repeat(reps, axis=0)[:batch * reps]
    ys = np.asarray(y.numpy()).repeat(reps, axis=0)[:batch * reps]
    for eager in (True, False):
        model = _keras_model(units, layers, policy)
        model.compile(keras.optimizers.RMSprop(), "sparse_categorical_crossentropy",
                      run_eagerly=eager)
        model.fit(xs[:batch * 2], ys[:batch * 2], batch_size=batch, epochs=1, verbose=0)
        timer = _batch_timer()
        model.fit(xs, ys, batch_size=batch, epochs=1, verbose=0, shuffle=False,
                  callbacks=[timer])
        out["fit_eager" if eager else "fit_traced"] = min(timer.times) * 1e3
    keras.mixed_precision.set_global_policy("float32")
    return out


def tf_rows(units, layers, batch, policy):
    """TensorFlow's rows for one model: this script under --tf-python, in a subprocess."""
    cmd = [ARGS.tf_python, os.path.abspath(__file__), "--threads", str(ARGS.threads),
           "--steps", str(ARGS.steps), "--tf-worker", str(units), str(layers), str(batch), policy]
    res = subprocess.run(cmd, capture_output=True, text=True)
    lines = res.stdout.strip().splitlines()
    if res.returncode != 0 or not lines:
        err = (res.stderr.strip().splitlines() or ["?"])[-1]
        raise SystemExit("TensorFlow worker failed: %s" % err)
    return json.loads(lines[-1])


TRACING_MODELS = ((64, 2, None, "mixed_float16"), (256, 3, 32, "float32"),
                  (256, 3, 32, "mixed_float16"))


def tracing_main():
    print("Eager vs traced steps (CPU): the guide's custom loop and Keras fit, mixprec and "
          "TensorFlow")
    print("date: %s" % datetime.datetime.now().strftime("%Y-%m-%d %H:%M"))
    print("cpu: %s; %d logical CPUs; threads: %d; load average %s" % (
        _cpu_model(), os.cpu_count() or 0, ARGS.threads,
        " ".join("%.1f" % v for v in os.getloadavg())))
    print("OpenBLAS: %s (unset here: %s)" % (_core.blas_config(), ", ".join(UNSET) or "none"))
    tfv = "not run (no --tf-python)"
    if ARGS.tf_python:
        tfv = subprocess.run([ARGS.tf_python, "-c", "import os; os.environ['TF_CPP_MIN_LOG_LEVEL']"
                              "='3'; import tensorflow as t, tf_keras as k; print('TensorFlow', "
                              "t.__version__, 'tf-keras', k.__version__)"],
                             capture_output=True, text=True).stdout.strip()
    print("mixprec %s; %s" % (tf.__version__, tfv))
    print("fastest of %d steps after 3 warm-up steps (fit: fastest batch of one epoch of %d "
          "batches, its logs read back), fastest of %d interleaved rounds per framework; ratios "
          "within this run\n" % (ARGS.steps, max(ARGS.steps, 8), max(ARGS.rounds, 1)))
    rows = []
    def fastest(a, b):
        return b if a is None else {k: min(a[k], b[k]) for k in a}
    for units, layers, batch, policy in TRACING_MODELS:
        batch = batch or ARGS.batch
        m = t = None
        for _ in range(max(ARGS.rounds, 1)):  # interleaved: both see the same load
            m = fastest(m, tracing_rows(units, layers, batch, policy, ARGS.steps))
            if ARGS.tf_python:
                t = fastest(t, tf_rows(units, layers, batch, policy))
        rows.append(("%dx%d" % (layers, units), batch, policy, m, t))

    def cell(r, k, fmt="%.2f"):
        return fmt % r[k] if r else "-"

    def ratio(a, b):
        return "%.2f" % (a / b) if a and b else "-"
    print("CPU time per step of the custom loop (process CPU time, all threads: the work, "
          "whatever the load; TensorFlow's pool threads spin a while when idle)")
    print("| model | batch | policy | mixprec eager | mixprec traced | TF eager | TF tf.function |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for name, batch, policy, m, t in rows:
        print("| %s | %d | %s | %.2f | %.2f | %s | %s |" % (
            name, batch, policy, m["cpu_eager"], m["cpu_traced"], cell(t, "cpu_eager"),
            cell(t, "cpu_traced")))
    print()
    print("Custom loop (`mixprec.function` / `tf.function` over the guide's train step), ms per step")
    print("| model | batch | policy | mixprec eager | mixprec traced | traced / eager speed-up "
          "| TF eager | TF tf.function | TF tf.function / mixprec traced | tracing ms mixprec "
          "(CPU ms) | tracing ms TF (CPU ms) |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, batch, policy, m, t in rows:
        print("| %s | %d | %s | %.2f | %.2f | %s | %s | %s | %s | %.1f (%.1f) | %s |" % (
            name, batch, policy, m["loop_eager"], m["loop_traced"],
            ratio(m["loop_eager"], m["loop_traced"]), cell(t, "loop_eager"),
            cell(t, "loop_traced"), ratio(t and t["loop_traced"], m["loop_traced"]),
            m["tracing"], m["tracing_cpu"],
            "%.0f (%.0f)" % (t["tracing"], t["tracing_cpu"]) if t else "-"))
    print()
    print("Keras fit (run_eagerly=True / default traced steps), ms per batch")
    print("| model | batch | policy | mixprec eager | mixprec traced | traced / eager speed-up "
          "| TF eager | TF traced | TF traced / mixprec traced |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for name, batch, policy, m, t in rows:
        print("| %s | %d | %s | %.2f | %.2f | %s | %s | %s | %s |" % (
            name, batch, policy, m["fit_eager"], m["fit_traced"],
            ratio(m["fit_eager"], m["fit_traced"]), cell(t, "fit_eager"), cell(t, "fit_traced"),
            ratio(t and t["fit_traced"], m["fit_traced"])))
    return 0


def main():
    if ARGS.tf_worker:
        units, layers, batch, policy = ARGS.tf_worker
        print(json.dumps(tracing_rows(int(units), int(layers), int(batch), policy, ARGS.steps)))
        return 0
    if ARGS.tracing:
        return tracing_main()
    rng = np.random.default_rng(0)
    sizes = [784, ARGS.hidden, ARGS.hidden, 10]
    x = rng.uniform(0.01, 1.0, (ARGS.batch, 784)).astype(np.float32)
    y = rng.integers(0, 10, ARGS.batch).astype(np.int64)
    init = _init(rng, sizes)

    t_np, l_np = _median_ms(numpy_step(x, y, init), ARGS.steps)
    t32, l32 = _median_ms(mixprec_step(x, y, init, "float32"), ARGS.steps)
    t16, l16 = _median_ms(mixprec_step(x, y, init, "float16"), ARGS.steps)
    disp = dispatch_us()

    print("Training step (CPU): MLP %s, batch %d, RMSprop, dynamic loss scaling" % (
        "-".join(map(str, sizes)), ARGS.batch))
    print("date: %s" % datetime.datetime.now().strftime("%Y-%m-%d %H:%M"))
    print("cpu: %s; %d logical CPUs; threads: %d (mixprec's pool: %d; NumPy's OpenBLAS: "
          "OPENBLAS_NUM_THREADS=%s)" % (_cpu_model(), os.cpu_count() or 0, ARGS.threads,
                                        _core.get_num_threads(), os.environ["OPENBLAS_NUM_THREADS"]))
    print("mixprec %s (casts: %s), NumPy %s, Python %s" % (
        tf.__version__, _core.cast_isa(), np.__version__, platform.python_version()))
    print("median of %d steps after 3 warm-up steps\n" % ARGS.steps)
    print("| implementation | step (ms) | vs NumPy | loss after %d steps |" % (ARGS.steps + 3))
    print("|---|---:|---:|---:|")
    print("| NumPy float32, by hand | %.1f | 1.00 | %.4f |" % (t_np, l_np))
    print("| mixprec, float32 compute | %.1f | %.2f | %.4f |" % (t32, t32 / t_np, l32))
    print("| mixprec, float16 compute (float32 master weights) | %.1f | %.2f | %.4f |" % (
        t16, t16 / t_np, l16))
    print()
    print("| dispatch of one op (`x + y`, 4 elements, from Python) | µs |")
    print("|---|---:|")
    for k, v in disp.items():
        print("| %s | %.2f |" % (k, v))
    return 0


if __name__ == "__main__":
    sys.exit(main())
