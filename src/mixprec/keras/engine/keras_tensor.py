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

    def _from_input_layer(self):
        from mixprec.keras.engine.input_layer import InputLayer

        return self._keras_history is not None and isinstance(self._keras_history[0], InputLayer)

    @property
    def type_spec(self):
        """tf-keras: a TensorSpec of the shape and dtype, named for an Input's tensor."""
        from mixprec._function import TensorSpec

        return TensorSpec(self._shape, self._dtype,
                          name=self._name if self._from_input_layer() else None)

    def __str__(self):
        # tf-keras 2.21's str(); its layer outputs are named after graph ops ('dense/Relu:0'),
        # which mixprec does not have: they show the layer's name
        desc = ""
        if self._keras_history is not None:
            desc = ", description=\"created by layer '%s'\"" % self._keras_history[0].name
        return "KerasTensor(type_spec=%r, name=%r%s)" % (self.type_spec, self._name, desc)

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

    def _op(self, function, *args, **kwargs):
        """An op layer named as tf-keras names it (keras/layers/tf_op_layer.py): x is the
        first argument, the other operand ``y`` (``b`` for matmul), so ``2.0 - x`` is
        subtract(2.0, y=x), as tf-keras records it."""
        from mixprec.keras.layers.tf_op_layer import TFOpLambda

        return TFOpLambda(function)(*args, **kwargs)

    def __add__(self, o):
        return self._op("__operators__.add", self, y=o)

    def __radd__(self, o):
        return self._op("__operators__.add", o, y=self)

    def __sub__(self, o):
        return self._op("math.subtract", self, y=o)

    def __rsub__(self, o):
        return self._op("math.subtract", o, y=self)

    def __mul__(self, o):
        return self._op("math.multiply", self, y=o)

    def __rmul__(self, o):
        return self._op("math.multiply", o, y=self)

    def __truediv__(self, o):
        return self._op("math.truediv", self, y=o)

    def __rtruediv__(self, o):
        return self._op("math.truediv", o, y=self)

    def __matmul__(self, o):
        return self._op("linalg.matmul", self, b=o)

    def __pow__(self, o):
        return self._op("math.pow", self, y=o)

    def __neg__(self):
        return self._op("math.negative", self)

    def __abs__(self):
        return self._op("math.abs", self)

    def __getitem__(self, key):
        from mixprec.keras.layers.tf_op_layer import SlicingOpLambda, encode_slice

        return SlicingOpLambda("__operators__.getitem")(self, slice_spec=encode_slice(key))
