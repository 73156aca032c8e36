"""Datasets made of datasets: ``flat_map``, ``interleave`` (tf.data's cycle/block order,
which a parallel interleave with ``deterministic`` order also keeps) and
``group_by_window``. The user's function returns a dataset per input element; this module
only decides in which order their elements come out."""

import os

import numpy as np

from mixprec.data import dataset as _ds
from mixprec.data._nested_datasets import ElementsDataset

__all__ = ["Interleave", "GroupByWindow", "default_cycle_length"]


def default_cycle_length():
    """tf.data's AUTOTUNE cycle length for interleave: the schedulable CPU cores."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _dataset_of(fn, elem, what):
    out = _ds._call_fn(fn, elem)
    if not isinstance(out, _ds.Dataset):
        raise TypeError("The `map_func` argument of `%s` must return a `tf.data.Dataset` "
                        "object, got %s." % (what, type(out).__name__))
    return out


class Interleave(_ds.Dataset):
    _tf_name = "_InterleaveDataset"

    def __init__(self, src, fn, cycle_length=None, block_length=None, tf_name=None,
                 what="interleave"):
        if cycle_length is None or int(cycle_length) == _ds.AUTOTUNE:
            cycle_length = default_cycle_length()
        if block_length is None:
            block_length = 1
        cycle_length, block_length = int(cycle_length), int(block_length)
        if cycle_length <= 0:
            from mixprec import errors
            raise errors.InvalidArgumentError(None, None,
                                              "cycle_length must be greater than zero.")
        if block_length <= 0:
            from mixprec import errors
            raise errors.InvalidArgumentError(None, None,
                                              "block_length must be greater than zero.")
        self._src, self._fn = src, fn
        self._cycle, self._block = cycle_length, block_length
        self._what = what
        if tf_name:
            self._tf_name = tf_name

    def _elements(self):
        # tf.data's order: an empty slot takes the next input element's dataset and is read
        # at once; a slot gives up to block_length elements, then the cycle moves on
        inputs = self._src._elements()
        slots = [None] * self._cycle
        end_of_input = False
        open_count = 0
        index = 0
        taken = 0
        while not end_of_input or open_count > 0:
            it = slots[index]
            if it is not None:
                try:
                    elem = next(it)
                except StopIteration:
                    slots[index] = None
                    open_count -= 1
                    index, taken = (index + 1) % self._cycle, 0
                    continue
                taken += 1
                if taken == self._block:
                    index, taken = (index + 1) % self._cycle, 0
                yield elem
            elif not end_of_input:
                try:
                    elem = next(inputs)
                except StopIteration:
                    end_of_input = True
                    continue
                slots[index] = iter(_dataset_of(self._fn, elem, self._what)._elements())
                open_count += 1
            else:
                index, taken = (index + 1) % self._cycle, 0

    def _cardinality(self):
        return None

    def _element_spec(self):
        first = next(iter(self._src._elements()), None)
        if first is None:
            raise ValueError("element_spec of a %s over an empty dataset is not known here"
                             % self._what)
        return _dataset_of(self._fn, first, self._what).element_spec


class GroupByWindow(_ds.Dataset):
    """``group_by_window``: elements grouped by ``key_func``; a group of ``window_size``
    elements becomes ``reduce_func(key, window_dataset)``, whose elements are emitted; at the
    end the groups left are reduced in increasing key order (tf.data's)."""

    _tf_name = "_GroupByWindowDataset"

    def __init__(self, src, key_func, reduce_func, window_size=None, window_size_func=None):
        if (window_size is None) == (window_size_func is None):
            if window_size is None:
                raise ValueError("Either the `window_size` argument or the "
                                 "`window_size_func` argument must be specified.")
            raise ValueError("Either the `window_size` argument or the `window_size_func` "
                             "argument must be specified, not both.")
        if window_size is not None:
            size = int(_ds._to_numpy(window_size))
            window_size_func = lambda key: size  # noqa: E731
        self._src, self._key, self._reduce = src, key_func, reduce_func
        self._size_fn = window_size_func

    def _key_of(self, elem):
        k = _ds._call_fn(self._key, elem)
        arr = _ds._to_numpy(k)
        if arr.shape != () or arr.dtype != np.int64:
            raise ValueError("`key_func` must return a single tf.int64 scalar tensor. "
                             "Got type=%s and shape=%s" % (arr.dtype, arr.shape))
        return int(arr)

    def _window_size(self, key):
        n = int(_ds._to_numpy(self._size_fn(_ds._as_tensor(np.int64(key)))))
        if n <= 0:
            from mixprec import errors
            raise errors.InvalidArgumentError(None, None,
                                              "Window size must be greater than zero, but "
                                              "got %d." % n)
        return n

    def _reduced(self, key, elems):
        window = ElementsDataset(elems, self._src.element_spec)
        out = self._reduce(_ds._as_tensor(np.int64(key)), window)
        if not isinstance(out, _ds.Dataset):
            raise TypeError("`reduce_func` must return a `tf.data.Dataset` object, got %s."
                            % type(out).__name__)
        return out._elements()

    def _elements(self):
        groups = {}
        for elem in self._src._elements():
            key = self._key_of(elem)
            group = groups.setdefault(key, [])
            group.append(elem)
            if len(group) >= self._window_size(key):
                del groups[key]
                yield from self._reduced(key, group)
        for key in sorted(groups):
            yield from self._reduced(key, groups[key])

    def _cardinality(self):
        return None

    def _element_spec(self):
        first = next(iter(self._src._elements()), None)
        if first is None:
            raise ValueError("element_spec of group_by_window over an empty dataset is not "
                             "known here")
        key = self._key_of(first)
        window = ElementsDataset([first], self._src.element_spec)
        return self._reduce(_ds._as_tensor(np.int64(key)), window).element_spec

