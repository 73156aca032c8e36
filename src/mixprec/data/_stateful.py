"""Transformations that carry state from one element to the next or stop early: ``scan``,
``take_while``, ``unique``, ``shard``, ``ignore_errors``, ``cache`` (in memory),
``assert_cardinality`` and ``get_single_element``, with tf.data's semantics and errors.
Element orchestration only; arithmetic stays in the user's function (run on the core)."""

import contextvars

import numpy as np

from mixprec import _nest, errors
from mixprec.data import dataset as _ds

__all__ = ["IGNORING"]

# set while an ignore_errors() stage pulls from its input (dataset._errors_ignored)
IGNORING = contextvars.ContextVar("mixprec_data_ignoring_errors", default=False)


class IgnoreErrors(_ds.Dataset):
    _tf_name = "_IgnoreErrorsDataset"

    def __init__(self, src, log_warning=False):
        self._src, self._log = src, bool(log_warning)

    def _elements(self):
        it = self._src._elements()
        while True:
            tok = IGNORING.set(True)
            try:
                elem = next(it)
            except StopIteration:
                return
            except Exception as e:  # a failing source ends its pipeline (it cannot resume)
                if self._log:
                    from mixprec import _logging
                    _logging.get_logger().warning("Ignoring error: %s" % e)
                return
            finally:
                IGNORING.reset(tok)
            yield elem

    def _cardinality(self):
        return None


def _tensor_struct(x):
    return _nest.map_structure(_ds._as_tensor, x)


def _check_same_types(initial, new):
    a, b = _nest.flatten(initial), _nest.flatten(new)
    if len(a) != len(b):
        raise TypeError("The element classes for the new state must match the initial state. "
                        "Expected %r; got %r." % (initial, new))
    for x, y in zip(a, b):
        if x.dtype != y.dtype:
            raise TypeError("The element types for the new state must match the initial "
                            "state. Expected %s; got %s." % (x.dtype.name, y.dtype.name))


class Scan(_ds.Dataset):
    _tf_name = "_ScanDataset"

    def __init__(self, src, initial_state, scan_func, tf_name=None):
        self._src = src
        self._init = _nest.map_structure(_ds._as_tensor, initial_state)
        self._fn = scan_func
        if tf_name:
            self._tf_name = tf_name

    def _step(self, state, elem):
        out = _ds._call_fn(self._fn, elem, state)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError("`scan_func` must return a pair of (new_state, output_element), "
                            "got %r" % (out,))
        new_state = _tensor_struct(out[0])
        _check_same_types(self._init, new_state)
        return new_state, out[1]

    def _elements(self):
        state = self._init
        for elem in self._src._elements():
            state, out = self._step(state, elem)
            yield out

    def _cardinality(self):
        return self._src._cardinality()

    def _element_spec(self):
        first = next(iter(self._src._elements()), None)
        if first is None:
            raise ValueError("element_spec of a scan over an empty dataset is not known here")
        _, out = self._step(self._init, first)
        return _nest.map_structure(lambda t: _ds._spec_of(_ds._as_tensor(t)), out)


class TakeWhile(_ds.Dataset):
    _tf_name = "_TakeWhileDataset"

    def __init__(self, src, predicate):
        self._src, self._pred = src, predicate

    def _elements(self):
        for elem in self._src._elements():
            keep = _ds._call_fn(self._pred, elem)
            if not bool(keep):
                return
            yield elem

    def _cardinality(self):
        return None


class Unique(_ds.Dataset):
    _tf_name = "_UniqueDataset"

    def __init__(self, src):
        spec = src.element_spec
        if len(_nest.flatten(spec)) != 1:
            raise errors.InvalidArgumentError(
                None, None, "UniqueDataset only supports inputs with a single component.")
        dt = _nest.flatten(spec)[0].dtype
        if dt.name not in ("int32", "int64", "string"):
            raise TypeError("`tf.data.Dataset.unique` does not support type %s -- only "
                            "`tf.int32`, `tf.int64`, and `tf.string` are supported." % str(dt))
        self._src = src

    def _elements(self):
        seen = set()
        for elem in self._src._elements():
            leaf = _ds._to_numpy(_nest.flatten(elem)[0])
            key = (leaf.shape, leaf.tobytes()) if leaf.dtype.kind != "O" else \
                (leaf.shape, tuple(leaf.reshape(-1).tolist()))
            if key in seen:
                continue
            seen.add(key)
            yield elem

    def _cardinality(self):
        return None


class Shard(_ds.Dataset):
    _tf_name = "_ShardDataset"

    def __init__(self, src, num_shards, index):
        num_shards, index = int(num_shards), int(index)
        if num_shards <= 0:
            raise errors.InvalidArgumentError(
                None, None, "Number of shards must be greater than zero (currently "
                "num_shards = %d)." % num_shards)
        if index < 0 or index >= num_shards:
            raise errors.InvalidArgumentError(
                None, None, "Index must be between 0 and %d (currently index = %d)."
                % (num_shards - 1, index))
        self._src, self._n, self._i = src, num_shards, index

    def _elements(self):
        for k, elem in enumerate(self._src._elements()):
            if k % self._n == self._i:
                yield elem

    def _cardinality(self):
        n = self._src._cardinality()
        if n is None or n < 0:
            return n
        return n // self._n + (1 if n % self._n > self._i else 0)


class AssertCardinality(_ds.Dataset):
    _tf_name = "_AssertCardinalityDataset"

    def __init__(self, src, expected):
        self._src, self._expected = src, int(expected)

    def _elements(self):
        k = 0
        for elem in self._src._elements():
            k += 1
            if self._expected >= 0 and k > self._expected:
                raise errors.FailedPreconditionError(
                    None, None, "Input dataset was expected to contain %d elements but "
                    "contained at least %d elements." % (self._expected, k))
            yield elem
        if self._expected < 0 or k < self._expected:
            raise errors.FailedPreconditionError(
                None, None, "Input dataset was expected to contain %s elements but contained "
                "only %d elements." % ("an infinite number of" if self._expected < 0
                                       else str(self._expected), k))

    def _cardinality(self):
        return self._expected


class MemoryCache(_ds.Dataset):
    """``cache()``: the first complete pass is kept; later passes replay it (a random map
    before the cache gives the same values every epoch, as tf.data). A pass abandoned
    midway keeps nothing."""

    _tf_name = "CacheDataset"

    def __init__(self, src):
        self._src = src
        self._kept = None

    def _elements(self):
        if self._kept is not None:
            yield from self._kept
            return
        seen = []
        for elem in self._src._elements():
            seen.append(elem)
            yield elem
        self._kept = seen

    def _cardinality(self):
        return self._src._cardinality()


def get_single_element(dataset):
    """The only element of ``dataset`` (tensors), or TensorFlow's InvalidArgumentError."""
    if not isinstance(dataset, _ds.Dataset):
        raise TypeError("Invalid `dataset`. Expected a `tf.data.Dataset` object but got %s."
                        % type(dataset))
    it = iter(dataset._elements())
    try:
        first = next(it)
    except StopIteration:
        raise errors.InvalidArgumentError(None, None, "Dataset was empty.") from None
    if next(it, it) is not it:
        raise errors.InvalidArgumentError(None, None, "Dataset had more than one element.")
    return _tensor_struct(first)


def counter(start=0, step=1, dtype="int64"):
    """``Dataset.counter``: start, start + step, … without end."""
    from mixprec._dtypes import as_dtype
    dt = as_dtype(dtype)
    if dt.name not in ("int32", "int64", "float32", "float64", "int16", "int8", "uint8"):
        raise TypeError("Dataset.counter needs a numeric dtype, got %s" % dt.name)
    return _Counter(start, step, dt)


class _Counter(_ds.Dataset):
    _tf_name = "_ScanDataset"  # TensorFlow builds it as a scan over repeat(0)

    def __init__(self, start, step, dtype):
        self._start, self._step, self._dtype = start, step, dtype

    def _elements(self):
        np_dt = self._dtype.as_numpy_dtype
        v = np.asarray(self._start, dtype=np_dt)
        step = np.asarray(self._step, dtype=np_dt)
        while True:
            yield v
            v = np.asarray(v + step, dtype=np_dt)

    def _cardinality(self):
        return -1

    def _element_spec(self):
        from mixprec._function import TensorSpec
        return TensorSpec([], self._dtype)


class RandomInts(_ds.Dataset):
    """``Dataset.random``: uniform 32-bit non-negative integers as int64 without end; the
    same sequence for the same seed, re-drawn each pass unless
    ``rerandomize_each_iteration`` is False (TensorFlow's default for a seeded dataset)."""

    _tf_name = "_RandomDataset"

    def __init__(self, seed=None, rerandomize_each_iteration=None):
        from mixprec import random as _random
        if seed is None:
            self._key = _random.get_seed(None)
        else:
            g = _random._global_seed
            g = _ds._DEFAULT_GLOBAL_SEED if g is None else g
            self._key = (_random._mix(_random._mix(g, 0), int(seed) + 1), 0)
        self._rerandomize = bool(rerandomize_each_iteration)
        self._pass = 0

    def _elements(self):
        key, stream = self._key
        epoch = self._pass if self._rerandomize else 0
        self._pass += 1
        rng = np.random.default_rng([key, stream, epoch, 7])
        while True:
            for v in rng.integers(0, 1 << 32, size=256, dtype=np.int64):
                yield v

    def _cardinality(self):
        return -1

    def _element_spec(self):
        from mixprec._function import TensorSpec
        return TensorSpec([], "int64")


__all__ += ["IgnoreErrors", "Scan", "TakeWhile", "Unique", "Shard", "AssertCardinality",
            "MemoryCache", "get_single_element", "counter", "RandomInts"]
