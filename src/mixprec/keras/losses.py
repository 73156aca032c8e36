"""``tf.keras.losses``: cross-entropies, mean squared/absolute error, Reduction.

Cross-entropy on softmax outputs uses the fused C op on the softmax's logits (stable, one
pass, float32 math) whenever the prediction came from a softmax activation, as Keras does
through ``_keras_logits``; otherwise probabilities are clipped to [eps, 1 - eps] first (the
sparse one then takes the fused op on their log, as tf-keras).
"""

import sys
import warnings

from mixprec import _core, _ops, errors
from mixprec._dtypes import int64
from mixprec.keras import activations, backend
from mixprec.keras.engine import masking as _masking

__all__ = ["Loss", "Reduction", "SparseCategoricalCrossentropy", "CategoricalCrossentropy",
           "BinaryCrossentropy", "MeanSquaredError", "MeanAbsoluteError",
           "sparse_categorical_crossentropy", "categorical_crossentropy", "binary_crossentropy",
           "mean_squared_error", "mean_absolute_error", "mse", "mae", "MSE", "MAE", "get",
           "serialize", "deserialize"]


class Reduction:
    """How per-example losses become the loss (``tf.keras.losses.Reduction``)."""
    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls):
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)

    @classmethod
    def validate(cls, key):
        if key not in cls.all():
            raise ValueError('Invalid Reduction Key: %s. Expected keys are "%s"'
                             % (key, cls.all()))


def _tensor(x):
    return _core.convert_to_tensor(x)


def match_weight_rank(sw, ndim):
    """tf-keras' squeeze_or_expand_dimensions for sample weights: a weight one rank above the
    values loses a trailing 1, one rank below gains one, so per-sample weights (N,) weigh
    whole rows of (N, T) values rather than broadcasting along T."""
    if sw.ndim == ndim + 1 and sw.shape[-1] == 1:
        return _core.reshape(sw, list(sw.shape)[:-1])
    if sw.ndim == ndim - 1:
        return _core.reshape(sw, list(sw.shape) + [1])
    return sw


def _reduce(losses, reduction, sample_weight=None):
    losses = _tensor(losses)
    if sample_weight is not None:
        sw = _core.convert_to_tensor(sample_weight, dtype_hint=losses.dtype)
        if sw.dtype != losses.dtype:
            sw = _core.cast(sw, losses.dtype)
        losses = losses * match_weight_rank(sw, losses.ndim)
    if reduction == Reduction.NONE:
        return losses
    total = _core.reduce_sum(losses)
    if reduction == Reduction.SUM:
        return total
    n = losses._numel
    return total / max(n, 1) if n else total * 0


def _under_strategy():
    """A tf.distribute strategy other than the default is in scope (or running)."""
    ctx = sys.modules.get("mixprec.distribute._context")
    return ctx is not None and ctx.has_strategy()


class Loss:
    """Base class: ``loss(y_true, y_pred, sample_weight=None)`` -> reduced loss."""

    def __init__(self, reduction=Reduction.AUTO, name=None):
        Reduction.validate(reduction)
        self.reduction = reduction
        self.name = name

    def __call__(self, y_true, y_pred, sample_weight=None):
        if self.reduction in (Reduction.AUTO, Reduction.SUM_OVER_BATCH_SIZE) and \
                not getattr(self, "_allow_sum_over_batch_size", False) and _under_strategy():
            raise ValueError(
                "Please use `tf.keras.losses.Reduction.SUM` or `tf.keras.losses.Reduction.NONE` "
                "for loss reduction when losses are used with `tf.distribute.Strategy`, except "
                "for specifying losses in `Model.compile()` for use by the built-in training "
                "looop `Model.fit()`.\nPlease see "
                "https://www.tensorflow.org/tutorials/distribute/custom_training for more "
                "details.")
        losses = self.call(y_true, y_pred)
        reduction = Reduction.SUM_OVER_BATCH_SIZE if self.reduction == Reduction.AUTO \
            else self.reduction
        # a masked y_pred (its Keras mask) averages over the unmasked entries, as tf-keras
        in_mask, out_mask = _masking.get_mask(y_pred), _masking.get_mask(losses)
        mask = in_mask if out_mask is None else (
            out_mask if in_mask is None else _core.logical_and(in_mask, out_mask))
        if mask is not None:
            losses = _tensor(losses)
            sample_weight = _masking.apply_valid_mask(losses, sample_weight, mask, reduction)
        return _reduce(losses, reduction, sample_weight)

    def call(self, y_true, y_pred):
        raise NotImplementedError("Must be implemented in subclasses.")

    def get_config(self):
        return {"reduction": self.reduction, "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class LossFunctionWrapper(Loss):
    def __init__(self, fn, reduction=Reduction.AUTO, name=None, **kwargs):
        super().__init__(reduction=reduction, name=name)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        if isinstance(y_true, _core.Tensor) and isinstance(y_pred, _core.Tensor):
            # as tf-keras' squeeze_or_expand_dimensions (tensors only, as there): a trailing
            # axis of 1 on one side only is dropped, so (n,) and (n, 1) do not broadcast
            if y_pred.ndim == y_true.ndim + 1 and y_pred.shape[-1] == 1:
                y_pred = _core.reshape(y_pred, list(y_pred.shape)[:-1])
            elif y_true.ndim == y_pred.ndim + 1 and y_true.shape[-1] == 1:
                y_true = _core.reshape(y_true, list(y_true.shape)[:-1])
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        from mixprec.keras.saving import object_registration

        config = super().get_config()
        config.update(self._fn_kwargs)
        config["fn"] = object_registration.get_registered_name(self.fn)  # as tf-keras 2.21
        return config

    @classmethod
    def from_config(cls, config):
        """tf-keras' rule: a subclass knows its function ('fn' is dropped); the wrapper
        itself looks it up by name."""
        config = dict(config)
        fn = config.pop("fn", None)
        if cls is LossFunctionWrapper and fn is not None:
            config["fn"] = get(fn) if isinstance(fn, str) else fn
        return cls(**config)


# ------------------------------------------------------------------ functions


def _cached_logits(y_pred, from_logits, op_type, fn_name):
    """(logits, from_logits) as tf-keras decides: the output of a Keras softmax or sigmoid
    is replaced by the logits it was computed from, whatever ``from_logits`` says (with
    tf-keras' warning when it said True)."""
    logits = activations.logits_of(y_pred)
    if logits is None:
        return y_pred, from_logits
    if from_logits:
        warnings.warn('"`%s` received `from_logits=True`, but the `output` argument was '
                      "produced by a %s activation and thus does not represent logits. Was "
                      "this intended?" % (fn_name, op_type), stacklevel=3)
    return logits, True


def _float_pred(y_pred):
    y_pred = _tensor(y_pred)
    if not y_pred.dtype.is_floating:
        raise TypeError("y_pred must be a floating tensor, got %s" % y_pred.dtype.name)
    return y_pred


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, axis=-1,
                                    ignore_class=None):
    """Per-example -log p[label]; labels are integer class ids of shape y_pred[:-1] (or
    with a trailing 1)."""
    y_pred, from_logits = _cached_logits(y_pred, from_logits, "Softmax",
                                         "sparse_categorical_crossentropy")
    y_pred = _float_pred(y_pred)
    if axis not in (-1, y_pred.ndim - 1):
        raise NotImplementedError("sparse_categorical_crossentropy: only axis=-1 is supported")
    y_true = _tensor(y_true)
    if y_true.dtype.is_floating:
        # NOTE: a NaN label is outside [0, classes) as in TensorFlow, whose cast makes it
        # INT_MIN; ours saturates NaN to 0, which would silently train it as class 0
        if not _core.all_finite([y_true]):
            raise errors.InvalidArgumentError(
                "Received a label value of nan or inf which is outside the valid range of "
                "[0, %d). Labels of a sparse loss are class ids; check the data for missing "
                "values" % (y_pred.shape[-1] if y_pred.ndim else 0))
        y_true = _core.cast(y_true, int64)
    if y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1:
        y_true = _core.reshape(y_true, list(y_true.shape)[:-1])
    keep = None
    if ignore_class is not None:
        # ignored labels may be out of range (-1): give the op a valid one, zero its loss
        keep = _core.not_equal(y_true, ignore_class)
        y_true = _core.where(keep, y_true, _core.fill([], 0, y_true.dtype))
    if not from_logits:
        # probabilities: tf-keras' formula, clipped log probabilities into the fused op,
        # whose log-softmax normalizes them. NOTE: the op also checks the labels; a
        # one-hot of an out-of-range label is all zeros, a silent loss of 0
        eps = backend.epsilon()
        y_pred = _core.log(_ops.clip_by_value(y_pred, eps, 1 - eps))
    out = _core.sparse_softmax_cross_entropy_with_logits(y_true, y_pred)
    if keep is not None:
        out = _core.where(keep, out, _core.fill([], 0, out.dtype))
    return out


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Per-example -sum(y_true * log p) over the class axis (one-hot or soft labels)."""
    y_pred, from_logits = _cached_logits(y_pred, from_logits, "Softmax",
                                         "categorical_crossentropy")
    y_pred = _float_pred(y_pred)
    if axis not in (-1, y_pred.ndim - 1):
        raise NotImplementedError("categorical_crossentropy: only axis=-1 is supported")
    y_true = _core.cast(_tensor(y_true), y_pred.dtype)
    if label_smoothing:
        c = y_pred.shape[-1]
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / c
    if not from_logits:
        eps = backend.epsilon()
        p = y_pred / _core.reduce_sum(y_pred, -1, True)
        p = _ops.clip_by_value(p, eps, 1 - eps)
        return -_core.reduce_sum(y_true * _core.log(p), -1)
    return _core.softmax_cross_entropy_with_logits(y_true, y_pred)


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Mean over the last axis of the element-wise binary cross-entropy."""
    y_pred, from_logits = _cached_logits(y_pred, from_logits, "Sigmoid", "binary_crossentropy")
    y_pred = _float_pred(y_pred)
    y_true = _core.cast(_tensor(y_true), y_pred.dtype)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        # max(x, 0) - x*z + log(1 + exp(-|x|)), stable for any x
        x = y_pred
        elem = _core.relu(x) - x * y_true + _core.log1p(_core.exp(-_core.abs(x)))
    else:
        # tf-keras' formula: clip to [eps, 1 - eps], then log(p + eps), log(1 - p + eps)
        eps = backend.epsilon()
        p = _ops.clip_by_value(y_pred, eps, 1 - eps)
        elem = -(y_true * _core.log(p + eps) + (1 - y_true) * _core.log(1 - p + eps))
    return _core.reduce_mean(elem, axis)


def mean_squared_error(y_true, y_pred):
    y_pred = _float_pred(y_pred)
    y_true = _core.cast(_tensor(y_true), y_pred.dtype)
    return _core.reduce_mean(_core.squared_difference(y_pred, y_true), -1)


def mean_absolute_error(y_true, y_pred):
    y_pred = _float_pred(y_pred)
    y_true = _core.cast(_tensor(y_true), y_pred.dtype)
    return _core.reduce_mean(_core.abs(y_pred - y_true), -1)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error


# ------------------------------------------------------------------ classes


class SparseCategoricalCrossentropy(LossFunctionWrapper):
    def __init__(self, from_logits=False, ignore_class=None, reduction=Reduction.AUTO,
                 name="sparse_categorical_crossentropy"):
        super().__init__(sparse_categorical_crossentropy, reduction=reduction, name=name,
                         from_logits=from_logits, ignore_class=ignore_class)


class CategoricalCrossentropy(LossFunctionWrapper):
    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1, reduction=Reduction.AUTO,
                 name="categorical_crossentropy"):
        super().__init__(categorical_crossentropy, reduction=reduction, name=name,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)


class BinaryCrossentropy(LossFunctionWrapper):
    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1, reduction=Reduction.AUTO,
                 name="binary_crossentropy"):
        super().__init__(binary_crossentropy, reduction=reduction, name=name,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)


class MeanSquaredError(LossFunctionWrapper):
    def __init__(self, reduction=Reduction.AUTO, name="mean_squared_error"):
        super().__init__(mean_squared_error, reduction=reduction, name=name)


class MeanAbsoluteError(LossFunctionWrapper):
    def __init__(self, reduction=Reduction.AUTO, name="mean_absolute_error"):
        super().__init__(mean_absolute_error, reduction=reduction, name=name)


_FUNCTIONS = {
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
    "categorical_crossentropy": categorical_crossentropy,
    "binary_crossentropy": binary_crossentropy,
    "mean_squared_error": mean_squared_error, "mse": mean_squared_error, "MSE": mean_squared_error,
    "mean_absolute_error": mean_absolute_error, "mae": mean_absolute_error,
    "MAE": mean_absolute_error,
}
_CLASSES = {c.__name__: c for c in (SparseCategoricalCrossentropy, CategoricalCrossentropy,
                                     BinaryCrossentropy, MeanSquaredError, MeanAbsoluteError)}


def serialize(loss, use_legacy_format=False):
    """tf-keras 2.21's dict ({'module', 'class_name', 'config', 'registered_name'}; a
    function is {'module': 'builtins', 'class_name': 'function', ...})."""
    from mixprec.keras.saving import serialization_lib

    if use_legacy_format:
        if isinstance(loss, Loss):
            return {"class_name": type(loss).__name__, "config": loss.get_config()}
        return getattr(loss, "__name__", loss)
    return serialization_lib.serialize_keras_object(loss)


def deserialize(name, custom_objects=None):
    from mixprec.keras.saving import object_registration as _reg

    found = _reg.deserialize_registered(name, custom_objects)
    if found is not _reg._MISSING:
        return found
    if custom_objects and isinstance(name, str) and name in custom_objects:
        return custom_objects[name]
    if isinstance(name, dict) and name.get("class_name") == "function":
        return get(name.get("config"))  # a serialized function (tf-keras' format)
    if isinstance(name, dict):
        cls = _CLASSES.get(name.get("class_name"))
        if cls is None:
            raise ValueError("Unknown loss: %r" % (name.get("class_name"),))
        return cls.from_config(name.get("config", {}))
    return get(name)


def get(identifier):
    """A loss from a name ('sparse_categorical_crossentropy', 'mse' …), a class name, a
    config, an instance or a function."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        if identifier in _FUNCTIONS:
            return _FUNCTIONS[identifier]
        if identifier in _CLASSES:
            return _CLASSES[identifier]()
        raise ValueError(
            "Unknown loss function: '%s'. Please ensure you are using a "
            "`keras.utils.custom_object_scope` and that this object is included in the scope. "
            "See https://www.tensorflow.org/guide/keras/save_and_serialize"
            "#registering_the_custom_object for details." % (identifier,))
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError("Could not interpret loss function identifier: %r" % (identifier,))

from mixprec.keras import _more_losses  # noqa: E402
from mixprec.keras._more_losses import (  # noqa: E402,F401
    KLD, MAPE, MSLE, CosineSimilarity, Hinge, Huber, KLDivergence, LogCosh,
    MeanAbsolutePercentageError, MeanSquaredLogarithmicError, Poisson, cosine_similarity, hinge,
    huber, kl_divergence, kld, kullback_leibler_divergence, log_cosh, logcosh, mape,
    mean_absolute_percentage_error, mean_squared_logarithmic_error, msle, poisson)

_FUNCTIONS.update(_more_losses.FUNCTIONS)
_CLASSES.update({c.__name__: c for c in _more_losses.CLASSES})
__all__ += _more_losses.__all__

from mixprec.keras import _margin_losses  # noqa: E402
from mixprec.keras._margin_losses import (  # noqa: E402,F401
    BinaryFocalCrossentropy, CategoricalFocalCrossentropy, CategoricalHinge, SquaredHinge,
    binary_focal_crossentropy, categorical_focal_crossentropy, categorical_hinge, squared_hinge)

_FUNCTIONS.update(_margin_losses.FUNCTIONS)
_CLASSES.update({c.__name__: c for c in _margin_losses.CLASSES})
__all__ += _margin_losses.__all__

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
