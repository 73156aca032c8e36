"""Datasets that draw from several others: ``choose_from_datasets`` (a dataset of
indices says which input gives the next element), ``sample_from_datasets`` (the index is
drawn from the weights) and ``rejection_resample``, with tf.data's end-of-input rules and
errors. The draws use NumPy's generator keyed like ``shuffle`` (seeded: reproducible)."""

import numpy as np

from mixprec import _nest, errors
from mixprec.data import dataset as _ds

__all__ = ["choose_from_datasets", "sample_from_datasets", "rejection_resample"]


def _check_inputs(datasets, what):
    if not isinstance(datasets, (list, tuple)) or not datasets:
        raise ValueError("Invalid `datasets`. `datasets` should not be empty.")
    for d in datasets:
        if not isinstance(d, _ds.Dataset):
            raise TypeError("Invalid `datasets`. `datasets` must be a list of `tf.data.Dataset`"
                            " objects, got %s." % type(d).__name__)
    first = repr(_nest.map_structure(lambda s: s.dtype, datasets[0].element_spec))
    for d in datasets[1:]:
        if repr(_nest.map_structure(lambda s: s.dtype, d.element_spec)) != first:
            raise TypeError("Incompatible dataset elements in `%s`: %r and %r"
                            % (what, datasets[0].element_spec, d.element_spec))
    return list(datasets)


def _common_spec(datasets):
    """The most specific spec all inputs fit (a dimension that differs becomes None)."""
    from mixprec._function import TensorSpec

    def merge(*specs):
        ranks = {s.shape.rank for s in specs}
        if len(ranks) != 1 or None in ranks:
            return TensorSpec(None, specs[0].dtype)
        dims = [d[0] if len(set(d)) == 1 else None for d in zip(*[list(s.shape) for s in specs])]
        return TensorSpec(dims, specs[0].dtype)
    return _nest.map_structure(merge, *[d.element_spec for d in datasets])


class _Directed(_ds.Dataset):
    _tf_name = "_DirectedInterleaveDataset"

    def __init__(self, datasets, selector, stop_on_empty):
        self._inputs, self._selector, self._stop = datasets, selector, stop_on_empty

    def _elements(self):
        iters = [d._elements() for d in self._inputs]
        alive = [True] * len(iters)
        for index in self._selector():
            i = int(index)
            if i < 0 or i >= len(iters):
                raise errors.InvalidArgumentError(
                    None, None, "Selector index out of range: %d >= %d" % (i, len(iters)))
            if not alive[i]:
                continue
            try:
                yield next(iters[i])
            except StopIteration:
                alive[i] = False
                if self._stop or not any(alive):
                    return

    def _cardinality(self):
        return None

    def _element_spec(self):
        return _common_spec(self._inputs)


def choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset=True):
    datasets = _check_inputs(datasets, "choose_from_datasets")
    spec = choice_dataset.element_spec if isinstance(choice_dataset, _ds.Dataset) else None
    if spec is None or _nest.is_nested(spec) or spec.dtype.name != "int64" or \
            spec.shape.rank != 0:
        raise TypeError("Invalid `choice_dataset`. `choice_dataset` must be a dataset of "
                        "scalar `tf.int64` tensors.")
    return _Directed(datasets, lambda: (_ds._to_numpy(e) for e in choice_dataset._elements()),
                     bool(stop_on_empty_dataset))


def _key(seed):
    from mixprec import random as _random
    if seed is None:
        return _random.get_seed(None)
    g = _random._global_seed
    g = _ds._DEFAULT_GLOBAL_SEED if g is None else g
    return (_random._mix(_random._mix(g, 0), int(seed) + 1), 0)


def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False,
                         rerandomize_each_iteration=None):
    datasets = _check_inputs(datasets, "sample_from_datasets")
    n = len(datasets)
    if weights is None:
        w = np.full(n, 1.0 / n)
    else:
        if isinstance(weights, _ds.Dataset):
            raise NotImplementedError("sample_from_datasets: weights given as a dataset are "
                                      "not supported by mixprec; pass a list or tensor")
        w = np.asarray(_ds._to_numpy(weights) if hasattr(weights, "numpy") else weights,
                       dtype=np.float64).reshape(-1)
        if w.shape != (n,):
            raise ValueError("Invalid `weights`. The shape of `weights` should be compatible "
                             "with `[len(datasets)]` but is %s." % (list(np.shape(weights)),))
        if np.any(w < 0) or not np.isfinite(w).all() or w.sum() <= 0:
            raise errors.InvalidArgumentError(None, None, "Invalid `weights`: they must be "
                                              "non-negative, finite and not all zero.")
        w = w / w.sum()
    if n == 1:
        return datasets[0]
    key = _key(seed)
    passes = [0]

    def selector():
        epoch = passes[0] if rerandomize_each_iteration or seed is None else 0
        passes[0] += 1
        rng = np.random.default_rng([key[0], key[1], epoch, 11])
        while True:
            yield from rng.choice(n, size=256, p=w)
    return _Directed(datasets, selector, bool(stop_on_empty_dataset))


class _Resample(_ds.Dataset):
    """``rejection_resample``: elements kept with the probability that moves the class
    distribution from the initial (given, or estimated as it streams) to the target;
    elements are ``(class, element)`` pairs, as tf.data."""

    _tf_name = "_MapDataset"

    def __init__(self, src, class_func, target, initial, seed):
        self._src, self._class = src, class_func
        self._target = target
        self._initial = initial
        self._key = _key(seed)
        self._pass = 0

    def _elements(self):
        rng = np.random.default_rng([self._key[0], self._key[1], self._pass, 13])
        self._pass += 1
        k = len(self._target)
        counts = np.zeros(k)
        for elem in self._src._elements():
            c = int(_ds._to_numpy(_ds._call_fn(self._class, elem)))
            if c < 0 or c >= k:
                raise errors.InvalidArgumentError(
                    None, None, "class_func returned %d, outside [0, %d)" % (c, k))
            if self._initial is None:
                counts[c] += 1
                initial = counts / counts.sum()
            else:
                initial = self._initial
            ratio = np.where(initial > 0, self._target / np.maximum(initial, 1e-30), 0.0)
            accept = ratio / max(ratio.max(), 1e-30)
            if rng.random() < accept[c]:
                yield (np.int32(c), elem)

    def _cardinality(self):
        return None

    def _element_spec(self):
        from mixprec._function import TensorSpec
        return (TensorSpec([], "int32"), self._src.element_spec)


def rejection_resample(src, class_func, target_dist, initial_dist=None, seed=None):
    target = np.asarray(_ds._to_numpy(target_dist), dtype=np.float64).reshape(-1)
    if target.size == 0 or np.any(target < 0) or not np.isclose(target.sum(), 1.0):
        raise errors.InvalidArgumentError(None, None, "target_dist must be a probability "
                                          "vector (non-negative, summing to 1)")
    initial = None
    if initial_dist is not None:
        initial = np.asarray(_ds._to_numpy(initial_dist), dtype=np.float64).reshape(-1)
        if initial.shape != target.shape:
            raise ValueError("initial_dist and target_dist must have the same length")
    return _Resample(src, class_func, target, initial, seed)
