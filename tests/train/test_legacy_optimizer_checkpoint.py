"""Checkpoints of ``keras.optimizers.legacy`` optimizers in OptimizerV2's layout (the
reference's §6.3): 'iter' and the hyperparameter variables as the optimizer's children, the
slots as its node's slot_variables under '<variable>/.OPTIMIZER_SLOT/<optimizer>/<slot>';
mixprec restores them (slots made later included), and real TensorFlow 2.21 restores
mixprec's and the other way round where it is importable (MIXPREC_TF_PYTHON)."""

import json
import subprocess
import textwrap

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from tf_peer import tf_python

L = keras.optimizers.legacy


def _model():
    return keras.Sequential([keras.layers.Dense(8, activation="relu", input_shape=(4,)),
                             keras.layers.Dense(3)])


def _trained(name, kw):
    m = _model()
    opt = getattr(L, name)(0.01, **kw)
    m.compile(opt, "mse")
    x = np.random.RandomState(0).rand(16, 4).astype(np.float32)
    m.fit(x, x[:, :3], verbose=0, epochs=2)
    return m, opt


def test_legacy_adam_keys_are_optimizer_v2s(tmp_path):
    m, opt = _trained("Adam", {})
    path = tf.train.Checkpoint(model=m, optimizer=opt).save(str(tmp_path / "c"))
    keys = [k for k, _ in tf.train.list_variables(path) if k != "_CHECKPOINTABLE_OBJECT_GRAPH"]
    slots = ["model/layer_with_weights-%d/%s/.OPTIMIZER_SLOT/optimizer/%s/.ATTRIBUTES/"
             "VARIABLE_VALUE" % (i, w, s) for i in (0, 1) for w in ("bias", "kernel")
             for s in ("m", "v")]
    weights = ["model/layer_with_weights-%d/%s/.ATTRIBUTES/VARIABLE_VALUE" % (i, w)
               for i in (0, 1) for w in ("bias", "kernel")]
    hypers = ["optimizer/%s/.ATTRIBUTES/VARIABLE_VALUE" % h
              for h in ("beta_1", "beta_2", "decay", "iter", "learning_rate")]
    assert sorted(keys) == sorted(slots + weights + hypers
                                  + ["save_counter/.ATTRIBUTES/VARIABLE_VALUE"])
    reader = tf.train.load_checkpoint(path)
    assert reader.get_tensor("optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE") == 2
    np.testing.assert_array_equal(
        reader.get_tensor("model/layer_with_weights-0/kernel/.OPTIMIZER_SLOT/optimizer/m/"
                          ".ATTRIBUTES/VARIABLE_VALUE"), opt.get_slot(m.weights[0], "m").numpy())


@pytest.mark.parametrize("name,kw", [("Adam", {}), ("Nadam", {}), ("Ftrl", {}),
                                     ("RMSprop", {"momentum": 0.5, "centered": True}),
                                     ("Adagrad", {}), ("SGD", {"momentum": 0.9})])
@pytest.mark.parametrize("build_first", [False, True])
def test_mixprec_restores_its_legacy_checkpoints(tmp_path, name, kw, build_first):
    m, opt = _trained(name, kw)
    path = tf.train.Checkpoint(model=m, optimizer=opt).save(str(tmp_path / "c"))
    m2 = _model()
    opt2 = getattr(L, name)(0.5, **kw)
    if build_first:
        opt2.build(m2.trainable_variables)
    status = tf.train.Checkpoint(model=m2, optimizer=opt2).restore(path)
    opt2.build(m2.trainable_variables)  # slots made after the restore take their values
    status.assert_consumed()
    assert float(opt2.learning_rate) == float(np.float32(0.01))
    assert opt2.get_config()["decay"] == opt.get_config()["decay"]
    assert len(opt.variables()) == len(opt2.variables())
    for a, b in zip(opt.variables(), opt2.variables()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


TF_SCRIPT = textwrap.dedent("""
    import json, os, sys
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np
    import tensorflow as tf
    import tf_keras as keras
    job = json.loads(sys.argv[1])
    model = keras.Sequential([keras.layers.Dense(8, activation="relu", input_shape=(4,)),
                              keras.layers.Dense(3)])
    opt = getattr(keras.optimizers.legacy, job["name"])(0.5, **job["kw"])
    if job["restore"]:
        opt._create_all_weights(model.trainable_variables)
        tf.train.Checkpoint(model=model, optimizer=opt).restore(job["path"]).assert_consumed()
    else:
        model.compile(opt, "mse")
        opt.learning_rate = 0.01
        x = np.random.RandomState(0).rand(16, 4).astype(np.float32)
        model.fit(x, x[:, :3], verbose=0, epochs=2)
        tf.train.Checkpoint(model=model, optimizer=opt).save(job["path"])
    print("RESULT" + json.dumps([w.numpy().tolist() for w in model.weights + opt.weights]))
""")


def _tf(job):
    p = subprocess.run([tf_python(), "-c", TF_SCRIPT, json.dumps(job)], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")][-1][6:])


@pytest.mark.parametrize("name,kw", [("Adam", {}), ("Nadam", {}),
                                     ("RMSprop", {"momentum": 0.5, "centered": True})])
def test_tensorflow_and_mixprec_restore_each_others_legacy_checkpoints(tmp_path, name, kw):
    tf_python()
    m, opt = _trained(name, kw)
    path = tf.train.Checkpoint(model=m, optimizer=opt).save(str(tmp_path / "mine"))
    got = _tf({"name": name, "kw": kw, "restore": True, "path": path})
    mine = [w.numpy() for w in m.weights + opt.variables()]
    assert len(got) == len(mine)
    for a, b in zip(mine, got):
        np.testing.assert_array_equal(a, np.asarray(b, a.dtype))
    theirs = _tf({"name": name, "kw": kw, "restore": False, "path": str(tmp_path / "tf")})
    m2 = _model()
    opt2 = getattr(L, name)(0.5, **kw)
    status = tf.train.Checkpoint(model=m2, optimizer=opt2).restore(str(tmp_path / "tf-1"))
    opt2.build(m2.trainable_variables)
    status.assert_consumed()
    mine = [w.numpy() for w in m2.weights + opt2.variables()]
    for a, b in zip(mine, theirs):
        np.testing.assert_array_equal(a, np.asarray(b, a.dtype))
