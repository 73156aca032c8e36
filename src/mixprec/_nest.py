"""Minimal ``tf.nest``: flatten and pack nested lists, tuples, namedtuples and dicts.

Dict keys are visited in sorted order, as TensorFlow does; anything else is a leaf.
"""

__all__ = ["flatten", "pack_sequence_as", "map_structure", "is_nested"]


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
