"""Dataset: from_tensor_slices, shuffle, batch, map, repeat, take, skip, prefetch.

Elements are nested structures (tuples, dicts) of tensors. Datasets built from slices keep
index order lazily, so ``shuffle`` then ``batch`` gathers each batch with one NumPy fancy
index instead of one Python object per element.
"""

import itertools

import numpy as np

from mixprec import _core, _nest
from mixprec import random as _random
from mixprec.data._transforms_more import MoreTransforms

__all__ = ["Dataset", "AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY"]

AUTOTUNE = -1
INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2


def _to_numpy(x):
    if isinstance(x, _core.Tensor):
        return x.numpy()
    if isinstance(x, _core.Variable):
        return x.numpy()
    return np.asarray(x)


def _as_tensor(x):
    # a dataset-valued component (a window) is passed to functions as the dataset itself
    return x if isinstance(x, (_core.Tensor, Dataset)) else _core.convert_to_tensor(x)


def _call_fn(fn, elem, *before):
    """``fn`` applied to an element as tf.data applies user functions: the components made
    tensors, a plain tuple unpacked into arguments (a namedtuple or dict is one argument);
    ``before`` are leading arguments (a scan state, a group key)."""
    args = _nest.map_structure(_as_tensor, elem)
    if type(args) is tuple:
        return fn(*before, *args)
    return fn(*before, args)


def _structure(data):
    """``data`` with every list made one array. NOTE: in tf.data only tuples (namedtuples)
    and dicts are structure; a list at any depth is one array (as TensorFlow), not a tuple."""
    if isinstance(data, list):
        try:  # TensorFlow's dtypes for Python values: float32, int32
            return _core.convert_to_tensor(data).numpy()
        except (TypeError, ValueError):
            return np.asarray(data)
    if isinstance(data, dict):
        return type(data)((k, _structure(v)) for k, v in data.items())
    if isinstance(data, tuple):
        children = [_structure(v) for v in data]
        return type(data)(*children) if hasattr(data, "_fields") else tuple(children)
    return data


def _row(a, j):
    # a[j, ...] keeps a 0-d array for 1-d data: a NumPy scalar (np.float64 is a Python
    # float) would become float32 on conversion instead of keeping its dtype
    return a[j, ...]


def _spec_of(a, drop=0):
    """The TensorSpec of an array's rows (drop=1) or of the array itself (drop=0)."""
    from mixprec._function import TensorSpec
    from mixprec._dtypes import as_dtype
    if isinstance(a, (_core.Tensor, _core.Variable)):
        return TensorSpec(a.shape.as_list()[drop:], a.dtype)
    a = np.asarray(a)
    dt = _core.convert_to_tensor(a.reshape(-1)[:0]).dtype if a.dtype.kind in "OUS" \
        else as_dtype(a.dtype)
    return TensorSpec(list(a.shape[drop:]), dt)


def _respec(spec, dims):
    """spec with its shape made ``dims(shape list)``."""
    from mixprec._function import TensorSpec
    return _nest.map_structure(lambda s: TensorSpec(dims(s.shape.as_list()), s.dtype), spec)


class Dataset(MoreTransforms):
    """A sequence of elements; iterate it, or pass it to ``Model.fit``. The methods beyond
    the core set below are in _transforms_more.py."""

    # ---------------------------------------------------------------- sources

    @staticmethod
    def from_tensor_slices(tensors, name=None):
        """Slices of ``tensors`` along their first dimension (tuples/dicts kept)."""
        data = _nest.map_structure(_to_numpy, _structure(tensors))
        leaves = _nest.flatten(data)
        if not leaves:
            raise ValueError("from_tensor_slices needs at least one tensor")
        for leaf in leaves:
            if leaf.ndim == 0:
                raise ValueError("Unbatching a tensor is only supported for rank >= 1, got a "
                                 "scalar")
        n = {len(leaf) for leaf in leaves}
        if len(n) != 1:
            raise ValueError("Dimensions %s in the components are not compatible: "
                             "from_tensor_slices needs the same first dimension for every "
                             "component" % sorted(n))
        return _Slices(data, n.pop())

    @staticmethod
    def from_tensors(tensors, name=None):
        """A dataset of one element: ``tensors`` itself."""
        data = _nest.map_structure(lambda a: _to_numpy(a)[None], _structure(tensors))
        return _Slices(data, 1, tf_name="_TensorDataset")

    @staticmethod
    def range(*args, **kwargs):
        if len(args) == 3 and args[2] == 0:  # TensorFlow's RangeDataset message
            raise _core.InvalidArgumentError("step must be a non-zero integer.")
        ds = Dataset.from_tensor_slices(np.arange(*args, dtype=np.int64))
        ds._tf_name = "_RangeDataset"
        return ds

    # ---------------------------------------------------------------- transformations

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None,
              deterministic=None, name=None):
        if int(batch_size) <= 0:
            raise ValueError("batch_size must be positive, got %s" % (batch_size,))
        return _Batch(self, int(batch_size), bool(drop_remainder))

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True, name=None):
        if int(buffer_size) <= 0 and buffer_size != AUTOTUNE:
            raise ValueError("buffer_size must be greater than zero, got %s" % (buffer_size,))
        return _Shuffle(self, int(buffer_size), seed, reshuffle_each_iteration)

    def map(self, map_func, num_parallel_calls=None, deterministic=None, name=None):
        return _Map(self, map_func)

    def repeat(self, count=None, name=None):
        return _Repeat(self, None if count is None or count < 0 else int(count))

    def take(self, count, name=None):
        return _Take(self, int(count))

    def skip(self, count, name=None):
        return _Skip(self, int(count))

    def prefetch(self, buffer_size, name=None):
        # elements are produced on demand; nothing to overlap on the CPU
        return _PassThrough(self, "_PrefetchDataset")

    def cache(self, filename="", name=None):
        """The first complete pass kept (in memory, or in ``filename``) and replayed."""
        if filename:
            from mixprec.data import _persist
            return _persist.FileCache(self, filename)
        if isinstance(_unwrap(self), _Slices):  # replaying slices gives the same elements
            return _PassThrough(self, "CacheDataset")  # TensorFlow's name: no underscore
        from mixprec.data import _stateful
        return _stateful.MemoryCache(self)

    def filter(self, predicate, name=None):
        return _Filter(self, predicate)

    def enumerate(self, start=0, name=None):
        return _Enumerate(self, start)

    def unbatch(self, name=None):
        return _Unbatch(self)

    @staticmethod
    def zip(*args, datasets=None, name=None):
        """Elements of several datasets side by side, until the shortest ends."""
        from mixprec.data import _combine
        return _combine.zip_datasets(*args, datasets=datasets, name=name)

    def concatenate(self, dataset, name=None):
        """This dataset's elements, then ``dataset``'s."""
        from mixprec.data import _combine
        return _combine._Concatenate(self, dataset)

    def reduce(self, initial_state, reduce_func, name=None):
        """Folds ``reduce_func(state, element)`` over the elements; returns the state."""
        from mixprec.data import _combine
        return _combine.reduce_dataset(self, initial_state, reduce_func)

    # ---------------------------------------------------------------- inspection

    def cardinality(self):
        n = self._cardinality()
        return _core.constant(UNKNOWN_CARDINALITY if n is None else n, "int64")

    def __len__(self):
        n = self._cardinality()
        if n is not None and n < 0:
            raise TypeError("The dataset is infinite.")
        if n is None:
            raise TypeError("The dataset length is unknown.")
        return n

    def as_numpy_iterator(self):
        from mixprec.data._options import NumpyIterator
        return NumpyIterator(self)

    def options(self):
        """The pipeline's tf.data.Options (data/_options.py)."""
        from mixprec.data import _options
        return _options.options_of(self)

    def with_options(self, options, name=None):
        from mixprec.data import _options
        return _options.with_options(self, options)

    @property
    def element_spec(self):
        """The type of an element (tf.data's): a TensorSpec per component, in the
        element's structure; a batch dimension is None unless ``drop_remainder=True``."""
        spec = getattr(self, "_spec_cache", None)
        if spec is None:
            spec = self._element_spec()
            self._spec_cache = spec
        return spec

    def _element_spec(self):  # the sources and transformations that change it override
        return self._src.element_spec

    def __iter__(self):
        return DatasetIterator(self)

    # TensorFlow's class name for this transformation (its repr shows it)
    _tf_name = "DatasetV2"

    def __repr__(self):
        return "<%s element_spec=%r>" % (self._tf_name, self.element_spec)

    # subclasses: _elements() yields nested NumPy/tensor structures; _cardinality() -> int,
    # -1 (infinite) or None (unknown)


def _errors_ignored():
    """True while an ``ignore_errors()`` stage pulls the next element from its input (a
    failing user function then drops its element instead of ending the pipeline)."""
    from mixprec.data import _stateful
    return _stateful.IGNORING.get()


class DatasetIterator:
    """``iter(dataset)`` (TensorFlow's OwnedIterator): ``next()``, ``get_next()``. Inside a
    traced function, a ``for`` over a dataset or one of these is a loop node (AutoGraph,
    src/mixprec/_loops.py); other Python iteration there breaks the graph (the elements come
    from the host)."""

    def __init__(self, dataset):
        self._dataset = dataset
        self._gen = None
        # made by a traced function (TensorFlow's iterator op): a fresh one at every call
        self._made_traced = _core.graph_recording() is not None

    def __iter__(self):
        return self

    def __next__(self):
        if _core.graph_recording() is not None:
            _core.graph_break("iterating a tf.data.Dataset")
        if self._gen is None:
            self._gen = (_nest.map_structure(_as_tensor, e) for e in self._dataset._elements())
        return next(self._gen)

    def get_next(self):
        try:
            return self.__next__()
        except StopIteration:
            from mixprec import errors
            raise errors.OutOfRangeError("End of sequence") from None

    def get_next_as_optional(self):
        """The next element as a ``tf.experimental.Optional`` (empty at the end)."""
        from mixprec.data import _optional
        return _optional.get_next_as_optional(self)

    @property
    def element_spec(self):
        return self._dataset.element_spec


def _unwrap(ds):
    """``ds`` without the pass-through stages (prefetch, cache) in front of it."""
    while isinstance(ds, _PassThrough):
        ds = ds._src
    return ds


class _PassThrough(Dataset):
    """prefetch and cache: the same elements (a stage of its own only for its name)."""

    def __init__(self, src, tf_name):
        self._src, self._tf_name = src, tf_name

    def _elements(self):
        return self._src._elements()

    def _cardinality(self):
        return self._src._cardinality()


class _Slices(Dataset):
    _tf_name = "_TensorSliceDataset"

    def __init__(self, data, n, order_fn=None, tf_name=None):
        if tf_name is not None:
            self._tf_name = tf_name
        self._data = data
        self._n = n
        self._order_fn = order_fn  # () -> index array for one pass

    def _order(self):
        return self._order_fn() if self._order_fn is not None else None

    def _take_rows(self, idx):
        return _nest.map_structure(lambda a: a[idx], self._data)

    def _elements(self):
        order = self._order()
        for i in range(self._n):
            j = i if order is None else order[i]
            yield _nest.map_structure(lambda a: _row(a, j), self._data)

    def _cardinality(self):
        return self._n

    def _element_spec(self):
        return _nest.map_structure(lambda a: _spec_of(a, 1), self._data)


# TensorFlow's seed when only an op seed is given (random_seed.DEFAULT_GRAPH_SEED)
_DEFAULT_GLOBAL_SEED = 87654321


class _Shuffle(Dataset):
    _tf_name = "_ShuffleDataset"
    """NOTE: the order depends only on (global seed, op seed, pass number), as in
    TensorFlow: two datasets shuffled with the same ``seed`` give the same first order,
    in any process, whatever other random ops ran; each new pass (epoch) reshuffles unless
    ``reshuffle_each_iteration=False``. Without a seed it draws a key from the global
    sequence (reproducible after ``tf.random.set_seed``)."""

    def __init__(self, src, buffer_size, seed, reshuffle):
        self._src = src
        self._buffer = buffer_size
        self._seed = seed
        self._reshuffle = reshuffle
        if seed is None:
            self._key = _random.get_seed(None)
        else:
            g = _random._global_seed
            g = _DEFAULT_GLOBAL_SEED if g is None else g
            self._key = (_random._mix(_random._mix(g, 0), int(seed) + 1), 0)
        self._epoch = 0

    def _rng(self):
        key, stream = self._key
        epoch = 0
        if self._reshuffle:
            epoch = self._epoch
            self._epoch += 1
        return np.random.default_rng([key, stream, epoch])

    def _order(self, n):
        """TensorFlow's buffered shuffle over indices 0..n-1."""
        rng = self._rng()
        b = n if self._buffer == AUTOTUNE else self._buffer
        if b >= n:
            return rng.permutation(n)
        buf = list(range(min(b, n)))
        nxt = len(buf)
        out = np.empty(n, dtype=np.int64)
        draws = rng.integers(0, 1 << 62, size=n)
        for i in range(n):
            k = int(draws[i] % len(buf))
            out[i] = buf[k]
            if nxt < n:
                buf[k] = nxt
                nxt += 1
            else:
                buf[k] = buf[-1]
                buf.pop()
        return out

    def _as_slices(self):
        src = _unwrap(self._src)
        if isinstance(src, _Slices) and src._order_fn is None:
            return _Slices(src._data, src._n, lambda: self._order(src._n))
        return None

    def _elements(self):
        sl = self._as_slices()
        if sl is not None:
            yield from sl._elements()
            return
        rng = self._rng()
        buf = []
        # AUTOTUNE: a buffer as large as the dataset (a full shuffle)
        limit = float("inf") if self._buffer == AUTOTUNE else self._buffer
        for elem in self._src._elements():
            if len(buf) < limit:
                buf.append(elem)
                continue
            k = int(rng.integers(len(buf)))
            yield buf[k]
            buf[k] = elem
        while buf:
            k = int(rng.integers(len(buf)))
            yield buf.pop(k) if k == len(buf) - 1 else _swap_pop(buf, k)

    def _cardinality(self):
        return self._src._cardinality()


def _swap_pop(buf, k):
    buf[k], buf[-1] = buf[-1], buf[k]
    return buf.pop()


class _Batch(Dataset):
    _tf_name = "_BatchDataset"
    def __init__(self, src, n, drop):
        self._src, self._n, self._drop = src, n, drop

    def _elements(self):
        src = _unwrap(self._src)
        sl = src._as_slices() if isinstance(src, _Shuffle) else (
            src if isinstance(src, _Slices) else None)
        if sl is not None:
            order = sl._order()
            total = sl._n
            for lo in range(0, total, self._n):
                hi = min(lo + self._n, total)
                if hi - lo < self._n and self._drop:
                    return
                idx = slice(lo, hi) if order is None else order[lo:hi]
                yield sl._take_rows(idx)
            return
        batch = []
        for elem in src._elements():
            batch.append(elem)
            if len(batch) == self._n:
                yield _stack(batch)
                batch = []
        if batch and not self._drop:
            yield _stack(batch)

    def _cardinality(self):
        n = self._src._cardinality()
        if n is None or n < 0:
            return n
        return n // self._n if self._drop else -(-n // self._n)

    def _element_spec(self):
        n = self._n if self._drop else None
        return _respec(self._src.element_spec, lambda d: [n] + d)


def _stack(elems):
    return _nest.map_structure(lambda *xs: np.stack([_to_numpy(x) for x in xs]), *elems)


class _Map(Dataset):
    _tf_name = "_MapDataset"
    def __init__(self, src, fn):
        self._src, self._fn = src, fn

    def _elements(self):
        for elem in self._src._elements():
            try:
                out = _call_fn(self._fn, elem)
            except Exception:
                if _errors_ignored():
                    continue
                raise
            yield out

    def _cardinality(self):
        return self._src._cardinality()

    def _element_spec(self):
        """The function's results on the first element (TensorFlow traces the function on
        the input spec instead). A dimension the input spec leaves None and the results
        follow (their size changes with a smaller first element) is None."""
        src = self._src.element_spec
        first = next(iter(self._src._elements()), None)
        if first is None:
            raise ValueError("element_spec of a map over an empty dataset is not known here")
        call = lambda e: self._fn(*e) if type(e) is tuple else self._fn(e)  # noqa: E731
        args = _nest.map_structure(_as_tensor, first)
        spec = _nest.map_structure(lambda t: _spec_of(_as_tensor(t)), call(args))
        # a result whose shape follows the values (tf.fill([x], x)): the second element's
        # result differs along it, so that dimension is None (TensorFlow's trace says None)
        try:
            second = next(itertools.islice(self._src._elements(), 1, None), None)
            if second is not None:
                spec = _loosen(spec, _nest.map_structure(
                    lambda t: _spec_of(_as_tensor(t)), _call_fn(self._fn, second)))
        except Exception:  # a failing second element (ignore_errors drops it) tells nothing
            pass
        open_dims = [s.shape.as_list() for s in _nest.flatten(src)]
        if not any(None in d for d in open_dims):
            return spec
        # the same element cut to one entry along each open dimension: what changes is open
        cut = _nest.map_structure(
            lambda t, s: _as_tensor(_to_numpy(t)[tuple(slice(0, 1) if d is None else slice(None)
                                                       for d in s.shape.as_list())]),
            args, src)
        spec2 = _nest.map_structure(lambda t: _spec_of(_as_tensor(t)), call(cut))
        return _loosen(spec, spec2)


def _loosen(spec, other):
    """``spec`` with every dimension that differs in ``other`` made None."""
    return _nest.map_structure(
        lambda a, b: type(a)([x if x == y else None for x, y in zip(a.shape.as_list(),
                                                                    b.shape.as_list())]
                             if a.shape.rank == b.shape.rank else None, a.dtype), spec, other)


class _Repeat(Dataset):
    _tf_name = "_RepeatDataset"
    def __init__(self, src, count):
        self._src, self._count = src, count

    def _elements(self):
        i = 0
        while self._count is None or i < self._count:
            empty = True
            for elem in self._src._elements():
                empty = False
                yield elem
            if empty:
                return
            i += 1

    def _cardinality(self):
        n = self._src._cardinality()
        if self._count is None:
            return -1 if n != 0 else 0
        return None if n is None else (-1 if n < 0 else n * self._count)


class _Take(Dataset):
    _tf_name = "_TakeDataset"
    def __init__(self, src, count):
        self._src, self._count = src, count

    def _elements(self):
        if self._count == 0:
            return
        for i, elem in enumerate(self._src._elements()):
            yield elem
            if self._count >= 0 and i + 1 >= self._count:
                return

    def _cardinality(self):
        n = self._src._cardinality()
        if self._count < 0:
            return n
        if n is None:
            return None
        return self._count if n < 0 else min(n, self._count)


class _Skip(Dataset):
    _tf_name = "_SkipDataset"
    def __init__(self, src, count):
        self._src, self._count = src, count

    def _elements(self):
        if self._count < 0:  # skip(-1): the whole dataset, as tf.data
            return
        for i, elem in enumerate(self._src._elements()):
            if i >= self._count:
                yield elem

    def _cardinality(self):
        if self._count < 0:
            return 0
        n = self._src._cardinality()
        return n if n is None or n < 0 else max(0, n - self._count)


class _Filter(Dataset):
    _tf_name = "_FilterDataset"
    def __init__(self, src, pred):
        self._src, self._pred = src, pred

    def _elements(self):
        for elem in self._src._elements():
            try:
                keep = bool(_call_fn(self._pred, elem))
            except Exception:
                if _errors_ignored():
                    continue
                raise
            if keep:
                yield elem

    def _cardinality(self):
        return None


class _Enumerate(Dataset):
    _tf_name = "_ZipDataset"  # TensorFlow's class (enumerate is a zip with a range)
    def __init__(self, src, start):
        self._src, self._start = src, start

    def _elements(self):
        for i, elem in enumerate(self._src._elements()):
            yield (np.int64(self._start + i), elem)

    def _element_spec(self):
        from mixprec._function import TensorSpec
        return (TensorSpec([], "int64"), self._src.element_spec)

    def _cardinality(self):
        return self._src._cardinality()


class _Unbatch(Dataset):
    _tf_name = "_UnbatchDataset"
    def __init__(self, src):
        self._src = src

    def _elements(self):
        for elem in self._src._elements():
            leaves = _nest.flatten(elem)
            n = len(_to_numpy(leaves[0]))
            for i in range(n):
                yield _nest.map_structure(lambda a: _row(_to_numpy(a), i), elem)

    def _element_spec(self):
        return _respec(self._src.element_spec, lambda d: d[1:])

    def _cardinality(self):
        return None
