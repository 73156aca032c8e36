"""mixprec -> TensorFlow: real TensorFlow 2.21 (tf-keras) restores the checkpoints mixprec
writes, to identical values. Runs where ``tensorflow`` is importable, by this interpreter
or by the one named in MIXPREC_TF_PYTHON (e.g. a venv with tensorflow-cpu and tf-keras);
skipped otherwise."""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras


def _tf_python():
    if importlib.util.find_spec("tensorflow") is not None:
        return sys.executable
    exe = os.environ.get("MIXPREC_TF_PYTHON")
    if exe and os.path.exists(exe):
        return exe
    pytest.skip("TensorFlow is not importable (set MIXPREC_TF_PYTHON to a Python that has it)")


SCRIPT = textwrap.dedent("""
    import json, os, sys
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np
    import tensorflow as tf
    import tf_keras as keras
    job = json.loads(sys.argv[1])
    out = {}
    if job["mixed"]:
        keras.mixed_precision.set_global_policy("mixed_float16")
    model = keras.Sequential([keras.layers.Dense(8, activation="relu", input_shape=(4,)),
                              keras.layers.Dense(3, dtype="float32")])
    if job["mixed"]:
        opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.1, momentum=0.9))
    else:
        opt = keras.optimizers.Adam()
    if job["kind"] == "weights":
        model.compile(optimizer=opt, loss="mse")
        status = model.load_weights(job["path"])
        opt.build(model.trainable_variables)
    else:
        opt.build(model.trainable_variables)
        ckpt = tf.train.Checkpoint(model=model, optimizer=opt)
        status = ckpt.restore(job["path"])
        out["save_counter"] = int(ckpt.save_counter.numpy())
    status.assert_consumed()
    out["model"] = [w.numpy().tolist() for w in model.weights]
    inner = opt.inner_optimizer if job["mixed"] else opt
    out["opt"] = [v.numpy().tolist() for v in inner.variables]
    if job["mixed"]:
        out["scale"] = float(opt.loss_scale.numpy())
        out["good"] = int(opt.dynamic_counter.numpy())
    print("RESULT" + json.dumps(out))
""")


def _run_tf(job):
    exe = _tf_python()
    p = subprocess.run([exe, "-c", SCRIPT, json.dumps(job)], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")][-1]
    return json.loads(line[len("RESULT"):])


def _train(mixed):
    model = keras.Sequential([keras.layers.Dense(8, activation="relu", input_shape=(4,)),
                              keras.layers.Dense(3, dtype="float32")])
    if mixed:
        opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.1, momentum=0.9))
    else:
        opt = keras.optimizers.Adam()
    rng = np.random.RandomState(0)
    x, y = rng.rand(16, 4).astype("float32"), rng.rand(16, 3).astype("float32")
    for _ in range(3):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((tf.cast(model(x), tf.float32) - y) ** 2)
            if mixed:
                loss = opt.get_scaled_loss(loss)
        grads = tape.gradient(loss, model.trainable_variables)
        if mixed:
            grads = opt.get_unscaled_gradients(grads)
        opt.apply_gradients(zip(grads, model.trainable_variables))
    return model, opt


def _compare(model, opt, got, mixed):
    for w, g in zip(model.weights, got["model"]):
        np.testing.assert_array_equal(w.numpy(), np.asarray(g, w.numpy().dtype))
    inner = opt.inner_optimizer if mixed else opt
    mine = inner.variables()
    assert len(mine) == len(got["opt"])
    for v, g in zip(mine, got["opt"]):
        np.testing.assert_array_equal(v.numpy(), np.asarray(g, v.numpy().dtype))
    if mixed:
        assert got["scale"] == float(opt.loss_scale.numpy())
        assert got["good"] == int(opt.dynamic_counter.numpy())


@pytest.mark.parametrize("mixed", [False, True], ids=["adam", "lso_sgd_mixed"])
def test_tensorflow_restores_mixprec_checkpoint(tmp_path, mixed):
    _tf_python()
    if mixed:
        keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model, opt = _train(mixed)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    ckpt = tf.train.Checkpoint(model=model, optimizer=opt)
    ckpt.save(str(tmp_path / "ckpt"))
    path = ckpt.save(str(tmp_path / "ckpt"))
    got = _run_tf({"kind": "checkpoint", "path": path, "mixed": mixed})
    _compare(model, opt, got, mixed)
    assert got["save_counter"] == 2


def test_tensorflow_loads_mixprec_save_weights(tmp_path):
    _tf_python()
    model, opt = _train(False)
    model.compile(optimizer=opt, loss="mse")
    model.save_weights(str(tmp_path / "w"))
    model.save_weights(str(tmp_path / "w"))  # an overwrite (data in the -of-00002 shard)
    got = _run_tf({"kind": "weights", "path": str(tmp_path / "w"), "mixed": False})
    _compare(model, opt, got, False)
