"""``tf.summary``: TensorBoard logging as TensorFlow 2.21 writes it — file writers
(``create_file_writer``, ``as_default``, ``flush``, ``close``), ``scalar``, ``histogram``
(TensorBoard's bucketing), ``text``, the default step (``experimental.set_step``) and
``record_if``, ``image``/``audio`` (PNG/WAV, summary/_media.py). Events go to TensorBoard's file format (summary/_events.py), readable by
TensorBoard and ``tf.compat.v1.train.summary_iterator``. Inside a traced function a write
is a host call of the graph (it happens at every call, as a summary op does in TF)."""

import contextlib
import threading

import numpy as np

from mixprec.summary import _events

__all__ = ["create_file_writer", "create_noop_writer", "SummaryWriter", "scalar", "histogram",
           "text", "image", "audio", "write", "graph", "trace_on", "trace_off", "trace_export", "flush", "record_if", "should_record_summaries", "experimental"]

_state = threading.local()
_global = {"step": None}


def _writers():
    stack = getattr(_state, "writers", None)
    if stack is None:
        stack = _state.writers = []
    return stack


class SummaryWriter:
    """A writer of one event file; ``as_default()`` makes it the target of tf.summary
    calls in the block (and sets the default step when given)."""

    def __init__(self, logdir, max_queue=None, flush_millis=None, filename_suffix=None):
        self._file = _events.EventFileWriter(logdir, max_queue, flush_millis,
                                             filename_suffix) if logdir is not None else None

    @contextlib.contextmanager
    def as_default(self, step=None):
        _writers().append(self)
        old = _global["step"]
        if step is not None:
            _global["step"] = step
        try:
            yield self
        finally:
            if step is not None:
                _global["step"] = old
            _writers().pop()
            self.flush()

    def set_as_default(self, step=None):
        _writers().append(self)
        if step is not None:
            _global["step"] = step

    def init(self):
        pass

    def flush(self):
        if self._file is not None:
            self._file.flush()

    def close(self):
        if self._file is not None:
            self._file.close()

    def _write(self, payload):
        if self._file is not None:
            self._file.add(payload)


def create_file_writer(logdir, max_queue=None, flush_millis=None, filename_suffix=None,
                       name=None, experimental_trackable=False, experimental_mesh=None):
    """A SummaryWriter appending to a new event file in ``logdir`` (made if missing)."""
    if logdir is None:
        raise ValueError("Expected logdir to be a string or path-like, got None")
    return SummaryWriter(logdir, max_queue, flush_millis, filename_suffix)


def create_noop_writer():
    """A writer that writes nothing."""
    return SummaryWriter(None)


def _default_writer():
    stack = _writers()
    return stack[-1] if stack else None


_record = threading.local()


@contextlib.contextmanager
def record_if(condition):
    """Summaries are written in the block only when ``condition`` (a bool, a boolean tensor
    or a callable returning one) holds."""
    old = getattr(_record, "condition", True)
    _record.condition = condition
    try:
        yield
    finally:
        _record.condition = old


def should_record_summaries():
    """Whether a summary written now would be recorded (a default writer and record_if)."""
    if _default_writer() is None or _default_writer()._file is None:
        return False
    return _condition()


def _condition():
    cond = getattr(_record, "condition", True)
    if callable(cond):
        cond = cond()
    if hasattr(cond, "numpy"):
        cond = bool(cond.numpy())
    return bool(cond)


def _step_value(step):
    if step is None:
        step = _global["step"]
    if step is None:
        raise ValueError("No step set. Please specify one either through the `step` argument "
                         "or through tf.summary.experimental.set_step()")
    if hasattr(step, "numpy"):
        step = step.numpy()
    return int(np.asarray(step))


def _values(data):
    if hasattr(data, "numpy"):
        return np.asarray(data.numpy())
    return np.asarray(data)


def _emit(build, step, data=None):
    """Writes build(value of data)'s summary value at ``step`` to the default writer now, or
    at every call of a traced function (a host call fed the data and the step as they are
    at that call). True when written (or recorded in a trace)."""
    writer = _default_writer()
    if writer is None:
        return False
    from mixprec import _function

    if _function.tracing():
        import mixprec

        step_t = step if step is not None else _global["step"]
        if step_t is None:
            _step_value(None)  # raises TF's error
        args = [mixprec.convert_to_tensor(step_t)]
        if data is not None and hasattr(data, "dtype") and not isinstance(data, np.ndarray):
            args.append(data)

        def host(step_value, *value):
            if _condition() and writer._file is not None:
                v = value[0] if value else data
                writer._write(_events.event(int(np.asarray(step_value)), [build(v)]))
            return np.bool_(True)

        mixprec.numpy_function(host, args, mixprec.bool)
        return True
    s = _step_value(step)  # TF: a default writer without a step is an error
    if not _condition() or writer._file is None:
        return False
    writer._write(_events.event(s, [build(data)]))
    return True


def scalar(name, data, step=None, description=None):
    """Writes a scalar (float32) summary; True on success, False without a default writer."""
    def build(data):
        v = _values(data).astype("<f4")
        if v.size != 1 or v.ndim != 0:
            raise ValueError("scalar summary '%s' got data of shape %s; expected a scalar"
                             % (name, v.shape))
        return _events.summary_value(
            name, _events.tensor_proto(_events.DT_FLOAT, (), v.tobytes()),
            _events.metadata("scalars", description=description,
                             data_class=_events.DATA_CLASS_SCALAR))
    return _emit(build, step, data)


def _buckets(data, bucket_count):
    """TensorBoard's histogram buckets: (bucket_count, 3) rows of left edge, right edge,
    count over [min, max]; one value → all in the last bucket of zero width."""
    data = np.asarray(data, "float64").ravel()
    if bucket_count == 0 or data.size == 0:
        return np.zeros((bucket_count, 3), "float64")
    lo, hi = data.min(), data.max()
    if hi - lo == 0:
        edges = np.full(bucket_count, hi)
        counts = np.zeros(bucket_count)
        counts[-1] = data.size
        return np.stack([edges, edges, counts], 1)
    width = (hi - lo) / bucket_count
    idx = np.minimum(np.floor((data - lo) / width).astype(np.int64), bucket_count - 1)
    counts = np.bincount(idx, minlength=bucket_count).astype("float64")
    edges = np.linspace(lo, hi, bucket_count + 1)
    edges[-1] = hi
    return np.stack([edges[:-1], edges[1:], counts], 1)


def histogram(name, data, step=None, buckets=None, description=None):
    """Writes a histogram of ``data`` (30 buckets by default) as TensorBoard's tensor
    summary."""
    count = 30 if buckets is None else int(buckets)

    def build(data):
        rows = _buckets(_values(data), count).astype("<f8")
        return _events.summary_value(
            name, _events.tensor_proto(_events.DT_DOUBLE, rows.shape, rows.tobytes()),
            _events.metadata("histograms", description=description))
    return _emit(build, step, data)


def text(name, data, step=None, description=None):
    """Writes a text summary (a Python string, or an array of them)."""
    def build(data):
        arr = np.asarray(data.numpy() if hasattr(data, "numpy") else data, dtype=object)
        flat = [s if isinstance(s, (bytes, str)) else str(s) for s in arr.ravel()]
        return _events.summary_value(
            name, _events.tensor_proto(_events.DT_STRING, arr.shape, strings=flat),
            _events.metadata("text", description=description,
                             data_class=_events.DATA_CLASS_TENSOR))
    return _emit(build, step, data)


def image(name, data, step=None, max_outputs=3, description=None):
    """Writes up to ``max_outputs`` images of a (k, h, w, c) batch (uint8, or floats in
    [0, 1]) as PNGs for TensorBoard's image dashboard."""
    from mixprec.summary import _media
    return _emit(lambda d: _media.image_value(name, _values(d), max_outputs, description),
                 step, data)


def audio(name, data, sample_rate, step=None, max_outputs=3, encoding=None,
          description=None):
    """Writes up to ``max_outputs`` clips of a (k, frames, channels) float batch in [-1, 1]
    as 16-bit WAV for TensorBoard's audio dashboard."""
    from mixprec.summary import _media
    return _emit(lambda d: _media.audio_value(name, _values(d), sample_rate, max_outputs,
                                              encoding, description), step, data)


def write(tag, tensor, step=None, metadata=None, name=None):
    """Writes ``tensor`` (a number or numeric array) under ``tag`` with the plugin
    metadata given (a plugin name or None)."""
    def build(tensor):
        v = _values(tensor)
        if v.dtype.kind == "f":
            v, dt = v.astype("<f4"), _events.DT_FLOAT
        else:
            v, dt = v.astype("<i8"), _events.DT_INT64
        plugin = metadata if isinstance(metadata, str) else ""
        return _events.summary_value(tag, _events.tensor_proto(dt, v.shape, v.tobytes()),
                                     _events.metadata(plugin))
    return _emit(build, step, tensor)


from mixprec.summary._graph import graph, trace_export, trace_off, trace_on  # noqa: E402,F401


def flush(writer=None, name=None):
    writer = writer or _default_writer()
    if writer is not None:
        writer.flush()


class _Experimental:
    """``tf.summary.experimental``: the default step."""

    @staticmethod
    def set_step(step):
        _global["step"] = step

    @staticmethod
    def get_step():
        return _global["step"]

    @staticmethod
    @contextlib.contextmanager
    def summary_scope(name, default_name=None, values=None):
        yield name or default_name, name or default_name


experimental = _Experimental()


def keras_model(name, model, step):
    """The Keras model's JSON config as TensorBoard's 'graph_keras_model' summary (what
    the TensorBoard callback's write_graph shows)."""
    def build(_):
        return _events.summary_value(
            name, _events.tensor_proto(_events.DT_STRING, (), strings=[model.to_json()]),
            _events.metadata("graph_keras_model", content=b"1"))
    return _emit(build, step)


from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
