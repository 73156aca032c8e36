/* linalg_qr.c — the orthonormal factor of a QR decomposition on the host, for
 * keras.initializers.Orthogonal: LAPACK's dgeqrf + dorgqr from the vendored OpenBLAS, then
 * each column signed by its diagonal of R (so the factor is unique, as TensorFlow's
 * initializer makes it). Float64 host buffers only: no device code and no autodiff (an
 * initializer's value, not an op); it must not be used on tensors on the tape. */
#include <lapacke.h>
#include <stdlib.h>

#include "mixprec.h"

mp_status mp_linalg_qr_q(double *a, int64_t m, int64_t n) {
    if (m < n || n < 1)
        return mp_error_set(MP_ERR_VALUE, "qr: need a (m, n) matrix with m >= n >= 1, got (%lld, %lld)", (long long)m,
                            (long long)n);
    if (m > 0x7fffffff || n > 0x7fffffff)
        return mp_error_set(MP_ERR_VALUE, "qr: the matrix (%lld, %lld) is too large for LAPACK's 32-bit indices",
                            (long long)m, (long long)n);
    double *tau = malloc(sizeof(double) * (size_t)n);
    double *diag = malloc(sizeof(double) * (size_t)n);
    mp_status st = MP_OK;
    if (!tau || !diag) {
        st = mp_error_set(MP_ERR_MEMORY, "qr: out of host memory for %lld values", (long long)n);
        goto done;
    }
    /* (m, n) row-major: a = Q R with R in the upper triangle, Q as reflectors below it */
    lapack_int info = scipy_LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, (lapack_int)m, (lapack_int)n, a, (lapack_int)n, tau);
    if (info != 0) {
        st = mp_error_set(MP_ERR_INTERNAL, "qr: LAPACK dgeqrf failed (info %d)", (int)info);
        goto done;
    }
    for (int64_t j = 0; j < n; j++)
        diag[j] = a[j * n + j];
    info = scipy_LAPACKE_dorgqr(LAPACK_ROW_MAJOR, (lapack_int)m, (lapack_int)n, (lapack_int)n, a, (lapack_int)n, tau);
    if (info != 0) {
        st = mp_error_set(MP_ERR_INTERNAL, "qr: LAPACK dorgqr failed (info %d)", (int)info);
        goto done;
    }
    /* q *= sign(diag(r)): sign(0) = 0, as tf.sign */
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            a[i * n + j] *= diag[j] > 0 ? 1.0 : diag[j] < 0 ? -1.0 : 0.0;
done:
    free(tau);
    free(diag);
    return st;
}
