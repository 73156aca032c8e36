/* amp.c (glue) — mixprec._core's automatic-mixed-precision functions: the class table,
 * autocast switch and scopes, the recorder and the colouring pass (csrc/amp.c).
 * Parses and converts only; the pass and the casts live in the core. */
#include "mp_py.h"
#include "../amp.h"
#include "../amp_graph.h"
#include "../graph.h"

static PyObject *py_amp_set_autocast(PyObject *self, PyObject *args) {
    int on, dtype = MP_F16;
    if (!PyArg_ParseTuple(args, "p|i", &on, &dtype))
        return NULL;
    if (dtype < 0 || dtype >= MP_DTYPE_COUNT) {
        PyErr_Format(PyExc_ValueError, "unknown dtype code %d", dtype);
        return NULL;
    }
    mp_status st = mp_amp_autocast_set(on, (mp_dtype)dtype);
    if (st != MP_OK)
        return mp_py_raise(st);
    Py_RETURN_NONE;
}

static PyObject *py_amp_autocast(PyObject *self, PyObject *noargs) {
    return Py_BuildValue("(Oi)", mp_amp_autocast_on() ? Py_True : Py_False, (int)mp_amp_autocast_dtype());
}

static PyObject *py_amp_set_classes(PyObject *self, PyObject *arg) {
    if (arg == Py_None) {
        mp_amp_set_classes(NULL);
        Py_RETURN_NONE;
    }
    PyObject *seq = PySequence_Fast(arg, "amp_set_classes takes a sequence of class codes or None");
    if (!seq)
        return NULL;
    if (PySequence_Fast_GET_SIZE(seq) != MP_OP_COUNT) {
        PyErr_Format(PyExc_ValueError, "amp_set_classes needs %d entries, got %zd", (int)MP_OP_COUNT,
                     PySequence_Fast_GET_SIZE(seq));
        Py_DECREF(seq);
        return NULL;
    }
    mp_amp_class cl[MP_OP_COUNT];
    for (int i = 0; i < MP_OP_COUNT; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return NULL;
        }
        if (v < MP_AMP_ALLOW || v > MP_AMP_NONE) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_ValueError, "unknown AMP class code %ld", v);
            return NULL;
        }
        cl[i] = (mp_amp_class)v;
    }
    Py_DECREF(seq);
    mp_amp_set_classes(cl);
    Py_RETURN_NONE;
}

static PyObject *py_amp_classes(PyObject *self, PyObject *noargs) {
    PyObject *l = PyList_New(MP_OP_COUNT);
    for (int i = 0; l && i < MP_OP_COUNT; i++)
        PyList_SET_ITEM(l, i, PyLong_FromLong((long)mp_amp_class_of((mp_op)i)));
    return l;
}

static PyObject *py_amp_scope_enter(PyObject *self, PyObject *noargs) {
    mp_amp_scope_enter();
    Py_RETURN_NONE;
}

static PyObject *py_amp_scope_exit(PyObject *self, PyObject *noargs) {
    mp_amp_scope_exit();
    Py_RETURN_NONE;
}

static PyObject *py_amp_restore(PyObject *self, PyObject *arg) {
    if (!MpTensor_Check(arg)) {
        Py_INCREF(arg);
        return arg;
    }
    mp_tensor *out;
    mp_status st = mp_amp_restore(MpTensor_T(arg), &out);
    if (st != MP_OK)
        return mp_py_raise(st);
    return mp_py_wrap(out);
}

static PyObject *py_amp_is_lowered(PyObject *self, PyObject *arg) {
    return PyBool_FromLong(MpTensor_Check(arg) && MpTensor_T(arg)->amp_lowered);
}

static PyObject *py_amp_record_begin(PyObject *self, PyObject *noargs) {
    mp_status st = mp_amp_record_begin();
    if (st != MP_OK)
        return mp_py_raise(st);
    Py_RETURN_NONE;
}

static PyObject *int_list(const int *v, int64_t n) {
    PyObject *l = PyList_New((Py_ssize_t)n);
    for (int64_t i = 0; l && i < n; i++)
        PyList_SET_ITEM(l, (Py_ssize_t)i, PyLong_FromLong(v[i]));
    return l;
}

static PyObject *id_list(const int64_t *v, int64_t n) {
    PyObject *l = PyList_New((Py_ssize_t)n);
    for (int64_t i = 0; l && i < n; i++)
        PyList_SET_ITEM(l, (Py_ssize_t)i, PyLong_FromLongLong(v[i]));
    return l;
}

/* -> None, or (op, flags, out_id, in_off, in_id, alias) lists */
static PyObject *py_amp_record_end(PyObject *self, PyObject *noargs) {
    mp_amp_trace *t;
    mp_status st = mp_amp_record_end(&t);
    if (st != MP_OK)
        return mp_py_raise(st);
    if (!t)
        Py_RETURN_NONE;
    PyObject *r = Py_BuildValue("(NNNNNN)", int_list(t->op, t->n_nodes), int_list(t->is_f32, t->n_nodes),
                                id_list(t->out_id, t->n_nodes), int_list(t->in_off, t->n_nodes + 1),
                                id_list(t->in_id, t->in_off[t->n_nodes]), id_list(t->alias, 2 * t->n_alias));
    mp_amp_trace_free(t);
    return r;
}

static int *ints_from(PyObject *o, Py_ssize_t *n, const char *what) {
    PyObject *seq = PySequence_Fast(o, what);
    if (!seq)
        return NULL;
    *n = PySequence_Fast_GET_SIZE(seq);
    int *v = malloc(sizeof(int) * (size_t)(*n ? *n : 1));
    if (!v) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < *n; i++) {
        long x = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if ((x == -1 && PyErr_Occurred()) || x < INT_MIN || x > INT_MAX) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_OverflowError, "%s: %ld does not fit an int", what, x);
            free(v);
            Py_DECREF(seq);
            return NULL;
        }
        v[i] = (int)x;
    }
    Py_DECREF(seq);
    return v;
}

/* amp_color(op, kind, flags, in_off, in_node, bf16) -> (lowered list, summary dict) */
static PyObject *py_amp_color(PyObject *self, PyObject *args) {
    PyObject *o_op, *o_kind, *o_f, *o_off, *o_in;
    int bf16 = 0;
    if (!PyArg_ParseTuple(args, "OOOOO|p", &o_op, &o_kind, &o_f, &o_off, &o_in, &bf16))
        return NULL;
    Py_ssize_t n, nk, nf, noff, nin;
    int *op = NULL, *kind = NULL, *fl = NULL, *off = NULL, *in = NULL;
    uint8_t *low = NULL;
    PyObject *res = NULL;
    if (!(op = ints_from(o_op, &n, "op")) || !(kind = ints_from(o_kind, &nk, "kind")) ||
        !(fl = ints_from(o_f, &nf, "flags")) || !(off = ints_from(o_off, &noff, "in_off")) ||
        !(in = ints_from(o_in, &nin, "in_node")))
        goto done;
    if (nk != n || nf != n || noff != n + 1 || (n >= 0 && off[n] != nin) || n > INT_MAX - 1) {
        PyErr_SetString(PyExc_ValueError, "amp_color: op/kind/flags need one entry per node, in_off one more, "
                                          "and in_off[-1] must be len(in_node)");
        goto done;
    }
    low = calloc((size_t)n + 1, 1);
    if (!low) {
        PyErr_NoMemory();
        goto done;
    }
    mp_amp_summary s;
    mp_status st = mp_amp_color((int)n, op, kind, fl, off, in, bf16, low, &s);
    if (st != MP_OK) {
        mp_py_raise(st);
        goto done;
    }
    PyObject *l = PyList_New(n);
    for (Py_ssize_t i = 0; l && i < n; i++)
        PyList_SET_ITEM(l, i, PyBool_FromLong(low[i]));
    res = Py_BuildValue("(N{sLsLsLsLsLsLsLsL})", l, "total_nodes", (long long)s.total_nodes, "recognized",
                        (long long)s.recognized, "converted", (long long)s.converted, "casts_to_lowered",
                        (long long)s.casts_to_lowered, "casts_total", (long long)s.casts_total, "allowlisted",
                        (long long)s.allowlisted, "denylisted", (long long)s.denylisted, "blocked",
                        (long long)s.blocked);
done:
    free(op), free(kind), free(fl), free(off), free(in), free(low);
    return res;
}

static PyObject *summary_dict(const mp_amp_summary *s) {
    return Py_BuildValue("{sLsLsLsLsLsLsLsL}", "total_nodes", (long long)s->total_nodes, "recognized",
                         (long long)s->recognized, "converted", (long long)s->converted, "casts_to_lowered",
                         (long long)s->casts_to_lowered, "casts_total", (long long)s->casts_total, "allowlisted",
                         (long long)s->allowlisted, "denylisted", (long long)s->denylisted, "blocked",
                         (long long)s->blocked);
}

/* amp_graph_rewrite(graph, bf16) -> (converted op codes in graph order, summary dict) */
static PyObject *py_amp_graph_rewrite(PyObject *self, PyObject *args) {
    PyObject *o;
    int bf16 = 0;
    if (!PyArg_ParseTuple(args, "O|p", &o, &bf16))
        return NULL;
    mp_graph *g = mp_py_graph_get(o);
    if (!g)
        return NULL;
    int *ops = malloc(sizeof(int) * (size_t)(g->n_nodes + 1));
    if (!ops)
        return PyErr_NoMemory();
    mp_amp_summary s;
    mp_status st = mp_amp_graph_rewrite(g, bf16, &s, ops);
    if (st != MP_OK) {
        free(ops);
        return mp_py_raise(st);
    }
    PyObject *l = int_list(ops, s.converted);
    free(ops);
    return Py_BuildValue("(NN)", l, summary_dict(&s));
}

static PyMethodDef amp_methods[] = {
    {"amp_graph_rewrite", py_amp_graph_rewrite, METH_VARARGS, "TensorFlow's AMP pass applied to a traced graph"},
    {"amp_set_autocast", py_amp_set_autocast, METH_VARARGS, "amp_set_autocast(on, dtype_code=float16)"},
    {"amp_autocast", py_amp_autocast, METH_NOARGS, "(on, dtype_code)"},
    {"amp_set_classes", py_amp_set_classes, METH_O, "per-op AMP class codes (ops.def order), or None"},
    {"amp_classes", py_amp_classes, METH_NOARGS, "the per-op AMP class codes in use"},
    {"amp_scope_enter", py_amp_scope_enter, METH_NOARGS, "enter a function scope (lowered values flow)"},
    {"amp_scope_exit", py_amp_scope_exit, METH_NOARGS, "leave a function scope"},
    {"amp_restore", py_amp_restore, METH_O, "a lowered value cast back to float32 (else itself)"},
    {"amp_is_lowered", py_amp_is_lowered, METH_O, "whether autocast computed this float32 value in 16 bits"},
    {"amp_record_begin", py_amp_record_begin, METH_NOARGS, "start recording this thread's ops"},
    {"amp_record_end", py_amp_record_end, METH_NOARGS, "stop recording; the recorded op sequence"},
    {"amp_color", py_amp_color, METH_VARARGS, "TensorFlow's AMP colouring over a graph given as arrays"},
    {NULL, NULL, 0, NULL},
};

int mp_py_amp_init(PyObject *module) {
    PyModule_AddIntConstant(module, "AMP_ALLOW", MP_AMP_ALLOW);
    PyModule_AddIntConstant(module, "AMP_INFER", MP_AMP_INFER);
    PyModule_AddIntConstant(module, "AMP_DENY", MP_AMP_DENY);
    PyModule_AddIntConstant(module, "AMP_CLEAR", MP_AMP_CLEAR);
    PyModule_AddIntConstant(module, "AMP_NONE", MP_AMP_NONE);
    return PyModule_AddFunctions(module, amp_methods);
}
