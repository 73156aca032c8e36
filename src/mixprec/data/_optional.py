"""``tf.experimental.Optional`` and ``Iterator.get_next_as_optional``: a value that may be
absent, as tf.data's iterators return it at the end of a dataset (no exception)."""

from mixprec import _core, _nest, errors

__all__ = ["Optional", "get_next_as_optional"]


class Optional:
    """An element or nothing: ``has_value()`` (a bool tensor), ``get_value()``."""

    def __init__(self, value=None, element_spec=None, _has=True):
        self._value, self._has, self._spec = value, _has, element_spec

    @staticmethod
    def from_value(value):
        from mixprec.data import dataset as _ds
        value = _nest.map_structure(_ds._as_tensor, value)
        spec = _nest.map_structure(lambda t: _ds._spec_of(t), value)
        return Optional(value, spec, True)

    @staticmethod
    def empty(element_spec):
        return Optional(None, element_spec, False)

    def has_value(self, name=None):
        return _core.constant(self._has, "bool")

    def get_value(self, name=None):
        if not self._has:
            raise errors.InvalidArgumentError(None, None, "The optional does not have a value.")
        return self._value

    @property
    def element_spec(self):
        return self._spec

    def __repr__(self):
        return "<mixprec Optional has_value=%s element_spec=%r>" % (self._has, self._spec)


def get_next_as_optional(iterator):
    """The iterator's next element as an Optional (empty at the end)."""
    from mixprec.data import dataset as _ds
    spec = iterator._dataset.element_spec
    try:
        value = next(iterator)
    except StopIteration:
        return Optional.empty(spec)
    return Optional(_nest.map_structure(_ds._as_tensor, value), spec, True)
