"""``tf.keras.callbacks``: Callback, History, ProgbarLogger, EarlyStopping, LambdaCallback,
ModelCheckpoint, LearningRateScheduler, TerminateOnNaN (ReduceLROnPlateau and CSVLogger
live in _epoch_callbacks.py); and TqdmCallback
(``tqdm.keras.TqdmCallback`` for mixprec models, tqdm being an optional dependency)."""

import warnings

import numpy as np

from mixprec.keras.utils.progbar import Progbar

__all__ = ["Callback", "CallbackList", "History", "ProgbarLogger", "EarlyStopping",
           "LambdaCallback", "ModelCheckpoint", "LearningRateScheduler", "TqdmCallback",
           "TerminateOnNaN", "ReduceLROnPlateau", "CSVLogger", "BackupAndRestore", "TensorBoard"]


class Callback:
    def __init__(self):
        self.model = None
        self.params = {}
        self.validation_data = None

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    def on_train_begin(self, logs=None): pass
    def on_train_end(self, logs=None): pass
    def on_epoch_begin(self, epoch, logs=None): pass
    def on_epoch_end(self, epoch, logs=None): pass
    def on_batch_begin(self, batch, logs=None): pass
    def on_batch_end(self, batch, logs=None): pass

    # as tf-keras: the train-batch hooks call the older on_batch_* names
    def on_train_batch_begin(self, batch, logs=None):
        self.on_batch_begin(batch, logs=logs)

    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs=logs)

    def on_test_begin(self, logs=None): pass
    def on_test_end(self, logs=None): pass
    def on_test_batch_begin(self, batch, logs=None): pass
    def on_test_batch_end(self, batch, logs=None): pass
    def on_predict_begin(self, logs=None): pass
    def on_predict_end(self, logs=None): pass
    def on_predict_batch_begin(self, batch, logs=None): pass
    def on_predict_batch_end(self, batch, logs=None): pass

    def _wants_batch_logs(self, mode):
        """Whether this callback reads the logs of every ``mode`` ('train'/'test') batch.
        NOTE: only then does fit read the step's metrics back to the host each step (on a
        GPU, a wait per step); the default asks whoever overrides the batch-end hook."""
        hooks = ["on_%s_batch_end" % mode] + (["on_batch_end"] if mode == "train" else [])
        # an override in the class, or a function set on the instance (LambdaCallback)
        return any(getattr(type(self), hook) is not getattr(Callback, hook) or hook in vars(self)
                   for hook in hooks)


class CallbackList:
    """Calls every callback's hook in order."""

    def wants_batch_logs(self, mode):
        return any(cb._wants_batch_logs(mode) for cb in self.callbacks)

    def __init__(self, callbacks=None, model=None, **params):
        self.callbacks = list(callbacks or [])
        for cb in self.callbacks:
            if model is not None:
                cb.set_model(model)
            cb.set_params(params)

    def __getattr__(self, hook):
        if not hook.startswith("on_"):
            raise AttributeError(hook)
        # NOTE: as tf-keras, every hook gets its logs positionally, an empty dict when there
        # are none (its CallbackList._process_logs): LambdaCallback(on_train_begin=lambda
        # logs: ...) is tf-keras' documented form
        arity = 2 if ("_batch_" in hook or hook.startswith("on_epoch_")) else 1

        def call(*args, **kwargs):
            if "logs" not in kwargs:
                if len(args) < arity:
                    args += (None,) * (arity - 1 - len(args)) + ({},)
                elif args[-1] is None and len(args) == arity:
                    args = args[:-1] + ({},)
            for cb in self.callbacks:
                getattr(cb, hook)(*args, **kwargs)
        return call


class History(Callback):
    """Records per-epoch logs: ``history.history['loss']``, ``['val_accuracy']`` …

    When the model trains with a LossScaleOptimizer, ``Model.fit`` also records every
    step in ``history.steps`` (a mixprec addition; ``mixprec.plot.plot_loss_scale`` draws
    it): ``'loss_scale'``, the scale the step's loss was multiplied by; ``'skipped'``,
    whether the step was skipped for an inf/NaN gradient (the scale then shrinks);
    ``'epoch'``, the epoch of the step. Without loss scaling ``steps`` stays empty."""

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []
        self._steps = {}
        self._pending = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def _record_step(self, epoch, loss_scale, applied):
        """``loss_scale``: a scalar tensor (a snapshot, where the scale lives); ``applied``:
        True or the step's bool flag on the device. Read when ``steps`` is first looked at
        after the step, so recording never waits for a GPU."""
        self._pending.append((epoch, loss_scale, applied))

    @property
    def steps(self):
        for epoch, scale, applied in self._pending:
            self._steps.setdefault("epoch", []).append(epoch)
            self._steps.setdefault("loss_scale", []).append(float(scale))
            self._steps.setdefault("skipped", []).append(not bool(applied))
        self._pending = []
        return self._steps

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)
        if self.model is not None:
            self.model.history = self


class ProgbarLogger(Callback):
    """Prints tf-keras' progress bar (verbose=1) or one line per epoch (verbose=2); prints
    'Epoch i/N' only when fitting for more than one epoch."""

    def __init__(self, count_mode="steps", stateful_metrics=None):
        super().__init__()
        self.stateful_metrics = set(stateful_metrics or ())
        self.progbar = None
        self.verbose = 1
        self.epochs = 1
        self.target = None
        self.seen = 0

    def set_params(self, params):
        super().set_params(params)
        self.verbose = params.get("verbose", 1)
        self.epochs = params.get("epochs", 1)
        self.target = params.get("steps")

    def _new_bar(self, target):
        self.seen = 0
        self.progbar = Progbar(target=target, verbose=self.verbose,
                               stateful_metrics=self.stateful_metrics, unit_name="step")

    def _final_target(self, target):
        # steps=None (a dataset of unknown length): the bar counts up ('3/Unknown') and
        # its final line shows the steps seen, as tf-keras; fit's later epochs know them
        if target is None:
            target = self.progbar.target = self.seen
        return target

    def _update(self, current, logs, finalize):
        # The model's metrics (loss included) are already running means over the epoch:
        # show them as they are, as tf-keras does, rather than averaging the averages.
        # Looked up at every update: compiled metrics exist only after the first step.
        if self.model is not None:
            self.progbar.stateful_metrics |= {m.name for m in getattr(self.model, "metrics",
                                                                      [])}
        self.progbar.update(current, list((logs or {}).items()), finalize=finalize)

    def on_epoch_begin(self, epoch, logs=None):
        if self.verbose and self.epochs > 1:
            print("Epoch %d/%d" % (epoch + 1, self.epochs))
        self._new_bar(self.target)

    def on_train_batch_end(self, batch, logs=None):
        self.seen = batch + 1
        if self.verbose == 1:
            self._update(batch + 1, logs, finalize=False)

    def _wants_batch_logs(self, mode):
        return self.verbose == 1 and (mode == "train" or self.params.get("_evaluating", False))

    def on_epoch_end(self, epoch, logs=None):
        self.target = self._final_target(self.target)
        self._update(self.target, logs, finalize=True)

    def on_test_begin(self, logs=None):
        if self.params.get("_evaluating"):
            self._new_bar(self.params.get("steps"))

    def on_test_batch_end(self, batch, logs=None):
        if self.params.get("_evaluating"):
            self.seen = batch + 1
            if self.verbose == 1:
                self._update(batch + 1, logs, finalize=False)

    def on_test_end(self, logs=None):
        if self.params.get("_evaluating"):
            self._update(self._final_target(self.params.get("steps")), logs, finalize=True)

    def on_predict_begin(self, logs=None):
        self._new_bar(self.params.get("steps"))

    def on_predict_batch_end(self, batch, logs=None):
        self.seen = batch + 1
        if self.verbose == 1:
            self.progbar.update(batch + 1, [], finalize=False)

    def on_predict_end(self, logs=None):
        self.progbar.update(self._final_target(self.params.get("steps")), [], finalize=True)


class EarlyStopping(Callback):
    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto",
                 baseline=None, restore_best_weights=False, start_from_epoch=0):
        super().__init__()
        self.monitor = monitor
        self.min_delta = abs(min_delta)
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.restore_best_weights = restore_best_weights
        self.start_from_epoch = start_from_epoch
        if mode == "auto":
            mode = "max" if ("acc" in monitor or monitor.startswith("fmeasure")) else "min"
        if mode not in ("min", "max"):
            raise ValueError("EarlyStopping mode %s is unknown" % mode)
        self._better = (lambda a, b: a < b - self.min_delta) if mode == "min" else \
            (lambda a, b: a > b + self.min_delta)
        self.stopped_epoch = 0

    def on_train_begin(self, logs=None):
        self.wait = 0
        self.stopped_epoch = 0
        self.best = np.inf if self._better(0, 1) else -np.inf
        self.best_weights = None
        self.best_epoch = 0

    def on_epoch_end(self, epoch, logs=None):
        current = (logs or {}).get(self.monitor)
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if self._better(current, self.best):
            self.best, self.best_epoch = current, epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._better(current, self.baseline):
                self.wait = 0
            return  # an improving epoch never stops training (tf-keras)
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            print("Epoch %d: early stopping" % (self.stopped_epoch + 1))


class TerminateOnNaN(Callback):
    """Stops training when a batch's loss is NaN or inf (tf-keras' message and timing: the
    epoch ends after that batch, then training)."""

    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None:
            loss = float(np.asarray(loss))
            if np.isnan(loss) or np.isinf(loss):
                print("Batch %d: Invalid loss, terminating training" % batch, flush=True)
                self.model.stop_training = True


class LambdaCallback(Callback):
    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_batch_begin=None,
                 on_batch_end=None, on_train_begin=None, on_train_end=None, **kwargs):
        super().__init__()
        for name, fn in (("on_epoch_begin", on_epoch_begin), ("on_epoch_end", on_epoch_end),
                         ("on_train_batch_begin", on_batch_begin),
                         ("on_train_batch_end", on_batch_end),
                         ("on_train_begin", on_train_begin), ("on_train_end", on_train_end)):
            if fn is not None:
                setattr(self, name, fn)
        for name, fn in kwargs.items():
            setattr(self, name, fn)


class ModelCheckpoint(Callback):
    """Saves the model's weights at the end of every epoch, or every ``save_freq`` batches
    (an int), always or only when ``monitor`` improves (``save_best_only``). ``filepath``
    may name ``{epoch}``, ``{batch}`` (with an int save_freq) and any logged metric.

    ``save_weights_only=False`` (tf-keras' default) saves the whole model with ``model.save``:
    a ``.keras`` or ``.h5`` file, or a SavedModel directory for another path, as tf-keras
    (docs/saving.md)."""

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False,
                 save_weights_only=False, mode="auto", save_freq="epoch", options=None,
                 initial_value_threshold=None, **kwargs):
        super().__init__()
        self.filepath = str(filepath)
        self.monitor = monitor
        self.verbose = verbose
        self.save_best_only = save_best_only
        if save_freq != "epoch" and (isinstance(save_freq, bool) or not isinstance(save_freq, int)
                                     or save_freq < 1):
            raise ValueError("Unrecognized save_freq: %r. Expected 'epoch' or a positive number "
                             "of batches" % (save_freq,))
        self.save_freq = save_freq
        self.save_weights_only = bool(save_weights_only)
        self._whole_model = not save_weights_only
        if mode not in ("auto", "min", "max"):
            warnings.warn("ModelCheckpoint mode %r is unknown, fallback to auto mode." % (mode,),
                          stacklevel=2)
            mode = "auto"
        if mode == "auto":
            mode = "max" if "acc" in monitor or monitor.startswith("fmeasure") else "min"
        self._better = (lambda a, b: a < b) if mode == "min" else (lambda a, b: a > b)
        self.best = np.inf if mode == "min" else -np.inf
        if initial_value_threshold is not None:
            self.best = float(initial_value_threshold)
        self._batches = 0
        self._epoch = 0

    def _wants_batch_logs(self, mode):
        return mode == "train" and self.save_freq != "epoch"

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.save_freq == "epoch":
            return
        self._batches += 1
        if self._batches % self.save_freq == 0:
            self._save(self._epoch, batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch, None, logs)

    def _save(self, epoch, batch, logs):
        logs = dict(logs or {})
        fields = dict(logs, epoch=epoch + 1)
        if batch is not None:
            fields["batch"] = batch + 1
        path = self.filepath.format(**fields)
        from mixprec.keras.utils.progbar import _write
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None:
                warnings.warn("Can save best model only with %s available, skipping."
                              % self.monitor, stacklevel=2)
                return
            if not self._better(float(current), self.best):
                if self.verbose > 0:
                    _write("\nEpoch %d: %s did not improve from %.5f\n"
                           % (epoch + 1, self.monitor, self.best))
                return
            if self.verbose > 0:
                _write("\nEpoch %d: %s improved from %.5f to %.5f, saving model to %s\n"
                       % (epoch + 1, self.monitor, self.best, float(current), path))
            self.best = float(current)
        elif self.verbose > 0:
            _write("\nEpoch %d: saving model to %s\n" % (epoch + 1, path))
        if self._whole_model:
            self.model.save(path, overwrite=True)
        else:
            self.model.save_weights(path)


class LearningRateScheduler(Callback):
    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule = schedule
        self.verbose = verbose

    def on_epoch_begin(self, epoch, logs=None):
        opt = self.model.optimizer
        lr = float(opt.learning_rate._peek()) if hasattr(opt.learning_rate, "_peek") else None
        try:
            new = self.schedule(epoch, lr)
        except TypeError:
            new = self.schedule(epoch)
        opt.learning_rate = float(new)
        if self.verbose > 0:
            print("\nEpoch %05d: LearningRateScheduler setting learning rate to %s." % (epoch + 1,
                                                                                       new))


def _postfix(logs):
    return {k: ("%.4f" % v if abs(v) > 1e-3 else "%.4e" % v) if isinstance(v, float) else v
            for k, v in (logs or {}).items()}


class TqdmCallback(Callback):
    """Progress bars from tqdm instead of Keras' text bar, as ``tqdm.keras.TqdmCallback``
    (which needs TensorFlow): ``model.fit(..., verbose=0, callbacks=[TqdmCallback()])``.
    ``tqdm.auto`` picks the widget bar in Jupyter and the text bar elsewhere.

    verbose: 0, one bar over the epochs; 1, also a bar over each epoch's steps (reused);
    2, a new step bar per epoch. Metrics appear as the bars' postfix. ``tqdm_class`` and the
    other keyword arguments go to tqdm (``file=``, ``leave=`` ...). Needs ``pip install tqdm``.
    """

    def __init__(self, epochs=None, data_size=None, batch_size=None, verbose=1, tqdm_class=None,
                 **tqdm_kwargs):
        super().__init__()
        if tqdm_class is None:
            try:
                from tqdm.auto import tqdm as tqdm_class
            except ImportError as e:
                raise ImportError("TqdmCallback needs tqdm: pip install tqdm") from e
        self.tqdm_class = tqdm_class
        self.epochs = epochs
        self.data_size, self.batch_size = data_size, batch_size
        self.verbose = int(verbose)
        self.tqdm_kwargs = tqdm_kwargs
        self.epoch_bar = self.batch_bar = None

    def _steps(self):
        steps = self.params.get("steps")
        if steps is None and self.data_size and self.batch_size:
            steps = -(-self.data_size // self.batch_size)
        return steps

    def on_train_begin(self, logs=None):
        epochs = self.epochs if self.epochs is not None else self.params.get("epochs")
        self.epoch_bar = self.tqdm_class(total=epochs, desc="Epochs", unit="epoch",
                                         **self.tqdm_kwargs)

    def on_epoch_begin(self, epoch, logs=None):
        if self.verbose < 1:
            return
        if self.batch_bar is not None and self.verbose == 1:
            self.batch_bar.reset(total=self._steps())
        else:
            if self.batch_bar is not None:
                self.batch_bar.close()
            self.batch_bar = self.tqdm_class(total=self._steps(), desc="Epoch %d" % (epoch + 1),
                                             unit="step", leave=self.verbose == 2,
                                             **{k: v for k, v in self.tqdm_kwargs.items()
                                                if k != "leave"})
        self.batch_bar.set_description("Epoch %d" % (epoch + 1))

    def on_train_batch_end(self, batch, logs=None):
        if self.batch_bar is not None:
            self.batch_bar.set_postfix(_postfix(logs), refresh=False)
            self.batch_bar.update(1)

    def on_epoch_end(self, epoch, logs=None):
        self.epoch_bar.set_postfix(_postfix(logs), refresh=False)
        self.epoch_bar.update(1)

    def on_train_end(self, logs=None):
        for bar in (self.batch_bar, self.epoch_bar):
            if bar is not None:
                bar.close()
        self.epoch_bar = self.batch_bar = None


from mixprec.keras._backup_restore import BackupAndRestore  # noqa: E402,F401
from mixprec.keras._epoch_callbacks import CSVLogger, ReduceLROnPlateau  # noqa: E402,F401
from mixprec.keras._tensorboard import TensorBoard  # noqa: E402,F401
from mixprec.keras._monitor_callbacks import BaseLogger, RemoteMonitor  # noqa: E402,F401
from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
