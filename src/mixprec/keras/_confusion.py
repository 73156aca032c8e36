"""Confusion-matrix counting shared by the threshold metrics of ``tf.keras.metrics``
(Precision, Recall, TruePositives…, AUC, the "X at Y" metrics): tf-keras 2.21's rules for
shapes, weights, ``top_k``/``class_id`` and the two ways it counts (a comparison per
threshold, or buckets when the thresholds are evenly spaced). Compositions of core ops, no
Python loop over elements; it owns no variables (the metrics do)."""

from mixprec import _core, errors

TP, FP, TN, FN = "true_positives", "false_positives", "true_negatives", "false_negatives"


def _squeeze_last(x):
    return _core.reshape(x, list(x.shape)[:-1])


def prepare(y_true, y_pred, sample_weight, dtype):
    """(y_true, y_pred, sample_weight) cast to ``dtype`` with tf-keras'
    squeeze_or_expand_dimensions: a trailing axis of 1 on one side is dropped, a weight one
    rank short gets a trailing axis; shapes must then agree."""
    y_pred = _core.cast(_core.convert_to_tensor(y_pred), dtype)
    y_true = _core.cast(_core.convert_to_tensor(y_true), dtype)
    if y_pred.ndim == y_true.ndim + 1 and y_pred.shape[-1] == 1:
        y_pred = _squeeze_last(y_pred)
    elif y_true.ndim == y_pred.ndim + 1 and y_true.shape[-1] == 1:
        y_true = _squeeze_last(y_true)
    sw = None
    if sample_weight is not None:
        sw = _core.cast(_core.convert_to_tensor(sample_weight), dtype)
        if sw.ndim == y_pred.ndim + 1 and sw.shape[-1] == 1:
            sw = _squeeze_last(sw)
        elif sw.ndim == y_pred.ndim - 1 and sw.ndim > 0:
            sw = _core.reshape(sw, list(sw.shape) + [1])
    if list(y_pred.shape) != list(y_true.shape):
        raise ValueError("Shapes %s and %s are incompatible"
                         % (tuple(y_pred.shape), tuple(y_true.shape)))
    return y_true, y_pred, sw


def filter_top_k(x, k):
    """``x`` where the value is among its row's ``k`` largest (ties to the lower index, as
    tf.math.top_k), a very negative number elsewhere (tf-keras' _filter_top_k)."""
    c = x.shape[-1]
    a = _core.reshape(x, list(x.shape) + [1])         # (..., c, 1): the candidate
    b = _core.reshape(x, list(x.shape[:-1]) + [1, c])  # (..., 1, c): the others
    idx = _core.range(0, c, 1, "int32")
    before = _core.less(_core.reshape(idx, [1, c]), _core.reshape(idx, [c, 1]))  # j < i
    beats = _core.logical_or(_core.greater(b, a), _core.logical_and(_core.equal(b, a), before))
    rank = _core.reduce_sum(_core.cast(beats, "float32"), -1)
    keep = _core.cast(_core.less(rank, float(k)), x.dtype)
    return x * keep + (1.0 - keep) * -1e10


def counts(y_true, y_pred, thresholds, cells, sample_weight=None, top_k=None, class_id=None,
           multi_label=False, label_weights=None, evenly=False, dtype="float32"):
    """{cell: counts} for the asked ``cells`` (TP/FP/TN/FN), each of shape (thresholds,) —
    (thresholds, labels) with ``multi_label`` — weighted by ``sample_weight`` and (not
    multi-label) ``label_weights``. A prediction counts as positive at threshold t when it
    is > t; with ``evenly`` (thresholds evenly spaced over [0, 1], perhaps widened by an
    epsilon at the ends) predictions are clipped to [0, 1] and bucketed as tf-keras does."""
    y_true, y_pred, sw = prepare(y_true, y_pred, sample_weight, dtype)
    if top_k is not None:
        y_pred = filter_top_k(y_pred, top_k)
    if class_id is not None:
        if y_pred.ndim == 0 or not -y_pred.shape[-1] <= class_id < y_pred.shape[-1]:
            raise errors.InvalidArgumentError(
                "class_id %d is out of range for predictions of shape %s"
                % (class_id, tuple(y_pred.shape)))
        y_true = y_true[..., class_id, None]
        y_pred = y_pred[..., class_id, None]
        if sw is not None and sw.ndim == y_pred.ndim and sw.shape[-1] != 1:
            sw = sw[..., class_id, None]
    weights = None
    if sw is not None:
        weights = _core.broadcast_to(sw, list(y_pred.shape))
    if label_weights is not None and not multi_label:
        lw = _core.broadcast_to(_core.cast(label_weights, dtype), list(y_pred.shape))
        weights = lw if weights is None else weights * lw
    truth = _core.cast(_core.not_equal(y_true, 0.0), dtype)
    if not multi_label:
        y_pred, truth = _core.reshape(y_pred, [-1]), _core.reshape(truth, [-1])
        weights = None if weights is None else _core.reshape(weights, [-1])
    elif y_pred.ndim != 2:
        raise ValueError("`y_pred` must have rank 2 when `multi_label=True`. Found rank %d. "
                         "Full shape received for `y_pred`: %s" % (y_pred.ndim, tuple(y_pred.shape)))
    pos = truth if weights is None else truth * weights
    neg = (1.0 - truth) if weights is None else (1.0 - truth) * weights
    if evenly:
        tp, fp = _bucketed(y_pred, pos, neg, thresholds, dtype)
    else:
        tp, fp = _compared(y_pred, pos, neg, thresholds, dtype)
    out = {TP: tp, FP: fp}
    if TN in cells or FN in cells:
        total_pos = _core.reduce_sum(pos, 0)
        total_neg = _core.reduce_sum(neg, 0)
        out[FN] = total_pos - tp
        out[TN] = total_neg - fp
    return {c: out[c] for c in cells}


def _compared(pred, pos, neg, thresholds, dtype):
    """(tp, fp): a (thresholds, n[, labels]) comparison, summed over the examples."""
    t = len(thresholds)
    thr = _core.constant(list(thresholds), dtype)
    lead = [1] * pred.ndim
    above = _core.cast(_core.greater(_core.reshape(pred, [1] + list(pred.shape)),
                                     _core.reshape(thr, [t] + lead)), dtype)
    pos = _core.reshape(pos, [1] + list(pos.shape))
    neg = _core.reshape(neg, [1] + list(neg.shape))
    return _core.reduce_sum(above * pos, 1), _core.reduce_sum(above * neg, 1)


def _bucketed(pred, pos, neg, thresholds, dtype):
    """(tp, fp) for evenly spaced thresholds: bucket = ceil(p * (T - 1)) - 1 (p clipped to
    [0, 1]; below 0 → 0 when the first threshold is below 0, else dropped), summed per
    bucket, then a reversed running sum (threshold i counts the buckets >= i)."""
    t = len(thresholds)
    with_eps = thresholds[0] < 0.0 or thresholds[-1] > 1.0
    p = _core.minimum(_core.maximum(pred, 0.0), 1.0)
    bucket = _core.ceil(p * float(t - 1)) - 1.0
    if with_eps:
        bucket = _core.relu(bucket)
    else:  # a bucket of -1 counts nowhere: weight 0 at index 0
        keep = _core.cast(_core.greater_equal(bucket, 0.0), dtype)
        pos, neg, bucket = pos * keep, neg * keep, _core.relu(bucket)
    idx = _core.cast(bucket, "int32")
    if pred.ndim == 1:
        tp_b = _core.gather_grad(pos, idx, 0, t)
        fp_b = _core.gather_grad(neg, idx, 0, t)
    else:  # multi-label: (n, labels) → per label, as rows of a (labels * T) sum
        n, labels = pred.shape
        offs = _core.reshape(_core.range(0, labels * t, t, "int32"), [1, labels])
        flat = _core.reshape(idx + offs, [-1])
        tp_b = _core.reshape(_core.gather_grad(_core.reshape(pos, [-1]), flat, 0, labels * t),
                             [labels, t])
        fp_b = _core.reshape(_core.gather_grad(_core.reshape(neg, [-1]), flat, 0, labels * t),
                             [labels, t])
        tp_b, fp_b = _core.transpose(tp_b, [1, 0]), _core.transpose(fp_b, [1, 0])
    from mixprec._array_ops import cumsum
    return cumsum(tp_b, axis=0, reverse=True), cumsum(fp_b, axis=0, reverse=True)


def divide_no_nan(a, b):
    """a / b, 0 where b == 0 (the core's DivNoNan, as tf-keras' metrics use it)."""
    return _core.div_no_nan(a, b)
