"""``tf.einsum``: an equation reduced to the core's transpose, reshape, reduce_sum, multiply
and (batch) matmul, operand pair by operand pair, so the matmuls are MatMul/BatchMatMulV2
nodes the AMP lists colour (allow, as TensorFlow's Einsum). Parsing and shape bookkeeping
only; no element is touched here.
"""

import math

from mixprec import _core, _ops, _static

__all__ = ["einsum"]

_ELL = "..."


def _ell_label(k):
    """The label of the k-th ellipsis dimension counted from the right."""
    return chr(0x2460 + k)


def _parse(equation, n_inputs):
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, out = eq.split("->", 1)
        explicit = True
    else:
        lhs, out, explicit = eq, None, False
    subs = lhs.split(",")
    if len(subs) != n_inputs:
        raise ValueError('Got %d inputs for equation "%s", expecting %d'
                         % (n_inputs, equation, len(subs)))
    for s in subs + ([out] if explicit else []):
        rest = s.replace(_ELL, "")
        if not all(c.isalpha() for c in rest):
            raise ValueError("Invalid character in einsum equation %r" % equation)
    return subs, out, explicit


def _expand(sub, rank, i):
    """Labels of one operand, '...' replaced by one label per covered dimension."""
    if _ELL in sub:
        head, tail = sub.split(_ELL, 1)
        n_ell = rank - len(head) - len(tail)
        if n_ell < 0:
            raise _core.InvalidArgumentError(
                "Expected input %d to have rank at least %d but got: %d"
                % (i, len(head) + len(tail), rank))
        return list(head) + [_ell_label(k) for k in range(n_ell - 1, -1, -1)] + list(tail)
    if len(sub) != rank:
        raise _core.InvalidArgumentError(
            "Expected input %d to have rank %d but got: %d" % (i, len(sub), rank))
    return list(sub)


def _transpose(x, labels, order):
    perm = [labels.index(l) for l in order]
    return x if perm == list(range(len(perm))) else _ops.transpose(x, perm)


def _sum_out(x, labels, drop):
    axes = [k for k, l in enumerate(labels) if l in drop]
    if not axes:
        return x, labels
    return _ops.reduce_sum(x, axes), [l for l in labels if l not in drop]


def _take_diagonals(x, labels):
    """A label repeated inside one operand: keep its diagonal (multiply by an identity
    mask over the two axes, sum one of them)."""
    while True:
        dup = next((l for l in labels if labels.count(l) > 1), None)
        if dup is None:
            return x, labels
        p = labels.index(dup)
        q = labels.index(dup, p + 1)
        n = x.shape[p]
        eye = _ops.cast(_ops.equal(_ops.reshape(_ops.range(n), [n, 1]),
                                   _ops.reshape(_ops.range(n), [1, n])), x.dtype)
        shape = [1] * len(labels)
        shape[p] = shape[q] = n
        x = _ops.reduce_sum(x * _ops.reshape(eye, shape), [q])
        labels = labels[:q] + labels[q + 1:]


def _contract(a, la, b, lb, keep):
    """a (labels la) with b (labels lb); the result keeps the labels in `keep`."""
    a, la = _sum_out(a, la, {l for l in la if l not in lb and l not in keep})
    b, lb = _sum_out(b, lb, {l for l in lb if l not in la and l not in keep})
    batch = [l for l in la if l in lb and l in keep]
    contracted = [l for l in la if l in lb and l not in keep]
    a_free = [l for l in la if l not in lb]
    b_free = [l for l in lb if l not in la]
    sa = dict(zip(la, a.shape))
    sb = dict(zip(lb, b.shape))
    a = _transpose(a, la, batch + a_free + contracted)
    b = _transpose(b, lb, batch + contracted + b_free)
    m = math.prod(sa[l] for l in a_free)
    k = math.prod(sa[l] for l in contracted)
    n = math.prod(sb[l] for l in b_free)
    a = _ops.reshape(a, [sa[l] for l in batch] + [m, k])
    b = _ops.reshape(b, [sb[l] for l in batch] + [k, n])
    c = _ops.matmul(a, b)
    out_batch = list(c.shape[:len(batch)])
    c = _ops.reshape(c, out_batch + [sa[l] for l in a_free] + [sb[l] for l in b_free])
    return c, batch + a_free + b_free


def einsum(equation, *inputs, **kwargs):
    """Einstein summation (``tf.einsum``): transposes, outer products, (batch) matrix
    products, contractions, sums, traces and diagonals, with ``...`` broadcasting."""
    kwargs.pop("name", None)
    kwargs.pop("optimize", None)
    if kwargs:
        raise TypeError("Invalid keyword arguments for this function: %s"
                        % ", ".join(sorted(kwargs)))
    state = _static.sizes_read()
    try:
        return _einsum(equation, inputs)
    finally:
        _static.forget_sizes_read(state)   # (its sizes stay inside: the result is declared)


def _einsum(equation, inputs):
    subs, out, explicit = _parse(equation, len(inputs))
    xs = [v.value() if isinstance(v, _core.Variable) else _core.convert_to_tensor(v)
          for v in inputs]
    for i, x in enumerate(xs[1:], 1):
        if x.dtype != xs[0].dtype:
            raise _core.InvalidArgumentError(
                "cannot compute Einsum as input #%d(zero-based) was expected to be a %s tensor "
                "but is a %s tensor [Op:Einsum]" % (i, _dt(xs[0].dtype), _dt(x.dtype)))
    labels = [_expand(s, len(x.shape), i) for i, (s, x) in enumerate(zip(subs, xs))]
    n_ell = max((sum(1 for l in ls if l >= _ell_label(0)) for ls in labels), default=0)
    ell = [_ell_label(k) for k in range(n_ell - 1, -1, -1)]
    if explicit:
        if out.count(_ELL) > 1:
            raise ValueError("Output subscripts contain more than one ellipsis: %s" % equation)
        out_labels = (list(out.split(_ELL)[0]) + ell + list(out.split(_ELL)[1])
                      if _ELL in out else list(out))
        plain = [l for l in out_labels if l not in ell]
        for l in plain:
            if plain.count(l) > 1:
                raise ValueError("Output subscripts contain a label appearing more than once: %s"
                                 % equation)
            if not any(l in ls for ls in labels):
                raise ValueError("Output subscripts contain the label %s not present in the "
                                 "input subscripts." % l)
    else:
        flat = [l for ls in labels for l in ls if l not in ell]
        out_labels = ell + sorted(l for l in set(flat) if flat.count(l) == 1)
    # every occurrence of a label has one size (ellipsis dimensions broadcast)
    size = {}
    for i, (ls, x) in enumerate(zip(labels, xs)):
        for axis, (l, d) in enumerate(zip(ls, x.shape)):
            if l in ell:
                continue
            if l in size and size[l][0] != d:
                raise _core.InvalidArgumentError(
                    "Expected dimension %d at axis %d of the input shaped %s but got dimension %d"
                    " [Op:Einsum]" % (size[l][0], axis, "[" + ",".join(str(v) for v in x.shape) + "]",
                                      d))
            size.setdefault(l, (d, i))
    cur, lc = _take_diagonals(xs[0], labels[0])
    for i in range(1, len(xs)):
        nxt, ln = _take_diagonals(xs[i], labels[i])
        later = {l for ls in labels[i + 1:] for l in ls}
        cur, lc = _contract(cur, lc, nxt, ln, set(out_labels) | later)
    cur, lc = _sum_out(cur, lc, {l for l in lc if l not in out_labels})
    return _static_like_labels(_transpose(cur, lc, out_labels), out_labels, labels, xs)


def _static_like_labels(out, out_labels, labels, xs):
    """Inside a traced function: the result's static shape from the inputs' (a label's
    size is known when an input has it known; broadcast ellipsis dimensions as NumPy)."""
    if _core.graph_recording() is None:
        return out
    statics = [_static.shape(x) for x in xs]
    dims = []
    for l in out_labels:
        seen = [st[a] for ls, st in zip(labels, statics) for a, m in enumerate(ls) if m == l]
        big = [d for d in seen if d is not None and d != 1]
        dims.append(big[0] if big else None if None in seen or not seen else 1)
    return _static.declare(out, dims)


def _dt(dtype):
    return {"float16": "half", "float32": "float", "float64": "double"}.get(dtype.name,
                                                                          dtype.name)
