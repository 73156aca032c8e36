"""The Tensor type's Python-side methods: printing, ``ref()``, pickling.

``mixprec.Tensor`` is defined in C (csrc/python/tensor_type.c); being a heap type, it
accepts these methods here, where printing belongs. Importing this module also registers
the DType and TensorShape classes with the C core.
"""


from mixprec import _core, _dtypes, _shape

__all__ = ["Tensor"]

Tensor = _core.Tensor
_core._register(_dtypes._ALL, _shape.TensorShape, _dtypes.as_dtype)


def _numpy_text(t, is_repr):
    """TensorFlow's numpy_text: a scalar's repr is its Python value's (0.1 in float32 shows
    0.10000000149011612), its str NumPy's; an array's NumPy repr or str."""
    value = t.numpy()
    if is_repr and t.ndim == 0:
        item = value.item() if hasattr(value, "item") else value
        text = repr(float(item)) if t.dtype.name == "bfloat16" else repr(item)
    else:
        text = repr(value) if is_repr else str(value)
    if "\n" in text:  # as TensorFlow: a one-line NumPy repr stays on the header's line
        text = "\n" + text
    return text


def _symbolic(self, is_repr=False):
    # a value computed inside a tracing function prints as TensorFlow's graph tensors do
    # (reading it would break the graph); printing its shape bakes nothing in. A tensor
    # argument has its placeholder's name (x:0), others "traced:0".
    shape = _core.static_shape(self)  # (None where the graph stands for any size)
    from mixprec import _function
    names = getattr(_function._state, "input_names", None) or {}
    name, spec_shape = names.get(id(self), ("traced:0", None))
    if spec_shape is not None:
        shape = spec_shape
    if is_repr:
        return "<tf.Tensor '%s' shape=%s dtype=%s>" % (name, shape, self.dtype.name)
    return 'Tensor("%s", shape=%s, dtype=%s)' % (name, shape, self.dtype.name)


def _repr(self):
    if _core.graph_recording() is not None and _core.graph_is_traced(self):
        return _symbolic(self, True)
    return "<tf.Tensor: shape=%s, dtype=%s, numpy=%s>" % (
        self.shape, self.dtype.name, _numpy_text(self, True))


def _str(self):
    if _core.graph_recording() is not None and _core.graph_is_traced(self):
        return _symbolic(self)
    return "tf.Tensor(%s, shape=%s, dtype=%s)" % (
        _numpy_text(self, False), self.shape, self.dtype.name)


def _format(self, spec):
    if self.ndim == 0:
        return format(self.numpy(), spec)
    return format(str(self), spec)


class _TensorRef:
    """A hashable reference to a tensor (``Tensor.ref()``), compared by identity."""

    __slots__ = ("_t",)

    def __init__(self, t):
        self._t = t

    def deref(self):
        return self._t

    def __hash__(self):
        return id(self._t)

    def __eq__(self, other):
        return isinstance(other, _TensorRef) and other._t is self._t

    def __repr__(self):
        return "<Reference wrapping %r>" % (self._t,)


def _ref(self):
    return _TensorRef(self)


def _reduce(self):
    return (_core.constant, (self.numpy(), self.dtype.name))


def _set_shape(self, shape):
    # against the static shape (inside a traced function: None where relaxed), which the
    # supplied sizes then refine, as TensorFlow's
    static = _core.static_shape(self)
    given = _shape.TensorShape(shape)
    if not static.is_compatible_with(given):
        if _core.graph_recording() is not None and _core.graph_is_traced(self):
            # TensorFlow's graph tensors: shape inference's merge message
            if len(static) != len(given):
                raise ValueError("Shapes must be equal rank, but are %d and %d" % (
                    len(static), len(given)))
            d = next(i for i, (a, b) in enumerate(zip(static, given))
                     if a is not None and b is not None and a != b)

            def text(s):
                return "[%s]" % ",".join("?" if v is None else str(v) for v in s)
            raise ValueError("Dimension %d in both shapes must be equal, but are %d and %d. "
                             "Shapes are %s and %s." % (d, static[d], given[d], text(static),
                                                        text(given)))
        raise ValueError("Tensor's shape %s is not compatible with supplied shape %s." % (
            static, given))
    if None in static and _core.graph_recording() is not None:
        merged = [g if s is None else s for s, g in zip(static, given)]
        try:
            _core.graph_set_static(self, merged)
        except ValueError:
            pass  # (a size the traced value does not have: left unknown)


Tensor.__repr__ = _repr
Tensor.__str__ = _str
Tensor.__format__ = _format
Tensor.ref = _ref
Tensor.experimental_ref = _ref
Tensor.__reduce__ = _reduce
Tensor.set_shape = _set_shape
Tensor.__array_priority__ = 100
Tensor.__module__ = "mixprec"
