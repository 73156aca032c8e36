"""Datasets as elements: ``tf.data.DatasetSpec`` (the type of a dataset-valued component,
as ``window`` produces) and the in-memory dataset such a component holds. Orchestration
only: the held elements are the pipeline's own arrays/tensors, never copied element-wise
into Python numbers."""

from mixprec._shape import TensorShape
from mixprec.data import dataset as _ds

__all__ = ["DatasetSpec", "ElementsDataset"]


class DatasetSpec:
    """``tf.data.DatasetSpec``: the type of a dataset-valued element component."""

    def __init__(self, element_spec, dataset_shape=()):
        self._element_spec = element_spec
        self._dataset_shape = TensorShape(dataset_shape)

    @property
    def element_spec(self):
        return self._element_spec

    @staticmethod
    def from_value(value):
        return DatasetSpec(value.element_spec)

    def is_compatible_with(self, other):
        other_spec = other.element_spec if isinstance(other, (DatasetSpec, _ds.Dataset)) \
            else None
        return other_spec is not None and repr(other_spec) == repr(self._element_spec)

    def __eq__(self, other):
        return isinstance(other, DatasetSpec) and \
            repr(other._element_spec) == repr(self._element_spec) and \
            other._dataset_shape == self._dataset_shape

    def __hash__(self):
        return hash(repr(self))

    def __repr__(self):
        return "DatasetSpec(%r, %r)" % (self._element_spec, self._dataset_shape)


class ElementsDataset(_ds.Dataset):
    """A finite dataset over elements already produced (a window, a group of
    ``group_by_window``): TensorFlow's ``_VariantDataset``."""

    _tf_name = "_VariantDataset"

    def __init__(self, elements, spec):
        self._items = list(elements)
        self._spec = spec

    def _elements(self):
        return iter(self._items)

    def _cardinality(self):
        return len(self._items)

    def _element_spec(self):
        return self._spec
