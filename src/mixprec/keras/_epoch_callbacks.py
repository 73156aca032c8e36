"""Callbacks that act on each epoch's logs: ReduceLROnPlateau (lowers the optimizer's
learning rate when a monitored value stops improving) and CSVLogger (one CSV row per
epoch), as tf-keras 2.21 behaves. Exported by ``mixprec.keras.callbacks``; they only read
logs and set the learning rate, they never touch tensors' elements."""

import collections
import csv
import os

import numpy as np

from mixprec import _logging
from mixprec.keras.callbacks import Callback

__all__ = ["ReduceLROnPlateau", "CSVLogger"]


def _learning_rate_variable(model):
    opt = model.optimizer
    return opt.learning_rate if hasattr(opt, "learning_rate") else opt.lr


class ReduceLROnPlateau(Callback):
    """Multiplies the learning rate by ``factor`` once ``monitor`` has not improved by
    ``min_delta`` for ``patience`` epochs (then waits ``cooldown`` epochs); never below
    ``min_lr``. Adds the learning rate to the epoch's logs as ``'lr'`` (so ``History``
    records it), as tf-keras."""

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto",
                 min_delta=1e-4, cooldown=0, min_lr=0, **kwargs):
        super().__init__()
        self.monitor = monitor
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau does not support a factor >= 1.0. Got %s"
                             % (factor,))
        if "epsilon" in kwargs:
            min_delta = kwargs.pop("epsilon")
            _logging.get_logger().warning("`epsilon` argument is deprecated and will be "
                                          "removed, use `min_delta` instead.")
        self.factor = factor
        self.min_lr = min_lr
        self.min_delta = min_delta
        self.patience = patience
        self.verbose = verbose
        self.cooldown = cooldown
        self.cooldown_counter = 0
        self.wait = 0
        self.best = 0
        self.mode = mode
        self._reset()

    def _reset(self):
        if self.mode not in ("auto", "min", "max"):
            _logging.get_logger().warning(
                "Learning rate reduction mode %s is unknown, fallback to auto mode.", self.mode)
            self.mode = "auto"
        lower = self.mode == "min" or (self.mode == "auto" and "acc" not in self.monitor)
        self._lower_is_better = lower
        self.best = np.inf if lower else -np.inf
        self.cooldown_counter = 0
        self.wait = 0

    def monitor_op(self, current, best):
        if self._lower_is_better:
            return np.less(current, best - self.min_delta)
        return np.greater(current, best + self.min_delta)

    def in_cooldown(self):
        return self.cooldown_counter > 0

    def on_train_begin(self, logs=None):
        self._reset()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        lr = _learning_rate_variable(self.model)
        logs["lr"] = np.float32(lr.numpy() if hasattr(lr, "numpy") else lr)
        current = logs.get(self.monitor)
        if current is None:
            _logging.get_logger().warning(
                "Learning rate reduction is conditioned on metric `%s` which is not "
                "available. Available metrics are: %s", self.monitor, ",".join(list(logs)))
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self.monitor_op(current, self.best):
            self.best = current
            self.wait = 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience:
                old_lr = logs["lr"]
                if old_lr > np.float32(self.min_lr):
                    new_lr = max(np.float32(old_lr * self.factor), self.min_lr)
                    if hasattr(lr, "assign"):
                        lr.assign(float(new_lr))
                    else:
                        self.model.optimizer.learning_rate = float(new_lr)
                    if self.verbose > 0:
                        # tf-keras prints the float32 rate as a Python float
                        shown = float(new_lr) if isinstance(new_lr, np.floating) else new_lr
                        print("\nEpoch %d: ReduceLROnPlateau reducing learning rate to %s."
                              % (epoch + 1, shown))
                    self.cooldown_counter = self.cooldown
                    self.wait = 0


class CSVLogger(Callback):
    """Writes ``epoch`` and every log value, keys sorted (``val_`` keys added when the
    first epoch has none), one row per epoch, to ``filename``; ``append=True`` continues
    an existing file (without a second header)."""

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.sep = separator
        self.filename = os.fspath(filename)
        self.append = append
        self.writer = None
        self.keys = None
        self.append_header = True
        self.csv_file = None

    def on_train_begin(self, logs=None):
        mode = "w"
        if self.append:
            if os.path.exists(self.filename):
                with open(self.filename, "r", newline="") as f:
                    self.append_header = not bool(len(f.readline()))
            mode = "a"
        self.csv_file = open(self.filename, mode, newline="")

    @staticmethod
    def _value(v):
        if isinstance(v, str):
            return v
        if isinstance(v, collections.abc.Iterable) and not (
                isinstance(v, np.ndarray) and v.ndim == 0):
            return '"[%s]"' % ", ".join(map(str, v))
        return v

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self.keys is None:
            self.keys = sorted(logs)
            if not any(k.startswith("val_") for k in self.keys):
                self.keys.extend(["val_" + k for k in self.keys])
        if self.writer is None:
            dialect = type("_Dialect", (csv.excel,), {"delimiter": self.sep})
            self.writer = csv.DictWriter(self.csv_file, fieldnames=["epoch"] + self.keys,
                                         dialect=dialect)
            if self.append_header:
                self.writer.writeheader()
        row = collections.OrderedDict({"epoch": epoch})
        row.update((k, self._value(logs.get(k, "NA"))) for k in self.keys)
        self.writer.writerow(row)
        self.csv_file.flush()

    def on_train_end(self, logs=None):
        if self.csv_file is not None:
            self.csv_file.close()
        self.writer = None
