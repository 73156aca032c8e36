"""``tf.keras.metrics``: Mean, Sum, Accuracy, SparseCategoricalAccuracy,
CategoricalAccuracy, BinaryAccuracy; the losses as metrics (MeanSquaredError, 'mae' …).

A metric's state lives in float32 variables (``total``, ``count``); updates are core ops
(sums on the device), ``result()`` is a float32 scalar tensor.
"""

import functools
import sys

from mixprec import _core
from mixprec._dtypes import as_dtype, float32
from mixprec._variable import Variable
from mixprec.keras import backend
from mixprec.keras import losses as _losses
from mixprec.keras.losses import match_weight_rank

__all__ = ["Metric", "Mean", "Sum", "MeanMetricWrapper", "Accuracy", "SparseCategoricalAccuracy",
           "CategoricalAccuracy", "BinaryAccuracy", "get", "serialize", "deserialize",
           "sparse_categorical_accuracy", "categorical_accuracy", "binary_accuracy", "accuracy",
           "MeanSquaredError", "MeanAbsoluteError", "BinaryCrossentropy", "CategoricalCrossentropy",
           "SparseCategoricalCrossentropy", "mean_squared_error", "mean_absolute_error", "mse",
           "mae", "MSE", "MAE", "binary_crossentropy", "categorical_crossentropy",
           "sparse_categorical_crossentropy"]


def _across_workers(result_fn):
    """``result`` of a metric created under a multi-worker strategy, read outside a replica:
    computed from its state summed over the workers (TensorFlow's sync-on-read SUM
    variables), so every worker reports the global value. Every worker must read it (it is
    a collective), as in TensorFlow."""
    @functools.wraps(result_fn)
    def result(self):
        s = self.__dict__.get("_strategy")
        ctx = sys.modules.get("mixprec.distribute._context")
        mirrors = getattr(getattr(s, "extended", None), "_mirrors", None) if s is not None else None
        if mirrors is not None and ctx is not None and ctx._current_replica_context() is None \
                and self._variables:
            return _across_gpus(self, mirrors, result_fn)
        if s is None or s.extended._num_workers <= 1 or ctx is None or \
                ctx._current_replica_context() is not None or not self._variables:
            return result_fn(self)
        saved = [v._peek() for v in self._variables]
        wide = [x if x.dtype.is_floating else _core.cast(x, "float64") for x in saved]
        summed = s.extended._cross_worker_all_reduce(wide, None)
        try:
            for v, x, old in zip(self._variables, summed, saved):
                v.assign(x if x.dtype == old.dtype else _core.cast(x, old.dtype))
            return result_fn(self)
        finally:
            for v, old in zip(self._variables, saved):
                v.assign(old)
    return result


def _in_replicas_only(update_fn):
    """``update_state`` of a metric created under a strategy with several local replicas:
    only inside that strategy's replicas (``strategy.run``). TensorFlow's metric state is
    sync-on-read SUM variables, whose ``assign_add`` raises this ValueError elsewhere."""
    @functools.wraps(update_fn)
    def update_state(self, *args, **kwargs):
        s = self.__dict__.get("_strategy")
        # NOTE: replicas of this process only; a multi-worker strategy's one local replica
        # still updates outside strategy.run (TensorFlow would raise there too)
        if s is not None and s.extended._num_local > 1:
            ctx = sys.modules["mixprec.distribute._context"]._current_replica_context()
            if ctx is None or ctx.strategy is not s:
                raise ValueError("SyncOnReadVariable does not support `assign_add` in "
                                 "cross-replica context when aggregation is set to "
                                 "`tf.VariableAggregation.SUM`.")
        return update_fn(self, *args, **kwargs)
    return update_state


def _across_gpus(metric, mirrors, result_fn):
    """``result`` of a metric whose state has one copy per GPU (each replica accumulates
    into its own): computed from the copies' sum (TensorFlow's sync-on-read SUM)."""
    from mixprec.distribute import _gpu_mirror

    with mirrors.cross_replica():  # the primaries, on the first GPU, whatever thread asks
        saved = [v._peek() for v in metric._variables]
        try:
            for v, old in zip(metric._variables, saved):
                parts = [c._peek() if c is not v else old for c in mirrors.local_results(v)]
                total = None
                for p in parts:
                    p = _gpu_mirror.to_device(p, _gpu_mirror._device_of(old))
                    total = p if total is None else total + p
                v._assign(total)  # the primary only (not Variable.assign: copies keep theirs)
            return result_fn(metric)
        finally:
            for v, old in zip(metric._variables, saved):
                v._assign(old)


class Metric:
    """Base class: ``update_state`` accumulates, ``result`` reads, ``reset_state`` clears."""

    def __init__(self, name=None, dtype=None):
        self.name = name or backend.unique_object_name(backend._snake(type(self).__name__))
        self._dtype = as_dtype(dtype or float32)
        self._variables = []
        self.stateful = False
        ctx = sys.modules.get("mixprec.distribute._context")
        self._strategy = ctx._variable_strategy() if ctx is not None else None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "result" in cls.__dict__:
            cls.result = _across_workers(cls.__dict__["result"])
        if "update_state" in cls.__dict__:
            cls.update_state = _in_replicas_only(cls.__dict__["update_state"])

    @property
    def dtype(self):
        return self._dtype.name

    def add_weight(self, name, shape=(), dtype=None, initializer="zeros"):
        # tf-keras 2.21 names them without the metric's scope: 'total:0', 'count:0'
        v = Variable(_core.fill(list(shape), 0, as_dtype(dtype or self._dtype)), trainable=False,
                     name=name)
        self._variables.append(v)
        return v

    @property
    def variables(self):
        return list(self._variables)

    weights = variables

    def update_state(self, *args, **kwargs):
        raise NotImplementedError("Must be implemented in subclasses.")

    def result(self):
        raise NotImplementedError("Must be implemented in subclasses.")

    def reset_state(self):
        for v in self._variables:
            v.assign(_core.fill(list(v.shape), 0, v.true_dtype))

    def reset_states(self):
        self.reset_state()

    def __call__(self, *args, **kwargs):
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return "<mixprec.keras.metrics.%s name=%r>" % (type(self).__name__, self.name)

    def __str__(self):
        # tf-keras: the class name and the config, e.g. Mean(name=test_loss,dtype=float32)
        args = ",".join("%s=%s" % (k, v) for k, v in self.get_config().items())
        return "%s(%s)" % (type(self).__name__, args)


def _weights(values, sample_weight):
    if sample_weight is None:
        return None
    sw = match_weight_rank(_core.cast(_core.convert_to_tensor(sample_weight), values.dtype),
                           values.ndim)
    if list(sw.shape) != list(values.shape):
        sw = _core.broadcast_to(sw, list(values.shape))
    return sw


class Sum(Metric):
    """The running (weighted) sum of the values it is given."""

    def __init__(self, name="sum", dtype=None):
        super().__init__(name, dtype)
        self.total = self.add_weight("total")

    def update_state(self, values, sample_weight=None):
        values = _core.cast(_core.convert_to_tensor(values), self._dtype)
        sw = _weights(values, sample_weight)
        if sw is not None:
            values = values * sw
        self.total.assign_add(_core.reduce_sum(values))

    def result(self):
        return _core.identity(self.total._peek())


class Mean(Metric):
    """The running (weighted) mean of the values it is given."""

    def __init__(self, name="mean", dtype=None):
        super().__init__(name, dtype)
        self.total = self.add_weight("total")
        self.count = self.add_weight("count")

    def update_state(self, values, sample_weight=None):
        values = _core.cast(_core.convert_to_tensor(values), self._dtype)
        sw = _weights(values, sample_weight)
        if sw is None:
            self.total.assign_add(_core.reduce_sum(values))
            self.count.assign_add(float(values._numel))
        else:
            self.total.assign_add(_core.reduce_sum(values * sw))
            self.count.assign_add(_core.reduce_sum(sw))

    def result(self):
        total, count = self.total._peek(), self.count._peek()
        return _core.where(count > 0, total / _core.maximum(count, 1e-38),
                           _core.fill([], 0, self._dtype))


class MeanMetricWrapper(Mean):
    """Mean of ``fn(y_true, y_pred)`` per example."""

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name, dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        matches = self._fn(y_true, y_pred, **self._fn_kwargs)
        super().update_state(matches, sample_weight)

    def get_config(self):
        config = super().get_config()
        config.update(self._fn_kwargs)
        if type(self) is MeanMetricWrapper:
            config["fn"] = self._fn  # tf-keras: the function itself (serialized by name)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        fn = config.pop("fn", None)
        if cls is MeanMetricWrapper:
            if isinstance(fn, (str, dict)):
                fn = deserialize(fn) if isinstance(fn, dict) else get(fn)
            return cls(fn, **config)
        return cls(**config)


def accuracy(y_true, y_pred):
    y_pred = _core.convert_to_tensor(y_pred)
    y_true = _core.convert_to_tensor(y_true)
    if y_true.dtype != y_pred.dtype:
        y_true = _core.cast(y_true, y_pred.dtype)
    return _core.cast(_core.equal(y_true, y_pred), float32)


def sparse_categorical_accuracy(y_true, y_pred):
    y_pred = _core.convert_to_tensor(y_pred)
    y_true = _core.convert_to_tensor(y_true)
    if y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1:
        y_true = _core.reshape(y_true, list(y_true.shape)[:-1])
    pred = _core.argmax(y_pred, -1)
    if y_true.dtype.is_floating:
        y_true = _core.cast(y_true, "int64")
    return _core.cast(_core.equal(_core.cast(y_true, "int64"), pred), float32)


def categorical_accuracy(y_true, y_pred):
    return _core.cast(_core.equal(_core.argmax(y_true, -1), _core.argmax(y_pred, -1)), float32)


def binary_accuracy(y_true, y_pred, threshold=0.5):
    y_pred = _core.convert_to_tensor(y_pred)
    y_true = _core.cast(_core.convert_to_tensor(y_true), y_pred.dtype)
    pred = _core.cast(_core.greater(y_pred, threshold), y_pred.dtype)
    return _core.reduce_mean(_core.cast(_core.equal(y_true, pred), float32), -1)


class Accuracy(MeanMetricWrapper):
    def __init__(self, name="accuracy", dtype=None):
        super().__init__(accuracy, name, dtype)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    def __init__(self, name="sparse_categorical_accuracy", dtype=None):
        super().__init__(sparse_categorical_accuracy, name, dtype)


class CategoricalAccuracy(MeanMetricWrapper):
    def __init__(self, name="categorical_accuracy", dtype=None):
        super().__init__(categorical_accuracy, name, dtype)


class BinaryAccuracy(MeanMetricWrapper):
    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        super().__init__(binary_accuracy, name, dtype, threshold=threshold)


# the losses as metrics (tf-keras: metrics.mse is losses.mean_squared_error …)
mean_squared_error = mse = MSE = _losses.mean_squared_error
mean_absolute_error = mae = MAE = _losses.mean_absolute_error
binary_crossentropy = _losses.binary_crossentropy
categorical_crossentropy = _losses.categorical_crossentropy
sparse_categorical_crossentropy = _losses.sparse_categorical_crossentropy


class MeanSquaredError(MeanMetricWrapper):
    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(mean_squared_error, name, dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(mean_absolute_error, name, dtype)


class BinaryCrossentropy(MeanMetricWrapper):
    def __init__(self, name="binary_crossentropy", dtype=None, from_logits=False,
                 label_smoothing=0):
        super().__init__(binary_crossentropy, name, dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing)


class CategoricalCrossentropy(MeanMetricWrapper):
    def __init__(self, name="categorical_crossentropy", dtype=None, from_logits=False,
                 label_smoothing=0, axis=-1):
        super().__init__(categorical_crossentropy, name, dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


class SparseCategoricalCrossentropy(MeanMetricWrapper):
    def __init__(self, name="sparse_categorical_crossentropy", dtype=None, from_logits=False,
                 ignore_class=None, axis=-1):
        super().__init__(sparse_categorical_crossentropy, name, dtype, from_logits=from_logits,
                         ignore_class=ignore_class, axis=axis)


_CLASSES = {c.__name__: c for c in (Mean, Sum, Accuracy, SparseCategoricalAccuracy,
                                     CategoricalAccuracy, BinaryAccuracy, MeanSquaredError,
                                     MeanAbsoluteError, BinaryCrossentropy,
                                     CategoricalCrossentropy, SparseCategoricalCrossentropy)}
# names whose get() is the function itself, as tf-keras (compile wraps it in a mean named
# as written: metrics=['mae'] logs 'mae')
_LOSS_FUNCTIONS = {f.__name__: f for f in (mean_squared_error, mean_absolute_error,
                                           binary_crossentropy, categorical_crossentropy,
                                           sparse_categorical_crossentropy)}
_LOSS_FUNCTIONS.update(mse=mse, mae=mae, MSE=MSE, MAE=MAE)
# accuracy functions: get() returns them as tf-keras 2.21 does ('acc' is accuracy)
_FUNCTIONS = {f.__name__: f for f in (accuracy, sparse_categorical_accuracy,
                                      categorical_accuracy, binary_accuracy)}
_FUNCTIONS["acc"] = accuracy


def serialize(metric, use_legacy_format=False):
    """tf-keras 2.21's dict: {'module', 'class_name', 'config', 'registered_name'}."""
    from mixprec.keras.saving import serialization_lib

    if use_legacy_format:
        return {"class_name": type(metric).__name__, "config": metric.get_config()}
    return serialization_lib.serialize_keras_object(metric)


def deserialize(config, custom_objects=None):
    from mixprec.keras.saving import object_registration as _reg

    found = _reg.deserialize_registered(config, custom_objects)
    if found is not _reg._MISSING:
        return found
    if isinstance(config, str):
        return get(config)
    if config.get("class_name") == "function":  # a serialized function (tf-keras' format)
        return get(config.get("config"))
    cls = _CLASSES.get(config.get("class_name"))
    if cls is None:
        raise ValueError("Unknown metric: %r" % (config.get("class_name"),))
    return cls.from_config(config.get("config", {}))


def get(identifier):
    """A metric object from an instance, a class name or function name, or a function; a
    loss's name ('mae', 'mean_squared_error') gives the function, as tf-keras."""
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, str):
        if identifier in _FUNCTIONS:
            return _FUNCTIONS[identifier]
        if identifier in _CLASSES:
            return _CLASSES[identifier]()
        if identifier in _LOSS_FUNCTIONS:
            return _LOSS_FUNCTIONS[identifier]
        raise ValueError("Unknown metric function: '%s'" % identifier)
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError("Could not interpret metric identifier: %r" % (identifier,))

from mixprec.keras import _more_metrics  # noqa: E402
from mixprec.keras._more_metrics import (  # noqa: E402,F401
    CosineSimilarity, Hinge, KLDivergence, LogCoshError, MeanAbsolutePercentageError,
    MeanSquaredLogarithmicError, Poisson, Precision, Recall, RootMeanSquaredError,
    SparseTopKCategoricalAccuracy, TopKCategoricalAccuracy, sparse_top_k_categorical_accuracy,
    top_k_categorical_accuracy)

_CLASSES.update({c.__name__: c for c in _more_metrics.CLASSES})
_FUNCTIONS.update(_more_metrics.FUNCTIONS)
# the losses' functions under their metric names (tf-keras exports them here too)
from mixprec.keras._more_losses import (  # noqa: E402,F401
    KLD, MAPE, MSLE, hinge, kl_divergence, kld, kullback_leibler_divergence, log_cosh, logcosh,
    mape, mean_absolute_percentage_error, mean_squared_logarithmic_error, msle, poisson)

from mixprec.keras import _score_metrics, _threshold_metrics  # noqa: E402
from mixprec.keras._margin_losses import (  # noqa: E402,F401
    binary_focal_crossentropy, categorical_focal_crossentropy, categorical_hinge, squared_hinge)
from mixprec.keras._score_metrics import (  # noqa: E402,F401
    IoU, BinaryIoU, CategoricalHinge, F1Score, FBetaScore, MeanIoU, MeanRelativeError,
    MeanTensor, OneHotIoU, OneHotMeanIoU, R2Score, SquaredHinge)
from mixprec.keras._threshold_metrics import (  # noqa: E402,F401
    AUC, FalseNegatives, FalsePositives, PrecisionAtRecall, RecallAtPrecision,
    SensitivityAtSpecificity, SpecificityAtSensitivity, TrueNegatives, TruePositives)

_CLASSES.update({c.__name__: c for c in _score_metrics.CLASSES + _threshold_metrics.CLASSES})
_LOSS_FUNCTIONS.update(binary_focal_crossentropy=binary_focal_crossentropy,
                       categorical_focal_crossentropy=categorical_focal_crossentropy,
                       categorical_hinge=categorical_hinge, squared_hinge=squared_hinge)
_LOSS_FUNCTIONS.update({n: globals()[n] for n in (
    "KLD", "MAPE", "MSLE", "hinge", "kl_divergence", "kld", "kullback_leibler_divergence",
    "log_cosh", "logcosh", "mape", "mean_absolute_percentage_error",
    "mean_squared_logarithmic_error", "msle", "poisson")})

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
