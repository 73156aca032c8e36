/* custom_grad.c — the binding behind tf.custom_gradient: records tape nodes whose backward
 * calls a Python callable (the GIL taken there; the tape's walk runs without it).
 * Owns the callable's lifetime on the tape and the hand-back of its exceptions to
 * GradientTape.gradient; it does no gradient arithmetic of its own. */
#include "mp_py.h"

#include "../graph.h"

/* A Python exception raised by a custom backward, kept until GradientTape.gradient
 * re-raises it (the C walk only sees an mp_status). */
static _Thread_local PyObject *pending_type, *pending_value, *pending_tb;

int mp_py_custom_grad_reraise(void) {
    if (!pending_type)
        return 0;
    PyErr_Restore(pending_type, pending_value, pending_tb);
    pending_type = pending_value = pending_tb = NULL;
    return 1;
}

static void ctx_ref(void *ctx, int delta) {
    PyGILState_STATE g = PyGILState_Ensure();
    if (delta > 0)
        Py_INCREF((PyObject *)ctx);
    else
        Py_DECREF((PyObject *)ctx);
    PyGILState_Release(g);
}

static mp_status fail_with_python_error(void) {
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    PyObject *s = v ? PyObject_Str(v) : NULL;
    const char *msg = s ? PyUnicode_AsUTF8(s) : NULL;
    mp_status st = mp_error_set(MP_ERR_VALUE, "the custom gradient function raised %s: %s",
                                t ? ((PyTypeObject *)t)->tp_name : "an error", msg ? msg : "?");
    PyErr_Clear();
    Py_XDECREF(s);
    Py_XDECREF(pending_type);
    Py_XDECREF(pending_value);
    Py_XDECREF(pending_tb);
    pending_type = t;
    pending_value = v;
    pending_tb = tb;
    return st;
}

/* ctx = callable(dys: list of Tensor or None) -> sequence with one entry per input. */
static mp_status call_backward(void *ctx, int n_out, mp_tensor *const *dys, int n_in, mp_tensor *const *inputs,
                               const int *need, mp_tensor **dx) {
    PyGILState_STATE g = PyGILState_Ensure();
    mp_status st = MP_OK;
    PyObject *res = NULL, *lst = PyList_New(n_out);
    for (int j = 0; lst && j < n_out; j++) {
        PyObject *d = Py_None;
        if (dys[j]) {
            mp_tensor_incref(dys[j]);
            d = mp_py_wrap(dys[j]);
        } else {
            Py_INCREF(d);
        }
        if (!d) {
            Py_CLEAR(lst);
            break;
        }
        PyList_SET_ITEM(lst, j, d);
    }
    if (lst)
        res = PyObject_CallOneArg((PyObject *)ctx, lst);
    Py_XDECREF(lst);
    PyObject *seq = res ? PySequence_Fast(res, "a custom gradient must return a sequence") : NULL;
    Py_XDECREF(res);
    if (!seq) {
        st = fail_with_python_error();
        goto out;
    }
    if (PySequence_Fast_GET_SIZE(seq) != n_in) {
        Py_DECREF(seq);
        st = mp_error_set(MP_ERR_VALUE, "custom gradient: expected %d gradients, got %zd", n_in,
                          PySequence_Fast_GET_SIZE(seq));
        goto out;
    }
    for (int k = 0; k < n_in && st == MP_OK; k++) {
        PyObject *o = PySequence_Fast_GET_ITEM(seq, k);
        if (!need[k] || o == Py_None)
            continue;
        mp_tensor *t;
        if (mp_py_to_tensor(o, MP_NO_DTYPE, 0, &t)) {
            st = fail_with_python_error();
            break;
        }
        if (t->dtype != inputs[k]->dtype) {
            mp_tensor *c;
            st = mp_cast(t, inputs[k]->dtype, &c);
            mp_tensor_decref(t);
            if (st != MP_OK)
                break;
            t = c;
        }
        int same = t->ndim == inputs[k]->ndim;
        for (int d = 0; same && d < t->ndim; d++)
            same = t->shape[d] == inputs[k]->shape[d];
        if (!same) {
            mp_tensor_decref(t);
            st = mp_error_set(MP_ERR_SHAPE,
                              "custom gradient %d has a shape other than its input's (%d dims vs %d)", k, t->ndim,
                              inputs[k]->ndim);
            break;
        }
        dx[k] = t;
    }
    Py_DECREF(seq);
    if (st != MP_OK)
        for (int k = 0; k < n_in; k++) {
            mp_tensor_decref(dx[k]);
            dx[k] = NULL;
        }
out:
    PyGILState_Release(g);
    return st;
}

/* tape_record_custom(inputs, outputs, backward) -> new output tensors: each floating
 * output becomes a fresh tensor; on every recording tape that watches an input (a tensor,
 * or a variable by its id) their gradients come from one backward([dy or None, ...])
 * (one entry per floating output, in order). */
static PyObject *py_record_custom(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *inputs, *outputs, *fn;
    if (!PyArg_ParseTuple(args, "O!O!O:tape_record_custom", &PyList_Type, &inputs, &PyList_Type, &outputs, &fn))
        return NULL;
    Py_ssize_t ni = PyList_GET_SIZE(inputs), no = PyList_GET_SIZE(outputs);
    mp_tensor **in = PyMem_Calloc((size_t)ni + 1, sizeof *in);
    int64_t *ids = PyMem_Calloc((size_t)ni + 1, sizeof *ids);
    mp_tensor **outs = NULL;
    PyObject *result = NULL;
    if (!in || !ids) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < ni; k++) {
        PyObject *o = PyList_GET_ITEM(inputs, k);
        if (MpVariable_Check(o) && MpVariable_V(o)) {
            in[k] = mp_variable_peek(MpVariable_V(o));
            mp_tensor_incref(in[k]);
            ids[k] = MpVariable_V(o)->id;
        } else if (MpTensor_Check(o)) {
            in[k] = MpTensor_T(o);
            mp_tensor_incref(in[k]);
            ids[k] = in[k]->id;
        } else {
            PyErr_Format(PyExc_TypeError, "custom_gradient inputs must be tensors or variables, got %.100R", o);
            goto done;
        }
    }
    result = PyList_New(no);
    outs = PyMem_Calloc((size_t)no + 1, sizeof *outs);
    if (!result || !outs) {
        Py_CLEAR(result);
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    int n_float = 0;
    for (Py_ssize_t j = 0; j < no; j++) {
        PyObject *o = PyList_GET_ITEM(outputs, j);
        if (!MpTensor_Check(o) || !mp_dtype_is_floating(MpTensor_T(o)->dtype)) {
            PyList_SET_ITEM(result, j, Py_NewRef(o));
            continue;
        }
        mp_tensor *x = MpTensor_T(o), *y = NULL;
        mp_status st = mp_op_exec(MP_OP_IDENTITY, 1, &x, NULL, &y);
        if (st == MP_OK && mp_graph_recording()) /* traced: the forward as recorded ops */
            st = mp_graph_record_op(MP_OP_IDENTITY, 1, &x, NULL, y);
        if (st != MP_OK) {
            mp_tensor_decref(y);
            Py_CLEAR(result);
            mp_py_raise(st);
            goto done;
        }
        outs[n_float++] = y;
        mp_tensor_incref(y);
        PyObject *w = mp_py_wrap(y);
        if (!w) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, j, w);
    }
    if (n_float) {
        if (mp_graph_recording())
            mp_graph_note_python_grad();
        mp_status st = mp_tape_record_custom((int)ni, in, ids, n_float, outs, call_backward, ctx_ref, fn);
        if (st != MP_OK) {
            Py_CLEAR(result);
            mp_py_raise(st);
        }
    }
done:
    for (Py_ssize_t k = 0; in && k < ni; k++)
        mp_tensor_decref(in[k]);
    for (Py_ssize_t j = 0; outs && j < no; j++)
        mp_tensor_decref(outs[j]);
    PyMem_Free(outs);
    PyMem_Free(in);
    PyMem_Free(ids);
    return result;
}

static PyObject *py_suspend_outer(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    return PyLong_FromLong(mp_tape_suspend_outer());
}

static PyObject *py_resume_outer(PyObject *m, PyObject *arg) {
    (void)m;
    long prev = PyLong_AsLong(arg);
    if (prev == -1 && PyErr_Occurred())
        return NULL;
    mp_tape_resume_outer((int)prev);
    Py_RETURN_NONE;
}

static PyMethodDef custom_grad_functions[] = {
    {"tape_suspend_outer", py_suspend_outer, METH_NOARGS,
     "The tapes entered so far stop recording; returns the token for tape_resume_outer."},
    {"tape_resume_outer", py_resume_outer, METH_O, NULL},
    {"tape_record_custom", py_record_custom, METH_VARARGS,
     "tape_record_custom(inputs, outputs, backward) -> outputs recorded with backward(dys)"},
    {NULL},
};

int mp_py_custom_grad_init(PyObject *module) { return PyModule_AddFunctions(module, custom_grad_functions); }
