"""``fit(class_weight=...)`` and ``train_on_batch(class_weight=...)``: tf-keras' rule for
turning a {class index: weight} dict into per-sample weights (the class of a one-hot target
is its argmax, of an integer target the value itself), multiplied into any sample weights.
Host-side bookkeeping on a batch's targets (one NumPy lookup per batch); no tensor math."""

import numpy as np

from mixprec import _core, _nest

__all__ = ["table", "apply"]


def table(class_weight):
    """The weights indexed by class id; checks the keys are 0 .. n-1 (tf-keras)."""
    if not isinstance(class_weight, dict):
        raise ValueError("`class_weight` should be a dict mapping class indices to weights, "
                         "got %r" % (class_weight,))
    ids = sorted(class_weight)
    if ids != list(range(len(ids))):
        raise ValueError("Expected `class_weight` to be a dict with keys from 0 to one less "
                         "than the number of classes, found %s" % (class_weight,))
    return np.asarray([class_weight[i] for i in ids])


def _host(v):
    return v.numpy() if isinstance(v, (_core.Tensor, _core.Variable)) else np.asarray(v)


def apply(weights, y, sample_weight):
    """The batch's sample weights with the class weights of its targets ``y`` folded in."""
    if y is None:
        raise ValueError("`class_weight` needs targets `y` to look the classes up in.")
    if len(_nest.flatten(y)) != 1:
        raise ValueError("`class_weight` is only supported for Models with a single output.")
    y = _host(_nest.flatten(y)[0])
    if y.ndim > 2:
        raise ValueError("`class_weight` not supported for 3+ dimensional targets.")
    if y.ndim == 2 and y.shape[1] > 1:
        ids = np.argmax(y, axis=1)
    else:
        ids = y.reshape(-1).astype(np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= len(weights)):
        from mixprec import errors

        raise errors.InvalidArgumentError(
            "indices[%d] = %d is not in [0, %d): a target's class has no entry in "
            "`class_weight`" % (int(np.argmax((ids < 0) | (ids >= len(weights)))),
                                int(ids[(ids < 0) | (ids >= len(weights))][0]), len(weights)))
    per_sample = weights[ids]
    if sample_weight is None:
        return per_sample
    return _host(sample_weight) * per_sample
