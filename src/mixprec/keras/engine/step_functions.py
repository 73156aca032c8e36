"""The functions ``fit``/``evaluate``/``predict`` call per step: ``train_step``/``test_step``/
``predict_step`` traced with ``mixprec.function`` (tf-keras' ``make_train_function``), or
the plain methods when the model runs eagerly (``compile(run_eagerly=True)``,
``model.run_eagerly = True`` or ``tf.config.run_functions_eagerly(True)``).

It owns only the choice and the caching (rebuilt when the model is compiled again or the
optimizer changes); the loops stay in training.py and the numbers in the core.
"""

import weakref

from mixprec import _autograph, _function
from mixprec.keras.engine import distributed as _distributed

# model -> {kind: (key, function)}; kept outside the model so that copying or pickling a
# model never meets a traced graph, and the functions hold the model weakly
_CACHE = weakref.WeakKeyDictionary()

__all__ = ["train_function", "test_function", "predict_function", "RunEagerlyMixin", "reset",
           "cached"]


class RunEagerlyMixin:
    """``model.run_eagerly`` as tf-keras: False by default (steps traced), True to debug."""

    @property
    def run_eagerly(self):
        flag = self.__dict__.get("_run_eagerly_flag")
        return bool(flag) or _function.functions_run_eagerly()

    @run_eagerly.setter
    def run_eagerly(self, value):
        self.__dict__["_run_eagerly_flag"] = value
        reset(self)


def reset(model):
    """Forget the model's traced steps (compile, run_eagerly changes)."""
    _CACHE.pop(model, None)


def cached(model, kind):
    """The traced function of `kind` ('train', 'test', 'predict') or None."""
    entry = _CACHE.get(model, {}).get(kind)
    return None if entry is None else entry[1]


def _cached(model, kind, make):
    cache = _CACHE.setdefault(model, {})
    opt = getattr(model, "optimizer", None)
    key = (kind, id(opt), id(type(model).train_step), id(type(model).test_step),
           id(type(model).predict_step))
    fn = cache.get(kind)
    if fn is None or fn[0] != key:
        fn = (key, make())
        cache[kind] = fn
    return fn[1]


def _optimizer_flag(model):
    opt = getattr(model, "optimizer", None)
    return opt, getattr(opt, "_last_applied", None) if opt is not None else None


def _train_step(m, data):
    """One training step: the model's, or under a strategy with several replicas its
    replicas' through strategy.run (traced too: docs/distribute.md)."""
    if _distributed.strategy_of(m) is not None:
        return _distributed.train_step(m, data)
    return _autograph.call(m.train_step, data)  # a user's train_step: autograph


def _test_step(m, data):
    if _distributed.strategy_of(m) is not None:
        return _distributed.test_step(m, data)
    return _autograph.call(m.test_step, data)


def _predict_step(m, data):
    if _distributed.strategy_of(m) is not None:
        return _distributed.predict_step(m, data)
    return _autograph.call(m.predict_step, data)


def train_function(model):
    """step(batch) -> logs; a LossScaleOptimizer's ``_last_applied`` (the step's skip flag,
    a device tensor) is refreshed from every replay."""
    if model.run_eagerly:
        if _distributed.strategy_of(model) is not None:
            return lambda data: _distributed.train_step(model, data)
        return model.train_step

    mref = weakref.ref(model)

    def make():
        def step(data):
            m = mref()
            logs = _train_step(m, data)
            opt, applied = _optimizer_flag(m)
            return logs, applied

        traced = _function.Function(step, reduce_retracing=True, name="train_function",
                                    _relax_batch=True)

        def run(data):
            logs, applied = traced(data)
            opt = getattr(mref(), "optimizer", None)
            if opt is not None and applied is not None and hasattr(opt, "_last_applied"):
                object.__setattr__(opt, "_last_applied", applied)
            return logs
        run.traced = traced
        return run
    return _cached(model, "train", make)


def test_function(model):
    if model.run_eagerly:
        if _distributed.strategy_of(model) is not None:
            return lambda data: _distributed.test_step(model, data)
        return model.test_step
    mref = weakref.ref(model)
    return _cached(model, "test", lambda: _function.Function(
        lambda data: _test_step(mref(), data), reduce_retracing=True, name="test_function",
        _relax_batch=True))


def predict_function(model):
    if model.run_eagerly:
        if _distributed.strategy_of(model) is not None:
            return lambda data: _distributed.predict_step(model, data)
        return model.predict_step
    mref = weakref.ref(model)
    return _cached(model, "predict", lambda: _function.Function(
        lambda data: _predict_step(mref(), data), reduce_retracing=True,
        name="predict_function", _relax_batch=True))
