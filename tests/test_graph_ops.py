"""Replay == eager for every op of csrc/ops.def (enumerated from _core.op_table(), so a new op
cannot skip it): each op is called through mixprec.function, the graph must hold the op
(recorded, not captured as a constant), and the replay with new inputs of the same shape
must give the eager result bit for bit (same kernels, same path: mp_op_exec)."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import _core

R = np.random.default_rng(7)


def f32(*shape, lo=-2.0, hi=2.0):
    return lambda: R.uniform(lo, hi, shape).astype(np.float32)


def pos(*shape):
    return f32(*shape, lo=0.2, hi=3.0)


def ints(*shape, hi=4):
    return lambda: R.integers(0, hi, shape).astype(np.int64)


def bools(*shape):
    return lambda: R.integers(0, 2, shape).astype(bool)


UNARY_POS = {"log", "sqrt", "rsqrt", "reciprocal", "log1p"}
UNARY = ["neg", "abs", "exp", "log", "sqrt", "square", "relu", "sigmoid", "tanh", "rsqrt",
         "reciprocal", "floor", "ceil", "round", "sign", "log1p", "expm1", "elu", "softplus",
         "gelu", "sin", "cos", "is_finite", "is_nan", "is_inf", "leaky_relu"]
BINARY = ["add", "subtract", "multiply", "realdiv", "floordiv", "floormod", "pow", "maximum",
          "minimum", "squared_difference", "equal", "not_equal", "less", "less_equal",
          "greater", "greater_equal", "relu_grad", "sigmoid_grad", "tanh_grad", "elu_grad",
          "softplus_grad", "gelu_grad", "gelu_tanh_grad", "rsqrt_grad", "sqrt_grad",
          "leaky_relu_grad"]
REDUCE = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"]


def _bound_slice_grad(x, i):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x[i, 1:]
    return tape.gradient(y, x, output_gradients=tf.ones_like(y) * 2.0)


def _slice_grad(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x[1:3, ::2]
    return tape.gradient(y, x, output_gradients=tf.ones_like(y) * 2.0)


def _seeded_grad(x):
    # the tape seeds the gradient with ones (a Fill)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    return tape.gradient(y, x)


def _conv_grads(x, f):
    with tf.GradientTape() as tape:
        tape.watch([x, f])
        y = tf.nn.conv2d(x, f, strides=1, padding="SAME")
    return tape.gradient(y, [x, f], output_gradients=tf.ones_like(y) * 0.5)


def _pool_grad(pool):
    def fn(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = pool(x, 2, 2, "VALID")
        return tape.gradient(y, x, output_gradients=y * 3.0)
    return fn


def _max_pool_second_order(x):
    """MaxPoolGradGrad: the gradient of a max-pool gradient with respect to its dy."""
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.nn.max_pool2d(x, 2, 1, "SAME")
        g = inner.gradient(y, x, output_gradients=y * y)
    return outer.gradient(g, x, output_gradients=x)


def _moments_grad(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        m, v = tf.nn.moments(x, [0, 1])
        loss = tf.reduce_sum(m * 2.0) + tf.reduce_sum(v * v)
    return tape.gradient(loss, x)


def _batch_norm_grads(x, m, o, s, v):
    with tf.GradientTape() as tape:
        tape.watch([x, m, o, s, v])
        y = tf.nn.batch_normalization(x, m, v, o, s, 1e-3)
    return tape.gradient(y, [x, m, o, s, v], output_gradients=y * 0.5)


_ONE_REPLICA = _core.comm_threads(1, 30.0)

CASES = {
    "all_reduce": (lambda x: _core.all_reduce(_ONE_REPLICA, 0, x) * 2.0, [f32(3, 4)]),
    "cast": (lambda x: tf.cast(x, "float16"), [f32(3, 4)]),
    "identity": (lambda x: tf.identity(x) * 1.0, [f32(3, 4)]),
    "stop_gradient": (lambda x: tf.stop_gradient(x) + 0.0, [f32(3, 4)]),
    "logical_not": (lambda x: tf.logical_not(x), [bools(3, 4)]),
    "logical_and": (lambda a, b: tf.logical_and(a, b), [bools(3, 4), bools(3, 4)]),
    "logical_or": (lambda a, b: tf.logical_or(a, b), [bools(3, 4), bools(3, 4)]),
    "where": (lambda c, a, b: tf.where(c, a, b), [bools(3, 4), f32(3, 4), f32(3, 4)]),
    "reduce_all": (lambda x: tf.reduce_all(x, axis=1), [bools(3, 4)]),
    "reduce_any": (lambda x: tf.reduce_any(x, axis=0), [bools(3, 4)]),
    "argmax": (lambda x: tf.argmax(x, axis=1), [f32(3, 4)]),
    "argmin": (lambda x: tf.argmin(x, axis=0), [f32(3, 4)]),
    "matmul": (lambda a, b: tf.matmul(a, b, transpose_b=True), [f32(3, 4), f32(5, 4)]),
    "softmax": (lambda x: tf.nn.softmax(x), [f32(3, 4)]),
    "log_softmax": (lambda x: tf.nn.log_softmax(x), [f32(3, 4)]),
    "reshape": (lambda x: tf.reshape(x, [2, 6]), [f32(3, 4)]),
    "transpose": (lambda x: tf.transpose(x), [f32(3, 4)]),
    "concat": (lambda a, b: tf.concat([a, b], axis=0), [f32(3, 4), f32(2, 4)]),
    "stack": (lambda a, b: tf.stack([a, b], axis=1), [f32(3, 4), f32(3, 4)]),
    "strided_slice": (lambda x: x[1:3, ::2], [f32(4, 5)]),
    "broadcast_to": (lambda x: tf.broadcast_to(x, [3, 4]), [f32(1, 4)]),
    "strided_slice_grad": (_slice_grad, [f32(4, 5)]),
    "fill": (_seeded_grad, [f32(3, 4)]),
    "range": (lambda x: x + _core.range(0, 4, 1, "float32"), [f32(3, 4)]),
    "shape_op": (lambda x: tf.cast(tf.shape(x), tf.float32) + tf.reduce_sum(x), [f32(3, 4)]),
    "range_t": (lambda n: tf.range(n), [lambda: np.int32(R.integers(0, 6))]),
    "index_t": (lambda x, i: x[i] * 2.0, [f32(4, 3), lambda: np.int32(R.integers(-4, 4))]),
    # tensor-bound slices: the bounds are inputs, another call's bounds give another slice
    "strided_slice_t": (lambda x, i, j: x[i:j, ::2] * 2.0,
                        [f32(5, 4), lambda: np.int32(R.integers(-5, 3)),
                         lambda: np.int32(R.integers(2, 6))]),
    "slice_t": (lambda x, b: tf.slice(x, b, [-1, 2]) + 1.0,
                [f32(4, 5), lambda: R.integers(0, 4, size=2).astype(np.int32)]),
    "strided_slice_t_grad": (_bound_slice_grad, [f32(4, 5), lambda: np.int32(R.integers(0, 4))]),
    "one_hot": (lambda i: tf.one_hot(i, 5), [ints(3)]),
    # the indices are read at every run: another call's indices give another gather
    "gather": (lambda x, i: tf.gather(x, i, axis=1) * 2.0,
               [f32(3, 5), lambda: R.integers(0, 5, size=(2, 2)).astype(np.int32)]),
    "gather_grad": (lambda d, i: _core.gather_grad(d, i, 0, 4) * 2.0,
                    [f32(3, 2), lambda: R.integers(0, 4, size=3).astype(np.int64)]),
    "cumsum": (lambda x: tf.cumsum(x, axis=1, exclusive=True) + 1.0, [f32(3, 5)]),
    # the array ops (mixprec/_array_extra.py): indices and values read at every run, so
    # another call's values give other rows, other sizes (unique, where)
    "gather_nd": (lambda x, i: tf.gather_nd(x, i) * 2.0, [f32(3, 5), ints(4, 2, hi=3)]),
    "tensor_scatter_update": (tf.tensor_scatter_nd_update, [f32(4, 3), ints(5, 1), f32(5, 3)]),
    "tensor_scatter_add": (tf.tensor_scatter_nd_add, [f32(4, 3), ints(5, 1), f32(5, 3)]),
    "tensor_scatter_sub": (tf.tensor_scatter_nd_sub, [f32(4, 3), ints(5, 1), f32(5, 3)]),
    "tensor_scatter_min": (tf.tensor_scatter_nd_min, [f32(4, 3), ints(5, 1), f32(5, 3)]),
    "tensor_scatter_max": (tf.tensor_scatter_nd_max, [f32(4, 3), ints(5, 1), f32(5, 3)]),
    "top_k_indices": (lambda x: tf.math.top_k(x, 3), [f32(3, 5)]),
    "unique": (lambda x: tf.unique_with_counts(x), [ints(8, hi=5)]),
    "where_indices": (lambda x: tf.boolean_mask(x, x > 0.0) + 1.0, [f32(3, 4)]),
    "reverse": (lambda x: tf.reverse(x, [1]) * 2.0, [f32(3, 4)]),
    "roll": (lambda x: tf.roll(x, [2, -1], [1, 0]), [f32(3, 4)]),
    "matrix_inverse": (lambda x: tf.linalg.inv(x + 4.0 * tf.eye(3)) * 2.0, [f32(2, 3, 3)]),
    "matrix_determinant": (lambda x: tf.linalg.det(x + 4.0 * tf.eye(3)) + 1.0, [f32(2, 3, 3)]),
    "image_projective_transform": (
        lambda x: _core.image_projective_transform(
            x, tf.constant([[0.9, -0.2, 1.5, 0.3, 1.1, -0.7, 0.0, 0.0]]), [4, 5], 1, 0, 0.0) * 2.0,
        [f32(2, 4, 5, 3)]),
    "cholesky": (lambda x: tf.linalg.cholesky(tf.matmul(x, x, transpose_b=True) + 3.0 * tf.eye(3)),
                 [f32(2, 3, 3)]),
    "matrix_triangular_solve": (lambda a, b: tf.linalg.triangular_solve(a + 4.0 * tf.eye(3), b, lower=False),
                                [f32(2, 3, 3), f32(2, 3, 2)]),
    "matrix_solve": (lambda a, b: tf.linalg.solve(a + 4.0 * tf.eye(3), b, adjoint=True),
                     [f32(2, 3, 3), f32(2, 3, 2)]),
    "qr": (lambda x: tf.linalg.qr(x, full_matrices=True), [f32(2, 4, 3)]),
    "self_adjoint_eig": (lambda x: tf.linalg.eigh(x + tf.linalg.matrix_transpose(x)), [f32(2, 3, 3)]),
    "svd": (lambda x: tf.linalg.svd(x), [f32(2, 4, 3)]),
    "log_matrix_determinant": (lambda x: tf.linalg.slogdet(x), [f32(2, 3, 3)]),
    "matrix_band_part": (lambda x: _core.matrix_band_part(x, 1, 0) * 2.0, [f32(3, 4)]),
    "lu": (lambda x: tf.linalg.lu(x + 4.0 * tf.eye(3)), [f32(2, 3, 3)]),
    "random_uniform": (lambda x: x + tf.random.uniform([3, 4], seed=1), [f32(3, 4)]),
    "random_normal": (lambda x: x + tf.random.normal([3, 4], seed=2), [f32(3, 4)]),
    "truncated_normal": (lambda x: x + tf.random.truncated_normal([3, 4], seed=3),
                         [f32(3, 4)]),
    "conv2d": (lambda x, f: tf.nn.conv2d(x, f, strides=1, padding="SAME"),
               [f32(1, 5, 5, 2), f32(3, 3, 2, 4)]),
    "conv2d_backprop_input": (_conv_grads, [f32(1, 5, 5, 2), f32(3, 3, 2, 4)]),
    "conv2d_backprop_filter": (_conv_grads, [f32(1, 5, 5, 2), f32(3, 3, 2, 4)]),
    "conv2d_bias_act": (lambda x, f, b: tf.nn._conv2d_bias_act(x, f, b, 1, "SAME", "NHWC", None, True),
                        [f32(1, 5, 5, 2), f32(3, 3, 2, 4), f32(4)]),
    "matmul_bias_act": (lambda a, b, c: _core.matmul_bias_act(a, b, c, False, True, 1),
                        [f32(3, 4), f32(5, 4), f32(5)]),
    "batch_moments": (lambda x: tf.nn.moments(x, [0, 1]), [f32(2, 3, 4)]),
    "batch_moments_grad": (_moments_grad, [f32(2, 3, 4)]),
    "batch_norm_grad_sums": (_batch_norm_grads, [f32(2, 3, 4), f32(4), f32(4), f32(4), pos(4)]),
    "max_pool": (lambda x: tf.nn.max_pool2d(x, 2, 2, "VALID"), [f32(1, 4, 4, 3)]),
    "max_pool_grad": (_pool_grad(tf.nn.max_pool2d), [f32(1, 4, 4, 3)]),
    "max_pool_grad_grad": (_max_pool_second_order, [f32(1, 4, 4, 3)]),
    "avg_pool": (lambda x: tf.nn.avg_pool2d(x, 2, 2, "SAME"), [f32(1, 5, 5, 3)]),
    "avg_pool_grad": (_pool_grad(tf.nn.avg_pool2d), [f32(1, 4, 4, 3)]),
    "batch_norm": (lambda x, m, v, o, s: tf.nn.batch_normalization(x, m, v, o, s, 1e-3),
                   [f32(2, 3, 4), f32(4), pos(4), f32(4), f32(4)]),
    "sparse_softmax_cross_entropy_with_logits": (
        lambda y, x: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=x),
        [ints(3, hi=4), f32(3, 4)]),
    "softmax_cross_entropy_with_logits": (
        lambda y, x: tf.nn.softmax_cross_entropy_with_logits(labels=tf.nn.softmax(y), logits=x),
        [f32(3, 4), f32(3, 4)]),
}
for _n in UNARY:
    CASES.setdefault(_n, (getattr(_core, _n), [pos(3, 4) if _n in UNARY_POS else f32(3, 4)]))
for _n in BINARY:
    CASES.setdefault(_n, (getattr(_core, _n), [pos(3, 4), pos(3, 4)] if _n in (
        "pow", "rsqrt_grad", "sqrt_grad", "floormod", "floordiv") else [f32(3, 4), f32(1, 4)]))
for _n in REDUCE:
    CASES.setdefault(_n, (lambda x, _f=getattr(tf, _n): _f(x, axis=1), [f32(3, 4)]))

# tf.math's functions, scans and segment reductions
for _n in ("tan", "atan", "sinh", "cosh", "asinh", "erf", "erfc", "softsign", "selu", "lgamma", "digamma",
           "bessel_i0", "bessel_i0e", "bessel_i1", "bessel_i1e"):
    CASES[_n] = (getattr(_core, _n), [f32(3, 4)])
for _n in ("asin", "acos", "atanh", "erfinv"):
    CASES[_n] = (getattr(_core, _n), [f32(3, 4, lo=-0.9, hi=0.9)])
CASES["acosh"] = (lambda x: tf.math.acosh(x + 1.0), [pos(3, 4)])
CASES["ndtri"] = (tf.math.ndtri, [f32(3, 4, lo=0.05, hi=0.95)])
for _n in ("atan2", "truncatediv", "truncatemod", "xlogy", "xdivy", "xlog1py", "div_no_nan", "mul_no_nan",
           "nextafter", "igamma", "igammac", "zeta", "polygamma", "igamma_grad_a"):
    CASES[_n] = (getattr(_core, _n), [pos(3, 4), pos(3, 4)])
CASES["cumprod"] = (lambda x: tf.math.cumprod(x, axis=1, exclusive=True) + 1.0, [f32(3, 5)])
CASES["cumulative_logsumexp"] = (lambda x: tf.math.cumulative_logsumexp(x, axis=0, reverse=True), [f32(3, 5)])
CASES["segment_reduce"] = (lambda x, i: tf.math.unsorted_segment_max(x, i, 3) + tf.math.segment_sum(x, [0, 0, 2]),
                           [f32(3, 4), ints(3, hi=3)])

OPS = [(row[2], row[1]) for row in _core.op_table()]
RANDOM = {"random_uniform", "random_normal", "truncated_normal"}


def test_every_op_has_a_case():
    missing = sorted(n for n, _ in OPS if n not in CASES)
    assert not missing, "ops of ops.def with no replay case (add them to CASES): %s" % missing


def _np(x):
    return [np.asarray(t.numpy()) for t in (x if isinstance(x, (list, tuple)) else [x])]


@pytest.mark.parametrize("name,tfname", OPS, ids=[n for n, _ in OPS])
def test_replay_matches_eager(name, tfname):
    fn, makers = CASES[name]
    f = tf.function(fn)
    first = [tf.constant(m()) for m in makers]
    f(*first)
    graph = f.get_concrete_function(*first).graph
    assert graph is not None, "the function broke the graph"
    ops = {n["op"] for n in graph.nodes() if n["kind"] == "Op"}
    assert tfname in ops, "%s not recorded: %s" % (tfname, sorted(ops))
    for _ in range(2):
        args = [tf.constant(m()) for m in makers]
        if name in RANDOM:
            a, b = _np(f(*args)), _np(f(*args))
            assert not np.array_equal(a[0], b[0]), "a replayed random op must draw new values"
            assert a[0].shape == (3, 4)
            continue
        got = _np(f(*args))
        want = _np(fn(*args))
        assert f.experimental_get_tracing_count() == 1
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)


def test_a_pass_can_insert_casts_and_reinfer():
    """The automatic-mixed-precision pass's tools: MatMul in float16 between casts."""
    from mixprec import _function

    def to_f16_matmul(g, name):
        nodes = g.nodes()
        mm = next(i for i, n in enumerate(nodes) if n["op"] == "MatMul")
        for k in range(2):
            src = tuple(g.nodes()[mm]["inputs"][k])
            e = g.insert_cast(mm, src, "float16")
            mm += 1
            g.set_input(mm, k, e)
        back = g.insert_cast(mm + 1, (mm, 0), "float32")
        for i, n in enumerate(g.nodes()):
            if i != back[0]:
                for k, src in enumerate(n["inputs"]):
                    if tuple(src) == (mm, 0):
                        g.set_input(i, k, back)
        g.infer()

    _function.graph_passes.append(to_f16_matmul)
    try:
        @tf.function
        def f(x, w):
            return tf.matmul(x, w) + 1.0

        x = tf.constant([[1.0 + 2.0 ** -12]])
        w = tf.constant([[1.0]])
        f(x, w)  # the traced call runs eagerly (float32)
        assert float(f(x, w)) == 2.0  # replayed: the product rounded to float16
        kinds = [(n["op"], n["dtype"].name) for n in f.get_concrete_function(x, w).graph.nodes()
                 if n["kind"] == "Op"]
        assert ("MatMul", "float16") in kinds and ("AddV2", "float32") in kinds
    finally:
        _function.graph_passes.remove(to_f16_matmul)
    assert float(tf.function(lambda x, w: tf.matmul(x, w) + 1.0)(x, w)) != 2.0


def test_variadic_ops_with_many_inputs_replay():
    @tf.function
    def f(x):
        return tf.concat([x * float(i) for i in range(70)], axis=0)

    x = tf.constant([1.0, 2.0])
    f(x)
    y = tf.constant([3.0, 5.0])
    np.testing.assert_array_equal(f(y).numpy(), np.concatenate([[3.0 * i, 5.0 * i]
                                                                for i in range(70)]))
    assert f.experimental_get_tracing_count() == 1


def test_replays_reuse_buffers_without_touching_held_results():
    """A replay offers each op its buffer from the previous replay; results the caller still
    holds (and their views) are never overwritten."""
    @tf.function
    def f(x):
        h = tf.nn.relu(tf.matmul(x, x) + 1.0)
        return h * 2.0, tf.reshape(h, [-1])

    xs = [tf.constant(np.full((3, 3), float(i), np.float32)) for i in range(5)]
    held = [f(x) for x in xs]
    for x, (a, b) in zip(xs, held):
        want = np.maximum(x.numpy() @ x.numpy() + 1.0, 0.0)
        np.testing.assert_array_equal(a.numpy(), want * 2.0)
        np.testing.assert_array_equal(b.numpy(), want.reshape(-1))
