"""``BaseLogger`` (epoch averages of batch logs weighted by batch size, tf-keras' legacy
callback) and ``RemoteMonitor`` (each epoch's logs POSTed to a server). Host-side
bookkeeping of Python floats; no tensor work."""

import json
import logging
import urllib.error
import urllib.parse
import urllib.request

import numpy as np

from mixprec.keras.callbacks import Callback

__all__ = ["BaseLogger", "RemoteMonitor"]


class BaseLogger(Callback):
    """Averages batch metrics over an epoch (weighted by the logs' ``size``); metrics named
    in ``stateful_metrics`` keep their last value."""

    def __init__(self, stateful_metrics=None):
        super().__init__()
        self.stateful_metrics = set(stateful_metrics or [])

    def on_epoch_begin(self, epoch, logs=None):
        self.seen = 0
        self.totals = {}

    def on_batch_end(self, batch, logs=None):
        logs = logs or {}
        size = logs.get("size", 0)
        self.seen += size * logs.get("num_steps", 1)
        for k, v in logs.items():
            if k in self.stateful_metrics:
                self.totals[k] = v
            else:
                self.totals[k] = self.totals.get(k, 0) + v * size

    on_train_batch_end = on_batch_end

    def on_epoch_end(self, epoch, logs=None):
        if logs is None:
            return
        for k in (self.params or {}).get("metrics", []):
            if k in self.totals:
                logs[k] = self.totals[k] if k in self.stateful_metrics else \
                    self.totals[k] / self.seen


class RemoteMonitor(Callback):
    """POSTs ``{"epoch": n, <logs>}`` to ``root + path`` at each epoch end (form field
    ``field`` holding JSON, or a JSON body with ``send_as_json``); a server that cannot be
    reached logs tf-keras' warning and training goes on."""

    def __init__(self, root="http://localhost:9000", path="/publish/epoch/end/", field="data",
                 headers=None, send_as_json=False):
        super().__init__()
        self.root, self.path, self.field = root, path, field
        self.headers = headers
        self.send_as_json = send_as_json

    def on_epoch_end(self, epoch, logs=None):
        send = {"epoch": epoch}
        for k, v in (logs or {}).items():
            if isinstance(v, (np.ndarray, np.generic)):
                v = v.item()
            send[k] = float(v) if hasattr(v, "__float__") else v
        headers = dict(self.headers or {})
        if self.send_as_json:
            body = json.dumps(send).encode()
            headers.setdefault("Content-Type", "application/json")
        else:
            body = urllib.parse.urlencode({self.field: json.dumps(send)}).encode()
        req = urllib.request.Request(self.root + self.path, data=body, headers=headers,
                                     method="POST")
        try:
            urllib.request.urlopen(req, timeout=10).close()
        except (urllib.error.URLError, OSError, ValueError):
            logging.getLogger("mixprec").warning(
                "Could not reach RemoteMonitor root server at %s" % self.root)
