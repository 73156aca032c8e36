"""``tf.keras.datasets.fashion_mnist.load_data()``, offline, and the embedded subset.

``load_data`` reads the four IDX files Keras caches under ``datasets/fashion-mnist/`` (in
``$KERAS_HOME`` or ``~/.keras``), or where Debian's ``dataset-fashion-mnist`` installs them
(``/usr/share/datasets/fashion-mnist``). ``load_embedded`` returns the 6000/1000-image
subset shipped inside mixprec (see _data/README.md for its provenance and MIT licence).
"""

import os

import numpy as np

from mixprec.keras.datasets import _files

__all__ = ["load_data", "load_embedded", "DEBIAN_DIR", "EMBEDDED_PATH"]

DEBIAN_DIR = "/usr/share/datasets/fashion-mnist"
EMBEDDED_PATH = os.path.join(os.path.dirname(__file__), "_data", "fashion_mnist_subset.npz")
_FILES = ["train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
          "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz"]


def _locations():
    return [os.path.join(d, "fashion-mnist") for d in _files.cache_dirs()] + [DEBIAN_DIR]


def find_dir():
    """The first directory holding all four Fashion-MNIST files, or None."""
    for d in _locations():
        if all(os.path.exists(os.path.join(d, f)) for f in _FILES):
            return d
    return None


def load_data():
    """((x_train, y_train), (x_test, y_test)): uint8 arrays of 60000 and 10000 images."""
    d = find_dir()
    if d is None:
        raise FileNotFoundError(
            "Fashion-MNIST was not found: mixprec does not download datasets. Put the four files "
            "%s in one of: %s (Debian/Ubuntu: `apt install dataset-fashion-mnist`). hint: "
            "mixprec.keras.datasets.fashion_mnist.load_embedded() returns the 6000/1000-image "
            "subset shipped with mixprec." % (", ".join(_FILES), ", ".join(_locations())))
    paths = [os.path.join(d, f) for f in _FILES]
    y_train = _files.read_idx(paths[0], "labels")
    x_train = _files.read_idx(paths[1], "images")
    y_test = _files.read_idx(paths[2], "labels")
    x_test = _files.read_idx(paths[3], "images")
    if len(x_train) != len(y_train) or len(x_test) != len(y_test):
        raise ValueError("Fashion-MNIST files in %s disagree on the number of samples" % d)
    return (x_train, y_train), (x_test, y_test)


def load_embedded():
    """The subset shipped with mixprec: 600 training and 100 test images per class."""
    with np.load(EMBEDDED_PATH, allow_pickle=False) as f:
        return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])
