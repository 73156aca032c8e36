"""TensorFlow's tensor-bundle files (``P.index`` + ``P.data-00000-of-00001``): the
LevelDB-style sorted table of the index, its protobuf entries and the data shard, read and
written byte-compatibly with TF 2.21 (docs/checkpoints.md). Owns the encoding only: which
tensors a checkpoint holds is _checkpoint.py's business. Payloads go between files and
NumPy buffers whole; checksums are computed in C (csrc/crc32c.c); no pickle."""

import os
import struct

import ml_dtypes
import numpy as np

from mixprec import _core, _fileio, errors

__all__ = ["BundleReader", "write_bundle", "data_path", "index_path"]

_MAGIC = b"\x57\xfb\x80\x8b\x24\x75\x47\xdb"
_BLOCK_SIZE = 262144
_RESTART_INTERVAL = 16
_MASK_DELTA = 0xA282EAD8
DT_STRING = 7

# DataType enum <-> NumPy dtype (types.proto)
_NP_OF_DT = {
    1: np.dtype(np.float32), 2: np.dtype(np.float64), 3: np.dtype(np.int32),
    4: np.dtype(np.uint8), 5: np.dtype(np.int16), 6: np.dtype(np.int8),
    9: np.dtype(np.int64), 10: np.dtype(np.bool_), 14: np.dtype(ml_dtypes.bfloat16),
    17: np.dtype(np.uint16), 19: np.dtype(np.float16), 22: np.dtype(np.uint32),
    23: np.dtype(np.uint64), 8: np.dtype(np.complex64), 18: np.dtype(np.complex128),
}
_DT_OF_NP = {v: k for k, v in _NP_OF_DT.items()}
DT_NAMES = {1: "float32", 2: "float64", 3: "int32", 4: "uint8", 5: "int16", 6: "int8",
            7: "string", 8: "complex64", 9: "int64", 10: "bool", 14: "bfloat16",
            17: "uint16", 18: "complex128", 19: "float16", 22: "uint32", 23: "uint64"}


class _TruncatedError(errors.DataLossError, errors.OutOfRangeError):
    """A data file holds fewer bytes than an entry declares (TF: OutOfRange, an
    IndexError here as in TF's Python face; also a DataLossError)."""


def index_path(prefix):
    return prefix + ".index"


def data_path(prefix, shard=0, num_shards=1):
    return "%s.data-%05d-of-%05d" % (prefix, shard, num_shards)


def crc32c(data, crc=0):
    return _core.crc32c(data, crc)


def mask(crc):
    crc &= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def unmask(m):
    rot = (m - _MASK_DELTA) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF


# ------------------------------------------------------------------ protobuf wire format


def varint(n):
    if n < 0:
        n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def read_varint(buf, pos, end=None):
    end = len(buf) if end is None else end
    n = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise ValueError("truncated or overlong varint")
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n, pos
        shift += 7


def pb_varint(field, value):
    return varint(field << 3) + varint(value)


def pb_bytes(field, data):
    return varint((field << 3) | 2) + varint(len(data)) + data


def pb_fields(buf):
    """[(field, wire type, value)] of a message: ints for varints and fixed, bytes for
    length-delimited fields. Malformed input is a ValueError."""
    out, pos, end = [], 0, len(buf)
    while pos < end:
        tag, pos = read_varint(buf, pos)
        field, wt = tag >> 3, tag & 7
        if field == 0:
            raise ValueError("field number 0")
        if wt == 0:
            v, pos = read_varint(buf, pos)
        elif wt == 1:
            if pos + 8 > end:
                raise ValueError("truncated fixed64")
            v = struct.unpack_from("<Q", buf, pos)[0]
            pos += 8
        elif wt == 2:
            n, pos = read_varint(buf, pos)
            if pos + n > end:
                raise ValueError("truncated length-delimited field")
            v = bytes(buf[pos:pos + n])
            pos += n
        elif wt == 5:
            if pos + 4 > end:
                raise ValueError("truncated fixed32")
            v = struct.unpack_from("<I", buf, pos)[0]
            pos += 4
        else:
            raise ValueError("unsupported wire type %d" % wt)
        out.append((field, wt, v))
    return out


def _int64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


# ------------------------------------------------------------------ entries


class Entry:
    """One BundleEntryProto: dtype enum, shape, shard, offset, size, masked crc."""

    __slots__ = ("dtype", "shape", "shard_id", "offset", "size", "crc32c", "sliced")

    def __init__(self, dtype, shape, shard_id=0, offset=0, size=0, crc=0, sliced=False):
        self.dtype, self.shape, self.shard_id = dtype, tuple(shape), shard_id
        self.offset, self.size, self.crc32c, self.sliced = offset, size, crc, sliced

    def encode(self):
        dims = b"".join(pb_bytes(2, pb_varint(1, d) if d else b"") for d in self.shape)
        out = pb_varint(1, self.dtype) + pb_bytes(2, dims)
        for field, v in ((3, self.shard_id), (4, self.offset), (5, self.size)):
            if v:
                out += pb_varint(field, v)
        return out + b"\x35" + struct.pack("<I", self.crc32c)

    @classmethod
    def decode(cls, buf):
        e = cls(0, ())
        shape = []
        for field, wt, v in pb_fields(buf):
            if field == 1 and wt == 0:
                e.dtype = v
            elif field == 2 and wt == 2:
                for f2, w2, dim in pb_fields(v):
                    if f2 == 2 and w2 == 2:
                        size = 0
                        for f3, w3, x in pb_fields(dim):
                            if f3 == 1 and w3 == 0:
                                size = _int64(x)
                        if size < 0:
                            raise ValueError("negative dimension %d" % size)
                        shape.append(size)
                    elif f2 == 3 and w2 == 0 and v:
                        raise ValueError("a shape of unknown rank")
            elif field == 3 and wt == 0:
                e.shard_id = v
            elif field == 4 and wt == 0:
                e.offset = _int64(v)
            elif field == 5 and wt == 0:
                e.size = _int64(v)
            elif field == 6 and wt == 5:
                e.crc32c = v
            elif field == 7 and wt == 2:
                e.sliced = True
        if e.offset < 0 or e.size < 0:
            raise ValueError("negative offset or size")
        e.shape = tuple(shape)
        return e


def _header(num_shards):
    return pb_varint(1, num_shards) + pb_bytes(3, pb_varint(1, 1))


# ------------------------------------------------------------------ table writer


def _block(entries, interval):
    out, restarts, prev = bytearray(), [], b""
    for i, (k, v) in enumerate(entries):
        if i % interval == 0:
            restarts.append(len(out))
            shared = 0
        else:
            shared = 0
            n = min(len(prev), len(k))
            while shared < n and prev[shared] == k[shared]:
                shared += 1
        out += varint(shared) + varint(len(k) - shared) + varint(len(v)) + k[shared:] + v
        prev = k
    if not restarts:
        restarts = [0]
    out += b"".join(struct.pack("<I", r) for r in restarts) + struct.pack("<I", len(restarts))
    return bytes(out)


def _trailer(block):
    return b"\x00" + struct.pack("<I", mask(crc32c(b"\x00", crc32c(block))))


def _separator(last, nxt):
    """The shortest key >= last and < nxt (TF's FindShortestSeparator)."""
    n = min(len(last), len(nxt))
    i = 0
    while i < n and last[i] == nxt[i]:
        i += 1
    if i < n and last[i] < 0xFF and last[i] + 1 < nxt[i]:
        return last[:i] + bytes([last[i] + 1])
    return last


def _successor(key):
    for i, b in enumerate(key):
        if b != 0xFF:
            return key[:i] + bytes([b + 1])
    return key


def build_table(items):
    """The bytes of a table holding ``items`` ((key bytes, value bytes), any order)."""
    items = sorted(items, key=lambda kv: kv[0])
    out = bytearray()
    blocks, cur, est = [], [], 4
    for k, v in items:
        cur.append((k, v))
        est += len(k) + len(v) + 6 + (4 if (len(cur) - 1) % _RESTART_INTERVAL == 0 else 0)
        if est >= _BLOCK_SIZE:
            blocks.append(cur)
            cur, est = [], 4
    if cur or not blocks:
        blocks.append(cur)
    index = []
    for bi, entries in enumerate(blocks):
        block = _block(entries, _RESTART_INTERVAL)
        handle = varint(len(out)) + varint(len(block))
        out += block + _trailer(block)
        last = entries[-1][0] if entries else b""
        if bi + 1 < len(blocks):
            key = _separator(last, blocks[bi + 1][0][0])
        else:
            key = _successor(last)
        index.append((key, handle))
    meta = _block([], 1)
    meta_handle = varint(len(out)) + varint(len(meta))
    out += meta + _trailer(meta)
    idx = _block(index, 1)
    idx_handle = varint(len(out)) + varint(len(idx))
    out += idx + _trailer(idx)
    handles = meta_handle + idx_handle
    out += handles + b"\x00" * (40 - len(handles)) + _MAGIC
    return bytes(out)


# ------------------------------------------------------------------ bundle writer


def _as_payload(value):
    """(dtype enum, shape, bytes-like payload, masked crc) of a value."""
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value)
        n = len(value)
        lens = varint(n)
        crc = crc32c(struct.pack("<I", n) if n <= 0xFFFFFFFF else struct.pack("<Q", n))
        stored = struct.pack("<I", mask(crc))
        crc = crc32c(stored, crc)
        crc = crc32c(value, crc)
        return DT_STRING, (), lens + stored + value, mask(crc)
    arr = np.asarray(value)
    if arr.dtype not in _DT_OF_NP:
        raise TypeError("cannot save %s values in a checkpoint" % arr.dtype)
    shape = arr.shape
    flat = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
    return _DT_OF_NP[arr.dtype], shape, flat, mask(crc32c(flat))


def _current_shards(prefix):
    """num_shards of the bundle now at ``prefix`` (0 when there is none or it is unreadable)."""
    try:
        with open(index_path(prefix), "rb") as f:
            head = f.read(64)
        # the header is the table's first entry: 00 00 <len> then BundleHeaderProto
        if head[:2] == b"\x00\x00":
            n, pos = read_varint(head, 2)
            for field, wt, v in pb_fields(head[pos:pos + n]):
                if field == 1 and wt == 0:
                    return v
    except (OSError, ValueError):
        pass
    return 0


def write_bundle(prefix, items):
    """Writes ``items`` ([(key str, NumPy array or bytes)]; bytes are a DT_STRING scalar)
    as the bundle ``prefix``: the data shard first, then the index, each through a
    temporary file, fsync and rename; the index's rename is the commit point.

    NOTE: overwriting a bundle must not pair the old index with new data: when
    ``P.data-00000-of-00001`` is in use the new data goes to ``P.data-00000-of-00002``
    (header num_shards 2, TensorFlow reads it: only referenced shards are opened) and the
    old data file is removed after the new index is in place."""
    entries = []
    payloads = []
    offset = 0
    for key, value in items:
        dt, shape, payload, crc = _as_payload(value)
        size = len(payload)
        entries.append((key.encode("utf-8"), Entry(dt, shape, 0, offset, size, crc).encode()))
        payloads.append(payload)
        offset += size

    def write_data(f):
        for p in payloads:
            f.write(p)

    directory = os.path.dirname(prefix)
    shards = 2 if _current_shards(prefix) == 1 else 1
    new_data = data_path(prefix, 0, shards)
    _fileio.atomic_write(new_data, write_data, sync_dir=False)
    table = build_table([(b"", _header(shards))] + entries)
    _fileio.atomic_write(index_path(prefix), lambda f: f.write(table), sync_dir=False)
    _fileio.fsync_dir(directory)
    for old in data_files(prefix):
        if old != new_data:
            _fileio.remove_file(old)
    _fileio.fsync_dir(directory)


def data_files(prefix):
    """The data shards on disk for ``prefix`` (any shard count)."""
    import glob

    return sorted(glob.glob(glob.escape(prefix) + ".data-[0-9][0-9][0-9][0-9][0-9]-of-"
                            "[0-9][0-9][0-9][0-9][0-9]"))


# ------------------------------------------------------------------ bundle reader


def _parse_block(buf, what):
    if len(buf) < 4:
        raise ValueError("%s is too short" % what)
    n = struct.unpack_from("<I", buf, len(buf) - 4)[0]
    limit = len(buf) - 4 - 4 * n
    if n == 0 or limit < 0:
        raise ValueError("%s has a bad restart array" % what)
    out, pos, prev = [], 0, b""
    while pos < limit:
        shared, pos = read_varint(buf, pos, limit)
        unshared, pos = read_varint(buf, pos, limit)
        vlen, pos = read_varint(buf, pos, limit)
        if shared > len(prev) or pos + unshared + vlen > limit:
            raise ValueError("%s has a corrupt entry" % what)
        key = prev[:shared] + bytes(buf[pos:pos + unshared])
        pos += unshared
        out.append((key, bytes(buf[pos:pos + vlen])))
        pos += vlen
        prev = key
    return out


class BundleReader:
    """Reads a bundle's index once; ``entries`` maps each key to its Entry, ``read(key)``
    returns the checked value (NumPy array, NumPy scalar for rank 0, bytes for a string
    scalar). Every damage is an exception naming the file (and the key)."""

    def __init__(self, prefix):
        self.prefix = prefix
        path = index_path(prefix)
        data = _fileio.read_file(path, "checkpoint index")
        try:
            table = self._read_table(data)
        except ValueError as e:
            raise errors.DataLossError(None, None, "Unable to read checkpoint index %s: %s"
                                       % (path, e)) from None
        if not table or table[0][0] != b"":
            raise errors.DataLossError(None, None, "checkpoint index %s has no header entry"
                                       % path)
        self.num_shards = 0
        try:
            for field, wt, v in pb_fields(table[0][1]):
                if field == 1 and wt == 0:
                    self.num_shards = v
                elif field == 2 and wt == 0 and v:
                    raise ValueError("big-endian bundles are not supported")
                elif field == 3 and wt == 2:
                    for f2, w2, x in pb_fields(v):
                        if f2 == 2 and w2 == 0 and x > 1:
                            raise ValueError("min consumer version %d above current version 1"
                                             % x)
                        if f2 == 3 and w2 == 0 and x == 1:
                            raise ValueError("the bundle disallows consumer version 1")
            self.entries = {}
            for k, v in table[1:]:
                key = k.decode("utf-8", "surrogateescape")
                self.entries[key] = Entry.decode(v)
        except ValueError as e:
            raise errors.DataLossError(None, None, "Unable to read checkpoint index %s: %s"
                                       % (path, e)) from None
        self._sizes = {}

    @staticmethod
    def _read_table(data):
        if len(data) < 48:
            raise ValueError("file is too short to be an sstable")
        footer = data[-48:]
        if footer[40:] != _MAGIC:
            raise ValueError("not an sstable (bad magic number)")
        moff, pos = read_varint(footer, 0, 40)
        msize, pos = read_varint(footer, pos, 40)
        off, pos = read_varint(footer, pos, 40)
        size, pos = read_varint(footer, pos, 40)
        # stricter than TF (which never reads them): the metaindex block's checksum and
        # the footer's zero padding, so that no flipped byte goes unnoticed
        if any(footer[pos:40]):
            raise ValueError("corrupt footer (nonzero padding)")
        BundleReader._block_at(data, moff, msize)
        out, prev = [], None
        for _, handle in _parse_block(BundleReader._block_at(data, off, size), "index block"):
            o, p = read_varint(handle, 0)
            s, p = read_varint(handle, p)
            for k, v in _parse_block(BundleReader._block_at(data, o, s), "data block"):
                if prev is not None and k <= prev:
                    raise ValueError("keys out of order")
                prev = k
                out.append((k, v))
        return out

    @staticmethod
    def _block_at(data, off, size):
        end = len(data) - 48
        if off + size + 5 > end:
            raise ValueError("a block handle points past the end of the file")
        block = data[off:off + size]
        kind = data[off + size]
        stored = struct.unpack_from("<I", data, off + size + 1)[0]
        if mask(crc32c(bytes([kind]), crc32c(block))) != stored:
            raise ValueError("block checksum mismatch")
        if kind != 0:
            raise ValueError("compressed blocks (type %d) are not supported" % kind)
        return block

    def keys(self):
        return [k for k, e in self.entries.items() if not k.startswith("\x00")]

    def _data_file(self, key, e):
        if self.num_shards < 1 or e.shard_id >= self.num_shards:
            raise errors.DataLossError(None, None, "%s: entry %r names shard %d of %d"
                                       % (index_path(self.prefix), key, e.shard_id,
                                          self.num_shards))
        path = data_path(self.prefix, e.shard_id, self.num_shards)
        if path not in self._sizes:
            try:
                self._sizes[path] = _fileio.check_regular_file(path, "checkpoint data file")
            except errors.NotFoundError as ex:
                raise errors.NotFoundError(None, None, "%s (needed for %r)" % (ex, key)) \
                    from None
        if e.offset + e.size > self._sizes[path]:
            raise _TruncatedError(None, None, "Read less bytes than requested: %s holds %d "
                                  "bytes, %r needs [%d, %d)" % (path, self._sizes[path], key,
                                                                e.offset, e.offset + e.size))
        return path

    def read(self, key):
        if key not in self.entries:
            raise errors.NotFoundError(None, None, "Key %s not found in checkpoint %s"
                                       % (key, self.prefix))
        e = self.entries[key]
        if e.sliced:
            raise ValueError("%s: %r is a partitioned (sliced) tensor, which mixprec does not "
                             "read" % (self.prefix, key))
        if e.dtype == DT_STRING:
            return self._read_strings(key, e)
        if e.dtype not in _NP_OF_DT:
            raise ValueError("%s: %r holds dtype %d, which mixprec does not read"
                             % (self.prefix, key, e.dtype))
        dtype = _NP_OF_DT[e.dtype]
        count = 1
        for d in e.shape:
            count *= d
        if count * dtype.itemsize != e.size:
            raise errors.DataLossError(None, None, "Invalid size in bundle entry: key %s; "
                                       "stored size %d; expected size %d (%s)"
                                       % (key, e.size, count * dtype.itemsize, self.prefix))
        path = self._data_file(key, e)
        arr = np.empty(count, dtype)
        buf = arr.view(np.uint8)
        with open(path, "rb") as f:
            f.seek(e.offset)
            got = f.readinto(buf) if e.size else 0
        if got != e.size:
            raise _TruncatedError(None, None, "Read less bytes than requested: %s, %r" % (
                path, key))
        if mask(crc32c(buf)) != e.crc32c:
            raise errors.DataLossError(None, None, "Checksum does not match: stored %d vs. "
                                       "calculated on the restored bytes %d, for %r in %s"
                                       % (e.crc32c, mask(crc32c(buf)), key, path))
        arr = arr.reshape(e.shape)
        return arr[()] if arr.ndim == 0 else arr

    def _read_strings(self, key, e):
        path = self._data_file(key, e)
        with open(path, "rb") as f:
            f.seek(e.offset)
            raw = f.read(e.size)
        count = 1
        for d in e.shape:
            count *= d
        bad = errors.DataLossError(None, None, "corrupt string tensor %r in %s" % (key, path))
        if count > len(raw):
            raise bad
        lens, pos, crc = [], 0, 0
        try:
            for _ in range(count):
                n, pos = read_varint(raw, pos)
                lens.append(n)
                crc = crc32c(struct.pack("<I", n) if n <= 0xFFFFFFFF else struct.pack("<Q", n),
                             crc)
        except ValueError:
            raise bad from None
        if pos + 4 > len(raw) or pos + 4 + sum(lens) != e.size:
            raise bad
        stored = raw[pos:pos + 4]
        if struct.unpack("<I", stored)[0] != mask(crc):
            raise errors.DataLossError(None, None, "The length checksum does not match for "
                                       "%r in %s" % (key, path))
        crc = crc32c(stored, crc)
        pos += 4
        out = []
        for n in lens:
            out.append(raw[pos:pos + n])
            pos += n
        crc = crc32c(raw[pos - sum(lens):pos], crc)
        if mask(crc) != e.crc32c:
            raise errors.DataLossError(None, None, "Checksum does not match for %r in %s"
                                       % (key, path))
        if not e.shape:
            return out[0]
        return np.array(out, dtype=object).reshape(e.shape)
