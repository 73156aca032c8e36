/* linalg.c — bindings of the host linear-algebra helpers that are not ops (no tape, no
 * device): qr_q for keras.initializers.Orthogonal. Argument conversion only; the numbers are
 * csrc/linalg_qr.c's. */
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

static PyMethodDef linalg_methods[] = {
    {"qr_q", py_qr_q, METH_O, "qr_q(a) -> the orthonormal Q of a's reduced QR, columns signed by diag(R)."},
    {NULL, NULL, 0, NULL},
};

int mp_py_linalg_init(PyObject *module) {
    return PyModule_AddFunctions(module, linalg_methods);
}
