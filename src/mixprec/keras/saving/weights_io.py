"""Keras weights files (``Model.save_weights``/``load_weights``): the choice of format by
suffix (as tf-keras: ``.weights.h5`` its v3 HDF5 layout, ``.h5``/``.hdf5``/``.keras`` its
legacy HDF5 layout, anything else a TensorFlow checkpoint) and mixprec's own ``.npz``
format: a NumPy ``.npz`` of ``.npy`` arrays plus a JSON manifest (docs/architecture.md,
"Weights files"). Owns the dispatch and the .npz format; the HDF5 layouts are
legacy_h5.py's and saving_lib.py's. No training logic, no tensor arithmetic."""

import io
import json
import math
import zipfile
import zlib

import os

import numpy as np

from mixprec import _fileio, errors

_WEIGHTS_FORMAT = "mixprec-weights-1"
H5_SUFFIXES = (".h5", ".hdf5", ".keras")  # tf-keras' is_hdf5_filepath


def _format(filepath, save_format):
    """'v3' (.weights.h5), 'h5' (tf-keras' legacy HDF5 layout), 'npz' (mixprec's) or
    'tf' (a TensorFlow checkpoint), by tf-keras' rules plus '.npz'."""
    is_h5 = filepath.endswith(H5_SUFFIXES)
    if save_format is None:
        if filepath.endswith(".weights.h5"):
            return "v3"
        if is_h5:
            return "h5"
        return "npz" if filepath.lower().endswith(".npz") else "tf"
    fmt = str(save_format).lower().strip()
    if fmt in ("tf", "tensorflow"):
        if is_h5:
            raise ValueError('save_weights got save_format="tf"/"tensorflow", but the filepath '
                             '(%s) looks like an HDF5 file. Omit the ".h5"/".keras" when saving '
                             'in TensorFlow format.' % filepath)
        return "tf"
    if fmt in ("h5", "hdf5", "keras"):
        return "h5"
    if fmt == "npz":
        return "npz"
    raise ValueError("Unknown format. Received: `save_format`=%s. Was expecting one of "
                     "{\"tf\", \"h5\"}." % (save_format,))


def save_weights(model, filepath, overwrite=True, save_format=None, options=None):
    """``Model.save_weights``: by tf-keras' rules, HDF5 for ``.h5``/``.hdf5``/``.keras``
    (tf-keras' legacy layout; ``.weights.h5`` its v3 layout; both need h5py), else
    TensorFlow's checkpoint format (``filepath.index``, the data shard and a ``checkpoint``
    file); ``.npz`` (or save_format='npz') is mixprec's own format, needing nothing. All are
    written crash-safely: a kill mid-save leaves the previous file loadable."""
    from mixprec.keras.saving import legacy_h5, saving_lib
    from mixprec.train import _checkpoint, _management

    filepath = os.fspath(filepath)
    fmt = _format(filepath, save_format)
    target = filepath + ".index" if fmt == "tf" else filepath
    if not overwrite and os.path.exists(target):
        raise FileExistsError("%s exists and overwrite=False" % target)
    if fmt == "npz":
        return save_npz(model, filepath)
    if fmt == "v3":
        return saving_lib.save_weights_only(model, filepath)
    if fmt == "h5":
        return legacy_h5.save_weights(model, filepath)
    _checkpoint.save_object(model, filepath)
    _management.update_checkpoint_state(os.path.dirname(filepath), filepath, [filepath])
    return None


def load_weights(model, filepath, by_name=False, skip_mismatch=False, options=None):
    """``Model.load_weights``: a TensorFlow checkpoint when ``filepath.index`` exists (or
    a directory holding a ``checkpoint`` file), else mixprec's .npz file. A missing file
    is a NotFoundError; one that is not a regular file (a directory, /dev/zero, a FIFO) a
    ValueError, refused before reading."""
    from mixprec.train import _checkpoint, _management

    filepath = os.fspath(filepath)
    prefix = filepath
    if os.path.isdir(filepath) and not os.path.exists(filepath + ".index"):
        latest = _management.latest_checkpoint(filepath)
        if latest is not None:
            prefix = latest
    if os.path.exists(prefix + ".index"):
        if skip_mismatch and not by_name:
            raise ValueError("When calling model.load_weights, skip_mismatch can only be set "
                             "to True when by_name is True.")
        if by_name:
            raise NotImplementedError(
                "Weights may only be loaded based on topology into Models when loading "
                "TensorFlow-formatted weights (got by_name=True to load_weights).")
        r = _checkpoint.restore_object(model, prefix)
        status = _checkpoint.CheckpointLoadStatus(r, model)
        status.assert_nontrivial_match()
        return status
    if not os.path.lexists(filepath):
        raise errors.NotFoundError(
            None, None, "Unable to load weights from %r: not found (neither a weights file "
            "nor a checkpoint %r). hint: files are written by Model.save_weights()"
            % (filepath, filepath + ".index"))
    try:
        _fileio.check_regular_file(filepath, "weights file")
    except ValueError as e:
        raise ValueError("Unable to load weights from %r: %s. hint: files are written by "
                         "Model.save_weights()" % (filepath, e)) from None
    from mixprec.keras.saving import legacy_h5, saving_lib

    if filepath.endswith(".keras") and _is_model_archive(filepath):
        return saving_lib.load_weights_only(model, filepath, skip_mismatch=skip_mismatch)
    if legacy_h5.is_hdf5(filepath):
        if filepath.endswith(".weights.h5"):
            return saving_lib.load_weights_only(model, filepath, skip_mismatch=skip_mismatch)
        if skip_mismatch and not by_name:
            raise ValueError("When calling model.load_weights, skip_mismatch can only be set "
                             "to True when by_name is True.")
        return legacy_h5.load_weights(model, filepath, by_name=by_name,
                                      skip_mismatch=skip_mismatch)
    # mixprec's .npz format, also under the .h5/.keras names earlier versions gave it
    return load_npz(model, filepath, by_name=by_name, skip_mismatch=skip_mismatch)


def _is_model_archive(filepath):
    """A .keras file written by model.save (a zip holding config.json)."""
    try:
        with zipfile.ZipFile(filepath) as zf:
            return "config.json" in zf.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def weight_entries(model):
    """('model/<position>/<variable name>', variable) for the model's weights."""
    entries = []
    counts = {}
    for w in model.weights:
        key = w.name.split(":")[0]
        counts[key] = counts.get(key, 0) + 1
        if counts[key] > 1:
            key = "%s_%d" % (key, counts[key] - 1)
        entries.append(("model/%d/%s" % (len(entries), key), w))
    return entries


def optimizer_entries(model):
    """(key, variable) for the optimizer's state, keyed by structure (not by names,
    which depend on how many layers a process created): iterations, hyperparameters,
    slots by (model weight index, slot name), the loss scale's state."""
    from mixprec._variable import Variable
    from mixprec.keras.mixed_precision import loss_scale_optimizer as lso

    opt = model.optimizer
    if opt is None:
        return []
    inner = opt.inner_optimizer if isinstance(opt, lso._LossScaleOptimizerBase) else opt
    out = [("optimizer/iterations", inner.iterations)]
    for name, h in sorted(inner._hyper.items()):
        if isinstance(h, Variable):
            out.append(("optimizer/hyper/%s" % name, h))
    names = inner._slot_names_used()
    for i, w in enumerate(model.weights):
        slots = inner._slots.get(w._id)
        if slots:
            out.extend(("optimizer/slot/%d/%s" % (i, n), s) for n, s in zip(names, slots))
    if isinstance(opt, lso._LossScaleOptimizerBase):
        scale, good = opt._loss_scale_obj.variables
        out += [("optimizer/loss_scale/current_loss_scale", scale),
                ("optimizer/loss_scale/good_steps", good)]
    return out


def save_npz(model, filepath):
    """Saves weights (and optimizer state, loss scale included) to one file.

    Format (docs/architecture.md, "Weights files"): a ZIP archive written by NumPy's
    ``savez``: one ``.npy`` array per variable (no pickles) plus ``__manifest__.npy``, a
    JSON document with the format tag and, per entry, the key, variable name, dtype and
    shape. bfloat16 arrays are stored as their raw uint16 bits.
    """
    arrays, manifest = {}, {"format": _WEIGHTS_FORMAT, "model": model.name, "entries": []}
    for i, (key, var) in enumerate(weight_entries(model) + optimizer_entries(model)):
        arr = var.numpy()
        dtype = var.true_dtype.name
        if dtype == "bfloat16":
            arr = arr.view(np.uint16)
        arrays["a%d" % i] = np.asarray(arr, order="C")  # ascontiguousarray makes 0-d 1-d
        manifest["entries"].append({"key": key, "name": var.name, "dtype": dtype,
                                    "shape": list(var.shape), "array": "a%d" % i})
    _fileio.atomic_write(filepath, lambda f: np.savez(
        f, __manifest__=np.frombuffer(json.dumps(manifest).encode(), np.uint8), **arrays))


def load_npz(model, filepath, by_name=False, skip_mismatch=False):
    """Loads weights saved by ``save_npz`` (the optimizer's state too, when the
    optimizer exists; otherwise it is restored when the optimizer creates it).

    Nothing is assigned until the whole file has been read and every shape checked, so
    a refused file leaves the model (and its optimizer) as it was."""
    from mixprec.keras.mixed_precision import loss_scale_optimizer as lso

    saved_model, saved_slots, saved_opt = _read_weights_file(filepath)
    weights = model.weights
    # NOTE: model weights are matched by position (tf-keras' topological loading), not
    # by name: auto-generated layer names ('dense_7') differ between two models of the
    # same architecture. by_name=True matches the saved variable names instead; a
    # weight's optimizer slots follow it either way.
    if by_name:
        saved_at = {e["name"]: i for i, (e, _) in enumerate(saved_model)}
        pairs = [(j, w, saved_at[w.name]) for j, w in enumerate(weights)
                 if w.name in saved_at]
    else:
        if len(saved_model) != len(weights):
            raise ValueError("You are trying to load a weight file containing %d weights "
                             "into a model with %d weights." % (len(saved_model),
                                                                len(weights)))
        pairs = [(j, w, j) for j, w in enumerate(weights)]
    assign = []

    def fits(var, arr, what):
        if list(arr.shape) == list(var.shape):
            return True
        if skip_mismatch:
            return False
        raise ValueError("Shape mismatch for %s: saved %s, model %s" % (
            what, tuple(arr.shape), tuple(var.shape)))

    for _, var, i in pairs:
        arr = _stored_values(*saved_model[i])
        if fits(var, arr, var.name):
            assign.append((var, arr))
    opt, pending = model.optimizer, {}
    if opt is not None:
        present = dict(optimizer_entries(model))
        for key, (entry, arr) in saved_opt.items():
            arr = _stored_values(entry, arr)
            if key in present and fits(present[key], arr, key):
                assign.append((present[key], arr))
        for j, var, i in pairs:
            for slot_name, (entry, arr) in saved_slots.get(i, {}).items():
                arr = _stored_values(entry, arr)
                if not fits(var, arr, "the optimizer's %r slot of %s" % (slot_name,
                                                                       var.name)):
                    continue
                key = "optimizer/slot/%d/%s" % (j, slot_name)
                if key in present:
                    assign.append((present[key], arr))
                else:  # created from the file on the optimizer's first use
                    pending[(var._id, slot_name)] = arr
    for var, arr in assign:
        if arr.dtype != np.dtype(var.true_dtype.as_numpy_dtype):
            arr = arr.astype(var.true_dtype.as_numpy_dtype)
        var.assign(arr)
    if pending:
        inner = opt.inner_optimizer if isinstance(opt, lso._LossScaleOptimizerBase) else opt
        inner._pending_slots.update(pending)  # restored when the slot is created


def _read_weights_file(filepath):
    """The arrays of a weights file (docs/architecture.md, "Weights files"):
    ([(entry, array)] of the model by position, {position: {slot name: (entry, array)}},
    {other optimizer key: (entry, array)}). Anything that is not such a file, corrupt data
    and a manifest that breaks the format included, is a ValueError naming the file."""
    try:
        _fileio.check_regular_file(filepath, "weights file")
        with zipfile.ZipFile(filepath) as zf:
            manifest = json.loads(_read_npy(zf, "__manifest__").tobytes().decode())
            return _check_manifest(manifest, lambda name: _read_npy(zf, name))
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, zlib.error,
            RuntimeError) as e:  # RuntimeError: zipfile's encrypted/unsupported members
        raise ValueError("Unable to load weights from %r: not a mixprec weights file, or it "
                         "is corrupt (%s: %s). hint: files are written by "
                         "Model.save_weights()" % (filepath, type(e).__name__, e)) from None


def _read_npy(zf, name):
    """The array ``name`` of the archive, as ``np.load`` reads it but without pickles and
    without trusting the header: the shape it declares must match the bytes that follow
    before anything is allocated (np.load allocates first, so a corrupt header asks for
    exabytes)."""
    member = name + ".npy"
    info = zf.getinfo(member)
    # bounded by the file: stored members hold their bytes, deflate expands at most 1032:1
    if info.file_size > (info.compress_size if info.compress_type == zipfile.ZIP_STORED
                         else 1032 * info.compress_size + 1024):
        raise ValueError("%s declares %d bytes from %d stored" % (
            member, info.file_size, info.compress_size))
    data = zf.read(member)
    fp = io.BytesIO(data)
    version = np.lib.format.read_magic(fp)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(fp)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(fp)
    else:
        raise ValueError("%s: .npy format version %d.%d is not written by save_weights"
                         % (member, version[0], version[1]))
    if dtype.kind not in "biuf" or dtype.fields is not None:
        raise ValueError("%s holds %s values, not numbers" % (member, dtype))
    count = math.prod(shape)
    if count * dtype.itemsize != len(data) - fp.tell():
        raise ValueError("%s: the header declares %s %s, but %d bytes follow it"
                         % (member, dtype, tuple(shape), len(data) - fp.tell()))
    return np.frombuffer(data, dtype, count, fp.tell()).reshape(
        shape, order="F" if fortran else "C")


def _stored_dtype(name):
    """The dtype a manifest's ``dtype`` is stored as: bfloat16 as its uint16 bits."""
    if name == "bfloat16":
        return np.dtype(np.uint16)
    try:
        dtype = np.dtype(name)
    except TypeError:
        raise ValueError("unknown dtype %r" % name) from None
    if dtype.kind not in "biuf":
        raise ValueError("dtype %r is not a variable's" % name)
    return dtype


def _stored_values(entry, arr):
    if entry["dtype"] == "bfloat16":
        import ml_dtypes

        arr = arr.view(ml_dtypes.bfloat16)
    return arr


def _position(text, key):
    # digits only: int() would also take '-1', '+1', ' 1' and '1_0'
    if not (text.isascii() and text.isdigit()):
        raise ValueError("malformed key %r: %r is not a position" % (key, text))
    return int(text)


def _check_manifest(manifest, read):
    if not isinstance(manifest, dict):
        raise ValueError("the manifest is a JSON %s, not an object" % type(manifest).__name__)
    if manifest.get("format") != _WEIGHTS_FORMAT:
        raise ValueError("unknown format %r" % (manifest.get("format"),))
    entries = manifest.get("entries")
    if not isinstance(entries, list):
        raise ValueError("the manifest's 'entries' is %s, not a list" % type(entries).__name__)
    model, slots, other = {}, {}, {}
    seen = set()
    for e in entries:
        if not (isinstance(e, dict)
                and all(isinstance(e.get(f), str) for f in ("key", "name", "dtype", "array"))
                and isinstance(e.get("shape"), list)
                and all(type(d) is int and d >= 0 for d in e["shape"])):
            raise ValueError("malformed entry %.200r: an entry is an object with strings "
                             "'key', 'name', 'dtype', 'array' and a list of sizes 'shape'"
                             % (e,))
        key = e["key"]
        if key in seen:
            raise ValueError("two entries for %r" % key)
        seen.add(key)
        arr = read(e["array"])
        if list(arr.shape) != e["shape"] or arr.dtype != _stored_dtype(e["dtype"]):
            raise ValueError("entry %r: the array holds %s %s, the manifest says %s %s" % (
                key, arr.dtype, tuple(arr.shape), e["dtype"], tuple(e["shape"])))
        if key.startswith("model/"):
            parts = key.split("/", 2)
            if len(parts) != 3:
                raise ValueError("malformed key %r" % key)
            i = _position(parts[1], key)
            if i in model:
                raise ValueError("two model weights at position %d: %r and %r"
                                 % (i, model[i][0]["key"], key))
            model[i] = (e, arr)
        elif key.startswith("optimizer/slot/"):
            parts = key.split("/", 3)
            if len(parts) != 4 or not parts[3]:
                raise ValueError("malformed key %r" % key)
            slots.setdefault(_position(parts[2], key), {})[parts[3]] = (e, arr)
        elif key.startswith("optimizer/"):
            other[key] = (e, arr)
    if sorted(model) != list(range(len(model))):
        raise ValueError("the model's weights are at positions %s, not 0 to %d"
                         % (sorted(model), len(model) - 1))
    beyond = sorted(i for i in slots if i >= len(model))
    if beyond:
        raise ValueError("optimizer slots for weight positions %s, but the file holds %d "
                         "model weights" % (beyond, len(model)))
    return [model[i] for i in range(len(model))], slots, other
