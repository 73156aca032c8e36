/* linalg.c — bindings of the linear-algebra ops (cholesky, the solves, qr, self_adjoint_eig,
 * svd, log_matrix_determinant, matrix_band_part: csrc/ops_linalg.c) and of the host helper
 * that is not an op (qr_q for keras.initializers.Orthogonal; csrc/linalg_qr.c). Argument
 * conversion only: the numbers, the checks and the tape are the core's. */
#define NO_IMPORT_ARRAY
#include "numpy_api.h"

#include "mp_py.h"

/* qr_q(a) -> Q * sign(diag(R)) of a 2-D float64 array (m >= n), as a new array. */
static PyObject *py_qr_q(PyObject *self, PyObject *arg) {
    (void)self;
    PyArrayObject *a =
        (PyArrayObject *)PyArray_FROMANY(arg, NPY_FLOAT64, 2, 2, NPY_ARRAY_CARRAY | NPY_ARRAY_ENSURECOPY);
    if (!a)
        return NULL;
    npy_intp *dims = PyArray_DIMS(a);
    mp_status st;
    PyThreadState *ts = PyEval_SaveThread(); /* LAPACK on a large matrix: others may run */
    st = mp_linalg_qr_q((double *)PyArray_DATA(a), (int64_t)dims[0], (int64_t)dims[1]);
    PyEval_RestoreThread(ts);
    if (st != MP_OK) {
        Py_DECREF(a);
        return mp_py_raise(st);
    }
    return (PyObject *)a;
}

/* one op on one or two tensors with the flags i0, i1 */
static PyObject *run_op(mp_op op, PyObject *x, PyObject *y, long long i0, long long i1) {
    mp_tensor *in[2] = {NULL, NULL};
    int n = y ? 2 : 1;
    if (mp_py_to_tensor(x, MP_NO_DTYPE, 0, &in[0]))
        return NULL;
    if (y && mp_py_to_tensor(y, MP_NO_DTYPE, 0, &in[1])) {
        mp_tensor_decref(in[0]);
        return NULL;
    }
    mp_attrs at = {.i0 = i0, .i1 = i1};
    PyObject *r = mp_py_run_wrap(op, n, in, &at);
    for (int i = 0; i < n; i++)
        mp_tensor_decref(in[i]);
    return r;
}

static PyObject *py_cholesky(PyObject *self, PyObject *x) {
    (void)self;
    return run_op(MP_OP_CHOLESKY, x, NULL, 0, 0);
}
static PyObject *py_matrix_triangular_solve(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *a, *b;
    int lower = 1, adjoint = 0;
    if (!PyArg_ParseTuple(args, "OO|pp:matrix_triangular_solve", &a, &b, &lower, &adjoint))
        return NULL;
    return run_op(MP_OP_MATRIX_TRIANGULAR_SOLVE, a, b, lower, adjoint);
}
static PyObject *py_matrix_solve(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *a, *b;
    int adjoint = 0;
    if (!PyArg_ParseTuple(args, "OO|p:matrix_solve", &a, &b, &adjoint))
        return NULL;
    return run_op(MP_OP_MATRIX_SOLVE, a, b, adjoint, 0);
}
static PyObject *py_qr(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *a;
    int full = 0, output = 0;
    if (!PyArg_ParseTuple(args, "O|pi:qr", &a, &full, &output))
        return NULL;
    return run_op(MP_OP_QR, a, NULL, full, output);
}
static PyObject *py_self_adjoint_eig(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *a;
    int output = 0;
    if (!PyArg_ParseTuple(args, "O|i:self_adjoint_eig", &a, &output))
        return NULL;
    return run_op(MP_OP_SELF_ADJOINT_EIG, a, NULL, 0, output);
}
static PyObject *py_svd(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *a;
    int full = 0, output = 0;
    if (!PyArg_ParseTuple(args, "O|pi:svd", &a, &full, &output))
        return NULL;
    return run_op(MP_OP_SVD, a, NULL, full, output);
}
static PyObject *py_log_matrix_determinant(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *a;
    int output = 0;
    if (!PyArg_ParseTuple(args, "O|i:log_matrix_determinant", &a, &output))
        return NULL;
    return run_op(MP_OP_LOG_MATRIX_DETERMINANT, a, NULL, 0, output);
}
static PyObject *py_matrix_band_part(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *a;
    long long lo, up;
    if (!PyArg_ParseTuple(args, "OLL:matrix_band_part", &a, &lo, &up))
        return NULL;
    return run_op(MP_OP_MATRIX_BAND_PART, a, NULL, lo, up);
}

static PyObject *py_lu(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *a;
    int output = 0;
    if (!PyArg_ParseTuple(args, "O|i:lu", &a, &output))
        return NULL;
    return run_op(MP_OP_LU, a, NULL, 0, output);
}

static PyMethodDef linalg_methods[] = {
    {"lu", py_lu, METH_VARARGS, "lu(x, output=0) -> Lu's packed factors (0) or row order (1, floats)"},
    {"cholesky", py_cholesky, METH_O, "cholesky(x) -> Cholesky"},
    {"matrix_triangular_solve", py_matrix_triangular_solve, METH_VARARGS,
     "matrix_triangular_solve(a, b, lower=True, adjoint=False) -> MatrixTriangularSolve"},
    {"matrix_solve", py_matrix_solve, METH_VARARGS, "matrix_solve(a, b, adjoint=False) -> MatrixSolve"},
    {"qr", py_qr, METH_VARARGS, "qr(x, full_matrices=False, output=0) -> Qr's q (0) or r (1)"},
    {"self_adjoint_eig", py_self_adjoint_eig, METH_VARARGS,
     "self_adjoint_eig(x, output=0) -> SelfAdjointEigV2's eigenvalues (0) or eigenvectors (1)"},
    {"svd", py_svd, METH_VARARGS, "svd(x, full_matrices=False, output=0) -> Svd's s (0), u (1) or v (2)"},
    {"log_matrix_determinant", py_log_matrix_determinant, METH_VARARGS,
     "log_matrix_determinant(x, output=0) -> LogMatrixDeterminant's sign (0) or log|det| (1)"},
    {"matrix_band_part", py_matrix_band_part, METH_VARARGS,
     "matrix_band_part(x, num_lower, num_upper) -> MatrixBandPart (float32/float64)"},
    {"qr_q", py_qr_q, METH_O, "qr_q(a) -> the orthonormal Q of a's reduced QR, columns signed by diag(R)."},
    {NULL, NULL, 0, NULL},
};

int mp_py_linalg_init(PyObject *module) {
    return PyModule_AddFunctions(module, linalg_methods);
}
