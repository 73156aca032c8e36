"""``tf.linalg`` names composed from core ops: transposes, diagonals, bands, traces, eye,
matvec, cross (and norm/tensordot where the top level has none yet). Shape checks with
TensorFlow's messages and index/mask constants only: every number goes through core ops
(gather, where, matmul, reduce_sum), so gradients and tracing come for free. No LAPACK here.
"""

import numpy as np

from mixprec import _core, _ops
from mixprec._array_ops import gather
from mixprec._dtypes import as_dtype, float32

__all__ = [
    "matrix_transpose", "adjoint", "diag", "diag_part", "set_diag", "band_part", "trace",
    "tensor_diag", "tensor_diag_part", "matvec", "cross", "eye", "norm", "tensordot",
]


def _t(x):
    if isinstance(x, _core.Variable):
        return x.read_value()
    return x if isinstance(x, _core.Tensor) else _core.convert_to_tensor(x)


def _shape(x):
    return [int(d) for d in x.shape]


def _invalid(msg):
    return _core.InvalidArgumentError(msg)


def _dims_str(shape):
    return "[" + ",".join(str(d) for d in shape) + "]"


def _need_rank(x, n, what, op):
    if len(x.shape) < n:
        raise _invalid("%s must be at least %d-dim, received shape: %s" % (what, n, _dims_str(_shape(x))))


def _static_int(v, what):
    if isinstance(v, _core.Tensor):
        v = v.numpy()
    a = np.asarray(v)
    if a.dtype.kind not in "iu" or a.ndim != 0:
        raise TypeError("Cannot convert %r to EagerTensor of dtype int64" % (v,))
    return int(a)


def _scalar_k(k):
    if isinstance(k, (tuple, list)):
        if len(k) == 2 and k[0] == k[1]:
            k = k[0]
        else:
            raise NotImplementedError("mixprec: tf.linalg diagonal ops support one diagonal "
                                      "(a scalar k), got k=%r" % (k,))
    return _static_int(k, "k")


def _padding(value, dtype):
    if dtype.is_bool:
        raise TypeError("Cannot convert %r to EagerTensor of dtype bool" % (value,))
    return _ops.cast(_t(value), dtype)


def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """The last two axes swapped (real dtypes: the conjugate is the transpose)."""
    del name, conjugate
    a = _t(a)
    r = len(a.shape)
    if r < 2:
        raise ValueError("Argument `a` should be a (batch) matrix with rank >= 2.  Received `a` = "
                         "%s with shape: %s" % (a.numpy(), tuple(_shape(a))))
    return _ops.transpose(a, list(range(r - 2)) + [r - 1, r - 2])


def adjoint(matrix, name=None):
    """The conjugate transpose of the last two axes (the transpose for real dtypes)."""
    return matrix_transpose(matrix, conjugate=True)


def _diag_map(rows, cols, k):
    """For a (rows, cols) matrix: the mask of diagonal k and, per entry, its position along it."""
    i = np.arange(rows)[:, None]
    j = np.arange(cols)[None, :]
    mask = (j - i) == k
    pos = np.where(mask, i if k >= 0 else j, 0) + np.zeros((rows, cols), np.int64)
    return mask, pos.astype(np.int32)


def diag(diagonal, name="diag", k=0, num_rows=-1, num_cols=-1, padding_value=0, align="RIGHT_LEFT"):
    """A (batch of) matrix with ``diagonal`` on diagonal ``k`` and ``padding_value`` elsewhere
    (MatrixDiagV3 with one diagonal)."""
    del name, align
    d = _t(diagonal)
    k = _scalar_k(k)
    _need_rank(d, 1, "diagonal", "MatrixDiagV3")
    pad = _padding(padding_value, d.dtype)
    n = _shape(d)[-1]
    num_rows, num_cols = _static_int(num_rows, "num_rows"), _static_int(num_cols, "num_cols")
    min_rows, min_cols = n + max(-k, 0), n + max(k, 0)
    if num_rows == -1 and num_cols == -1:  # square, as MatrixDiagV3 makes it
        num_rows = num_cols = n + abs(k)
    elif num_rows == -1:
        num_rows = min_rows
    elif num_cols == -1:
        num_cols = min_cols
    if num_rows < min_rows:
        raise _invalid("The number of rows is too small.")
    if num_cols < min_cols:
        raise _invalid("The number of columns is too small.")
    if num_rows != min_rows and num_cols != min_cols:
        raise _invalid("The number of rows or columns is not consistent with the specified "
                       "d_lower, d_upper, and diagonal.")
    mask, pos = _diag_map(num_rows, num_cols, k)
    vals = gather(d, _ops.constant(pos), axis=len(d.shape) - 1)
    return _ops.where(_ops.constant(mask), vals, pad)


def _diag_len(m, n, k):
    return min(m, n - k) if k >= 0 else min(m + k, n)


def _check_k(m, n, k):
    if not (-m < k < n) and not (m == 0 or n == 0):
        raise _invalid("Diagonal index %d is out of bounds for a (%d, %d) matrix: it must be in "
                       "(-%d, %d)." % (k, m, n, m, n))


def diag_part(input, name="diag_part", k=0, padding_value=0, align="RIGHT_LEFT"):  # noqa: A002
    """Diagonal ``k`` of each innermost matrix (MatrixDiagPartV3 with one diagonal)."""
    del name, align, padding_value
    x = _t(input)
    k = _scalar_k(k)
    _need_rank(x, 2, "input", "MatrixDiagPartV3")
    shp = _shape(x)
    m, n = shp[-2:]
    _check_k(m, n, k)
    length = max(_diag_len(m, n, k), 0)
    i = np.arange(length)
    flat = (i * n + i + k) if k >= 0 else ((i - k) * n + i)
    x2 = _ops.reshape(x, shp[:-2] + [m * n])
    return gather(x2, _ops.constant(flat.astype(np.int32)), axis=len(shp) - 2)


def set_diag(input, diagonal, name="set_diag", k=0, align="RIGHT_LEFT"):  # noqa: A002
    """``input`` with diagonal ``k`` of each innermost matrix replaced by ``diagonal``
    (MatrixSetDiagV3 with one diagonal)."""
    del name, align
    x = _t(input)
    k = _scalar_k(k)
    _need_rank(x, 2, "input", "MatrixSetDiagV3")
    d = _ops.cast(_t(diagonal), x.dtype) if not isinstance(diagonal, _core.Tensor) else _t(diagonal)
    shp = _shape(x)
    m, n = shp[-2:]
    _check_k(m, n, k)
    length = _diag_len(m, n, k)
    if _shape(d) != shp[:-2] + [length]:
        raise _invalid("Either first dimensions of diagonal don't match input.shape[:-2], or "
                       "diagonal.shape[:-1] is not equal to the longests diagonal in range "
                       "[lower_diag_index:upper_diag_index].\nInput shape: %s\nDiagonal shape: %s"
                       % (_dims_str(shp), _dims_str(_shape(d))))
    if d.dtype != x.dtype:
        raise _invalid("cannot compute MatrixSetDiagV3 as input #1(zero-based) was expected to be a "
                       "%s tensor but is a %s tensor" % (x.dtype.name, d.dtype.name))
    mask, pos = _diag_map(m, n, k)
    vals = gather(d, _ops.constant(pos), axis=len(d.shape) - 1)
    return _ops.where(_ops.constant(mask), vals, x)


def band_part(input, num_lower, num_upper, name=None):  # noqa: A002
    """Entries with ``i - j <= num_lower`` and ``j - i <= num_upper`` kept, the rest zero
    (a negative bound keeps the whole triangle; MatrixBandPart)."""
    del name
    x = _t(input)
    lo, up = _static_int(num_lower, "num_lower"), _static_int(num_upper, "num_upper")
    _need_rank(x, 2, "input", "MatrixBandPart")
    m, n = _shape(x)[-2:]
    if lo > m:
        raise _invalid("num_lower must be negative or less or equal to number of rows (%d) got: %d"
                       % (m, lo))
    if up > n:
        raise _invalid("num_upper must be negative or less or equal to number of columns (%d) "
                       "got: %d" % (n, up))
    i = np.arange(m)[:, None]
    j = np.arange(n)[None, :]
    mask = ((lo < 0) | (i - j <= lo)) & ((up < 0) | (j - i <= up))
    return _ops.where(_ops.constant(mask), x, _ops.zeros_like(x))


def trace(x, name=None):
    """The sum of each innermost matrix's main diagonal."""
    del name
    return _ops.reduce_sum(diag_part(x), axis=-1)


def tensor_diag(diagonal, name=None):
    """A tensor of shape ``S + S`` with ``diagonal`` (shape S) on its diagonal (Diag)."""
    del name
    d = _t(diagonal)
    shp = _shape(d)
    if not shp:
        raise _invalid("Input must be at least rank 1, got 0")
    size = int(np.prod(shp))
    return _ops.reshape(diag(_ops.reshape(d, [size])), shp + shp)


def tensor_diag_part(input, name=None):  # noqa: A002
    """The diagonal of a tensor of shape ``S + S``: shape S (DiagPart)."""
    del name
    x = _t(input)
    shp = _shape(x)
    r = len(shp)
    if r == 0 or r % 2:
        raise _invalid("The rank of the tensor should be                                          "
                       "even and positive, got shape %s" % _dims_str(shp))
    half = r // 2
    for a in range(half):
        if shp[a] != shp[a + half]:
            raise _invalid("Invalid shape %s: dimensions %d and %d do not match."
                           % (_dims_str(shp), a, a + half))
    size = int(np.prod(shp[:half]))
    return _ops.reshape(diag_part(_ops.reshape(x, [size, size])), shp[:half])


def matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False, b_is_sparse=False,
           name=None):
    """``a @ b`` for a (batch of) matrix and a (batch of) vector."""
    del a_is_sparse, b_is_sparse, name
    b = _t(b)
    out = _ops.matmul(a, _ops.expand_dims(b, -1), transpose_a=transpose_a or adjoint_a)
    return _ops.squeeze(out, axis=-1)


def cross(a, b, name=None):
    """Pairwise cross products of the 3-element vectors along the last axis (Cross)."""
    del name
    a, b = _t(a), _t(b)
    if _shape(a) != _shape(b):
        raise _invalid("Both inputs must be of same shape: %s vs. %s"
                       % (_dims_str(_shape(a)), _dims_str(_shape(b))))
    if not _shape(a) or _shape(a)[-1] != 3:
        raise _core_failed_precondition("Cross-products are only defined for 3-element vectors.")
    ax = len(a.shape) - 1
    p = _ops.constant(np.array([1, 2, 0], np.int32))
    q = _ops.constant(np.array([2, 0, 1], np.int32))
    return (gather(a, p, axis=ax) * gather(b, q, axis=ax)
            - gather(a, q, axis=ax) * gather(b, p, axis=ax))


def _core_failed_precondition(msg):
    from mixprec import errors

    return errors.FailedPreconditionError(None, None, msg)


def eye(num_rows, num_columns=None, batch_shape=None, dtype=float32, name=None):
    """An identity matrix (ones where row == column), repeated over ``batch_shape``."""
    del name
    dtype = as_dtype(dtype)
    rows = _static_int(num_rows, "num_rows")
    cols = rows if num_columns is None else _static_int(num_columns, "num_columns")
    for v in (rows, cols):
        if v < 0:
            raise _invalid("Dimension %d must be >= 0" % v)
    batch = [] if batch_shape is None else [int(v) for v in np.asarray(
        batch_shape.numpy() if isinstance(batch_shape, _core.Tensor) else batch_shape).reshape(-1)]
    m = _ops.cast(_ops.constant(np.eye(rows, cols, dtype=bool)), dtype)
    return _ops.broadcast_to(m, batch + [rows, cols]) if batch else m


def tensordot(a, b, axes, name=None):
    """Sums of products over ``axes`` of ``a`` and ``b``: an int N (the last N of ``a`` with
    the first N of ``b``) or a pair of axis lists; a transpose, a reshape, a matmul."""
    del name
    a, b = _t(a), _t(b)
    ra, rb = len(a.shape), len(b.shape)
    if isinstance(axes, _core.Tensor):
        axes = axes.numpy().tolist()
    if isinstance(axes, (int, np.integer)):
        if axes < 0:
            raise ValueError("'axes' must be at least 0.")
        if axes > ra or axes > rb:
            raise ValueError("'axes' must not be larger than the number of dimensions of tensor "
                             "%s." % (a if axes > ra else b))
        ax_a, ax_b = list(range(ra - axes, ra)), list(range(axes))
    else:
        if len(axes) != 2:
            raise ValueError("'axes' must be an integer or have length 2.")
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, (int, np.integer)) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, (int, np.integer)) else list(ax_b)
        if len(ax_a) != len(ax_b):
            raise _invalid("Different number of contraction axes 'a' and 'b', %d != %d."
                           % (len(ax_a), len(ax_b)))
        ax_a = [x % ra for x in ax_a]
        ax_b = [x % rb for x in ax_b]
    sa, sb = _shape(a), _shape(b)
    for x, y in zip(ax_a, ax_b):
        if sa[x] != sb[y]:
            raise _invalid("Matrix size-incompatible: contraction dimension %d of a (%d) vs %d of "
                           "b (%d)" % (x, sa[x], y, sb[y]))
    free_a = [i for i in range(ra) if i not in ax_a]
    free_b = [i for i in range(rb) if i not in ax_b]
    k = int(np.prod([sa[i] for i in ax_a]))
    a2 = _ops.reshape(_ops.transpose(a, free_a + ax_a), [int(np.prod([sa[i] for i in free_a])), k])
    b2 = _ops.reshape(_ops.transpose(b, ax_b + free_b), [k, int(np.prod([sb[i] for i in free_b]))])
    return _ops.reshape(_ops.matmul(a2, b2), [sa[i] for i in free_a] + [sb[i] for i in free_b])


def _vector_norm(x, ord, axes, keepdims):  # noqa: A002
    ax = axes
    if ord in ("euclidean", "fro", 2, 2.0):
        return _ops.sqrt(_ops.reduce_sum(x * x, axis=ax, keepdims=keepdims))
    if ord == np.inf:
        return _ops.reduce_max(_ops.abs(x), axis=ax, keepdims=keepdims)
    if ord == 1:
        return _ops.reduce_sum(_ops.abs(x), axis=ax, keepdims=keepdims)
    p = _ops.cast(_ops.constant(float(ord)), x.dtype)
    s = _ops.reduce_sum(_ops.pow(_ops.abs(x), p), axis=ax, keepdims=keepdims)
    return _ops.pow(s, 1.0 / p)


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):  # noqa: A002
    """Vector norms (over all elements or one axis: 'euclidean'/'fro'/2, 1, inf, any p > 0) and
    matrix norms (over an axis pair: 'fro'/'euclidean', 1, inf)."""
    del name
    x = _t(tensor)
    keepdims = bool(keepdims)
    r = len(x.shape)
    if isinstance(axis, _core.Tensor):
        axis = axis.numpy().tolist()
    is_matrix = isinstance(axis, (list, tuple)) and len(axis) == 2
    if axis is not None and not is_matrix:
        if isinstance(axis, (list, tuple)):
            if len(axis) != 1:
                raise ValueError("'axis' must be None, an integer, or a tuple of 2 unique integers, "
                                 "got %r" % (axis,))
            axis = axis[0]
    supported_matrix = ("euclidean", "fro", 1, np.inf)
    if is_matrix:
        if ord not in supported_matrix:
            if ord in (2, 2.0, -np.inf) or isinstance(ord, (int, float)):
                if ord == 2:
                    raise NotImplementedError("mixprec: tf.norm's matrix 2-norm needs an SVD, "
                                              "which mixprec does not have yet")
            raise ValueError("'ord' must be a supported matrix norm in %s, got %r"
                             % (list(supported_matrix), ord))
        a0, a1 = axis[0] % r, axis[1] % r
        if a0 == a1:
            raise ValueError("'axis' must be None, an integer, or a tuple of 2 unique integers, "
                             "got %r" % (axis,))
        if ord in ("euclidean", "fro"):
            return _vector_norm(x, "fro", [a0, a1], keepdims)
        ax_sum, ax_max = (a0, a1) if ord == 1 else (a1, a0)
        s = _ops.reduce_sum(_ops.abs(x), axis=ax_sum, keepdims=True)
        out = _ops.reduce_max(s, axis=ax_max, keepdims=True)
        return out if keepdims else _ops.squeeze(out, axis=[a0, a1])
    if not (ord in ("euclidean", "fro") or (isinstance(ord, (int, float)) and ord > 0)):
        raise ValueError("'ord' must be a supported vector norm, got %r" % (ord,))
    if ord == "fro" and axis is not None:
        raise ValueError("'ord' must be a supported vector norm, got %r" % (ord,))
    return _vector_norm(x, ord, axis, keepdims)
