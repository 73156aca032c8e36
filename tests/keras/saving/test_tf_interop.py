"""Model files between mixprec and real tf-keras 2.21, both ways: the .keras file (a
mixed_float16 Sequential with BatchNormalization, a functional model with a shared layer,
a nested model and operators on KerasTensors), the legacy whole-model .h5, save_weights' .h5 and .weights.h5. Runs
where TensorFlow is importable, by this interpreter or the one in MIXPREC_TF_PYTHON."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from mixprec import keras
from mixprec.testing.tolerances import assert_close
from tf_peer import tf_python

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # --import-mode=importlib
from interop_models import (  # noqa: E402
    build_models, config_models, iterations, predictions, train)

pytest.importorskip("h5py")
L = keras.layers




TF_SCRIPT = textwrap.dedent("""
    import json, os, sys
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import warnings
    warnings.simplefilter("ignore")
    import numpy as np
    import tf_keras as keras
    job = json.loads(sys.argv[1])
    sys.path.insert(0, job["helpers"])
    from interop_models import build_models, config_models, iterations, predictions, train
    d = job["dir"]
    out = {}
    if job["mode"] == "configs":
        out = config_models(keras)
    elif job["mode"] == "write":
        seq, fun, plain = build_models(keras)
        train(seq, fun, plain)
        seq.save(d + "/seq.keras")
        fun.save(d + "/fun.keras")
        plain.save(d + "/plain.h5")
        plain.save_weights(d + "/plain_w.h5")
        plain.save_weights(d + "/plain.weights.h5")
        out["pred"] = predictions(seq, fun, plain)
        out["iters"] = [iterations(m) for m in (seq, fun, plain)]
        # TensorFlow functions on Keras tensors (TFOpLambda layers of tf.nn.relu, ...)
        import tensorflow as tf
        i = keras.Input((4,), name="i")
        y = tf.nn.relu(i)
        z = tf.concat([y, tf.reduce_mean(y, axis=-1, keepdims=True)], axis=-1)
        fns = keras.Model(i, [z, tf.cast(i, "float16")])
        fns.save(d + "/fns.keras")
        x = np.arange(8, dtype="float32").reshape(2, 4) - 3
        out["fns"] = [p.tolist() for p in fns.predict(x, verbose=0)]
    else:
        seq = keras.models.load_model(d + "/seq.keras")
        fun = keras.models.load_model(d + "/fun.keras")
        plain = keras.models.load_model(d + "/plain.h5")
        out["iters"] = [iterations(m) for m in (seq, fun, plain)]
        out["pred"] = predictions(seq, fun, plain)
        plain2 = build_models(keras)[2]
        plain2.load_weights(d + "/plain_w.h5")
        out["w_h5"] = [w.tolist() for w in plain2.get_weights()]
        plain2.load_weights(d + "/plain.weights.h5")
        out["w_v3"] = [w.tolist() for w in plain2.get_weights()]
        train(seq, fun, plain)  # loaded models train on
        out["iters_after"] = [iterations(m) for m in (seq, fun, plain)]
    print("RESULT" + json.dumps(out))
""")

def _run_tf(job):
    job["helpers"] = os.path.dirname(os.path.abspath(__file__))
    p = subprocess.run([tf_python(), "-c", TF_SCRIPT, json.dumps(job)], capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")][-1]
    return json.loads(line[len("RESULT"):])


def _compare(mine, theirs):
    assert_close(np.array(mine["seq"]), np.array(theirs["seq"]), "float16", "matmul",
                 "mixed_float16 Sequential")
    assert_close(np.array(mine["plain"]), np.array(theirs["plain"]), "float32", "matmul")
    for p, q in zip(mine["fun"], theirs["fun"]):
        assert_close(np.array(p), np.array(q), "float32", "matmul", "functional")


def test_tf_keras_files_load_in_mixprec(tmp_path):
    ref = _run_tf({"mode": "write", "dir": str(tmp_path)})
    seq = keras.models.load_model(tmp_path / "seq.keras")
    fun = keras.models.load_model(str(tmp_path / "fun.keras"))
    plain = keras.models.load_model(str(tmp_path / "plain.h5"))
    assert seq.layers[0].dtype_policy.name == "mixed_float16"
    assert [iterations(m) for m in (seq, fun, plain)] == ref["iters"] == [2, 1, 1]
    _compare(predictions(seq, fun, plain), ref["pred"])
    plain2 = build_models(keras)[2]
    plain2.load_weights(str(tmp_path / "plain_w.h5"))
    np.testing.assert_array_equal(plain2.get_weights()[0], plain.get_weights()[0])
    plain2 = build_models(keras)[2]
    plain2.load_weights(str(tmp_path / "plain.weights.h5"))
    np.testing.assert_array_equal(plain2.get_weights()[0], plain.get_weights()[0])
    train(seq, fun, plain)
    assert [iterations(m) for m in (seq, fun, plain)] == [4, 2, 2]
    fns = keras.models.load_model(tmp_path / "fns.keras")
    got = fns.predict(np.arange(8, dtype="float32").reshape(2, 4) - 3, verbose=0)
    assert got[1].dtype == np.float16
    for p, q in zip(got, ref["fns"]):
        np.testing.assert_array_equal(p, np.array(q, p.dtype))


def test_mixprec_files_load_in_tf_keras(tmp_path):
    seq, fun, plain = build_models(keras)
    train(seq, fun, plain)
    seq.save(tmp_path / "seq.keras")
    fun.save(str(tmp_path / "fun.keras"))
    plain.save(str(tmp_path / "plain.h5"))
    plain.save_weights(str(tmp_path / "plain_w.h5"))
    plain.save_weights(str(tmp_path / "plain.weights.h5"))
    res = _run_tf({"mode": "read", "dir": str(tmp_path)})
    assert res["iters"] == [iterations(m) for m in (seq, fun, plain)] == [2, 1, 1]
    _compare(res["pred"], predictions(seq, fun, plain))
    for w, mine in zip(res["w_h5"], plain.get_weights()):
        np.testing.assert_array_equal(np.array(w, np.float32), mine)
    for w, mine in zip(res["w_v3"], plain.get_weights()):
        np.testing.assert_array_equal(np.array(w, np.float32), mine)
    assert res["iters_after"] == [4, 2, 2]


def test_configs_equal_tf_keras():
    """serialize_keras_object(model), compile and build configs included, is what tf-keras
    2.21 writes for the same models: a CNN, a mixed_float16 Sequential with an implicit
    input, a functional model with a shared layer, a nested model and op layers."""
    theirs = _run_tf({"mode": "configs", "dir": ""})
    mine = config_models(keras)
    for name in theirs:
        assert mine[name] == theirs[name], name
