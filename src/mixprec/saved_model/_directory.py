"""The SavedModel directory on disk: its file names (saved_model.pb, keras_metadata.pb,
fingerprint.pb, variables/variables.{index,data-*}, assets/), reading them with
TensorFlow's exceptions, and writing a whole directory crash-safely (built under a
temporary sibling, then swapped in). Knows no Keras and no object semantics."""

import ctypes
import hashlib
import os
import shutil
import uuid

from mixprec import _fileio
from mixprec.saved_model import _protos

__all__ = ["SAVED_MODEL_PB", "KERAS_METADATA_PB", "FINGERPRINT_PB", "VARIABLES_DIR",
           "ASSETS_DIR", "variables_prefix", "contains_saved_model", "read_saved_model",
           "read_metadata", "write_directory"]

SAVED_MODEL_PB = "saved_model.pb"
SAVED_MODEL_PBTXT = "saved_model.pbtxt"
KERAS_METADATA_PB = "keras_metadata.pb"
FINGERPRINT_PB = "fingerprint.pb"
VARIABLES_DIR = "variables"
VARIABLES_NAME = "variables"
ASSETS_DIR = "assets"
EXTRA_ASSETS_DIR = "assets.extra"


def variables_prefix(export_dir):
    return os.path.join(export_dir, VARIABLES_DIR, VARIABLES_NAME)


def contains_saved_model(export_dir):
    """``tf.saved_model.contains_saved_model``: True when the directory holds a
    saved_model.pb (or .pbtxt)."""
    export_dir = os.fspath(export_dir)
    return os.path.isdir(export_dir) and any(
        os.path.isfile(os.path.join(export_dir, n)) for n in (SAVED_MODEL_PB, SAVED_MODEL_PBTXT))


def _missing(export_dir):
    # TensorFlow's loader: OSError with this exact text
    return OSError("SavedModel file does not exist at: %s%s{%s|%s}"
                   % (export_dir, os.sep, SAVED_MODEL_PBTXT, SAVED_MODEL_PB))


def read_saved_model(export_dir):
    """The decoded saved_model.pb of ``export_dir`` (_protos.SavedModelProto). OSError as
    TensorFlow's when the file is missing or does not parse."""
    export_dir = os.fspath(export_dir)
    pb = os.path.join(export_dir, SAVED_MODEL_PB)
    if not os.path.isfile(pb):
        if os.path.isfile(os.path.join(export_dir, SAVED_MODEL_PBTXT)):
            raise NotImplementedError(
                "%s holds a text-format saved_model.pbtxt, which mixprec does not read. hint: "
                "re-save it in binary form (the default of tf.saved_model.save)." % export_dir)
        raise _missing(export_dir)
    data = _fileio.read_file(pb, "SavedModel file")
    try:
        return _protos.decode_saved_model(data)
    except (ValueError, IndexError) as e:
        raise OSError("Cannot parse file %r: Error parsing message with type "
                      "'tensorflow.SavedModel': %s" % (pb.encode(), e)) from None


def read_metadata(export_dir):
    """[(node id, node path, identifier, metadata JSON)] of keras_metadata.pb, or None
    when the directory has none. A corrupt file is an OSError naming it."""
    path = os.path.join(os.fspath(export_dir), KERAS_METADATA_PB)
    if not os.path.isfile(path):
        return None
    data = _fileio.read_file(path, "Keras metadata file")
    try:
        return _protos.decode_metadata(data)
    except (ValueError, IndexError, UnicodeDecodeError) as e:
        raise OSError("Cannot parse file %r: Error parsing message with type "
                      "'third_party.py.keras.protobuf.SavedMetadata': %s"
                      % (path.encode(), e)) from None


def _fingerprint(tmp, saved_model_bytes, graph_bytes, signature_bytes):
    def h(data):
        return int.from_bytes(hashlib.sha256(data).digest()[:8], "little")

    ckpt = b""
    index = variables_prefix(tmp) + ".index"
    if os.path.isfile(index):
        with open(index, "rb") as f:
            ckpt = f.read()
    return _protos.encode_fingerprint(
        [h(saved_model_bytes), h(b""), h(signature_bytes), h(graph_bytes), h(ckpt)],
        uuid.uuid4().int)


# ------------------------------------------------------------------ crash-safe directory


def _exchange(a, b):
    """Atomically swaps two existing paths (Linux renameat2 RENAME_EXCHANGE); False where
    the system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                   ctypes.c_uint]
    return fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def _fsync_tree(top):
    for root, dirs, files in os.walk(top):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fileio.fsync_dir(root)


def write_directory(export_dir, fill):
    """Builds a SavedModel directory: ``fill(tmp)`` writes everything into a fresh
    temporary directory next to ``export_dir`` (it returns (saved_model bytes, object graph
    bytes, signature bytes) for the fingerprint), which is then fsynced and put in place.

    NOTE: the last good copy is never destroyed mid-write: an existing directory is swapped
    with the new one in one atomic rename (renameat2 RENAME_EXCHANGE) and only then removed;
    where the system cannot swap, the old one is first renamed aside, so a crash leaves
    either it or the new one under a name next to ``export_dir``."""
    export_dir = os.path.abspath(os.fspath(export_dir))
    if os.path.exists(export_dir) and not os.path.isdir(export_dir):
        raise FileExistsError("%s exists and is not a directory; a SavedModel is a directory"
                              % export_dir)
    parent = os.path.dirname(export_dir)
    os.makedirs(parent, exist_ok=True)
    tag = uuid.uuid4().hex
    base = os.path.basename(export_dir)
    tmp = os.path.join(parent, ".%s.tmp%s" % (base, tag))
    os.makedirs(os.path.join(tmp, VARIABLES_DIR))
    os.makedirs(os.path.join(tmp, ASSETS_DIR))
    try:
        sm_bytes, graph_bytes, sig_bytes = fill(tmp)
        fp = _fingerprint(tmp, sm_bytes, graph_bytes, sig_bytes)
        with open(os.path.join(tmp, FINGERPRINT_PB), "wb") as f:
            f.write(fp)
        _fsync_tree(tmp)
        if os.path.isdir(export_dir):
            old = os.path.join(parent, ".%s.old%s" % (base, tag))
            if _exchange(tmp, export_dir):
                os.rename(tmp, old)  # tmp now names the previous copy
            else:
                os.rename(export_dir, old)
                os.rename(tmp, export_dir)
            _fileio.fsync_dir(parent)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, export_dir)
        _fileio.fsync_dir(parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return export_dir
