"""``tf.keras.callbacks.TensorBoard`` as tf-keras 2.21 writes it: event files under
``<log_dir>/train`` and ``<log_dir>/validation`` with ``epoch_<metric>`` scalars per epoch
(``epoch_learning_rate`` under a schedule, ``epoch_steps_per_second`` when asked),
``batch_<metric>`` per ``update_freq`` batches, ``evaluation_<metric>_vs_iterations`` after
each evaluation, weight histograms (and images with ``write_images``) every
``histogram_freq`` epochs and the model's config
(``write_graph``). Writing is mixprec.summary's; this holds the callback bookkeeping."""

import os
import time

from mixprec import summary
from mixprec.keras.callbacks import Callback

_UNSUPPORTED_KWARGS = ("write_grads", "embeddings_layer_names", "embeddings_data", "batch_size")


class TensorBoard(Callback):
    """Logs a training's metrics (and optionally weight histograms) for TensorBoard."""

    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True, write_images=False,
                 write_steps_per_second=False, update_freq="epoch", profile_batch=0,
                 embeddings_freq=0, embeddings_metadata=None, **kwargs):
        super().__init__()
        unknown = set(kwargs) - set(_UNSUPPORTED_KWARGS)
        if unknown:
            raise ValueError("Unrecognized arguments in `TensorBoard` Callback: %s"
                             % sorted(unknown))
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = histogram_freq
        self.write_graph = write_graph
        self.write_images = write_images
        self.write_steps_per_second = write_steps_per_second
        self.update_freq = 1 if update_freq == "batch" else update_freq
        self.profile_batch = profile_batch
        self.embeddings_freq = embeddings_freq
        self.embeddings_metadata = embeddings_metadata
        self._writers = {}
        self._train_batches = 0

    def set_model(self, model):
        self.model = model
        self._train_dir = os.path.join(self.log_dir, "train")
        self._val_dir = os.path.join(self.log_dir, "validation")
        self._writers = {}
        if self.write_graph and (getattr(model, "_is_graph_network", False) or
                                 type(model).__name__ == "Sequential"):
            try:
                with self._writer("train").as_default():
                    summary.keras_model("keras", model, step=0)
            except (NotImplementedError, TypeError, ValueError):
                pass  # a model without a JSON config: tf-keras skips it too

    def _writer(self, which):
        if which not in self._writers:
            self._writers[which] = summary.create_file_writer(
                self._train_dir if which == "train" else self._val_dir)
        return self._writers[which]

    def _iterations(self):
        opt = getattr(self.model, "optimizer", None)
        it = getattr(opt, "iterations", None)
        return int(it.numpy()) if it is not None else self._train_batches

    def on_train_begin(self, logs=None):
        self._train_batches = 0

    def on_train_end(self, logs=None):
        for w in self._writers.values():
            w.close()

    def _wants_batch_logs(self, mode):
        return mode == "train" and (self.update_freq != "epoch" or self.write_steps_per_second)

    def on_train_batch_begin(self, batch, logs=None):
        self._batch_start = time.time()

    def on_train_batch_end(self, batch, logs=None):
        self._train_batches += 1
        if self.update_freq == "epoch":
            return
        step = self._iterations()
        if step % self.update_freq:
            return
        with self._writer("train").as_default():
            if self.write_steps_per_second:
                summary.scalar("batch_steps_per_second",
                               1.0 / max(time.time() - self._batch_start, 1e-9), step=step)
            for name, value in (logs or {}).items():
                summary.scalar("batch_" + name, float(value), step=step)

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_start = time.time()
        self._epoch_start_iter = self._iterations()

    def on_epoch_end(self, epoch, logs=None):
        self._log_epoch_metrics(epoch, logs)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            with self._writer("train").as_default():
                for layer in self.model.layers:
                    for w in layer.weights:
                        summary.histogram(w.name.replace(":", "_") + "/histogram", w,
                                          step=epoch)
                        if self.write_images:
                            self._log_weight_as_image(w, w.name.replace(":", "_") + "/image",
                                                      epoch)
            self._writer("train").flush()

    def _log_weight_as_image(self, weight, name, epoch):
        """tf-keras' picture of a weight: a bias as a 1-pixel-high strip, a Dense kernel
        as one image (the long side across), each output kernel of a 2-D convolution as one
        image; other ranks are skipped."""
        import numpy as np
        from mixprec.keras.backend import image_data_format
        w = np.squeeze(np.asarray(weight.numpy()))
        if w.ndim == 1:
            w = w.reshape(1, w.shape[0], 1, 1)
        elif w.ndim == 2:
            if w.shape[0] > w.shape[1]:
                w = w.T
            w = w.reshape(1, w.shape[0], w.shape[1], 1)
        elif w.ndim == 3:
            if image_data_format() == "channels_last":
                w = np.transpose(w, (2, 0, 1))
            w = w.reshape(w.shape[0], w.shape[1], w.shape[2], 1)
        if w.ndim == 4 and w.shape[-1] in (1, 3, 4):
            summary.image(name, w.astype(np.float32), step=epoch)

    def on_test_end(self, logs=None):
        opt = getattr(self.model, "optimizer", None)
        if opt is None or not hasattr(opt, "iterations") or not logs:
            return
        with self._writer("val").as_default():
            for name, value in logs.items():
                summary.scalar("evaluation_" + name + "_vs_iterations", float(value),
                               step=int(opt.iterations.numpy()))

    def _log_epoch_metrics(self, epoch, logs):
        if not logs:
            return
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        val = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        opt = getattr(self.model, "optimizer", None)
        hyper = getattr(opt, "_hyper", None) if opt is not None else None
        schedule = hyper.get("learning_rate") if isinstance(hyper, dict) else None
        from mixprec.keras.optimizers import schedules

        if isinstance(schedule, schedules.LearningRateSchedule):
            train["learning_rate"] = float(schedule(opt.iterations).numpy())
        if self.write_steps_per_second:
            spent = max(time.time() - self._epoch_start, 1e-9)
            train["steps_per_second"] = (self._iterations() - self._epoch_start_iter) / spent
        if train:
            with self._writer("train").as_default():
                for name, value in train.items():
                    summary.scalar("epoch_" + name, float(value), step=epoch)
        if val:
            with self._writer("val").as_default():
                for name, value in val.items():
                    summary.scalar("epoch_" + name, float(value), step=epoch)
