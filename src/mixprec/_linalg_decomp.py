"""``tf.linalg`` decompositions and solvers: cholesky, triangular_solve, solve, cholesky_solve,
qr, eigh, eigvalsh, svd, slogdet, logdet, lstsq, pinv, matrix_rank, normalize, lu, lu_solve,
lu_matrix_inverse, expm. The factorizations are the core's LAPACK ops (csrc/ops_linalg.c, with
their backward rules in csrc/grad_linalg.c); the rest are TensorFlow's own compositions of
ops. Here: signatures, TensorFlow's dtype rules and errors, broadcasting. No element is
touched in Python.
"""

import collections

import numpy as np

from mixprec import _core, _ops
from mixprec._dtypes import float16, float32, float64, int32, int64, as_dtype

__all__ = [
    "cholesky", "triangular_solve", "solve", "cholesky_solve", "qr", "eigh", "eigvalsh", "svd",
    "slogdet", "logdet", "lstsq", "pinv", "matrix_rank", "normalize", "lu", "lu_solve",
    "lu_matrix_inverse", "lu_reconstruct", "expm",
]

Qr = collections.namedtuple("Qr", ["q", "r"])
LogMatrixDeterminant = collections.namedtuple("LogMatrixDeterminant", ["sign", "log_abs_determinant"])
Lu = collections.namedtuple("Lu", ["lu", "p"])


def _t(x, dtype=None):
    if isinstance(x, _core.Variable):
        x = x.read_value()
    if isinstance(x, _core.Tensor):
        return x
    return _ops.convert_to_tensor(x, dtype=dtype) if dtype is not None else _core.convert_to_tensor(x)


def _shape(x):
    return [int(d) for d in x.shape]


def _dims(shape):
    return "[" + ",".join(str(d) for d in shape) + "]"


def _const(v, dtype):
    """v (a Python number or a tensor) as a tensor of dtype, without a float32 detour."""
    if isinstance(v, (_core.Tensor, _core.Variable)):
        return _ops.cast(_t(v), dtype)
    return _ops.convert_to_tensor(v, dtype=dtype)


def _tf_type(dt):
    """TensorFlow's spelling of a dtype in its attr messages."""
    return {"float32": "float", "float64": "double", "float16": "half"}.get(dt.name, dt.name)


def _b(v):
    return "true" if v else "false"


def _no_half(x, node):
    """TensorFlow has no CPU/GPU kernel of ``node`` for float16: NotFoundError as its."""
    if x.dtype == float16:
        from mixprec import errors

        op = node.split("[", 1)[0]
        raise errors.NotFoundError(None, None, "Could not find device for node: {{node %s}} = %s"
                                   % (op, node.replace("T=?", "T=DT_HALF")))


def _invalid(msg):
    return _core.InvalidArgumentError(msg)


def _allowed(x, names):
    if x.dtype not in (float32, float64, float16):
        raise _invalid("Value for attr 'T' of %s is not in the list of allowed values: %s"
                       % (x.dtype.name, names))


def cholesky(input, name=None):  # noqa: A002
    """L with ``input = L L^H`` for each innermost matrix, from its lower triangle only. A
    matrix that is not positive definite gives NaN in L (TensorFlow's CPU kernel; no error)."""
    del name
    x = _t(input)
    _no_half(x, "Cholesky[T=?]")
    return _core.cholesky(x)


def _bcast_pair(a, b, op):
    """a, b broadcast over their batch dims (MatrixTriangularSolve's rule)."""
    sa, sb = _shape(a), _shape(b)
    try:
        batch = list(np.broadcast_shapes(tuple(sa[:-2]), tuple(sb[:-2])))
    except ValueError:
        raise _invalid("In[0] and In[1] must have compatible batch dimensions: %s vs. %s"
                       % (_dims(sa), _dims(sb))) from None
    if sa[:-2] != batch:
        a = _ops.broadcast_to(a, batch + sa[-2:])
    if sb[:-2] != batch:
        b = _ops.broadcast_to(b, batch + sb[-2:])
    return a, b


def triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    """x with ``matrix x = rhs`` (``matrix^H x = rhs`` with ``adjoint``) for a lower (or upper)
    triangular matrix; only that triangle is read, batch dims broadcast, no singularity check."""
    del name
    a, b = _t(matrix), _t(rhs)
    if b.dtype != a.dtype:
        raise _invalid("cannot compute MatrixTriangularSolve as input #1(zero-based) was expected "
                       "to be a %s tensor but is a %s tensor" % (_tf_type(a.dtype), _tf_type(b.dtype)))
    if a.dtype not in (float32, float64, float16):
        raise _invalid("Value for attr 'T' of %s is not in the list of allowed values: bfloat16, "
                       "double, float, half, complex64, complex128" % a.dtype.name)
    _no_half(a, "MatrixTriangularSolve[T=?, adjoint=%s, lower=%s]" % (_b(adjoint), _b(lower)))
    if len(a.shape) < 2:
        raise _invalid("In[0] ndims must be >= 2: %d" % len(a.shape))
    if len(b.shape) < 2:
        raise _invalid("In[1] ndims must be >= 2: %d" % len(b.shape))
    sa = _shape(a)
    if sa[-1] != sa[-2]:
        raise _invalid("In[0] matrices in the last dimensions must be square (%d =/= %d)"
                       % (sa[-2], sa[-1]))
    if sa[-1] != _shape(b)[-2]:
        raise _invalid("In[0] mismatch In[1] shape: %d vs. %d: %s %s 1 0"
                       % (sa[-1], _shape(b)[-2], _dims(sa), _dims(_shape(b))))
    a, b = _bcast_pair(a, b, "MatrixTriangularSolve")
    return _core.matrix_triangular_solve(a, b, bool(lower), bool(adjoint))


def solve(matrix, rhs, adjoint=False, name=None):
    """x with ``matrix x = rhs`` (``matrix^H x = rhs`` with ``adjoint``), by LU with partial
    pivoting; equal batch dims (no broadcasting, as MatrixSolve); a singular matrix is
    InvalidArgumentError "Input matrix is not invertible."."""
    del name
    a, b = _t(matrix), _t(rhs)
    if b.dtype == a.dtype:
        _no_half(a, "MatrixSolve[T=?, adjoint=%s]" % _b(adjoint))
    return _core.matrix_solve(a, b, bool(adjoint))


def cholesky_solve(chol, rhs, name=None):
    """x with ``A x = rhs`` given ``chol`` = cholesky(A): two triangular solves."""
    del name
    y = triangular_solve(chol, rhs, lower=True, adjoint=False)
    return triangular_solve(chol, y, lower=True, adjoint=True)


def qr(input, full_matrices=False, name=None):  # noqa: A002
    """``Qr(q, r)`` of each innermost matrix (Householder, LAPACK's signs: r's diagonal may be
    negative, as TensorFlow's). float16 is computed in float32 and rounded once."""
    del name
    x = _t(input)
    _allowed(x, "double, float, half, complex64, complex128")
    full = bool(full_matrices)
    if x.dtype == float16:
        q, r = qr(_ops.cast(x, float32), full)
        return Qr(_ops.cast(q, float16), _ops.cast(r, float16))
    return Qr(_core.qr(x, full, 0), _core.qr(x, full, 1))


def eigh(tensor, name=None):
    """``(e, v)``: the eigenvalues (ascending) and eigenvectors (columns) of each innermost
    self-adjoint matrix, from its lower triangle."""
    del name
    x = _t(tensor)
    _no_half(x, "SelfAdjointEigV2[T=?, compute_v=true]")
    return _core.self_adjoint_eig(x, 0), _core.self_adjoint_eig(x, 1)


def eigvalsh(tensor, name=None):
    """The eigenvalues (ascending) of each innermost self-adjoint matrix."""
    del name
    x = _t(tensor)
    _no_half(x, "SelfAdjointEigV2[T=?, compute_v=false]")
    return _core.self_adjoint_eig(x, 0)


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """``(s, u, v)`` with ``tensor = u diag(s) v^H`` (s descending), or s alone without
    ``compute_uv``; TensorFlow's order (s first) and its v (not v^H)."""
    del name
    x = _t(tensor)
    full, uv = bool(full_matrices), bool(compute_uv)
    _no_half(x, "Svd[T=?, compute_uv=%s, full_matrices=%s]" % (_b(uv), _b(full)))
    if not uv:
        return _core.svd(x, False, 0)
    return _core.svd(x, full, 0), _core.svd(x, full, 1), _core.svd(x, full, 2)


def slogdet(input, name=None):  # noqa: A002
    """``(sign, log_abs_determinant)`` of each innermost square matrix (sign 0 and -inf for a
    singular one)."""
    del name
    x = _t(input)
    if x.dtype not in (float32, float64, float16):
        raise _invalid("Value for attr 'T' of %s is not in the list of allowed values: half, float, "
                       "double, complex64, complex128" % x.dtype.name)
    _no_half(x, "LogMatrixDeterminant[T=?]")
    return LogMatrixDeterminant(_core.log_matrix_determinant(x, 0), _core.log_matrix_determinant(x, 1))


def logdet(matrix, name=None):
    """log(det(matrix)) of Hermitian positive definite matrices: 2 sum(log(diag(cholesky)))."""
    del name
    from mixprec._linalg_extra import diag_part

    chol = cholesky(matrix)
    return 2.0 * _ops.reduce_sum(_ops.log(diag_part(chol)), axis=[-1])


def _eye_like(n, dtype):
    return _ops.constant(np.eye(n), dtype=dtype)


def lstsq(matrix, rhs, l2_regularizer=0.0, fast=True, name=None):
    """Least-squares solutions of ``matrix x = rhs``. fast: TensorFlow's normal equations with
    ``l2_regularizer`` (Cholesky); not fast: the minimum-norm solution through the SVD
    (pseudo-inverse; the regularizer is ignored, as TensorFlow's robust path)."""
    del name
    a, b = _t(matrix), _t(rhs)
    if not fast:
        if len(b.shape) < 2:
            raise _invalid("In[1] ndims must be >= 2")
        return _ops.matmul(pinv(a), b)
    m, n = _shape(a)[-2:] if len(a.shape) >= 2 else (None, None)
    reg = _const(l2_regularizer, a.dtype) if a.dtype.is_floating else None
    if m is not None and m >= n:
        gram = _ops.matmul(a, a, adjoint_a=True)
        if reg is not None:
            gram = gram + reg * _eye_like(n, a.dtype)
        chol = cholesky(gram)
        return cholesky_solve(chol, _ops.matmul(a, b, adjoint_a=True))
    gram = _ops.matmul(a, a, adjoint_b=True)
    if reg is not None and m is not None:
        gram = gram + reg * _eye_like(m, a.dtype)
    chol = cholesky(gram)
    return _ops.matmul(a, cholesky_solve(chol, b), adjoint_a=True)


def _float_like(a):
    if not a.dtype.is_floating:
        raise TypeError("Input `a` must have `float`-like `dtype` (saw %s)." % a.dtype.name)


def pinv(a, rcond=None, validate_args=False, name=None):
    """The Moore-Penrose pseudo-inverse through the SVD: singular values at or below
    ``rcond * max(s)`` (default ``10 * max(m, n) * eps``) count as zero."""
    del validate_args, name
    a = _t(a)
    _float_like(a)
    m, n = _shape(a)[-2:]
    if rcond is None:
        rcond = 10.0 * max(m, n) * np.finfo(a.dtype.as_numpy_dtype).eps
    rcond = _const(rcond, a.dtype)
    s, u, v = svd(a, full_matrices=False, compute_uv=True)
    cutoff = rcond * _ops.reduce_max(s, axis=-1)
    inf = _ops.cast(_ops.constant(np.inf), a.dtype)
    s = _ops.where(s > _ops.expand_dims(cutoff, -1), s, inf)
    return _ops.matmul(v / _ops.expand_dims(s, -2), u, adjoint_b=True)


def matrix_rank(a, tol=None, validate_args=False, name=None):
    """The number of singular values above ``tol`` (default ``eps * max(m, n) * max(s)``),
    int32. float16 is computed in float32."""
    del validate_args, name
    a = _t(a)
    _float_like(a)
    if len(a.shape) < 2:
        raise ValueError("Input `a` must have at least 2 dimensions (saw: %d)." % len(a.shape))
    half = a.dtype == float16
    x = _ops.cast(a, float32) if half else a
    s = svd(x, compute_uv=False)
    if tol is None:
        m = max(_shape(a)[-2:])
        eps = np.finfo(a.dtype.as_numpy_dtype).eps
        tol = eps * float(m) * _ops.reduce_max(s, axis=-1, keepdims=True)
    else:
        tol = _const(tol, x.dtype)
    return _ops.reduce_sum(_ops.cast(s > tol, int32), axis=-1)


def normalize(tensor, ord="euclidean", axis=None, name=None):  # noqa: A002
    """``(tensor / norm, norm)`` with the norm kept over ``axis`` (tf.norm's ords)."""
    del name
    from mixprec.linalg import norm as _norm

    x = _t(tensor)
    if not (x.dtype.is_floating):
        raise _invalid("Value for attr 'T' of %s is not in the list of allowed values: bfloat16, "
                       "half, float, double, complex64, complex128" % x.dtype.name)
    nrm = _ops.cast(_norm(x, ord=ord, axis=axis, keepdims=True), x.dtype)
    return x / nrm, nrm


def lu(input, output_idx_type=int32, name=None):  # noqa: A002
    """``Lu(lu, p)``: L (unit lower, below the diagonal) and U packed in one matrix, and the
    permutation p with ``input[..., p, :] = L U`` (LAPACK's getrf, partial pivoting)."""
    del name
    x = _t(input)
    _allowed(x, "double, float, half, complex64, complex128")
    idx = as_dtype(output_idx_type)
    _no_half(x, "Lu[T=?, output_idx_type=%s]" % ("DT_INT32" if idx == int32 else "DT_INT64"))
    packed = _core.lu(x, 0)
    perm = _core.lu(x, 1)  # float: the row order, exact integers
    return Lu(packed, _ops.cast(perm, idx))


def _lu_parts(lower_upper):
    from mixprec._linalg_extra import band_part, set_diag

    lo = band_part(lower_upper, -1, 0)
    ones = _ops.ones_like(_ops.reduce_sum(lo, axis=-1))
    lo = set_diag(lo, ones)
    up = band_part(lower_upper, 0, -1)
    return lo, up


def _permute_rows(x, perm):
    """x[..., perm, :] as a product with one_hot(perm) (differentiable in x)."""
    p = _t(perm)
    n = _shape(x)[-2]
    return _ops.matmul(_ops.one_hot(p, n, dtype=x.dtype), x)


def lu_reconstruct(lower_upper, perm, validate_args=False, name=None):
    """The matrix whose LU is ``(lower_upper, perm)``: ``P^T L U``."""
    del validate_args, name
    lu_ = _t(lower_upper)
    lo, up = _lu_parts(lu_)
    p = _ops.one_hot(_t(perm), _shape(lu_)[-1], dtype=lu_.dtype)
    return _ops.matmul(p, _ops.matmul(lo, up), transpose_a=True)


def lu_solve(lower_upper, perm, rhs, validate_args=False, name=None):
    """x with ``A x = rhs`` from A's ``lu``: the rows of rhs permuted, then two triangular
    solves (L unit lower, U upper); batch dims broadcast."""
    del validate_args, name
    lu_ = _t(lower_upper)
    b = _t(rhs)
    lo, up = _lu_parts(lu_)
    pb = _permute_rows(b, perm)
    y = triangular_solve(lo, pb, lower=True)
    return triangular_solve(up, y, lower=False)


def lu_matrix_inverse(lower_upper, perm, validate_args=False, name=None):
    """The inverse of the matrix whose LU is ``(lower_upper, perm)``."""
    del validate_args, name
    lu_ = _t(lower_upper)
    shp = _shape(lu_)
    eye = _ops.broadcast_to(_eye_like(shp[-1], lu_.dtype), shp)
    return lu_solve(lu_, perm, eye)


def expm(input, name=None):  # noqa: A002
    """The matrix exponential by scaling and squaring with TensorFlow's Padé approximants
    (degree 3/5/7/9/13 by the 1-norm), composed of matmul, solve and squarings."""
    del name
    x = _t(input)
    if x.dtype not in (float16, float32, float64):
        raise ValueError("tf.linalg.expm does not support matrices of type %r" % (x.dtype,))
    from mixprec._linalg_expm import expm as _expm

    return _expm(x, solve)
