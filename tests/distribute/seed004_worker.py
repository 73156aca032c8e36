"""Seed 004 as written (its CNN, MirroredStrategy, distributed datasets, strategy.run/reduce
in tf.function, metrics and a checkpoint created in the scope), on N logical CPUs and the
Fashion-MNIST subset shipped with mixprec; prints the accuracies and the restored model's
(restored without a strategy). Run by tests/distribute/test_seed004.py, one process per N;
with N = ``mpi`` under ``mpiexec -n 2``: MultiWorkerMirroredStrategy, one replica per
process (each writes its checkpoint in its own directory)."""

import os
import sys

import numpy as np

import mixprec as tf

mode, work = sys.argv[1], sys.argv[2]
tf.random.set_seed(0)
if mode != "mpi":
    replicas = int(mode)
    cpu = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(
        cpu[0], [tf.config.LogicalDeviceConfiguration()] * replicas)
(train_images, train_labels), (test_images, test_labels) = \
    tf.keras.datasets.fashion_mnist.load_embedded()
train_images = train_images[:1536, ..., None] / np.float32(255)
train_labels = train_labels[:1536]
test_images = test_images[..., None] / np.float32(255)

if mode == "mpi":
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    replicas = strategy.num_replicas_in_sync
    work = os.path.join(work, "rank%d" % strategy.cluster_resolver.task_id)
else:
    strategy = tf.distribute.MirroredStrategy()
assert strategy.num_replicas_in_sync == replicas
BUFFER_SIZE = len(train_images)
GLOBAL_BATCH_SIZE = 64
train_dataset = tf.data.Dataset.from_tensor_slices((train_images, train_labels)).shuffle(
    BUFFER_SIZE, seed=1).batch(GLOBAL_BATCH_SIZE)
test_dataset = tf.data.Dataset.from_tensor_slices((test_images, test_labels)).batch(
    GLOBAL_BATCH_SIZE)
train_dist_dataset = strategy.experimental_distribute_dataset(train_dataset)
test_dist_dataset = strategy.experimental_distribute_dataset(test_dataset)


def create_model():
    return tf.keras.Sequential([
        tf.keras.layers.Conv2D(32, 3, activation="relu"), tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Conv2D(64, 3, activation="relu"), tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(), tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10)])


checkpoint_prefix = os.path.join(work, "training_checkpoints", "ckpt")
with strategy.scope():
    loss_object = tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction=tf.keras.losses.Reduction.NONE)

    def compute_loss(labels, predictions, model_losses):
        loss = tf.nn.compute_average_loss(loss_object(labels, predictions))
        if model_losses:
            loss += tf.nn.scale_regularization_loss(tf.add_n(model_losses))
        return loss

    test_loss = tf.keras.metrics.Mean(name="test_loss")
    train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="train_accuracy")
    test_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="test_accuracy")
    model = create_model()
    optimizer = tf.keras.optimizers.Adam(learning_rate=0.001)
    checkpoint = tf.train.Checkpoint(optimizer=optimizer, model=model)


def train_step(inputs):
    images, labels = inputs
    with tf.GradientTape() as tape:
        predictions = model(images, training=True)
        loss = compute_loss(labels, predictions, model.losses)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    train_accuracy.update_state(labels, predictions)
    return loss


def test_step(inputs):
    images, labels = inputs
    predictions = model(images, training=False)
    test_loss.update_state(loss_object(labels, predictions))
    test_accuracy.update_state(labels, predictions)


@tf.function
def distributed_train_step(dataset_inputs):
    per_replica_losses = strategy.run(train_step, args=(dataset_inputs,))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)


@tf.function
def distributed_test_step(dataset_inputs):
    return strategy.run(test_step, args=(dataset_inputs,))


total_loss, num_batches = 0.0, 0
for x in train_dist_dataset:
    total_loss += distributed_train_step(x)
    num_batches += 1
for x in test_dist_dataset:
    distributed_test_step(x)
checkpoint.save(checkpoint_prefix)

new_model = create_model()
tf.train.Checkpoint(optimizer=tf.keras.optimizers.Adam(), model=new_model).restore(
    tf.train.latest_checkpoint(os.path.dirname(checkpoint_prefix)))
eval_accuracy = tf.keras.metrics.SparseCategoricalAccuracy()
for images, labels in test_dataset:
    eval_accuracy(labels, new_model(images, training=False))
print("TRACED %d %d" % (distributed_train_step.experimental_get_tracing_count(),
                        any(t.eager for t in distributed_train_step._traces.values())))
print("RESULT %.6f %.6f %.6f %.6f" % (float(total_loss / num_batches),
                                       float(train_accuracy.result()),
                                       float(test_accuracy.result()),
                                       float(eval_accuracy.result())))
