"""InputSpec: the rank and fixed axes a layer accepts, checked before each call with
tf-keras' messages ('expected min_ndim=4, found ndim=3'). Shapes only; no tensor math."""

__all__ = ["InputSpec", "assert_input_compatibility"]


class InputSpec:
    """``tf.keras.layers.InputSpec``: ndim, max_ndim, min_ndim and ``axes`` {axis: size}."""

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None,
                 axes=None, allow_last_axis_squeeze=False, name=None):
        self.dtype = dtype
        self.shape = tuple(shape) if shape is not None else None
        self.ndim = len(shape) if shape is not None else ndim
        self.max_ndim = max_ndim
        self.min_ndim = min_ndim
        self.name = name
        self.allow_last_axis_squeeze = allow_last_axis_squeeze
        self.axes = {int(k): v for k, v in (axes or {}).items()}
        if self.axes and (self.ndim is not None or self.max_ndim is not None):
            max_dim = (self.ndim if self.ndim is not None else self.max_ndim) - 1
            if max(self.axes) > max_dim:
                raise ValueError("Axis {} is greater than the maximum allowed value: {}"
                                 .format(max(self.axes), max_dim))

    def __repr__(self):
        spec = [("dtype=" + str(self.dtype)) if self.dtype else "",
                ("shape=" + str(self.shape)) if self.shape else "",
                ("ndim=" + str(self.ndim)) if self.ndim else "",
                ("max_ndim=" + str(self.max_ndim)) if self.max_ndim else "",
                ("min_ndim=" + str(self.min_ndim)) if self.min_ndim else "",
                ("axes=" + str(self.axes)) if self.axes else ""]
        return "InputSpec(%s)" % ", ".join(x for x in spec if x)

    def get_config(self):
        return {"dtype": self.dtype, "shape": self.shape, "ndim": self.ndim,
                "max_ndim": self.max_ndim, "min_ndim": self.min_ndim, "axes": self.axes}


def _shape_str(shape):
    return str(tuple(shape))


def assert_input_compatibility(spec, shapes, layer_name):
    """Raises tf-keras' ValueError when an input's shape does not fit ``spec``."""
    if spec is None:
        return
    specs = spec if isinstance(spec, (list, tuple)) else [spec]
    for i, (s, shape) in enumerate(zip(specs, shapes)):
        if s is None or shape is None:
            continue
        shape = tuple(shape)
        ndim = len(shape)
        head = 'Input %d of layer "%s" is incompatible with the layer: ' % (i, layer_name)
        if s.ndim is not None and ndim != s.ndim:
            raise ValueError(head + "expected ndim=%d, found ndim=%d. Full shape received: %s"
                             % (s.ndim, ndim, _shape_str(shape)))
        if s.max_ndim is not None and ndim > s.max_ndim:
            raise ValueError(head + "expected max_ndim=%d, found ndim=%d"
                             % (s.max_ndim, ndim))
        if s.min_ndim is not None and ndim < s.min_ndim:
            raise ValueError(head + "expected min_ndim=%d, found ndim=%d. Full shape "
                             "received: %s" % (s.min_ndim, ndim, _shape_str(shape)))
        for axis, value in s.axes.items():
            if value is None:
                continue
            if not -ndim <= axis < ndim:
                continue
            if shape[axis] not in (value, None):
                raise ValueError(head + "expected axis %d of input shape to have value %d, "
                                 "but received input with shape %s"
                                 % (axis, value, _shape_str(shape)))
        if s.shape is not None:
            for a, b in zip(s.shape, shape):
                if a is not None and b is not None and a != b:
                    raise ValueError(head + "expected shape=%s, found shape=%s"
                                     % (s.shape, _shape_str(shape)))
