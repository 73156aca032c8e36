"""mixprec -> TensorFlow: real TensorFlow 2.21 (tf-keras) restores the checkpoints mixprec
writes, to identical values. Runs where ``tensorflow`` is importable, by this interpreter
or by the one named in MIXPREC_TF_PYTHON (e.g. a venv with tensorflow-cpu and tf-keras);
skipped otherwise."""

import json
import os
import subprocess
import textwrap

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.testing.tolerances import assert_close
from tf_peer import tf_python




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
    elif job.get("sgd"):
        opt = keras.optimizers.SGD(0.1)
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
    exe = tf_python()
    p = subprocess.run([exe, "-c", SCRIPT, json.dumps(job)], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")][-1]
    return json.loads(line[len("RESULT"):])


def _train(mixed, sgd=False):
    model = keras.Sequential([keras.layers.Dense(8, activation="relu", input_shape=(4,)),
                              keras.layers.Dense(3, dtype="float32")])
    if mixed:
        opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.1, momentum=0.9))
    elif sgd:
        opt = keras.optimizers.SGD(0.1)
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


def _compare(model, opt, got, mixed, sgd=False):
    for w, g in zip(model.weights, got["model"]):
        np.testing.assert_array_equal(w.numpy(), np.asarray(g, w.numpy().dtype))
    inner = opt.inner_optimizer if mixed else opt
    mine = inner.variables()
    if sgd:  # tf-keras' SGD keeps zero momentum slots mixprec's does not have
        mine = mine + [tf.zeros_like(w) for w in model.trainable_variables]
    assert len(mine) == len(got["opt"])
    for v, g in zip(mine, got["opt"]):
        np.testing.assert_array_equal(v.numpy(), np.asarray(g, v.numpy().dtype))
    if mixed:
        assert got["scale"] == float(opt.loss_scale.numpy())
        assert got["good"] == int(opt.dynamic_counter.numpy())


@pytest.mark.parametrize("mixed", [False, True], ids=["adam", "lso_sgd_mixed"])
def test_tensorflow_restores_mixprec_checkpoint(tmp_path, mixed):
    tf_python()
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
    tf_python()
    model, opt = _train(False)
    model.compile(optimizer=opt, loss="mse")
    model.save_weights(str(tmp_path / "w"))
    model.save_weights(str(tmp_path / "w"))  # an overwrite (data in the -of-00002 shard)
    got = _run_tf({"kind": "weights", "path": str(tmp_path / "w"), "mixed": False})
    _compare(model, opt, got, False)


def test_momentum_free_sgd_both_ways(tmp_path):
    """tf-keras' SGD has zero ``m`` slots even with momentum 0: mixprec writes them (zeros)
    so TensorFlow's assert_consumed passes, and takes TensorFlow's without complaint."""
    tf_python()
    model, opt = _train(False, sgd=True)
    path = tf.train.Checkpoint(model=model, optimizer=opt).save(str(tmp_path / "s"))
    got = _run_tf({"kind": "checkpoint", "path": path, "mixed": False, "sgd": True})
    _compare(model, opt, got, False, sgd=True)


UPDATE_SCRIPT = textwrap.dedent("""
    import json, os, sys
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np
    import tensorflow as tf
    import tf_keras as keras
    job = json.loads(sys.argv[1])
    w0 = np.frombuffer(bytes.fromhex(job["w"]), np.float32)
    grads = [np.frombuffer(bytes.fromhex(g), np.float32) for g in job["g"]]
    v = tf.Variable(w0)
    opt = getattr(keras.optimizers, job["cls"])(**job["kw"])
    for g in grads:
        opt.apply_gradients([(tf.constant(g), v)])
    print("RESULT" + json.dumps([v.numpy().tobytes().hex()]
                                + [s.numpy().tobytes().hex() for s in opt.variables[1:]]))
""")

UPDATES = [("Adam", {}), ("Adam", {"learning_rate": 0.01, "beta_2": 0.95, "amsgrad": True}),
           ("SGD", {"learning_rate": 0.1}), ("SGD", {"learning_rate": 0.1, "momentum": 0.9}),
           ("SGD", {"learning_rate": 0.1, "momentum": 0.9, "nesterov": True}),
           ("RMSprop", {}), ("RMSprop", {"momentum": 0.5}),
           ("RMSprop", {"centered": True, "rho": 0.8}),
           ("Adagrad", {"learning_rate": 0.1}), ("Adadelta", {"learning_rate": 1.0}),
           ("Adamax", {"learning_rate": 0.01}), ("Nadam", {"learning_rate": 0.01}),
           ("AdamW", {"learning_rate": 0.01, "weight_decay": 0.1}),
           ("AdamW", {"learning_rate": 0.01, "amsgrad": True}),
           ("Ftrl", {"learning_rate": 0.1}),
           ("Ftrl", {"learning_rate": 0.1, "learning_rate_power": -0.6,
                     "l1_regularization_strength": 0.01, "l2_regularization_strength": 0.1,
                     "l2_shrinkage_regularization_strength": 0.05, "beta": 0.2}),
           ("Lion", {"learning_rate": 0.01}), ("Lion", {"weight_decay": 0.5}),
           ("SGD", {"learning_rate": 0.1, "momentum": 0.9, "weight_decay": 0.01})]
# within the optimizer tolerance rather than bit for bit: RMSprop (see the docstring) and
# Ftrl (TensorFlow's float32 pow against mixprec's double pow rounded once)
NOT_BITWISE = {"RMSprop", "Ftrl"}


@pytest.mark.parametrize("cls,kw", UPDATES, ids=["%s%s" % (c, sorted(k)) for c, k in UPDATES])
def test_update_rules_are_tensorflows_bit_for_bit(cls, kw):
    """The same float32 gradients from the same weights: tf-keras 2.21 and mixprec end with
    the same bits in the variable and in every slot (tf-keras' slot order); RMSprop (epsilon
    inside the root, as tf-keras 2.21) within the optimizer tolerance, since TensorFlow
    multiplies by Eigen's rsqrt where mixprec divides by a correctly rounded root."""
    exe = tf_python()
    rng = np.random.RandomState(5)
    w0 = rng.standard_normal(64).astype(np.float32)
    grads = [(rng.standard_normal(64) * 10.0 ** rng.randint(-3, 2, 64)).astype(np.float32)
             for _ in range(4)]
    job = {"cls": cls, "kw": kw, "w": w0.tobytes().hex(), "g": [g.tobytes().hex() for g in grads]}
    p = subprocess.run([exe, "-c", UPDATE_SCRIPT, json.dumps(job)], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    want = json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")][-1][6:])
    v = tf.Variable(w0)
    opt = getattr(keras.optimizers, cls)(**kw)
    for g in grads:
        opt.apply_gradients([(tf.constant(g), v)])
    from mixprec.train import _checkpoint, _trackable

    slots = _trackable._optimizer_children(opt)[0][1].items[1:]  # tf-keras' _variables
    mine = [v.numpy()] + [_checkpoint._leaf_value(s) for s in slots]
    got = [np.frombuffer(bytes.fromhex(h), np.float32) for h in want]
    assert len(mine) == len(got)
    if cls == "SGD" and not kw.get("momentum"):
        # tf-keras' momentum-free SGD leaves the last increment (-lr*g) in its m slot,
        # which no update reads; mixprec has no slot and writes zeros
        mine, got = mine[:1], got[:1]
    for a, b in zip(mine, got):
        if cls in NOT_BITWISE:  # TF multiplies by Eigen's rsqrt: an ulp here and there
            assert_close(a, b.astype(np.float64), "float32", "optimizer")
        else:
            np.testing.assert_array_equal(a, b)


CNN_SCRIPT = textwrap.dedent("""
    import importlib.util, json, os, sys
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np
    import tensorflow as tf
    import tf_keras as keras
    spec = importlib.util.spec_from_file_location("make_fixtures", sys.argv[2])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    model, opt = mod.cnn_objects(keras, tf, train=False)
    status = tf.train.Checkpoint(optimizer=opt, model=model).restore(sys.argv[1])
    model.build((None, 10, 10, 1))
    opt.build(model.trainable_variables)
    status.assert_consumed()
    print("RESULT" + json.dumps([v.numpy().tobytes().hex()
                                 for v in model.weights + opt.variables]))
""")


def test_tensorflow_restores_mixprec_cnn_checkpoint(tmp_path):
    """Seed 004's kind of model (Conv2D, pooling, BatchNormalization, Dense) + Adam."""
    exe = tf_python()
    fixtures = os.path.join(os.path.dirname(__file__), "fixtures", "make_fixtures.py")
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_fixtures", fixtures)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    model, opt = mod.cnn_objects(keras, tf)
    path = tf.train.Checkpoint(optimizer=opt, model=model).save(str(tmp_path / "ckpt"))
    p = subprocess.run([exe, "-c", CNN_SCRIPT, path, fixtures], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")][-1][6:])
    mine = [v.numpy() for v in model.weights + opt.variables()]
    assert len(mine) == len(got)
    for a, h in zip(mine, got):
        assert a.tobytes().hex() == h
