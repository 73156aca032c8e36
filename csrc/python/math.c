/* math.c — the binding of tf.math's scans and segment reductions (ops.def's CUMPROD,
 * CUMULATIVE_LOGSUMEXP, SEGMENT_REDUCE). TensorFlow's signatures, defaults and argument checks
 * live in src/mixprec/_math_extra.py; this file only converts and runs. */
#include "mp_py.h"

/* math_op(code, inputs, i0=0, i1=0, i2=0): op `code` on the tuple of inputs (tensors or what
 * converts to them) with integer attrs i0..i2. */
static PyObject *py_math_op(PyObject *m, PyObject *args) {
    (void)m;
    int code;
    PyObject *inputs;
    long long i0 = 0, i1 = 0, i2 = 0;
    if (!PyArg_ParseTuple(args, "iO|LLL", &code, &inputs, &i0, &i1, &i2))
        return NULL;
    if (code != (int)MP_OP_CUMPROD && code != (int)MP_OP_CUMULATIVE_LOGSUMEXP && code != (int)MP_OP_SEGMENT_REDUCE)
        return PyErr_Format(PyExc_ValueError, "math_op: op code %d is not a scan or segment op", code);
    const mp_op_info *info = mp_op_get_info((mp_op)code);
    if (!PyTuple_Check(inputs) || PyTuple_GET_SIZE(inputs) != info->n_inputs)
        return PyErr_Format(PyExc_TypeError, "math_op: %s takes a tuple of %d inputs", info->name, info->n_inputs);
    mp_tensor *t[2] = {NULL, NULL};
    int n = info->n_inputs;
    for (int i = 0; i < n; i++)
        if (mp_py_to_tensor(PyTuple_GET_ITEM(inputs, i), MP_NO_DTYPE, 0, &t[i])) {
            for (int j = 0; j < i; j++)
                mp_tensor_decref(t[j]);
            return NULL;
        }
    mp_attrs at = {.i0 = i0, .i1 = i1, .i2 = i2};
    PyObject *r = mp_py_run_wrap((mp_op)code, n, t, &at);
    for (int i = 0; i < n; i++)
        mp_tensor_decref(t[i]);
    return r;
}

static PyMethodDef math_methods[] = {
    {"math_op", py_math_op, METH_VARARGS,
     "math_op(code, inputs, i0=0, i1=0, i2=0): Cumprod, CumulativeLogsumexp (axis, exclusive, reverse) or "
     "the segment reduction (kind, num_segments, sorted)."},
    {NULL},
};

int mp_py_math_init(PyObject *module) { return PyModule_AddFunctions(module, math_methods); }
