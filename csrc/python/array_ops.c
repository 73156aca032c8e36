/* array_ops.c — the one binding of the array ops of ops_array.c / ops_sort.c:
 * _core.array_op(name, inputs, i0, i1, dtype, ints) runs the op whose Python name (ops.def's
 * pyname column) is `name`. The TensorFlow-facing checks and names live in
 * mixprec/_array_extra.py; this file only converts arguments. */
#include <string.h>

#include "mp_py.h"

static const struct {
    const char *name;
    mp_op op;
} array_ops[] = {
    {"gather_nd", MP_OP_GATHER_ND},
    {"tensor_scatter_update", MP_OP_TENSOR_SCATTER_UPDATE},
    {"tensor_scatter_add", MP_OP_TENSOR_SCATTER_ADD},
    {"tensor_scatter_sub", MP_OP_TENSOR_SCATTER_SUB},
    {"tensor_scatter_min", MP_OP_TENSOR_SCATTER_MIN},
    {"tensor_scatter_max", MP_OP_TENSOR_SCATTER_MAX},
    {"top_k_indices", MP_OP_TOP_K},
    {"unique", MP_OP_UNIQUE},
    {"where_indices", MP_OP_WHERE_INDICES},
    {"reverse", MP_OP_REVERSE},
    {"roll", MP_OP_ROLL},
};

PyObject *mp_py_array_op(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
    (void)m;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "array_op(name, inputs, i0, i1, dtype, ints) takes 6 arguments");
        return NULL;
    }
    const char *name = PyUnicode_Check(args[0]) ? PyUnicode_AsUTF8(args[0]) : NULL;
    if (!name) {
        PyErr_SetString(PyExc_TypeError, "array_op: name must be a string");
        return NULL;
    }
    int found = -1;
    for (size_t i = 0; i < sizeof array_ops / sizeof array_ops[0]; i++)
        if (!strcmp(array_ops[i].name, name))
            found = (int)i;
    if (found < 0) {
        PyErr_Format(PyExc_ValueError, "array_op: unknown op %s", name);
        return NULL;
    }
    mp_op op = array_ops[found].op;
    mp_attrs at;
    memset(&at, 0, sizeof at);
    int64_t i0, i1;
    if (mp_py_parse_int(args[2], &i0, "i0") || mp_py_parse_int(args[3], &i1, "i1"))
        return NULL;
    at.i0 = i0;
    at.i1 = i1;
    if (args[4] != Py_None) {
        int dt = mp_py_dtype_from(args[4]);
        if (dt < 0)
            return NULL;
        at.dtype = dt;
    }
    if (args[5] != Py_None) {
        PyObject *seq = PySequence_Fast(args[5], "array_op: ints must be a sequence");
        if (!seq)
            return NULL;
        Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
        if (k > MP_MAX_DIMS) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError, "array_op: too many ints");
            return NULL;
        }
        for (Py_ssize_t i = 0; i < k; i++) {
            long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
            if (v == -1 && PyErr_Occurred()) {
                Py_DECREF(seq);
                return NULL;
            }
            at.ints[i] = v;
        }
        at.n_ints = (int)k;
        Py_DECREF(seq);
    }
    PyObject *seq = PySequence_Fast(args[1], "array_op: inputs must be a sequence");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    mp_tensor *x[3] = {NULL, NULL, NULL};
    PyObject *r = NULL;
    int ok = n == mp_op_get_info(op)->n_inputs;
    if (!ok)
        PyErr_Format(PyExc_TypeError, "array_op: %s takes %d inputs", name, mp_op_get_info(op)->n_inputs);
    for (Py_ssize_t i = 0; ok && i < n; i++)
        ok = !mp_py_to_tensor(PySequence_Fast_GET_ITEM(seq, i), MP_NO_DTYPE, 0, &x[i]);
    if (ok)
        r = mp_py_run_wrap(op, (int)n, x, &at);
    for (int i = 0; i < 3; i++)
        if (x[i])
            mp_tensor_decref(x[i]);
    Py_DECREF(seq);
    return r;
}
