"""Run by tests/distribute/test_mpi.py under ``mpiexec -n 2``: one training step per
optimizer kind on this worker's half of a global batch; writes the weights per rank."""

import json
import os
import sys

import numpy as np

import mixprec as tf
from mixprec import keras

work = sys.argv[1]
data = np.load(os.path.join(work, "data.npz"))
x, y = data["x"], data["y"]
init = [data["w%d" % i] for i in range(4)]

strategy = tf.distribute.MultiWorkerMirroredStrategy()
rank = strategy.cluster_resolver.task_id
assert strategy.num_replicas_in_sync == 2
if os.environ.get("MIXPREC_EXPECT_NCCL") == "1":  # test_nccl_fake.py: the fake libnccl sums
    assert strategy.extended._nccl is not None, "the NCCL engine was not chosen"
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(64)
loss_obj = keras.losses.SparseCategoricalCrossentropy(
    from_logits=True, reduction=keras.losses.Reduction.NONE)
results = {}
for kind in ("sgd", "adam"):
    for scaled in (False, True):
        with strategy.scope():
            model = keras.Sequential([keras.layers.Dense(16, activation="relu", input_shape=(8,)),
                                      keras.layers.Dense(4)])
            model.set_weights(init)
            opt = keras.optimizers.SGD(0.1) if kind == "sgd" else keras.optimizers.Adam(0.01)
            if scaled:
                opt = keras.mixed_precision.LossScaleOptimizer(opt)

        def step(inputs):
            xb, yb = inputs
            with tf.GradientTape() as tape:
                loss = tf.nn.compute_average_loss(loss_obj(yb, model(xb, training=True)),
                                                  global_batch_size=64)
                s = opt.get_scaled_loss(loss) if scaled else loss
            grads = tape.gradient(s, model.trainable_variables)
            if scaled:
                grads = opt.get_unscaled_gradients(grads)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        losses = []
        for _ in range(3):
            for batch in strategy.experimental_distribute_dataset(ds):
                assert int(batch[0].shape[0]) == 32
                losses.append(float(strategy.reduce("SUM", strategy.run(step, args=(batch,)),
                                                    axis=None)))
        np.savez(os.path.join(work, "%s_%d_rank%d.npz" % (kind, scaled, rank)),
                 *[w.numpy() for w in model.weights], losses=np.array(losses))
# Model.fit / predict on 2 workers: each takes its half of every batch
with strategy.scope():
    fit_model = keras.Sequential([keras.layers.Dense(16, activation="relu", input_shape=(8,)),
                                  keras.layers.Dense(4, activation="softmax")])
    fit_model.set_weights(init)
    fit_model.compile(keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy",
                      ["accuracy"])
hist = fit_model.fit(x, y, batch_size=32, epochs=2, shuffle=False, verbose=0)
pred = fit_model.predict(x, batch_size=32, verbose=0)
np.savez(os.path.join(work, "fit_rank%d.npz" % rank), *[w.numpy() for w in fit_model.weights],
         loss=np.array(hist.history["loss"]), pred=pred)

# a NaN gradient on rank 1 only: gradients are summed before the finite check, so both
# workers skip the step and halve the loss scale
with strategy.scope():
    nan_model = keras.Sequential([keras.layers.Dense(4, input_shape=(8,))])
    nan_model.set_weights([init[0][:, :4], init[1][:4]])
    nan_opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.1))
scale_before = float(nan_opt.loss_scale)


def nan_step(xb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(nan_model(xb)) / 64.0
        if rank == 1:
            loss = loss * float("nan")
        scaled_loss = nan_opt.get_scaled_loss(loss)
    grads = nan_opt.get_unscaled_gradients(tape.gradient(scaled_loss,
                                                         nan_model.trainable_variables))
    nan_opt.apply_gradients(zip(grads, nan_model.trainable_variables))


strategy.run(nan_step, args=(tf.constant(x[rank * 32:(rank + 1) * 32]),))
nan_skipped = all(np.array_equal(w.numpy(), w0) for w, w0 in
                  zip(nan_model.weights, [init[0][:, :4], init[1][:4]]))
nan_halved = float(nan_opt.loss_scale) == scale_before / 2

with strategy.scope():
    metric = keras.metrics.Mean()
    accuracy = keras.metrics.SparseCategoricalAccuracy()
strategy.run(lambda: metric.update_state(tf.constant([1.0, 2.0]) * (rank + 1)))
accuracy.update_state(tf.constant([0, 1]), tf.constant([[0.9, 0.1], [0.8, 0.2]]) if rank == 0
                      else tf.constant([[0.9, 0.1], [0.2, 0.8]]))
with open(os.path.join(work, "done%d.json" % rank), "w") as f:
    json.dump({"rank": rank, "mean": float(metric.result()), "nan_skipped": nan_skipped,
               "nan_halved": nan_halved, "nan_iterations": int(nan_opt.iterations),
               "accuracy": float(accuracy.result())}, f)
