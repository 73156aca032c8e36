"""Minimal ``tf.nest``: flatten and pack nested lists, tuples, namedtuples and dicts.

Dict keys are visited in sorted order, as TensorFlow does; anything else is a leaf.
"""

__all__ = ["flatten", "pack_sequence_as", "map_structure", "is_nested", "assert_same_structure"]


def is_nested(x):
    return isinstance(x, (list, tuple, dict))


def _items(x):
    if isinstance(x, dict):
        return [x[k] for k in sorted(x, key=_sort_key)]
    return list(x)


def _sort_key(k):
    return (str(type(k)), k) if not isinstance(k, str) else ("", k)


_NESTED = (list, tuple, dict)


def _flatten_into(structure, out):
    items = (structure[k] for k in sorted(structure, key=_sort_key)) if isinstance(
        structure, dict) else structure
    for item in items:
        if isinstance(item, _NESTED):
            _flatten_into(item, out)
        else:
            out.append(item)


def flatten(structure):
    """The leaves of ``structure`` in order (a leaf itself gives ``[leaf]``)."""
    if not isinstance(structure, _NESTED):
        return [structure]
    out = []
    _flatten_into(structure, out)
    return out


def _rebuild(template, it):
    if not is_nested(template):
        return next(it)
    if isinstance(template, dict):
        keys = sorted(template, key=_sort_key)
        vals = {k: _rebuild(template[k], it) for k in keys}
        return type(template)((k, vals[k]) for k in template) if type(template) is not dict \
            else {k: vals[k] for k in template}
    children = [_rebuild(t, it) for t in template]
    if isinstance(template, tuple) and hasattr(template, "_fields"):
        return type(template)(*children)
    return type(template)(children)


def pack_sequence_as(structure, flat_sequence):
    """``flat_sequence`` rearranged into the shape of ``structure``."""
    flat = flat_sequence if isinstance(flat_sequence, list) else list(flat_sequence)
    if not isinstance(structure, _NESTED):
        if len(flat) != 1:
            raise ValueError("Structure had 1 elements, but flat_sequence had %d" % len(flat))
        return flat[0]
    it = iter(flat)
    try:
        out = _rebuild(structure, it)
        extra = next(it, it) is not it
    except StopIteration:
        extra = True
    if extra:
        raise ValueError("Structure had %d elements, but flat_sequence had %d"
                         % (len(flatten(structure)), len(flat)))
    return out


def map_structure(func, *structures):
    """Applies ``func`` leaf-wise to structures of the same shape."""
    if not structures:
        raise ValueError("map_structure needs at least one structure")
    if len(structures) == 1 and not isinstance(structures[0], _NESTED):
        return func(structures[0])
    flats = [flatten(s) for s in structures]
    n = len(flats[0])
    if any(len(f) != n for f in flats):
        raise ValueError("The structures do not have the same number of elements")
    return pack_sequence_as(structures[0], [func(*xs) for xs in zip(*flats)])


def _desc(x):
    return "type=%s str=%s" % (type(x).__name__, x)


def _skeleton(x):
    """``x`` printed with every leaf as ``.`` (TensorFlow's "Entire structure" lines)."""
    if isinstance(x, dict):
        return "{" + ", ".join("%r: %s" % (k, _skeleton(x[k])) for k in x) + "}"
    if isinstance(x, list):
        return "[" + ", ".join(_skeleton(v) for v in x) + "]"
    if isinstance(x, tuple):
        inner = ", ".join(_skeleton(v) for v in x)
        if hasattr(x, "_fields"):
            return "%s(%s)" % (type(x).__name__, inner)
        return "(" + inner + ("," if len(x) == 1 else "") + ")"
    return "."


def _difference(a, b, check_types):
    """(exception class, detail) of the first difference between two structures, or
    None when they match."""
    na, nb = isinstance(a, _NESTED), isinstance(b, _NESTED)
    if na != nb:
        seq, other = (a, b) if na else (b, a)
        return ValueError, 'Substructure "%s" is a sequence, while substructure "%s" is not' % (
            _desc(seq), _desc(other))
    if not na:
        return None
    if check_types and type(a) is not type(b):
        return TypeError, ("The two namedtuples don't have the same sequence type. First "
                           "structure %s has type %s, while second structure %s has type %s"
                           % (_desc(a), type(a).__name__, _desc(b), type(b).__name__))
    if isinstance(a, dict) or isinstance(b, dict):
        if not (isinstance(a, dict) and isinstance(b, dict)):
            return TypeError, ("The two structures don't have the same sequence type. First "
                               "structure %s, second structure %s" % (_desc(a), _desc(b)))
        if set(a) != set(b):
            ka, kb = sorted(a, key=_sort_key), sorted(b, key=_sort_key)
            return ValueError, ("The two dictionaries don't have the same set of keys. First "
                                "structure has keys %s, while second structure has keys %s"
                                % (_desc(ka), _desc(kb)))
        pairs = [(a[k], b[k]) for k in sorted(a, key=_sort_key)]
    else:
        if len(a) != len(b):
            return ValueError, ("The two structures don't have the same number of elements. "
                                "First structure: %s. Second structure: %s"
                                % (_desc(a), _desc(b)))
        pairs = list(zip(a, b))
    for x, y in pairs:
        d = _difference(x, y, check_types)
        if d is not None:
            return d
    return None


def assert_same_structure(nest1, nest2, check_types=True, expand_composites=False):
    """Raises ValueError (TypeError for differing sequence types) unless the two
    structures nest the same way; TensorFlow's message."""
    d = _difference(nest1, nest2, check_types)
    if d is None:
        return
    cls, detail = d
    raise cls("The two structures don't have the same nested structure.\n\nFirst structure: "
              "%s\n\nSecond structure: %s\n\nMore specifically: %s\nEntire first structure:\n"
              "%s\nEntire second structure:\n%s" % (_desc(nest1), _desc(nest2), detail,
                                                     _skeleton(nest1), _skeleton(nest2)))
