"""The squared and categorical hinge losses and the focal cross-entropies of
``tf.keras.losses`` (functions and classes: squared_hinge, categorical_hinge,
binary_focal_crossentropy, categorical_focal_crossentropy), with tf-keras 2.21's formulas,
defaults, names and configs. Compositions of core ops (so differentiable); exported by
``mixprec.keras.losses`` and, the functions, by ``mixprec.keras.metrics``."""

import warnings

from mixprec import _core, _ops
from mixprec.keras import backend
from mixprec.keras.losses import (LossFunctionWrapper, Reduction, _cached_logits, _float_pred,
                                  _tensor, binary_crossentropy)

__all__ = ["squared_hinge", "categorical_hinge", "binary_focal_crossentropy",
           "categorical_focal_crossentropy", "SquaredHinge", "CategoricalHinge",
           "BinaryFocalCrossentropy", "CategoricalFocalCrossentropy"]


def _pair(y_true, y_pred):
    y_pred = _float_pred(y_pred)
    return _core.cast(_tensor(y_true), y_pred.dtype), y_pred


def _as_signs(y_true):
    """Labels that are all 0 or 1 become -1/1 (tf-keras' _maybe_convert_labels)."""
    binary = _core.reduce_all(_core.logical_or(_core.equal(y_true, 0.0),
                                               _core.equal(y_true, 1.0)))
    return _core.where(binary, y_true * 2.0 - 1.0, y_true)


def squared_hinge(y_true, y_pred):
    """Mean over the last axis of max(1 - y_true * y_pred, 0)^2 (0/1 labels as -1/1)."""
    y_true, y_pred = _pair(y_true, y_pred)
    y_true = _as_signs(y_true)
    return _core.reduce_mean(_core.square(_core.relu(1.0 - y_true * y_pred)), -1)


def categorical_hinge(y_true, y_pred):
    """max(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0) over the last axis."""
    y_true, y_pred = _pair(y_true, y_pred)
    pos = _core.reduce_sum(y_true * y_pred, -1)
    neg = _core.reduce_max((1.0 - y_true) * y_pred, -1)
    return _core.relu(neg - pos + 1.0)


def binary_focal_crossentropy(y_true, y_pred, apply_class_balancing=False, alpha=0.25,
                              gamma=2.0, from_logits=False, label_smoothing=0.0, axis=-1):
    """Mean over ``axis`` of (1 - p_t)^gamma * BCE (times alpha_t with class balancing)."""
    y_pred, from_logits = _cached_logits(y_pred, from_logits, "Sigmoid",
                                         "binary_focal_crossentropy")
    y_true, y_pred = _pair(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    prob = _core.sigmoid(y_pred) if from_logits else y_pred
    p_t = y_true * prob + (1.0 - y_true) * (1.0 - prob)
    focal = _core.pow(1.0 - p_t, _core.cast(_core.constant(gamma), p_t.dtype))
    # the element-wise BCE: binary_crossentropy's mean over a new axis of 1
    bce = _core.reshape(binary_crossentropy(
        _core.reshape(y_true, list(y_true.shape) + [1]),
        _core.reshape(y_pred, list(y_pred.shape) + [1]), from_logits=from_logits), y_pred.shape)
    out = focal * bce
    if apply_class_balancing:
        out = (y_true * alpha + (1.0 - y_true) * (1.0 - alpha)) * out
    return _core.reduce_mean(out, axis)


def categorical_focal_crossentropy(y_true, y_pred, alpha=0.25, gamma=2.0, from_logits=False,
                                   label_smoothing=0.0, axis=-1):
    """sum over ``axis`` of alpha * (1 - p)^gamma * -y_true * log(p), p the normalised and
    clipped probabilities."""
    if isinstance(axis, bool):
        raise ValueError("`axis` must be of type `int`. Received: axis=%s of type %s"
                         % (axis, type(axis)))
    y_pred, from_logits = _cached_logits(y_pred, from_logits, "Softmax",
                                         "categorical_focal_crossentropy")
    y_true, y_pred = _pair(y_true, y_pred)
    if y_pred.ndim and y_pred.shape[-1] == 1:
        warnings.warn("In loss categorical_focal_crossentropy, expected y_pred.shape to be "
                      "(batch_size, num_classes) with num_classes > 1. Received: "
                      "y_pred.shape=%s. Consider using 'binary_crossentropy' if you only have "
                      "2 classes." % (tuple(y_pred.shape),), SyntaxWarning, stacklevel=2)
    if list(y_true.shape) != list(y_pred.shape):
        raise ValueError("Shapes %s and %s are incompatible"
                         % (tuple(y_true.shape), tuple(y_pred.shape)))
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / y_true.shape[-1]
    if from_logits:
        y_pred = _core.softmax(y_pred, axis)
    p = y_pred / _core.reduce_sum(y_pred, axis, True)
    eps = backend.epsilon()
    p = _ops.clip_by_value(p, eps, 1.0 - eps)
    cce = -y_true * _core.log(p)
    factor = _core.pow(1.0 - p, _core.cast(_core.constant(gamma), p.dtype)) * alpha
    return _core.reduce_sum(factor * cce, axis)


class SquaredHinge(LossFunctionWrapper):
    def __init__(self, reduction=Reduction.AUTO, name="squared_hinge"):
        super().__init__(squared_hinge, reduction=reduction, name=name)


class CategoricalHinge(LossFunctionWrapper):
    def __init__(self, reduction=Reduction.AUTO, name="categorical_hinge"):
        super().__init__(categorical_hinge, reduction=reduction, name=name)


class BinaryFocalCrossentropy(LossFunctionWrapper):
    def __init__(self, apply_class_balancing=False, alpha=0.25, gamma=2.0, from_logits=False,
                 label_smoothing=0.0, axis=-1, reduction=Reduction.AUTO,
                 name="binary_focal_crossentropy"):
        super().__init__(binary_focal_crossentropy, reduction=reduction, name=name,
                         apply_class_balancing=apply_class_balancing, alpha=alpha, gamma=gamma,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)
        self.from_logits, self.apply_class_balancing = from_logits, apply_class_balancing
        self.alpha, self.gamma = alpha, gamma


class CategoricalFocalCrossentropy(LossFunctionWrapper):
    def __init__(self, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction=Reduction.AUTO, name="categorical_focal_crossentropy"):
        super().__init__(categorical_focal_crossentropy, reduction=reduction, name=name,
                         alpha=alpha, gamma=gamma, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)
        self.from_logits, self.label_smoothing, self.axis = from_logits, label_smoothing, axis
        self.alpha, self.gamma = alpha, gamma


FUNCTIONS = {"squared_hinge": squared_hinge, "categorical_hinge": categorical_hinge,
             "binary_focal_crossentropy": binary_focal_crossentropy,
             "categorical_focal_crossentropy": categorical_focal_crossentropy}
CLASSES = (SquaredHinge, CategoricalHinge, BinaryFocalCrossentropy,
           CategoricalFocalCrossentropy)
