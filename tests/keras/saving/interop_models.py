"""The models of test_tf_interop.py, built the same way by mixprec and by tf-keras: every
function takes the side's ``keras`` module (this file is imported by both interpreters)."""

import numpy as np


def build_models(keras):
    L = keras.layers
    keras.mixed_precision.set_global_policy("mixed_float16")
    seq = keras.Sequential([keras.Input((4,)), L.Dense(8, activation="relu"),
                            L.BatchNormalization(), L.Dense(3),
                            L.Activation("softmax", dtype="float32")])
    keras.mixed_precision.set_global_policy("float32")
    seq.compile(keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy",
                metrics=["accuracy"])
    a, b = keras.Input((4,), name="a"), keras.Input((4,), name="b")
    shared = L.Dense(4, activation="tanh", name="shared")
    inner = keras.Sequential([L.Dense(3, name="in_d")], name="inner")
    out = 2.0 * inner(shared(a)) - b[:, 0:3]  # op layers (TFOpLambda, SlicingOpLambda)
    fun = keras.Model([a, b], [out, shared(b)], name="fun")
    fun.compile(keras.optimizers.SGD(0.1, momentum=0.9), ["mse", "mse"])
    plain = keras.Sequential([keras.Input((4,)), L.Dense(5, activation="relu", name="p1"),
                              L.Dense(2, name="p2")])
    plain.compile(keras.optimizers.RMSprop(0.01), "mse")
    return seq, fun, plain


def data():
    rng = np.random.default_rng(7)
    x = rng.random((16, 4), dtype=np.float32)
    return x, np.arange(16) % 3, [x, x[::-1].copy()], [np.ones((16, 3), "float32"),
                                                       np.zeros((16, 4), "float32")]


def train(seq, fun, plain):
    x, y, fx, fy = data()
    seq.fit(x, y, epochs=2, verbose=0, shuffle=False)
    fun.fit(fx, fy, epochs=1, verbose=0, shuffle=False)
    plain.fit(x, np.ones((16, 2), "float32"), verbose=0, shuffle=False)


def predictions(seq, fun, plain):
    x, y, fx, fy = data()
    out = {"seq": seq.predict(x, verbose=0).tolist(),
           "plain": plain.predict(x, verbose=0).tolist()}
    out["fun"] = [p.tolist() for p in fun.predict(fx, verbose=0)]
    return out


def iterations(model):
    opt = model.optimizer
    opt = getattr(opt, "inner_optimizer", opt)
    return int(opt.iterations.numpy())


def config_models(keras):
    """serialize_keras_object of models whose every name is fixed (clear_session resets
    the op layers' counters), as JSON: equal on both sides."""
    import json

    keras.backend.clear_session()
    L = keras.layers
    out = {}
    a = keras.Input((8, 8, 1), name="img")
    x = L.Conv2D(4, 3, activation="relu", kernel_regularizer=keras.regularizers.L2(0.01),
                 name="c1")(a)
    x = L.BatchNormalization(name="bn")(x)
    x = L.MaxPooling2D(name="mp")(x)
    x = L.Flatten(name="fl")(x)
    x = L.Dropout(0.5, name="do")(x)
    o = L.Dense(3, activation="softmax", name="out")(x)
    cnn = keras.Model(a, o, name="cnn")
    cnn.compile(keras.optimizers.Adam(0.001), "sparse_categorical_crossentropy",
                metrics=["accuracy"])
    out["cnn"] = keras.saving.serialize_keras_object(cnn)
    keras.mixed_precision.set_global_policy("mixed_float16")
    seq = keras.Sequential([L.Dense(4, input_shape=(3,), name="d1"), L.ReLU(name="r"),
                            L.Dense(2, name="d2"),
                            L.Activation("softmax", dtype="float32", name="sm")], name="s")
    keras.mixed_precision.set_global_policy("float32")
    out["mixed_seq"] = keras.saving.serialize_keras_object(seq)
    i, j = keras.Input((4,), name="i"), keras.Input((4,), name="j")
    shared = L.Dense(4, name="shared")
    inner = keras.Sequential([L.Dense(3, name="in_d")], name="inner")
    y = 2.0 * inner(shared(i)) - j[:, 0:3]
    fun = keras.Model([i, j], [y, shared(j)], name="fun")
    fun.compile(keras.optimizers.SGD(0.1, momentum=0.9), ["mse", "mae"])
    out["fun"] = keras.saving.serialize_keras_object(fun)
    return json.loads(json.dumps(out, default=list))
