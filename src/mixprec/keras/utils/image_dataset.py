"""``keras.utils.image_dataset_from_directory`` and ``smart_resize``: a labelled image
dataset from a directory tree, with tf-keras 2.21's indexing (class subdirectories in
alphanumeric order, files walked recursively and sorted), its seeded global shuffle of the
file list (so ``file_paths`` and the training/validation split are TensorFlow's), its
messages and errors. Files are decoded by Pillow with TensorFlow's channel conversions
(libpng's RGB-to-gray weights; JPEG gray read as the luma plane) and resized by the core's
``tf.image.resize``. Decoding happens lazily, one image per element."""

import os

import numpy as np

__all__ = ["image_dataset_from_directory", "smart_resize", "ALLOWLIST_FORMATS"]

ALLOWLIST_FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")

def _msg(text):
    from mixprec.keras.utils.progbar import _write
    _write(text + "\n")


_INTERPOLATIONS = ("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5",
                   "gaussian", "mitchellcubic")

# libpng's png_set_rgb_to_gray(…, 0.299, 0.587) as fixed point over 2**15 (truncated)
_GRAY_R, _GRAY_G = 9797, 19234
_GRAY_B = 32768 - _GRAY_R - _GRAY_G


def _rgb_to_gray(rgb):
    r, g, b = (rgb[..., i].astype(np.int64) for i in range(3))
    return ((r * _GRAY_R + g * _GRAY_G + b * _GRAY_B) >> 15).astype(np.uint8)[..., None]


def decode_image_file(path, num_channels):
    """The first frame of an image file as uint8 ``(h, w, num_channels)``, channels
    converted as ``tf.image.decode_image(channels=num_channels)`` does."""
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow is a dependency of the image helpers
        raise ImportError("image_dataset_from_directory needs Pillow: pip install pillow") \
            from None
    from mixprec import errors
    try:
        im = Image.open(path)
        fmt = im.format
        if fmt == "JPEG" and num_channels == 4:
            raise errors.InvalidArgumentError(None, None, "JPEG does not support 4 channels")
        if fmt == "JPEG" and num_channels == 1:
            im.draft("L", im.size)  # the decoder's gray output: the luma plane, as libjpeg's
        im.seek(0)
        if num_channels == 1:
            if im.mode in ("L", "LA", "I", "I;16", "1"):
                arr = np.asarray(im.convert("L"))[..., None]
            else:
                arr = _rgb_to_gray(np.asarray(im.convert("RGB")))
        elif num_channels == 3:
            arr = np.asarray(im.convert("RGB"))
        else:
            arr = np.asarray(im.convert("RGBA"))
    except errors.OpError:
        raise
    except (OSError, ValueError, SyntaxError) as e:
        raise errors.InvalidArgumentError(
            None, None, "Unknown image file format. One of JPEG, PNG, GIF, BMP required. "
            "(%s: %s)" % (path, e)) from None
    return np.ascontiguousarray(arr, dtype=np.uint8)


def smart_resize(x, size, interpolation="bilinear"):
    """Resizes to ``size`` without distortion: the largest centred crop with the target's
    aspect ratio, then ``tf.image.resize`` (tf-keras' arithmetic for the crop box)."""
    from mixprec import _core
    from mixprec import image as _image
    if len(size) != 2:
        raise ValueError("Expected `size` to be a tuple of 2 integers, but got: %s." % (size,))
    as_numpy = isinstance(x, np.ndarray)
    img = _core.convert_to_tensor(x)
    rank = img.shape.rank
    if rank < 3 or rank > 4:
        raise ValueError("Expected an image array with shape `(height, width, channels)`, or "
                         "`(batch_size, height, width, channels)`, but got input with "
                         "incorrect rank, of shape %s." % (img.shape,))
    height, width = img.shape[-3], img.shape[-2]
    th, tw = size
    crop_h = min(height, int(np.float32(width * th) / np.float32(tw)))
    crop_w = min(width, int(np.float32(height * tw) / np.float32(th)))
    h0 = int(np.float32(height - crop_h) / np.float32(2))
    w0 = int(np.float32(width - crop_w) / np.float32(2))
    img = img[..., h0:h0 + crop_h, w0:w0 + crop_w, :]
    out = _image.resize(img, size, method=interpolation)
    return out.numpy() if as_numpy else out


def _walk_files(directory, follow_links):
    for root, _, files in sorted(os.walk(directory, followlinks=follow_links),
                                 key=lambda t: t[0]):
        for fname in sorted(files):
            if fname.lower().endswith(ALLOWLIST_FORMATS):
                yield root, fname


def index_directory(directory, labels, class_names=None, shuffle=True, seed=None,
                    follow_links=False):
    """(file_paths, labels, class_names) as tf-keras indexes a directory."""
    if labels != "inferred":
        subdirs = [""]
        class_names = subdirs
    else:
        subdirs = [d for d in sorted(os.listdir(directory))
                   if os.path.isdir(os.path.join(directory, d)) and not d.startswith(".")]
        if not class_names:
            class_names = subdirs
        elif set(class_names) != set(subdirs):
            raise ValueError("The `class_names` passed did not match the names of the "
                             "subdirectories of the target directory. Expected: %s, but "
                             "received: %s" % (subdirs, class_names))
    index = {name: i for i, name in enumerate(class_names)}
    filenames, found = [], []
    for sub in subdirs:
        d = os.path.join(directory, sub)
        base = os.path.basename(d)
        for root, fname in _walk_files(d, follow_links):
            rel = os.path.join(base, os.path.relpath(os.path.join(root, fname), d))
            filenames.append(rel)
            found.append(index[base] if labels == "inferred" else 0)
    if labels not in ("inferred", None):
        if len(labels) != len(filenames):
            raise ValueError("Expected the lengths of `labels` to match the number of files in "
                             "the target directory. len(labels) is %d while we found %d files "
                             "in directory %s." % (len(labels), len(filenames), directory))
        class_names = sorted(set(labels))
        label_arr = labels
    else:
        label_arr = np.asarray(found, dtype="int32")
    # tf-keras 2.21 says "belonging to N classes" also without labels (one class, "")
    _msg("Found %d files belonging to %d classes." % (len(filenames), len(class_names)))
    paths = [os.path.join(directory, f) for f in filenames]
    if shuffle:
        if seed is None:
            seed = np.random.randint(1e6)
        np.random.RandomState(seed).shuffle(paths)
        np.random.RandomState(seed).shuffle(label_arr)
    return paths, label_arr, class_names


def _split(samples, labels, validation_split, subset):
    if not validation_split:
        return samples, labels
    n_val = int(validation_split * len(samples))
    if subset == "training":
        _msg("Using %d files for training." % (len(samples) - n_val))
        return samples[:-n_val], labels[:-n_val]
    if subset == "validation":
        _msg("Using %d files for validation." % n_val)
        return samples[-n_val:], labels[-n_val:]
    raise ValueError('`subset` must be either "training" or "validation", received: %s'
                     % (subset,))


def _check_split_args(validation_split, subset, shuffle, seed):
    if validation_split and not 0 < validation_split < 1:
        raise ValueError("`validation_split` must be between 0 and 1, received: %s"
                         % (validation_split,))
    if (validation_split or subset) and not (validation_split and subset):
        raise ValueError("If `subset` is set, `validation_split` must be set, and inversely.")
    if subset not in ("training", "validation", "both", None):
        raise ValueError('`subset` must be either "training", "validation" or "both", '
                         'received: %s' % (subset,))
    if validation_split and shuffle and seed is None:
        raise ValueError("If using `validation_split` and shuffling the data, you must provide "
                         "a `seed` argument, to make sure that there is no overlap between the "
                         "training and validation subset.")


def _image_source(paths, size, channels, interpolation, crop):
    from mixprec._function import TensorSpec
    from mixprec.data import dataset as _ds
    from mixprec import image as _image

    class _ImageFiles(_ds.Dataset):
        _tf_name = "_ParallelMapDataset"

        def _elements(self):
            for p in paths:
                img = decode_image_file(p, channels)
                if crop:
                    out = smart_resize(img, size, interpolation)
                else:
                    out = _image.resize(img, size, method=interpolation).numpy()
                yield np.asarray(out)

        def _cardinality(self):
            return len(paths)

        def _element_spec(self):
            dt = "uint8" if interpolation == "nearest" else "float32"
            return TensorSpec([size[0], size[1], channels], dt)
    return _ImageFiles()


def _labels_source(labels, label_mode, num_classes):
    from mixprec.data.dataset import Dataset
    arr = np.asarray(labels)
    if label_mode == "binary":
        return Dataset.from_tensor_slices(arr.astype("float32")[:, None])
    if label_mode == "categorical":
        return Dataset.from_tensor_slices(np.eye(num_classes, dtype="float32")[arr])
    return Dataset.from_tensor_slices(arr.astype("int32") if arr.dtype.kind in "iub"
                                      else arr)


def _dataset(paths, labels, label_mode, num_classes, size, channels, interpolation, crop):
    from mixprec.data.dataset import Dataset
    images = _image_source(paths, size, channels, interpolation, crop)
    if label_mode:
        return Dataset.zip((images, _labels_source(labels, label_mode, num_classes)))
    return images


def _finish(ds, batch_size, shuffle, seed, class_names, paths, train):
    from mixprec.data.dataset import AUTOTUNE
    if batch_size is not None:
        if shuffle and train:
            ds = ds.shuffle(buffer_size=batch_size * 8, seed=seed)
        ds = ds.batch(batch_size)
    elif shuffle and train:
        ds = ds.shuffle(buffer_size=1024, seed=seed)
    ds = ds.prefetch(AUTOTUNE)
    ds.class_names = class_names
    ds.file_paths = paths
    return ds


def image_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                 class_names=None, color_mode="rgb", batch_size=32,
                                 image_size=(256, 256), shuffle=True, seed=None,
                                 validation_split=None, subset=None, interpolation="bilinear",
                                 follow_links=False, crop_to_aspect_ratio=False, **kwargs):
    """A ``tf.data.Dataset`` of ``(images, labels)`` from ``directory/<class>/<image>``
    (tf-keras 2.21's behaviour; see docs/data.md)."""
    from mixprec import errors
    if "smart_resize" in kwargs:
        crop_to_aspect_ratio = kwargs.pop("smart_resize")
    if kwargs:
        raise TypeError("Unknown keywords argument(s): %s" % (tuple(kwargs.keys()),))
    if labels not in ("inferred", None):
        if not isinstance(labels, (list, tuple)):
            raise ValueError(
                "`labels` argument should be a list/tuple of integer labels, of the same size "
                "as the number of image files in the target directory. If you wish to infer "
                "the labels from the subdirectory names in the target directory, pass "
                '`labels="inferred"`. If you wish to get a dataset that only contains images '
                "(no labels), pass `labels=None`. Received: labels=%s" % (labels,))
        if class_names:
            raise ValueError('You can only pass `class_names` if `labels="inferred"`. '
                             "Received: labels=%s, and class_names=%s" % (labels, class_names))
    if label_mode not in ("int", "categorical", "binary", None):
        raise ValueError('`label_mode` argument must be one of "int", "categorical", "binary", '
                         "or None. Received: label_mode=%s" % (label_mode,))
    if labels is None or label_mode is None:
        labels, label_mode = None, None
    channels = {"rgb": 3, "rgba": 4, "grayscale": 1}.get(color_mode)
    if channels is None:
        raise ValueError('`color_mode` must be one of {"rgb", "rgba", "grayscale"}. Received: '
                         "color_mode=%s" % (color_mode,))
    interpolation = str(interpolation).lower()
    if interpolation not in _INTERPOLATIONS:
        raise NotImplementedError("Value not recognized for `interpolation`: %s. Supported "
                                  "values are: %s" % (interpolation, _INTERPOLATIONS))
    _check_split_args(validation_split, subset, shuffle, seed)
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise errors.NotFoundError(None, None, "Could not find directory %s" % directory)
    size = tuple(int(v) for v in image_size)
    if seed is None:
        seed = np.random.randint(1e6)
    paths, label_arr, class_names = index_directory(directory, labels, class_names, shuffle,
                                                    seed, follow_links)
    if label_mode == "binary" and len(class_names) != 2:
        raise ValueError('When passing `label_mode="binary"`, there must be exactly 2 '
                         "class_names. Received: class_names=%s" % (class_names,))
    args = (label_mode, len(class_names), size, channels, interpolation, crop_to_aspect_ratio)
    if subset == "both":
        p_tr, l_tr = _split(paths, label_arr, validation_split, "training")
        p_va, l_va = _split(paths, label_arr, validation_split, "validation")
        if not p_tr:
            raise ValueError("No training images found in directory %s. Allowed formats: %s"
                             % (directory, ALLOWLIST_FORMATS))
        if not p_va:
            raise ValueError("No validation images found in directory %s. Allowed formats: %s"
                             % (directory, ALLOWLIST_FORMATS))
        return [_finish(_dataset(p_tr, l_tr, *args), batch_size, shuffle, seed, class_names,
                        p_tr, True),
                _finish(_dataset(p_va, l_va, *args), batch_size, False, seed, class_names,
                        p_va, False)]
    paths, label_arr = _split(paths, label_arr, validation_split, subset)
    if not paths:
        raise ValueError("No images found in directory %s. Allowed formats: %s"
                         % (directory, ALLOWLIST_FORMATS))
    return _finish(_dataset(paths, label_arr, *args), batch_size, shuffle, seed, class_names,
                   paths, True)
