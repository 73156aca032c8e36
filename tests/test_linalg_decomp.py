"""tf.linalg decompositions and solvers (csrc/ops_linalg.c + cpu_linalg.c: LAPACK through the
linalg slot; csrc/grad_linalg.c; mixprec._linalg_decomp): TensorFlow 2.21's recorded results
and errors, NumPy in float64, gradients against float64 finite differences, traced == eager."""

import numpy as np
import pytest

import mixprec as tf
from test_tape import check_grad
from tolerances import assert_close

L = tf.linalg
IAE = tf.errors.InvalidArgumentError
rng = np.random.default_rng(23)


def _spd(shape, dt="float64"):
    x = rng.standard_normal(shape)
    return (x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dt)


def _well(shape, dt="float64"):
    return (rng.standard_normal(shape) + 4 * np.eye(shape[-2], shape[-1])).astype(dt)


def _sym_distinct(shape):
    """Symmetric matrices with well-separated eigenvalues."""
    n = shape[-1]
    q, _ = np.linalg.qr(rng.standard_normal(shape))
    e = np.arange(1, n + 1, dtype=np.float64) * 1.5 - 2.0
    return (q * e[..., None, :]) @ np.swapaxes(q, -1, -2)


# ------------------------------------------------------------------ TensorFlow's literals

def test_literals_as_tensorflow():
    assert_close(L.cholesky([[4., 100.], [2., 5.]]).numpy(), [[2., 0.], [1., 2.]], "float32", "decomposition")
    c = L.cholesky([[1., 2.], [2., 1.]]).numpy()  # not positive definite: NaN, no error
    assert np.isnan(c[0, 0]) and np.isnan(c[1, 1]) and c[0, 1] == 0
    assert_close(L.triangular_solve([[2., 0.], [1., 1.]], [[2.], [3.]]).numpy(), [[1.], [2.]],
                 "float32", "decomposition")
    assert_close(L.triangular_solve([[2., 1.], [5., 4.]], [[2.], [3.]], lower=False, adjoint=True).numpy(),
                 [[1.], [0.5]], "float32", "decomposition")
    t = L.triangular_solve([[0., 0.], [1., 1.]], [[2.], [3.]]).numpy()  # no singularity check
    assert np.isinf(t[0, 0])
    assert_close(L.solve([[1., 2.], [3., 4.]], [[1.], [1.]], adjoint=True).numpy(), [[-0.5], [0.5]],
                 "float32", "decomposition")
    assert_close(L.cholesky_solve([[2., 0.], [1., 1.]], [[2.], [3.]]).numpy(), [[-0.5], [2.]],
                 "float32", "decomposition")
    q, r = L.qr([[1., 2.], [3., 4.], [5., 6.]])  # TensorFlow's signs (Householder)
    assert_close(q.numpy(), [[-0.16903079, 0.897085], [-0.5070925, 0.2760267], [-0.8451542, -0.34503305]],
                 "float32", "decomposition")
    assert_close(r.numpy(), [[-5.91608, -7.437357], [0., 0.82807845]], "float32", "decomposition")
    qf, rf = L.qr([[1., 2.], [3., 4.], [5., 6.]], full_matrices=True)
    assert qf.shape == (3, 3) and rf.shape == (3, 2)
    assert_close(qf.numpy()[:, 2], [0.40824893, -0.81649643, 0.40824804], "float32", "decomposition")
    e, v = L.eigh([[2., 100.], [1., 3.]])  # the lower triangle only
    assert_close(e.numpy(), [1.3819659, 3.6180334], "float32", "decomposition")
    s, u, v = L.svd([[1., 2.], [3., 4.], [5., 6.]], full_matrices=True)
    assert (s.shape, u.shape, v.shape) == ((2,), (3, 3), (2, 2))
    assert_close(s.numpy(), [9.525518, 0.51429987], "float32", "decomposition")
    assert_close(L.svd([[1., 2.], [3., 4.], [5., 6.]], compute_uv=False).numpy(), [9.525518, 0.51429987],
                 "float32", "decomposition")
    sg, la = L.slogdet([[1., 2.], [3., 4.]])
    assert sg.numpy() == -1.0 and la.numpy() == pytest.approx(np.log(2.0), rel=1e-6)
    sg, la = L.slogdet([[1., 2.], [2., 4.]])
    assert sg.numpy() == 0.0 and la.numpy() == -np.inf
    assert type(L.slogdet(np.eye(2))).__name__ == "LogMatrixDeterminant"
    assert L.logdet([[2., 1.], [1., 2.]]).numpy() == pytest.approx(1.0986123, rel=1e-6)
    assert np.isnan(L.logdet([[1., 2.], [2., 1.]]).numpy())
    assert_close(L.lstsq([[1., 2.], [3., 4.], [5., 6.]], [[1.], [2.], [4.]]).numpy(), [[0.6667], [0.0833]],
                 "float16", "decomposition")
    assert_close(L.lstsq([[1., 2., 3.], [3., 4., 7.]], [[1.], [2.]]).numpy(), [[-0.1667], [0.3333], [0.1667]],
                 "float16", "decomposition")
    assert_close(L.lstsq([[1., 2.], [3., 4.], [5., 6.]], [[1.], [2.], [4.]], l2_regularizer=0.5).numpy(),
                 [[0.4229], [0.2724]], "float16", "decomposition")
    assert_close(L.pinv([[1., 2.], [3., 4.], [5., 6.]]).numpy().ravel(),
                 [-1.3333, -0.3333, 0.6667, 1.0833, 0.3333, -0.4167], "float16", "decomposition")
    assert_close(L.pinv([[1., 2.], [2., 4.]], rcond=0.5).numpy().ravel(), [0.04, 0.08, 0.08, 0.16],
                 "float32", "decomposition")
    rk = L.matrix_rank([[1., 2.], [2., 4.]])
    assert rk.dtype == tf.int32 and rk.numpy() == 1
    assert L.matrix_rank(np.eye(3, dtype=np.float16)).numpy() == 3
    assert L.matrix_rank(tf.eye(3), tol=2.).numpy() == 0
    nx, nn = L.normalize([[3., 4.], [6., 8.]])
    assert nn.shape == (1, 1) and nn.numpy()[0, 0] == pytest.approx(11.18034, rel=1e-6)
    nx, nn = L.normalize([[3., 4.], [6., 8.]], ord=np.inf, axis=0)
    assert_close(nx.numpy(), [[0.5, 0.5], [1., 1.]], "float32", "decomposition")
    lu, p = L.lu([[1., 2.], [3., 4.]])
    assert p.dtype == tf.int32 and p.numpy().tolist() == [1, 0]
    assert_close(lu.numpy(), [[3., 4.], [0.33333334, 0.6666666]], "float32", "decomposition")
    assert L.lu(np.eye(2), output_idx_type=tf.int64).p.dtype == tf.int64
    lu3, p3 = L.lu(np.array([[1., 2., 3.], [4., 5., 6.], [7., 8., 10.]]))
    assert p3.numpy().tolist() == [2, 0, 1]
    assert_close(L.lu_solve(lu, p, [[1.], [1.]]).numpy(), [[-1.], [1.]], "float32", "decomposition")
    assert L.lu_solve(lu, p, tf.ones([3, 2, 1])).shape == (3, 2, 1)
    assert_close(L.lu_matrix_inverse(lu, p).numpy(), [[-2., 1.], [1.5, -0.5]], "float32", "decomposition")
    assert_close(L.lu_reconstruct(lu, p).numpy(), [[1., 2.], [3., 4.]], "float32", "decomposition")
    assert_close(L.expm([[0., 1.], [-1., 0.]]).numpy().ravel(), [0.5403, 0.8415, -0.8415, 0.5403],
                 "float16", "decomposition")
    assert_close(L.expm(np.array([[1., 2.], [0.5, -1.]])).numpy().ravel(),
                 [3.5464824286171615, 2.736597744017182, 0.6841494360042955, 0.8098846845999804],
                 "float64", "decomposition")
    assert_close(L.matrix_exponential(tf.ones([2, 2, 2])).numpy().ravel(),
                 [4.194528, 3.194528, 3.194528, 4.194528] * 2, "float32", "decomposition")


def test_empty_and_batched_shapes_as_tensorflow():
    assert L.cholesky(tf.ones([3, 0, 0])).shape == (3, 0, 0)
    s, u, v = L.svd(tf.ones([0, 3]), full_matrices=True)
    assert (s.shape, u.shape, v.shape) == ((0,), (0, 0), (3, 3))
    np.testing.assert_array_equal(v.numpy(), np.eye(3))
    q, r = L.qr(tf.ones([3, 0]), full_matrices=True)
    assert q.shape == (3, 3) and r.shape == (3, 0)
    np.testing.assert_array_equal(q.numpy(), np.eye(3))
    q, r = L.qr(tf.ones([0, 3]))
    assert q.shape == (0, 0) and r.shape == (0, 3)
    e, v = L.eigh(tf.ones([0, 0]))
    assert e.shape == (0,) and v.shape == (0, 0)
    sg, la = L.slogdet(tf.ones([0, 0]))
    assert sg.numpy() == 1.0 and la.numpy() == 0.0
    assert L.triangular_solve(tf.eye(2, batch_shape=[3]), tf.ones([2, 1])).shape == (3, 2, 1)
    assert L.cholesky_solve(tf.eye(2, batch_shape=[3]), tf.ones([2, 1])).shape == (3, 2, 1)
    assert L.qr(tf.ones([2, 3]))[0].shape == (2, 2)


def _nf(op):
    return tf.errors.NotFoundError, "Could not find device for node: {{node %s}} = %s" % (op.split("[")[0], op)


ERRORS = [
    (lambda: L.cholesky(tf.ones([2, 3])), IAE, "Input matrix must be square."),
    (lambda: L.cholesky(tf.ones([2])), IAE, "Input tensor 0 must have rank >= 2, got 1"),
    (lambda: L.cholesky(tf.eye(2, dtype=tf.float16)), *_nf("Cholesky[T=DT_HALF]")),
    (lambda: L.cholesky(tf.eye(2, dtype=tf.int32)), IAE,
     "Value for attr 'T' of int32 is not in the list of allowed values: double, float, half, complex64, complex128"),
    (lambda: L.triangular_solve(tf.ones([2, 3]), tf.ones([2, 1])), IAE,
     "In[0] matrices in the last dimensions must be square (2 =/= 3)"),
    (lambda: L.triangular_solve(tf.eye(2), tf.ones([3, 1])), IAE, "In[0] mismatch In[1] shape: 2 vs. 3: [2,2] [3,1] 1 0"),
    (lambda: L.triangular_solve(tf.eye(2), tf.ones([2])), IAE, "In[1] ndims must be >= 2: 1"),
    (lambda: L.triangular_solve(tf.eye(2, batch_shape=[3]), tf.ones([2, 2, 1])), IAE,
     "In[0] and In[1] must have compatible batch dimensions: [3,2,2] vs. [2,2,1]"),
    (lambda: L.triangular_solve(tf.eye(2, dtype=tf.float16), tf.ones([2, 1], tf.float16)),
     *_nf("MatrixTriangularSolve[T=DT_HALF, adjoint=false, lower=true]")),
    (lambda: L.triangular_solve(tf.eye(2), tf.ones([2, 1], tf.float64)), IAE,
     "cannot compute MatrixTriangularSolve as input #1(zero-based) was expected to be a float tensor but is a "
     "double tensor"),
    (lambda: L.triangular_solve(tf.eye(2, dtype=tf.int32), tf.ones([2, 1], tf.int32)), IAE,
     "Value for attr 'T' of int32 is not in the list of allowed values: bfloat16, double, float, half"),
    (lambda: L.solve([[1., 2.], [2., 4.]], [[1.], [2.]]), IAE, "Input matrix is not invertible."),
    (lambda: L.solve(tf.ones([2, 3]), tf.ones([2, 1])), IAE, "First input (lhs) must be a square matrix."),
    (lambda: L.solve(tf.eye(2), tf.ones([3, 1])), IAE, "Input matrix and rhs are incompatible."),
    (lambda: L.solve(tf.eye(2, batch_shape=[3]), tf.ones([2, 1])), IAE, "All input tensors must have the same rank."),
    (lambda: L.solve(tf.eye(2, batch_shape=[3]), tf.ones([2, 2, 1])), IAE,
     "All input tensors must have the same outer dimensions."),
    (lambda: L.solve(tf.eye(2), tf.ones([2])), IAE, "All input tensors must have the same rank."),
    (lambda: L.solve(tf.ones([2]), tf.ones([2])), IAE, "Input tensor 0 must have rank >= 2, got 1"),
    (lambda: L.solve(tf.eye(2, dtype=tf.float16), tf.ones([2, 1], tf.float16)),
     *_nf("MatrixSolve[T=DT_HALF, adjoint=false]")),
    (lambda: L.solve(tf.eye(2), tf.ones([2, 1], tf.float64)), IAE,
     "cannot compute MatrixSolve as input #1(zero-based) was expected to be a float tensor but is a double tensor"),
    (lambda: L.qr(tf.ones([2])), IAE, "Input tensor 0 must have rank >= 2, got 1"),
    (lambda: L.qr(tf.ones([2, 2], tf.int32)), IAE, "Value for attr 'T' of int32 is not in the list of allowed"),
    (lambda: L.eigh(tf.ones([2, 3])), IAE, "Input matrix must be square."),
    (lambda: L.eigh(tf.ones([2, 2], tf.float16)), *_nf("SelfAdjointEigV2[T=DT_HALF, compute_v=true]")),
    (lambda: L.eigvalsh(tf.ones([2, 2], tf.float16)), *_nf("SelfAdjointEigV2[T=DT_HALF, compute_v=false]")),
    (lambda: L.svd(tf.ones([2])), IAE, "Input tensor 0 must have rank >= 2, got 1"),
    (lambda: L.svd(tf.ones([2, 2], tf.float16)), *_nf("Svd[T=DT_HALF, compute_uv=true, full_matrices=false]")),
    (lambda: L.svd(tf.ones([2, 2], tf.float16), compute_uv=False),
     *_nf("Svd[T=DT_HALF, compute_uv=false, full_matrices=false]")),
    (lambda: L.svd(tf.ones([2, 2], tf.int32)), IAE, "Value for attr 'T' of int32 is not in the list of allowed"),
    (lambda: L.slogdet(tf.ones([2, 3])), IAE, "Input matrix must be square."),
    (lambda: L.slogdet(tf.ones([2, 2], tf.float16)), *_nf("LogMatrixDeterminant[T=DT_HALF]")),
    (lambda: L.slogdet(tf.ones([2, 2], tf.int32)), IAE,
     "Value for attr 'T' of int32 is not in the list of allowed values: half, float, double, complex64, complex128"),
    (lambda: L.logdet(tf.eye(2, dtype=tf.float16)), *_nf("Cholesky[T=DT_HALF]")),
    (lambda: L.lstsq(tf.ones([3, 2], tf.float16), tf.ones([3, 1], tf.float16)), *_nf("Cholesky[T=DT_HALF]")),
    (lambda: L.pinv(tf.ones([3, 2], tf.int32)), TypeError, "Input `a` must have `float`-like `dtype` (saw int32)."),
    (lambda: L.pinv(tf.ones([3, 2], tf.float16)), *_nf("Svd[T=DT_HALF, compute_uv=true, full_matrices=false]")),
    (lambda: L.matrix_rank(tf.ones([2, 2], tf.int32)), TypeError, "Input `a` must have `float`-like `dtype`"),
    (lambda: L.matrix_rank(tf.ones([3])), ValueError, "Input `a` must have at least 2 dimensions (saw: 1)."),
    (lambda: L.normalize([[3., 4.], [6., 8.]], ord=-1), ValueError, "'ord' must be a supported vector norm, got -1"),
    (lambda: L.lu([[1., 2.], [2., 4.]]), IAE, "Input is not invertible."),
    (lambda: L.lu(tf.ones([2, 3])), IAE, "Input matrix must be square."),
    (lambda: L.lu(tf.eye(2, dtype=tf.float16)), *_nf("Lu[T=DT_HALF, output_idx_type=DT_INT32]")),
    (lambda: L.expm(tf.eye(2, dtype=tf.int32)), ValueError, "tf.linalg.expm does not support matrices of type"),
    (lambda: L.expm(tf.eye(2, dtype=tf.float16)), *_nf("MatrixSolve[T=DT_HALF, adjoint=false]")),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_as_tensorflow(i):
    call, cls, msg = ERRORS[i]
    with pytest.raises(cls) as e:
        call()
    assert msg in str(e.value)


# ------------------------------------------------------------------ NumPy, batched

@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_factorizations_match_numpy(dt):
    a = _spd((2, 3, 5, 5), dt)
    a64 = a.astype(np.float64)
    c = L.cholesky(a)
    assert c.dtype == dt
    assert_close(c.numpy(), np.linalg.cholesky(a64), dt, "decomposition")
    for m, n in ((6, 4), (4, 6), (5, 5)):
        x = rng.standard_normal((2, m, n)).astype(dt)
        x64 = x.astype(np.float64)
        for full in (False, True):
            q, r = L.qr(x, full_matrices=full)
            nq, nr = np.linalg.qr(x64, mode="complete" if full else "reduced")
            assert_close(q.numpy(), nq, dt, "decomposition")
            assert_close(r.numpy(), nr, dt, "decomposition")
            s, u, v = L.svd(x, full_matrices=full)
            nu, ns, nvh = np.linalg.svd(x64, full_matrices=full)
            assert_close(s.numpy(), ns, dt, "decomposition")
            # singular vectors up to sign: compare |u^T nu| with the identity's columns
            k = min(m, n)
            assert_close(np.abs(np.einsum("bik,bik->bk", u.numpy()[..., :k], nu[..., :k])), np.ones((2, k)),
                         dt, "decomposition")
            assert_close(np.abs(np.einsum("bik,bki->bk", v.numpy()[..., :k], nvh[..., :k, :])), np.ones((2, k)),
                         dt, "decomposition")
            p = min(m, n)
            rec = (u.numpy()[..., :p] * s.numpy()[..., None, :]) @ np.swapaxes(v.numpy()[..., :p], -1, -2)
            assert_close(rec, x64, dt, "decomposition")
    h = _sym_distinct((3, 4, 4)).astype(dt)
    e, v = L.eigh(h)
    ne, nv = np.linalg.eigh(h.astype(np.float64))
    assert_close(e.numpy(), ne, dt, "decomposition")
    assert_close(L.eigvalsh(h).numpy(), ne, dt, "decomposition")
    assert_close(np.abs(np.einsum("bik,bik->bk", v.numpy(), nv)), np.ones((3, 4)), dt, "decomposition")
    w = _well((2, 4, 4), dt)
    sg, la = L.slogdet(w)
    nsg, nla = np.linalg.slogdet(w.astype(np.float64))
    assert_close(sg.numpy(), nsg, dt, "exact")
    assert_close(la.numpy(), nla, dt, "decomposition")
    assert_close(L.logdet(a).numpy(), np.linalg.slogdet(a64)[1], dt, "decomposition")
    lu, p = L.lu(w)
    assert_close(L.lu_reconstruct(lu, p).numpy(), w.astype(np.float64), dt, "decomposition")


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_solvers_match_numpy(dt):
    a = _well((2, 5, 5), dt)
    b = rng.standard_normal((2, 5, 3)).astype(dt)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert_close(L.solve(a, b).numpy(), np.linalg.solve(a64, b64), dt, "decomposition")
    assert_close(L.solve(a, b, adjoint=True).numpy(), np.linalg.solve(np.swapaxes(a64, -1, -2), b64), dt,
                 "decomposition")
    lo, up = np.tril(a64), np.triu(a64)
    assert_close(L.triangular_solve(a, b).numpy(), np.linalg.solve(lo, b64), dt, "decomposition")
    assert_close(L.triangular_solve(a, b, lower=False).numpy(), np.linalg.solve(up, b64), dt, "decomposition")
    assert_close(L.triangular_solve(a, b, adjoint=True).numpy(), np.linalg.solve(np.swapaxes(lo, -1, -2), b64),
                 dt, "decomposition")
    assert_close(L.triangular_solve(a[0], b).numpy(), np.linalg.solve(lo[0], b64), dt, "decomposition")
    spd = _spd((2, 5, 5), dt)
    assert_close(L.cholesky_solve(L.cholesky(spd), b).numpy(), np.linalg.solve(spd.astype(np.float64), b64),
                 dt, "decomposition")
    lu, p = L.lu(a)
    assert_close(L.lu_solve(lu, p, b).numpy(), np.linalg.solve(a64, b64), dt, "decomposition")
    assert_close(L.lu_matrix_inverse(lu, p).numpy(), np.linalg.inv(a64), dt, "decomposition")
    for m, n in ((7, 4), (3, 6)):
        x = (rng.standard_normal((2, m, n)) + 3 * np.eye(m, n)).astype(dt)
        y = rng.standard_normal((2, m, 2)).astype(dt)
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        ref = np.stack([np.linalg.lstsq(x64[i], y64[i], rcond=None)[0] for i in range(2)])
        assert_close(L.lstsq(x, y).numpy(), ref, dt, "decomposition")
        assert_close(L.lstsq(x, y, fast=False).numpy(), ref, dt, "decomposition")
        assert_close(L.pinv(x).numpy(), np.linalg.pinv(x64), dt, "decomposition")
        reg = 0.3
        if m >= n:
            g = np.swapaxes(x64, -1, -2) @ x64 + reg * np.eye(n)
            ref = np.linalg.solve(g, np.swapaxes(x64, -1, -2) @ y64)
        else:
            g = x64 @ np.swapaxes(x64, -1, -2) + reg * np.eye(m)
            ref = np.swapaxes(x64, -1, -2) @ np.linalg.solve(g, y64)
        assert_close(L.lstsq(x, y, l2_regularizer=reg).numpy(), ref, dt, "decomposition")
    r = np.stack([np.eye(4), np.diag([1., 1., 0., 0.]), np.ones((4, 4))]).astype(dt)
    assert L.matrix_rank(r).numpy().tolist() == [4, 2, 1]
    v = rng.standard_normal((3, 4)).astype(dt)
    nx, nn = L.normalize(v, axis=1)
    ref = np.linalg.norm(v.astype(np.float64), axis=1, keepdims=True)
    assert_close(nn.numpy(), ref, dt, "decomposition")
    assert_close(nx.numpy(), v / ref, dt, "decomposition")


def _expm_ref(x):
    """exp(x) by eigendecomposition-free Taylor series on x / 2^k, squared back (float64)."""
    k = max(0, int(np.ceil(np.log2(max(np.abs(x).sum(-2).max(), 1e-300)))) + 4)
    y = x / 2.0**k
    out = np.broadcast_to(np.eye(x.shape[-1]), x.shape).copy()
    term = out.copy()
    for i in range(1, 30):
        term = term @ y / i
        out = out + term
    for _ in range(k):
        out = out @ out
    return out


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_expm_matches_a_series(dt):
    for scale in (0.05, 0.5, 3.0, 20.0):
        x = (rng.standard_normal((2, 4, 4)) * scale / 4).astype(dt)
        ref = _expm_ref(x.astype(np.float64))
        got = L.expm(x).numpy()
        np.testing.assert_allclose(got / np.abs(ref).max(), ref / np.abs(ref).max(),
                                   *(lambda t: (t[0], t[1] * 10))(__import__("tolerances").TOLERANCE[
                                       (dt, "decomposition")]))


# ------------------------------------------------------------------ gradients

def test_gradients_match_finite_differences():
    eye3 = np.eye(3)
    x = rng.standard_normal((2, 3, 3))
    check_grad(lambda t: L.cholesky(tf.matmul(t, t, transpose_b=True) + 3 * eye3), x)
    check_grad(lambda t: L.logdet(tf.matmul(t, t, transpose_b=True) + 3 * eye3), x)
    a, b = _well((2, 3, 3)), rng.standard_normal((2, 3, 2))
    for lower in (True, False):
        for adj in (True, False):
            check_grad(lambda s, t: L.triangular_solve(s, t, lower=lower, adjoint=adj), a, b)
    check_grad(lambda s, t: L.triangular_solve(s, t), a[0], b)  # broadcast batch
    check_grad(lambda s, t: L.solve(s, t), a, b)
    check_grad(lambda s, t: L.solve(s, t, adjoint=True), a, b)
    check_grad(lambda s, t: L.cholesky_solve(L.cholesky(tf.matmul(s, s, transpose_b=True) + 3 * eye3), t), a, b)
    check_grad(lambda t: L.slogdet(t)[1], a)
    check_grad(lambda t: L.slogdet(t)[1] + L.slogdet(t)[0], a)
    lu, p = L.lu(tf.constant(a))
    check_grad(lambda t: L.lu_solve(tf.constant(lu), p, t), b)


def _qr_both(full):
    return lambda t: tf.concat([tf.reshape(v, [-1]) for v in L.qr(t, full_matrices=full)], 0)


@pytest.mark.parametrize("shape", [(2, 5, 3), (4, 4), (2, 3, 5)])
def test_qr_gradient(shape):
    x = _well(shape)
    check_grad(_qr_both(False), x)
    check_grad(lambda t: L.qr(t)[0], x)
    check_grad(lambda t: L.qr(t)[1], x)
    if shape[-2] <= shape[-1]:
        check_grad(_qr_both(True), x)


def test_qr_gradient_full_deep_is_not_implemented_as_tensorflow():
    x = tf.constant(_well((4, 3)))
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.reduce_sum(L.qr(x, full_matrices=True)[0])
    with pytest.raises(NotImplementedError, match="QrGrad not implemented when nrows > ncols and full_matrices"):
        t.gradient(y, x)


def test_eigh_gradient():
    x = _sym_distinct((2, 4, 4)) + 0.1 * np.tril(rng.standard_normal((4, 4)), -1)
    check_grad(lambda t: L.eigvalsh(t), x)
    check_grad(lambda t: tf.concat([L.eigh(t)[0], tf.reshape(L.eigh(t)[1] ** 2, [2, -1])], -1), x)
    # the forward reads the lower triangle: the gradient is lower triangular (TensorFlow's)
    y = tf.constant(x)
    with tf.GradientTape() as t:
        t.watch(y)
        z = tf.reduce_sum(L.eigh(y)[1] ** 2 * np.arange(16.).reshape(4, 4)) + tf.reduce_sum(L.eigvalsh(y))
    g = t.gradient(z, y).numpy()
    np.testing.assert_array_equal(np.triu(g, 1), 0)


def test_eigh_gradient_as_tensorflow():
    a = tf.constant([[[2., 1.], [1., 3.]]])
    with tf.GradientTape() as g:
        g.watch(a)
        e, v = L.eigh(a)
        y = tf.reduce_sum(e * [1., 2.]) + tf.reduce_sum(tf.abs(v) * [[1., 2.], [3., 4.]])
    # TensorFlow 2.21's vectors differ in sign here; |v| makes the gradient sign-free
    assert g.gradient(y, a).shape == (1, 2, 2)
    with tf.GradientTape() as g:
        g.watch(a)
        y = tf.reduce_sum(L.cholesky(a) * [[1., 2.], [3., 4.]])
    assert_close(g.gradient(y, a).numpy(), [[[0.13945107, 0.42820477], [0.42820477, 1.26491106]]],
                 "float32", "decomposition")
    with tf.GradientTape() as g:
        g.watch(a)
        y = tf.reduce_sum(L.triangular_solve(a, [[1.], [2.]]))
    assert_close(g.gradient(y, a).numpy(), [[[-0.16666666, 0.], [-0.16666667, -0.16666667]]],
                 "float32", "decomposition")
    b = tf.constant([[1., 2.], [3., 4.], [5., 7.]])
    with tf.GradientTape() as g:
        g.watch(b)
        q, r = L.qr(b)
        y = tf.reduce_sum(q * [[1., 2.], [3., 4.], [5, 6]]) + tf.reduce_sum(r * [[1., 2.], [3., 4.]])
    assert_close(g.gradient(y, b).numpy(), [[-7.193353, 3.6825507], [0.780249, -1.6014618],
                                             [-0.21269768, -2.142063]], "float16", "decomposition")
    with tf.GradientTape() as g:
        g.watch(b)
        s = L.slogdet(b[:2])
        y = s[1] + s[0]
    assert_close(g.gradient(y, b).numpy(), [[-2.0, 1.5], [1.0, -0.5], [0.0, 0.0]], "float32", "decomposition")


@pytest.mark.parametrize("shape,full", [((2, 5, 3), False), ((3, 5), False), ((4, 4), False),
                                        ((4, 3), True), ((3, 4), True), ((3, 3), True)])
def test_svd_gradient(shape, full):
    x = _well(shape)
    check_grad(lambda t: L.svd(t, compute_uv=False), x)
    check_grad(lambda t: L.svd(t, full_matrices=full)[0], x)
    # sign-free functions of the singular vectors
    check_grad(lambda t: L.svd(t, full_matrices=full)[1] ** 2, x)
    check_grad(lambda t: L.svd(t, full_matrices=full)[2] ** 2, x)
    check_grad(lambda t: L.pinv(t), x)
    check_grad(lambda t: L.lstsq(t, tf.ones(shape[:-1] + (1,), tf.float64)), x)


def test_svd_gradient_full_far_from_square_is_not_implemented_as_tensorflow():
    x = tf.ones([4, 1])
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.reduce_sum(L.svd(x, full_matrices=True)[0])
    with pytest.raises(NotImplementedError, match="svd gradient is not implemented for abs"):
        t.gradient(y, x)


def test_expm_gradient():
    x = rng.standard_normal((2, 3, 3)) * 0.5
    check_grad(lambda t: L.expm(t), x)


# ------------------------------------------------------------------ tracing

def test_traced_equal_eager():
    a = tf.constant(_spd((2, 4, 4), "float32"))
    b = tf.constant(rng.standard_normal((2, 4, 2)).astype(np.float32))

    def f(a, b):
        q, r = L.qr(a)
        e, v = L.eigh(a)
        s, u, w = L.svd(a[..., :3])
        sg, la = L.slogdet(a)
        return (L.cholesky(a), L.triangular_solve(a, b, lower=False), L.solve(a, b, adjoint=True), q, r, e, v,
                s, u, w, sg, la, L.lstsq(a, b), L.pinv(a), L.matrix_rank(a), L.lu(a)[0], L.expm(a * 0.1),
                L.cholesky_solve(L.cholesky(a), b))

    for e_, g_ in zip(f(a, b), tf.function(f)(a, b)):
        np.testing.assert_array_equal(g_.numpy(), e_.numpy())


def test_traced_gradients_equal_eager():
    x = tf.constant(_well((3, 3)))

    def grads(x):
        with tf.GradientTape() as t:
            t.watch(x)
            y = (tf.reduce_sum(L.svd(x)[0]) + tf.reduce_sum(L.qr(x)[1]) + tf.reduce_sum(L.eigvalsh(x) ** 2)
                 + L.slogdet(x)[1] + tf.reduce_sum(L.solve(x, tf.ones([3, 1], tf.float64))))
        return t.gradient(y, x)

    np.testing.assert_allclose(tf.function(grads)(x).numpy(), grads(x).numpy(), rtol=0, atol=0)
