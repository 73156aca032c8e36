"""Autocast at dispatch (what eager code gets when the rewrite is on) and the colouring
pass over plain arrays."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import _core
from mixprec._amp import graph_pass, state
from mixprec.testing.tolerances import TOLERANCE


@pytest.fixture
def amp_on():
    tf.config.optimizer.set_experimental_options({"auto_mixed_precision": True})
    yield


def test_eager_matmul_rounds_through_float16_and_returns_float32():
    x = tf.constant([[1 + 2.0**-12]])
    exact = tf.exp(x).numpy()
    tf.config.optimizer.set_experimental_options({"auto_mixed_precision": True})
    y = tf.matmul(x, tf.constant([[1.0]]))
    assert y.dtype == tf.float32 and float(y.numpy()[0, 0]) == 1.0
    e = tf.exp(x)
    assert e.dtype == tf.float32 and e.numpy()[0, 0] == exact[0, 0]


def test_off_by_default():
    assert not state.active()
    x = tf.constant([[1 + 2.0**-12]])
    assert tf.matmul(x, tf.constant([[1.0]])).numpy()[0, 0] == np.float32(1 + 2.0**-12)


@pytest.mark.filterwarnings("ignore:mixprec.function")
def test_a_graph_break_runs_autocast_infer_ops_follow_deny_ops_float32(amp_on):
    seen = {}

    @tf.function
    def f(x, w):
        tf.reduce_sum(x).numpy()  # a host read while tracing: this signature runs eagerly
        h = tf.matmul(x, w)
        seen["h"] = h.dtype
        a = tf.tanh(h)             # infer: follows its float16 input
        seen["a"] = a.dtype
        s = tf.reduce_sum(a)       # deny: float32
        seen["s"] = s.dtype
        i = tf.cast(a, tf.float32)  # a float32 value cast to float32: itself
        seen["i"] = i.dtype
        return a, s

    a, s = f(tf.ones((2, 3)), tf.ones((3, 4)))
    assert seen == {"h": tf.float16, "a": tf.float16, "s": tf.float32, "i": tf.float16}
    assert a.dtype == tf.float32 and s.dtype == tf.float32


def test_a_traced_function_follows_the_pass():
    x = np.full((2, 3), 1 + 2.0**-12, np.float32)
    w = np.ones((3, 4), np.float32)
    exact = tf.tanh(tf.matmul(tf.constant(x), tf.constant(w))).numpy()
    rounded = tf.tanh(tf.constant(np.full((2, 4), 3.0, np.float32))).numpy()
    tf.config.optimizer.set_experimental_options({"auto_mixed_precision": True})

    @tf.function
    def f(x, w):
        return tf.tanh(tf.matmul(x, w))  # Tanh after the last MatMul: float32 in the graph

    y = f(tf.constant(x), tf.constant(w))
    assert f.experimental_get_tracing_count() == 1
    assert y.dtype == tf.float32
    assert graph_pass.last_summary["converted_nodes"] == ["MatMul"]
    np.testing.assert_array_equal(y.numpy(), rounded)  # float16 MatMul, float32 Tanh
    assert not np.array_equal(y.numpy(), exact)  # the MatMul rounded 1 + 2**-12 to 1


def test_user_float16_and_float64_are_left_alone(amp_on):
    x = tf.ones((2, 2), dtype=tf.float16)
    assert tf.reduce_sum(x).dtype == tf.float16
    d = tf.ones((2, 2), dtype=tf.float64)
    assert tf.matmul(d, d).dtype == tf.float64


def test_variables_keep_float32_and_gradients_match_float64_chain(amp_on):
    rng = np.random.default_rng(0)
    xv, wv = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
    w = tf.Variable(wv.astype(np.float32))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.sigmoid(tf.matmul(tf.constant(xv.astype(np.float32)), w)))
    g = tape.gradient(loss, w)
    assert w.dtype == tf.float32 and g.dtype == tf.float32
    s = 1 / (1 + np.exp(-(xv @ wv)))
    ref = xv.T @ (s * (1 - s))
    rtol, atol = TOLERANCE[("float16", "backprop")]
    np.testing.assert_allclose(g.numpy(), ref, rtol=rtol, atol=atol)


def test_bfloat16_variant(amp_on):
    tf.config.optimizer.set_experimental_options({"auto_mixed_precision_onednn_bfloat16": True})
    x = tf.constant([[1 + 2.0**-9]])
    assert float(tf.matmul(x, tf.constant([[1.0]])).numpy()[0, 0]) == 1.0  # bf16 rounding
    assert tf.config.optimizer.get_experimental_options()[
        "auto_mixed_precision_onednn_bfloat16"] is True


def _color(ops, kinds, edges, bf16=False):
    """ops: TfName or None (pseudo-node); edges: per node, its input nodes."""
    code = {r[1]: r[0] for r in _core.op_table()}
    op = [code[o] if o else -1 for o in ops]
    offs, flat = [0], []
    for e in edges:
        flat.extend(e)
        offs.append(len(flat))
    low, s = _core.amp_color(op, kinds, [3] * len(ops), offs, flat, bf16)
    return low, s


def test_pass_deny_propagates_forward_through_infer_to_infer():
    # In -> Exp -> AddV2 -> Relu -> MatMul, In -> MatMul: the Add is blocked (it leads to
    # nothing but clear nodes), the Relu joins the MatMul
    ops = [None, "Exp", "AddV2", "Relu", "MatMul", "Tanh", None]
    kinds = [1, 0, 0, 0, 0, 0, 4]
    edges = [[], [0], [1, 1], [2], [3, 0], [2], [4]]
    low, s = _color(ops, kinds, edges)
    assert low == [False, False, False, True, True, False, False]
    assert s["denylisted"] == 1 and s["blocked"] == 2  # AddV2, Tanh
    assert s["converted"] == 2 and s["allowlisted"] == 1


def test_pass_infer_between_allow_nodes_joins_and_after_the_last_does_not():
    ops = [None, "MatMul", "AddV2", "MatMul", "Sigmoid", None]
    edges = [[], [0, 0], [1, 0], [2, 0], [3], [4]]
    low, s = _color(ops, [1, 0, 0, 0, 0, 4], edges)
    assert low == [False, True, True, True, False, False]
    # casts: In -> f16 (one, shared by three consumers), MatMul_1 -> f32 for the Sigmoid
    assert s["casts_to_lowered"] == 1 and s["casts_total"] == 2
    low, _ = _color(ops, [1, 0, 0, 0, 0, 4], edges, bf16=True)
    assert low[4]  # oneDNN: an infer node fed by an allow node joins it


def test_pass_refuses_bad_arrays():
    with pytest.raises(ValueError):
        _core.amp_color([0], [0], [3], [0, 1], [5])
    with pytest.raises(ValueError):
        _core.amp_color([0, 0], [0], [3], [0, 0], [])


def test_pass_over_a_recording_skips_autocast_casts(amp_on):
    _core.amp_record_begin()
    _core.amp_scope_enter()
    try:
        x = tf.constant(np.ones((2, 2), np.float32))
        y = tf.exp(tf.matmul(x, x))
    finally:
        _core.amp_scope_exit()
        trace = _core.amp_record_end()
    names = {r[0]: r[1] for r in _core.op_table()}
    assert [names[o] for o in trace[0]] == ["MatMul", "Exp"]
    s = graph_pass.summarize(trace, set(), {y._id}, log=False)
    assert s["converted_nodes"] == ["MatMul"]
