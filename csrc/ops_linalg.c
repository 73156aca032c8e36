/* ops_linalg.c — the op layer of dense linear algebra (MatrixInverse, MatrixDeterminant,
 * Cholesky, MatrixTriangularSolve, MatrixSolve, Qr, SelfAdjointEigV2, Svd,
 * LogMatrixDeterminant, MatrixBandPart, Lu): TensorFlow's shape and dtype checks, the output's
 * allocation and one call of the backend's linalg slot on the innermost matrices. No numbers
 * here (the slot's), no autodiff (grad_linalg.c composes the backward rules from ops). */
#include <stdio.h>

#include "mixprec.h"
#include "ops_internal.h"

static mp_status bad_dtype(mp_dtype dt) {
    return mp_error_set(MP_ERR_SHAPE,
                        "Value for attr 'T' of %s is not in the list of allowed values: double, float, half, "
                        "complex64, complex128",
                        mp_dtype_name(dt));
}

/* TensorFlow's spelling of a dtype in its attr messages */
static const char *tf_type(mp_dtype dt) {
    return dt == MP_F32 ? "float" : dt == MP_F64 ? "double" : dt == MP_F16 ? "half" : mp_dtype_name(dt);
}

static mp_status need_rank2(const mp_tensor *x, int k) {
    if (x->ndim < 2)
        return mp_error_set(MP_ERR_SHAPE, "Input tensor %d must have rank >= 2, got %d", k, x->ndim);
    return MP_OK;
}

static void dims_str(const mp_tensor *x, char *buf, size_t cap) {
    size_t o = 0;
    o += (size_t)snprintf(buf + o, cap - o, "[");
    for (int i = 0; i < x->ndim && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, i ? ",%lld" : "%lld", (long long)x->shape[i]);
    if (o < cap)
        snprintf(buf + o, cap - o, "]");
}

/* the two-input ops: equal ranks and batch dims (the Python face broadcasts), a square a,
 * rhs rows == a's */
static mp_status check_solve(mp_op op, mp_tensor *a, mp_tensor *b) {
    int tri = op == MP_OP_MATRIX_TRIANGULAR_SOLVE;
    if (b->dtype != a->dtype)
        return mp_error_set(MP_ERR_SHAPE, "cannot compute %s as input #1(zero-based) was expected to be a %s tensor but "
                                          "is a %s tensor",
                            tri ? "MatrixTriangularSolve" : "MatrixSolve", tf_type(a->dtype), tf_type(b->dtype));
    MP_TRY(need_rank2(a, 0));
    if (!tri && a->ndim != b->ndim)
        return mp_error_set(MP_ERR_SHAPE, "All input tensors must have the same rank.");
    MP_TRY(need_rank2(b, 1));
    int64_t n = a->shape[a->ndim - 1];
    if (a->shape[a->ndim - 2] != n)
        return tri ? mp_error_set(MP_ERR_SHAPE, "In[0] matrices in the last dimensions must be square (%lld =/= %lld)",
                                  (long long)a->shape[a->ndim - 2], (long long)n)
                   : mp_error_set(MP_ERR_SHAPE, "First input (lhs) must be a square matrix.");
    if (a->ndim != b->ndim)
        return mp_error_set(MP_ERR_SHAPE, "All input tensors must have the same rank.");
    for (int i = 0; i < a->ndim - 2; i++)
        if (a->shape[i] != b->shape[i])
            return mp_error_set(MP_ERR_SHAPE, "All input tensors must have the same outer dimensions.");
    if (b->shape[b->ndim - 2] != n) {
        if (!tri)
            return mp_error_set(MP_ERR_SHAPE, "Input matrix and rhs are incompatible.");
        char sa[160], sb[160];
        dims_str(a, sa, sizeof sa);
        dims_str(b, sb, sizeof sb);
        return mp_error_set(MP_ERR_SHAPE, "In[0] mismatch In[1] shape: %lld vs. %lld: %s %s 1 0", (long long)n,
                            (long long)b->shape[b->ndim - 2], sa, sb);
    }
    return MP_OK;
}

mp_status mp_run_linalg(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at, const mp_backend *be,
                        mp_tensor **out) {
    *out = NULL;
    mp_tensor *x = in[0], *b = n_in > 1 ? in[1] : NULL;
    if (x->dtype != MP_F32 && x->dtype != MP_F64)
        return bad_dtype(x->dtype);
    int64_t i0 = at ? at->i0 : 0, i1 = at ? at->i1 : 0;
    mp_linalg_call c = {.dtype = x->dtype, .i0 = i0, .i1 = i1};
    if (b)
        MP_TRY(check_solve(op, x, b));
    MP_TRY(need_rank2(x, 0));
    int nd = x->ndim;
    int64_t m = x->shape[nd - 2], n = x->shape[nd - 1], p = m < n ? m : n;
    int square_only = op != MP_OP_QR && op != MP_OP_SVD && op != MP_OP_MATRIX_BAND_PART;
    if (square_only && m != n)
        return mp_error_set(MP_ERR_SHAPE, "Input matrix must be square.");
    int64_t batch = 1;
    for (int i = 0; i < nd - 2; i++)
        batch *= x->shape[i];
    int64_t shape[MP_MAX_DIMS];
    for (int i = 0; i < nd; i++)
        shape[i] = x->shape[i];
    int ond = nd; /* the output: x's batch dims, then per kind */
    switch (op) {
    case MP_OP_MATRIX_INVERSE: c.kind = MP_LINALG_INV; break;
    case MP_OP_MATRIX_DETERMINANT: c.kind = MP_LINALG_DET; ond = nd - 2; break;
    case MP_OP_CHOLESKY: c.kind = MP_LINALG_CHOLESKY; break;
    case MP_OP_MATRIX_BAND_PART: c.kind = MP_LINALG_BAND; break;
    case MP_OP_LU:
        c.kind = MP_LINALG_LU;
        if (i1 == 1)
            ond = nd - 1;
        break;
    case MP_OP_LOG_MATRIX_DETERMINANT: c.kind = MP_LINALG_SLOGDET; ond = nd - 2; break;
    case MP_OP_MATRIX_TRIANGULAR_SOLVE:
    case MP_OP_MATRIX_SOLVE:
        c.kind = op == MP_OP_MATRIX_SOLVE ? MP_LINALG_SOLVE : MP_LINALG_TRSOLVE;
        c.k = b->shape[nd - 1];
        shape[nd - 1] = c.k;
        c.b = mp_tensor_data(b);
        c.b_count = batch * n * c.k;
        break;
    case MP_OP_QR: /* i1 = 0 q (m, full ? m : p), 1 r (full ? m : p, n) */
        c.kind = MP_LINALG_QR;
        if (i1 == 0)
            shape[nd - 1] = i0 ? m : p;
        else
            shape[nd - 2] = i0 ? m : p;
        break;
    case MP_OP_SELF_ADJOINT_EIG:
        c.kind = MP_LINALG_EIGH;
        if (i1 == 0)
            ond = nd - 1;
        break;
    case MP_OP_SVD: /* i1 = 0 s (p), 1 u (m, full ? m : p), 2 v (n, full ? n : p) */
        c.kind = MP_LINALG_SVD;
        if (i1 == 0) {
            ond = nd - 1;
            shape[nd - 2] = p;
        } else if (i1 == 1) {
            shape[nd - 1] = i0 ? m : p;
        } else {
            shape[nd - 2] = n;
            shape[nd - 1] = i0 ? n : p;
        }
        break;
    default: return mp_error_set(MP_ERR_INTERNAL, "linalg: %s is not a linalg op", mp_op_get_info(op)->name);
    }
    if (i1 < 0 || i1 > (op == MP_OP_SVD ? 2 : 1))
        if (op == MP_OP_QR || op == MP_OP_SVD || op == MP_OP_SELF_ADJOINT_EIG || op == MP_OP_LOG_MATRIX_DETERMINANT ||
            op == MP_OP_LU)
            return mp_error_set(MP_ERR_VALUE, "%s: no output %lld", mp_op_get_info(op)->name, (long long)i1);
    mp_device dev = mp_tensor_device(x);
    MP_TRY(mp_tensor_new(x->dtype, ond, shape, dev, out));
    c.batch = batch;
    c.m = m;
    c.n = n;
    c.a = mp_tensor_data(x);
    c.a_count = batch * m * n;
    c.out = mp_tensor_data(*out);
    c.out_count = (*out)->numel;
    if (batch == 0)
        return MP_OK;
    mp_status st = BE_CALL(be, linalg, dev, &c);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
