"""Merging layers (``tf.keras.layers.Add``, ``Subtract``, ``Multiply``, ``Average``,
``Maximum``, ``Minimum``, ``Concatenate`` and their functional forms ``add`` …): tf-keras
2.21's shape checks and messages, then one existing op per pair of inputs. The arithmetic
is the core's (add, multiply, maximum, concat …); this module must not loop over elements.
"""

from mixprec import _core
from mixprec.keras.engine.base_layer import Layer

__all__ = ["Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate",
           "add", "subtract", "multiply", "average", "maximum", "minimum", "concatenate"]


def _as_tuple(shape):
    if shape is None:
        return None
    as_list = getattr(shape, "as_list", None)
    return tuple(as_list()) if as_list is not None else tuple(shape)


def _shapes(input_shape):
    """A list of shape tuples, or None when ``input_shape`` is not a list of shapes."""
    if not isinstance(input_shape, (list, tuple)) or not input_shape:
        return None
    first = input_shape[0]
    if first is None or isinstance(first, int):
        return None
    return [_as_tuple(s) for s in input_shape]


class _Merge(Layer):
    """Element-wise merge of a list of inputs (tf-keras' broadcasting rule: inputs of lower
    rank get size-1 axes after the batch axis)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    @staticmethod
    def _elementwise_shape(shape1, shape2):
        if shape1 is None or shape2 is None:
            return None
        if len(shape1) < len(shape2):
            return _Merge._elementwise_shape(shape2, shape1)
        if not shape2:
            return shape1
        out = list(shape1[:-len(shape2)])
        for i, j in zip(shape1[-len(shape2):], shape2):
            if i is None or j is None:
                out.append(None)
            elif i == 1:
                out.append(j)
            elif j == 1 or i == j:
                out.append(i)
            else:
                raise ValueError("Inputs have incompatible shapes. Received shapes %s and %s"
                                 % (tuple(shape1), tuple(shape2)))
        return tuple(out)

    def _check(self, input_shape):
        shapes = _shapes(input_shape)
        if shapes is None:
            raise ValueError("A merge layer should be called on a list of inputs. Received: "
                             "input_shape=%s (not a list of shapes)" % (_as_tuple(input_shape),))
        batch = {s[0] for s in shapes if s} - {None}
        if len(batch) > 1:
            raise ValueError("Cannot merge tensors with different batch sizes. Got tensors "
                             "with shapes %s" % (shapes,))
        out = shapes[0][1:] if shapes[0] is not None else None
        for s in shapes[1:]:
            out = self._elementwise_shape(out, s[1:] if s is not None else None)
        return shapes, out

    def build(self, input_shape):
        # a list of one input arrives here as its single shape: nothing to check then
        if _shapes(input_shape) is not None:
            self._check(input_shape)
        self.built = True

    def compute_output_shape(self, input_shape):
        shapes, out = self._check(input_shape)
        if out is None:
            return None
        batch = {s[0] for s in shapes if s is not None} - {None}
        return (batch.pop() if len(batch) == 1 else None,) + tuple(out)

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)):
            raise ValueError("A merge layer should be called on a list of inputs. Received: "
                             "inputs=%s (not a list of tensors)" % (inputs,))
        inputs = [_core.convert_to_tensor(x) for x in inputs]
        rank = max(x.ndim for x in inputs)
        shaped = []
        for x in inputs:
            while x.ndim < rank:  # tf-keras: size-1 axes after the batch axis
                x = _core.reshape(x, list(x.shape[:1]) + [1] + list(x.shape[1:]))
            shaped.append(x)
        return self._merge(shaped)

    def compute_mask(self, inputs, mask=None):
        if mask is None:
            return None
        if not isinstance(mask, (list, tuple)):
            raise ValueError("`mask` should be a list. Received: mask=%s" % (mask,))
        if not isinstance(inputs, (list, tuple)):
            raise ValueError("`inputs` should be a list. Received: inputs=%s" % (inputs,))
        if len(mask) != len(inputs):
            raise ValueError("The lists `inputs` and `mask` should have the same length. "
                             "Received: inputs=%s of length %d, and mask=%s of length %d"
                             % (inputs, len(inputs), mask, len(mask)))
        masks = [m for m in mask if m is not None]
        if not masks:
            return None
        out = _core.cast(masks[0], "bool")
        for m in masks[1:]:
            out = _core.logical_and(out, _core.cast(m, "bool"))
        return out


def _fold(fn, inputs):
    out = inputs[0]
    for x in inputs[1:]:
        out = fn(out, x)
    return out


class Add(_Merge):
    """Sums a list of inputs of one shape: ``Add()([x1, x2])``."""

    def _merge(self, inputs):
        return _fold(_core.add, inputs)


class Subtract(_Merge):
    """``inputs[0] - inputs[1]``: exactly two inputs."""

    def build(self, input_shape):
        super().build(input_shape)
        if _shapes(input_shape) is not None and len(input_shape) != 2:
            raise ValueError("A `Subtract` layer should be called on exactly 2 inputs. "
                             "Received: input_shape=%s" % ([_as_tuple(s) for s in input_shape],))

    def _merge(self, inputs):
        if len(inputs) != 2:
            raise ValueError("A `Subtract` layer should be called on exactly 2 inputs. "
                             "Received: inputs=%s" % (inputs,))
        return _core.subtract(inputs[0], inputs[1])


class Multiply(_Merge):
    """Element-wise product of a list of inputs."""

    def _merge(self, inputs):
        return _fold(_core.multiply, inputs)


class Average(_Merge):
    """Element-wise mean of a list of inputs (their sum divided by their number)."""

    def _merge(self, inputs):
        return _fold(_core.add, inputs) / len(inputs)


class Maximum(_Merge):
    """Element-wise maximum of a list of inputs."""

    def _merge(self, inputs):
        return _fold(_core.maximum, inputs)


class Minimum(_Merge):
    """Element-wise minimum of a list of inputs."""

    def _merge(self, inputs):
        return _fold(_core.minimum, inputs)


class Concatenate(_Merge):
    """Concatenates a list of inputs along ``axis`` (default -1); the other axes must
    match."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def _check_concat(self, input_shape):
        shapes = _shapes(input_shape)
        if shapes is None or len(shapes) < 1:
            raise ValueError("A `Concatenate` layer should be called on a list of at least 1 "
                             "input. Received: input_shape=%s" % (_as_tuple(input_shape),))
        known = [s for s in shapes if s is not None]
        if not known:
            return shapes
        message = ("A `Concatenate` layer requires inputs with matching shapes except for "
                   "the concatenation axis. Received: input_shape=%s" % (shapes,))
        if len({len(s) for s in known}) != 1:
            raise ValueError(message)
        rank = len(known[0])
        axis = self.axis % rank if rank else 0
        for d in range(rank):
            if d == axis:
                continue
            dims = {s[d] for s in known} - {None}
            if len(dims) > 1:
                raise ValueError(message)
        return shapes

    def build(self, input_shape):
        if _shapes(input_shape) is not None:
            self._check_concat(input_shape)
        self.built = True

    def compute_output_shape(self, input_shape):
        shapes = self._check_concat(input_shape)
        if any(s is None for s in shapes):
            return None
        out = list(shapes[0])
        axis = self.axis % len(out)
        for s in shapes[1:]:
            if out[axis] is None or s[axis] is None:
                out[axis] = None
                break
            out[axis] += s[axis]
        for d in range(len(out)):  # a dimension known in any input is known
            if d != axis and out[d] is None:
                out[d] = next((s[d] for s in shapes if s[d] is not None), None)
        return tuple(out)

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)):
            raise ValueError("A merge layer should be called on a list of inputs. Received: "
                             "inputs=%s (not a list of tensors)" % (inputs,))
        return _core.concat([_core.convert_to_tensor(x) for x in inputs], axis=self.axis)

    def compute_mask(self, inputs, mask=None):
        if mask is None:
            return None
        if not isinstance(mask, (list, tuple)):
            raise ValueError("`mask` should be a list. Received mask=%s" % (mask,))
        if not isinstance(inputs, (list, tuple)):
            raise ValueError("`inputs` should be a list. Received: inputs=%s" % (inputs,))
        if len(mask) != len(inputs):
            raise ValueError("The lists `inputs` and `mask` should have the same length. "
                             "Received: inputs=%s of length %d, and mask=%s of length %d"
                             % (inputs, len(inputs), mask, len(mask)))
        if all(m is None for m in mask):
            return None
        # as tf-keras: a missing mask is all True over its input; a mask of lower rank gets
        # a last axis; the masks are concatenated and reduced over the last axis
        full = []
        for x, m in zip(inputs, mask):
            if m is None:
                m = _core.fill(list(x.shape), True, "bool")
            elif m.ndim < x.ndim:
                m = _core.reshape(m, list(m.shape) + [1])
            full.append(_core.cast(m, "bool"))
        return _core.reduce_all(_core.concat(full, axis=self.axis), axis=-1)

    def get_config(self):
        config = super().get_config()
        config["axis"] = self.axis
        return config


def add(inputs, **kwargs):
    """Functional form of ``Add``."""
    return Add(**kwargs)(inputs)


def subtract(inputs, **kwargs):
    """Functional form of ``Subtract``."""
    return Subtract(**kwargs)(inputs)


def multiply(inputs, **kwargs):
    """Functional form of ``Multiply``."""
    return Multiply(**kwargs)(inputs)


def average(inputs, **kwargs):
    """Functional form of ``Average``."""
    return Average(**kwargs)(inputs)


def maximum(inputs, **kwargs):
    """Functional form of ``Maximum``."""
    return Maximum(**kwargs)(inputs)


def minimum(inputs, **kwargs):
    """Functional form of ``Minimum``."""
    return Minimum(**kwargs)(inputs)


def concatenate(inputs, axis=-1, **kwargs):
    """Functional form of ``Concatenate``."""
    return Concatenate(axis=axis, **kwargs)(inputs)
