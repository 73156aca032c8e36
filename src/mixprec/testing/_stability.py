"""assert_trains_like and gradient_underflow_report."""

import math
import numbers

import numpy as np

from mixprec import _core
from mixprec._tape import GradientTape

__all__ = ["assert_trains_like", "gradient_underflow_report", "UnderflowReport",
           "TrainingComparison"]

_SMALLEST_NORMAL = {"float16": 2.0 ** -14, "bfloat16": 2.0 ** -126}
_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38}


def _split_data(data):
    """(x, y, x_eval, y_eval) from ((x, y), (xt, yt)), (x, y) or a dict."""
    if isinstance(data, dict):
        x, y = data["x"], data["y"]
        return x, y, data.get("x_test", x), data.get("y_test", y)
    if (isinstance(data, (tuple, list)) and len(data) == 2
            and isinstance(data[0], (tuple, list)) and isinstance(data[1], (tuple, list))):
        (x, y), (xt, yt) = data
        return x, y, xt, yt
    if isinstance(data, (tuple, list)) and len(data) == 2:
        return data[0], data[1], data[0], data[1]
    if isinstance(data, (tuple, list)) and len(data) == 4:
        return tuple(data)
    raise ValueError("data must be ((x, y), (x_test, y_test)), (x, y), (x, y, x_test, y_test) "
                     "or {'x', 'y', 'x_test', 'y_test'}")


class TrainingComparison(dict):
    """What ``assert_trains_like`` returns: a dict, policy name -> a dict with

    - ``'metric'``: the evaluation metric after training (float),
    - ``'loss'``: the final epoch's training loss (float),
    - ``'history'``: ``History.history`` of the fit (name -> list per epoch),
    - ``'steps'``: training steps run, ``'skipped'``: of those, skipped for inf/NaN
      gradients by the loss-scale optimizer (0 without loss scaling).

    ``metric`` names the compared metric, ``reference`` the first policy; ``str()`` (and the
    failure message) is the table."""

    def __init__(self, metric, rows, reference=None, tolerance=None):
        super().__init__(rows)
        self.metric = metric
        self.reference = reference or next(iter(self), None)
        self.tolerance = tolerance

    def table(self, reference=None, tolerance=None):
        ref = reference or self.reference
        tolerance = self.tolerance if tolerance is None else tolerance
        lines = ["  %-16s %12s %12s %14s %16s" % ("policy", self.metric, "final loss",
                                                  "diff vs " + ref, "skipped steps")]
        for name, r in self.items():
            diff = r["metric"] - self[ref]["metric"]
            flag = "  <-- beyond %.4g" % tolerance if (
                tolerance is not None and name != ref and
                (not math.isfinite(diff) or abs(diff) > tolerance)) else ""
            skipped = "%d of %d" % (r.get("skipped", 0), r.get("steps", 0))
            lines.append("  %-16s %12.4f %12.4f %14s %16s%s" % (
                name, r["metric"], r["loss"], "" if name == ref else "%+.4f" % diff,
                skipped, flag))
        skippers = [n for n, r in self.items() if r.get("skipped")]
        if skippers:
            lines.append("  %s skipped steps for inf/NaN gradients (loss scaling): a run that "
                         "skips most of its steps does not learn" % ", ".join(skippers))
        return "\n".join(lines)

    def __str__(self):
        return self.table()


def _steps_run(model, hist, skipped):
    if skipped:
        return len(skipped)
    it = getattr(getattr(model, "optimizer", None), "iterations", None)
    return int(it.numpy()) if it is not None else 0


def assert_trains_like(build_model, data, policies=("float32", "mixed_float16"), epochs=3,
                       metric="accuracy", tolerance=0.02, batch_size=32, seed=0,
                       compile_kwargs=None, fit_kwargs=None):
    """Trains ``build_model()`` from the same seed under each policy and asserts that the
    evaluation ``metric`` of every policy is within ``tolerance`` (absolute) of the first
    policy's. ``build_model`` is called inside each policy (so layers pick it up) and may
    return a compiled model; otherwise ``compile_kwargs`` are used. Returns a
    TrainingComparison: policy -> {'metric', 'loss', 'history', 'steps', 'skipped'}.
    ``fit_kwargs`` go to ``fit`` and may override its defaults here (``verbose=0``,
    ``epochs``, ``batch_size``)."""
    from mixprec.keras import utils
    from mixprec.keras.mixed_precision import policy as _policy

    if not policies:
        raise ValueError("policies must name at least one dtype policy")
    if isinstance(epochs, bool) or not isinstance(epochs, numbers.Integral) or epochs < 1:
        raise ValueError("epochs must be a positive integer, got %r: the comparison is of "
                         "trained models" % (epochs,))
    x, y, xt, yt = _split_data(data)
    rows = {}
    for name in policies:
        with _policy.policy_scope(_policy.Policy(name)):
            utils.set_random_seed(seed)
            model = build_model()
            if not getattr(model, "_compiled", False):
                if compile_kwargs is None:
                    raise ValueError("build_model() returned an uncompiled model: compile it "
                                     "there or pass compile_kwargs=dict(optimizer=..., loss=..., "
                                     "metrics=[%r])" % metric)
                model.compile(**compile_kwargs)
            kwargs = dict(epochs=epochs, batch_size=batch_size, verbose=0)
            kwargs.update(fit_kwargs or {})
            hist = model.fit(x, y, **kwargs)
            results = model.evaluate(xt, yt, batch_size=batch_size, verbose=0, return_dict=True)
            if metric not in results:
                raise KeyError("metric %r is not among the model's metrics %s (compile with "
                               "metrics=[%r])" % (metric, sorted(results), metric))
            if not hist.history.get("loss"):
                raise KeyError("fit() recorded no 'loss' (its history has %s): "
                               "assert_trains_like compares the final training losses"
                               % sorted(hist.history))
            skipped = getattr(hist, "steps", {}).get("skipped", [])
            rows[name] = {"metric": float(results[metric]),
                          "loss": float(hist.history["loss"][-1]), "history": hist.history,
                          "steps": _steps_run(model, hist, skipped), "skipped": sum(skipped)}
    comparison = TrainingComparison(metric, rows, policies[0], tolerance)
    ref = policies[0]
    bad = [n for n in policies[1:]
           if not math.isfinite(rows[n]["metric"]) or not math.isfinite(rows[n]["loss"])
           or abs(rows[n]["metric"] - rows[ref]["metric"]) > tolerance]
    if bad:
        raise AssertionError("assert_trains_like: %s differs from %s by more than %g in %r:\n%s"
                             % (", ".join(bad), ref, tolerance, metric,
                                comparison.table(ref, tolerance)))
    return comparison


class UnderflowReport:
    """Per-variable fractions of nonzero gradient elements that underflow in a 16-bit dtype.

    Columns: ``zero`` (flushed to 0), ``subnormal`` (kept with reduced precision), for the
    unscaled gradient and for the gradient times ``loss_scale``; ``overflow`` (inf after
    scaling)."""

    def __init__(self, dtype, loss_scale, rows):
        self.dtype = dtype
        self.loss_scale = loss_scale
        self.rows = rows  # list of dicts

    def fraction(self, column="zero", scaled=False):
        """The fraction over all variables (weighted by nonzero elements)."""
        key = ("scaled_" if scaled else "") + column
        total = sum(r["nonzero"] for r in self.rows)
        if not total:
            return 0.0
        return sum(r[key] * r["nonzero"] for r in self.rows) / total

    def worst(self, scaled=False):
        key = "scaled_zero" if scaled else "zero"
        return max(self.rows, key=lambda r: r[key]) if self.rows else None

    def __iter__(self):
        return iter(self.rows)

    def __str__(self):
        head = "%-28s %10s %8s %10s %10s %10s %10s" % (
            "variable", "elements", "zero", "subnormal", "zero@S", "subnorm@S", "inf@S")
        lines = ["gradient underflow in %s, loss scale S = %g" % (self.dtype, self.loss_scale),
                 head, "-" * len(head)]
        for r in self.rows:
            lines.append("%-28s %10d %7.2f%% %9.2f%% %9.2f%% %9.2f%% %9.2f%%" % (
                r["name"][:28], r["size"], 100 * r["zero"], 100 * r["subnormal"],
                100 * r["scaled_zero"], 100 * r["scaled_subnormal"], 100 * r["scaled_overflow"]))
        lines.append("%-28s %10s %7.2f%% %9.2f%% %9.2f%% %9.2f%%" % (
            "all", "", 100 * self.fraction("zero"), 100 * self.fraction("subnormal"),
            100 * self.fraction("zero", True), 100 * self.fraction("subnormal", True)))
        return "\n".join(lines)

    __repr__ = __str__


def _count(mask):
    return int(_core.reduce_sum(_core.cast(mask, "int64")))


def gradient_underflow_report(model, x, y, dtype="float16", loss_scale=None, loss=None):
    """Which gradients would underflow in ``dtype`` without loss scaling?

    Computes the model's gradients (its compiled loss, or ``loss(y_true, y_pred)``) with
    respect to its trainable variables in float32, then for each variable counts the
    nonzero elements that become 0 or subnormal when stored in ``dtype`` — as they are,
    and multiplied by ``loss_scale`` (default: the model's LossScaleOptimizer's current
    scale, else TensorFlow's initial dynamic scale 2**15)."""
    from mixprec.keras import losses as _losses

    if dtype not in _SMALLEST_NORMAL:
        raise ValueError("dtype must be 'float16' or 'bfloat16', got %r" % (dtype,))
    if loss is None:
        spec = getattr(model, "_loss_spec", None)
        if spec is None:
            raise ValueError("the model is not compiled with a loss: pass loss=...")
        loss = _losses.get(spec)
    if loss_scale is None:
        opt = getattr(model, "optimizer", None)
        scale_obj = getattr(opt, "_loss_scale_obj", None)
        loss_scale = scale_obj._current() if scale_obj is not None else 2.0 ** 15
    loss_scale = float(loss_scale)
    x = x if isinstance(x, _core.Tensor) else _core.convert_to_tensor(np.asarray(x))
    y = y if isinstance(y, _core.Tensor) else _core.convert_to_tensor(np.asarray(y))
    variables = list(model.trainable_variables)
    with GradientTape() as tape:
        y_pred = model(x, training=True)
        value = _core.convert_to_tensor(loss(y, y_pred))
        if value.ndim:  # a per-example loss function: reduce as Keras does (mean)
            value = _core.reduce_mean(value)
    grads = tape.gradient(value, variables)
    tiny = _SMALLEST_NORMAL[dtype]
    rows = []
    for v, g in zip(variables, grads):
        size = 1
        for d in v.shape:
            size *= d
        if g is None:
            rows.append({"name": v.name, "size": size, "nonzero": 0, "zero": 0.0,
                         "subnormal": 0.0, "scaled_zero": 0.0, "scaled_subnormal": 0.0,
                         "scaled_overflow": 0.0})
            continue
        g32 = _core.cast(g, "float32")
        nz = _core.not_equal(g32, 0.0)
        nonzero = _count(nz)
        row = {"name": v.name, "size": size, "nonzero": nonzero}
        for prefix, factor in (("", 1.0), ("scaled_", loss_scale)):
            s = g32 * factor if factor != 1.0 else g32
            low = _core.cast(s, dtype)
            mag = _core.abs(_core.cast(low, "float32"))
            zero = _count(_core.logical_and(nz, _core.equal(mag, 0.0)))
            sub = _count(_core.logical_and(_core.greater(mag, 0.0), _core.less(mag, tiny)))
            denom = max(nonzero, 1)
            row[prefix + "zero"] = zero / denom
            row[prefix + "subnormal"] = sub / denom
            if prefix:
                row["scaled_overflow"] = _count(_core.is_inf(low)) / denom
        rows.append(row)
    return UnderflowReport(dtype, loss_scale, rows)
