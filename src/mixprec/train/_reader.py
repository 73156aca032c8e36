"""``tf.train.load_checkpoint`` / ``list_variables``: a checkpoint's tensors by key,
without any object graph (TensorFlow's CheckpointReader). Reads through _bundle.py; a
directory argument means its latest checkpoint."""

import os

from mixprec import _dtypes, errors
from mixprec.train import _bundle, _management

__all__ = ["CheckpointReader", "load_checkpoint", "list_variables", "load_variable"]


def _prefix(ckpt_dir_or_file):
    p = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(p):
        latest = _management.latest_checkpoint(p)
        if latest is None:
            raise ValueError("Couldn't find 'checkpoint' file or checkpoints in given "
                             "directory %s" % p)
        return latest
    if not os.path.exists(_bundle.index_path(p)):
        raise errors.NotFoundError(None, None, "Unsuccessful TensorSliceReader constructor: "
                                   "Failed to find any matching files for %s" % p)
    return p


class CheckpointReader:
    """``get_tensor``, ``has_tensor``, ``get_variable_to_shape_map``,
    ``get_variable_to_dtype_map`` of one checkpoint."""

    def __init__(self, prefix):
        self._reader = _bundle.BundleReader(prefix)

    def has_tensor(self, name):
        return name in self._reader.entries

    def get_tensor(self, name):
        """The value (a NumPy array; NumPy scalar for rank 0; bytes for a string)."""
        return self._reader.read(name)

    def get_variable_to_shape_map(self):
        return {k: list(self._reader.entries[k].shape) for k in self._reader.keys()}

    def get_variable_to_dtype_map(self):
        out = {}
        for k in self._reader.keys():
            name = _bundle.DT_NAMES.get(self._reader.entries[k].dtype)
            out[k] = getattr(_dtypes, name, name) if name else None
        return out

    def debug_string(self):
        return "".join("%s (%s) %s\n" % (k, _bundle.DT_NAMES.get(e.dtype, e.dtype),
                                         list(e.shape))
                       for k, e in sorted(self._reader.entries.items()) if k)


def load_checkpoint(ckpt_dir_or_file):
    """A CheckpointReader of a checkpoint prefix, or of a directory's latest checkpoint."""
    return CheckpointReader(_prefix(ckpt_dir_or_file))


def list_variables(ckpt_dir_or_file):
    """[(key, shape)] of every tensor in the checkpoint, sorted by key."""
    reader = load_checkpoint(ckpt_dir_or_file)
    shapes = reader.get_variable_to_shape_map()
    return [(k, shapes[k]) for k in sorted(shapes)]


def load_variable(ckpt_dir_or_file, name):
    """The value of the tensor ``name`` (a key, e.g. ``v/.ATTRIBUTES/VARIABLE_VALUE``; a
    trailing ``:0`` is dropped, as TensorFlow) in a checkpoint prefix or directory."""
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)
