"""Where Keras keeps datasets, and reading the files (npz, IDX) without pickles."""

import gzip
import math
import os
import tempfile
import zlib

import numpy as np

__all__ = ["cache_dirs", "find", "read_idx"]


def cache_dirs(subdir="datasets"):
    """Keras' cache directories in lookup order: $KERAS_HOME (Keras 3), ~/.keras, and the
    temp-dir fallback Keras uses when the home directory is not writable."""
    out = []
    home = os.environ.get("KERAS_HOME")
    if home:
        out.append(os.path.join(home, subdir))
    out.append(os.path.join(os.path.expanduser("~"), ".keras", subdir))
    out.append(os.path.join(tempfile.gettempdir(), ".keras", subdir))
    return out


def find(name, extra_dirs=()):
    """The first existing file ``name`` (absolute paths are taken as they are)."""
    if os.path.isabs(name):
        return name if os.path.exists(name) else None
    for d in list(cache_dirs()) + list(extra_dirs):
        p = os.path.join(d, name)
        if os.path.exists(p):
            return p
    return None


def read_idx(path, kind):
    """An IDX file (optionally gzipped) of unsigned bytes: 'images' -> (N, rows, cols),
    'labels' -> (N,)."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError, zlib.error) as e:  # gzip.BadGzipFile is an OSError
        raise ValueError("Cannot read %s: %s (corrupt or truncated file?)" % (path, e)) from None
    if len(raw) < 8 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError("%s is not an IDX file of unsigned bytes (bad magic number)" % path)
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    offset = 4 + 4 * ndim
    count = math.prod(dims) if dims else 0  # Python ints: a crafted header cannot wrap
    if len(raw) - offset != count:
        raise ValueError("%s is truncated or corrupt: expected %d bytes of data after the "
                         "header, found %d" % (path, count, len(raw) - offset))
    expected = 3 if kind == "images" else 1
    if ndim != expected:
        raise ValueError("%s holds %d-d data; expected %s" % (path, ndim, kind))
    return np.frombuffer(raw, np.uint8, offset=offset).reshape(dims)
