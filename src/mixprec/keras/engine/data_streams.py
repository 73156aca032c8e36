"""Python generators and ``keras.utils.Sequence`` as input to fit/evaluate/predict, with
tf-keras 2.21's rules: a generator is one iterator that epochs continue (it is never
restarted), its length unknown unless ``steps`` says; a Sequence is read by index, all of it
each epoch (shuffled by ``fit``'s ``shuffle``, Python's ``random``), ``on_epoch_end`` called
after each epoch; ``y``/``sample_weight`` beside either is an error; list elements are
tuples and floating NumPy arrays become floatx. Host-side plumbing only: the batches go to
the same step functions as a Dataset's."""

import random

import numpy as np

from mixprec import _nest


def _is_sequence(x):
    from mixprec.keras.utils.data_utils import Sequence

    return isinstance(x, Sequence)


def is_stream(x):
    """A Python generator / iterator (not a Dataset, array or list) or a keras Sequence."""
    if _is_sequence(x):
        return True
    from mixprec.data import Dataset

    if isinstance(x, (Dataset, np.ndarray, list, tuple, dict, str, bytes)):
        return False
    return hasattr(x, "__next__") and hasattr(x, "__iter__")


def _standardize(elem):
    from mixprec.keras import backend

    if isinstance(elem, list):
        elem = tuple(elem)
    if isinstance(elem, tuple) and not 1 <= len(elem) <= 3:
        raise ValueError("Data is expected to be in format `x`, `(x,)`, `(x, y)`, or "
                         "`(x, y, sample_weight)`, found: %s" % (elem,))

    def conv(t):
        if isinstance(t, list):
            t = np.asarray(t)
        if isinstance(t, np.ndarray) and issubclass(t.dtype.type, np.floating):
            return t.astype(backend.floatx(), copy=False)
        return t

    return _nest.map_structure(conv, elem)


class Stream:
    """What _DataHandler reads like a Dataset: ``_cardinality()``, ``iter()`` per epoch
    (``recreate`` says whether a new pass starts each epoch), ``on_epoch_end()``."""

    def __init__(self, x, y, sample_weight, shuffle):
        kind = "`keras.utils.Sequence`" if _is_sequence(x) else "python generator"
        for name, v in (("y", y), ("sample_weight", sample_weight)):
            if v is not None and not (hasattr(v, "__len__") and len(v) == 0):
                raise ValueError("`%s` argument is not supported when using %s as input."
                                 % (name, kind))
        self._x = x
        self._sequence = _is_sequence(x)
        self._shuffle = bool(shuffle) and shuffle != "batch" if self._sequence else False
        self.recreate = self._sequence
        self._iter = None if self._sequence else iter(x)

    def _cardinality(self):
        return len(self._x) if self._sequence else None

    def __iter__(self):
        if not self._sequence:
            return (_standardize(e) for e in self._iter)
        return self._pass()

    def _pass(self):
        order = list(range(len(self._x)))
        if self._shuffle:
            random.shuffle(order)
        for i in order:
            yield _standardize(self._x[i])

    def on_epoch_end(self):
        if self._sequence:
            self._x.on_epoch_end()
