"""InputLayer and ``keras.Input``: the entry points of a functional model.

An Input's dtype defaults to floatx ('float32'), not to the global policy: under
mixed_float16 the data stays float32 and the first layer casts it.
"""

from mixprec.keras import backend
from mixprec.keras.engine.base_layer import Layer, Node
from mixprec.keras.engine.keras_tensor import KerasTensor

__all__ = ["InputLayer", "Input"]


class InputLayer(Layer):
    """The layer behind ``keras.Input``; it only forwards its input."""

    def __init__(self, input_shape=None, batch_size=None, dtype=None, input_tensor=None,
                 sparse=None, name=None, ragged=None, batch_input_shape=None, optional=False,
                 **kwargs):
        if optional:
            raise NotImplementedError("optional inputs (InputLayer(optional=True)) are not "
                                      "supported by mixprec")
        if sparse or ragged:
            raise NotImplementedError("sparse and ragged inputs are not supported by mixprec")
        if name is None:
            name = backend.unique_object_name("input", zero_based=False)
        if batch_input_shape is None:
            if input_shape is None:
                raise ValueError("Please provide to Input a `shape` or a `tensor` argument. Note "
                                 "that `shape` does not include the batch dimension.")
            if isinstance(input_shape, int):
                input_shape = (input_shape,)
            batch_input_shape = (batch_size,) + tuple(input_shape)
        dtype = dtype or backend.floatx()
        super().__init__(name=name, dtype=dtype, **kwargs)
        self._batch_input_shape = tuple(batch_input_shape)
        self.built = True
        kt = KerasTensor(self._batch_input_shape, self.compute_dtype or dtype, name=name)
        node = Node(self, [], {}, kt)
        self._inbound_nodes.append(node)
        kt._keras_history = (self, 0, 0)
        self._output_kt = kt

    @property
    def input_shape(self):
        """tf-keras 2.21: a list holding the batch input shape, e.g. [(None, 784)]."""
        return [self._batch_input_shape]

    @property
    def output_shape(self):
        return [self._batch_input_shape]

    def get_config(self):
        return {"batch_input_shape": self._batch_input_shape, "dtype": self.dtype,
                "sparse": False, "ragged": False, "name": self.name, "optional": False}


def Input(shape=None, batch_size=None, name=None, dtype=None, sparse=None, tensor=None,
          ragged=None, type_spec=None, **kwargs):
    """A symbolic input of ``shape`` (without the batch), e.g. ``keras.Input(shape=(784,))``."""
    if tensor is not None or type_spec is not None:
        raise NotImplementedError("Input(tensor=...) and Input(type_spec=...) are not supported")
    batch_shape = kwargs.pop("batch_shape", None) or kwargs.pop("batch_input_shape", None)
    if kwargs:
        raise ValueError("Unrecognized keyword arguments: %s" % sorted(kwargs))
    if shape is None and batch_shape is None:
        raise ValueError("Please provide to Input a `shape` or a `tensor` or a `type_spec` "
                         "argument. Note that `shape` does not include the batch dimension.")
    layer = InputLayer(input_shape=shape, batch_size=batch_size, dtype=dtype, name=name,
                       sparse=sparse, ragged=ragged, batch_input_shape=batch_shape)
    return layer._output_kt
