"""The ``checkpoint`` state file (TensorFlow's CheckpointState in protobuf text format,
relative paths), ``tf.train.latest_checkpoint``/``get_checkpoint_state`` and
``tf.train.CheckpointManager`` (numbering, max_to_keep, keep-every-n-hours, intervals).
The state file is always replaced atomically and written after the checkpoint it names;
deletions remove the ``.index`` (the commit point) before the data."""

import collections
import numbers
import os
import re
import time

from mixprec import _fileio
from mixprec._variable import Variable
from mixprec.train import _bundle

__all__ = ["CheckpointManager", "CheckpointState", "get_checkpoint_state",
           "latest_checkpoint", "update_checkpoint_state"]

_STATE_NAME = "checkpoint"
_MAX_STATE_BYTES = 16 << 20


class CheckpointState:
    """The fields of TensorFlow's CheckpointState proto."""

    def __init__(self, model_checkpoint_path="", all_model_checkpoint_paths=(),
                 all_model_checkpoint_timestamps=(), last_preserved_timestamp=0.0):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths)
        self.all_model_checkpoint_timestamps = list(all_model_checkpoint_timestamps)
        self.last_preserved_timestamp = last_preserved_timestamp

    def __repr__(self):
        return _to_text(self)


def _quote(s):
    out = []
    for ch in s.encode("utf-8"):
        c = chr(ch)
        if c == '"':
            out.append('\\"')
        elif c == "\\":
            out.append("\\\\")
        elif c == "\n":
            out.append("\\n")
        elif c == "'":
            out.append("\\'")
        elif 32 <= ch < 127:
            out.append(c)
        else:
            out.append("\\%03o" % ch)
    return '"' + "".join(out) + '"'


def _float(x):
    r = repr(float(x))
    return r


def _to_text(st):
    lines = ["model_checkpoint_path: %s" % _quote(st.model_checkpoint_path)]
    lines += ["all_model_checkpoint_paths: %s" % _quote(p) for p in st.all_model_checkpoint_paths]
    lines += ["all_model_checkpoint_timestamps: %s" % _float(t)
              for t in st.all_model_checkpoint_timestamps]
    if st.last_preserved_timestamp:
        lines.append("last_preserved_timestamp: %s" % _float(st.last_preserved_timestamp))
    return "\n".join(lines) + "\n"


_LINE = re.compile(r'\s*([A-Za-z_]+)\s*:\s*(.*?)\s*$')


def _unquote(v):
    if len(v) < 2 or v[0] not in "\"'" or v[-1] != v[0]:
        raise ValueError("expected a quoted string, got %r" % v)
    body, out, i = v[1:-1], bytearray(), 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            n = body[i + 1]
            if n in "01234567":
                j = i + 1
                while j < len(body) and j < i + 4 and body[j] in "01234567":
                    j += 1
                out.append(int(body[i + 1:j], 8) & 0xFF)
                i = j
                continue
            out += {"n": b"\n", "t": b"\t", "r": b"\r"}.get(n, n.encode("utf-8"))
            i += 2
            continue
        out += c.encode("utf-8")
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _parse_state(text, path):
    st = CheckpointState()
    for line in text.splitlines():
        if not line.strip() or line.strip().startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            raise ValueError("%s: unparsable line %r" % (path, line))
        field, value = m.groups()
        if field == "model_checkpoint_path":
            st.model_checkpoint_path = _unquote(value)
        elif field == "all_model_checkpoint_paths":
            st.all_model_checkpoint_paths.append(_unquote(value))
        elif field == "all_model_checkpoint_timestamps":
            st.all_model_checkpoint_timestamps.append(float(value))
        elif field == "last_preserved_timestamp":
            st.last_preserved_timestamp = float(value)
        else:
            raise ValueError("%s: unknown field %r" % (path, field))
    return st


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The CheckpointState of ``checkpoint_dir/checkpoint`` with paths joined onto the
    directory, or None when there is no state file."""
    path = os.path.join(os.fspath(checkpoint_dir), latest_filename or _STATE_NAME)
    if not os.path.exists(path):
        return None
    try:
        size = _fileio.check_regular_file(path, "checkpoint state file")
        if size > _MAX_STATE_BYTES:
            raise ValueError("%d bytes is not a checkpoint state file" % size)
        st = _parse_state(_fileio.read_file(path, "checkpoint state file").decode("utf-8"),
                          path)
    except (ValueError, UnicodeDecodeError, OSError) as e:
        # as TensorFlow: an unreadable state file is logged and ignored
        from mixprec import get_logger

        get_logger().warning("%s: %s", type(e).__name__, e)
        get_logger().warning("%s: Checkpoint ignored", path)
        return None
    if not st.model_checkpoint_path:
        raise ValueError("Invalid checkpoint state loaded from %s" % checkpoint_dir)
    d = os.fspath(checkpoint_dir)
    if not os.path.isabs(st.model_checkpoint_path):
        st.model_checkpoint_path = os.path.join(d, st.model_checkpoint_path)
    st.all_model_checkpoint_paths = [p if os.path.isabs(p) else os.path.join(d, p)
                                     for p in st.all_model_checkpoint_paths]
    return st


def update_checkpoint_state(save_dir, model_checkpoint_path, all_model_checkpoint_paths=None,
                            all_model_checkpoint_timestamps=None,
                            last_preserved_timestamp=None):
    """Replaces ``save_dir/checkpoint`` atomically, paths relative to ``save_dir``."""
    save_dir = os.fspath(save_dir) or "."

    def rel(p):
        p = os.fspath(p)
        if os.path.isabs(p) or os.path.dirname(p):
            return os.path.relpath(p, save_dir)
        return p

    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)
    st = CheckpointState(rel(model_checkpoint_path), [rel(p) for p in paths],
                         all_model_checkpoint_timestamps or (),
                         last_preserved_timestamp or 0.0)
    text = _to_text(st).encode("utf-8")
    os.makedirs(save_dir, exist_ok=True)
    _fileio.atomic_write(os.path.join(save_dir, _STATE_NAME), lambda f: f.write(text))


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The prefix the directory's ``checkpoint`` file names, or None when there is none or
    its ``.index`` is missing."""
    st = get_checkpoint_state(checkpoint_dir, latest_filename)
    if st is None:
        return None
    path = st.model_checkpoint_path
    if os.path.isfile(_bundle.index_path(path)):
        return path
    return None


def _delete_checkpoint(prefix):
    """Removes a checkpoint: the index first (after that it no longer counts), then data."""
    _fileio.remove_file(_bundle.index_path(prefix))
    _fileio.fsync_dir(os.path.dirname(prefix))
    for f in _bundle.data_files(prefix):
        _fileio.remove_file(f)


def _step_value(counter):
    v = counter.numpy() if isinstance(counter, Variable) or hasattr(counter, "numpy") \
        else counter
    return int(v)


class CheckpointManager:
    """``tf.train.CheckpointManager``: numbered saves in a directory, old ones deleted."""

    def __init__(self, checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours=None,
                 checkpoint_name="ckpt", step_counter=None, checkpoint_interval=None,
                 init_fn=None):
        from mixprec.train._checkpoint import Checkpoint

        if not isinstance(checkpoint, Checkpoint):
            raise TypeError("checkpoint must be a tf.train.Checkpoint, got %r" % (checkpoint,))
        if max_to_keep is not None and (not isinstance(max_to_keep, numbers.Integral)
                                        or max_to_keep <= 0):
            raise ValueError("Expected a positive integer or `None` for `max_to_keep`, got %s."
                             % (max_to_keep,))
        if checkpoint_interval is not None and step_counter is None:
            raise ValueError("`step_counter` should be passed if `checkpoint_interval` is not "
                             "None.")
        self._checkpoint = checkpoint
        self._save_counter_assign = None
        self._max_to_keep = max_to_keep
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._directory = os.fspath(directory)
        self._checkpoint_prefix = os.path.join(self._directory, checkpoint_name)
        self._step_counter = step_counter
        self._checkpoint_interval = checkpoint_interval
        self._last_checkpoint_step = None
        self._init_fn = init_fn
        recovered = get_checkpoint_state(self._directory)
        now = time.time()
        self._maybe_delete = collections.OrderedDict()
        if recovered is None:
            self._latest_checkpoint = None
            self._last_preserved_timestamp = now
        else:
            self._latest_checkpoint = recovered.model_checkpoint_path
            self._last_preserved_timestamp = recovered.last_preserved_timestamp
            if now < self._last_preserved_timestamp:
                self._last_preserved_timestamp = now
            paths = recovered.all_model_checkpoint_paths
            stamps = recovered.all_model_checkpoint_timestamps
            if len(stamps) != len(paths):
                stamps = [self._last_preserved_timestamp] * len(paths)
            for p, t in zip(paths, stamps):
                self._maybe_delete[p] = min(t, now)

    @property
    def directory(self):
        return self._directory

    @property
    def checkpoint(self):
        return self._checkpoint

    @property
    def checkpoint_interval(self):
        return self._checkpoint_interval

    @property
    def latest_checkpoint(self):
        """The newest checkpoint's prefix, or None."""
        return self._latest_checkpoint

    @property
    def checkpoints(self):
        """The prefixes of the checkpoints managed (oldest first)."""
        return list(self._maybe_delete.keys())

    def _record_state(self):
        if self._latest_checkpoint is None:
            return
        update_checkpoint_state(self._directory, self._latest_checkpoint,
                                list(self._maybe_delete.keys()),
                                list(self._maybe_delete.values()),
                                self._last_preserved_timestamp)

    def _sweep(self):
        if not self._max_to_keep:
            return
        while len(self._maybe_delete) > self._max_to_keep:
            filename, timestamp = self._maybe_delete.popitem(last=False)
            hours = self._keep_checkpoint_every_n_hours
            if hours and timestamp - hours * 3600.0 >= self._last_preserved_timestamp:
                self._last_preserved_timestamp = timestamp
                continue
            _delete_checkpoint(filename)

    def save(self, checkpoint_number=None, check_interval=True, options=None):
        """Saves ``<directory>/<checkpoint_name>-<N>`` (N: checkpoint_number, else the
        checkpoint's save_counter, as TensorFlow: the step counter only gates the interval),
        records it in the state file, deletes the checkpoints beyond max_to_keep; returns
        the path, or None when the interval has not passed (or the step is unchanged)."""
        if self._checkpoint_interval is not None:
            step = _step_value(self._step_counter)
            last = self._last_checkpoint_step
            if last is not None and (step == last or check_interval and
                                     step < last + self._checkpoint_interval):
                return None
            self._last_checkpoint_step = step
        counter = self._checkpoint.save_counter
        counter.assign_add(1)
        if checkpoint_number is None:
            checkpoint_number = int(counter.numpy())
        elif not isinstance(checkpoint_number, numbers.Integral):
            checkpoint_number = _step_value(checkpoint_number)
        prefix = "%s-%d" % (self._checkpoint_prefix, checkpoint_number)
        path = self._checkpoint.write(prefix, options=options)
        stamp = time.time()
        if path in self._maybe_delete:
            del self._maybe_delete[path]
        self._maybe_delete[path] = stamp
        self._latest_checkpoint = path
        self._record_state()  # the new checkpoint is recorded before anything is deleted
        self._sweep()
        self._record_state()
        return path

    def restore_or_initialize(self):
        """Restores the latest checkpoint and returns its path, or runs ``init_fn`` and
        returns None when there is none."""
        if self._latest_checkpoint is not None:
            self._checkpoint.restore(self._latest_checkpoint)
            if self._checkpoint_interval is not None:
                self._last_checkpoint_step = _step_value(self._step_counter)
            return self._latest_checkpoint
        if self._init_fn is not None:
            self._init_fn()
        return None

    def sync(self):
        pass

