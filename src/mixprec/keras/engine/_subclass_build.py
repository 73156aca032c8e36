"""Model.build(input_shape) of a subclassed model, as tf-keras: call() once on placeholder
data (unknown dimensions as 1, floatx zeros) so every layer creates its weights, outside the
model's name scope ('dense/kernel:0', not 'model/dense/kernel:0'). Bookkeeping only; it must
not train (training=False) or keep the placeholder outputs."""

import inspect

from mixprec import _core
from mixprec.keras import backend


def _placeholder(shape):
    dims = [1 if d is None else int(d) for d in tuple(shape)]
    return _core.fill(dims, 0.0, backend.floatx())


def _is_shape(s):
    return isinstance(s, (tuple, list)) and all(d is None or isinstance(d, int) for d in s)


def build_subclassed(model, input_shape):
    if input_shape is None:
        raise ValueError("Input shape must be defined when calling `build()` on a `Model` "
                         "subclass.")
    if hasattr(input_shape, "as_list"):
        input_shape = tuple(input_shape.as_list())
    if not isinstance(input_shape, (tuple, list, dict)):
        raise ValueError("Specified input shape is not one of the valid types. Please specify "
                         "a batch input shape of type tuple or list of input shapes. User "
                         "provided input type: {}.".format(type(input_shape)))
    if _is_shape(input_shape):
        x = _placeholder(input_shape)
    elif isinstance(input_shape, dict):
        x = {k: _placeholder(s) for k, s in input_shape.items()}
    else:
        x = [_placeholder(s) for s in input_shape]
    kwargs = {}
    params = list(inspect.signature(model.call).parameters.values())
    required = [p for p in params[1:] if p.default is inspect.Parameter.empty and
                p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not params:
        raise ValueError("You can only call `build()` on a model if its `call()` method "
                         "accepts an `inputs` argument.")
    for p in required:
        if p.name != "training":
            raise ValueError(
                "Currently, you cannot build your model if it has positional or keyword "
                "arguments that are not inputs to the model, but are required for its "
                "`call()` method. Instead, in order to instantiate and build your model, "
                "`call()` your model on real tensor data with all expected call arguments. "
                "The argument for `call()` can be a single list/tuple that contains "
                "multiple inputs.")
        kwargs["training"] = False
    from mixprec import errors

    try:
        model.call(x, **kwargs)
    except (errors.InvalidArgumentError, TypeError) as e:
        raise ValueError("You cannot build your model by calling `build` if your layers do "
                         "not support float type inputs. Instead, in order to instantiate and "
                         "build your model, call your model on real tensor data (of the "
                         "correct dtype).\n\nThe actual error from `call` is: %s." % (e,))
    model.built = True
