"""``keras.models.clone_model``: the same architecture with fresh weights, as tf-keras:
every layer re-created by ``clone_function`` (default: ``from_config(get_config())``),
Sequential and functional models rewired, a subclassed model rebuilt from its config.
Owns cloning only; configs are model_config.py's."""

from mixprec import _nest

__all__ = ["clone_model"]


def _clone_layer(layer):
    return layer.__class__.from_config(layer.get_config())


def _check_inputs(input_tensors):
    from mixprec.keras.engine.keras_tensor import KerasTensor

    flat = _nest.flatten(input_tensors)
    for t in flat:
        if not isinstance(t, KerasTensor):
            raise ValueError("clone_model's input_tensors must be keras.Input tensors (mixprec "
                             "clones symbolically); got %r" % (t,))
    return flat


def clone_model(model, input_tensors=None, clone_function=None):
    """A new model with ``model``'s architecture and new weights (not copied)."""
    from mixprec.keras.engine.input_layer import InputLayer
    from mixprec.keras.engine.sequential import Sequential
    from mixprec.keras.engine.training import Model
    from mixprec.keras.saving import model_config

    fn = clone_function or _clone_layer
    if isinstance(model, Sequential):
        layers = [fn(layer) for layer in model.layers]
        clone = Sequential(name=model.name)
        if input_tensors is not None:
            flat = _check_inputs(input_tensors)
            if len(flat) != 1:
                raise ValueError("To clone a `Sequential` model, we expect at most one tensor "
                                 "as part of `input_tensors`. Received: input_tensors=%s"
                                 % (input_tensors,))
            clone.add(flat[0]._keras_history[0])
        elif model._input_kt is not None:
            ref = model._input_kt._keras_history[0]
            clone.add(InputLayer.from_config(ref.get_config()))
        for layer in layers:
            clone.add(layer)
        return clone
    if isinstance(model, Model) and model._is_graph_network and (
            type(model).get_config is Model.get_config or clone_function or input_tensors):
        config = model_config.functional_get_config(model)
        created, inputs = {}, {}
        if input_tensors is not None:
            flat = _check_inputs(input_tensors)
            if len(flat) != len(model.inputs):
                raise ValueError("input_tensors holds %d tensors for a model of %d inputs"
                                 % (len(flat), len(model.inputs)))
            for ref, t in zip(model.inputs, flat):
                inputs[ref._keras_history[0].name] = t
        for layer in model.layers:
            if isinstance(layer, InputLayer):
                if layer.name not in inputs:
                    created[layer.name] = InputLayer.from_config(layer.get_config())
            else:
                created[layer.name] = fn(layer)
        return model_config.functional_from_config(type(model), config,
                                                   created_layers=created,
                                                   input_tensors=inputs)
    if clone_function or input_tensors:
        raise ValueError("Arguments clone_function and input_tensors are only supported for "
                         "Sequential models or Functional models. Received model of type "
                         "'%s', with clone_function=%s and input_tensors=%s"
                         % (type(model).__name__, clone_function, input_tensors))
    return model.__class__.from_config(model.get_config())
