"""Datasets on disk: ``Dataset.save``/``Dataset.load``, ``snapshot`` and ``cache(filename)``.

mixprec's own file (one ``.npz`` holding every component of every element plus the element
spec as JSON), not TensorFlow's snapshot format: a directory TensorFlow wrote is refused by
name. Files are written through _fileio.atomic_write, so a process killed mid-write leaves
the previous copy intact; reads never unpickle (``allow_pickle=False``)."""

import hashlib
import json
import os
import zipfile

import numpy as np

from mixprec import _fileio, _nest, errors
from mixprec.data import dataset as _ds

__all__ = ["save", "load", "Snapshot", "FileCache"]

_FILE = "mixprec_dataset.npz"
_SPEC_KEY = "__element_spec__"


# ----------------------------------------------------------------------- the element spec


def _encode_spec(spec):
    if isinstance(spec, dict):
        return {"dict": [[k, _encode_spec(spec[k])] for k in spec]}
    if isinstance(spec, (tuple, list)):
        return {"tuple": [_encode_spec(s) for s in spec]}
    if not hasattr(spec, "dtype"):
        raise TypeError("Dataset.save: cannot save a component of type %s"
                        % type(spec).__name__)
    shape = None if spec.shape.rank is None else list(spec.shape)
    return {"dtype": spec.dtype.name, "shape": shape}


def _decode_spec(obj):
    from mixprec._function import TensorSpec
    if "dict" in obj:
        return {k: _decode_spec(v) for k, v in obj["dict"]}
    if "tuple" in obj:
        return tuple(_decode_spec(v) for v in obj["tuple"])
    return TensorSpec(obj["shape"], obj["dtype"])


# ----------------------------------------------------------------------- one file


def _as_array(x, leaf):
    a = _ds._to_numpy(x)
    if a.dtype.kind == "O" or leaf.dtype.name == "string":
        return np.asarray([v if isinstance(v, bytes) else str(v).encode()
                           for v in a.reshape(-1)], dtype="S").reshape(a.shape)
    return a


def _write(path, spec, elements):
    leaves = _nest.flatten(spec)
    arrays = {}
    count = 0
    for i, elem in enumerate(elements):
        for j, (x, leaf) in enumerate(zip(_nest.flatten(elem), leaves)):
            arrays["e%d_%d" % (i, j)] = _as_array(x, leaf)
        count = i + 1
    meta = json.dumps({"format": "mixprec.data/1", "count": count,
                       "element_spec": _encode_spec(spec)}).encode()
    arrays[_SPEC_KEY] = np.frombuffer(meta, dtype=np.uint8)
    _fileio.atomic_write(path, lambda f: np.savez(f, **arrays))
    return count


def _read_meta(path):
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(bytes(z[_SPEC_KEY]).decode())
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as e:
        raise errors.DataLossError(None, None, "%s is not a readable mixprec dataset file: %s"
                                   % (path, e)) from None
    if meta.get("format") != "mixprec.data/1":
        raise errors.DataLossError(None, None, "%s: unknown dataset file format %r"
                                   % (path, meta.get("format")))
    return meta


class _FromFile(_ds.Dataset):
    _tf_name = "_LoadDataset"

    def __init__(self, path, spec, count):
        self._path, self._spec, self._count = path, spec, count

    def _elements(self):
        leaves = _nest.flatten(self._spec)
        try:
            z = np.load(self._path, allow_pickle=False)
        except (OSError, ValueError, zipfile.BadZipFile) as e:
            raise errors.DataLossError(None, None, "%s: %s" % (self._path, e)) from None
        with z:
            for i in range(self._count):
                comps = []
                for j, leaf in enumerate(leaves):
                    try:
                        a = z["e%d_%d" % (i, j)]
                    except (KeyError, ValueError, zipfile.BadZipFile, OSError) as e:
                        raise errors.DataLossError(None, None, "%s is truncated or corrupt: %s"
                                                   % (self._path, e)) from None
                    if leaf.dtype.name == "string":
                        a = a.astype(object)
                    comps.append(a)
                yield _nest.pack_sequence_as(self._spec, comps)

    def _cardinality(self):
        return self._count

    def _element_spec(self):
        return self._spec


# ----------------------------------------------------------------------- save / load


def save(dataset, path, compression=None, shard_func=None, checkpoint_args=None):
    if shard_func is not None:
        raise NotImplementedError("Dataset.save: shard_func is not supported by mixprec "
                                  "(one file holds every element)")
    if compression not in (None, "", "GZIP", "SNAPPY", "NONE"):
        raise ValueError("Invalid `compression`: %r" % (compression,))
    n = dataset._cardinality()
    if n is not None and n < 0:
        raise errors.InvalidArgumentError(None, None, "Cannot save an infinite dataset.")
    path = os.fspath(path)
    os.makedirs(path, exist_ok=True)
    _write(os.path.join(path, _FILE), dataset.element_spec, dataset._elements())


def load(path, element_spec=None, compression=None, reader_func=None):
    path = os.fspath(path)
    f = os.path.join(path, _FILE)
    if not os.path.exists(f):
        if os.path.exists(os.path.join(path, "dataset_spec.pb")):
            raise errors.UnimplementedError(
                None, None, "%s holds a dataset saved by TensorFlow; mixprec reads only "
                "datasets saved by mixprec's Dataset.save" % path)
        raise errors.NotFoundError(None, None, "tf.data snapshot element_spec file not found:"
                                   " %s." % f)
    meta = _read_meta(f)
    spec = _decode_spec(meta["element_spec"])
    if element_spec is not None and repr(element_spec) != repr(spec):
        raise ValueError("The `element_spec` given does not match the saved dataset's: "
                         "%r vs %r" % (element_spec, spec))
    return _FromFile(f, spec, int(meta["count"]))


# ----------------------------------------------------------------------- snapshot / cache


def _fingerprint(ds, h=None, depth=0):
    """A digest of the pipeline (stage classes, parameters, the source data, the user
    functions' code): a changed pipeline never reads another one's snapshot."""
    h = h or hashlib.sha1()
    if depth > 64:
        return h
    h.update(type(ds).__name__.encode())
    for k in sorted(vars(ds)):
        v = vars(ds)[k]
        if k in ("_spec_cache", "_kept", "_epoch", "_pass"):
            continue
        _digest_value(v, h, depth)
    return h


def _digest_value(v, h, depth):
    if isinstance(v, _ds.Dataset):
        _fingerprint(v, h, depth + 1)
    elif isinstance(v, np.ndarray):
        h.update(str((v.dtype, v.shape)).encode())
        h.update(v.tobytes() if v.dtype.kind != "O" else repr(v.tolist()).encode())
    elif hasattr(v, "__code__"):
        code = v.__code__
        h.update(code.co_code)
        h.update(repr(code.co_consts).encode())
        h.update(getattr(v, "__qualname__", "").encode())
        for cell in getattr(v, "__closure__", None) or ():
            try:
                _digest_value(cell.cell_contents, h, depth + 1)
            except ValueError:  # an empty cell
                pass
    elif isinstance(v, (list, tuple)):
        for x in v:
            _digest_value(x, h, depth)
    elif isinstance(v, dict):
        for k in sorted(v, key=str):
            h.update(str(k).encode())
            _digest_value(v[k], h, depth)
    elif isinstance(v, (int, float, str, bool, bytes, type(None))):
        h.update(repr(v).encode())
    elif hasattr(v, "numpy"):
        _digest_value(np.asarray(v.numpy()), h, depth)
    else:
        h.update(type(v).__name__.encode())


class _WriteThrough(_ds.Dataset):
    """The input's elements; a pass that completes is written to ``self._file``, and
    later passes (or pipelines) read the file."""

    def __init__(self, src, file):
        self._src, self._file = src, file

    def _elements(self):
        if os.path.exists(self._file):
            meta = _read_meta(self._file)
            spec = _decode_spec(meta["element_spec"])
            yield from _FromFile(self._file, spec, int(meta["count"]))._elements()
            return
        seen = []
        for elem in self._src._elements():
            seen.append(elem)
            yield elem
        d = os.path.dirname(self._file)
        if d:
            os.makedirs(d, exist_ok=True)
        _write(self._file, self.element_spec, seen)

    def _cardinality(self):
        return self._src._cardinality()


class Snapshot(_WriteThrough):
    _tf_name = "_MapDataset"  # TensorFlow's snapshot() ends in a map

    def __init__(self, src, path):
        fp = _fingerprint(src).hexdigest()
        super().__init__(src, os.path.join(os.fspath(path), fp, _FILE))


class FileCache(_WriteThrough):
    _tf_name = "CacheDataset"

    def __init__(self, src, filename):
        super().__init__(src, os.fspath(filename) + ".mixprec-cache.npz")
