"""Sources from Python: ``Dataset.from_generator`` (each yielded element checked against
the declared signature and converted as tf.data does, its errors in TensorFlow's words)
and ``tf.data.experimental.from_list``. The generator is called again for every pass."""

import numpy as np

from mixprec import _nest, errors
from mixprec._shape import TensorShape
from mixprec.data import dataset as _ds

__all__ = ["from_generator", "from_list"]


def _spec_from(types, shapes):
    from mixprec._function import TensorSpec
    if shapes is None:
        return _nest.map_structure(lambda t: TensorSpec(None, t), types)
    flat_t = _nest.flatten(types)
    if not _nest.is_nested(types):
        return TensorSpec(_as_shape(shapes), types)
    flat_s = _flatten_shapes_up_to(types, shapes)
    if len(flat_s) != len(flat_t):
        raise ValueError("`output_shapes` must have the same structure as `output_types`")
    return _nest.pack_sequence_as(types, [TensorSpec(_as_shape(s), t)
                                          for s, t in zip(flat_s, flat_t)])


def _as_shape(s):
    if s is None or isinstance(s, TensorShape):
        return s
    return [None if d is None or (isinstance(d, int) and d < 0) else d for d in s]


def _flatten_shapes_up_to(types, shapes):
    """The shapes aligned with ``types``' leaves (a shape is itself a list/tuple of dims)."""
    out = []

    def walk(t, s):
        if not _nest.is_nested(t):
            out.append(s)
            return
        if isinstance(t, dict):
            for k in sorted(t, key=_nest._sort_key):
                walk(t[k], s[k])
        else:
            if len(t) != len(s):
                raise ValueError("`output_shapes` must have the same structure as "
                                 "`output_types`")
            for a, b in zip(t, s):
                walk(a, b)
    walk(types, shapes)
    return out


def _structure_text(spec):
    return repr(_nest.map_structure(lambda s: _DtypeText(s.dtype), spec))


class _DtypeText:
    def __init__(self, dtype):
        self._d = dtype

    def __repr__(self):
        return "tf.%s" % self._d.name


def _flatten_yield(spec, value):
    """``value``'s leaves in the order of ``spec``'s, lists accepted for tuples (tf.data's
    flatten_up_to); None when the structures differ."""
    out = []

    def walk(sp, v):
        if not _nest.is_nested(sp):
            out.append(v)
            return True
        if isinstance(sp, dict):
            if not isinstance(v, dict) or set(v) != set(sp):
                return False
            return all(walk(sp[k], v[k]) for k in sorted(sp, key=_nest._sort_key))
        if not isinstance(v, (tuple, list)) or len(v) != len(sp):
            return False
        return all(walk(a, b) for a, b in zip(sp, v))
    return out if walk(spec, value) else None


def _convert(spec, value):
    flat = _flatten_yield(spec, value)
    if flat is None:
        raise errors.InvalidArgumentError(
            None, None, "TypeError: `generator` yielded an element that did not match the "
            "expected structure. The expected structure was %s, but the yielded element was "
            "%r." % (_structure_text(spec), value))
    leaves = _nest.flatten(spec)
    out = []
    for leaf, v in zip(leaves, flat):
        dt = leaf.dtype
        try:
            if hasattr(v, "numpy"):
                v = v.numpy()
            if dt.name == "string":
                arr = np.asarray(v, dtype=object)
            else:
                arr = np.asarray(v, dtype=dt.as_numpy_dtype)
        except (TypeError, ValueError, OverflowError):
            raise errors.InvalidArgumentError(
                None, None, "TypeError: `generator` yielded an element that could not be "
                "converted to the expected type. The expected type was %s, but the yielded "
                "element was %s." % (dt.name, v)) from None
        if leaf.shape.rank is not None and not leaf.shape.is_compatible_with(arr.shape):
            raise errors.InvalidArgumentError(
                None, None, "TypeError: `generator` yielded an element of shape %s where an "
                "element of shape %s was expected." % (TensorShape(arr.shape), leaf.shape))
        out.append(arr)
    return _nest.pack_sequence_as(spec, out)


class _Generator(_ds.Dataset):
    _tf_name = "_FlatMapDataset"  # TensorFlow's from_generator is a flat_map over ids

    def __init__(self, generator, spec, args):
        self._gen, self._spec, self._args = generator, spec, args

    def _elements(self):
        args = tuple(_ds._to_numpy(a) for a in self._args)
        for value in self._gen(*args):
            yield _convert(self._spec, value)

    def _cardinality(self):
        return None

    def _element_spec(self):
        return self._spec


def from_generator(generator, output_types=None, output_shapes=None, args=None,
                   output_signature=None, name=None):
    if not callable(generator):
        raise TypeError("`generator` must be a Python callable.")
    if output_signature is not None:
        if output_types is not None:
            raise TypeError("The `output_types` argument can not be used together with the "
                            "`output_signature` argument.")
        if output_shapes is not None:
            raise TypeError("The `output_shapes` argument can not be used together with the "
                            "`output_signature` argument.")
        from mixprec._function import TensorSpec
        for leaf in _nest.flatten(output_signature):
            if not isinstance(leaf, TensorSpec):
                raise TypeError("`output_signature` must contain objects that are subclass "
                                "of `tf.TypeSpec` but found %s which is not." % type(leaf))
        spec = output_signature
    else:
        if output_types is None:
            raise TypeError("To specify the output signature you need to provide either the "
                            "`output_signature` argument or the `output_types` argument.")
        from mixprec._dtypes import as_dtype
        _warn_output_types_once()
        types = _nest.map_structure(as_dtype, output_types)
        spec = _spec_from(types, output_shapes)
    arglist = tuple(args) if args is not None else ()
    return _Generator(generator, spec, arglist)


_WARNED = []


def _warn_output_types_once():
    """TensorFlow's deprecation line, once per process, naming the caller's file:line."""
    if _WARNED:
        return
    _WARNED.append(True)
    import sys
    from mixprec import _logging
    frame = sys._getframe(1)
    here = frame.f_code.co_filename
    while frame is not None and frame.f_code.co_filename.startswith(here.rsplit("/", 2)[0]):
        frame = frame.f_back
    where = "%s:%d" % (frame.f_code.co_filename, frame.f_lineno) if frame else "<unknown>"
    _logging.get_logger().warning(
        "From %s: calling DatasetV2.from_generator (from tensorflow.python.data.ops."
        "dataset_ops) with output_types is deprecated and will be removed in a future "
        "version.\nInstructions for updating:\nUse output_signature instead" % where)


def from_list(elements, name=None):
    """``tf.data.experimental.from_list``: one element per list entry (same structure)."""
    if not isinstance(elements, list):
        raise ValueError("`elements` must be a list of elements, got %s." % type(elements))
    if not elements:
        raise ValueError("`elements` must not be empty.")
    first = elements[0]
    flats = []
    for e in elements:
        try:
            flat = _nest.flatten(e)
            _nest.pack_sequence_as(first, flat)
        except ValueError:
            raise ValueError("All elements of `elements` must have the same structure") \
                from None
        flats.append([_ds._to_numpy(_ds._as_tensor(x)) for x in flat])
    cols = [np.stack(c) for c in zip(*flats)]
    data = _nest.pack_sequence_as(first if not isinstance(first, list) else tuple(first), cols)
    return _ds._Slices(data, len(elements))
