"""``tf.case`` and ``tf.switch_case``: multi-way conditionals built from ``tf.cond``
(so a traced predicate or index selects on the device, as cond does), with TensorFlow's
argument checks, its default rules (switch_case: the last branch for an index out of range;
case: the last pair when no default is given, asserting its predicate) and its
``exclusive`` flag."""

import functools

from mixprec import _core, errors

__all__ = ["case", "switch_case"]


def _cond(pred, true_fn, false_fn):
    from mixprec._control import cond
    return cond(pred, true_fn, false_fn)


def _check_branch_fns(branch_fns, default):
    if not branch_fns:
        raise ValueError("Must provide at least one item in 'branch_fns'")
    if not isinstance(branch_fns, (list, tuple, dict)):
        raise TypeError("'branch_fns' must be a list, tuple, or dict")
    pairs = list(branch_fns.items()) if isinstance(branch_fns, dict) else list(branch_fns)
    if all(callable(fn) for fn in pairs):
        pairs = list(enumerate(pairs))
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError("Each entry in 'branch_fns' must be a 2-tuple. Received %s."
                            % (pair,))
        key, fn = pair
        if not isinstance(key, int):
            raise TypeError("key must be a Python `int`, got %s" % type(key))
        if not callable(fn):
            raise TypeError("fn for key %s must be callable." % key)
    keys = [p[0] for p in pairs]
    if min(keys) < 0 or max(keys) >= len(keys) or len(set(keys)) != len(keys):
        raise ValueError("branch indices (keys) must form contiguous range of [0 to %d) but "
                         "found {%s}" % (len(keys), ",".join(map(str, sorted(keys)))))
    actions = [p[1] for p in sorted(pairs, key=lambda p: p[0])]
    if default is not None:
        actions.append(default)
    return actions


def switch_case(branch_index, branch_fns, default=None, name="switch_case"):
    """``branch_fns[branch_index]()``; an index outside the branches runs ``default`` (or
    the last branch when no default is given)."""
    if isinstance(branch_index, _core.Variable):
        branch_index = branch_index.read_value()
    if not isinstance(branch_index, _core.Tensor):
        raise TypeError("'branch_index' must be a Tensor, got %s" % type(branch_index))
    if not branch_index.dtype.is_integer:
        raise TypeError("'branch_index' must be an integer Tensor, got %s" % branch_index.dtype)
    actions = _check_branch_fns(branch_fns, default)
    n = len(actions)
    if _core.graph_recording() is None:
        i = int(branch_index)
        return actions[i if 0 <= i < n else n - 1]()
    fn = actions[-1]
    for k in range(n - 2, -1, -1):
        fn = functools.partial(_cond, _core.equal(branch_index, _core.cast(k, branch_index.dtype)),
                               actions[k], fn)
    return fn()


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """The first pair whose predicate holds runs; ``default`` when none does (without
    one, the last pair runs and its predicate must hold)."""
    if not isinstance(pred_fn_pairs, (list, tuple, dict)):
        raise TypeError("'pred_fn_pairs' must be a list, tuple, or dict. Received: %s"
                        % type(pred_fn_pairs))
    if isinstance(pred_fn_pairs, dict):
        if not exclusive:
            raise ValueError("Unordered dictionaries are not supported for the 'pred_fn_pairs' "
                             "argument when `exclusive=False` and eager mode is enabled.")
        pred_fn_pairs = list(pred_fn_pairs.items())
    preds, fns = [], []
    for pair in pred_fn_pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError("Each entry in 'pred_fn_pairs' must be a 2-tuple. Received %s."
                            % (pair,))
        pred, fn = pair
        if isinstance(pred, _core.Variable):
            pred = pred.read_value()
        if isinstance(pred, _core.Tensor):
            if pred.dtype.name != "bool":
                raise TypeError("pred must be Tensor of type bool: %s" % (pred,))
        else:
            raise TypeError("pred must be a Tensor, got: %s" % (pred,))
        if not callable(fn):
            raise TypeError("fn for pred %s must be callable." % (pred,))
        preds.append(pred)
        fns.append(fn)
    if default is not None and not callable(default):
        raise TypeError("default must be callable.")
    if not preds:
        if default is None:
            raise ValueError("No predicates and no default given to tf.case")
        return default()
    # NOTE: ``exclusive`` is accepted and, as TensorFlow 2.21 does when running eagerly,
    # not enforced (its assertion is a control dependency that eager execution drops)
    traced = _core.graph_recording() is not None
    if default is None:
        last_pred, last_fn = preds.pop(), fns.pop()

        def default():
            if not traced and not bool(last_pred):
                raise errors.InvalidArgumentError(
                    None, None, "Expected 'tf.Tensor(False, shape=(), dtype=bool)' to be true. "
                    "Summarized data: b'Input error: None of conditions evaluated as True:'\n%s"
                    % ", ".join(str(bool(p)) for p in preds + [last_pred]))
            return last_fn()
    fn = default
    for pred, action in reversed(list(zip(preds, fns))):
        fn = functools.partial(_cond, pred, action, fn)
    return fn()
