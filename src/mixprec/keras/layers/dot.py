"""``keras.layers.Dot`` and ``dot``: the per-sample dot product of two tensors along
``axes`` (tf-keras' batch_dot, optionally of L2-normalized inputs: cosine proximity), with
tf-keras 2.21's checks, configs and shapes. The contraction is the core's batched matmul
after a transpose and reshape; nothing is summed in Python."""

from mixprec import _core
from mixprec.keras.engine.base_layer import Layer
from mixprec._nn_more import l2_normalize

__all__ = ["Dot", "dot", "batch_dot"]


def batch_dot(x, y, axes):
    """Sums x * y over axes[0] of x and axes[1] of y per sample: the result has x's other
    axes then y's (a rank-1 result gets a trailing axis of 1)."""
    ax, ay = axes
    xs, ys = list(x.shape), list(y.shape)
    x_rest = [a for a in range(1, len(xs)) if a != ax]
    y_rest = [a for a in range(1, len(ys)) if a != ay]
    xt = _core.transpose(x, [0] + x_rest + [ax])
    yt = _core.transpose(y, [0, ay] + y_rest)
    m = 1
    for a in x_rest:
        m *= xs[a]
    n = 1
    for a in y_rest:
        n *= ys[a]
    out = _core.matmul(_core.reshape(xt, [xs[0], m, xs[ax]]),
                       _core.reshape(yt, [ys[0], ys[ay], n]))
    shape = [xs[0]] + [xs[a] for a in x_rest] + [ys[a] for a in y_rest]
    if len(shape) == 1:
        shape.append(1)
    return _core.reshape(out, shape)


class Dot(Layer):
    """The dot product of two samples along ``axes`` (an int or a pair of ints, counted
    with the batch axis; negative counts from the end)."""

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(axes, int):
            if not isinstance(axes, (list, tuple)):
                raise TypeError("Invalid type for argument `axes`: it should be a list or an "
                                "int. Received: axes=%s" % (axes,))
            if len(axes) != 2:
                raise ValueError("Invalid format for argument `axes`: it should contain two "
                                 "elements. Received: axes=%s" % (axes,))
            if not isinstance(axes[0], int) or not isinstance(axes[1], int):
                raise ValueError("Invalid format for argument `axes`: list elements should be "
                                 "integers. Received: axes=%s" % (axes,))
        self.axes = axes
        self.normalize = normalize
        self.supports_masking = True
        self._reshape_required = False

    def _shapes(self, input_shape):
        if (not isinstance(input_shape, (list, tuple)) or len(input_shape) != 2
                or not isinstance(input_shape[0], (list, tuple)) and
                not hasattr(input_shape[0], "as_list")):
            raise ValueError("A `Dot` layer should be called on a list of 2 inputs. Received: "
                             "input_shape=%s" % (_fmt(input_shape),))
        s1, s2 = (tuple(_fmt(s)) for s in input_shape)
        if s1 is None or s2 is None:
            return None
        return s1, s2

    def _axes(self, s1, s2):
        if isinstance(self.axes, int):
            if self.axes < 0:
                return [self.axes % len(s1), self.axes % len(s2)]
            return [self.axes] * 2
        return [a % len(s) for a, s in zip(self.axes, (s1, s2))]

    def build(self, input_shape):
        shapes = self._shapes(input_shape)
        if shapes is None:
            return
        s1, s2 = shapes
        a1, a2 = self._axes(s1, s2)
        if s1[a1] != s2[a2] and s1[a1] is not None and s2[a2] is not None:
            raise ValueError("Incompatible input shapes: axis values %s (at axis %d) != %s (at "
                             "axis %d). Full input shapes: %s, %s"
                             % (s1[a1], a1, s2[a2], a2, s1, s2))
        self.built = True

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError("A `Dot` layer should be called on exactly 2 inputs. Received: "
                             "inputs=%s" % (inputs,))
        x1, x2 = inputs
        a1, a2 = self._axes(tuple(x1.shape), tuple(x2.shape))
        if self.normalize:
            x1 = l2_normalize(x1, [a1])
            x2 = l2_normalize(x2, [a2])
        return batch_dot(x1, x2, (a1, a2))

    def compute_output_shape(self, input_shape):
        s1, s2 = self._shapes(input_shape)
        a1, a2 = self._axes(s1, s2)
        out = list(s1[:a1]) + list(s1[a1 + 1:]) + list(s2[1:a2]) + list(s2[a2 + 1:])
        if len(out) == 1:
            out.append(1)
        return tuple(out)

    def compute_mask(self, inputs, mask=None):
        return None

    def get_config(self):
        config = super().get_config()
        config.update(axes=self.axes, normalize=self.normalize)
        return config


def _fmt(shape):
    if shape is None:
        return None
    as_list = getattr(shape, "as_list", None)
    if as_list is not None:
        return tuple(as_list())
    if isinstance(shape, (list, tuple)) and all(d is None or isinstance(d, int) for d in shape):
        return tuple(shape)
    return shape


def dot(inputs, axes, normalize=False, **kwargs):
    """The functional form of ``Dot``."""
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)
