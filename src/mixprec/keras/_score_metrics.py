"""Score metrics of ``tf.keras.metrics`` that keep per-class sums: FBetaScore and F1Score,
R2Score, the IoU family (IoU, MeanIoU, BinaryIoU, OneHotIoU, OneHotMeanIoU), plus
MeanRelativeError, MeanTensor, SquaredHinge and CategoricalHinge — tf-keras 2.21's
formulas, names, configs and errors. Compositions of core ops; exported by
``mixprec.keras.metrics``."""

import warnings

from mixprec import _core, errors
from mixprec.keras import _confusion as _cm
from mixprec.keras import _margin_losses as _ml
from mixprec.keras.metrics import Mean, MeanMetricWrapper, Metric

__all__ = ["FBetaScore", "F1Score", "R2Score", "IoU", "MeanIoU", "BinaryIoU", "OneHotIoU",
           "OneHotMeanIoU", "MeanRelativeError", "MeanTensor", "SquaredHinge",
           "CategoricalHinge"]


def _tensor(x, dtype):
    return _core.cast(_core.convert_to_tensor(x), dtype)


class FBetaScore(Metric):
    """(1 + beta^2) * precision * recall / (beta^2 * precision + recall), per class or
    averaged ('micro', 'macro', 'weighted')."""

    def __init__(self, average=None, beta=1.0, threshold=None, name="fbeta_score", dtype=None):
        super().__init__(name, dtype)
        if average not in (None, "micro", "macro", "weighted"):
            raise ValueError("Invalid `average` argument value. Expected one of: "
                             "{None, 'micro', 'macro', 'weighted'}. Received: average=%s"
                             % (average,))
        if not isinstance(beta, float):
            raise ValueError("Invalid `beta` argument value. It should be a Python float. "
                             "Received: beta=%s of type '%s'" % (beta, type(beta)))
        if beta <= 0.0:
            raise ValueError("Invalid `beta` argument value. It should be > 0. Received: "
                             "beta=%s" % (beta,))
        if threshold is not None:
            if not isinstance(threshold, float):
                raise ValueError("Invalid `threshold` argument value. It should be a Python "
                                 "float. Received: threshold=%s of type '%s'"
                                 % (threshold, type(threshold)))
            if threshold > 1.0 or threshold <= 0.0:
                raise ValueError("Invalid `threshold` argument value. It should verify "
                                 "0 < threshold <= 1. Received: threshold=%s" % (threshold,))
        self.average, self.beta, self.threshold = average, beta, threshold
        self.axis = None if average == "micro" else 0
        self.built = False

    def build(self, y_true_shape, y_pred_shape):
        if len(y_pred_shape) != 2 or len(y_true_shape) != 2:
            raise ValueError("FBetaScore expects 2D inputs with shape (batch_size, output_dim)."
                             " Received input shapes: y_pred.shape=%s and y_true.shape=%s."
                             % (tuple(y_pred_shape), tuple(y_true_shape)))
        shape = () if self.average == "micro" else (y_pred_shape[-1],)
        for name in ("true_positives", "false_positives", "false_negatives",
                     "intermediate_weights"):
            setattr(self, name, self.add_weight(name, shape=shape))
        self.built = True

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = _tensor(y_true, self._dtype), _tensor(y_pred, self._dtype)
        if not self.built:
            self.build(y_true.shape, y_pred.shape)
        if self.threshold is None:
            top = _core.reduce_max(y_pred, -1, True)
            pred = _core.logical_and(_core.greater_equal(y_pred, top),
                                     _core.greater(_core.abs(y_pred), 1e-9))
        else:
            pred = _core.greater(y_pred, self.threshold)
        pred = _core.cast(pred, self._dtype)
        sw = None
        if sample_weight is not None:
            sw = _tensor(sample_weight, self._dtype)
            sw = _core.reshape(sw, list(sw.shape) + [1])

        def wsum(v):
            if sw is not None:
                v = v * sw
            return _core.reduce_sum(v, self.axis) if self.axis is not None else \
                _core.reduce_sum(v)

        self.true_positives.assign_add(wsum(pred * y_true))
        self.false_positives.assign_add(wsum(pred * (1.0 - y_true)))
        self.false_negatives.assign_add(wsum((1.0 - pred) * y_true))
        self.intermediate_weights.assign_add(wsum(y_true))

    def result(self):
        if not self.built:
            raise ValueError("FBetaScore has no state yet: call update_state first")
        tp, fp = self.true_positives._peek(), self.false_positives._peek()
        fn = self.false_negatives._peek()
        precision = _cm.divide_no_nan(tp, tp + fp)
        recall = _cm.divide_no_nan(tp, tp + fn)
        b2 = self.beta * self.beta
        f = _cm.divide_no_nan(precision * recall, b2 * precision + recall) * (1.0 + b2)
        if self.average == "weighted":
            w = self.intermediate_weights._peek()
            return _core.reduce_sum(f * _cm.divide_no_nan(w, _core.reduce_sum(w)))
        if self.average is not None:
            return _core.reduce_mean(f)
        return f

    def reset_state(self):
        if self.built:
            super().reset_state()

    def get_config(self):
        return {**super().get_config(), "average": self.average, "beta": self.beta,
                "threshold": self.threshold}


class F1Score(FBetaScore):
    def __init__(self, average=None, threshold=None, name="f1_score", dtype=None):
        super().__init__(average=average, beta=1.0, threshold=threshold, name=name,
                         dtype=dtype)

    def get_config(self):
        config = super().get_config()
        del config["beta"]
        return config


class R2Score(Metric):
    """The coefficient of determination per output column, then aggregated; adjusted for
    ``num_regressors`` when given."""

    def __init__(self, class_aggregation="uniform_average", num_regressors=0,
                 name="r2_score", dtype=None):
        super().__init__(name, dtype)
        valid = (None, "uniform_average", "variance_weighted_average")
        if class_aggregation not in valid:
            raise ValueError("Invalid value for argument `class_aggregation`. Expected one of "
                             "%s. Received: class_aggregation=%s" % (valid, class_aggregation))
        if num_regressors < 0:
            raise ValueError("Invalid value for argument `num_regressors`. Expected a value "
                             ">= 0. Received: num_regressors=%s" % (num_regressors,))
        self.class_aggregation, self.num_regressors = class_aggregation, num_regressors
        self.num_samples = self.add_weight("num_samples", dtype="int32")
        self.built = False

    def build(self, y_true_shape, y_pred_shape):
        if len(y_pred_shape) != 2 or len(y_true_shape) != 2:
            raise ValueError("R2Score expects 2D inputs with shape (batch_size, output_dim). "
                             "Received input shapes: y_pred.shape=%s and y_true.shape=%s."
                             % (tuple(y_pred_shape), tuple(y_true_shape)))
        n = y_pred_shape[-1]
        self.squared_sum = self.add_weight("squared_sum", shape=(n,))
        self.sum = self.add_weight("sum", shape=(n,))
        self.total_mse = self.add_weight("residual", shape=(n,))
        self.count = self.add_weight("count", shape=(n,))
        self.built = True

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = _tensor(y_true, self._dtype), _tensor(y_pred, self._dtype)
        if not self.built:
            self.build(y_true.shape, y_pred.shape)
        sw = _core.fill([], 1, self._dtype) if sample_weight is None else \
            _tensor(sample_weight, self._dtype)
        if sw.ndim == 1:
            sw = _core.reshape(sw, list(sw.shape) + [1])
        sw = _core.broadcast_to(sw, list(y_true.shape))
        wy = y_true * sw
        self.sum.assign_add(_core.reduce_sum(wy, 0))
        self.squared_sum.assign_add(_core.reduce_sum(y_true * wy, 0))
        self.total_mse.assign_add(_core.reduce_sum(_core.square(y_true - y_pred) * sw, 0))
        self.count.assign_add(_core.reduce_sum(sw, 0))
        self.num_samples.assign_add(_core.constant(y_true._numel, "int32"))

    def result(self):
        total_sum, count = self.sum._peek(), self.count._peek()
        mean = total_sum / count
        total = self.squared_sum._peek() - total_sum * mean
        raw = 1.0 - self.total_mse._peek() / total
        raw = _core.where(_core.is_inf(raw), _core.fill([], 0, raw.dtype), raw)
        if self.class_aggregation == "uniform_average":
            r2 = _core.reduce_mean(raw)
        elif self.class_aggregation == "variance_weighted_average":
            r2 = _core.reduce_sum(total * raw) / _core.reduce_sum(total)
        else:
            r2 = raw
        if self.num_regressors != 0:
            n = int(self.num_samples.numpy())
            if self.num_regressors > n - 1:
                warnings.warn("More independent predictors than datapoints in adjusted R2 "
                              "score. Falling back to standard R2 score.", stacklevel=2)
            elif self.num_regressors == n - 1:
                warnings.warn("Division by zero in Adjusted R2 score. Falling back to "
                              "standard R2 score.", stacklevel=2)
            else:
                num = (1.0 - r2) * float(n - 1)
                r2 = 1.0 - num / float(n - self.num_regressors - 1)
        return r2

    def reset_state(self):
        for v in self._variables:
            v.assign(_core.fill(list(v.shape), 0, v.true_dtype))

    def get_config(self):
        return {**super().get_config(), "class_aggregation": self.class_aggregation,
                "num_regressors": self.num_regressors}


class _IoUBase(Metric):
    """A (num_classes, num_classes) confusion matrix (rows: labels, columns: predictions),
    weighted; labels equal to ``ignore_class`` are left out."""

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None,
                 sparse_y_true=True, sparse_y_pred=True, axis=-1):
        super().__init__(name, dtype)
        self.num_classes, self.ignore_class = num_classes, ignore_class
        self.sparse_y_true, self.sparse_y_pred, self.axis = sparse_y_true, sparse_y_pred, axis
        self.total_cm = self.add_weight("total_confusion_matrix",
                                        shape=(num_classes, num_classes))

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = _core.convert_to_tensor(y_true), _core.convert_to_tensor(y_pred)
        if not self.sparse_y_true:
            y_true = _core.argmax(y_true, self.axis)
        if not self.sparse_y_pred:
            y_pred = _core.argmax(y_pred, self.axis)
        # tf-keras: both cast to the metric's dtype, flattened, then to int64 (truncation)
        y_true = _core.reshape(_core.cast(y_true, self._dtype), [-1])
        y_pred = _core.reshape(_core.cast(y_pred, self._dtype), [-1])
        w = None
        if sample_weight is not None:
            w = _core.reshape(_tensor(sample_weight, self._dtype), [-1])
        if self.ignore_class is not None:
            keep = _core.cast(_core.not_equal(y_true, float(self.ignore_class)), self._dtype)
            w = keep if w is None else w * keep
            y_true = y_true * keep  # an ignored label may be out of range: make it class 0
            y_pred = y_pred * keep
        labels, preds = _core.cast(y_true, "int64"), _core.cast(y_pred, "int64")
        if list(labels.shape) != list(preds.shape):
            raise ValueError("Shapes %s and %s are incompatible"
                             % (tuple(labels.shape), tuple(preds.shape)))
        if w is not None and list(w.shape) != list(labels.shape):
            w = _core.broadcast_to(w, list(labels.shape))
        self._check_range(labels, "labels")
        self._check_range(preds, "predictions")
        n = self.num_classes
        rows = _core.one_hot(labels, n, dtype=self._dtype)            # (m, n)
        cols = _core.one_hot(preds, n, dtype=self._dtype)
        if w is not None:
            rows = rows * _core.reshape(w, [-1, 1])
        self.total_cm.assign_add(_core.matmul(_core.transpose(rows, [1, 0]), cols))

    def _check_range(self, ids, what):
        """tf.math.confusion_matrix's check: ids in [0, num_classes)."""
        if ids._numel == 0:
            return
        from mixprec._function import tracing
        if tracing():  # the one-hot rows of an out-of-range id are zero (not counted)
            return
        low = int(_core.reduce_min(ids).numpy())
        high = int(_core.reduce_max(ids).numpy())
        if low < 0:
            raise errors.InvalidArgumentError("`%s` contains negative values. Condition x >= "
                                              "0 did not hold element-wise" % what)
        if high >= self.num_classes:
            raise errors.InvalidArgumentError("`%s` out of bound. Condition x < y did not hold "
                                              "element-wise: y = %d" % (what, self.num_classes))

    def reset_state(self):
        super().reset_state()


class IoU(_IoUBase):
    """The mean IoU = TP / (TP + FP + FN) over ``target_class_ids`` (classes with no
    examples and no predictions left out of the mean)."""

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None, ignore_class=None,
                 sparse_y_true=True, sparse_y_pred=True, axis=-1):
        super().__init__(num_classes, name, dtype, ignore_class, sparse_y_true, sparse_y_pred,
                         axis)
        if max(target_class_ids) >= num_classes:
            raise ValueError("Target class id %s is out of range, which is [0, %s)."
                             % (max(target_class_ids), num_classes))
        self.target_class_ids = list(target_class_ids)

    def result(self):
        cm = self.total_cm._peek()
        sum_over_row = _core.reduce_sum(cm, 0)
        sum_over_col = _core.reduce_sum(cm, 1)
        eye = _core.one_hot(_core.range(0, self.num_classes, 1, "int32"), self.num_classes,
                            dtype=cm.dtype)
        tp = _core.reduce_sum(cm * eye, 1)
        den = sum_over_row + sum_over_col - tp
        ids = _core.constant(self.target_class_ids, "int32")
        tp, den = _core.gather(tp, ids), _core.gather(den, ids)
        valid = _core.reduce_sum(_core.cast(_core.not_equal(den, 0.0), cm.dtype))
        return _cm.divide_no_nan(_core.reduce_sum(_cm.divide_no_nan(tp, den)), valid)

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes,
                "target_class_ids": self.target_class_ids, "ignore_class": self.ignore_class,
                "sparse_y_true": self.sparse_y_true, "sparse_y_pred": self.sparse_y_pred,
                "axis": self.axis}


class BinaryIoU(IoU):
    """IoU of two classes, a prediction >= ``threshold`` being class 1."""

    def __init__(self, target_class_ids=(0, 1), threshold=0.5, name=None, dtype=None):
        super().__init__(2, target_class_ids, name=name, dtype=dtype)
        self.threshold = threshold

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = _tensor(y_pred, self._dtype)
        y_pred = _core.cast(_core.greater_equal(y_pred, float(self.threshold)), self._dtype)
        super().update_state(y_true, y_pred, sample_weight)

    def get_config(self):
        return {"target_class_ids": self.target_class_ids, "threshold": self.threshold,
                "name": self.name, "dtype": self.dtype}


class MeanIoU(IoU):
    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None,
                 sparse_y_true=True, sparse_y_pred=True, axis=-1):
        super().__init__(num_classes, list(range(num_classes)), name=name, dtype=dtype,
                         ignore_class=ignore_class, sparse_y_true=sparse_y_true,
                         sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self):
        return {"num_classes": self.num_classes, "name": self.name, "dtype": self.dtype,
                "ignore_class": self.ignore_class, "sparse_y_true": self.sparse_y_true,
                "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}


class OneHotIoU(IoU):
    def __init__(self, num_classes, target_class_ids, name=None, dtype=None, ignore_class=None,
                 sparse_y_pred=False, axis=-1):
        super().__init__(num_classes, target_class_ids, name=name, dtype=dtype,
                         ignore_class=ignore_class, sparse_y_true=False,
                         sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self):
        return {"num_classes": self.num_classes, "target_class_ids": self.target_class_ids,
                "name": self.name, "dtype": self.dtype, "ignore_class": self.ignore_class,
                "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}


class OneHotMeanIoU(MeanIoU):
    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None,
                 sparse_y_pred=False, axis=-1):
        super().__init__(num_classes, name=name, dtype=dtype, ignore_class=ignore_class,
                         sparse_y_true=False, sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self):
        return {"num_classes": self.num_classes, "name": self.name, "dtype": self.dtype,
                "ignore_class": self.ignore_class, "sparse_y_pred": self.sparse_y_pred,
                "axis": self.axis}


class MeanRelativeError(Mean):
    """The mean of |y_true - y_pred| / normalizer (0 where the normalizer is 0)."""

    def __init__(self, normalizer, name=None, dtype=None):
        super().__init__(name, dtype)
        self.normalizer = _tensor(normalizer, self._dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred, _ = _cm.prepare(y_true, y_pred, None, self._dtype)
        norm = self.normalizer
        if norm.ndim == y_pred.ndim + 1 and norm.shape[-1] == 1:
            norm = _core.reshape(norm, list(norm.shape)[:-1])
        rel = _cm.divide_no_nan(_core.abs(y_true - y_pred), norm)
        super().update_state(rel, sample_weight)

    def get_config(self):
        return {**super().get_config(), "normalizer": self.normalizer.numpy()}


class MeanTensor(Metric):
    """The element-wise (weighted) mean of the tensors it is given, of a shape fixed by the
    first update (or ``shape``)."""

    def __init__(self, name="mean_tensor", dtype=None, shape=None):
        super().__init__(name, dtype)
        self._shape = None
        self._built = False
        if shape is not None:
            self._build(tuple(shape))

    def _build(self, shape):
        self._shape = tuple(shape)
        self._total = self.add_weight("total", shape=self._shape)
        self._count = self.add_weight("count", shape=self._shape)
        self._built = True

    @property
    def total(self):
        return self._total if self._built else None

    @property
    def count(self):
        return self._count if self._built else None

    def update_state(self, values, sample_weight=None):
        values = _tensor(values, self._dtype)
        if not self._built:
            self._build(tuple(values.shape))
        elif tuple(values.shape) != self._shape:
            raise ValueError("MeanTensor input values must always have the same shape. "
                             "Expected shape (set during the first call): %s. Got: %s."
                             % (self._shape, tuple(values.shape)))
        ones = _core.fill(list(values.shape), 1, self._dtype)
        if sample_weight is not None:
            sw = _core.broadcast_to(_tensor(sample_weight, self._dtype), list(values.shape))
            ones = ones * sw
            values = values * sw
        self._total.assign_add(values)
        self._count.assign_add(ones)

    def result(self):
        if not self._built:
            raise ValueError("MeanTensor does not have any value yet. Please call the "
                             "MeanTensor instance or use `.update_state(value)` before "
                             "retrieving the result.")
        return _cm.divide_no_nan(self._total._peek(), self._count._peek())

    def reset_state(self):
        if self._built:
            super().reset_state()



class SquaredHinge(MeanMetricWrapper):
    def __init__(self, name="squared_hinge", dtype=None):
        super().__init__(_ml.squared_hinge, name, dtype)


class CategoricalHinge(MeanMetricWrapper):
    def __init__(self, name="categorical_hinge", dtype=None):
        super().__init__(_ml.categorical_hinge, name, dtype)


CLASSES = (FBetaScore, F1Score, R2Score, IoU, MeanIoU, BinaryIoU, OneHotIoU, OneHotMeanIoU,
           MeanRelativeError, MeanTensor, SquaredHinge, CategoricalHinge)
