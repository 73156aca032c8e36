"""Host-side data preparation of ``tf.keras.utils`` (NumPy in, NumPy or a mixprec Dataset
out), as tf-keras 2.21: pad_sequences, normalize, to_ordinal,
timeseries_dataset_from_array, split_dataset, get_file, get_source_inputs, the interactive
logging switch, plot_model/model_to_dot (need pydot, as there) and the PIL image helpers.
These prepare inputs; no training math lives here."""

import hashlib
import os
import shutil
import tarfile
import tempfile
import urllib.request
import zipfile

import numpy as np

__all__ = ["pad_sequences", "normalize", "to_ordinal", "timeseries_dataset_from_array",
           "split_dataset", "get_file", "get_source_inputs", "enable_interactive_logging",
           "disable_interactive_logging", "is_interactive_logging_enabled", "plot_model",
           "model_to_dot", "array_to_img", "img_to_array", "load_img", "save_img"]


def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre", truncating="pre",
                  value=0.0):
    """A (num_samples, maxlen) array from a list of sequences: shorter ones padded with
    ``value``, longer ones cut, at the start ('pre') or the end ('post')."""
    if not hasattr(sequences, "__len__"):
        raise ValueError("`sequences` must be iterable.")
    num_samples = len(sequences)
    lengths, sample_shape, flag = [], (), True
    for x in sequences:
        try:
            lengths.append(len(x))
            if flag and len(x):
                sample_shape = np.asarray(x).shape[1:]
                flag = False
        except TypeError as e:
            raise ValueError("`sequences` must be a list of iterables. Found non-iterable: %s"
                             % (x,)) from e
    if maxlen is None:
        maxlen = np.max(lengths) if lengths else 0
    is_str = np.issubdtype(dtype, np.str_) or np.issubdtype(dtype, np.object_)
    if isinstance(value, str) and dtype != object and not is_str:
        raise ValueError("`dtype` %s is not compatible with `value`'s type: %s\nYou should set "
                         "`dtype=object` for variable length strings." % (dtype, type(value)))
    x = np.full((num_samples, maxlen) + sample_shape, value, dtype=dtype)
    for idx, s in enumerate(sequences):
        if not len(s):
            continue
        if truncating == "pre":
            trunc = s[-maxlen:]
        elif truncating == "post":
            trunc = s[:maxlen]
        else:
            raise ValueError('Truncating type "%s" not understood' % truncating)
        trunc = np.asarray(trunc, dtype=dtype)
        if trunc.shape[1:] != sample_shape:
            raise ValueError("Shape of sample %s of sequence at position %s is different from "
                             "expected shape %s" % (trunc.shape[1:], idx, sample_shape))
        if padding == "post":
            x[idx, :len(trunc)] = trunc
        elif padding == "pre":
            x[idx, -len(trunc):] = trunc
        else:
            raise ValueError('Padding type "%s" not understood' % padding)
    return x


def normalize(x, axis=-1, order=2):
    """``x`` divided by its ``order``-norm along ``axis`` (a zero norm left as 1)."""
    norm = np.atleast_1d(np.linalg.norm(x, order, axis))
    norm[norm == 0] = 1
    return x / np.expand_dims(norm, axis)


def to_ordinal(y, num_classes=None, dtype="float32"):
    """Ordinal encoding: class k is k ones followed by zeros, num_classes - 1 wide."""
    y = np.array(y, dtype="int")
    shape = y.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = tuple(shape[:-1])
    y = y.reshape(-1)
    if not num_classes:
        num_classes = np.max(y) + 1
    out = (np.arange(num_classes - 1)[None, :] < y[:, None]).astype(dtype)
    return out.reshape(shape + (num_classes - 1,))


def timeseries_dataset_from_array(data, targets, sequence_length, sequence_stride=1,
                                  sampling_rate=1, batch_size=128, shuffle=False, seed=None,
                                  start_index=None, end_index=None):
    """A Dataset of sliding windows over ``data`` (each ``sequence_length`` steps,
    ``sampling_rate`` apart, starting every ``sequence_stride``), with ``targets[i]`` for
    the window starting at ``i`` when targets are given; batched by ``batch_size``."""
    from mixprec.data import Dataset

    n = len(data)
    if start_index:
        if start_index < 0:
            raise ValueError("`start_index` must be 0 or greater. Received: start_index=%s"
                             % start_index)
        if start_index >= n:
            raise ValueError("`start_index` must be lower than the length of the data. "
                             "Received: start_index=%s, for data of length %s" % (start_index, n))
    if end_index:
        if start_index and end_index <= start_index:
            raise ValueError("`end_index` must be higher than `start_index`. Received: "
                             "start_index=%s, and end_index=%s " % (start_index, end_index))
        if end_index >= n:
            raise ValueError("`end_index` must be lower than the length of the data. "
                             "Received: end_index=%s, for data of length %s" % (end_index, n))
        if end_index <= 0:
            raise ValueError("`end_index` must be higher than 0. Received: end_index=%s"
                             % end_index)
    if sampling_rate <= 0:
        raise ValueError("`sampling_rate` must be higher than 0. Received: sampling_rate=%s"
                         % sampling_rate)
    if sampling_rate >= n:
        raise ValueError("`sampling_rate` must be lower than the length of the data. "
                         "Received: sampling_rate=%s, for data of length %s" % (sampling_rate, n))
    if sequence_stride <= 0:
        raise ValueError("`sequence_stride` must be higher than 0. Received: "
                         "sequence_stride=%s" % sequence_stride)
    if sequence_stride >= n:
        raise ValueError("`sequence_stride` must be lower than the length of the data. "
                         "Received: sequence_stride=%s, for data of length %s"
                         % (sequence_stride, n))
    start = start_index or 0
    end = end_index if end_index is not None else n
    num_seqs = end - start - (sequence_length - 1) * sampling_rate
    if targets is not None:
        num_seqs = min(num_seqs, len(targets))
    starts = np.arange(0, max(num_seqs, 0), sequence_stride, dtype="int64")
    if shuffle:
        if seed is None:
            seed = np.random.randint(1e6)
        np.random.RandomState(seed).shuffle(starts)
    arr = np.asarray(data)[start:end]
    windows = starts[:, None] + np.arange(sequence_length)[None, :] * sampling_rate
    x = arr[windows] if len(starts) else arr[:0][None][:0]
    if targets is not None:
        ds = Dataset.from_tensor_slices((x, np.asarray(targets)[start:end][starts]))
    else:
        ds = Dataset.from_tensor_slices(x)
    if batch_size is not None:
        if shuffle:
            ds = ds.shuffle(buffer_size=batch_size * 8, seed=seed)
        return ds.batch(batch_size)
    return ds.shuffle(buffer_size=1024, seed=seed) if shuffle else ds


def split_dataset(dataset, left_size=None, right_size=None, shuffle=False, seed=None):
    """Two Datasets from arrays (or a tuple of them) or a finite Dataset: ``left_size`` /
    ``right_size`` as fractions (float) or counts (int); one may be None (the rest)."""
    from mixprec.data import Dataset

    if isinstance(dataset, Dataset):
        items = list(dataset.as_numpy_iterator())
        total = len(items)
    elif isinstance(dataset, (list, tuple)) and dataset and hasattr(dataset[0], "__len__") \
            and not np.isscalar(dataset[0]):
        arrays = [np.asarray(a) for a in dataset]
        total = len(arrays[0])
        if any(len(a) != total for a in arrays):
            raise ValueError("Received a tuple of arrays of different lengths.")
        items = None
    elif isinstance(dataset, np.ndarray):
        arrays, total, items = [dataset], len(dataset), None
    else:
        raise TypeError("The `dataset` argument must be either a `tf.data.Dataset` object or a "
                        "list/tuple of arrays. Received: dataset=%s of type %s"
                        % (dataset, type(dataset)))
    if right_size is None and left_size is None:
        left_size = 0.5

    def count(size, name):
        if size is None:
            return None
        if isinstance(size, float):
            if not 0 < size < 1:
                raise ValueError("`%s` should be either a positive integer or a float in the "
                                 "range [0, 1]. Received: %s=%s" % (name, name, size))
            return int(round(size * total))
        if isinstance(size, int):
            if size <= 0 or size > total:
                raise ValueError("`%s` should be smaller than the number of samples %s. "
                                 "Received: %s=%s" % (name, total, name, size))
            return size
        raise TypeError("Invalid `%s` Type: %s. It should be one of float, int, or None."
                        % (name, type(size)))

    left, right = count(left_size, "left_size"), count(right_size, "right_size")
    if left is None:
        left = total - right
    if right is None:
        right = total - left
    if left + right > total:
        raise ValueError("The sum of `left_size` and `right_size` is greater than the total "
                         "number of samples. Received: left_size + right_size = %s and "
                         "total_size = %s" % (left + right, total))
    order = np.arange(total)
    if shuffle:
        if seed is None:
            seed = np.random.randint(1e6)
        np.random.RandomState(seed).shuffle(order)
    lo, hi = order[:left], order[left:left + right]
    if items is not None:
        def make(idx):
            picked = [items[i] for i in idx]
            if picked and isinstance(picked[0], tuple):
                return Dataset.from_tensor_slices(tuple(np.stack(c) for c in zip(*picked)))
            return Dataset.from_tensor_slices(np.stack(picked) if picked else np.zeros((0,)))
    else:
        def make(idx):
            parts = tuple(a[idx] for a in arrays)
            return Dataset.from_tensor_slices(parts if len(parts) > 1 else parts[0])
    return make(lo), make(hi)


def _cache_dir(cache_dir, cache_subdir):
    base = cache_dir or os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"),
                                                                      ".keras")
    d = os.path.join(base, cache_subdir)
    if not os.access(base if os.path.isdir(base) else os.path.dirname(base) or ".", os.W_OK):
        d = os.path.join(tempfile.gettempdir(), ".keras", cache_subdir)
    os.makedirs(d, exist_ok=True)
    return d


def _hash(path, algorithm):
    h = hashlib.sha256() if algorithm in ("sha256", "auto") else hashlib.md5()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def get_file(fname=None, origin=None, untar=False, md5_hash=None, file_hash=None,
             cache_subdir="datasets", hash_algorithm="auto", extract=False,
             archive_format="auto", cache_dir=None):
    """The path of ``fname`` in the Keras cache (~/.keras/datasets), downloaded from
    ``origin`` when not there (or when its hash does not match); ``extract``/``untar``
    unpack an archive beside it. The download goes to a temporary file first, so an
    interrupted one never leaves a partial file under the final name."""
    if origin is None:
        raise ValueError('Please specify the "origin" argument (URL of the file to download).')
    if fname is None:
        fname = os.path.basename(urllib.request.urlparse(origin).path)
        if not fname:
            raise ValueError("Can't parse the file name from the origin provided: '%s'. "
                             "Please specify the `fname` as the input param." % origin)
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    if hash_algorithm == "auto" and file_hash is not None:
        hash_algorithm = "sha256" if len(file_hash) == 64 else "md5"
    datadir = _cache_dir(cache_dir, cache_subdir)
    if untar:
        untar_fpath = os.path.join(datadir, fname)
        fpath = untar_fpath + ".tar.gz"
    else:
        fpath = os.path.join(datadir, fname)
    download = not os.path.exists(fpath)
    if not download and file_hash is not None and _hash(fpath, hash_algorithm) != file_hash:
        download = True  # tf-keras: a mismatching cached file is fetched again
    if download:
        fd, tmp = tempfile.mkstemp(dir=datadir, prefix=".download-")
        os.close(fd)
        try:
            with urllib.request.urlopen(origin) as resp, open(tmp, "wb") as out:
                shutil.copyfileobj(resp, out)
        except Exception as e:
            os.unlink(tmp)
            raise Exception("URL fetch failure on %s: %s" % (origin, e)) from e
        if file_hash is not None and _hash(tmp, hash_algorithm) != file_hash:
            os.unlink(tmp)
            raise ValueError("Incomplete or corrupted file detected. The %s file hash does not "
                             "match the provided value of %s." % (hash_algorithm, file_hash))
        os.replace(tmp, fpath)
    if untar:
        if not os.path.exists(untar_fpath):
            _extract(fpath, datadir, "tar")
        return untar_fpath
    if extract:
        _extract(fpath, datadir, archive_format)
    return fpath


def _extract(path, into, archive_format):
    formats = ["tar", "zip"] if archive_format in ("auto", None) else (
        [archive_format] if isinstance(archive_format, str) else list(archive_format))
    for fmt in formats:
        if fmt == "tar" and tarfile.is_tarfile(path):
            with tarfile.open(path) as t:
                t.extractall(into, filter="data")
            return True
        if fmt == "zip" and zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                z.extractall(into)
            return True
    return False


def get_source_inputs(tensor, layer=None, node_index=None):
    """The Input tensors a Keras tensor was computed from."""
    from mixprec.keras.engine.keras_tensor import KerasTensor

    if not isinstance(tensor, KerasTensor):
        return [tensor]
    seen, out, stack = set(), [], [tensor]
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        history = t._keras_history
        node = history[0]._inbound_nodes[history[1]] if history is not None else None
        inbound = list(getattr(node, "keras_inputs", None) or []) if node is not None else []
        if not inbound:  # an Input (its layer has no inbound tensors)
            out.append(t)
        else:
            stack.extend(reversed(inbound))
    return out


_INTERACTIVE = [True]


def enable_interactive_logging():
    """Progress bars and summaries print to stdout (the default)."""
    _INTERACTIVE[0] = True


def disable_interactive_logging():
    """Progress bars and summaries go to Python logging instead of stdout."""
    _INTERACTIVE[0] = False


def is_interactive_logging_enabled():
    return _INTERACTIVE[0]


def _need_pydot(what):
    try:
        import pydot  # noqa: F401
    except ImportError as e:
        raise ImportError("You must install pydot (`pip install pydot`) for %s to work."
                          % what) from e
    return pydot


def model_to_dot(model, show_shapes=False, show_dtype=False, show_layer_names=True,
                 rankdir="TB", expand_nested=False, dpi=96, subgraph=False,
                 layer_range=None, show_layer_activations=False, show_trainable=False):
    """A pydot graph of the model's layers (one node per layer, edges as they connect)."""
    pydot = _need_pydot("model_to_dot")
    dot = pydot.Dot(graph_type="digraph", rankdir=rankdir, dpi=dpi)
    layers = model.layers
    ids = {id(layer): str(i) for i, layer in enumerate(layers)}
    for layer in layers:
        label = type(layer).__name__
        if show_layer_names:
            label = "%s (%s)" % (layer.name, label)
        if show_dtype:
            label += "\n%s" % getattr(layer, "dtype", "")
        if show_shapes:
            label += "\n%s" % (getattr(layer, "output_shape", "?"),)
        dot.add_node(pydot.Node(ids[id(layer)], label=label, shape="record"))
    for a, b in zip(layers, layers[1:]):
        dot.add_edge(pydot.Edge(ids[id(a)], ids[id(b)]))
    return dot


def plot_model(model, to_file="model.png", show_shapes=False, show_dtype=False,
               show_layer_names=True, rankdir="TB", expand_nested=False, dpi=96,
               layer_range=None, show_layer_activations=False, show_trainable=False):
    """Writes the model_to_dot graph to ``to_file`` (needs pydot and graphviz)."""
    dot = model_to_dot(model, show_shapes, show_dtype, show_layer_names, rankdir,
                       expand_nested, dpi)
    ext = os.path.splitext(to_file)[1][1:] or "png"
    dot.write(to_file, format=ext)


def _pil():
    try:
        from PIL import Image
    except ImportError as e:
        raise ImportError("Could not import PIL.Image. The use of `load_img` requires PIL.") \
            from e
    return Image


def img_to_array(img, data_format=None, dtype=None):
    """A (height, width, channels) float array from a PIL image (channels first with
    ``data_format='channels_first'``)."""
    from mixprec.keras import backend

    data_format = data_format or backend.image_data_format()
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError("Unknown data_format: %s" % data_format)
    x = np.asarray(img, dtype=dtype or backend.floatx())
    if x.ndim == 2:
        x = x[:, :, None]
    elif x.ndim != 3:
        raise ValueError("Unsupported image shape: %s" % (x.shape,))
    return x.transpose(2, 0, 1) if data_format == "channels_first" else x


def array_to_img(x, data_format=None, scale=True, dtype=None):
    """A PIL image from a 3-D array (scaled to 0..255 when ``scale``)."""
    from mixprec.keras import backend

    Image = _pil()
    data_format = data_format or backend.image_data_format()
    x = np.asarray(x, dtype=dtype or backend.floatx())
    if x.ndim != 3:
        raise ValueError("Expected image array to have rank 3 (single image). Got array with "
                         "shape: %s" % (x.shape,))
    if data_format == "channels_first":
        x = x.transpose(1, 2, 0)
    if scale:
        x = x - np.min(x)
        top = np.max(x)
        if top != 0:
            x = x / top
        x = x * 255
    c = x.shape[2]
    if c == 4:
        return Image.fromarray(x.astype("uint8"), "RGBA")
    if c == 3:
        return Image.fromarray(x.astype("uint8"), "RGB")
    if c == 1:
        if np.max(x) > 255:
            return Image.fromarray(x[:, :, 0].astype("int32"), "I")
        return Image.fromarray(x[:, :, 0].astype("uint8"), "L")
    raise ValueError("Unsupported channel number: %s" % c)


def load_img(path, grayscale=False, color_mode="rgb", target_size=None,
             interpolation="nearest", keep_aspect_ratio=False):
    """A PIL image read from ``path`` (converted to ``color_mode``, resized to
    ``target_size`` = (height, width))."""
    Image = _pil()
    if grayscale:
        color_mode = "grayscale"
    img = Image.open(path)
    mode = {"grayscale": "L", "rgba": "RGBA", "rgb": "RGB"}.get(color_mode)
    if mode is None:
        raise ValueError('color_mode must be "grayscale", "rgb", or "rgba"')
    if img.mode != mode and not (mode == "L" and img.mode in ("L", "I;16", "I")):
        img = img.convert(mode)
    if target_size is not None:
        size = (target_size[1], target_size[0])
        if img.size != size:
            img = img.resize(size, getattr(Image, interpolation.upper(), Image.NEAREST))
    return img


def save_img(path, x, data_format=None, file_format=None, scale=True, **kwargs):
    """Writes an image array to ``path`` (through PIL)."""
    img = array_to_img(x, data_format=data_format, scale=scale)
    if img.mode == "RGBA" and (file_format == "jpg" or file_format == "jpeg"):
        img = img.convert("RGB")
    img.save(path, format=file_format, **kwargs)
