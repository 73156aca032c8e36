/* graph.c (bindings) — _core.Graph (a traced function's graph: begin/end recording,
 * inputs, outputs, replay, introspection for passes and tests), the host callbacks
 * recorded into graphs (tf.print) and the host-read hook that breaks a graph.
 * Parsing and conversion only: recording and replay are the core's (csrc/graph.c). */
#include "mp_py.h"

#include "../graph.h"

typedef struct {
    PyObject_HEAD
    mp_graph *g;
} PyMpGraph;

static PyTypeObject *MpGraph_Type;
static PyObject *break_hook; /* callable(reason) run once when a recording graph breaks */

#define G(o) (((PyMpGraph *)(o))->g)

mp_graph *mp_py_graph_get(PyObject *o) {
    if (!MpGraph_Type || !PyObject_TypeCheck(o, MpGraph_Type)) {
        PyErr_Format(PyExc_TypeError, "expected a mixprec._core.Graph, got %.100R", o);
        return NULL;
    }
    return G(o);
}

mp_graph *mp_py_graph_take(PyObject *o) {
    mp_graph *g = mp_py_graph_get(o), *empty = NULL;
    if (!g)
        return NULL;
    if (mp_graph_new(&empty) != MP_OK)
        return NULL; /* the object keeps it */
    G(o) = empty;
    return g;
}

/* A host callback's tf.errors exception (a traced assertion's InvalidArgumentError) and
 * the core message recorded for it: the failed replay re-raises it as it was (its class
 * and text, TensorFlow's), not as a ValueError. Per thread (the GIL is held). */
static _Thread_local PyObject *pending_exc;
static _Thread_local char *pending_msg;

static void pending_clear(void) {
    Py_CLEAR(pending_exc);
    PyMem_Free(pending_msg);
    pending_msg = NULL;
}

int mp_py_restore_host_error(const char *msg) {
    int hit = pending_exc && pending_msg && msg && strstr(msg, pending_msg);
    if (hit)
        PyErr_SetObject((PyObject *)Py_TYPE(pending_exc), pending_exc);
    pending_clear();
    return hit;
}

/* The current Python exception as a core error (host callbacks run inside the core). */
mp_status mp_py_status_from_pyerr(const char *what) {
    PyObject *type, *exc, *tb;
    PyErr_Fetch(&type, &exc, &tb);
    PyErr_NormalizeException(&type, &exc, &tb);
    PyObject *s = exc ? PyObject_Str(exc) : NULL;
    const char *msg = s ? PyUnicode_AsUTF8(s) : NULL;
    mp_status st = mp_error_set(MP_ERR_VALUE, "%s failed: %s: %s", what,
                                type ? ((PyTypeObject *)type)->tp_name : "error", msg ? msg : "?");
    pending_clear();
    if (exc && MpExc_OpError && PyObject_IsInstance(exc, MpExc_OpError) == 1) {
        const char *core = mp_error_message();
        size_t n = core ? strlen(core) : 0;
        pending_msg = PyMem_Malloc(n + 1);
        if (pending_msg) {
            memcpy(pending_msg, core ? core : "", n + 1);
            pending_exc = Py_NewRef(exc);
        }
    }
    PyErr_Clear();
    Py_XDECREF(s);
    Py_XDECREF(type);
    Py_XDECREF(exc);
    Py_XDECREF(tb);
    return st;
}

static PyObject *graph_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
    if (!PyArg_ParseTuple(args, ":Graph") || (kw && PyDict_Size(kw)))
        return PyErr_Format(PyExc_TypeError, "Graph() takes no arguments");
    PyMpGraph *self = (PyMpGraph *)tp->tp_alloc(tp, 0);
    if (!self)
        return NULL;
    mp_status st = mp_graph_new(&self->g);
    if (st != MP_OK) {
        Py_DECREF(self);
        return mp_py_raise(st);
    }
    return (PyObject *)self;
}

static void graph_dealloc(PyObject *o) {
    PyTypeObject *tp = Py_TYPE(o);
    mp_graph_free(G(o));
    tp->tp_free(o);
    Py_DECREF(tp);
}

static PyObject *g_begin(PyObject *o, PyObject *arg) {
    int dry = PyObject_IsTrue(arg);
    if (dry < 0)
        return NULL;
    mp_status st = mp_graph_begin(G(o), dry);
    return st == MP_OK ? Py_NewRef(Py_None) : mp_py_raise(st);
}

static PyObject *g_begin_sub(PyObject *o, PyObject *unused) {
    (void)unused;
    mp_status st = mp_graph_begin_sub(G(o));
    return st == MP_OK ? Py_NewRef(Py_None) : mp_py_raise(st);
}

static PyObject *g_end(PyObject *o, PyObject *unused) {
    (void)unused;
    mp_status st = mp_graph_end(G(o));
    return st == MP_OK ? Py_NewRef(Py_None) : mp_py_raise(st);
}

static PyObject *g_abort(PyObject *o, PyObject *unused) {
    (void)unused;
    mp_graph_abort(G(o));
    Py_RETURN_NONE;
}

static PyObject *g_add_input(PyObject *o, PyObject *x) {
    if (!MpTensor_Check(x))
        return PyErr_Format(PyExc_TypeError, "Graph.add_input: a Tensor, got %.100R", x);
    mp_status st = mp_graph_add_input(G(o), MpTensor_T(x));
    return st == MP_OK ? Py_NewRef(Py_None) : mp_py_raise(st);
}

static PyObject *g_add_output(PyObject *o, PyObject *x) {
    if (!MpTensor_Check(x))
        return PyErr_Format(PyExc_TypeError, "Graph.add_output: a Tensor, got %.100R", x);
    mp_status st = mp_graph_add_output(G(o), MpTensor_T(x));
    return st == MP_OK ? Py_NewRef(Py_None) : mp_py_raise(st);
}

/* run(inputs: list of Tensors, var_from=None, var_to=None) -> list of Tensors */
static PyObject *g_run(PyObject *o, PyObject *args) {
    PyObject *arg, *vfrom = Py_None, *vto = Py_None;
    if (!PyArg_ParseTuple(args, "O|OO:run", &arg, &vfrom, &vto))
        return NULL;
    if (!PyList_Check(arg))
        return PyErr_Format(PyExc_TypeError, "Graph.run: a list of Tensors");
    mp_graph *g = G(o);
    Py_ssize_t nsub = 0;
    mp_variable **from = NULL, **to = NULL;
    if (vfrom != Py_None) {
        if (!PyList_Check(vfrom) || !PyList_Check(vto) || PyList_GET_SIZE(vfrom) != PyList_GET_SIZE(vto))
            return PyErr_Format(PyExc_TypeError, "Graph.run: var_from and var_to are lists of one length");
        nsub = PyList_GET_SIZE(vfrom);
        from = PyMem_Calloc((size_t)nsub + 1, sizeof *from);
        to = PyMem_Calloc((size_t)nsub + 1, sizeof *to);
        if (!from || !to) {
            PyMem_Free(from);
            PyMem_Free(to);
            return PyErr_NoMemory();
        }
        for (Py_ssize_t j = 0; j < nsub; j++) {
            PyObject *a = PyList_GET_ITEM(vfrom, j), *b = PyList_GET_ITEM(vto, j);
            if (!MpVariable_Check(a) || !MpVariable_Check(b) || !MpVariable_V(a) || !MpVariable_V(b)) {
                PyMem_Free(from);
                PyMem_Free(to);
                return PyErr_Format(PyExc_TypeError, "Graph.run: var_from/var_to hold Variables");
            }
            from[j] = MpVariable_V(a);
            to[j] = MpVariable_V(b);
        }
    }
    Py_ssize_t n = PyList_GET_SIZE(arg);
    mp_tensor **in = PyMem_Calloc((size_t)n + 1, sizeof *in);
    mp_tensor **out = PyMem_Calloc((size_t)g->n_outputs + 1, sizeof *out);
    PyObject *res = NULL;
    if (!in || !out) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyList_GET_ITEM(arg, i);
        if (!MpTensor_Check(x)) {
            PyErr_Format(PyExc_TypeError, "Graph.run: input %zd is not a Tensor", i);
            goto done;
        }
        in[i] = MpTensor_T(x);
    }
    /* NOTE: the GIL stays held: variables change only under it (see train.c), and host
     * callbacks (tf.print, hyperparameter refreshes) call Python */
    mp_status st = mp_graph_run_with(g, (int)n, in, (int)nsub, from, to, out);
    if (st != MP_OK) {
        mp_py_raise(st); /* (a host call's Python exception re-raised as itself) */
        goto done;
    }
    res = PyList_New(g->n_outputs);
    if (!res)
        goto done;
    for (int i = 0; i < g->n_outputs; i++) {
        PyObject *t = mp_py_wrap(out[i]);
        out[i] = NULL;
        if (!t) {
            Py_CLEAR(res);
            goto done;
        }
        PyList_SET_ITEM(res, i, t);
    }
done:
    for (int i = 0; out && i < g->n_outputs; i++)
        mp_tensor_decref(out[i]);
    PyMem_Free(in);
    PyMem_Free(out);
    PyMem_Free(from);
    PyMem_Free(to);
    return res;
}

static int parse_edge(mp_graph *g, PyObject *o, mp_gedge *e) {
    int node, out;
    if (!PyArg_ParseTuple(o, "ii:edge", &node, &out))
        return -1;
    if (node < -1 || node >= g->n_nodes || out != 0) {
        PyErr_Format(PyExc_IndexError, "graph edge (%d, %d) out of range (%d nodes)", node, out, g->n_nodes);
        return -1;
    }
    e->node = node;
    e->output = out;
    return 0;
}

/* insert_cast(at, (node, output), dtype) -> (node, output) */
static PyObject *g_insert_cast(PyObject *o, PyObject *args) {
    int at;
    PyObject *src, *dto;
    if (!PyArg_ParseTuple(args, "iOO:insert_cast", &at, &src, &dto))
        return NULL;
    mp_gedge e, out;
    int dt = mp_py_dtype_from(dto);
    if (dt < 0 || parse_edge(G(o), src, &e))
        return NULL;
    mp_status st = mp_graph_insert_cast(G(o), at, e, (mp_dtype)dt, &out);
    return st == MP_OK ? Py_BuildValue("(ii)", out.node, out.output) : mp_py_raise(st);
}

/* set_input(node, k, (node, output)): rewire input k of a node; then call infer() */
static PyObject *g_set_input(PyObject *o, PyObject *args) {
    int node, k;
    PyObject *src;
    if (!PyArg_ParseTuple(args, "iiO:set_input", &node, &k, &src))
        return NULL;
    mp_graph *g = G(o);
    mp_gedge e;
    if (parse_edge(g, src, &e))
        return NULL;
    if (node < 0 || node >= g->n_nodes || k < 0 || k >= g->nodes[node].n_in || e.node >= node)
        return PyErr_Format(PyExc_IndexError, "set_input: node %d input %d cannot read node %d", node, k, e.node);
    g->nodes[node].in[k] = e;
    Py_RETURN_NONE;
}

static PyObject *g_infer(PyObject *o, PyObject *unused) {
    (void)unused;
    mp_status st = mp_graph_infer(G(o));
    return st == MP_OK ? Py_NewRef(Py_None) : mp_py_raise(st);
}

static PyObject *g_fuse(PyObject *o, PyObject *unused) {
    (void)unused;
    int n = 0;
    mp_status st = mp_graph_fuse(G(o), &n);
    return st == MP_OK ? PyLong_FromLong(n) : mp_py_raise(st);
}

static const char *kind_name(mp_gnode_kind k) {
    static const char *names[] = {"Input",          "Const", "Op",  "ReadVariable", "AssignVariable",
                                  "OptimizerStep", "Host",  "Loop", "LoopOutput", "HostCall",
                                  "HostCallOutput"};
    _Static_assert(sizeof names / sizeof *names == MP_GNODE_KIND_COUNT, "a node kind without a name");
    return (int)k >= 0 && k < MP_GNODE_KIND_COUNT ? names[k] : "?";
}

/* nodes() -> list of dicts {kind, op, inputs [(node, output)], dtype, shape, flags, n_out,
 * value_id (a Const's tensor id, else -1)} */
static PyObject *g_nodes(PyObject *o, PyObject *unused) {
    (void)unused;
    mp_graph *g = G(o);
    PyObject *res = PyList_New(g->n_nodes);
    if (!res)
        return NULL;
    for (int i = 0; i < g->n_nodes; i++) {
        const mp_gnode *n = &g->nodes[i];
        PyObject *ins = PyList_New(n->n_in);
        if (!ins)
            goto fail;
        for (int k = 0; k < n->n_in; k++)
            PyList_SET_ITEM(ins, k, Py_BuildValue("(ii)", n->in[k].node, n->in[k].output));
        PyObject *shape = PyTuple_New(n->ndim);
        if (!shape) {
            Py_DECREF(ins);
            goto fail;
        }
        for (int d = 0; d < n->ndim; d++)
            PyTuple_SET_ITEM(shape, d, PyLong_FromLongLong(n->shape[d]));
        long long value_id = n->kind == MP_GNODE_CONST && n->value ? (long long)n->value->id : -1;
        int infers = n->kind == MP_GNODE_OP && n->op == MP_OP_RESHAPE && n->attrs.i1 > 0;
        PyObject *d = Py_BuildValue("{s:s,s:s,s:N,s:O,s:N,s:i,s:i,s:L,s:O}", "kind", kind_name(n->kind), "op",
                                    n->kind == MP_GNODE_OP ? mp_op_get_info(n->op)->name : "", "inputs", ins,
                                    "dtype", n->n_out ? mp_py_dtype_obj(n->dtype) : Py_None, "shape", shape,
                                    "flags", n->flags & 0xff, "n_out", n->n_out, "value_id", value_id,
                                    "infers_dim", infers ? Py_True : Py_False);
        if (!d)
            goto fail;
        PyList_SET_ITEM(res, i, d);
    }
    return res;
fail:
    Py_DECREF(res);
    return NULL;
}

/* guard_effects(from, pred, neg): tf.cond's side effects (mp_graph_guard_effects). */
static PyObject *g_guard_effects(PyObject *o, PyObject *args) {
    int from, neg;
    PyObject *pred;
    if (!PyArg_ParseTuple(args, "iOp", &from, &pred, &neg))
        return NULL;
    if (!MpTensor_Check(pred)) {
        PyErr_SetString(PyExc_TypeError, "guard_effects: pred must be a Tensor");
        return NULL;
    }
    mp_status st = mp_graph_guard_effects(G(o), from, MpTensor_T(pred), neg);
    if (st != MP_OK)
        return mp_py_raise(st);
    Py_RETURN_NONE;
}

static PyObject *get_n_nodes(PyObject *o, void *c) {
    (void)c;
    return PyLong_FromLong(G(o)->n_nodes);
}

static PyObject *g_same_structure(PyObject *o, PyObject *other) {
    mp_graph *b = mp_py_graph_get(other);
    if (!b)
        return NULL;
    return PyBool_FromLong(mp_graph_same_structure(G(o), b));
}

static PyObject *get_value_baked(PyObject *o, void *c) {
    (void)c;
    return PyBool_FromLong(mp_graph_value_baked(G(o)));
}
static int set_value_baked(PyObject *o, PyObject *v, void *c) {
    (void)c;
    int f = v ? PyObject_IsTrue(v) : 0;
    if (f < 0)
        return -1;
    G(o)->value_baked = f;
    return 0;
}
static PyObject *get_value_shape_miss(PyObject *o, void *c) {
    (void)c;
    return PyBool_FromLong(G(o)->value_shape_miss);
}

static PyObject *get_shape_reads(PyObject *o, void *c) {
    (void)c;
    return PyLong_FromLong(G(o)->shape_reads);
}

static PyObject *get_polymorphic(PyObject *o, void *c) {
    (void)c;
    return PyBool_FromLong(G(o)->polymorphic);
}

static int set_polymorphic(PyObject *o, PyObject *v, void *c) {
    (void)c;
    int f = v ? PyObject_IsTrue(v) : 0;
    if (f < 0)
        return -1;
    G(o)->polymorphic = f;
    return 0;
}

static PyObject *get_broken(PyObject *o, void *c) {
    (void)c;
    return PyBool_FromLong(G(o)->broken);
}
static PyObject *get_break_reason(PyObject *o, void *c) {
    (void)c;
    return PyUnicode_FromString(G(o)->break_reason);
}
static PyObject *get_created(PyObject *o, void *c) {
    (void)c;
    return PyLong_FromLong(G(o)->n_created_vars);
}
static PyObject *get_n_inputs(PyObject *o, void *c) {
    (void)c;
    return PyLong_FromLong(G(o)->n_inputs);
}
static PyObject *get_n_outputs(PyObject *o, void *c) {
    (void)c;
    return PyLong_FromLong(G(o)->n_outputs);
}

static PyMethodDef graph_methods[] = {
    {"begin", g_begin, METH_O, "begin(dry): start recording on this thread."},
    {"begin_sub", g_begin_sub, METH_NOARGS, "begin_sub(): record a loop's sub-graph inside the recording graph."},
    {"end", g_end, METH_NOARGS, "Stop recording; prune; plan last uses."},
    {"abort", g_abort, METH_NOARGS, "Stop recording (error path)."},
    {"add_input", g_add_input, METH_O, NULL},
    {"add_output", g_add_output, METH_O, NULL},
    {"run", g_run, METH_VARARGS, "run(list of Tensors[, var_from, var_to]) -> list of Tensors: replay in C."},
    {"nodes", g_nodes, METH_NOARGS, "The node list (for passes' tests and debugging)."},
    {"insert_cast", g_insert_cast, METH_VARARGS, "insert_cast(at, (node, 0), dtype) -> (node, 0)"},
    {"set_input", g_set_input, METH_VARARGS, "set_input(node, k, (node, 0)); then infer()"},
    {"infer", g_infer, METH_NOARGS, "Re-derive dtypes and the replay plan after a pass."},
    {"guard_effects", g_guard_effects, METH_VARARGS, "guard_effects(from, pred, neg): gate the effects recorded since node `from` on pred."},
    {"fuse", g_fuse, METH_NOARGS, "fuse() -> the number of fused nodes made: the remapper's "
                                  "Conv2D/MatMul + bias (+ Relu) fusions (csrc/graph_fuse.c)."},
    {"same_structure", g_same_structure, METH_O, "same_structure(other): the same graph up to value shapes."},
    {NULL},
};

static PyObject *get_python_grads(PyObject *o, void *c) {
    (void)c;
    return PyLong_FromLong(G(o)->python_grads);
}

static PyGetSetDef graph_getset[] = {
    {"broken", get_broken, NULL, NULL, NULL},
    {"polymorphic", get_polymorphic, set_polymorphic, "replay accepts other shapes (same dtype, rank)", NULL},
    {"break_reason", get_break_reason, NULL, NULL, NULL},
    {"n_nodes", get_n_nodes, NULL, "nodes recorded so far", NULL},
    {"value_baked", get_value_baked, set_value_baked,
     "the graph holds sizes taken from a tensor-bound slice's shape: replays check them", NULL},
    {"value_shape_miss", get_value_shape_miss, NULL,
     "the last replay stopped before any state change: a tensor-bound slice took another shape", NULL},
    {"shape_reads", get_shape_reads, NULL, "reads of .shape of values computed from the inputs while recording", NULL},
    {"n_created_variables", get_created, NULL, NULL, NULL},
    {"python_grads", get_python_grads, NULL, "nodes whose gradient is Python (custom gradients, host calls)", NULL},
    {"n_inputs", get_n_inputs, NULL, NULL, NULL},
    {"n_outputs", get_n_outputs, NULL, NULL, NULL},
    {NULL},
};

static PyType_Slot graph_slots[] = {
    {Py_tp_new, graph_new},       {Py_tp_dealloc, graph_dealloc}, {Py_tp_methods, graph_methods},
    {Py_tp_getset, graph_getset}, {Py_tp_doc, "A traced function's graph (csrc/graph.h)."},
    {0, NULL},
};

static PyType_Spec graph_spec = {"mixprec._core.Graph", sizeof(PyMpGraph), 0, Py_TPFLAGS_DEFAULT, graph_slots};

/* ------------------------------------------------------------------ host callbacks */

static mp_status host_call(void *ctx, int n, mp_tensor *const *in) {
    PyGILState_STATE gs = PyGILState_Ensure();
    mp_graph *prev = mp_graph_swap(NULL);
    mp_status st = MP_OK;
    PyObject *args = PyTuple_New(n);
    for (int k = 0; args && k < n; k++) {
        mp_tensor_incref(in[k]);
        PyObject *t = mp_py_wrap(in[k]);
        if (!t) {
            Py_CLEAR(args);
            break;
        }
        PyTuple_SET_ITEM(args, k, t);
    }
    PyObject *r = args ? PyObject_Call((PyObject *)ctx, args, NULL) : NULL;
    if (!r)
        st = mp_py_status_from_pyerr("a host callback of a traced function");
    Py_XDECREF(r);
    Py_XDECREF(args);
    mp_graph_swap(prev);
    PyGILState_Release(gs);
    return st;
}

static void host_free(void *ctx) {
    PyGILState_STATE gs = PyGILState_Ensure();
    Py_XDECREF((PyObject *)ctx);
    PyGILState_Release(gs);
}

/* graph_record_host(callable, tensors): records callable(*tensors) as a node of the
 * recording graph (run at every replay). False when nothing records. */
static PyObject *py_record_host(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *fn, *ts;
    if (!PyArg_ParseTuple(args, "OO!:graph_record_host", &fn, &PyList_Type, &ts))
        return NULL;
    if (!mp_graph_recording())
        Py_RETURN_FALSE;
    Py_ssize_t n = PyList_GET_SIZE(ts);
    mp_tensor **in = PyMem_Calloc((size_t)n + 1, sizeof *in);
    if (!in)
        return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyList_GET_ITEM(ts, i);
        if (!MpTensor_Check(x)) {
            PyMem_Free(in);
            return PyErr_Format(PyExc_TypeError, "graph_record_host: argument %zd is not a Tensor", i);
        }
        in[i] = MpTensor_T(x);
    }
    mp_ghost h = {.fn = host_call, .ctx = Py_NewRef(fn), .free = host_free};
    mp_status st = mp_graph_record_host(h, (int)n, in);
    PyMem_Free(in);
    if (st != MP_OK)
        return mp_py_raise(st);
    Py_RETURN_TRUE;
}

static PyObject *py_recording(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    mp_graph *g = mp_graph_recording();
    if (!g)
        Py_RETURN_NONE;
    return PyBool_FromLong(g->dry || g->effects_dry);
}

/* graph_set_effects_dry(flag) -> the previous flag: while set, the recording graph's
 * variable writes, optimizer steps and host callbacks are recorded, not executed (ops
 * still compute). None when nothing records. */
static PyObject *py_set_effects_dry(PyObject *m, PyObject *flag) {
    (void)m;
    mp_graph *g = mp_graph_recording();
    if (!g)
        Py_RETURN_NONE;
    int prev = g->effects_dry;
    int f = PyObject_IsTrue(flag);
    if (f < 0)
        return NULL;
    g->effects_dry = f;
    return PyBool_FromLong(prev);
}

/* graph_suspend() -> token: recording stops on this thread until graph_resume(token). */
static PyObject *py_suspend(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    return PyLong_FromVoidPtr(mp_graph_swap(NULL));
}

static PyObject *py_resume(PyObject *m, PyObject *tok) {
    (void)m;
    void *p = PyLong_AsVoidPtr(tok);
    if (!p && PyErr_Occurred())
        return NULL;
    mp_graph_swap((mp_graph *)p);
    Py_RETURN_NONE;
}

/* graph_is_traced(tensor) -> True when the recording graph computes it from its inputs,
 * variables or random ops (its value is not a trace-time constant). */
static PyObject *py_is_traced(PyObject *m, PyObject *x) {
    (void)m;
    if (!MpTensor_Check(x) || !mp_graph_recording())
        Py_RETURN_FALSE;
    return PyBool_FromLong(mp_graph_is_dynamic(MpTensor_T(x)));
}

static PyObject *py_set_break_hook(PyObject *m, PyObject *fn) {
    (void)m;
    Py_XSETREF(break_hook, fn == Py_None ? NULL : Py_NewRef(fn));
    Py_RETURN_NONE;
}

static void call_break_hook(mp_graph *g);

/* Called by every host read (numpy(), float(), bool(), the buffer protocol …). */
void mp_py_note_host_read(const mp_tensor *t, const char *what) {
    if (!mp_graph_recording())
        return;
    mp_graph *g = mp_graph_recording();
    if (mp_graph_note_host_read(t, what))
        call_break_hook(g);
}

static void call_break_hook(mp_graph *g) {
    if (!break_hook)
        return;
    mp_graph *prev = mp_graph_swap(NULL);
    PyObject *type, *exc, *tb;
    PyErr_Fetch(&type, &exc, &tb);
    PyObject *r = PyObject_CallFunction(break_hook, "s", g->break_reason);
    if (!r)
        PyErr_WriteUnraisable(break_hook);
    Py_XDECREF(r);
    PyErr_Restore(type, exc, tb);
    mp_graph_swap(prev);
}

void mp_py_graph_break(const char *reason) {
    mp_graph *g = mp_graph_recording();
    if (g && mp_graph_break(reason))
        call_break_hook(g);
}

/* graph_break(reason) -> True when the recording graph broke now */
static PyObject *py_graph_break(PyObject *m, PyObject *arg) {
    (void)m;
    const char *reason = PyUnicode_AsUTF8(arg);
    if (!reason)
        return NULL;
    mp_graph *g = mp_graph_recording();
    if (!mp_graph_break(reason))
        Py_RETURN_FALSE;
    call_break_hook(g);
    Py_RETURN_TRUE;
}

/* graph_profile(on) -> previous setting: per-op timing of replays (graph_profile.c) */
static PyObject *py_graph_profile(PyObject *m, PyObject *arg) {
    (void)m;
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    return PyBool_FromLong(mp_graph_profile_set(on));
}

/* graph_profile_report(reset) -> [(op, dtype name or None, shape, calls, wall s, cpu s)] */
static PyObject *py_graph_profile_report(PyObject *m, PyObject *arg) {
    (void)m;
    int reset = PyObject_IsTrue(arg);
    if (reset < 0)
        return NULL;
    PyObject *out = PyList_New(0);
    if (!out)
        return NULL;
    const char *name;
    int dt, nd;
    const int64_t *shape;
    int64_t count;
    double wall, cpu;
    for (int i = 0; mp_graph_profile_row(i, &name, &dt, &nd, &shape, &count, &wall, &cpu); i++) {
        PyObject *shp = PyTuple_New(nd);
        if (!shp) {
            Py_DECREF(out);
            return NULL;
        }
        for (int d = 0; d < nd; d++)
            PyTuple_SET_ITEM(shp, d, PyLong_FromLongLong((long long)shape[d]));
        PyObject *row = Py_BuildValue("(szNLdd)", name, dt >= 0 ? mp_dtype_name((mp_dtype)dt) : NULL, shp,
                                      (long long)count, wall, cpu);
        if (!row || PyList_Append(out, row) < 0) {
            Py_XDECREF(row);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(row);
    }
    if (reset)
        mp_graph_profile_reset();
    return out;
}

static PyObject *py_graph_fuse_pool_relu(PyObject *m, PyObject *arg) {
    (void)m;
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    return PyBool_FromLong(mp_graph_fuse_pool_relu(on));
}

static PyMethodDef graph_functions[] = {
    {"graph_fuse_pool_relu", py_graph_fuse_pool_relu, METH_O,
     "graph_fuse_pool_relu(on): whether functions traced from now on fuse ReluGrad into MaxPoolGrad (default "
     "True; A/B measurements); returns the previous setting."},
    {"graph_profile", py_graph_profile, METH_O,
     "graph_profile(on): time every node of traced-graph replays (env MIXPREC_PROFILE=1 too); returns the "
     "previous setting."},
    {"graph_profile_report", py_graph_profile_report, METH_O,
     "graph_profile_report(reset): [(op, dtype, output shape, calls, wall s, process cpu s)] since the last reset."},
    {"graph_record_host", py_record_host, METH_VARARGS, NULL},
    {"graph_break", py_graph_break, METH_O, NULL},
    {"graph_recording", py_recording, METH_NOARGS, "None, or whether the recording graph is dry."},
    {"graph_suspend", py_suspend, METH_NOARGS, NULL},
    {"graph_resume", py_resume, METH_O, NULL},
    {"graph_is_traced", py_is_traced, METH_O, NULL},
    {"graph_set_effects_dry", py_set_effects_dry, METH_O, NULL},
    {"_set_graph_break_hook", py_set_break_hook, METH_O, NULL},
    {NULL},
};

int mp_py_graph_init(PyObject *module) {
    MpGraph_Type = (PyTypeObject *)PyType_FromSpec(&graph_spec);
    if (!MpGraph_Type)
        return -1;
    Py_INCREF(MpGraph_Type);
    if (PyModule_AddObject(module, "Graph", (PyObject *)MpGraph_Type) < 0) {
        Py_DECREF(MpGraph_Type);
        return -1;
    }
    PyModule_AddIntConstant(module, "GNODE_FLAG_OUTPUT", MP_GNODE_FLAG_OUTPUT);
    PyModule_AddIntConstant(module, "GNODE_FLAG_RANDOM", MP_GNODE_FLAG_RANDOM);
    PyModule_AddIntConstant(module, "GNODE_FLAG_EFFECT", MP_GNODE_FLAG_EFFECT);
    PyModule_AddIntConstant(module, "GNODE_FLAG_GUARD", MP_GNODE_FLAG_GUARD);
    return PyModule_AddFunctions(module, graph_functions);
}
