"""``tf.data.TextLineDataset``: the lines of text files as scalar string elements.

It owns reading the files (plain or GZIP/ZLIB) and cutting lines; the elements are string
tensors of the core. It must not parse the lines (tf.strings does that in ``map``).
"""

import gzip
import zlib

import numpy as np

from mixprec import _core
from mixprec.data.dataset import Dataset

__all__ = ["TextLineDataset"]


def _read(path, compression_type):
    with open(path, "rb") as f:
        data = f.read()
    if compression_type == "GZIP":
        data = gzip.decompress(data)
    elif compression_type == "ZLIB":
        data = zlib.decompress(data)
    elif compression_type not in (None, "", "NONE"):
        raise ValueError("Unsupported compression_type: %r (expected None, 'GZIP' or 'ZLIB')"
                         % (compression_type,))
    return data


def TextLineDataset(filenames, compression_type=None, buffer_size=None,  # noqa: N802 - TF's name
                    num_parallel_reads=None, name=None):
    """One element per line of each file in order; line endings ("\\n", "\\r\\n") stripped."""
    if isinstance(filenames, _core.Tensor):
        filenames = filenames.numpy()
    if isinstance(filenames, (str, bytes)):
        filenames = [filenames]
    lines = []
    for fn in np.ravel(np.asarray(filenames, dtype=object)):
        path = fn.decode() if isinstance(fn, bytes) else str(fn)
        try:
            data = _read(path, compression_type)
        except FileNotFoundError:
            from mixprec import errors
            raise errors.NotFoundError(None, None, "%s; No such file or directory" % path) from None
        parts = data.split(b"\n")
        if parts and parts[-1] == b"":
            parts.pop()
        lines.extend(p[:-1] if p.endswith(b"\r") else p for p in parts)
    ds = Dataset.from_tensor_slices(np.array(lines, dtype=object) if lines
                                    else _core.constant(np.array([], dtype=object)))
    ds._tf_name = "TextLineDatasetV2"
    return ds
