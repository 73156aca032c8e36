"""Writes the golden SavedModel directories of tests/keras/saving/test_saved_model_golden.py
with real TensorFlow 2.21 + tf-keras (run with /tmp/tfenv/bin/python; never imported by the
tests): a Sequential Dense model, a functional CNN with BatchNormalization and a
mixed_float16 model, each trained a step so optimizer state exists, plus TF's predictions."""

import os
import shutil
import sys

os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow import keras  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "savedmodel")


def inputs():
    rng = np.random.default_rng(7)
    return {"seq": rng.standard_normal((5, 4)).astype(np.float32),
            "cnn": rng.standard_normal((3, 6, 6, 2)).astype(np.float32),
            "mixed": rng.standard_normal((5, 4)).astype(np.float32)}


def main():
    tf.random.set_seed(1)
    x = inputs()
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    preds, iters = {}, {}

    seq = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                            keras.layers.Dense(3)])
    seq.compile(keras.optimizers.Adam(1e-2), "mse", metrics=["mae"])
    seq.fit(x["seq"], np.ones((5, 3), np.float32), epochs=2, verbose=0)
    seq.save(os.path.join(OUT, "seq"))

    i = keras.Input((6, 6, 2), name="image")
    h = keras.layers.Conv2D(3, 3, padding="same", name="conv")(i)
    h = keras.layers.BatchNormalization(name="bn")(h)
    h = keras.layers.ReLU()(h)
    h = keras.layers.GlobalAveragePooling2D()(h)
    o = keras.layers.Dense(2, activation="softmax", name="head")(h)
    cnn = keras.Model(i, o, name="cnn")
    cnn.compile(keras.optimizers.SGD(0.1, momentum=0.9), "sparse_categorical_crossentropy",
                metrics=["accuracy"])
    cnn.fit(x["cnn"], np.array([0, 1, 0]), epochs=2, verbose=0)
    cnn.save(os.path.join(OUT, "cnn"), save_traces=False)

    keras.mixed_precision.set_global_policy("mixed_float16")
    mixed = keras.Sequential([keras.Input((4,)), keras.layers.Dense(6, activation="relu"),
                              keras.layers.Dense(2),
                              keras.layers.Activation("linear", dtype="float32")])
    mixed.compile(keras.optimizers.Adam(1e-2), "mse")
    mixed.fit(x["mixed"], np.zeros((5, 2), np.float32), epochs=2, verbose=0)
    mixed.save(os.path.join(OUT, "mixed"), save_traces=False)
    keras.mixed_precision.set_global_policy("float32")

    for name, m in (("seq", seq), ("cnn", cnn), ("mixed", mixed)):
        preds[name] = m.predict(x[name], verbose=0)
        iters[name] = int(m.optimizer.iterations.numpy())
    np.savez(os.path.join(OUT, "expected.npz"),
             **{"x_" + k: v for k, v in x.items()},
             **{"pred_" + k: v for k, v in preds.items()},
             **{"iters_" + k: np.int64(v) for k, v in iters.items()},
             **{"vars_cnn_%d" % j: v for j, v in enumerate(cnn.get_weights())})
    print("wrote", OUT, tf.__version__, file=sys.stderr)


if __name__ == "__main__":
    main()
