"""SavedModel directories written by mixprec, read by real TensorFlow 2.21 + tf-keras:
``tf.keras.models.load_model`` revives the Keras models from keras_metadata.pb and the
variables checkpoint (mixprec writes no traced graphs) and predicts what mixprec predicts;
``tf.saved_model.load`` restores a tf.Module's variables. Runs where TensorFlow is
importable, by this interpreter or the one in MIXPREC_TF_PYTHON."""

import json
import subprocess
import textwrap

import numpy as np

import mixprec as tf
from mixprec import keras
from mixprec.testing.tolerances import assert_close
from tf_peer import tf_python

TF_SCRIPT = textwrap.dedent("""
    import json, os, sys
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import warnings
    warnings.simplefilter("ignore")
    import numpy as np
    import tensorflow as tf
    import tf_keras as keras
    d = sys.argv[1]
    data = np.load(os.path.join(d, "x.npz"))
    out = {}
    for name in ("seq", "cnn", "mixed"):
        m = keras.models.load_model(os.path.join(d, name))
        out[name] = {"pred": m.predict(data[name], verbose=0).tolist(),
                     "optimizer": type(m.optimizer).__name__ if m.optimizer else None,
                     "policies": [l.dtype_policy.name for l in m.layers]}
    m = keras.models.load_model(os.path.join(d, "seq"))
    m.fit(data["seq"], np.ones((5, 3), np.float32), epochs=1, verbose=0)
    out["seq_trains"] = bool(np.isfinite(m.predict(data["seq"], verbose=0)).all())
    k = keras.models.load_model(os.path.join(d, "tfsave"))  # metadata in the object graph
    out["tfsave"] = k.predict(data["seq"], verbose=0).tolist()
    mod = tf.saved_model.load(os.path.join(d, "mod"))
    out["mod"] = {"w": mod.w.numpy().tolist(), "v": float(mod.sub.v.numpy())}
    print("RESULT" + json.dumps(out))
""")


def _models():
    rng = np.random.default_rng(3)
    xs = {"seq": rng.standard_normal((5, 4)).astype(np.float32),
          "cnn": rng.standard_normal((3, 6, 6, 2)).astype(np.float32),
          "mixed": rng.standard_normal((5, 4)).astype(np.float32)}
    seq = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                            keras.layers.BatchNormalization(), keras.layers.Dense(3)])
    seq.compile(keras.optimizers.Adam(1e-2), "mse", metrics=["mae"])
    seq.fit(xs["seq"], np.ones((5, 3), np.float32), epochs=2, verbose=0)
    i = keras.Input((6, 6, 2), name="image")
    h = keras.layers.Conv2D(3, 3, padding="same", name="conv")(i)
    h = keras.layers.BatchNormalization(name="bn")(h)
    h = keras.layers.ReLU()(h)
    h = keras.layers.GlobalAveragePooling2D()(h)
    cnn = keras.Model(i, keras.layers.Dense(2, activation="softmax", name="head")(h))
    cnn.compile(keras.optimizers.SGD(0.1, momentum=0.9), "sparse_categorical_crossentropy",
                metrics=["accuracy"])
    cnn.fit(xs["cnn"], np.array([0, 1, 0]), epochs=2, verbose=0)
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        mixed = keras.Sequential([keras.Input((4,)), keras.layers.Dense(6, activation="relu"),
                                  keras.layers.Dense(2),
                                  keras.layers.Activation("linear", dtype="float32")])
        mixed.compile(keras.optimizers.Adam(1e-2), "mse")
        mixed.fit(xs["mixed"], np.zeros((5, 2), np.float32), epochs=2, verbose=0)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    return xs, {"seq": seq, "cnn": cnn, "mixed": mixed}


def test_mixprec_savedmodels_load_in_tensorflow(tmp_path):
    xs, models = _models()
    for name, m in models.items():
        m.save(str(tmp_path / name))
    mod = tf.Module()
    mod.w = tf.Variable(np.arange(4, dtype=np.float32).reshape(2, 2))
    mod.sub = tf.Module()
    mod.sub.v = tf.Variable(5.0)
    tf.saved_model.save(mod, str(tmp_path / "mod"))
    tf.saved_model.save(models["seq"], str(tmp_path / "tfsave"))
    np.savez(tmp_path / "x.npz", **xs)
    p = subprocess.run([tf_python(), "-c", TF_SCRIPT, str(tmp_path)], capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")][-1][6:])
    for name, dtype, kind in (("seq", "float32", "matmul"), ("cnn", "float32", "convolution"),
                              ("mixed", "float16", "matmul")):
        mine = models[name].predict(xs[name], verbose=0)
        assert_close(np.array(res[name]["pred"], np.float32), mine, dtype, kind, name)
    assert res["seq"]["optimizer"] == "Adam" and res["cnn"]["optimizer"] == "SGD"
    assert res["mixed"]["optimizer"] == "LossScaleOptimizerV3"
    assert res["mixed"]["policies"] == ["mixed_float16", "mixed_float16", "float32"]
    assert res["seq_trains"]
    assert_close(np.array(res["tfsave"], np.float32), models["seq"].predict(xs["seq"], verbose=0),
                 "float32", "matmul", "tf.saved_model.save")
    assert res["mod"] == {"w": [[0.0, 1.0], [2.0, 3.0]], "v": 5.0}
