"""Plots where a picture beats a table (matplotlib, an optional dependency:
``pip install matplotlib``).

- ``plot_loss_scale(history)`` — the dynamic loss scale over training steps (log2 axis),
  with skipped (non-finite) steps marked.
- ``plot_history(history)`` — loss and metrics per epoch, training and validation.
- ``plot_gradient_histogram(grads, dtype='float16', loss_scale=None)`` — gradient
  magnitudes against the float16 (or bfloat16) range: what flushes to zero, what turns
  subnormal, and where the loss scale moves them.
- ``plot_underflow(report)`` — per variable, the share of a ``gradient_underflow_report``
  that is zero or subnormal in 16 bits, unscaled and scaled; bars at 0 are marked.
"""

import math

import numpy as np

__all__ = ["plot_loss_scale", "plot_history", "plot_gradient_histogram", "plot_underflow"]

_RANGES = {"float16": (2.0 ** -24, 2.0 ** -14, 65504.0),
           "bfloat16": (2.0 ** -133, 2.0 ** -126, 3.3895313892515355e38)}


def _plt():
    try:
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("mixprec.plot needs matplotlib: pip install matplotlib") from e
    return plt


def _axes(ax):
    if ax is not None:
        return ax
    plt = _plt()
    _, ax = plt.subplots(figsize=(7, 3.5))
    return ax


def _series(history, key):
    steps = getattr(history, "steps", None)
    if isinstance(history, dict):
        return list(history.get(key, []))
    if steps and key in steps:
        return list(steps[key])
    if steps is not None or hasattr(history, "history"):
        raise ValueError("This History has no per-step %r: fit records it only when the model's "
                         "optimizer is a LossScaleOptimizer (a mixed_float16 policy, or "
                         "LossScaleOptimizer(...) given to compile)" % key)
    return list(history)


def plot_loss_scale(history, ax=None, skipped=None):
    """The loss scale per step: a History from ``Model.fit`` (its ``steps['loss_scale']``),
    a dict with 'loss_scale' (and optionally 'skipped'), or a list of values."""
    ax = _axes(ax)
    values = np.asarray(_series(history, "loss_scale"), dtype=np.float64)
    if skipped is None:
        skipped = _series(history, "skipped") if (
            isinstance(history, dict) or getattr(history, "steps", None)) else None
    x = np.arange(1, len(values) + 1)
    ax.step(x, values, where="post", label="loss scale")
    ax.set_yscale("log", base=2)
    if skipped is not None and len(skipped):
        sk = np.flatnonzero(np.asarray(skipped, bool))
        if sk.size:
            # NOTE: values[i] is the scale step i was run with (History.steps records it
            # before the step): the cross sits on the scale that overflowed, the line then
            # drops to its half. Record custom loops the same way.
            ax.scatter(x[sk], values[sk], color="red", marker="x", s=36, zorder=3,
                       label="skipped step (inf/NaN gradient): %d" % sk.size)
    ax.set_xlabel("step")
    ax.set_ylabel("loss scale")
    ax.set_title("Dynamic loss scale")
    ax.legend(loc="best")
    return ax


def plot_history(history, metrics=None, ax=None):
    """Per-epoch curves of a History (or its ``.history`` dict)."""
    ax = _axes(ax)
    h = history.history if hasattr(history, "history") else dict(history)
    keys = metrics or [k for k in h if not k.startswith("val_")]
    for k in keys:
        ax.plot(np.arange(1, len(h[k]) + 1), h[k], marker="o", label=k)
        if "val_" + k in h:
            ax.plot(np.arange(1, len(h["val_" + k]) + 1), h["val_" + k], marker="o",
                    linestyle="--", label="val_" + k)
    ax.set_xlabel("epoch")
    ax.legend(loc="best")
    return ax


def plot_gradient_histogram(grads, dtype="float16", loss_scale=None, ax=None, bins=80):
    """Histogram of log2|g| over the nonzero elements of ``grads`` (tensors, variables or
    arrays), with the ``dtype``'s subnormal and normal ranges shaded; with ``loss_scale``
    the scaled magnitudes are drawn too."""
    from mixprec import _core, _nest

    if dtype not in _RANGES:
        raise ValueError("dtype must be 'float16' or 'bfloat16'")
    ax = _axes(ax)
    parts = []
    for g in _nest.flatten(grads):
        if g is None:
            continue
        if isinstance(g, (_core.Tensor, _core.Variable)):
            g = _core.cast(g if isinstance(g, _core.Tensor) else g._peek(), "float32").numpy()
        parts.append(np.abs(np.asarray(g, np.float64)).ravel())
    mags = np.concatenate(parts) if parts else np.zeros(0)
    mags = mags[mags > 0]
    tiny, normal, big = _RANGES[dtype]
    logs = np.log2(mags) if mags.size else np.zeros(0)
    lo = min(logs.min() if logs.size else -30, math.log2(tiny)) - 2
    hi = max(logs.max() if logs.size else 0, 0) + 2
    if loss_scale:
        hi = max(hi, (logs.max() if logs.size else 0) + math.log2(loss_scale) + 2)
    edges = np.linspace(lo, hi, bins)
    ax.axvspan(lo, math.log2(tiny), color="red", alpha=0.12, label="flushed to 0 in %s" % dtype)
    ax.axvspan(math.log2(tiny), math.log2(normal), color="orange", alpha=0.15,
               label="%s subnormal" % dtype)
    if math.log2(big) < hi:
        ax.axvspan(math.log2(big), hi, color="purple", alpha=0.12, label="overflow to inf")
    ax.hist(logs, bins=edges, alpha=0.7, label="|gradient|")
    if loss_scale:
        ax.hist(logs + math.log2(loss_scale), bins=edges, alpha=0.5,
                label="|gradient| x %g" % loss_scale)
    ax.set_xlabel("log2 |gradient|")
    ax.set_ylabel("elements")
    ax.set_title("Gradient magnitudes against the %s range" % dtype)
    ax.legend(loc="best", fontsize="small")
    return ax


def plot_underflow(report, ax=None):
    """Grouped bars per variable of a ``mixprec.testing.gradient_underflow_report``: the
    percentage of nonzero gradient elements that are zero or subnormal in its dtype, without
    and with the report's loss scale. A bar of exactly 0 is invisible, so it is marked with
    a small "0" on the axis."""
    ax = _axes(ax)
    rows = list(report)
    names = [r["name"].split(":")[0] for r in rows]
    pos = np.arange(len(rows))
    series = [
        ("unscaled", [100 * (r["zero"] + r["subnormal"]) for r in rows], -0.2, "C0"),
        ("scaled by %g" % report.loss_scale,
         [100 * (r["scaled_zero"] + r["scaled_subnormal"]) for r in rows], 0.2, "C1"),
    ]
    top = max([max(v) if v else 0 for _, v, _, _ in series] + [1e-9])
    for label, values, shift, color in series:
        ax.bar(pos + shift, values, 0.4, label=label, color=color)
        for xi, v in zip(pos + shift, values):
            if v == 0:
                ax.plot(xi, 0, marker="o", markersize=5, color=color, zorder=3, clip_on=False)
                ax.annotate("0", (xi, 0), xytext=(0, 4), textcoords="offset points",
                            ha="center", va="bottom", fontsize="small", color=color)
    ax.set_ylim(0, top * 1.15)
    ax.set_xticks(pos)
    ax.set_xticklabels(names, rotation=30, ha="right")
    ax.set_ylabel("% zero or subnormal")
    ax.set_title("Gradient elements lost to %s (of nonzero elements)" % report.dtype,
                 fontsize="medium")
    ax.legend(loc="best", fontsize="small")
    return ax
