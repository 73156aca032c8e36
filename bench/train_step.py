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
it creates variables, minus one replayed step).
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
    return p.parse_args()


ARGS = _args()
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "MIXPREC_NUM_THREADS"):
    os.environ[var] = str(ARGS.threads)

import datetime  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import mixprec as tf  # noqa: E402
from mixprec import _core  # noqa: E402

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
    from mixprec import keras
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


class _BatchTimer:
    """A callback timing each training batch (begin to end, the step's logs read back)."""

    def __init__(self):
        from mixprec import keras
        self.times = []
        timer = self

        class CB(keras.callbacks.Callback):
            def on_train_batch_begin(self, batch, logs=None):
                timer.t0 = time.perf_counter()

            def on_train_batch_end(self, batch, logs=None):
                timer.times.append(time.perf_counter() - timer.t0)
        self.cb = CB()

    def __getattr__(self, name):
        return getattr(self.__dict__["cb"], name)


def tracing_rows(units, layers, batch, policy, steps):
    """(loop eager ms, loop traced ms, fit eager ms, fit traced ms, tracing ms)."""
    from mixprec import keras
    rng = np.random.default_rng(0)
    x = tf.constant(rng.uniform(0.01, 1.0, (batch, 784)).astype(np.float32))
    y = tf.constant(rng.integers(0, 10, batch).astype(np.int64))
    out = []
    trace_ms = None
    for traced in (False, True):
        model = _keras_model(units, layers, policy)
        opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.RMSprop())
        loss_fn = keras.losses.SparseCategoricalCrossentropy()
        step = _guide_step(model, opt, loss_fn)
        if traced:
            step = tf.function(step)
            t0 = time.perf_counter()
            step(x, y)  # the traced call (runs once for real while recording)
            trace_ms = (time.perf_counter() - t0) * 1e3
        ms = _min_ms(lambda: float(step(x, y)), steps)
        out.append(ms)
        if traced:  # the traced call runs the step for real: tracing is what it adds
            trace_ms -= ms
    n = batch * max(steps, 8)
    xs = np.asarray(x.numpy()).repeat(max(steps, 8), axis=0)[:n]
    ys = np.asarray(y.numpy()).repeat(max(steps, 8), axis=0)[:n]
    for eager in (True, False):
        model = _keras_model(units, layers, policy)
        model.compile(keras.optimizers.RMSprop(), "sparse_categorical_crossentropy",
                      run_eagerly=eager)
        model.fit(xs[:batch * 2], ys[:batch * 2], batch_size=batch, epochs=1, verbose=0)
        timer = _BatchTimer()
        model.fit(xs, ys, batch_size=batch, epochs=1, verbose=0, shuffle=False,
                  callbacks=[timer.cb])
        out.append(min(timer.times) * 1e3)
    keras.mixed_precision.set_global_policy("float32")
    return out + [trace_ms]


def tracing_main():
    print("Eager vs traced steps (CPU): mixprec.function custom loop and Keras fit")
    print("date: %s" % datetime.datetime.now().strftime("%Y-%m-%d %H:%M"))
    print("cpu: %s; %d logical CPUs; threads: %d" % (_cpu_model(), os.cpu_count() or 0,
                                                      ARGS.threads))
    print("fastest of %d steps after 3 warm-up steps (fit: fastest batch of one epoch, its "
          "logs read back)\n" % ARGS.steps)
    print("| model | batch | policy | loop eager ms | loop traced ms | speed-up | fit eager ms "
          "| fit traced ms | speed-up | tracing ms |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for units, layers, batch, policy in ((64, 2, ARGS.batch, "mixed_float16"),
                                         (256, 3, 32, "float32"), (256, 3, 32, "mixed_float16")):
        le, lt, fe, ft, tr = tracing_rows(units, layers, batch, policy, ARGS.steps)
        print("| %dx%d | %d | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f |" % (
            layers, units, batch, policy, le, lt, le / lt, fe, ft, fe / ft, tr))
    return 0


def main():
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
