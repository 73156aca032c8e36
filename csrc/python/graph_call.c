/* graph_call.c (bindings) — host calls with results recorded into a traced function's graph
 * (tf.py_function / tf.numpy_function): the callback that takes the GIL and calls the Python
 * callable at every replay, and the hand-back of its exception to the replay's caller (as
 * itself, TensorFlow's class kept). Conversion only: the node and its replay are the
 * core's (csrc/graph.c MP_GNODE_CALL). */
#include "mp_py.h"

#include "../graph.h"

/* The Python exception of a host call, kept until Graph.run re-raises it (the replay only
 * carries an mp_status). */
static _Thread_local PyObject *pending_type, *pending_value, *pending_tb;

int mp_py_graph_call_reraise(void) {
    if (!pending_type)
        return 0;
    PyErr_Restore(pending_type, pending_value, pending_tb);
    pending_type = pending_value = pending_tb = NULL;
    return 1;
}

static mp_status keep_python_error(void) {
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    PyObject *s = v ? PyObject_Str(v) : NULL;
    const char *msg = s ? PyUnicode_AsUTF8(s) : NULL;
    mp_status st = mp_error_set(MP_ERR_VALUE, "a host call of a traced function raised %s: %s",
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

/* ctx = callable(*tensors) -> a sequence of n_out Tensors */
static mp_status call_host(void *ctx, int n_in, mp_tensor *const *in, int n_out, mp_tensor **outs) {
    PyGILState_STATE gs = PyGILState_Ensure();
    mp_graph *prev = mp_graph_swap(NULL);
    mp_status st = MP_OK;
    PyObject *args = PyTuple_New(n_in), *r = NULL, *seq = NULL;
    for (int k = 0; args && k < n_in; k++) {
        mp_tensor_incref(in[k]);
        PyObject *t = mp_py_wrap(in[k]);
        if (!t) {
            Py_CLEAR(args);
            break;
        }
        PyTuple_SET_ITEM(args, k, t);
    }
    if (args)
        r = PyObject_Call((PyObject *)ctx, args, NULL);
    if (r)
        seq = PySequence_Fast(r, "a host call returns a sequence of Tensors");
    if (!seq) {
        st = keep_python_error();
        goto out;
    }
    if (PySequence_Fast_GET_SIZE(seq) != n_out) {
        st = mp_error_set(MP_ERR_VALUE, "a host call of a traced function returned %zd results, traced with %d",
                          PySequence_Fast_GET_SIZE(seq), n_out);
        goto out;
    }
    for (int k = 0; k < n_out; k++) {
        PyObject *o = PySequence_Fast_GET_ITEM(seq, k);
        if (!MpTensor_Check(o)) {
            st = mp_error_set(MP_ERR_VALUE, "a host call of a traced function returned a %s, not a Tensor",
                              Py_TYPE(o)->tp_name);
            break;
        }
        outs[k] = MpTensor_T(o);
        mp_tensor_incref(outs[k]);
    }
    if (st != MP_OK)
        for (int k = 0; k < n_out; k++) {
            mp_tensor_decref(outs[k]);
            outs[k] = NULL;
        }
out:
    Py_XDECREF(seq);
    Py_XDECREF(r);
    Py_XDECREF(args);
    mp_graph_swap(prev);
    PyGILState_Release(gs);
    return st;
}

static void call_free(void *ctx) {
    PyGILState_STATE gs = PyGILState_Ensure();
    Py_XDECREF((PyObject *)ctx);
    PyGILState_Release(gs);
}

static int tensor_list(PyObject *lst, const char *what, mp_tensor ***out) {
    Py_ssize_t n = PyList_GET_SIZE(lst);
    mp_tensor **ts = PyMem_Calloc((size_t)n + 1, sizeof *ts);
    if (!ts) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyList_GET_ITEM(lst, i);
        if (!MpTensor_Check(x)) {
            PyMem_Free(ts);
            PyErr_Format(PyExc_TypeError, "graph_record_call: %s %zd is not a Tensor", what, i);
            return -1;
        }
        ts[i] = MpTensor_T(x);
    }
    *out = ts;
    return 0;
}

/* graph_record_call(callable, inputs, results): records callable(*inputs) -> results as a
 * host call of the recording graph (run at every replay; `results` are the tensors the
 * tracing call got, their dtypes the ones every replay must return). False when nothing
 * records. */
static PyObject *py_record_call(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *fn, *ins, *res;
    if (!PyArg_ParseTuple(args, "OO!O!:graph_record_call", &fn, &PyList_Type, &ins, &PyList_Type, &res))
        return NULL;
    if (!mp_graph_recording())
        Py_RETURN_FALSE;
    mp_tensor **in = NULL, **outs = NULL;
    if (tensor_list(ins, "input", &in) < 0)
        return NULL;
    if (tensor_list(res, "result", &outs) < 0) {
        PyMem_Free(in);
        return NULL;
    }
    int n_out = (int)PyList_GET_SIZE(res);
    mp_gcall *c = calloc(1, sizeof *c);
    mp_dtype *dts = calloc((size_t)(n_out ? n_out : 1), sizeof *dts);
    if (!c || !dts) {
        free(c);
        free(dts);
        PyMem_Free(in);
        PyMem_Free(outs);
        return PyErr_NoMemory();
    }
    for (int k = 0; k < n_out; k++)
        dts[k] = outs[k]->dtype;
    c->fn = call_host;
    c->ctx = Py_NewRef(fn);
    c->free = call_free;
    c->n_out = n_out;
    c->dtypes = dts;
    mp_status st = mp_graph_record_call(c, (int)PyList_GET_SIZE(ins), in, outs);
    PyMem_Free(in);
    PyMem_Free(outs);
    if (st != MP_OK)
        return mp_py_raise(st);
    Py_RETURN_TRUE;
}

static PyMethodDef graph_call_functions[] = {
    {"graph_record_call", py_record_call, METH_VARARGS,
     "graph_record_call(callable, inputs, results): a host call with results in the recording graph"},
    {NULL},
};

int mp_py_graph_call_init(PyObject *module) { return PyModule_AddFunctions(module, graph_call_functions); }
