"""Op layers: an operator applied to KerasTensors in a functional model (``x + 1``,
``2.0 - x``, ``x @ w``, ``x[:, 0]``) becomes a layer named and configured as tf-keras 2.21
names them (``TFOpLambda`` with ``'function': '__operators__.add'``, ``SlicingOpLambda``), so
such models serialize, reload and move to tf-keras. Only the operators KerasTensor
implements; the arithmetic is the tensors' own. No casting (op layers do not autocast)."""

import operator

import numpy as np

from mixprec import _core, _nest
from mixprec.keras import backend
from mixprec.keras.engine.base_layer import Layer

__all__ = ["TFOpLambda", "SlicingOpLambda"]

# tf-keras' function name -> (the operation, the keyword of its second operand)
_OPS = {
    "__operators__.add": (operator.add, "y"),
    "math.add": (operator.add, "y"),
    "math.subtract": (operator.sub, "y"),
    "math.multiply": (operator.mul, "y"),
    "math.truediv": (operator.truediv, "y"),
    "math.divide": (operator.truediv, "y"),
    "math.pow": (operator.pow, "y"),
    "linalg.matmul": (operator.matmul, "b"),
    "math.negative": (operator.neg, None),
    "math.abs": (abs, None),
}


def _is_kt(x):
    from mixprec.keras.engine.keras_tensor import KerasTensor

    return isinstance(x, KerasTensor)


def _value(x):
    return _core.convert_to_tensor(x) if isinstance(x, np.ndarray) else x


def _tf_function(function):
    """``tf.<function>`` in mixprec ('nn.relu', 'math.reduce_mean', 'concat'): the calls
    tf-keras records when a TensorFlow function is applied to Keras tensors."""
    import inspect

    import mixprec

    obj = mixprec
    try:
        for part in function.split("."):
            obj = getattr(obj, part)
    except AttributeError:
        obj = None
    if not callable(obj):
        raise ValueError("The model calls tf.%s on Keras tensors, which mixprec does not "
                         "implement (docs/porting.md lists what it has)" % function)
    try:
        takes_name = "name" in inspect.signature(obj).parameters
    except (TypeError, ValueError):
        takes_name = True
    return obj, takes_name


class TFOpLambda(Layer):
    """``function`` is tf-keras' name of the op: an operator of the table above, or a
    TensorFlow function mixprec has (``nn.relu``, ``math.reduce_mean``, ``concat``...)."""

    def __init__(self, function, name=None, **kwargs):
        if function not in _OPS and function != "__operators__.getitem":
            self._fn = _tf_function(function)
        kwargs.pop("autocast", None)
        super().__init__(name=name or backend.unique_object_name("tf." + function),
                         autocast=False, **kwargs)
        self.function = function

    def call(self, *args, **kwargs):
        if self.function not in _OPS:
            fn, takes_name = self.__dict__["_fn"]
            if not takes_name:
                kwargs.pop("name", None)
            return fn(*[_value(a) for a in args], **kwargs)
        fn, second = _OPS[self.function]
        x = args[0] if args else kwargs.pop("x")
        if second is None:
            return fn(_value(x))
        other = args[1] if len(args) > 1 else kwargs.get(second)
        return fn(_value(x), _value(other))

    def __call__(self, *args, **kwargs):
        kwargs.pop("training", None)
        kwargs.pop("mask", None)
        if not any(_is_kt(a) for a in _nest.flatten((list(args), kwargs))):
            return self.call(*args, **kwargs)  # values: the op itself
        if "_build_input_shape" not in self.__dict__ and args:
            # its build config, as tf-keras records it: the first argument's shape
            first = args[0]
            self._build_input_shape = first.shape if _is_kt(first) else np.shape(first)
            self.built = True
        return super().__call__(*args, **kwargs)

    def get_config(self):
        config = super().get_config()
        config["function"] = self.function
        return config


class SlicingOpLambda(TFOpLambda):
    """``x[key]``; the key is tf-keras' ``slice_spec`` (slices as start/stop/step dicts)."""

    def call(self, x, slice_spec=None, **kwargs):
        return _value(x)[decode_slice(slice_spec)]


def encode_slice(key):
    if isinstance(key, tuple):
        return [encode_slice(k) for k in key]
    if isinstance(key, slice):
        return {"start": key.start, "stop": key.stop, "step": key.step}
    if key is Ellipsis:
        raise ValueError("An Ellipsis (...) in a slice of a KerasTensor cannot be stored in a "
                         "model config (tf-keras cannot either); spell the axes out")
    if isinstance(key, (np.integer,)):
        return int(key)
    return key


def decode_slice(spec):
    if isinstance(spec, list):
        return tuple(decode_slice(s) for s in spec)
    if isinstance(spec, dict) and set(spec) <= {"start", "stop", "step"}:
        return slice(spec.get("start"), spec.get("stop"), spec.get("step"))
    return spec
