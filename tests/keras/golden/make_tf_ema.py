"""Writes tf_ema.json: tf-keras 2.21 optimizers with use_ema (SGD with ema_overwrite_frequency,
Adam, RMSprop) on fixed gradients in a custom loop (weights per step, the averages, the
variable names, finalize_variable_values, the config) and a fit whose end applies the EMA.
For tests/keras/optimizers/test_ema.py; not run by the tests (it needs TensorFlow)."""
import os, json; os.environ["TF_USE_LEGACY_KERAS"]="1"
import numpy as np, tensorflow as tf, tf_keras as keras
out = {}
# custom loop: SGD with EMA and overwrite every 3 steps (tf-keras' doc example values)
for name, make in [("sgd", lambda: keras.optimizers.SGD(0.1, use_ema=True, ema_momentum=0.5, ema_overwrite_frequency=3)),
                   ("adam", lambda: keras.optimizers.Adam(0.05, use_ema=True, ema_momentum=0.9)),
                   ("rmsprop", lambda: keras.optimizers.RMSprop(0.01, use_ema=True))]:
    opt = make()
    v1 = tf.Variable([1.0, -2.0, 3.0]); v2 = tf.Variable([[0.5, 0.25]])
    vals = []
    for step in range(7):
        g1 = tf.constant([0.3, -0.1, 0.7]) * (step + 1); g2 = tf.constant([[-0.2, 0.4]])
        opt.apply_gradients([(g1, v1), (g2, v2)])
        vals.append([v1.numpy().tolist(), v2.numpy().tolist()])
    avg = [v.numpy().tolist() for v in opt.variables[1:3]]
    names = [v.name for v in opt.variables]
    opt.finalize_variable_values([v1, v2])
    out[name] = {"steps": vals, "averages": avg, "names": names,
                 "final": [v1.numpy().tolist(), v2.numpy().tolist()],
                 "config": json.loads(json.dumps(opt.get_config(), default=float))}
# fit with EMA: finalize at the end
keras.utils.set_random_seed(0)
m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, kernel_initializer="ones")])
m.compile(optimizer=keras.optimizers.SGD(0.1, use_ema=True, ema_momentum=0.8), loss="mse")
x = np.arange(24, dtype="float32").reshape(8, 3) / 10; y = np.ones((8, 2), "float32")
m.fit(x, y, batch_size=4, epochs=2, verbose=0, shuffle=False)
out["fit"] = [w.tolist() for w in m.get_weights()]
json.dump(out, open(os.path.join(os.path.dirname(__file__) or ".", "tf_ema.json"), "w"))
print(json.dumps(out["sgd"]["names"]), out["rmsprop"]["config"])
