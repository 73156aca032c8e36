"""The approximate quantile summary behind ``Discretization.adapt`` (tf-keras 2.21's): a
(2, k) float32 array of (value, weight) pairs, one per batch from the sorted values, merged
with the running summary and compressed to ~1/epsilon points by linear interpolation of the
cumulative weights; the bin boundaries are a final compression to ``num_bins`` points.
Host-side statistics on numpy arrays, whole-array operations only (as Normalization.adapt)."""

import numpy as np

__all__ = ["summarize", "merge_summaries", "get_bin_boundaries", "empty"]


def empty():
    return np.zeros((2, 0), np.float32)


def summarize(values, epsilon):
    """The summary of one batch: every ``step``-th sorted value, each weighing ``step``."""
    values = np.sort(np.asarray(values, np.float32).reshape(-1))
    elements = np.float32(values.size)
    increment = int(np.float32(elements / np.float32(1.0 / epsilon)))
    step = max(increment, 1)
    bounds = values[increment::step]
    return np.stack([bounds, np.full(bounds.shape, np.float32(step), np.float32)])


def compress(summary, epsilon):
    """At most ~1/epsilon points: the values at cumulative-weight fractions epsilon, 2 eps..."""
    if summary.shape[1] * epsilon < 1:
        return summary
    percents = epsilon + np.arange(0.0, 1.0, epsilon)
    cum_weights = summary[1].cumsum()
    cum_pct = cum_weights / cum_weights[-1]
    new_bins = np.interp(percents, cum_pct, summary[0])
    cum_weights = np.interp(percents, cum_pct, cum_weights)
    new_weights = cum_weights - np.concatenate((np.array([0]), cum_weights[:-1]))
    return np.stack((new_bins, new_weights)).astype(np.float32)


def merge_summaries(prev, nxt, epsilon):
    merged = np.concatenate((prev, nxt), axis=1)
    merged = merged[:, np.argsort(merged[0], kind="stable")]
    return compress(merged, epsilon)


def get_bin_boundaries(summary, num_bins):
    return compress(summary, 1.0 / num_bins)[0, :-1]
