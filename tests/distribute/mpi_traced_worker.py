"""Run by tests/distribute/test_mpi_traced.py under ``mpiexec -n 2``: the seed-004 style
distributed step (``strategy.run`` inside ``tf.function``) under MultiWorkerMirroredStrategy,
eagerly and traced, on this worker's half of each global batch; writes both runs' weights
and losses, the tracing counts and the warnings per rank."""

import json
import os
import sys
import warnings

import numpy as np

import mixprec as tf
from mixprec import keras

work = sys.argv[1]
data = np.load(os.path.join(work, "data.npz"))
x, y = data["x"], data["y"]
init = [data["w%d" % i] for i in range(4)]

strategy = tf.distribute.MultiWorkerMirroredStrategy()
rank = strategy.cluster_resolver.task_id
GLOBAL = 32
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(GLOBAL)
dist = strategy.experimental_distribute_dataset(ds)
loss_obj = keras.losses.SparseCategoricalCrossentropy(
    from_logits=True, reduction=keras.losses.Reduction.NONE)
report = {}


def run(kind, scaled, traced, bn=False):
    with strategy.scope():
        model = keras.Sequential([keras.layers.Dense(16, activation="relu", input_shape=(8,)),
                                  keras.layers.Dense(4)])
        model.set_weights(init)
        if bn:  # statistics summed over the workers (AllReduce ops on the tape)
            model = keras.Sequential([model, keras.layers.BatchNormalization(synchronized=True)])
        opt = keras.optimizers.SGD(0.1) if kind == "sgd" else keras.optimizers.Adam(0.01)
        if scaled:
            opt = keras.mixed_precision.LossScaleOptimizer(opt)
        opt.build(model.trainable_variables)
        accuracy = keras.metrics.SparseCategoricalAccuracy()

    def train_step(inputs):
        xb, yb = inputs
        with tf.GradientTape() as tape:
            pred = model(xb, training=True)
            loss = tf.nn.compute_average_loss(loss_obj(yb, pred), global_batch_size=GLOBAL)
            s = opt.get_scaled_loss(loss) if scaled else loss
        grads = tape.gradient(s, model.trainable_variables)
        if scaled:
            grads = opt.get_unscaled_gradients(grads)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        accuracy.update_state(yb, pred)
        return loss

    def distributed_train_step(batch):
        per_replica = strategy.run(train_step, args=(batch,))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    step = tf.function(distributed_train_step) if traced else distributed_train_step
    losses = []
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(2):
            for batch in dist:
                losses.append(step(batch).numpy())
    name = "%s_%d_%d" % (kind, scaled, traced) + ("_bn" if bn else "")
    graphs = [g for t in step._traces.values() for g in t.shapes.values()] if traced else []
    report[name] = {"warnings": [str(m.message) for m in w],
                    "count": step.experimental_get_tracing_count() if traced else 0,
                    "broke": traced and any(t.eager for t in step._traces.values()),
                    "all_reduces": [[n["op"] for n in g.nodes()].count("CollectiveReduceV2")
                                    for g in graphs],
                    "accuracy": float(accuracy.result())}
    np.savez(os.path.join(work, "%s_rank%d.npz" % (name, rank)),
             *[v.numpy() for v in model.weights], losses=np.array(losses))


for kind in ("sgd", "adam"):
    for scaled in (False, True):
        for traced in (False, True):
            run(kind, scaled, traced)
for traced in (False, True):
    run("sgd", False, traced, bn=True)
with open(os.path.join(work, "report%d.json" % rank), "w") as f:
    json.dump(report, f)
