"""Seed 004's traced step and epoch as one script for both frameworks (argv[1]: "mixprec"
or "tensorflow"): prints a JSON of what the tutorial's user sees: tracing counts, when the
Python of each replica ran, the losses and the weights after SGD steps from fixed weights.
Run by tests/distribute/test_traced_run_tf.py."""

import json
import sys

import numpy as np

if sys.argv[1] == "tensorflow":
    import tensorflow as tf
else:
    import mixprec as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
strategy = tf.distribute.MirroredStrategy()
GB = 16
rng = np.random.default_rng(7)
x = rng.random((48, 8, 8, 1)).astype(np.float32)
y = rng.integers(0, 10, 48).astype(np.int64)
dds = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices((x, y)).batch(GB))
facts = {"inner": [], "outer": 0}
with strategy.scope():
    model = tf.keras.Sequential([
        tf.keras.layers.Conv2D(4, 3, activation="relu", input_shape=(8, 8, 1)),
        tf.keras.layers.MaxPooling2D(), tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(10)])
    model.set_weights([rng.standard_normal(w.shape).astype(np.float32) * 0.3
                       for w in model.get_weights()])
    loss_object = tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction=tf.keras.losses.Reduction.NONE)
    optimizer = tf.keras.optimizers.SGD(0.1)
    optimizer.build(model.trainable_variables)


def train_step(inputs):
    facts["inner"].append("replica")
    images, labels = inputs
    with tf.GradientTape() as tape:
        loss = tf.nn.compute_average_loss(loss_object(labels, model(images, training=True)),
                                          global_batch_size=GB)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss


@tf.function
def distributed_train_step(dataset_inputs):
    facts["outer"] += 1
    per_replica_losses = strategy.run(train_step, args=(dataset_inputs,))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)


losses = []
for _ in range(2):
    for batch in dds:
        losses.append(float(distributed_train_step(batch)))
facts["step_tracing_count"] = distributed_train_step.experimental_get_tracing_count()
facts["losses"] = losses
facts["weights"] = [w.tolist() for w in model.get_weights()]
step_facts = dict(facts)
facts = {"inner": [], "outer": 0}


@tf.function
def distributed_train_epoch(dataset):
    facts["outer"] += 1
    total_loss = 0.0
    num_batches = 0
    for batch in dataset:
        total_loss += strategy.reduce(tf.distribute.ReduceOp.SUM,
                                      strategy.run(train_step, args=(batch,)), axis=None)
        num_batches += 1
    return total_loss / tf.cast(num_batches, dtype=tf.float32)


epoch_losses = [float(distributed_train_epoch(dds)) for _ in range(2)]


@tf.function
def replica_ids():
    return strategy.run(lambda: tf.distribute.get_replica_context().replica_id_in_sync_group)


ids = replica_ids()
print("FACTS " + json.dumps({
    "step": step_facts, "epoch_outer": facts["outer"], "epoch_inner": facts["inner"],
    "epoch_tracing_count": distributed_train_epoch.experimental_get_tracing_count(),
    "epoch_losses": epoch_losses, "ids_type": type(ids).__name__,
    "ids": [int(t) for t in strategy.experimental_local_results(ids)]}))
