"""Sequential: a linear stack of layers. It becomes a functional graph as soon as its
input shape is known (an Input/InputLayer first, ``input_shape=`` on the first layer, or
the first batch of data it is called on)."""

from mixprec import _core
from mixprec.keras import backend
from mixprec.keras.engine.base_layer import Layer
from mixprec.keras.engine.input_layer import Input, InputLayer
from mixprec.keras.engine.keras_tensor import KerasTensor
from mixprec.keras.engine.training import Model

__all__ = ["Sequential"]



def _batch_input_shape(layer):
    """The input shape a first layer declares; a model with one known input (a nested
    Sequential or functional model) declares its input's shape, as in tf-keras."""
    shape = getattr(layer, "_batch_input_shape", None)
    if shape:
        return tuple(shape)
    if getattr(layer, "_is_graph_network", False) and len(layer.inputs) == 1:
        return tuple(layer.inputs[0].shape.as_list())
    return None

class Sequential(Model):
    def __init__(self, layers=None, name=None):
        super().__init__(name=name or backend.unique_object_name("sequential"))
        self._stack = []
        self._input_kt = None
        self.supports_masking = True
        for layer in layers or []:
            self.add(layer)

    @property
    def layers(self):
        return [la for la in self._stack if not isinstance(la, InputLayer)]

    def add(self, layer):
        if isinstance(layer, KerasTensor):  # keras.Input(...) passed directly
            layer = layer._keras_history[0]
        if not isinstance(layer, Layer):
            raise TypeError("The added layer must be an instance of class Layer. Received: "
                            "layer=%r of type %s." % (layer, type(layer)))
        if isinstance(layer, InputLayer):
            if self._stack:
                raise ValueError("An InputLayer must be the first layer of a Sequential model")
            self._input_kt = layer._output_kt
        elif not self._stack and self._input_kt is None and _batch_input_shape(layer):
            shape = _batch_input_shape(layer)
            self._input_kt = Input(batch_shape=shape, name=layer.name + "_input")
        self._stack.append(layer)
        if layer not in self._layers:
            self._layers.append(layer)
        self._rebuild()

    def _input_name(self):
        """tf-keras names a Sequential's implicit input after its first layer."""
        layers = self.layers
        return layers[0].name + "_input" if layers else None

    def pop(self):
        if not self.layers:
            raise TypeError("There are no layers in the model.")
        self._stack.pop()
        self._rebuild()

    def _rebuild(self):
        if self._input_kt is None:
            self._is_graph_network = False
            self.built = False
            return
        x = self._input_kt
        for layer in self.layers:
            x = layer(x)
        self._init_graph(self._input_kt, x)
        self._graph_layers = self.layers

    def build(self, input_shape=None):
        if self._is_graph_network:
            return
        if input_shape is None:
            raise ValueError("You must provide an `input_shape` argument.")
        self._input_kt = Input(batch_shape=tuple(input_shape), name=self._input_name())
        self._rebuild()

    def __call__(self, *args, **kwargs):
        if not self._is_graph_network and args and not isinstance(args[0], KerasTensor):
            from mixprec.keras.engine.base_layer import _BUILD_LOCK

            with _BUILD_LOCK:  # replica threads (tf.distribute): one builds, the others wait
                if not self._is_graph_network:
                    x = args[0]
                    x = x if isinstance(x, _core.Tensor) else _core.convert_to_tensor(x)
                    dtype = x.dtype.name if x.dtype.is_floating or x.dtype.name == "string" \
                        else None
                    self._input_kt = Input(batch_shape=(None,) + tuple(x.shape[1:]), dtype=dtype,
                                           name=self._input_name())
                    self._rebuild()
        return super().__call__(*args, **kwargs)
