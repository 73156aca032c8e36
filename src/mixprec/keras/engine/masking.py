"""Keras mask propagation (tf-keras 2.21): a layer's output tensors carry ``_keras_mask`` (a
bool tensor, one entry per timestep); the next layer's ``call`` gets it as ``mask=`` when it
takes one, and a layer with ``supports_masking`` passes ``compute_mask``'s result on. Losses
and metrics read the mask of a model's outputs (``apply_mask``/``apply_valid_mask``). This
module only moves masks between layers; it computes nothing but the masks' own weights.
"""

from mixprec import _core, _nest
from mixprec.keras.engine.keras_tensor import KerasTensor

__all__ = ["get_mask", "implicit_masks", "attach_input_masks", "set_output_masks",
           "set_symbolic_masks", "apply_mask", "apply_valid_mask"]


def get_mask(x):
    """The ``_keras_mask`` of a tensor or KerasTensor, None when it has none."""
    return getattr(x, "_keras_mask", None)


def _accepts_mask(layer):
    from mixprec.keras.engine.base_layer import Layer

    return Layer._CALL_ACCEPTS.get(type(layer), (False, False))[1]


def implicit_masks(layer, inputs, kwargs):
    """The input masks carried by ``inputs`` (packed as the inputs; None when none carries
    one). A layer whose ``call`` takes ``mask`` gets them as ``mask=`` unless it was
    passed explicitly (tf-keras' _get_input_masks)."""
    if "mask" in kwargs:
        return kwargs["mask"]
    if isinstance(inputs, (list, tuple, dict)):
        flat = _nest.flatten(inputs)
        masks = [get_mask(x) for x in flat]
        if all(m is None for m in masks):
            return None
        packed = _nest.pack_sequence_as(inputs, masks)
    else:
        packed = get_mask(inputs)
        if packed is None:
            return None
    if _accepts_mask(layer):
        kwargs["mask"] = packed
    return packed


def _set_mask(t, mask):
    try:
        t._keras_mask = mask
    except (AttributeError, ValueError):  # a NumPy array or a non-tensor output
        pass


def set_output_masks(layer, inputs, outputs, previous_mask):
    """tf-keras' _set_mask_metadata: a layer that supports masking gives each output the
    mask ``compute_mask`` returns, unless it set its outputs' masks itself."""
    if not layer.supports_masking:
        return
    flat = _nest.flatten(outputs)
    if getattr(layer, "_compute_output_and_mask_jointly", False) or (
            flat and all(get_mask(x) is not None for x in flat)):
        return
    masks = layer.compute_mask(inputs, previous_mask)
    if masks is None:
        return
    flat_masks = _nest.flatten(masks)
    if len(flat_masks) == 1 and len(flat) > 1:
        flat_masks = flat_masks * len(flat)
    for t, m in zip(flat, flat_masks):
        if isinstance(t, _core.Tensor) and t is not m:
            _set_mask(t, m)


def set_symbolic_masks(layer, args, kwargs, outputs):
    """The KerasTensor outputs of a functional call get the masks the layer would give
    (as KerasTensors of the masks' shapes), so ``layer.output._keras_mask`` reads as in
    tf-keras. Masks of concrete values flow at run time through the tensors themselves."""
    if not layer.supports_masking:
        return
    inputs = args[0]
    flat_in = _nest.flatten(inputs)
    in_masks = kwargs.get("mask")
    if in_masks is None:
        masks = [get_mask(x) for x in flat_in]
        if not all(m is None for m in masks):
            in_masks = masks[0] if len(masks) == 1 and not isinstance(inputs, (list, tuple)) \
                else _nest.pack_sequence_as(inputs, masks)
    if getattr(layer, "_is_graph_network", False):
        out_masks = layer.compute_mask(inputs, in_masks)  # its own outputs' masks
        _set_symbolic(layer, outputs, out_masks, flat_in)
        return
    # without input masks only a layer that makes masks from its inputs (Embedding,
    # Masking, Lambda(mask=...)) is asked: placeholders cost memory at the inputs' size
    if in_masks is None and not getattr(layer, "_creates_masks", False):
        from mixprec.keras.engine.base_layer import Layer

        users = not type(layer).__module__.startswith("mixprec.")
        if not (users and type(layer).compute_mask is not Layer.compute_mask):
            return

    def placeholder(x):
        if not isinstance(x, KerasTensor):
            return x
        return _core.fill([1 if d is None else d for d in x.shape], 0 if x.dtype.name != "bool"
                          else False, x.dtype)

    try:
        concrete_in = _nest.map_structure(placeholder, inputs)
        concrete_masks = None if in_masks is None else _nest.map_structure(placeholder, in_masks)
        out_masks = layer.compute_mask(concrete_in, concrete_masks)
    except Exception:  # noqa: BLE001  a mask that placeholders cannot give: none recorded
        return
    _set_symbolic(layer, outputs, out_masks, flat_in)


def _set_symbolic(layer, outputs, out_masks, flat_in):
    if out_masks is None:
        return
    flat_out = _nest.flatten(outputs)
    flat_masks = _nest.flatten(out_masks)
    if len(flat_masks) == 1 and len(flat_out) > 1:
        flat_masks = flat_masks * len(flat_out)
    batch_unknown = any(isinstance(x, KerasTensor) and len(x.shape) and x.shape[0] is None
                        for x in flat_in)
    for kt, m in zip(flat_out, flat_masks):
        if m is None or not isinstance(kt, KerasTensor):
            continue
        shape = list(m.shape)
        if batch_unknown and shape:
            shape[0] = None
        kt._keras_mask = KerasTensor(shape, m.dtype, name=layer.name + "_mask")


def attach_input_masks(inputs, masks):
    """Inputs (converted to tensors) carrying ``masks`` (a functional model's ``mask=``)."""
    flat = _nest.flatten(inputs) if isinstance(inputs, (list, tuple, dict)) else [inputs]
    flat_m = _nest.flatten(masks) if isinstance(masks, (list, tuple, dict)) else [masks]
    out = []
    for x, m in zip(flat, flat_m + [None] * (len(flat) - len(flat_m))):
        if not isinstance(x, _core.Tensor):
            x = _core.convert_to_tensor(x)
        if m is not None:
            if not isinstance(m, _core.Tensor):
                m = _core.convert_to_tensor(m)
            _set_mask(x, m)
        out.append(x)
    if isinstance(inputs, (list, tuple, dict)):
        return _nest.pack_sequence_as(inputs, out)
    return out[0]


def apply_mask(y_p, sw, mask):
    """Sample weights times the mask (the mask alone without weights), in y_p's dtype."""
    if mask is None:
        return sw
    mask = _core.cast(mask, y_p.dtype)
    if sw is None:
        return mask
    from mixprec.keras.losses import match_weight_rank

    sw = _core.convert_to_tensor(sw)
    if sw.dtype != mask.dtype:
        sw = _core.cast(sw, mask.dtype)
    return match_weight_rank(sw, mask.ndim) * mask


def apply_valid_mask(losses, sw, mask, reduction):
    """tf-keras' apply_valid_mask: under a mean reduction the valid entries weigh
    total / valid, so the mean runs over the unmasked entries only."""
    if mask is not None:
        mask = _core.cast(mask, losses.dtype)
        if reduction in ("auto", "sum_over_batch_size"):
            total = float(mask._numel)
            valid = _core.reduce_sum(mask)
            mask = mask * (total / valid)
    return apply_mask(losses, sw, mask)
