/* slicing.c — the bindings of the tensor-bound slice ops (STRIDED_SLICE_T, SLICE_T and their
 * gradient, csrc/ops_slice_t.c): argument conversion only; the spec tensors follow x to
 * its device (values follow tensors). Python's tf.strided_slice / tf.slice and the traced
 * x[i:j] (src/mixprec/_slicing.py) call these; they must not interpret the spec. */
#include "mp_py.h"

static int spec_tensor(PyObject *o, const mp_tensor *x, mp_tensor **out) {
    if (mp_py_to_tensor(o, MP_NO_DTYPE, 0, out))
        return -1;
    mp_device dev = mp_tensor_device(x);
    if (mp_device_eq(mp_tensor_device(*out), dev))
        return 0;
    mp_tensor *moved;
    mp_status st = mp_copy_to_device(*out, dev, &moved);
    mp_tensor_decref(*out);
    *out = NULL;
    if (st != MP_OK)
        return mp_py_raise_int(st);
    *out = moved;
    return 0;
}

/* run op on (x, specs...) with attrs at; n_x leading tensor arguments (x, or dy and x) */
static PyObject *run_spec(mp_op op, PyObject **objs, int n, int n_x, const mp_attrs *at) {
    mp_tensor *t[5] = {NULL, NULL, NULL, NULL, NULL};
    PyObject *r = NULL;
    for (int k = 0; k < n_x; k++)
        if (mp_py_to_tensor(objs[k], MP_NO_DTYPE, 0, &t[k]))
            goto done;
    for (int k = n_x; k < n; k++)
        if (spec_tensor(objs[k], t[n_x - 1], &t[k]))
            goto done;
    r = mp_py_run_wrap(op, n, t, at);
done:
    for (int k = 0; k < n; k++)
        if (t[k])
            mp_tensor_decref(t[k]);
    return r;
}

/* strided_slice_t(x, begin, end, strides, begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask) */
static PyObject *py_strided_slice_t(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *o[4];
    long long mk[5] = {0, 0, 0, 0, 0};
    if (!PyArg_ParseTuple(args, "OOOO|LLLLL:strided_slice_t", &o[0], &o[1], &o[2], &o[3], &mk[0], &mk[1], &mk[2],
                          &mk[3], &mk[4]))
        return NULL;
    mp_attrs at = {.n_ints = 6};
    for (int k = 0; k < 5; k++)
        at.ints[k] = mk[k];
    return run_spec(MP_OP_STRIDED_SLICE_T, o, 4, 1, &at);
}

/* slice_t(x, begin, size) */
static PyObject *py_slice_t(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *o[3];
    if (!PyArg_ParseTuple(args, "OOO:slice_t", &o[0], &o[1], &o[2]))
        return NULL;
    return run_spec(MP_OP_SLICE_T, o, 3, 1, NULL);
}

/* strided_slice_t_grad(dy, x, begin, end_or_size, strides=None, masks...): strides None is Slice's */
static PyObject *py_strided_slice_t_grad(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *o[5] = {NULL, NULL, NULL, NULL, Py_None};
    long long mk[5] = {0, 0, 0, 0, 0};
    if (!PyArg_ParseTuple(args, "OOOO|OLLLLL:strided_slice_t_grad", &o[0], &o[1], &o[2], &o[3], &o[4], &mk[0],
                          &mk[1], &mk[2], &mk[3], &mk[4]))
        return NULL;
    mp_attrs at = {.n_ints = 6};
    for (int k = 0; k < 5; k++)
        at.ints[k] = mk[k];
    int slice = o[4] == Py_None;
    at.ints[5] = slice;
    return run_spec(MP_OP_STRIDED_SLICE_T_GRAD, o, slice ? 4 : 5, 2, &at);
}

static PyMethodDef slicing_methods[] = {
    {"strided_slice_t", py_strided_slice_t, METH_VARARGS,
     "strided_slice_t(x, begin, end, strides, begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0, "
     "shrink_axis_mask=0): TensorFlow's StridedSlice with the spec read at every run."},
    {"slice_t", py_slice_t, METH_VARARGS, "slice_t(x, begin, size): TensorFlow's Slice, the spec read at every run."},
    {"strided_slice_t_grad", py_strided_slice_t_grad, METH_VARARGS,
     "strided_slice_t_grad(dy, x, begin, end_or_size, strides=None, masks...): the slices' gradient."},
    {NULL},
};

int mp_py_slicing_init(PyObject *module) { return PyModule_AddFunctions(module, slicing_methods); }
