"""The regression, divergence and margin losses of ``tf.keras.losses`` beyond the
cross-entropies and MSE/MAE: huber, log_cosh, kl_divergence, poisson,
mean_squared_logarithmic_error, mean_absolute_percentage_error, hinge, cosine_similarity
(functions and classes; tf-keras 2.21's formulas, names and configs). Each is a
composition of core ops (so differentiable); exported by ``mixprec.keras.losses``."""

import math

from mixprec import _core
from mixprec.keras import backend
from mixprec.keras.losses import LossFunctionWrapper, Reduction, _float_pred, _tensor

__all__ = ["huber", "log_cosh", "kl_divergence", "poisson", "mean_squared_logarithmic_error",
           "mean_absolute_percentage_error", "hinge", "cosine_similarity", "Huber", "LogCosh",
           "KLDivergence", "Poisson", "MeanSquaredLogarithmicError",
           "MeanAbsolutePercentageError", "Hinge", "CosineSimilarity"]


def _pair(y_true, y_pred):
    y_pred = _float_pred(y_pred)
    return _core.cast(_tensor(y_true), y_pred.dtype), y_pred


def huber(y_true, y_pred, delta=1.0):
    """Mean over the last axis of 0.5*e^2 where |e| <= delta, else delta*|e| - 0.5*delta^2
    (in floatx, float32 by default, whatever the inputs' dtype: tf-keras casts both)."""
    y_pred = _core.cast(_float_pred(y_pred), backend.floatx())
    y_true = _core.cast(_tensor(y_true), backend.floatx())
    error = y_pred - y_true
    abs_error = _core.abs(error)
    delta = float(delta)
    small = 0.5 * _core.square(error)
    large = abs_error * delta - 0.5 * delta * delta
    return _core.reduce_mean(_core.where(_core.less_equal(abs_error, delta), small, large), -1)


def log_cosh(y_true, y_pred):
    """Mean over the last axis of log(cosh(e)), computed as e + softplus(-2e) - log 2."""
    y_true, y_pred = _pair(y_true, y_pred)
    x = y_pred - y_true
    return _core.reduce_mean(x + _core.softplus(x * -2.0) - math.log(2.0), -1)


def kl_divergence(y_true, y_pred):
    """sum(y_true * log(y_true / y_pred)) over the last axis, both clipped to [eps, 1]."""
    y_true, y_pred = _pair(y_true, y_pred)
    eps = backend.epsilon()
    y_true = _core.minimum(_core.maximum(y_true, eps), 1.0)
    y_pred = _core.minimum(_core.maximum(y_pred, eps), 1.0)
    return _core.reduce_sum(y_true * _core.log(y_true / y_pred), -1)


def poisson(y_true, y_pred):
    """Mean over the last axis of y_pred - y_true * log(y_pred + eps)."""
    y_true, y_pred = _pair(y_true, y_pred)
    return _core.reduce_mean(y_pred - y_true * _core.log(y_pred + backend.epsilon()), -1)


def mean_squared_logarithmic_error(y_true, y_pred):
    """Mean over the last axis of (log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1))^2."""
    y_true, y_pred = _pair(y_true, y_pred)
    eps = backend.epsilon()
    first = _core.log(_core.maximum(y_pred, eps) + 1.0)
    second = _core.log(_core.maximum(y_true, eps) + 1.0)
    return _core.reduce_mean(_core.squared_difference(first, second), -1)


def mean_absolute_percentage_error(y_true, y_pred):
    """100 * mean over the last axis of |(y_true - y_pred) / max(|y_true|, eps)|."""
    y_true, y_pred = _pair(y_true, y_pred)
    diff = _core.abs((y_true - y_pred) / _core.maximum(_core.abs(y_true), backend.epsilon()))
    return _core.reduce_mean(diff, -1) * 100.0


def hinge(y_true, y_pred):
    """Mean over the last axis of max(1 - y_true * y_pred, 0); labels that are all 0 or 1
    become -1/1 first (tf-keras)."""
    y_true, y_pred = _pair(y_true, y_pred)
    binary = _core.reduce_all(_core.logical_or(_core.equal(y_true, 0.0),
                                               _core.equal(y_true, 1.0)))
    y_true = _core.where(binary, y_true * 2.0 - 1.0, y_true)  # decided on the device
    return _core.reduce_mean(_core.relu(1.0 - y_true * y_pred), -1)


def _l2_normalize(x, axis):
    square_sum = _core.reduce_sum(_core.square(x), axis, True)
    return x * _core.rsqrt(_core.maximum(square_sum, 1e-12))


def cosine_similarity(y_true, y_pred, axis=-1):
    """-sum(l2_normalize(y_true) * l2_normalize(y_pred)) over ``axis``."""
    y_true, y_pred = _pair(y_true, y_pred)
    return -_core.reduce_sum(_l2_normalize(y_true, axis) * _l2_normalize(y_pred, axis), axis)


class Huber(LossFunctionWrapper):
    def __init__(self, delta=1.0, reduction=Reduction.AUTO, name="huber_loss"):
        super().__init__(huber, reduction=reduction, name=name, delta=delta)


class LogCosh(LossFunctionWrapper):
    def __init__(self, reduction=Reduction.AUTO, name="log_cosh"):
        super().__init__(log_cosh, reduction=reduction, name=name)


class KLDivergence(LossFunctionWrapper):
    def __init__(self, reduction=Reduction.AUTO, name="kl_divergence"):
        super().__init__(kl_divergence, reduction=reduction, name=name)


class Poisson(LossFunctionWrapper):
    def __init__(self, reduction=Reduction.AUTO, name="poisson"):
        super().__init__(poisson, reduction=reduction, name=name)


class MeanSquaredLogarithmicError(LossFunctionWrapper):
    def __init__(self, reduction=Reduction.AUTO, name="mean_squared_logarithmic_error"):
        super().__init__(mean_squared_logarithmic_error, reduction=reduction, name=name)


class MeanAbsolutePercentageError(LossFunctionWrapper):
    def __init__(self, reduction=Reduction.AUTO, name="mean_absolute_percentage_error"):
        super().__init__(mean_absolute_percentage_error, reduction=reduction, name=name)


class Hinge(LossFunctionWrapper):
    def __init__(self, reduction=Reduction.AUTO, name="hinge"):
        super().__init__(hinge, reduction=reduction, name=name)


class CosineSimilarity(LossFunctionWrapper):
    def __init__(self, axis=-1, reduction=Reduction.AUTO, name="cosine_similarity"):
        super().__init__(cosine_similarity, reduction=reduction, name=name, axis=axis)


logcosh = log_cosh
kld = KLD = kullback_leibler_divergence = kl_divergence
msle = MSLE = mean_squared_logarithmic_error
mape = MAPE = mean_absolute_percentage_error

FUNCTIONS = {
    "huber": huber, "log_cosh": log_cosh, "logcosh": log_cosh,
    "kl_divergence": kl_divergence, "kld": kl_divergence, "KLD": kl_divergence,
    "kullback_leibler_divergence": kl_divergence, "poisson": poisson,
    "mean_squared_logarithmic_error": mean_squared_logarithmic_error,
    "msle": mean_squared_logarithmic_error, "MSLE": mean_squared_logarithmic_error,
    "mean_absolute_percentage_error": mean_absolute_percentage_error,
    "mape": mean_absolute_percentage_error, "MAPE": mean_absolute_percentage_error,
    "hinge": hinge, "cosine_similarity": cosine_similarity,
}
CLASSES = (Huber, LogCosh, KLDivergence, Poisson, MeanSquaredLogarithmicError,
           MeanAbsolutePercentageError, Hinge, CosineSimilarity)
