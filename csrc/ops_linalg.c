/* ops_linalg.c — the op layer of dense linear algebra (MatrixInverse, MatrixDeterminant):
 * TensorFlow's shape and dtype checks, the output's allocation and one call of the backend's
 * linalg slot on the innermost square matrices. No numbers here (the slot's), no autodiff
 * (grad.c composes the backward rules from ops). */
#include "mixprec.h"
#include "ops_internal.h"

mp_status mp_run_linalg(mp_op op, mp_tensor *x, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    *out = NULL;
    int inv = op == MP_OP_MATRIX_INVERSE;
    if (x->dtype != MP_F32 && x->dtype != MP_F64)
        return mp_error_set(MP_ERR_SHAPE,
                            "Value for attr 'T' of %s is not in the list of allowed values: double, float, half, "
                            "complex64, complex128", mp_dtype_name(x->dtype));
    if (x->ndim < 2)
        return mp_error_set(MP_ERR_SHAPE, "Input tensor 0 must have rank >= 2, got %d", x->ndim);
    int64_t n = x->shape[x->ndim - 1];
    if (x->shape[x->ndim - 2] != n)
        return mp_error_set(MP_ERR_SHAPE, "Input matrix must be square.");
    int64_t batch = 1;
    for (int i = 0; i < x->ndim - 2; i++)
        batch *= x->shape[i];
    mp_device dev = mp_tensor_device(x);
    MP_TRY(mp_tensor_new(x->dtype, inv ? x->ndim : x->ndim - 2, x->shape, dev, out));
    if (batch == 0)
        return MP_OK;
    mp_status st = BE_CALL(be, linalg, dev, inv ? MP_LINALG_INV : MP_LINALG_DET, x->dtype, batch, n,
                           mp_tensor_data(x), mp_tensor_data(*out), inv && at && at->i0);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
