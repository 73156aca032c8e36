"""Writes tf_adafactor.json: tf-keras 2.21's Adafactor on fixed gradients (a 3-D, a 2-D and a
1-D variable; defaults, a schedule, relative_step=False, weight decay, clip_threshold), the
weights after every step, the variables' names and values, the config, and a small fit.
For tests/keras/optimizers/test_adafactor.py; not run by the tests (it needs TensorFlow)."""

import json
import os

os.environ["TF_USE_LEGACY_KERAS"] = "1"

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

CASES = {
    "default": {},
    "lr_big_no_relative": {"learning_rate": 0.5, "relative_step": False},
    "schedule": {"learning_rate": {"class_name": "ExponentialDecay", "config": {
        "initial_learning_rate": 0.3, "decay_steps": 2, "decay_rate": 0.5}}},
    "decay_clip": {"learning_rate": 0.2, "weight_decay": 0.1, "clip_threshold": 0.5,
                   "beta_2_decay": -0.5, "epsilon_2": 0.01},
}


def make(case):
    kw = dict(CASES[case])
    if isinstance(kw.get("learning_rate"), dict):
        kw["learning_rate"] = keras.optimizers.schedules.deserialize(kw["learning_rate"])
    return keras.optimizers.Adafactor(**kw)


def start():
    rng = np.random.default_rng(3)
    return [rng.standard_normal((2, 3, 4)).astype("float32"),
            rng.standard_normal((5, 2)).astype("float32"),
            rng.standard_normal((3,)).astype("float32")]


def grads(step):
    rng = np.random.default_rng(100 + step)
    return [rng.standard_normal((2, 3, 4)).astype("float32"),
            rng.standard_normal((5, 2)).astype("float32") * 0.1,
            rng.standard_normal((3,)).astype("float32") * 3]


def main():
    out = {}
    for case in CASES:
        opt = make(case)
        vs = [tf.Variable(a, name="w%d" % i) for i, a in enumerate(start())]
        steps = []
        for s in range(5):
            opt.apply_gradients(zip([tf.constant(g) for g in grads(s)], vs))
            steps.append([v.numpy().tolist() for v in vs])
        out[case] = {"steps": steps, "names": [v.name for v in opt.variables],
                     "values": [np.asarray(v.numpy(), "float64").tolist() for v in opt.variables],
                     "config": json.loads(json.dumps(opt.get_config(), default=float))}
    keras.utils.set_random_seed(0)
    m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, kernel_initializer="ones")])
    m.compile(optimizer=keras.optimizers.Adafactor(0.1), loss="mse")
    x = np.arange(24, dtype="float32").reshape(8, 3) / 10
    m.fit(x, np.ones((8, 2), "float32"), batch_size=4, epochs=2, verbose=0, shuffle=False)
    out["fit"] = [w.tolist() for w in m.get_weights()]
    with open(os.path.join(HERE, "tf_adafactor.json"), "w") as f:
        json.dump(out, f)
    print(out["default"]["names"])


if __name__ == "__main__":
    main()
