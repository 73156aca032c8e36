"""``tf.keras.datasets.mnist.load_data(path='mnist.npz')``, offline.

Reads Keras' cached ``mnist.npz`` (keys x_train, y_train, x_test, y_test). mixprec never
downloads: without the file, the error tells where to put it.
"""

import zipfile
import zlib

import numpy as np

from mixprec.keras.datasets import _files

__all__ = ["load_data"]


def load_data(path="mnist.npz"):
    """((x_train, y_train), (x_test, y_test)) as uint8 NumPy arrays (60000/10000 images)."""
    found = _files.find(path)
    if found is None:
        places = ", ".join(_files.cache_dirs())
        raise FileNotFoundError(
            "MNIST was not found: mixprec does not download datasets. Put Keras' mnist.npz "
            "(https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz, keys "
            "x_train, y_train, x_test, y_test) in one of: %s — or pass an absolute `path`. "
            "hint: mixprec.keras.datasets.fashion_mnist.load_embedded() needs no download."
            % places)
    try:
        with np.load(found, allow_pickle=False) as f:
            x_train, y_train = f["x_train"], f["y_train"]
            x_test, y_test = f["x_test"], f["y_test"]
    except (OSError, ValueError, KeyError, EOFError, TypeError, AttributeError, IndexError,
            zipfile.BadZipFile, zlib.error) as e:  # a truncated zip, an .npy, bad deflate data
        raise ValueError("Cannot read MNIST from %s: %s. Expected an .npz with keys x_train, "
                         "y_train, x_test, y_test (corrupt download?)" % (found, e)) from None
    return (x_train, y_train), (x_test, y_test)
