"""Convolutional networks on this CPU: one training step (forward + backward) of seed 004's
CNN and of a ResNet-style block, mixprec against TensorFlow (when a TensorFlow interpreter
is given) under float32 / bfloat16 / float16 compute, in one run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/cnn.py [--tf-python PATH]

  CNN    Conv2D(32, 3, relu), MaxPool, Conv2D(64, 3, relu), MaxPool, Flatten, Dense(64),
         Dense(10) on 28x28x1 images, batch 64 (seed 004's model), sparse cross-entropy
  keras  the same model as Keras layers (Conv2D/Dense with activation='relu'), under the
         dtype policy float32 / mixed_bfloat16 / mixed_float16
  block  3x3 convolution 64 -> 64 channels on 56x56, batch 32, batch normalization
         (batch statistics in float32), ReLU

The step is written once against TensorFlow's API (tf.nn, tf.Variable, tf.GradientTape) and
run by each framework in its own process: variables are float32 and cast to the compute
dtype, the loss and the normalization statistics are float32 (the mixed precision recipe).
TensorFlow runs it eagerly and inside tf.function. PyTorch is not compared (not installed
here). Each framework runs --repeat times per row, alternating, and keeps its best median
(these shared machines' load changes 2-4x between minutes). OMP_WAIT_POLICY for oneDNN's OpenMP threads can be set with --omp-wait (see
docs/architecture.md for the measured policy).
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _common import machine, median_time, print_table  # noqa: E402

DTYPES = ("float32", "bfloat16", "float16")


def cnn_setup(tf, np, batch, size):
    rng = np.random.default_rng(0)
    s1 = size - 2
    s2 = (s1 // 2) - 2
    flat = (s2 // 2) ** 2 * 64
    shapes = [(3, 3, 1, 32), (32,), (3, 3, 32, 64), (64,), (flat, 64), (64,), (64, 10), (10,)]
    params = [tf.Variable((rng.standard_normal(s) * (0.1 if len(s) > 1 else 0.0))
                          .astype("float32")) for s in shapes]
    x = tf.constant(rng.random((batch, size, size, 1)).astype("float32"))
    y = tf.constant(rng.integers(0, 10, batch).astype("int64"))
    return params, x, y


def cnn_step(tf, params, x, y, dt):
    with tf.GradientTape() as tape:
        w = [tf.cast(p, dt) for p in params]
        h = tf.nn.relu(tf.nn.conv2d(tf.cast(x, dt), w[0], 1, "VALID") + w[1])
        h = tf.nn.max_pool2d(h, 2, 2, "VALID")
        h = tf.nn.relu(tf.nn.conv2d(h, w[2], 1, "VALID") + w[3])
        h = tf.nn.max_pool2d(h, 2, 2, "VALID")
        h = tf.reshape(h, [x.shape[0], -1])
        h = tf.nn.relu(tf.matmul(h, w[4]) + w[5])
        logits = tf.cast(tf.matmul(h, w[6]) + w[7], "float32")
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    return tape.gradient(loss, params)


def keras_setup(keras, tf, np, batch, size, dt):
    """Seed 004's model as Keras layers under the dtype policy of dt (TensorFlow's remapper
    fuses Conv2D/Dense + bias + ReLU in tf.function; mixprec's layers call its fused ops)."""
    policy = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}[dt]
    keras.mixed_precision.set_global_policy(policy)
    layers = keras.layers
    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.Input((size, size, 1)), layers.Conv2D(32, 3, activation="relu"),
        layers.MaxPooling2D(), layers.Conv2D(64, 3, activation="relu"), layers.MaxPooling2D(),
        layers.Flatten(), layers.Dense(64, activation="relu"), layers.Dense(10)])
    rng = np.random.default_rng(0)
    x = tf.constant(rng.random((batch, size, size, 1)).astype("float32"))
    y = tf.constant(rng.integers(0, 10, batch).astype("int64"))
    return model, keras.losses.SparseCategoricalCrossentropy(from_logits=True), x, y


def keras_step(tf, model, loss_fn, x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, tf.cast(model(x, training=True), "float32"))
    return tape.gradient(loss, model.trainable_variables)


def block_setup(tf, np, batch, size):
    rng = np.random.default_rng(1)
    params = [tf.Variable((rng.standard_normal((3, 3, 64, 64)) * 0.05).astype("float32")),
              tf.Variable(np.ones(64, "float32")), tf.Variable(np.zeros(64, "float32"))]
    x = tf.constant(rng.standard_normal((batch, size, size, 64)).astype("float32"))
    dy = tf.constant(rng.standard_normal((batch, size, size, 64)).astype("float32"))
    return params, x, dy


def block_step(tf, params, x, dy, dt):
    xc, dyc = tf.cast(x, dt), tf.cast(dy, dt)
    with tf.GradientTape() as tape:
        tape.watch(xc)
        h = tf.nn.conv2d(xc, tf.cast(params[0], dt), 1, "SAME")
        mean, var = tf.nn.moments(tf.cast(h, "float32"), [0, 1, 2])
        h = tf.nn.batch_normalization(h, mean, var, params[2], params[1], 1e-3)
        out = tf.nn.relu(h)
    return tape.gradient(out, [xc] + params, output_gradients=dyc)


def child(framework, which, dt, args):
    import numpy as np

    if framework == "mixprec":
        import mixprec as tf
        from mixprec import keras
    else:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # tf-keras 2.21, as the seeds
        import tensorflow as tf
        import tf_keras as keras
    if which == "keras":
        model, loss_fn, x, y = keras_setup(keras, tf, np, args.batch, args.size, dt)
        step = lambda: keras_step(tf, model, loss_fn, x, y)  # noqa: E731
        res = {"eager": median_time(step, args.steps, warmup=1)}
        res["function"] = median_time(tf.function(step), args.steps, warmup=2)
        print(json.dumps(res))
        return
    if which == "cnn":
        params, x, y = cnn_setup(tf, np, args.batch, args.size)
        step = lambda: cnn_step(tf, params, x, y, dt)  # noqa: E731
    else:
        params, x, y = block_setup(tf, np, args.block_batch, args.block_size)
        step = lambda: block_step(tf, params, x, y, dt)  # noqa: E731
    res = {"eager": median_time(step, args.steps, warmup=1)}
    # both frameworks also run the step inside their tf.function (mixprec: traced and
    # replayed in C, docs/function.md): the like-for-like comparison
    fn = tf.function(lambda: cnn_step(tf, params, x, y, dt) if which == "cnn"
                     else block_step(tf, params, x, y, dt))
    res["function"] = median_time(fn, args.steps, warmup=2)
    print(json.dumps(res))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tf-python", default=None,
                    help="a Python interpreter with tensorflow installed (the peer)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--size", type=int, default=28)
    ap.add_argument("--block-batch", type=int, default=32)
    ap.add_argument("--block-size", type=int, default=56)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--dtypes", nargs="+", default=list(DTYPES))
    ap.add_argument("--omp-wait", default=None, help="OMP_WAIT_POLICY for the children")
    ap.add_argument("--repeat", type=int, default=2,
                    help="alternating runs per framework and row; the best median is kept "
                         "(the shared machines' load changes between runs)")
    ap.add_argument("--child", nargs=3, default=None)
    args = ap.parse_args()
    if args.child:
        return child(*args.child, args)
    env = dict(os.environ)
    if args.omp_wait:
        env["OMP_WAIT_POLICY"] = args.omp_wait
    import mixprec
    from mixprec import _core

    print(machine())
    print("OpenBLAS:", _core.blas_config(), "| OPENBLAS_CORETYPE =",
          os.environ.get("OPENBLAS_CORETYPE"))
    print(_core.dnnl_info(), "| OMP_WAIT_POLICY =",
          env.get("OMP_WAIT_POLICY") or os.environ.get("OMP_WAIT_POLICY"), "| mixprec",
          mixprec.__version__)
    runners = [("mixprec", sys.executable)]
    if args.tf_python:
        runners.append(("tensorflow", args.tf_python))
    common = ["--batch", str(args.batch), "--size", str(args.size),
              "--block-batch", str(args.block_batch), "--block-size", str(args.block_size),
              "--steps", str(args.steps)]
    rows = []
    cnn_label = "seed 004 CNN, batch %d, %dx%d" % (args.batch, args.size, args.size)
    keras_label = "seed 004 CNN as Keras layers, batch %d" % args.batch
    for which, label in (("cnn", cnn_label), ("keras", keras_label),
                         ("block", "conv3x3 64ch + BN + ReLU, batch %d, %dx%d" % (
                             args.block_batch, args.block_size, args.block_size))):
        for dt in args.dtypes:
            got = {}
            for _ in range(max(1, args.repeat)):
                for name, py in runners:
                    cmd = [py, os.path.abspath(__file__), "--child", name, which, dt] + common
                    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
                    if out.returncode != 0:
                        got.setdefault(name, {"error": (out.stderr.strip().splitlines() or
                                                        ["?"])[-1][:60]})
                        continue
                    res = json.loads(out.stdout.strip().splitlines()[-1])
                    best = got.get(name, {})
                    got[name] = {k: min(v, best.get(k, v)) for k, v in res.items()}
            m = got["mixprec"]
            t = got.get("tensorflow", {})
            fmt = lambda r, k: (  # noqa: E731
                ("%.1f" % (1e3 * r[k])) if k in r else r.get("error", "n/a"))
            ratio = lambda k: ("%.2f" % (m[k] / t["function"])) \
                if k in m and "function" in t else "n/a"  # noqa: E731
            rows.append([label, dt, fmt(m, "eager"), fmt(m, "function"),
                         fmt(t, "eager") if t else "not installed",
                         fmt(t, "function") if t else "not installed",
                         ratio("eager"), ratio("function")])
    print_table("Training step, forward + backward (ms, median; lower is better). TensorFlow: "
                "%s; PyTorch: not installed" % ("given" if args.tf_python else "not installed"),
                ["model", "compute dtype", "mixprec eager", "mixprec tf.function", "TF eager",
                 "TF tf.function", "mixprec eager / TF tf.function",
                 "mixprec tf.function / TF tf.function"], rows)


if __name__ == "__main__":
    main()
