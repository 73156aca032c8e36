"""TensorBoard's event files, written without TensorFlow or TensorBoard installed: the
TFRecord framing (length, masked CRC-32C of the length, payload, masked CRC-32C of the
payload; CRC from the core) around hand-encoded ``Event`` protocol buffers (wall time, step,
file version, a ``Summary`` of tensor values with their plugin metadata). Only the fields
TensorBoard's readers need; no summary semantics here (summary/__init__.py has those)."""

import os
import socket
import struct
import threading
import time

from mixprec import _core

DT_FLOAT, DT_DOUBLE, DT_INT32, DT_STRING, DT_INT64 = 1, 2, 3, 7, 9
DATA_CLASS_SCALAR, DATA_CLASS_TENSOR = 1, 2


def _varint(n):
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field, wire):
    return _varint((field << 3) | wire)


def _len_field(field, payload):
    return _key(field, 2) + _varint(len(payload)) + payload


def _str_field(field, text):
    return _len_field(field, text.encode("utf-8") if isinstance(text, str) else text)


def tensor_proto(dtype, shape, content=None, strings=None):
    """A TensorProto: dtype, shape and either raw little-endian content or string values."""
    dims = b"".join(_len_field(2, _key(1, 0) + _varint(int(d))) for d in shape)
    out = _key(1, 0) + _varint(dtype) + _len_field(2, dims)
    if strings is not None:
        for s in strings:
            out += _str_field(8, s)
    else:
        out += _len_field(4, content)
    return out


def metadata(plugin_name, content=b"", display_name=None, description=None, data_class=None):
    plugin = _str_field(1, plugin_name) + (_len_field(2, content) if content else b"")
    out = _len_field(1, plugin)
    if display_name:
        out += _str_field(2, display_name)
    if description:
        out += _str_field(3, description)
    if data_class is not None:
        out += _key(4, 0) + _varint(data_class)
    return out


def summary_value(tag, tensor, meta):
    return _len_field(1, _str_field(1, tag) + _len_field(9, meta) + _len_field(8, tensor))


def event(step=None, summary_values=(), file_version=None, wall_time=None):
    out = _key(1, 1) + struct.pack("<d", time.time() if wall_time is None else wall_time)
    if step is not None:
        out += _key(2, 0) + _varint(int(step))
    if file_version is not None:
        out += _str_field(3, file_version)
    if summary_values:
        out += _len_field(5, b"".join(summary_values))
    return out


def _masked_crc(data):
    crc = _core.crc32c(data) & 0xFFFFFFFF
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def record(payload):
    """One TFRecord: the framing TensorBoard's reader checks."""
    length = struct.pack("<Q", len(payload))
    return (length + struct.pack("<I", _masked_crc(length)) + payload +
            struct.pack("<I", _masked_crc(payload)))


_counter = [0]
_counter_lock = threading.Lock()


class EventFileWriter:
    """Appends events to ``<logdir>/events.out.tfevents.<time>.<host>.<pid>.<n>.v2<suffix>``
    (created with its file-version event on the first write); events are buffered and
    flushed every ``max_queue`` events or ``flush_millis`` and on flush/close."""

    def __init__(self, logdir, max_queue=10, flush_millis=120000, filename_suffix=""):
        self.logdir = os.fspath(logdir)
        self._max_queue = max_queue or 10
        self._flush_secs = (flush_millis or 120000) / 1000.0
        self._suffix = filename_suffix or ""
        self._path = None
        self._pending = []
        self._last_flush = time.time()
        self._lock = threading.Lock()
        self.closed = False

    def _open(self):
        os.makedirs(self.logdir, exist_ok=True)
        with _counter_lock:
            _counter[0] += 1
            n = _counter[0]
        name = "events.out.tfevents.%010d.%s.%d.%d.v2%s" % (
            int(time.time()), socket.gethostname(), os.getpid(), n, self._suffix)
        self._path = os.path.join(self.logdir, name)
        with open(self._path, "ab") as f:
            f.write(record(event(step=0, file_version="brain.Event:2")))

    @property
    def path(self):
        return self._path

    def add(self, payload):
        with self._lock:
            if self.closed:
                raise RuntimeError("This summary writer was closed")
            if self._path is None:
                self._open()
            self._pending.append(record(payload))
            if len(self._pending) >= self._max_queue or \
                    time.time() - self._last_flush >= self._flush_secs:
                self._flush_locked()

    def _flush_locked(self):
        if self._pending and self._path is not None:
            with open(self._path, "ab") as f:
                f.write(b"".join(self._pending))
            self._pending = []
        self._last_flush = time.time()

    def flush(self):
        with self._lock:
            self._flush_locked()

    def close(self):
        with self._lock:
            self._flush_locked()
            self.closed = True


def read_records(path):
    """The payloads of a TFRecord file, each CRC checked (a corrupt record raises)."""
    out = []
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos < len(data):
        if pos + 12 > len(data):
            raise ValueError("truncated record header at byte %d of %s" % (pos, path))
        length_bytes = data[pos:pos + 8]
        (n,) = struct.unpack("<Q", length_bytes)
        (crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        if crc != _masked_crc(length_bytes):
            raise ValueError("corrupted record length at byte %d of %s" % (pos, path))
        payload = data[pos + 12:pos + 12 + n]
        if len(payload) != n or pos + 16 + n > len(data):
            raise ValueError("truncated record at byte %d of %s" % (pos, path))
        (crc,) = struct.unpack("<I", data[pos + 12 + n:pos + 16 + n])
        if crc != _masked_crc(payload):
            raise ValueError("corrupted record data at byte %d of %s" % (pos, path))
        out.append(payload)
        pos += 16 + n
    return out
