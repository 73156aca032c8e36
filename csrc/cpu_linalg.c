/* cpu_linalg.c — the CPU's linalg slot: LAPACK (getrf/getri/getrs, potrf, geqrf/orgqr, syevd,
 * gesdd) and BLAS trsm from the vendored OpenBLAS on batches of row-major float32/float64
 * matrices, one matrix at a time (OpenBLAS threads inside), each widened to a float64 copy and
 * its result rounded once. Numbers only: shapes, dtypes and the tape are the op layer's
 * (ops_linalg.c); no hand-written decomposition where LAPACK has one. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "mixprec.h"

/* elements [off, off + cnt) of a float32/float64 buffer, widened into w */
static void load(mp_dtype dt, const void *src, int64_t off, int64_t cnt, double *w) {
    if (dt == MP_F64) {
        memcpy(w, (const double *)src + off, sizeof(double) * (size_t)cnt);
        return;
    }
    const float *s = (const float *)src + off;
    for (int64_t i = 0; i < cnt; i++)
        w[i] = s[i];
}
static void store(mp_dtype dt, void *dst, int64_t off, int64_t cnt, const double *w) {
    if (dt == MP_F64) {
        memcpy((double *)dst + off, w, sizeof(double) * (size_t)cnt);
        return;
    }
    float *d = (float *)dst + off;
    for (int64_t i = 0; i < cnt; i++)
        d[i] = (float)w[i];
}

typedef struct {
    double *w, *x, *u, *vt, *s;
    lapack_int *ipiv;
} scratch;

static mp_status lapack_fail(const char *what, lapack_int info) {
    return mp_error_set(MP_ERR_INTERNAL, "linalg: LAPACK %s failed (info %d)", what, (int)info);
}

/* LU of w (n, n) in place; *singular = a zero pivot */
static mp_status lu(double *w, int64_t n, lapack_int *ipiv, int *singular) {
    lapack_int info = n ? scipy_LAPACKE_dgetrf(LAPACK_ROW_MAJOR, (lapack_int)n, (lapack_int)n, w, (lapack_int)n, ipiv) : 0;
    if (info < 0)
        return lapack_fail("getrf", info);
    *singular = info > 0;
    return MP_OK;
}

static mp_status one(const mp_linalg_call *c, int64_t b, scratch *z) {
    mp_dtype dt = c->dtype;
    int64_t m = c->m, n = c->n, k = c->k, p = m < n ? m : n;
    int64_t mn = m * n;
    double *w = z->w, *x = z->x;
    lapack_int info;
    int singular = 0;
    load(dt, c->a, b * mn, mn, w);
    switch (c->kind) {
    case MP_LINALG_INV:
        MP_TRY(lu(w, n, z->ipiv, &singular));
        if (singular)
            return mp_error_set(MP_ERR_SHAPE, "Input is not invertible.");
        if (n && (info = scipy_LAPACKE_dgetri(LAPACK_ROW_MAJOR, (lapack_int)n, w, (lapack_int)n, z->ipiv)) != 0)
            return info > 0 ? mp_error_set(MP_ERR_SHAPE, "Input is not invertible.") : lapack_fail("getri", info);
        if (c->i0) /* (a^H)^-1 = (a^-1)^H: the transpose for real dtypes */
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < n; j++)
                    x[i * n + j] = w[j * n + i];
        store(dt, c->out, b * mn, mn, c->i0 ? x : w);
        return MP_OK;
    case MP_LINALG_DET:
    case MP_LINALG_SLOGDET: {
        MP_TRY(lu(w, n, z->ipiv, &singular));
        double sign = 1.0, logabs = 0.0, det = 1.0;
        for (int64_t i = 0; i < n; i++) {
            double d = w[i * n + i];
            double flip = z->ipiv[i] != i + 1 ? -1.0 : 1.0;
            det *= flip * d;
            sign *= flip * (d < 0 ? -1.0 : 1.0);
            logabs += log(fabs(d));
        }
        double r = c->kind == MP_LINALG_DET ? det : c->i1 ? (singular ? -INFINITY : logabs) : (singular ? 0.0 : sign);
        store(dt, c->out, b, 1, &r);
        return MP_OK;
    }
    case MP_LINALG_CHOLESKY:
        info = n ? scipy_LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', (lapack_int)n, w, (lapack_int)n) : 0;
        if (info < 0)
            return lapack_fail("potrf", info);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++)
                if (j > i)
                    w[i * n + j] = 0.0;
                else if (info > 0) /* not positive definite: NaN, as TensorFlow's CPU kernel */
                    w[i * n + j] = NAN;
        store(dt, c->out, b * mn, mn, w);
        return MP_OK;
    case MP_LINALG_TRSOLVE:
        load(dt, c->b, b * n * k, n * k, x);
        if (n && k)
            scipy_cblas_dtrsm(CblasRowMajor, CblasLeft, c->i0 ? CblasLower : CblasUpper,
                              c->i1 ? CblasTrans : CblasNoTrans, CblasNonUnit, (blasint)n, (blasint)k, 1.0, w,
                              (blasint)n, x, (blasint)k);
        store(dt, c->out, b * n * k, n * k, x);
        return MP_OK;
    case MP_LINALG_SOLVE:
        MP_TRY(lu(w, n, z->ipiv, &singular));
        if (singular)
            return mp_error_set(MP_ERR_SHAPE, "Input matrix is not invertible.");
        load(dt, c->b, b * n * k, n * k, x);
        if (n && k &&
            (info = scipy_LAPACKE_dgetrs(LAPACK_ROW_MAJOR, c->i0 ? 'T' : 'N', (lapack_int)n, (lapack_int)k, w,
                                         (lapack_int)n, z->ipiv, x, (lapack_int)k)) != 0)
            return lapack_fail("getrs", info);
        store(dt, c->out, b * n * k, n * k, x);
        return MP_OK;
    case MP_LINALG_QR: {
        int64_t q = c->i0 ? m : p; /* q's columns, r's rows */
        if (p && (info = scipy_LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, (lapack_int)m, (lapack_int)n, w, (lapack_int)n, z->s)) != 0)
            return lapack_fail("geqrf", info);
        if (c->i1) { /* r: the upper triangle */
            for (int64_t i = 0; i < q; i++)
                for (int64_t j = 0; j < n; j++)
                    x[i * n + j] = i <= j ? w[i * n + j] : 0.0;
            store(dt, c->out, b * q * n, q * n, x);
            return MP_OK;
        }
        for (int64_t i = 0; i < m; i++) /* the reflectors, in a (m, q) matrix */
            for (int64_t j = 0; j < q; j++)
                x[i * q + j] = j < p ? w[i * n + j] : 0.0;
        if (m && q &&
            (info = scipy_LAPACKE_dorgqr(LAPACK_ROW_MAJOR, (lapack_int)m, (lapack_int)q, (lapack_int)p, x, (lapack_int)q,
                                         z->s)) != 0)
            return lapack_fail("orgqr", info);
        store(dt, c->out, b * m * q, m * q, x);
        return MP_OK;
    }
    case MP_LINALG_EIGH:
        info = n ? scipy_LAPACKE_dsyevd(LAPACK_ROW_MAJOR, c->i1 ? 'V' : 'N', 'L', (lapack_int)n, w, (lapack_int)n, z->s)
                 : 0;
        if (info > 0)
            return mp_error_set(MP_ERR_SHAPE, "Self-adjoint eigen decomposition was not successful. The input might "
                                              "not be valid.");
        if (info < 0)
            return lapack_fail("syevd", info);
        if (c->i1)
            store(dt, c->out, b * mn, mn, w);
        else
            store(dt, c->out, b * n, n, z->s);
        return MP_OK;
    case MP_LINALG_SVD: {
        int64_t uc = c->i0 ? m : p, vr = c->i0 ? n : p; /* u (m, uc), vt (vr, n) */
        char job = c->i1 == 0 ? 'N' : c->i0 ? 'A' : 'S';
        info = p ? scipy_LAPACKE_dgesdd(LAPACK_ROW_MAJOR, job, (lapack_int)m, (lapack_int)n, w, (lapack_int)n, z->s,
                                        z->u, (lapack_int)(uc ? uc : 1), z->vt, (lapack_int)(n ? n : 1))
                 : 0;
        if (info > 0)
            return mp_error_set(MP_ERR_SHAPE, "SVD did not converge. The input might not be valid.");
        if (info < 0)
            return lapack_fail("gesdd", info);
        if (!p) { /* an empty matrix: s empty, u and v identities */
            for (int64_t i = 0; i < m * uc; i++)
                z->u[i] = i / uc == i % uc;
            for (int64_t i = 0; i < vr * n; i++)
                z->vt[i] = i / n == i % n;
        }
        if (c->i1 == 0) {
            store(dt, c->out, b * p, p, z->s);
        } else if (c->i1 == 1) {
            store(dt, c->out, b * m * uc, m * uc, z->u);
        } else {
            for (int64_t i = 0; i < n; i++) /* v = vt^T (n, vr) */
                for (int64_t j = 0; j < vr; j++)
                    x[i * vr + j] = z->vt[j * n + i];
            store(dt, c->out, b * n * vr, n * vr, x);
        }
        return MP_OK;
    }
    case MP_LINALG_LU:
        MP_TRY(lu(w, n, z->ipiv, &singular));
        if (singular)
            return mp_error_set(MP_ERR_SHAPE, "Input is not invertible.");
        if (c->i1 == 0) {
            store(dt, c->out, b * mn, mn, w);
            return MP_OK;
        }
        for (int64_t i = 0; i < n; i++) /* the pivots' swaps applied to 0..n-1 */
            x[i] = (double)i;
        for (int64_t i = 0; i < n; i++) {
            int64_t j = z->ipiv[i] - 1;
            double t = x[i];
            x[i] = x[j];
            x[j] = t;
        }
        store(dt, c->out, b * n, n, x);
        return MP_OK;
    case MP_LINALG_BAND:
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                if (!((c->i0 < 0 || i - j <= c->i0) && (c->i1 < 0 || j - i <= c->i1)))
                    w[i * n + j] = 0.0;
        store(dt, c->out, b * mn, mn, w);
        return MP_OK;
    }
    return mp_error_set(MP_ERR_INTERNAL, "linalg: unknown kind %d", (int)c->kind);
}

mp_status mp_cpu_linalg(mp_device dev, const mp_linalg_call *c) {
    (void)dev;
    if (c->dtype != MP_F32 && c->dtype != MP_F64)
        return mp_error_set(MP_ERR_INTERNAL, "linalg: unsupported dtype %s", mp_dtype_name(c->dtype));
    int64_t m = c->m, n = c->n, k = c->k, big = m > n ? m : n;
    if (big > 0x7fffffff || k > 0x7fffffff || (big && (m * n) / big > 0x7fffffff))
        return mp_error_set(MP_ERR_VALUE, "linalg: a (%lld, %lld) matrix is too large for LAPACK's 32-bit indices",
                            (long long)m, (long long)n);
    size_t d = sizeof(double);
    scratch z = {
        .w = malloc(d * (size_t)(m * n) + d),
        .x = malloc(d * (size_t)(big * (big > k ? big : k)) + d),
        .u = malloc(d * (size_t)(m * m) + d),
        .vt = malloc(d * (size_t)(n * n) + d),
        .s = malloc(d * (size_t)big + d),
        .ipiv = malloc(sizeof(lapack_int) * (size_t)big + sizeof(lapack_int)),
    };
    mp_status st = MP_OK;
    if (!z.w || !z.x || !z.u || !z.vt || !z.s || !z.ipiv)
        st = mp_error_set(MP_ERR_MEMORY, "linalg: out of host memory for a (%lld, %lld) matrix", (long long)m,
                          (long long)n);
    for (int64_t b = 0; st == MP_OK && b < c->batch; b++)
        st = one(c, b, &z);
    free(z.w);
    free(z.x);
    free(z.u);
    free(z.vt);
    free(z.s);
    free(z.ipiv);
    return st;
}
