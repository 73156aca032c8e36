"""Datasets that combine others and the reduction of a dataset: ``Dataset.zip``,
``Dataset.concatenate`` and ``Dataset.reduce`` (tf.data's semantics: zip stops at the
shortest input, concatenate needs matching structures, reduce folds a function over the
elements). Orchestration of elements only; arithmetic stays in the user's function."""

from mixprec import _nest
from mixprec.data import dataset as _ds

__all__ = ["zip_datasets", "reduce_dataset"]


def _check_dataset(d, what="zip"):
    if not isinstance(d, _ds.Dataset):
        raise TypeError("Invalid input to `%s`. Inputs are expected to be (nested) structures "
                        "of `tf.data.Dataset` objects but encountered object of type %s."
                        % (what, type(d)))
    return d


class _Zip(_ds.Dataset):
    _tf_name = "_ZipDataset"
    def __init__(self, datasets):
        self._datasets = datasets  # a nested structure of datasets
        for d in _nest.flatten(datasets):
            _check_dataset(d)

    def _elements(self):
        flat = _nest.flatten(self._datasets)
        iters = [d._elements() for d in flat]
        while True:
            elems = []
            for it in iters:
                try:
                    elems.append(next(it))
                except StopIteration:
                    return
            yield _nest.pack_sequence_as(self._datasets, elems)

    def _cardinality(self):
        ns = [d._cardinality() for d in _nest.flatten(self._datasets)]
        finite = [n for n in ns if n is not None and n >= 0]
        if finite:
            return min(finite) if all(n is not None for n in ns) or min(finite) == 0 \
                else None
        return None if any(n is None for n in ns) else -1

    def _element_spec(self):
        return _nest.map_structure(lambda d: d.element_spec, self._datasets)


class _Concatenate(_ds.Dataset):
    _tf_name = "_ConcatenateDataset"
    def __init__(self, first, second):
        self._first, self._second = first, _check_dataset(second, "concatenate")

    def _elements(self):
        yield from self._first._elements()
        yield from self._second._elements()

    def _cardinality(self):
        a, b = self._first._cardinality(), self._second._cardinality()
        if a is not None and a < 0 or b is not None and b < 0:
            return -1
        return None if a is None or b is None else a + b

    def _element_spec(self):
        return self._first.element_spec


def zip_datasets(*args, datasets=None, name=None):
    """``Dataset.zip((a, b))`` or ``Dataset.zip(a, b)``: elements side by side."""
    if datasets is not None and args:
        raise TypeError("Both `*args` and `datasets` cannot be set.")
    if datasets is None:
        if not args:
            raise TypeError("Must pass at least one dataset to `zip`.")
        datasets = args[0] if len(args) == 1 else tuple(args)
    return _Zip(datasets)


def reduce_dataset(dataset, initial_state, reduce_func):
    """The state after ``state = reduce_func(state, element)`` over every element."""
    state = _nest.map_structure(_ds._as_tensor, initial_state)
    for elem in dataset._elements():
        state = _nest.map_structure(
            _ds._as_tensor, reduce_func(state, _nest.map_structure(_ds._as_tensor, elem)))
    return state
