"""Records tf-keras 2.21's optimizer numbers for tests/keras/optimizers/test_tf_values.py:
six apply_gradients steps per case, then the variables and every optimizer variable.
Run with TensorFlow 2.21 + tf-keras 2.21 (not part of the suite):
  TF_USE_LEGACY_KERAS=1 python tests/keras/golden/make_tf_optimizers.py
The cases must stay the test file's CASES."""
import os, sys, json
os.environ["TF_USE_LEGACY_KERAS"]="1"; os.environ["TF_CPP_MIN_LOG_LEVEL"]="3"
import numpy as np, tensorflow as tf
K = tf.keras.optimizers
def w0():
    return [np.array([0.5, -1.25, 2.0], np.float32), np.array([[0.1, -0.3], [0.7, 1.5]], np.float32)]
def grad(k, i, shape):
    n = int(np.prod(shape))
    return (np.sin(np.arange(n, dtype=np.float64) * 1.7 + k * 0.9 + i) * (1.0 + 0.5 * k)).astype(np.float32).reshape(shape)
def _excl(o):
    o.exclude_from_weight_decay(var_names=['w1'])
    return o
CASES = {
 "adagrad": lambda: K.Adagrad(learning_rate=0.1),
 "adagrad_wd": lambda: K.Adagrad(learning_rate=0.1, initial_accumulator_value=0.5, epsilon=1e-3, weight_decay=0.05),
 "adadelta": lambda: K.Adadelta(learning_rate=1.0),
 "adadelta_rho": lambda: K.Adadelta(learning_rate=0.5, rho=0.8, epsilon=1e-4),
 "adamax": lambda: K.Adamax(learning_rate=0.05),
 "nadam": lambda: K.Nadam(learning_rate=0.05),
 "nadam_b": lambda: K.Nadam(learning_rate=0.02, beta_1=0.8, beta_2=0.95, epsilon=1e-4),
 "adamw": lambda: K.AdamW(learning_rate=0.05),
 "adamw_ams": lambda: K.AdamW(learning_rate=0.05, weight_decay=0.1, amsgrad=True),
 "adam_ams": lambda: K.Adam(learning_rate=0.05, amsgrad=True),
 "ftrl": lambda: K.Ftrl(learning_rate=0.1),
 "ftrl_reg": lambda: K.Ftrl(learning_rate=0.1, learning_rate_power=-0.7, l1_regularization_strength=0.01, l2_regularization_strength=0.02, l2_shrinkage_regularization_strength=0.03, beta=0.5),
 "lion": lambda: K.Lion(learning_rate=0.01),
 "lion_wd": lambda: K.Lion(learning_rate=0.01, beta_1=0.5, beta_2=0.9, weight_decay=0.2),
 "sgd_wd": lambda: K.SGD(learning_rate=0.1, momentum=0.9, weight_decay=0.01),
 "adam_wd_clip": lambda: K.Adam(learning_rate=0.05, weight_decay=0.1, global_clipnorm=1.0),
 "nadam_sched": lambda: K.Nadam(learning_rate=K.schedules.ExponentialDecay(0.05, 2, 0.5)),
 "adamw_sched": lambda: K.AdamW(learning_rate=K.schedules.ExponentialDecay(0.05, 2, 0.5), weight_decay=0.3),
 "adamw_excl": lambda: _excl(K.AdamW(learning_rate=0.05, weight_decay=0.3)),
 "lion_clipvalue": lambda: K.Lion(learning_rate=0.01, clipvalue=0.5),
 "legacy_sgd": lambda: K.legacy.SGD(learning_rate=0.1, momentum=0.9, decay=0.01),
 "legacy_adam": lambda: K.legacy.Adam(learning_rate=0.05, decay=0.01, amsgrad=True),
 "legacy_rmsprop": lambda: K.legacy.RMSprop(learning_rate=0.01, momentum=0.5, centered=True),
 "legacy_adagrad": lambda: K.legacy.Adagrad(learning_rate=0.1, decay=0.05),
 "legacy_adadelta": lambda: K.legacy.Adadelta(learning_rate=1.0),
 "legacy_adamax": lambda: K.legacy.Adamax(learning_rate=0.05),
 "legacy_nadam": lambda: K.legacy.Nadam(learning_rate=0.05),
 "legacy_nadam_sd": lambda: K.legacy.Nadam(learning_rate=0.05, schedule_decay=0.5),
 "legacy_ftrl": lambda: K.legacy.Ftrl(learning_rate=0.1, l1_regularization_strength=0.01, l2_shrinkage_regularization_strength=0.03, beta=0.5),
}

out = {}
STEPS = 6
for name, mk in CASES.items():
    opt = mk()
    vs = [tf.Variable(a, name="w%d" % i) for i, a in enumerate(w0())]
    for k in range(STEPS):
        opt.apply_gradients([(tf.constant(grad(k, i, v.shape)), v) for i, v in enumerate(vs)])
    ov = opt.variables() if callable(opt.variables) else opt.variables
    out[name] = {"weights": [v.numpy().tolist() for v in vs],
                 "variables": [(v.name, [float(x) for x in np.ravel(v.numpy())]) for v in ov]}
json.dump(out, open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "optimizers_tf_2_21.json"), "w"), indent=0)
for n, r in out.items():
    print(n, [x[0] for x in r["variables"]])
