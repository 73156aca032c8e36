"""More of ``tf.keras.metrics``: RootMeanSquaredError, the top-k accuracies, Precision and
Recall (one threshold or several, ``top_k``, ``class_id``), and the mean-of-a-loss metrics
(KLDivergence, LogCoshError, MeanAbsolutePercentageError, MeanSquaredLogarithmicError, Poisson,
Hinge, CosineSimilarity), with tf-keras 2.21's names, defaults and configs. Compositions of
core ops; exported by ``mixprec.keras.metrics``."""

from mixprec import _core, _ops
from mixprec.keras import _more_losses as _l
from mixprec.keras.metrics import Mean, MeanMetricWrapper, Metric

__all__ = ["RootMeanSquaredError", "TopKCategoricalAccuracy", "SparseTopKCategoricalAccuracy",
           "Precision", "Recall", "KLDivergence", "LogCoshError", "MeanAbsolutePercentageError",
           "MeanSquaredLogarithmicError", "Poisson", "Hinge", "CosineSimilarity",
           "top_k_categorical_accuracy", "sparse_top_k_categorical_accuracy"]


def _in_top_k(ids, y_pred, k):
    """1.0 where the prediction for class ``ids`` is among the ``k`` largest (ties count as
    inside, as tf.math.in_top_k)."""
    y_pred = _core.cast(_core.convert_to_tensor(y_pred), "float32")
    classes = y_pred.shape[-1]
    target = _core.reduce_sum(_ops.one_hot(ids, classes) * y_pred, -1, True)
    above = _core.reduce_sum(_core.cast(_core.greater(y_pred, target), "float32"), -1)
    return _core.cast(_core.less(above, float(k)), "float32")


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    """Whether the one-hot target's class is among the ``k`` top predictions."""
    return _in_top_k(_core.argmax(_core.convert_to_tensor(y_true), -1), y_pred, k)


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5):
    """Whether the integer target is among the ``k`` top predictions."""
    y_true = _core.convert_to_tensor(y_true)
    y_pred = _core.convert_to_tensor(y_pred)
    if y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1:
        y_true = _core.reshape(y_true, list(y_true.shape)[:-1])
    return _in_top_k(_core.cast(y_true, "int64"), y_pred, k)


class TopKCategoricalAccuracy(MeanMetricWrapper):
    def __init__(self, k=5, name="top_k_categorical_accuracy", dtype=None):
        super().__init__(top_k_categorical_accuracy, name, dtype, k=k)


class SparseTopKCategoricalAccuracy(MeanMetricWrapper):
    def __init__(self, k=5, name="sparse_top_k_categorical_accuracy", dtype=None):
        super().__init__(sparse_top_k_categorical_accuracy, name, dtype, k=k)


class RootMeanSquaredError(Mean):
    """sqrt of the (weighted) mean of every squared error element."""

    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(name, dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = _core.cast(_core.convert_to_tensor(y_pred), self._dtype)
        y_true = _core.cast(_core.convert_to_tensor(y_true), self._dtype)
        super().update_state(_core.squared_difference(y_pred, y_true), sample_weight)

    def result(self):
        return _core.sqrt(super().result())


class _Confusion(Metric):
    """Counts of one kind of confusion-matrix cell per threshold (0.5 by default), of the
    ``top_k`` predictions and of column ``class_id`` when given (tf-keras 2.21)."""

    _CELLS = ()

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super().__init__(name, dtype)
        self.init_thresholds = thresholds
        self.top_k, self.class_id = top_k, class_id
        default = -1e10 if top_k is not None else 0.5  # tf-keras: NEG_INF with top_k
        if thresholds is not None:
            values = (list(thresholds) if isinstance(thresholds, (list, tuple))
                      else [thresholds])
            bad = [t for t in values if t is None or t < 0 or t > 1]
            if bad:
                raise ValueError("Threshold values must be in [0, 1]. Received: %s" % (bad,))
        else:
            values = [default]
        self._thresholds = values
        self.thresholds = values
        for cell in self._CELLS:
            setattr(self, cell, self.add_weight(cell, shape=(len(values),)))

    def update_state(self, y_true, y_pred, sample_weight=None):
        from mixprec.keras import _confusion

        got = _confusion.counts(y_true, y_pred, self._thresholds, list(self._CELLS),
                                sample_weight, top_k=self.top_k, class_id=self.class_id,
                                dtype=self._dtype.name)
        for name in self._CELLS:
            getattr(self, name).assign_add(got[name])

    def _ratio(self, num, other):
        num, other = num._peek(), other._peek()
        den = num + other
        out = _core.where(den > 0, num / _core.maximum(den, 1e-38), _core.fill(
            list(den.shape), 0, self._dtype))
        return out[0] if len(self._thresholds) == 1 else out

    def get_config(self):
        config = super().get_config()
        config.update(thresholds=self.init_thresholds, top_k=self.top_k,
                      class_id=self.class_id)
        return config


class Precision(_Confusion):
    """true_positives / (true_positives + false_positives) at each threshold (0.5)."""

    _CELLS = ("true_positives", "false_positives")

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        # name None: 'precision', then 'precision_1' ... (unique per process, tf-keras)
        super().__init__(thresholds, top_k, class_id, name, dtype)

    def result(self):
        return self._ratio(self.true_positives, self.false_positives)


class Recall(_Confusion):
    """true_positives / (true_positives + false_negatives) at each threshold (0.5)."""

    _CELLS = ("true_positives", "false_negatives")

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super().__init__(thresholds, top_k, class_id, name, dtype)

    def result(self):
        return self._ratio(self.true_positives, self.false_negatives)


def _cosine_similarity_metric(y_true, y_pred, axis=-1):
    return -_l.cosine_similarity(y_true, y_pred, axis)


_cosine_similarity_metric.__name__ = "cosine_similarity"


class KLDivergence(MeanMetricWrapper):
    def __init__(self, name="kullback_leibler_divergence", dtype=None):
        super().__init__(_l.kl_divergence, name, dtype)


class LogCoshError(MeanMetricWrapper):
    def __init__(self, name="logcosh", dtype=None):
        super().__init__(_l.log_cosh, name, dtype)


class MeanAbsolutePercentageError(MeanMetricWrapper):
    def __init__(self, name="mean_absolute_percentage_error", dtype=None):
        super().__init__(_l.mean_absolute_percentage_error, name, dtype)


class MeanSquaredLogarithmicError(MeanMetricWrapper):
    def __init__(self, name="mean_squared_logarithmic_error", dtype=None):
        super().__init__(_l.mean_squared_logarithmic_error, name, dtype)


class Poisson(MeanMetricWrapper):
    def __init__(self, name="poisson", dtype=None):
        super().__init__(_l.poisson, name, dtype)


class Hinge(MeanMetricWrapper):
    def __init__(self, name="hinge", dtype=None):
        super().__init__(_l.hinge, name, dtype)


class CosineSimilarity(MeanMetricWrapper):
    def __init__(self, name="cosine_similarity", dtype=None, axis=-1):
        super().__init__(_cosine_similarity_metric, name, dtype, axis=axis)


CLASSES = (RootMeanSquaredError, TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy,
           Precision, Recall, KLDivergence, LogCoshError, MeanAbsolutePercentageError,
           MeanSquaredLogarithmicError, Poisson, Hinge, CosineSimilarity)
FUNCTIONS = {"top_k_categorical_accuracy": top_k_categorical_accuracy,
             "sparse_top_k_categorical_accuracy": sparse_top_k_categorical_accuracy}
