"""Opt-in per-node replay timings of a traced graph (csrc/graph_profile.c): `Graph.profile`
on starts a fresh table, replays fill it, `profile_stats()` reads it; off, nothing is timed."""

import numpy as np

import mixprec as tf


def _graph(fn):
    return [h for t in fn._traces.values() for h in t.shapes.values() if h is not None][-1]


def test_profile_times_every_node_a_replay_runs():
    w = tf.Variable(np.ones((4, 3), np.float32))

    @tf.function
    def f(x):
        return tf.nn.relu(tf.matmul(x, w)) * 2.0

    x = tf.constant(np.arange(8, dtype=np.float32).reshape(2, 4))
    expected = f(x).numpy()
    g = _graph(f)
    assert g.profile is False and g.profile_stats() is None
    g.profile = True
    for _ in range(3):
        np.testing.assert_array_equal(f(x).numpy(), expected)  # the same values
    st = g.profile_stats()
    assert st["replays"] == 3
    assert st["replay_min_us"] > 0 and st["replay_sum_us"] >= 3 * st["replay_min_us"]
    ops = {g.nodes()[r["node"]]["op"]: r for r in st["nodes"]}
    for op in ("MatMul", "Relu", "Mul"):
        assert ops[op]["calls"] == 3 and 0 <= ops[op]["min_us"] <= ops[op]["sum_us"]
    assert sum(r["min_us"] for r in st["nodes"]) <= st["replay_sum_us"]
    g.profile = True  # again: a fresh table
    assert g.profile_stats()["replays"] == 0
    g.profile = False
    f(x)
    assert g.profile_stats() is None
