"""GradientTape: every differentiable op's backward rule against central finite differences
in float64, and TensorFlow's tape semantics (watching, persistence, nesting, higher order).

Reference: finite differences of sum(f(x) * w) with a random upstream weight w (so rules are
checked with a non-uniform dy), inputs drawn away from kinks. Tolerances in TOL.
"""

import math
import warnings

import numpy as np
import pytest

import mixprec as tf
from mixprec import _core
from tolerances import assert_close, tolerance

H = 1e-6  # finite-difference step (float64)
RNG_SEED = 1234


def _rng():
    return np.random.default_rng(RNG_SEED)


def _away(shape, rng, lo=0.3, hi=2.0, signed=True):
    """Random values with |x| in [lo, hi] (away from 0, where many rules have kinks)."""
    x = rng.uniform(lo, hi, size=shape)
    if signed:
        x *= rng.choice([-1.0, 1.0], size=shape)
    return x


def _numeric_grads(f, xs, w, h):
    grads = []
    for k, x in enumerate(xs):
        g = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            vals = []
            for sgn in (1.0, -1.0):
                xp = [a.copy() for a in xs]
                xp[k][idx] += sgn * h
                y = f(*[tf.constant(a) for a in xp]).numpy()
                vals.append(float(np.sum(y * w)))
            g[idx] = (vals[0] - vals[1]) / (2 * h)
        grads.append(g)
    return grads


def check_grad(f, *xs, h=H, kind_dtype="float64", seed=0):
    """Asserts tape gradients of sum(f(*xs) * w) equal central differences (float64);
    ``kind_dtype`` picks the tolerance row (float32 for functions that round through it)."""
    rtol, atol = tolerance(kind_dtype, "finite_difference")
    xs = [np.asarray(x, dtype=np.float64) for x in xs]
    ts = [tf.constant(x) for x in xs]
    with tf.GradientTape() as tape:
        for t in ts:
            tape.watch(t)
        y = f(*ts)
    assert y.dtype == tf.float64
    w = np.random.default_rng(seed + 99).standard_normal(tuple(y.shape))
    grads = tape.gradient(y, ts, output_gradients=tf.constant(w))
    expected = _numeric_grads(f, xs, w, h)
    for k, (g, e) in enumerate(zip(grads, expected)):
        assert g is not None, "input %d: no gradient" % k
        assert g.dtype == tf.float64
        assert tuple(g.shape) == xs[k].shape, "input %d: gradient shape %s, input %s" % (
            k, tuple(g.shape), xs[k].shape)
        np.testing.assert_allclose(g.numpy(), e, rtol=rtol, atol=atol,
                                   err_msg="gradient of input %d" % k)


# --------------------------------------------------------------------------- the op table

r = _rng()

# pyname -> list of (id, f, inputs). Every differentiable op in ops.def has at least one.
_ONE_REPLICA = _core.comm_threads(1, 30.0)

GRAD_CASES = {
    # through float32: a coarser step and tolerance (float32 rounding in the difference)
    "cast": [("f64->f32->f64", lambda x: tf.cast(tf.cast(x, "float32"), "float64") * x,
              [_away((3,), r)], {"h": 1e-2, "kind_dtype": "float32"})],
    "identity": [("", lambda x: tf.identity(x) * x, [_away((2, 3), r)])],
    # one replica: the sum is the identity; several: tests/distribute/test_keras.py
    "all_reduce": [("one replica", lambda x: _core.all_reduce(_ONE_REPLICA, 0, x) * x,
                    [_away((2, 3), r)])],
    "neg": [("", lambda x: -x, [_away((4,), r)])],
    "abs": [("", tf.abs, [_away((2, 3), r)])],
    "exp": [("", tf.exp, [_away((5,), r)])],
    "log": [("", tf.math.log, [_away((5,), r, signed=False)])],
    "sqrt": [("", tf.sqrt, [_away((5,), r, signed=False)])],
    "square": [("", tf.square, [_away((2, 2), r)])],
    "relu": [("", tf.nn.relu, [_away((3, 3), r)])],
    "sigmoid": [("", tf.sigmoid, [_away((6,), r)])],
    "tanh": [("", tf.tanh, [_away((6,), r)])],
    "rsqrt": [("", tf.math.rsqrt, [_away((5,), r, signed=False)])],
    "reciprocal": [("", tf.math.reciprocal, [_away((5,), r)])],
    "log1p": [("", tf.math.log1p, [r.uniform(-0.5, 2.0, size=(5,))])],
    "expm1": [("", tf.math.expm1, [_away((5,), r)])],
    "elu": [("alpha=1", tf.nn.elu, [_away((6,), r)]),
            ("alpha=0.5", lambda x: _core.elu(x, alpha=0.5), [_away((6,), r)])],
    "softplus": [("", tf.math.softplus, [_away((6,), r, hi=4.0)])],
    "gelu": [("exact", tf.nn.gelu, [_away((6,), r, hi=3.0)]),
             ("tanh", lambda x: tf.nn.gelu(x, approximate=True), [_away((6,), r, hi=3.0)])],
    "sin": [("", tf.sin, [_away((5,), r)])],
    "sign": [("zeros", tf.sign, [_away((4,), r)])],
    "cos": [("", tf.cos, [_away((5,), r)])],
    "leaky_relu": [("alpha=0.2", tf.nn.leaky_relu, [_away((6,), r)]),
                   ("alpha=0.3", lambda x: tf.nn.leaky_relu(x, alpha=0.3), [_away((6,), r)])],
    "add": [("same", tf.add, [_away((2, 3), r), _away((2, 3), r)]),
            ("bcast", tf.add, [_away((2, 1, 3), r), _away((4, 1), r)]),
            ("scalar", tf.add, [_away((), r), _away((2, 3), r)])],
    "subtract": [("bcast", tf.subtract, [_away((3, 1), r), _away((1, 4), r)])],
    "multiply": [("bcast", tf.multiply, [_away((2, 3, 1), r), _away((3, 4), r)]),
                 ("same-tensor", lambda x: x * x, [_away((3,), r)])],
    "realdiv": [("bcast", tf.realdiv, [_away((2, 3), r), _away((3,), r)])],
    "floormod": [("bcast", tf.math.floormod,
                  [r.uniform(0.1, 0.9, (2, 3)) + np.arange(3) * 2.0, np.full((3,), 1.7)])],
    "pow": [("bcast", tf.pow, [_away((2, 3), r, signed=False), r.uniform(-2, 3, (3,))]),
            ("int exponent, negative base",
             lambda x: tf.pow(x, tf.constant(3.0, "float64")), [_away((4,), r)])],
    "maximum": [("bcast", tf.maximum, [_away((2, 3), r), _away((3,), r)])],
    "minimum": [("bcast", tf.minimum, [_away((3, 1), r), _away((1, 2), r)])],
    "squared_difference": [("bcast", tf.math.squared_difference,
                            [_away((2, 3), r), _away((1, 3), r)])],
    # backward helpers (their own rules give second-order gradients)
    "relu_grad": [("", lambda x, g: _core.relu_grad(x, g) * x, [_away((5,), r), _away((5,), r)])],
    "sigmoid_grad": [("", _core.sigmoid_grad, [r.uniform(0.1, 0.9, (5,)), _away((5,), r)])],
    "tanh_grad": [("", _core.tanh_grad, [r.uniform(-0.9, 0.9, (5,)), _away((5,), r)])],
    "elu_grad": [("alpha=1", lambda y, g: _core.elu_grad(y, g, alpha=1.0),
                  [_away((6,), r, hi=0.9), _away((6,), r)]),
                 ("alpha=0.5", lambda y, g: _core.elu_grad(y, g, alpha=0.5),
                  [_away((6,), r, hi=0.45), _away((6,), r)])],
    "softplus_grad": [("", _core.softplus_grad, [_away((5,), r), _away((5,), r)])],
    "gelu_grad": [("", _core.gelu_grad, [_away((5,), r, hi=3.0), _away((5,), r)])],
    "gelu_tanh_grad": [("", _core.gelu_tanh_grad, [_away((5,), r, hi=3.0), _away((5,), r)])],
    "rsqrt_grad": [("", _core.rsqrt_grad, [_away((5,), r, signed=False), _away((5,), r)])],
    "sqrt_grad": [("", _core.sqrt_grad, [_away((5,), r, signed=False), _away((5,), r)])],
    "leaky_relu_grad": [("", lambda x, g: _core.leaky_relu_grad(x, g, alpha=0.3) * x,
                         [_away((5,), r), _away((5,), r)])],
    "where": [("bcast", lambda x, y: tf.where(
        tf.constant([[True, False, True]]), x, y), [_away((2, 3), r), _away((2, 1), r)])],
    "reduce_sum": [("all", tf.reduce_sum, [_away((2, 3), r)]),
                   ("axes(0,2) keepdims", lambda x: tf.reduce_sum(x, [0, 2], keepdims=True),
                    [_away((2, 3, 4), r)]),
                   ("axis -1", lambda x: tf.reduce_sum(x, -1), [_away((3, 4), r)])],
    "reduce_mean": [("axis 1", lambda x: tf.reduce_mean(x, 1), [_away((2, 3, 2), r)]),
                    ("axes(0,2) keepdims", lambda x: tf.reduce_mean(x, [0, 2], keepdims=True),
                     [_away((2, 3, 4), r)])],
    "reduce_max": [("axis 1", lambda x: tf.reduce_max(x, 1), [_away((3, 4), r)]),
                   ("axes(0,2) keepdims", lambda x: tf.reduce_max(x, [0, 2], keepdims=True),
                    [_away((2, 3, 2), r)])],
    "reduce_min": [("all", tf.reduce_min, [_away((3, 4), r)]),
                   ("axis 0 keepdims", lambda x: tf.reduce_min(x, 0, keepdims=True),
                    [_away((3, 2), r)])],
    "reduce_prod": [("axis 1", lambda x: tf.reduce_prod(x, 1), [_away((3, 4), r, lo=0.5)]),
                    ("axes(0,2) keepdims", lambda x: tf.reduce_prod(x, [0, 2], keepdims=True),
                     [_away((2, 3, 2), r, lo=0.5)])],
    "matmul_bias_act": [
        ("relu", lambda a, b, c: _core.matmul_bias_act(a, b, c, False, False, 1),
         [_away((2, 3), r), _away((3, 4), r), _away((4,), r)]),
        ("transposed, linear", lambda a, b, c: _core.matmul_bias_act(a, b, c, True, True, 0),
         [_away((3, 2), r), _away((4, 3), r), _away((4,), r)]),
    ],
    "matmul": [("2d", tf.matmul, [_away((2, 3), r), _away((3, 4), r)]),
               ("ta", lambda a, b: tf.matmul(a, b, transpose_a=True),
                [_away((3, 2), r), _away((3, 4), r)]),
               ("tb", lambda a, b: tf.matmul(a, b, transpose_b=True),
                [_away((2, 3), r), _away((4, 3), r)]),
               ("ta tb", lambda a, b: tf.matmul(a, b, transpose_a=True, transpose_b=True),
                [_away((3, 2), r), _away((4, 3), r)]),
               ("batched", tf.matmul, [_away((2, 2, 3), r), _away((2, 3, 2), r)]),
               ("batched bcast rank", tf.matmul, [_away((2, 2, 3), r), _away((3, 2), r)]),
               ("batched bcast 1", lambda a, b: tf.matmul(a, b, transpose_b=True),
                [_away((1, 2, 3), r), _away((2, 1, 2, 3), r)])],
    "softmax": [("last", tf.nn.softmax, [_away((2, 4), r)]),
                ("axis 0", lambda x: tf.nn.softmax(x, axis=0), [_away((3, 2), r)])],
    "log_softmax": [("last", tf.nn.log_softmax, [_away((2, 4), r)])],
    "sparse_softmax_cross_entropy_with_logits": [
        ("2d", lambda z: tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.constant([2, 0, 3]), logits=z), [_away((3, 4), r)]),
        ("3d", lambda z: tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.constant([[1, 0], [2, 2]]), logits=z), [_away((2, 2, 3), r)])],
    # TensorFlow differentiates both the logits and the labels; its logits rule
    # (softmax - labels) assumes each label row sums to 1, so the labels are probabilities
    "softmax_cross_entropy_with_logits": [
        ("", lambda lab, z: tf.nn.softmax_cross_entropy_with_logits(
            labels=lab / tf.reduce_sum(lab, -1, keepdims=True), logits=z),
         [r.uniform(0.2, 1, (3, 4)), _away((3, 4), r)])],
    "reshape": [("", lambda x: tf.reshape(x, [3, -1]) * np.arange(4.0), [_away((2, 6), r)])],
    "transpose": [("perm", lambda x: tf.transpose(x, [2, 0, 1]), [_away((2, 3, 4), r)]),
                  ("default", tf.transpose, [_away((2, 3), r)])],
    "concat": [("axis 1", lambda a, b: tf.concat([a, b, a], 1),
                [_away((2, 3), r), _away((2, 1), r)]),
               ("axis 0", lambda a, b: tf.concat([a, b], 0), [_away((1, 3), r), _away((2, 3), r)])],
    "stack": [("axis 1", lambda a, b: tf.stack([a, b], axis=1), [_away((2, 3), r), _away((2, 3), r)]),
              ("axis -1", lambda a, b: tf.stack([b, a, b], axis=-1),
               [_away((3,), r), _away((3,), r)])],
    "strided_slice": [("basic", lambda x: x[1:, ::2], [_away((3, 4), r)]),
                      ("negative step, shrink, newaxis", lambda x: x[::-1, 2, None],
                       [_away((3, 4), r)]),
                      ("ellipsis", lambda x: x[..., 1:3], [_away((2, 2, 4), r)])],
    "broadcast_to": [("", lambda x: tf.broadcast_to(x, [2, 3, 4]), [_away((3, 1), r)])],
    # x[i] with a traced index (getitem while tracing): the row, and a negative index
    "index_t": [("row", lambda x: _core.index_t(x, tf.constant(1)) * 2.0, [_away((3, 4), r)]),
                ("from the end", lambda x: _core.index_t(x, tf.constant(-1, tf.int64)),
                 [_away((2, 2, 3), r)])],
    # tensor-bound slices (tf.strided_slice / tf.slice of tensor specs, a traced x[i:j])
    "strided_slice_t": [("masks, negative stride", lambda x: tf.strided_slice(
        x, tf.constant([-1, 1]), tf.constant([0, 4]), tf.constant([-1, 2]), end_mask=1),
        [_away((3, 5), r)]),
                        ("shrink, new axis", lambda x: tf.strided_slice(
                            x, [1, 0, 1], [2, 0, 3], new_axis_mask=2, shrink_axis_mask=1),
                         [_away((3, 4), r)])],
    "slice_t": [("size -1", lambda x: tf.slice(x, [1, 0], [-1, 2]), [_away((3, 4), r)])],
    "strided_slice_t_grad": [("second derivative", lambda x: _second(
        lambda v: tf.reduce_sum(tf.strided_slice(v, [0, 1], [2, 4], [1, 2]) ** 3), x), [_away((3, 5), r)]),
                             ("Slice's", lambda x: _second(
                                 lambda v: tf.reduce_sum(tf.slice(v, [1, 1], [2, -1]) ** 3), x),
                              [_away((3, 4), r)])],
    # tf.gather: repeated indices sum their rows (the dense form of TF's IndexedSlices)
    "gather": [("axis 0 repeated", lambda x: tf.gather(x, [2, 0, 2, 1]), [_away((3, 4), r)]),
               ("axis 1 of 2-D indices", lambda x: tf.gather(x, [[1, 1], [0, 3]], axis=1),
                [_away((2, 4, 3), r)]),
               ("axis -1 scalar index", lambda x: tf.gather(x, tf.constant(2, tf.int64), axis=-1),
                [_away((3, 4), r)])],
    # the gradient of gather's gradient: the second derivative of a gather
    "gather_grad": [("second order of a gather", lambda x: _second(
        lambda t: tf.reduce_sum(tf.square(tf.gather(t, [1, 1, 0]))), x), [_away((3, 2), r)]),
                    ("direct", lambda d: _core.gather_grad(d, tf.constant([2, 0, 2]), 0, 4),
                     [_away((3, 2), r)])],
    # the array ops (mixprec/_array_extra.py)
    "gather_nd": [("rows", lambda x: tf.gather_nd(x, [[2], [0], [2]]), [_away((3, 4), r)]),
                  ("elements", lambda x: tf.gather_nd(x, [[[0, 1], [2, 3]], [[0, 1], [1, 0]]]),
                   [_away((3, 4), r)]),
                  ("batch_dims", lambda x: tf.gather_nd(x, [[1], [0]], batch_dims=1),
                   [_away((2, 3, 2), r)]),
                  ("gather batch_dims", lambda x: tf.gather(x, [[0, 2], [1, 1]], axis=1,
                                                            batch_dims=1), [_away((2, 3), r)]),
                  ("sort values", lambda x: tf.sort(x, axis=0, direction="DESCENDING"),
                   [np.array([[0.3, -1.2], [2.5, 0.7], [-0.4, 1.9]])]),
                  ("top_k values", lambda x: tf.math.top_k(x, 2).values,
                   [np.array([[0.3, -1.2, 2.2], [2.5, 0.7, 1.1]])]),
                  ("tensordot", lambda a: tf.tensordot(a, a * 2.0, [[0], [0]]), [_away((3, 2), r)]),
                  ("boolean_mask", lambda x: tf.boolean_mask(x, [True, False, True]),
                   [_away((3, 2), r)]),
                  ("repeat", lambda x: tf.repeat(x, [2, 0, 3], axis=0), [_away((3, 2), r)])],
    "tensor_scatter_update": [("", lambda t, u: tf.tensor_scatter_nd_update(t, [[1], [3]], u),
                               [_away((4, 2), r), _away((2, 2), r)])],
    "tensor_scatter_add": [("duplicates", lambda t, u: tf.tensor_scatter_nd_add(t, [[1], [3], [1]], u),
                            [_away((4, 2), r), _away((3, 2), r)]),
                           ("scatter_nd", lambda u: tf.scatter_nd([[0, 1], [2, 0]], u, [3, 2]),
                            [_away((2,), r)])],
    "tensor_scatter_sub": [("", lambda t, u: tf.tensor_scatter_nd_sub(t, [[2], [0]], u),
                            [_away((3, 2), r), _away((2, 2), r)])],
    "tensor_scatter_min": [("", lambda t, u: tf.tensor_scatter_nd_min(t, [[2], [0]], u),
                            [np.array([[0.5, -1.0], [2.0, 3.0], [1.5, -2.5]]),
                             np.array([[0.9, -1.5], [0.1, -3.0]])])],
    "tensor_scatter_max": [("", lambda t, u: tf.tensor_scatter_nd_max(t, [[2], [0]], u),
                            [np.array([[0.5, -1.0], [2.0, 3.0], [1.5, -2.5]]),
                             np.array([[0.9, -1.5], [0.1, -3.0]])])],
    "reverse": [("two axes", lambda x: tf.reverse(x, [0, -1]) * np.arange(4.0), [_away((3, 4), r)]),
                ("reverse_sequence", lambda x: tf.reverse_sequence(x, [2, 3], seq_axis=1),
                 [_away((2, 4), r)])],
    "roll": [("", lambda x: tf.roll(x, [1, -3], [0, 1]) * np.arange(4.0), [_away((3, 4), r)]),
             ("norm", lambda x: tf.norm(x, axis=1) + tf.norm(x, ord=1) + tf.norm(x, ord=3.0),
              [_away((3, 4), r)])],
    # MatrixInverse / MatrixDeterminant: well-conditioned batches (a + 4 I)
    "matrix_inverse": [("batched", lambda x: tf.linalg.inv(x), [_away((2, 3, 3), r) + 4 * np.eye(3)]),
                       ("adjoint", lambda x: tf.linalg.inv(x, adjoint=True), [_away((3, 3), r) + 4 * np.eye(3)])],
    # ImageProjectiveTransformV3: TensorFlow's rule (the inverse transform) is the adjoint for
    # pixel permutations — an integer shift with a zero fill, a flip. The kernel computes in
    # float32 (as TensorFlow's) and is linear in the images: a wide step, float32 tolerances
    "image_projective_transform": [
        ("shift", lambda x: _core.image_projective_transform(
            x, tf.constant([[1, 0, 2, 0, 1, -1, 0, 0]], tf.float32), [4, 5], 1, 2, 0.0),
         [_away((2, 4, 5, 3), r)], {"h": 0.25, "kind_dtype": "float32"}),
        ("flip nearest", lambda x: _core.image_projective_transform(
            x, tf.constant([[-1, 0, 4, 0, 1, 0, 0, 0]], tf.float32), [4, 5], 0, 0, 0.0),
         [_away((2, 4, 5, 1), r)], {"h": 0.25, "kind_dtype": "float32"})],
    "matrix_determinant": [("batched", lambda x: tf.linalg.det(x), [_away((2, 3, 3), r) + 4 * np.eye(3)]),
                           ("second order", lambda x: _second(lambda t: tf.linalg.det(t), x),
                            [_away((3, 3), r) + 4 * np.eye(3)])],
    # the decompositions and solves (tests/test_linalg_decomp.py has the wider cases)
    "cholesky": [("spd", lambda x: tf.linalg.cholesky(tf.matmul(x, x, transpose_b=True) + 3 * np.eye(3)),
                  [_away((2, 3, 3), r)])],
    "matrix_triangular_solve": [("lower", lambda a, b: tf.linalg.triangular_solve(a, b),
                                 [_away((2, 3, 3), r) + 4 * np.eye(3), _away((2, 3, 2), r)]),
                                ("upper adjoint", lambda a, b: tf.linalg.triangular_solve(
                                    a, b, lower=False, adjoint=True),
                                 [_away((3, 3), r) + 4 * np.eye(3), _away((3, 2), r)])],
    "matrix_solve": [("", lambda a, b: tf.linalg.solve(a, b), [_away((2, 3, 3), r) + 4 * np.eye(3),
                                                                 _away((2, 3, 2), r)])],
    "qr": [("deep", lambda x: tf.linalg.qr(x)[0] * 2.0 + tf.reduce_sum(tf.linalg.qr(x)[1]),
            [_away((4, 3), r) + np.eye(4, 3)]),
           ("wide", lambda x: tf.concat([tf.linalg.qr(x)[0], tf.linalg.qr(x)[1]], 1),
            [_away((2, 4), r) + np.eye(2, 4)])],
    "self_adjoint_eig": [("values", lambda x: tf.linalg.eigvalsh(x),
                          [np.diag([1.0, 2.5, 4.0]) + 0.1 * _away((3, 3), r)]),
                         ("vectors", lambda x: tf.linalg.eigh(x)[1] ** 2,
                          [np.diag([1.0, 2.5, 4.0]) + 0.1 * _away((3, 3), r)])],
    "svd": [("values", lambda x: tf.linalg.svd(x, compute_uv=False), [_away((2, 4, 3), r)]),
            ("vectors", lambda x: tf.concat([tf.linalg.svd(x)[1] ** 2, tf.transpose(tf.linalg.svd(x)[2] ** 2)], 0),
             [np.diag([3.0, 2.0, 1.0])[:, :3] + 0.1 * _away((3, 3), r)])],
    "log_matrix_determinant": [("", lambda x: tf.linalg.slogdet(x)[1], [_away((2, 3, 3), r) + 4 * np.eye(3)])],
    "matrix_band_part": [("", lambda x: _core.matrix_band_part(x, 1, 0), [_away((3, 4), r)])],
    "cumsum": [("axis 1", lambda x: tf.cumsum(x, axis=1), [_away((2, 5), r)]),
               ("exclusive reverse", lambda x: tf.cumsum(x, axis=0, exclusive=True, reverse=True),
                [_away((4, 3), r)]),
               ("second order", lambda x: _second(
                   lambda t: tf.reduce_sum(tf.square(tf.cumsum(t, reverse=True))), x),
                [_away((5,), r)])],
    # the gradient of a slice's gradient: exercised through the second derivative
    "strided_slice_grad": [("second order of a slice", lambda x: _second(
        lambda t: tf.reduce_sum(tf.square(t[1:, ::2])), x), [_away((3, 4), r)])],
    # convolution and pooling (tests/test_nn_conv.py compares every dtype with these)
    "conv2d": [
        ("nhwc same stride 2", lambda x, f: tf.nn.conv2d(x, f, 2, "SAME"),
         [_away((1, 5, 4, 2), r), _away((3, 2, 2, 3), r)]),
        ("nchw valid dilated grouped", lambda x, f: tf.nn.conv2d(
            x, f, 1, "VALID", data_format="NCHW", dilations=[2, 1]),
         [_away((1, 4, 5, 4), r), _away((2, 2, 2, 4), r)]),
        ("explicit padding", lambda x, f: tf.nn.conv2d(x, f, [1, 2], [[0, 0], [1, 0], [2, 1], [0, 0]]),
         [_away((2, 3, 4, 1), r), _away((2, 3, 1, 2), r)]),
    ],
    "conv2d_backprop_input": [("", lambda f, dy: tf.nn.conv2d_backprop_input(
        [1, 5, 4, 2], f, dy, 2, "SAME"), [_away((3, 2, 2, 3), r), _away((1, 3, 2, 3), r)])],
    "conv2d_backprop_filter": [("", lambda x, dy: tf.nn.conv2d_backprop_filter(
        x, [3, 2, 2, 3], dy, 2, "SAME"), [_away((1, 5, 4, 2), r), _away((1, 3, 2, 3), r)])],
    "max_pool": [
        ("overlapping same", lambda x: tf.nn.max_pool2d(x, 2, 1, "SAME"), [_away((1, 4, 4, 2), r)]),
        ("nchw", lambda x: tf.nn.max_pool2d(x, [3, 2], 2, "VALID", data_format="NCHW"),
         [_away((2, 2, 5, 4), r)]),
    ],
    "avg_pool": [
        ("same stride 2", lambda x: tf.nn.avg_pool2d(x, 3, 2, "SAME"), [_away((1, 5, 5, 2), r)]),
        ("nchw", lambda x: tf.nn.avg_pool2d(x, 2, 1, "VALID", data_format="NCHW"),
         [_away((1, 2, 3, 4), r)]),
    ],
    "batch_norm": [
        ("channels last", lambda x, s, o, m, v: _core.batch_norm(x, s, o, m, v, 1e-3, False),
         [_away((2, 3, 4), r), _away((4,), r), _away((4,), r), _away((4,), r), _away((4,), r, signed=False)]),
        ("channels first", lambda x, s, o, m, v: _core.batch_norm(x, s, o, m, v, 0.5, True),
         [_away((2, 3, 2, 2), r), _away((3,), r), _away((3,), r), _away((3,), r), _away((3,), r, signed=False)]),
        ("training: batch statistics", lambda x, s, o: tf.nn.fused_batch_norm(
            x, s, o, epsilon=1e-3)[0], [_away((3, 2, 2, 2), r), _away((2,), r), _away((2,), r)]),
    ],
    "conv2d_bias_act": [
        ("nhwc relu strided", lambda x, f, b: _core.window_op(
            {row[2]: row[0] for row in _core.op_table()}["conv2d_bias_act"], (x, f, b), (2, 1), (1, 1), 1,
            (0, 0, 0, 0), False, None, 1),
         [_away((1, 5, 4, 2), r), _away((3, 2, 2, 3), r), _away((3,), r)]),
        ("nchw grouped, no activation", lambda x, f, b: _core.window_op(
            {row[2]: row[0] for row in _core.op_table()}["conv2d_bias_act"], (x, f, b), (1, 1), (2, 1), 0,
            (0, 0, 0, 0), True, None, 0),
         [_away((1, 4, 5, 4), r), _away((2, 2, 2, 4), r), _away((4,), r)]),
    ],
    "batch_moments": [
        ("channels last", lambda x: _moments_loss(x, [0, 1]), [_away((3, 2, 4), r)]),
        ("channels first", lambda x: _moments_loss(x, [0, 2, 3]), [_away((2, 3, 2, 2), r)]),
    ],
    "batch_moments_grad": [("second order of moments", lambda x: _second(
        lambda t: _moments_loss(t, [0, 1]), x), [_away((3, 2, 4), r)])],
    "batch_norm_grad_sums": [
        ("second order of batch norm", lambda x: _second(
            lambda t: tf.reduce_sum(tf.square(_core.batch_norm(
                t, *[tf.constant(np.array(v, "float64" if t.dtype == tf.float64 else "float32"))
                     for v in ([1.5, -0.5, 2.0], [0.1, 0.2, 0.3], [0.3, -0.2, 0.1], [1.2, 0.8, 2.0])],
                1e-3, False))), x),
         [_away((2, 2, 3), r)]),
        ("of its inputs", lambda x, dy, m: _core.batch_stats(
            {row[2]: row[0] for row in _core.op_table()}["batch_norm_grad_sums"], (x, dy, m), True),
         [_away((2, 3, 2), r), _away((2, 3, 2), r), _away((3,), r)]),
    ],
    "max_pool_grad": [("second order", lambda x: _second(
        lambda t: tf.reduce_sum(tf.square(tf.nn.max_pool2d(t, 2, 1, "SAME"))), x),
        [_away((1, 3, 4, 2), r)])],
    "max_pool_grad_grad": [("of MaxPoolGrad's dy", lambda x, g: _core.window_op(
        {row[2]: row[0] for row in _core.op_table()}["max_pool_grad_grad"], (x, g), (1, 1), (2, 2), 1,
        (0, 0, 0, 0), False, None), [_away((1, 3, 4, 2), r), _away((1, 3, 4, 2), r)])],
    "avg_pool_grad": [("second order", lambda x: _second(
        lambda t: tf.reduce_sum(tf.square(tf.nn.avg_pool2d(t, 2, 1, "SAME"))), x),
        [_away((1, 3, 4, 2), r)])],
}

# tf.math's functions, scans and segment reductions (csrc/grad_math.c), as TensorFlow's rules
_P = r.uniform(0.15, 0.85, (5,))
GRAD_CASES.update({
    "tan": [("", tf.math.tan, [r.uniform(-1.2, 1.2, (5,))])],
    "asin": [("", tf.math.asin, [r.uniform(-0.8, 0.8, (5,))])],
    "acos": [("", tf.math.acos, [r.uniform(-0.8, 0.8, (5,))])],
    "atan": [("", tf.math.atan, [_away((5,), r, hi=4.0)])],
    "sinh": [("", tf.math.sinh, [_away((5,), r)])],
    "cosh": [("", tf.math.cosh, [_away((5,), r)])],
    "asinh": [("", tf.math.asinh, [_away((5,), r, hi=5.0)])],
    "acosh": [("", tf.math.acosh, [r.uniform(1.2, 5.0, (5,))])],
    "atanh": [("", tf.math.atanh, [r.uniform(-0.8, 0.8, (5,))])],
    "erf": [("", tf.math.erf, [_away((5,), r)])],
    "erfc": [("", tf.math.erfc, [_away((5,), r)])],
    "erfinv": [("", tf.math.erfinv, [r.uniform(-0.9, 0.9, (5,))])],
    "ndtri": [("", tf.math.ndtri, [_P])],
    "lgamma": [("", tf.math.lgamma, [np.array([0.3, 1.7, 4.2, -0.4, -3.7])])],
    "digamma": [("", tf.math.digamma, [np.array([0.3, 1.7, 4.2, -0.4, -3.7])])],
    "softsign": [("", tf.nn.softsign, [_away((6,), r, hi=4.0)])],
    "selu": [("", tf.nn.selu, [_away((6,), r)])],
    "atan2": [("bcast", tf.math.atan2, [_away((2, 3), r), _away((3,), r)])],
    "xlogy": [("bcast", tf.math.xlogy, [_away((2, 3), r), _away((3,), r, signed=False)])],
    "xdivy": [("bcast", tf.math.xdivy, [_away((2, 3), r), _away((3,), r)])],
    "xlog1py": [("bcast", tf.math.xlog1py, [_away((2, 3), r), r.uniform(-0.5, 2.0, (3,))])],
    "div_no_nan": [("bcast", tf.math.divide_no_nan, [_away((2, 3), r), _away((3,), r)])],
    "mul_no_nan": [("bcast", tf.math.multiply_no_nan, [_away((2, 3), r), _away((3,), r)])],
    "nextafter": [("dy", lambda x: tf.math.nextafter(x, tf.constant(np.full(5, 10.0))) * x,
                   [_away((5,), r)])],
    "igamma": [("of x", lambda x: tf.math.igamma(tf.constant(np.array([0.5, 1.0, 2.5, 4.0, 7.0])), x),
                [r.uniform(0.3, 6.0, (5,))]),
               ("of a and x", tf.math.igamma, [r.uniform(0.3, 6.0, (5,)), np.array([0.2, 1.0, 3.0, 9.0, 30.0])])],
    "igammac": [("of x", lambda x: tf.math.igammac(tf.constant(np.array([0.5, 1.0, 2.5, 4.0, 7.0])), x),
                 [r.uniform(0.3, 6.0, (5,))]),
                ("of a and x", tf.math.igammac, [r.uniform(0.3, 6.0, (5,)), np.array([0.2, 1.0, 3.0, 9.0, 30.0])])],
    "zeta": [("of q", lambda q: tf.math.zeta(tf.constant(np.array([2.0, 3.0, 4.5, 2.5, 6.0])), q),
              [r.uniform(0.5, 4.0, (5,))])],
    "polygamma": [("of x", lambda x: tf.math.polygamma(tf.constant(np.array([0.0, 1.0, 2.0, 3.0, 1.0])), x),
                   [r.uniform(0.5, 4.0, (5,))])],
    "cumprod": [("axis 1", lambda x: tf.math.cumprod(x, axis=1), [_away((2, 4), r)]),
                ("exclusive reverse", lambda x: tf.math.cumprod(x, 0, exclusive=True, reverse=True),
                 [_away((3, 2), r)])],
    "cumulative_logsumexp": [
        ("axis 1", lambda x: tf.math.cumulative_logsumexp(x, axis=1), [_away((2, 4), r)]),
        # exp: the exclusive scan's first output is -inf
        ("exclusive reverse", lambda x: tf.exp(tf.math.cumulative_logsumexp(x, 0, exclusive=True, reverse=True)),
         [_away((3, 2), r)])],
    "bessel_i0": [("", tf.math.bessel_i0, [_away((5,), r, hi=4.0)])],
    "bessel_i0e": [("", tf.math.bessel_i0e, [_away((5,), r, hi=4.0)])],
    "bessel_i1": [("", tf.math.bessel_i1, [_away((5,), r, hi=4.0)])],
    "bessel_i1e": [("", tf.math.bessel_i1e, [_away((5,), r, hi=4.0)])],
    "segment_reduce": [
        ("sum", lambda x: tf.math.segment_sum(x, [0, 0, 2, 2]), [_away((4, 3), r)]),
        ("mean", lambda x: tf.math.segment_mean(x, [0, 1, 1, 1]), [_away((4, 3), r)]),
        ("unsorted sum, dropped ids", lambda x: tf.math.unsorted_segment_sum(x, [[1, -1], [0, 1]], 3),
         [_away((2, 2, 3), r)]),
        ("unsorted mean", lambda x: tf.math.unsorted_segment_mean(x, [2, 0, 2], 4), [_away((3, 2), r)]),
        ("sqrt_n", lambda x: tf.math.unsorted_segment_sqrt_n(x, [1, 0, 1, 1], 2), [_away((4, 2), r)]),
        ("max", lambda x: tf.math.segment_max(x, [0, 0, 0, 1]), [_away((4, 3), r)]),
        ("min", lambda x: tf.math.unsorted_segment_min(x, [1, 0, 1, 0], 2), [_away((4, 3), r)]),
        ("prod", lambda x: tf.math.unsorted_segment_prod(x, [1, 0, 1, 0, 1], 2), [_away((5, 2), r)]),
        ("prod with a zero", lambda x: tf.math.segment_prod(x, [0, 0, 0, 1]),
         [np.array([[0.0, 1.5], [2.0, -1.2], [0.7, 0.0], [1.3, 0.4]])]),
    ],
})


def _moments_loss(x, axes):
    m, v = tf.nn.moments(x, axes)
    return tf.reduce_sum(m * tf.cast(tf.range(m.shape[0]) + 1, m.dtype)) + tf.reduce_sum(v * v)


NON_DIFFERENTIABLE = {
    # no gradient at all (TensorFlow: None)
    "stop_gradient", "floor", "ceil", "round", "floordiv",
    # integer / bool results
    "is_finite", "is_nan", "is_inf", "logical_not", "equal", "not_equal", "less",
    "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "reduce_all",
    "reduce_any", "argmax", "argmin",
    # no tensor inputs, or integer inputs
    "fill", "range", "one_hot", "random_uniform", "random_normal", "truncated_normal",
    "shape_op", "range_t",
    # tf.math: no gradient in TensorFlow (TruncateDiv: None; TruncateMod: none registered)
    "truncatediv", "truncatemod", "igamma_grad_a",
    # tf.linalg.lu: TensorFlow 2.21 registers no gradient for Lu
    "lu",
    # the array ops' integer results (sort/top_k values are a gather_nd of them)
    "top_k_indices", "unique", "where_indices",
}


def _second(inner, x):
    """The gradient of ``inner`` at ``x`` computed on an inner tape while an outer one
    records (so the backward ops are themselves differentiated)."""
    with tf.GradientTape() as t:
        t.watch(x)
        y = inner(x)
    return t.gradient(y, x)


def _case(name, c):
    marks = ()
    if hasattr(c, "values"):  # a pytest.param
        c, marks = c.values, c.marks
    return pytest.param(name, c[1], c[2], c[3] if len(c) > 3 else {},
                        id="%s-%s" % (name, c[0]) if c[0] else name, marks=marks)


CASES = [_case(name, c) for name, cases in GRAD_CASES.items() for c in cases]


@pytest.mark.parametrize("name,f,xs,opts", CASES)
def test_op_gradient_matches_finite_differences(name, f, xs, opts):
    check_grad(f, *xs, **opts)


def test_every_op_is_classified():
    """A new op in csrc/ops.def must get a gradient case here or be declared
    non-differentiable (and then the tape must return None for it)."""
    names = {row[2] for row in _core.op_table()}
    unknown = names - set(GRAD_CASES) - NON_DIFFERENTIABLE
    assert not unknown, "ops without a gradient test: %s" % sorted(unknown)
    assert not (set(GRAD_CASES) & NON_DIFFERENTIABLE)
    assert not (set(GRAD_CASES) | NON_DIFFERENTIABLE) - names, "stale names in the test tables"


NON_DIFF_EXAMPLES = {
    "stop_gradient": lambda x: tf.stop_gradient(x),
    "floor": lambda x: tf.math.floor(x),
    "ceil": lambda x: tf.math.ceil(x),
    "round": lambda x: tf.round(x),
    "floordiv": lambda x: tf.math.floordiv(x, 0.7),
    "is_finite": lambda x: tf.cast(tf.math.is_finite(x), x.dtype),
    "less": lambda x: tf.cast(tf.less(x, 0.5), x.dtype),
    "argmax": lambda x: tf.cast(tf.argmax(x), x.dtype),
}


@pytest.mark.parametrize("name", sorted(NON_DIFF_EXAMPLES))
def test_non_differentiable_ops_give_none(name):
    x = tf.constant([0.25, 1.5, -2.5])
    with tf.GradientTape() as t:
        t.watch(x)
        y = NON_DIFF_EXAMPLES[name](x)
    assert t.gradient(y, x) is None


def test_sign_gradient_is_zero():
    # TensorFlow registers Sign's gradient as zeros (math_grad.py _SignGrad), not None.
    x = tf.constant([0.25, -1.5, 0.0])
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.sign(x)
    np.testing.assert_array_equal(t.gradient(y, x).numpy(), [0, 0, 0])


# --------------------------------------------------------------------------- special values

def _grad(f, *xs, dtype="float64"):
    ts = [tf.constant(x, dtype) for x in xs]
    with tf.GradientTape() as t:
        for x in ts:
            t.watch(x)
        y = f(*ts)
    gs = t.gradient(y, ts)
    return [g.numpy() if g is not None else None for g in gs]


def test_reduce_max_ties_split_evenly():
    (g,) = _grad(lambda x: tf.reduce_max(x, 1), [[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]])
    np.testing.assert_allclose(g, [[0, 0.5, 0.5, 0], [0.25] * 4])
    (g,) = _grad(tf.reduce_min, [[1.0, 0.0], [0.0, 5.0]])
    np.testing.assert_allclose(g, [[0, 0.5], [0.5, 0]])


def test_maximum_minimum_ties_go_to_x():
    gx, gy = _grad(tf.maximum, [1.0, 2.0, 3.0], [1.0, 5.0, 0.0])
    np.testing.assert_array_equal(gx, [1, 0, 1])
    np.testing.assert_array_equal(gy, [0, 1, 0])
    gx, gy = _grad(tf.minimum, [1.0, 2.0, 3.0], [1.0, 5.0, 0.0])
    np.testing.assert_array_equal(gx, [1, 1, 0])
    np.testing.assert_array_equal(gy, [0, 0, 1])


def test_reduce_prod_with_zeros():
    x = [[2.0, 0.0, 3.0], [0.0, 0.0, 4.0], [1.5, 2.0, -1.0]]
    (g,) = _grad(lambda t: tf.reduce_prod(t, 1), x)
    np.testing.assert_allclose(g, [[0, 6, 0], [0, 0, 0], [-2, -1.5, 3]])
    (g,) = _grad(tf.reduce_prod, [[2.0, 0.0], [3.0, 5.0]])
    np.testing.assert_allclose(g, [[0, 30], [0, 0]])


def test_relu_at_zero_and_abs_at_zero():
    (g,) = _grad(tf.nn.relu, [-1.0, 0.0, 2.0])
    np.testing.assert_array_equal(g, [0, 0, 1])
    (g,) = _grad(tf.abs, [-1.0, 0.0, 2.0])
    np.testing.assert_array_equal(g, [-1, 0, 1])


def test_pow_gradient_of_exponent_is_zero_for_nonpositive_base():
    gx, gy = _grad(tf.pow, [0.0, -2.0, 2.0], [2.0, 2.0, 3.0])
    np.testing.assert_allclose(gx, [0, -4, 12])
    np.testing.assert_allclose(gy, [0, 0, 8 * math.log(2.0)])


def test_unbroadcast_sums_over_broadcast_dims():
    a = np.ones((1, 3))
    b = np.ones((4, 1, 1))
    ga, gb = _grad(lambda x, y: x * y, a, b)
    assert ga.shape == (1, 3) and gb.shape == (4, 1, 1)
    np.testing.assert_array_equal(ga, np.full((1, 3), 4.0))
    np.testing.assert_array_equal(gb, np.full((4, 1, 1), 3.0))


# --------------------------------------------------------------------------- dtypes

@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_low_precision_gradients_keep_their_dtype(dtype):
    x = tf.constant([[0.5, -1.0], [2.0, 0.25]], dtype)
    w = tf.constant([[1.0, 2.0], [3.0, 4.0]], dtype)
    with tf.GradientTape() as t:
        t.watch([x, w])
        y = tf.reduce_sum(tf.nn.relu(tf.matmul(x, w)) * tf.sigmoid(x))
    gx, gw = t.gradient(y, [x, w])
    assert gx.dtype == tf.as_dtype(dtype) and gw.dtype == tf.as_dtype(dtype)
    # the same computation in float64
    with tf.GradientTape() as t:
        x64, w64 = tf.cast(x, "float64"), tf.cast(w, "float64")
        t.watch([x64, w64])
        y = tf.reduce_sum(tf.nn.relu(tf.matmul(x64, w64)) * tf.sigmoid(x64))
    ex, ew = t.gradient(y, [x64, w64])
    assert_close(gx, ex, dtype, "backprop")
    assert_close(gw, ew, dtype, "backprop")


def test_cast_gradient_goes_back_to_the_source_dtype():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.cast(x, "float16") * tf.constant(3.0, "float16")
    g = t.gradient(y, x)
    assert g.dtype == tf.float32
    np.testing.assert_array_equal(g.numpy(), [3, 3])


def test_float16_gradient_underflows_as_in_tensorflow():
    # gradients of float16 activations are float16: 1e-8 is below half the smallest
    # subnormal (2**-25) and rounds to zero, exactly as TensorFlow computes it
    x = tf.constant([1.0], "float16")
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * tf.constant(1e-8, "float16")
    assert t.gradient(y, x).numpy()[0] == 0


# --------------------------------------------------------------------------- tape semantics

def test_non_scalar_targets_are_summed():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
    np.testing.assert_array_equal(t.gradient(y, x).numpy(), [2, 4, 6])


def test_list_of_targets_add_up():
    x = tf.constant(3.0)
    with tf.GradientTape() as t:
        t.watch(x)
        a, b = x * x, 2.0 * x
    assert float(t.gradient([a, b], x)) == 8.0


def test_output_gradients_seed_each_target():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * x
        z = 3.0 * x
    g = t.gradient(y, x, output_gradients=tf.constant([10.0, -1.0]))
    np.testing.assert_array_equal(g.numpy(), [20, -4])
    g = t.gradient([y, z], x, output_gradients=[tf.constant([1.0, 0.0]), tf.constant([0.0, 1.0])])
    np.testing.assert_array_equal(g.numpy(), [2, 3])


def test_output_gradients_not_tensors_are_converted_then_checked():
    # a NumPy seed of the target's element count but another shape was reshaped silently
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * x
        z = 3.0 * x
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"shape \(2, 1\).*shape \(2,\)"):
        t.gradient(y, x, output_gradients=np.array([[1.0], [5.0]], np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"output_gradients\[0\] is float64"):
        t.gradient(y, x, output_gradients=np.array([1.0, 5.0]))  # no dtype hint, as TF
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"shape \(1, 2\)"):
        t.gradient([y], x, output_gradients=(np.array([[1.0, 5.0]], np.float32),))
    g = t.gradient([y, z], x, output_gradients=[np.array([1.0, 5.0], np.float32), None])
    np.testing.assert_array_equal(g.numpy(), [2.0 + 3.0, 20.0 + 3.0])
    x2 = tf.constant([[1.0, 2.0]])
    with tf.GradientTape() as t:
        t.watch(x2)
        y2 = tf.transpose(x2)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"shape \(1, 2\).*shape \(2, 1\)"):
        t.gradient(y2, x2, output_gradients=np.array([[1.0, 5.0]], np.float32))


def test_nested_sources_are_packed_like_sources():
    a, b, c = tf.constant(1.0), tf.constant(2.0), tf.constant(3.0)
    v = tf.Variable(4.0)
    with tf.GradientTape() as t:
        t.watch([a, b, c])
        y = a * b * c * v
    g = t.gradient(y, {"x": [a, (b, c)], "v": v})
    assert set(g) == {"x", "v"}
    assert isinstance(g["x"], list) and isinstance(g["x"][1], tuple)
    assert float(g["x"][0]) == 24 and float(g["x"][1][0]) == 12 and float(g["x"][1][1]) == 8
    assert float(g["v"]) == 6


def test_unconnected_gradients():
    x, z = tf.constant(1.0), tf.constant([1.0, 2.0])
    v = tf.Variable([[1.0, 2.0]])
    with tf.GradientTape(persistent=True) as t:
        t.watch([x, z])
        y = x * 2.0
    assert t.gradient(y, z) is None
    assert t.gradient(y, v) is None
    gz, gv = t.gradient(y, [z, v], unconnected_gradients="zero")
    np.testing.assert_array_equal(gz.numpy(), [0, 0])
    assert gv.dtype == tf.float32 and tuple(gv.shape) == (1, 2)
    gz = t.gradient(y, z, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    np.testing.assert_array_equal(gz.numpy(), [0, 0])


def test_integer_tensors_are_not_watched():
    x = tf.constant([1, 2, 3])
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
    assert t.gradient(y, x) is None
    v = tf.Variable(3)
    with tf.GradientTape() as t:
        y = v * 2
    assert t.watched_variables() == ()


def test_unwatched_tensor_gives_none():
    x = tf.constant(2.0)
    with tf.GradientTape() as t:
        y = x * x
    assert t.gradient(y, x) is None


def test_stop_gradient_blocks_one_path():
    x = tf.constant(3.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * tf.stop_gradient(x)
    assert float(t.gradient(y, x)) == 3.0


def test_gradient_of_a_source_with_respect_to_itself():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as t:
        t.watch(x)
    np.testing.assert_array_equal(t.gradient(x, x).numpy(), [1, 1])


def test_non_persistent_tape_is_used_once():
    x = tf.constant(2.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
    assert float(t.gradient(y, x)) == 4.0
    with pytest.raises(RuntimeError, match="A non-persistent GradientTape can only be used to "
                                           "compute one set of gradients"):
        t.gradient(y, x)


def test_persistent_tape_gives_many_gradients():
    x = tf.constant(2.0)
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * x
        z = y * y
    assert float(t.gradient(y, x)) == 4.0
    assert float(t.gradient(z, x)) == 32.0
    assert float(t.gradient(z, y)) == 8.0
    del t


def test_gradient_inside_the_context_of_a_persistent_tape():
    x = tf.constant(2.0)
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * x
        g = t.gradient(y, x)
        z = y * x  # still recorded after the gradient call
    assert float(g) == 4.0
    assert float(t.gradient(z, x)) == 12.0


def test_nested_tapes_second_order_cube():
    x = tf.constant([1.5, -2.0], "float64")
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = x ** 3
        dy = inner.gradient(y, x)
    d2y = outer.gradient(dy, x)
    np.testing.assert_allclose(dy.numpy(), 3 * x.numpy() ** 2)
    np.testing.assert_allclose(d2y.numpy(), 6 * x.numpy())


def _second_derivative(f, x):
    x = tf.constant(x, "float64")
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        dy = inner.gradient(y, x)
    return outer.gradient(dy, x).numpy()


def _phi(x):
    return np.exp(-0.5 * x * x) / np.sqrt(2 * np.pi)


def _gelu_tanh_d2(x):
    c, k = math.sqrt(2 / math.pi), 0.044715
    u = c * (x + k * x ** 3)
    t = np.tanh(u)
    du, d2u = c * (1 + 3 * k * x * x), 6 * c * k * x
    return (1 - t * t) * (du + 0.5 * x * (d2u - 2 * t * du * du))


@pytest.mark.parametrize("name,f,expected", [
    ("tanh", tf.tanh, lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2)),
    ("sigmoid", tf.sigmoid, lambda x: (lambda s: s * (1 - s) * (1 - 2 * s))(1 / (1 + np.exp(-x)))),
    ("relu", tf.nn.relu, lambda x: np.zeros_like(x)),
    ("gelu", tf.nn.gelu, lambda x: _phi(x) * (2 - x * x)),
    ("gelu tanh", lambda x: tf.nn.gelu(x, approximate=True), lambda x: _gelu_tanh_d2(x)),
    ("softplus", tf.math.softplus, lambda x: (lambda s: s * (1 - s))(1 / (1 + np.exp(-x)))),
    ("exp", tf.exp, np.exp),
    ("sqrt", tf.sqrt, lambda x: -0.25 * x ** -1.5),
    ("rsqrt", tf.math.rsqrt, lambda x: 0.75 * x ** -2.5),
    ("elu", tf.nn.elu, lambda x: np.where(x > 0, 0.0, np.exp(x))),
    ("log", tf.math.log, lambda x: -1 / x ** 2),
])
def test_second_order_gradients(name, f, expected):
    x = np.array([0.3, 0.7, 1.9]) if name in ("sqrt", "rsqrt", "log") else \
        np.array([-1.2, -0.4, 0.5, 1.7])
    assert_close(_second_derivative(f, x), expected(x), "float64", "transcendental")


@pytest.mark.parametrize("f", [tf.nn.relu, tf.nn.leaky_relu])
def test_relu_second_order_is_zero_not_none(f):
    # TensorFlow's ReluGrad/LeakyReluGrad gradients give zeros for the features input
    x = tf.constant([-1.0, 2.0], "float64")
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        dy = inner.gradient(y, x)
    g = outer.gradient(dy, x)
    np.testing.assert_array_equal(g.numpy(), [0, 0])


@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_third_order(approximate):
    def f(t):
        return tf.nn.gelu(t, approximate=approximate)

    def f2(t):  # the second derivative on nested tapes, differentiated once more below
        with tf.GradientTape() as t2:
            t2.watch(t)
            with tf.GradientTape() as t1:
                t1.watch(t)
                y = f(t)
            d1 = t1.gradient(y, t)
        return t2.gradient(d1, t)

    check_grad(f2, [-1.3, -0.2, 0.6, 2.1], h=1e-5)


def test_watch_accessed_variables_false():
    v, w = tf.Variable(2.0), tf.Variable(3.0)
    with tf.GradientTape(watch_accessed_variables=False) as t:
        t.watch(w)
        y = v * w
    gv, gw = t.gradient(y, [v, w])
    assert gv is None and float(gw) == 2.0
    assert t.watched_variables() == (w,)


def test_non_trainable_variables_are_not_watched_automatically():
    v = tf.Variable(2.0, trainable=False)
    with tf.GradientTape() as t:
        y = v * v
    assert t.gradient(y, v) is None
    with tf.GradientTape() as t:
        t.watch(v)
        y = v * v
    assert float(t.gradient(y, v)) == 4.0


def test_stop_recording():
    x = tf.constant(2.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
        with t.stop_recording():
            z = y * x  # not recorded
        w = z + y
    # w = z + y with z a constant as far as the tape knows: dw/dx = dy/dx = 4
    assert float(t.gradient(w, x)) == 4.0
    with pytest.raises(ValueError):
        with t.stop_recording():
            pass


def test_reset():
    x2 = tf.constant(2.0)
    with tf.GradientTape() as t:
        t.watch(x2)
        y = x2 * x2
        t.reset()
        t.watch(x2)
        z = x2 * 3.0
    assert float(t.gradient(z, x2)) == 3.0
    with tf.GradientTape(persistent=True) as t:
        t.watch(x2)
        y = x2 * x2
        t.reset()
        z = x2 * 3.0
    assert t.gradient([y, z], x2) is None


def test_watched_variables_in_order_of_access():
    a, b, c = tf.Variable(1.0), tf.Variable(2.0), tf.Variable(3.0, trainable=False)
    with tf.GradientTape() as t:
        _ = b * a * c
        _ = a * 2.0
    assert t.watched_variables() == (b, a)


def test_variable_gradient_and_repeated_reads():
    v = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as t:
        y = tf.reduce_sum(v * v + v)
    np.testing.assert_array_equal(t.gradient(y, v).numpy(), [3, 5])


def test_watch_rejects_non_tensors():
    with tf.GradientTape() as t:
        with pytest.raises(ValueError):
            t.watch("x")


def test_gradient_rejects_non_tensor_sources():
    x = tf.constant(1.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * 2.0
    with pytest.raises(TypeError):
        t.gradient(y, [x, "nope"])


@pytest.mark.parametrize("persistent", [False, True])
def test_jacobian(persistent):
    # TensorFlow's documented use is on a non-persistent tape
    x = tf.constant([1.0, 2.0, 3.0], "float64")
    with tf.GradientTape(persistent=persistent) as t:
        t.watch(x)
        y = x * x
    j = t.jacobian(y, x)
    assert tuple(j.shape) == (3, 3)
    np.testing.assert_allclose(j.numpy(), np.diag([2.0, 4.0, 6.0]))
    if not persistent:
        with pytest.raises(RuntimeError, match="only be used to compute one set"):
            t.jacobian(y, x)
    w = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], "float64")
    with tf.GradientTape(persistent=True) as t:
        t.watch(w)
        z = tf.matmul(tf.reshape(x, [1, 3]), w)  # (1, 2)
    jw = t.jacobian(z, w)
    assert tuple(jw.shape) == (1, 2, 3, 2)
    expected = np.zeros((1, 2, 3, 2))
    for j in range(2):
        expected[0, j, :, j] = x.numpy()
    np.testing.assert_allclose(jw.numpy(), expected)


def test_jacobian_unconnected():
    x, z = tf.constant([1.0, 2.0]), tf.constant(5.0)
    with tf.GradientTape(persistent=True) as t:
        t.watch([x, z])
        y = x * 2.0
    assert t.jacobian(y, z) is None
    np.testing.assert_array_equal(t.jacobian(y, z, unconnected_gradients="zero").numpy(),
                                  [0, 0])


def test_watched_variables_survive_the_gradient_call():
    v = tf.Variable(2.0)
    with tf.GradientTape() as t:
        y = v * v
    t.gradient(y, v)
    assert t.watched_variables() == (v,)


def test_non_persistent_tape_records_nothing_after_its_gradient():
    x = tf.constant(2.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
        t.gradient(y, x)
        z = y * x
    with pytest.raises(RuntimeError):
        t.gradient(z, x)
    t.reset()  # a reset tape is usable again (TensorFlow's reset makes a new tape)
    assert t.gradient(z, x) is None


def test_gradient_does_not_warn():
    x = tf.constant(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with tf.GradientTape() as t:
            t.watch(x)
            y = x * x
        t.gradient(y, x)


def test_output_gradients_of_another_dtype_or_shape_are_refused():
    x = tf.Variable([1.0, 2.0, 3.0])
    with tf.GradientTape(persistent=True) as t:
        y = x * 2.0
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"output_gradients\[0\] is float16"):
        t.gradient(y, x, output_gradients=tf.constant([1.0, 1.0, 1.0], tf.float16))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"shape \(3, 1\)"):
        t.gradient(y, x, output_gradients=tf.ones([3, 1]))
    with pytest.raises(ValueError, match="one entry per target"):
        t.gradient(y, x, output_gradients=[1.0, 1.0, 1.0])  # flattened: three seeds, as TF
    g = t.gradient(y, x, output_gradients=np.array([1.0, 0.5, 0.0], np.float32))
    np.testing.assert_array_equal(g.numpy(), [2.0, 1.0, 0.0])


def test_a_tape_dropped_on_another_thread_while_entered_here_is_let_go():
    # found under ASan: the last reference dropped on another thread freed a tape that was
    # still on this thread's active stack
    import gc
    import threading

    holder = [tf.GradientTape()]
    holder[0].__enter__()
    x = tf.constant(1.0)
    holder[0].watch(x)

    def drop():
        holder.pop()
        gc.collect()

    t = threading.Thread(target=drop)
    t.start()
    t.join()
    for _ in range(3):
        y = x * 2.0  # records nothing, touches nothing freed
    assert float(y) == 2.0
    with tf.GradientTape() as tape:  # tapes still work on this thread
        tape.watch(x)
        z = x * 3.0
    assert float(tape.gradient(z, x)) == 3.0


def test_a_tape_is_active_on_one_thread_at_a_time():
    import threading

    tape = tf.GradientTape()
    with tape:
        errors = []

        def enter_elsewhere():
            try:
                tape.__enter__()
            except Exception as e:  # noqa: BLE001 - the error is the test's subject
                errors.append(e)

        t = threading.Thread(target=enter_elsewhere)
        t.start()
        t.join()
    assert len(errors) == 1 and "already active" in str(errors[0])
