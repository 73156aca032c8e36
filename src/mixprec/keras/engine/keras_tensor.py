"""KerasTensor: a symbolic tensor of the functional API (``keras.Input`` and what layers
return when called on one). It knows its shape (the batch usually ``None``) and dtype
before any data flows, and where it came from (``_keras_history``).

Arithmetic and indexing on KerasTensors build small op layers, so ``x + 1`` or ``x[:, 0]``
can appear inside a functional model as in tf-keras.
"""

from mixprec._dtypes import as_dtype
from mixprec._shape import TensorShape

__all__ = ["KerasTensor"]


class KerasTensor:
    """Shape, dtype and producer of a symbolic tensor."""

    def __init__(self, shape, dtype, name=None):
        self._shape = TensorShape(shape)
        self._dtype = as_dtype(dtype)
        self._name = name
        self._keras_history = None  # (layer, node_index, tensor_index)

    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def ndim(self):
        return len(self._shape)

    @property
    def name(self):
        return self._name

    @property
    def node(self):
        layer, node_index, _ = self._keras_history
        return layer._inbound_nodes[node_index]

    def get_shape(self):
        return self._shape

    def __repr__(self):
        origin = ""
        if self._keras_history is not None:
            origin = " (created by layer '%s')" % self._keras_history[0].name
        return "<KerasTensor: shape=%s dtype=%s%s>" % (self._shape, self._dtype.name, origin)

    __str__ = __repr__

    def __hash__(self):
        return id(self)

    def __bool__(self):
        raise TypeError("A KerasTensor is symbolic: it has no truth value. Use it as the input "
                        "of layers or of a keras.Model.")

    def __iter__(self):
        raise TypeError("Cannot iterate over a KerasTensor (it is symbolic).")

    def __len__(self):
        raise TypeError("A KerasTensor has no len(); use .shape.")

    def numpy(self):
        raise TypeError("A KerasTensor has no value: it describes the input of a model. Call "
                        "the model on data to get values.")

    # ---------------------------------------------------------------- op layers

    def _op(self, name, fn, *others):
        from mixprec.keras.layers.core import OpLambda

        return OpLambda(fn, name=name)(self, *others)

    def __add__(self, o):
        return self._op("add", lambda a, b: a + b, o)

    def __radd__(self, o):
        return self._op("add", lambda a, b: b + a, o)

    def __sub__(self, o):
        return self._op("subtract", lambda a, b: a - b, o)

    def __rsub__(self, o):
        return self._op("subtract", lambda a, b: b - a, o)

    def __mul__(self, o):
        return self._op("multiply", lambda a, b: a * b, o)

    def __rmul__(self, o):
        return self._op("multiply", lambda a, b: b * a, o)

    def __truediv__(self, o):
        return self._op("truediv", lambda a, b: a / b, o)

    def __rtruediv__(self, o):
        return self._op("truediv", lambda a, b: b / a, o)

    def __matmul__(self, o):
        return self._op("matmul", lambda a, b: a @ b, o)

    def __pow__(self, o):
        return self._op("pow", lambda a, b: a ** b, o)

    def __neg__(self):
        return self._op("negative", lambda a: -a)

    def __abs__(self):
        return self._op("abs", lambda a: abs(a))

    def __getitem__(self, key):
        return self._op("getitem", lambda a: a[key])
