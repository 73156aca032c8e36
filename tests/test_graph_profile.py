"""The opt-in per-op timing of traced-graph replays (csrc/graph_profile.c, env
MIXPREC_PROFILE=1 or _core.graph_profile): rows per (op, dtype, output shape) with call
counts and wall / process-CPU seconds; off by default, and it changes no value."""

import numpy as np

import mixprec as tf
from mixprec import _core


def test_profile_counts_replayed_ops_and_changes_nothing():
    x = tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4))

    @tf.function
    def f(x):
        return tf.reduce_sum(tf.nn.relu(x - 5.0) * 2.0, axis=1)

    expected = f(x).numpy()
    prev = _core.graph_profile(True)
    try:
        _core.graph_profile_report(True)
        for _ in range(3):
            got = f(x).numpy()
        rows = _core.graph_profile_report(True)
    finally:
        _core.graph_profile(prev)
    np.testing.assert_array_equal(got, expected)
    by_op = {(r[0], r[1], r[2]): r for r in rows}
    assert by_op[("Relu", "float32", (3, 4))][3] == 3
    assert by_op[("Sum", "float32", (3,))][3] == 3
    for name, dtype, shape, calls, wall, cpu in rows:
        assert calls >= 1 and wall >= 0.0 and cpu >= 0.0
    assert _core.graph_profile_report(False) == []  # reset by the last report


def test_profile_off_records_nothing():
    assert _core.graph_profile(False) in (False, True)
    _core.graph_profile_report(True)

    @tf.function
    def g(x):
        return x + 1.0

    g(tf.constant(1.0))
    g(tf.constant(1.0))
    assert _core.graph_profile_report(True) == []
