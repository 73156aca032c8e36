"""The threshold metrics of ``tf.keras.metrics`` beyond Precision and Recall: TruePositives,
FalsePositives, TrueNegatives, FalseNegatives, AUC (ROC / PR / PR_GAIN, interpolation /
minoring / majoring, multi-label, label weights, from_logits), PrecisionAtRecall,
RecallAtPrecision, SensitivityAtSpecificity and SpecificityAtSensitivity, with tf-keras
2.21's names, defaults, thresholds, configs and errors. Counting is _confusion.counts; the
variables are the metrics'."""

import math

from mixprec import _core
from mixprec.keras import _confusion as _cm
from mixprec.keras.metrics import Metric

__all__ = ["TruePositives", "FalsePositives", "TrueNegatives", "FalseNegatives", "AUC",
           "PrecisionAtRecall", "RecallAtPrecision", "SensitivityAtSpecificity",
           "SpecificityAtSensitivity"]

_EPSILON = 1e-7  # tf-keras backend.epsilon(), read when a metric is built as there


def _threshold_list(thresholds, default=0.5):
    if thresholds is not None:
        values = list(thresholds) if isinstance(thresholds, (list, tuple)) else [thresholds]
        bad = [t for t in values if t is None or t < 0 or t > 1]
        if bad:
            raise ValueError("Threshold values must be in [0, 1]. Received: %s" % (bad,))
        return values
    return [default]


def _evenly(values):
    """tf-keras' is_evenly_distributed_thresholds: at least 3 values, equal steps (to 1e-7
    relative), starting at 0."""
    n = len(values)
    if n < 3:
        return False
    step = 1.0 / (n - 1)
    return all(abs(v - i * step) <= 1e-7 * max(1.0, abs(i * step)) for i, v in enumerate(values))


class _ConditionCount(Metric):
    """One confusion-matrix cell per threshold (0.5 by default); a scalar result for one
    threshold given as a number (or none), a vector for a list."""

    _CELL = None

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__(name, dtype)
        self.init_thresholds = thresholds
        self.thresholds = _threshold_list(thresholds)
        self._thresholds_distributed_evenly = _evenly(self.thresholds)
        self.accumulator = self.add_weight("accumulator", shape=(len(self.thresholds),))

    def update_state(self, y_true, y_pred, sample_weight=None):
        got = _cm.counts(y_true, y_pred, self.thresholds, [self._CELL], sample_weight,
                         dtype=self._dtype.name, evenly=self._thresholds_distributed_evenly)
        self.accumulator.assign_add(got[self._CELL])

    def result(self):
        value = self.accumulator._peek()
        if len(self.thresholds) == 1:
            return value[0]
        return _core.identity(value)

    def get_config(self):
        return {**super().get_config(), "thresholds": self.init_thresholds}


class TruePositives(_ConditionCount):
    _CELL = _cm.TP


class FalsePositives(_ConditionCount):
    _CELL = _cm.FP


class TrueNegatives(_ConditionCount):
    _CELL = _cm.TN


class FalseNegatives(_ConditionCount):
    _CELL = _cm.FN


class _AtBase(Metric):
    """tf-keras' SensitivitySpecificityBase: counts at ``num_thresholds`` evenly spaced
    thresholds over [0, 1] (0.5 alone for one), the best dependent rate among the thresholds
    whose constrained rate reaches ``value``."""

    _VALUE_NAME = "value"

    def __init__(self, value, num_thresholds=200, class_id=None, name=None, dtype=None):
        if not isinstance(num_thresholds, int) or num_thresholds <= 0:
            raise ValueError("Argument `num_thresholds` must be an integer > 0. "
                             "Received: num_thresholds=%s" % (num_thresholds,))
        super().__init__(name, dtype)
        self.value = value
        self.class_id = class_id
        self.num_thresholds = num_thresholds
        if num_thresholds == 1:
            self.thresholds = [0.5]
            self._thresholds_distributed_evenly = False
        else:
            inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            self.thresholds = [0.0] + inner + [1.0]
            self._thresholds_distributed_evenly = True
        for cell in (_cm.TP, _cm.TN, _cm.FP, _cm.FN):
            setattr(self, cell, self.add_weight(cell, shape=(num_thresholds,)))

    def update_state(self, y_true, y_pred, sample_weight=None):
        cells = (_cm.TP, _cm.TN, _cm.FP, _cm.FN)
        got = _cm.counts(y_true, y_pred, self.thresholds, cells, sample_weight,
                         class_id=self.class_id, dtype=self._dtype.name,
                         evenly=self._thresholds_distributed_evenly)
        for cell in cells:
            getattr(self, cell).assign_add(got[cell])

    def _rates(self):
        tp, tn = self.true_positives._peek(), self.true_negatives._peek()
        fp, fn = self.false_positives._peek(), self.false_negatives._peek()
        return {"recall": _cm.divide_no_nan(tp, tp + fn),
                "precision": _cm.divide_no_nan(tp, tp + fp),
                "specificity": _cm.divide_no_nan(tn, tn + fp)}

    def _max_under_constraint(self, constrained, dependent):
        """max(dependent where constrained >= value), 0 when no threshold qualifies."""
        ok = _core.greater_equal(constrained, float(self.value))
        low = _core.fill([], -math.inf, dependent.dtype)
        best = _core.reduce_max(_core.where(ok, dependent, low))
        return _core.where(_core.reduce_any(ok), best, _core.fill([], 0, dependent.dtype))

    def get_config(self):
        return {**super().get_config(), "class_id": self.class_id,
                "num_thresholds": self.num_thresholds, self._VALUE_NAME: self.value}


def _check_unit(value, arg):
    if value < 0 or value > 1:
        raise ValueError("Argument `%s` must be in the range [0, 1]. Received: %s=%s"
                         % (arg, arg, value))


class SensitivityAtSpecificity(_AtBase):
    _VALUE_NAME = "specificity"

    def __init__(self, specificity, num_thresholds=200, class_id=None, name=None, dtype=None):
        _check_unit(specificity, "specificity")
        self.specificity = specificity
        super().__init__(specificity, num_thresholds, class_id, name, dtype)

    def result(self):
        r = self._rates()
        return self._max_under_constraint(r["specificity"], r["recall"])


class SpecificityAtSensitivity(_AtBase):
    _VALUE_NAME = "sensitivity"

    def __init__(self, sensitivity, num_thresholds=200, class_id=None, name=None, dtype=None):
        _check_unit(sensitivity, "sensitivity")
        self.sensitivity = sensitivity
        super().__init__(sensitivity, num_thresholds, class_id, name, dtype)

    def result(self):
        r = self._rates()
        return self._max_under_constraint(r["recall"], r["specificity"])


class PrecisionAtRecall(_AtBase):
    _VALUE_NAME = "recall"

    def __init__(self, recall, num_thresholds=200, class_id=None, name=None, dtype=None):
        _check_unit(recall, "recall")
        self.recall = recall
        super().__init__(recall, num_thresholds, class_id, name, dtype)

    def result(self):
        r = self._rates()
        return self._max_under_constraint(r["recall"], r["precision"])


class RecallAtPrecision(_AtBase):
    _VALUE_NAME = "precision"

    def __init__(self, precision, num_thresholds=200, class_id=None, name=None, dtype=None):
        _check_unit(precision, "precision")
        self.precision = precision
        super().__init__(precision, num_thresholds, class_id, name, dtype)

    def result(self):
        r = self._rates()
        return self._max_under_constraint(r["precision"], r["recall"])


_CURVES = ("ROC", "PR", "PR_GAIN")
_SUMMATIONS = ("interpolation", "minoring", "majoring")


class AUC(Metric):
    """Area under the ROC or PR curve by a Riemann sum over ``num_thresholds`` thresholds
    (tf-keras 2.21: thresholds 0 - eps, i/(T-1) ..., 1 + eps; PR with interpolation uses
    the Davis & Goadrich closed form)."""

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation",
                 name=None, dtype=None, thresholds=None, multi_label=False, num_labels=None,
                 label_weights=None, from_logits=False):
        self._init_from_thresholds = thresholds is not None
        if thresholds is not None:
            self.num_thresholds = len(thresholds) + 2
            inner = sorted(thresholds)
            self._thresholds_distributed_evenly = _evenly([0.0] + inner + [1.0])
        else:
            if num_thresholds <= 1:
                raise ValueError("Argument `num_thresholds` must be an integer > 1. "
                                 "Received: num_thresholds=%s" % (num_thresholds,))
            self.num_thresholds = num_thresholds
            inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            self._thresholds_distributed_evenly = True
        self._thresholds = [0.0 - _EPSILON] + list(inner) + [1.0 + _EPSILON]
        curve_key = curve.upper() if isinstance(curve, str) else curve
        if curve_key in ("PR_GAIN", "PRGAIN"):
            curve_key = "PR_GAIN"
        if curve_key not in _CURVES:
            raise ValueError('Invalid AUC curve value: "%s". Expected values are '
                             '["PR", "ROC", "PR_GAIN"]' % (curve,))
        method = summation_method.lower() if isinstance(summation_method, str) else None
        if method not in _SUMMATIONS:
            raise ValueError('Invalid AUC summation method value: "%s". Expected values are '
                             '["interpolation", "majoring", "minoring"]' % (summation_method,))
        self.curve, self.summation_method = curve_key, method
        super().__init__(name, dtype)
        self.multi_label = multi_label
        self.num_labels = num_labels
        if label_weights is not None:
            label_weights = _core.cast(_core.convert_to_tensor(label_weights), self._dtype)
            if bool(_core.reduce_any(_core.less(label_weights, 0.0))):
                from mixprec import errors
                raise errors.InvalidArgumentError(
                    "All values of `label_weights` must be non-negative.")
        self.label_weights = label_weights
        self._from_logits = from_logits
        self._built = False
        if multi_label:
            if num_labels:
                self._build(num_labels)
        else:
            if num_labels:
                raise ValueError("`num_labels` is needed only when `multi_label` is True.")
            self._build(None)

    @property
    def thresholds(self):
        return list(self._thresholds)

    def _build(self, labels):
        shape = (self.num_thresholds,) if labels is None else (self.num_thresholds, labels)
        self._num_labels = labels
        for cell in (_cm.TP, _cm.TN, _cm.FP, _cm.FN):
            setattr(self, cell, self.add_weight(cell, shape=shape))
        self._built = True

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = _core.convert_to_tensor(y_pred)
        if not self._built:
            if y_pred.ndim != 2:
                raise ValueError("`y_pred` must have rank 2 when `multi_label=True`. Found "
                                 "rank %d. Full shape received for `y_pred`: %s"
                                 % (y_pred.ndim, tuple(y_pred.shape)))
            self._build(y_pred.shape[1])
        if self.multi_label and y_pred.ndim == 2 and y_pred.shape[1] != self._num_labels:
            from mixprec import errors
            raise errors.InvalidArgumentError("Number of labels is not consistent.")
        if self._from_logits:
            y_pred = _core.sigmoid(_core.cast(y_pred, self._dtype))
        cells = (_cm.TP, _cm.TN, _cm.FP, _cm.FN)
        got = _cm.counts(y_true, y_pred, self._thresholds, cells, sample_weight,
                         multi_label=self.multi_label,
                         label_weights=None if self.multi_label else self.label_weights,
                         evenly=self._thresholds_distributed_evenly, dtype=self._dtype.name)
        for cell in cells:
            getattr(self, cell).assign_add(got[cell])

    def _by_label(self, values):
        """The sum over thresholds already taken: one number per label → their (weighted)
        mean."""
        if self.label_weights is None:
            return _core.reduce_mean(values)
        lw = self.label_weights
        return _cm.divide_no_nan(_core.reduce_sum(values * lw), _core.reduce_sum(lw))

    def _interpolate_pr_auc(self, tp, fp, fn):
        t = self.num_thresholds
        dtp = tp[:t - 1] - tp[1:]
        p = tp + fp
        dp = p[:t - 1] - p[1:]
        slope = _cm.divide_no_nan(dtp, _core.relu(dp))
        intercept = tp[1:] - slope * p[1:]
        both = _core.logical_and(_core.greater(p[:t - 1], 0.0), _core.greater(p[1:], 0.0))
        ratio = _core.where(both, _cm.divide_no_nan(p[:t - 1], _core.relu(p[1:])),
                            _core.fill(list(p[1:].shape), 1, p.dtype))
        inc = _cm.divide_no_nan(slope * (dtp + intercept * _core.log(ratio)),
                                _core.relu(tp[1:] + fn[1:]))
        if self.multi_label:
            return self._by_label(_core.reduce_sum(inc, 0))
        return _core.reduce_sum(inc)

    def result(self):
        tp, fp = self.true_positives._peek(), self.false_positives._peek()
        tn, fn = self.true_negatives._peek(), self.false_negatives._peek()
        if self.curve == "PR" and self.summation_method == "interpolation":
            return self._interpolate_pr_auc(tp, fp, fn)
        recall = _cm.divide_no_nan(tp, tp + fn)
        if self.curve == "ROC":
            x, y = _cm.divide_no_nan(fp, fp + tn), recall
        elif self.curve == "PR":
            x, y = recall, _cm.divide_no_nan(tp, tp + fp)
        else:  # PR_GAIN
            scale = _cm.divide_no_nan(tp + fn, fp + tn)
            rg = 1.0 - scale * _cm.divide_no_nan(fn, tp)
            pg = 1.0 - scale * _cm.divide_no_nan(fp, tp)
            no_tp = _core.equal(tp, 0.0)
            rg = _core.relu(_core.where(no_tp, _core.fill([], 0, rg.dtype), rg))
            pg = _core.where(no_tp, _core.fill([], 1, pg.dtype), pg)
            x, y = rg, pg
        t = self.num_thresholds
        if self.summation_method == "interpolation":
            heights = (y[:t - 1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = _core.minimum(y[:t - 1], y[1:])
        else:
            heights = _core.maximum(y[:t - 1], y[1:])
        terms = (x[:t - 1] - x[1:]) * heights
        if self.multi_label:
            return self._by_label(_core.reduce_sum(terms, 0))
        return _core.reduce_sum(terms)

    def reset_state(self):
        if self._built:
            super().reset_state()

    def get_config(self):
        lw = self.label_weights
        config = {
            "num_thresholds": self.num_thresholds, "curve": self.curve,
            "summation_method": self.summation_method, "multi_label": self.multi_label,
            "num_labels": self.num_labels,
            "label_weights": None if lw is None else lw.numpy(),
            "from_logits": self._from_logits}
        if self._init_from_thresholds:
            config["thresholds"] = self.thresholds[1:-1]
        return {**super().get_config(), **config}


CLASSES = (TruePositives, FalsePositives, TrueNegatives, FalseNegatives, AUC,
           PrecisionAtRecall, RecallAtPrecision, SensitivityAtSpecificity,
           SpecificityAtSensitivity)
