/* cpu_linalg.c — the CPU's linalg slot: LAPACK (getrf/getri) from the vendored OpenBLAS on
 * batches of square row-major float32/float64 matrices, one matrix at a time (OpenBLAS
 * threads inside). Numbers only: shapes, dtypes and the tape are the op layer's (ops_linalg.c). */
#include <lapacke.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "mixprec.h"

/* One matrix: w is a's (n, n) copy, overwritten by its LU factors; ipiv n pivots. */
#define LINALG_ONE(T, GETRF, GETRI)                                                                                    \
    static mp_status linalg_##T(mp_linalg_kind k, int64_t batch, int64_t n, const T *a, T *out, int adjoint,          \
                                T *w, lapack_int *ipiv) {                                                              \
        size_t nn = (size_t)n * (size_t)n;                                                                             \
        for (int64_t b = 0; b < batch; b++) {                                                                          \
            memcpy(w, a + b * nn, nn * sizeof(T));                                                                     \
            lapack_int info = n ? GETRF(LAPACK_ROW_MAJOR, (lapack_int)n, (lapack_int)n, w, (lapack_int)n, ipiv) : 0;   \
            if (info < 0)                                                                                              \
                return mp_error_set(MP_ERR_INTERNAL, "linalg: LAPACK getrf failed (info %d)", (int)info);             \
            if (k == MP_LINALG_DET) {                                                                                  \
                double d = 1.0;                                                                                        \
                for (int64_t i = 0; i < n; i++)                                                                        \
                    d *= (ipiv[i] != i + 1 ? -1.0 : 1.0) * (double)w[i * n + i];                                       \
                out[b] = (T)d;                                                                                         \
                continue;                                                                                              \
            }                                                                                                          \
            if (info > 0)                                                                                              \
                return mp_error_set(MP_ERR_SHAPE, "Input is not invertible.");                                        \
            if (n) {                                                                                                   \
                info = GETRI(LAPACK_ROW_MAJOR, (lapack_int)n, w, (lapack_int)n, ipiv);                                \
                if (info != 0)                                                                                         \
                    return info > 0 ? mp_error_set(MP_ERR_SHAPE, "Input is not invertible.")                         \
                                    : mp_error_set(MP_ERR_INTERNAL, "linalg: LAPACK getri failed (info %d)", (int)info); \
            }                                                                                                          \
            T *o = out + b * nn;                                                                                       \
            if (!adjoint)                                                                                              \
                memcpy(o, w, nn * sizeof(T));                                                                          \
            else /* (a^H)^-1 = (a^-1)^H: the transpose for real dtypes */                                              \
                for (int64_t i = 0; i < n; i++)                                                                        \
                    for (int64_t j = 0; j < n; j++)                                                                    \
                        o[i * n + j] = w[j * n + i];                                                                   \
        }                                                                                                              \
        return MP_OK;                                                                                                  \
    }
LINALG_ONE(float, scipy_LAPACKE_sgetrf, scipy_LAPACKE_sgetri)
LINALG_ONE(double, scipy_LAPACKE_dgetrf, scipy_LAPACKE_dgetri)
#undef LINALG_ONE

mp_status mp_cpu_linalg(mp_device dev, mp_linalg_kind k, mp_dtype dt, int64_t batch, int64_t n, const void *a,
                        void *out, int adjoint) {
    (void)dev;
    if (dt != MP_F32 && dt != MP_F64)
        return mp_error_set(MP_ERR_INTERNAL, "linalg: unsupported dtype %s", mp_dtype_name(dt));
    if (k != MP_LINALG_INV && k != MP_LINALG_DET)
        return mp_error_set(MP_ERR_INTERNAL, "linalg: unknown kind %d", (int)k);
    if (n > 0x7fffffff)
        return mp_error_set(MP_ERR_VALUE, "linalg: a (%lld, %lld) matrix is too large for LAPACK's 32-bit indices",
                            (long long)n, (long long)n);
    size_t es = dt == MP_F32 ? 4 : 8;
    void *w = malloc(es * (size_t)(n * n) + 1);
    lapack_int *ipiv = malloc(sizeof(lapack_int) * (size_t)n + 1);
    mp_status st;
    if (!w || !ipiv)
        st = mp_error_set(MP_ERR_MEMORY, "linalg: out of host memory for a (%lld, %lld) matrix", (long long)n,
                          (long long)n);
    else if (dt == MP_F32)
        st = linalg_float(k, batch, n, a, out, adjoint, w, ipiv);
    else
        st = linalg_double(k, batch, n, a, out, adjoint, w, ipiv);
    free(w);
    free(ipiv);
    return st;
}
