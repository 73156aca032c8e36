/* graph_loop.c (bindings) — _core.graph_loop: turns a loop traced by the Python face
 * (src/mixprec/_loops.py: body and condition recorded once as sub-graphs) into a loop node
 * of the recording graph, running its remaining iterations in C first when the tracing call
 * runs for real. Parsing and conversion only: iteration is the core's (csrc/graph_loop.c). */
#include "mp_py.h"

#include "../graph.h"
#include "../tape.h"

/* A dataset's iterator as the loop's source: source.next(restart) -> list of Tensors, or
 * None at the end. */
static mp_status source_next(void *ctx, int restart, int n, mp_tensor **elems, int *done) {
    PyGILState_STATE gs = PyGILState_Ensure();
    mp_graph *prev = mp_graph_swap(NULL);
    mp_status st = MP_OK;
    PyObject *r = PyObject_CallMethod((PyObject *)ctx, "next", "i", restart);
    if (!r) {
        st = mp_py_status_from_pyerr("iterating a loop's dataset");
    } else if (r == Py_None) {
        *done = 1;
    } else if (!PyList_Check(r) || PyList_GET_SIZE(r) != n) {
        st = mp_error_set(MP_ERR_TYPE,
                          "a loop's dataset gave an element of another structure than the traced one "
                          "(%d tensors expected)",
                          n);
    } else {
        for (int k = 0; k < n; k++) {
            PyObject *x = PyList_GET_ITEM(r, k);
            if (!MpTensor_Check(x)) {
                st = mp_error_set(MP_ERR_TYPE, "a loop's dataset element %d is not a tensor", k);
                break;
            }
        }
        for (int k = 0; st == MP_OK && k < n; k++) {
            elems[k] = MpTensor_T(PyList_GET_ITEM(r, k));
            mp_tensor_incref(elems[k]);
        }
    }
    Py_XDECREF(r);
    mp_graph_swap(prev);
    PyGILState_Release(gs);
    return st;
}

static void source_free(void *ctx) {
    PyGILState_STATE gs = PyGILState_Ensure();
    Py_XDECREF((PyObject *)ctx);
    PyGILState_Release(gs);
}

/* The tracing call's callback for an element shape without a body: tracer.trace(elems,
 * carried) -> (Graph or None, next loop variables), run with the function's graph recording
 * again (as the new body's parent). A Python exception is kept and re-raised after the run. */
typedef struct {
    PyObject *tracer;
    mp_graph *outer;
    PyObject *etype, *evalue, *etb;
} tracer_ctx;

static PyObject *wrap_list(int n, mp_tensor *const *ts) {
    PyObject *l = PyList_New(n);
    for (int k = 0; l && k < n; k++) {
        mp_tensor_incref(ts[k]);
        PyObject *t = mp_py_wrap(ts[k]);
        if (!t) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, k, t);
    }
    return l;
}

static mp_status trace_body(void *ctx, int ne, mp_tensor *const *elems, int nc, mp_tensor *const *carried, mp_graph **g,
                            mp_tensor **next) {
    tracer_ctx *c = ctx;
    mp_graph *prev = mp_graph_swap(c->outer);
    mp_status st = MP_OK;
    PyObject *le = wrap_list(ne, elems), *lc = wrap_list(nc, carried), *r = NULL;
    if (le && lc)
        r = PyObject_CallMethod(c->tracer, "trace", "OO", le, lc);
    if (r && (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 2 || !PyList_Check(PyTuple_GET_ITEM(r, 1)) ||
              PyList_GET_SIZE(PyTuple_GET_ITEM(r, 1)) != nc)) {
        Py_CLEAR(r);
        PyErr_SetString(PyExc_TypeError, "a loop body's tracer returned something else than (graph, values)");
    }
    if (r) {
        PyObject *vals = PyTuple_GET_ITEM(r, 1);
        for (int k = 0; k < nc; k++)
            if (!MpTensor_Check(PyList_GET_ITEM(vals, k))) {
                Py_CLEAR(r);
                PyErr_SetString(PyExc_TypeError, "a loop body's tracer returned a value that is not a tensor");
                break;
            }
    }
    if (r) {
        PyObject *go = PyTuple_GET_ITEM(r, 0);
        *g = go == Py_None ? NULL : mp_py_graph_take(go);
        if (go != Py_None && !*g)
            st = mp_py_status_from_pyerr("a loop body's trace");
        for (int k = 0; st == MP_OK && k < nc; k++) {
            next[k] = MpTensor_T(PyList_GET_ITEM(PyTuple_GET_ITEM(r, 1), k));
            mp_tensor_incref(next[k]);
        }
    } else {
        PyErr_Fetch(&c->etype, &c->evalue, &c->etb);
        st = mp_error_set(MP_ERR_VALUE, "the loop body raised");
    }
    Py_XDECREF(r);
    Py_XDECREF(le);
    Py_XDECREF(lc);
    mp_graph_swap(prev);
    return st;
}

static int tensors_of(PyObject *list, const char *what, mp_tensor **dst) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        PyObject *x = PyList_GET_ITEM(list, i);
        if (!MpTensor_Check(x)) {
            PyErr_Format(PyExc_TypeError, "graph_loop: %s[%zd] is not a Tensor", what, i);
            return -1;
        }
        dst[i] = MpTensor_T(x);
    }
    return 0;
}

/* At a replay, for an element shape without a body: tracer.retrace(elems, carried, known)
 * -> a new body Graph (recorded without effects, reading only `known` from outside). */
static mp_status retrace_body(void *ctx, int ne, mp_tensor *const *elems, int nc, mp_tensor *const *carried, int nk,
                              mp_tensor *const *known, mp_graph **g) {
    PyGILState_STATE gs = PyGILState_Ensure();
    mp_graph *prev = mp_graph_swap(NULL);
    mp_status st = MP_OK;
    PyObject *le = wrap_list(ne, elems), *lc = wrap_list(nc, carried), *lk = wrap_list(nk, known), *r = NULL;
    if (le && lc && lk)
        r = PyObject_CallMethod((PyObject *)ctx, "retrace", "OOO", le, lc, lk);
    *g = r ? mp_py_graph_take(r) : NULL;
    if (!*g)
        st = mp_py_status_from_pyerr("tracing a loop's body for a new element shape");
    Py_XDECREF(r);
    Py_XDECREF(le);
    Py_XDECREF(lc);
    Py_XDECREF(lk);
    mp_graph_swap(prev);
    PyGILState_Release(gs);
    return st;
}

/* graph_loop(body, cond, init, now, src_inputs, n_elems, src_kind, max_iter, source,
 *            start, run, tracer) -> (list of Tensors, recorded).
 * body/cond: ended _core.Graph objects (taken: emptied); init: the loop variables before
 * the loop (the node's inputs); now: their values after `start` iterations ran in Python;
 * run: run the remaining iterations now (the tracing call runs for real), else the results
 * are `now` (a dry trace); tracer: traces the body for a new element shape during that run.
 * recorded is False when the function's graph broke during the run (no node then). */
static PyObject *py_graph_loop(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *body_o, *cond_o, *init, *now, *srcin, *source, *tracer;
    int n_elems, src_kind, run;
    long long max_iter, start;
    if (!PyArg_ParseTuple(args, "OOO!O!O!iiLOLpO:graph_loop", &body_o, &cond_o, &PyList_Type, &init, &PyList_Type, &now,
                          &PyList_Type, &srcin, &n_elems, &src_kind, &max_iter, &source, &start, &run, &tracer))
        return NULL;
    if (!mp_py_graph_get(body_o) || (cond_o != Py_None && !mp_py_graph_get(cond_o)))
        return NULL;
    Py_ssize_t nc = PyList_GET_SIZE(init), ns = PyList_GET_SIZE(srcin);
    if (PyList_GET_SIZE(now) != nc)
        return PyErr_Format(PyExc_ValueError, "graph_loop: init and now differ in length");
    if (src_kind < MP_GLOOP_SRC_NONE || src_kind > MP_GLOOP_SRC_HOST ||
        (src_kind == MP_GLOOP_SRC_HOST && source == Py_None))
        return PyErr_Format(PyExc_ValueError, "graph_loop: bad source");
    mp_gloop *l = NULL;
    mp_status st = mp_gloop_new(&l);
    if (st != MP_OK)
        return mp_py_raise(st);
    mp_graph *body = mp_py_graph_take(body_o);
    if (!body || mp_gloop_add_body(l, body) != MP_OK) {
        mp_gloop_free(l);
        return body ? PyErr_NoMemory() : NULL;
    }
    l->cond = cond_o == Py_None ? NULL : mp_py_graph_take(cond_o);
    l->n_carried = (int)nc;
    l->n_src = (int)ns;
    l->n_elems = n_elems;
    l->src = (mp_gloop_src)src_kind;
    l->max_iter = max_iter;
    l->results = calloc((size_t)nc + 1, sizeof *l->results);
    if (src_kind == MP_GLOOP_SRC_HOST) {
        l->next = source_next;
        l->ctx = Py_NewRef(source);
        l->free = source_free;
    }
    mp_tensor **in = NULL;
    mp_tensor **rin = PyMem_Calloc((size_t)(nc + ns) + 1, sizeof *rin);
    mp_tensor **outs = PyMem_Calloc((size_t)nc + 1, sizeof *outs);
    mp_tensor **fresh = PyMem_Calloc((size_t)nc + 1, sizeof *fresh);
    PyObject *res = NULL;
    int recorded = 0;
    if (!rin || !outs || !fresh || !l->results) {
        PyErr_NoMemory();
        goto fail;
    }
    if (tensors_of(now, "now", rin) < 0 || tensors_of(srcin, "src", rin + nc) < 0)
        goto fail;
    if (run) {
        tracer_ctx tc = {tracer, mp_graph_recording(), NULL, NULL, NULL};
        if (tracer != Py_None) {
            l->trace_body = trace_body;
            l->trace_ctx = &tc;
        }
        mp_graph *prev = mp_graph_swap(NULL);
        st = mp_gloop_run(l, rin, 1, start, 0, 0, NULL, NULL, outs);
        mp_graph_swap(prev);
        l->trace_body = NULL;
        l->trace_ctx = NULL;
        if (tc.etype) { /* the body's own exception */
            PyErr_Restore(tc.etype, tc.evalue, tc.etb);
            goto fail;
        }
        if (st != MP_OK) {
            mp_py_raise(st);
            goto fail;
        }
    } else {
        for (Py_ssize_t k = 0; k < nc; k++) {
            outs[k] = rin[k];
            mp_tensor_incref(outs[k]);
        }
    }
    /* new tensors (new ids): the graph maps them to the loop's outputs, never an input
     * that happened to come back unchanged; an identity op, so that a tape recording
     * outside the function links them to the iterations it recorded */
    {
        mp_graph *prev = mp_graph_swap(NULL);
        mp_attrs at;
        memset(&at, 0, sizeof at);
        for (Py_ssize_t k = 0; k < nc && st == MP_OK; k++)
            st = mp_op_run(MP_OP_IDENTITY, 1, &outs[k], &at, &fresh[k]);
        mp_graph_swap(prev);
        if (st != MP_OK) {
            mp_py_raise(st);
            goto fail;
        }
    }
    if (!l->python_mode) {
        int n_in = mp_gloop_n_inputs(l), at = (int)(nc + ns), at0 = at;
        in = PyMem_Calloc((size_t)n_in + 1, sizeof *in);
        if (!in) {
            PyErr_NoMemory();
            goto fail;
        }
        if (tensors_of(init, "init", in) < 0)
            goto fail;
        memcpy(in + nc, rin + nc, (size_t)ns * sizeof *in);
        for (int j = 0; l->cond && j < l->cond->n_captured; j++)
            in[at++] = l->cond->captured[j];
        for (int b = 0; b < l->n_bodies; b++)
            for (int j = 0; j < l->bodies[b]->n_captured; j++)
                in[at++] = l->bodies[b]->captured[j];
        if (tracer != Py_None && n_elems > 0) {
            l->known = calloc((size_t)(n_in - at0) + 1, sizeof *l->known);
            if (!l->known) {
                PyErr_NoMemory();
                goto fail;
            }
            for (int k = at0; k < n_in; k++) {
                l->known[l->n_known++] = in[k];
                mp_tensor_incref(in[k]);
            }
            l->retrace = retrace_body;
            l->retrace_ctx = Py_NewRef(tracer);
            l->retrace_free = source_free;
        }
        st = mp_graph_record_loop(l, n_in, in, fresh);
        l = NULL; /* owned by the graph now (or freed) */
        if (st != MP_OK) {
            mp_py_raise(st);
            goto fail;
        }
        recorded = 1;
    }
    PyObject *lst = PyList_New(nc);
    if (!lst)
        goto fail;
    for (Py_ssize_t k = 0; k < nc; k++) {
        PyObject *t = mp_py_wrap(fresh[k]);
        fresh[k] = NULL;
        if (!t) {
            Py_DECREF(lst);
            goto fail;
        }
        PyList_SET_ITEM(lst, k, t);
    }
    res = Py_BuildValue("(NO)", lst, recorded ? Py_True : Py_False);
fail:
    mp_gloop_free(l);
    for (Py_ssize_t k = 0; k < nc; k++) {
        if (outs)
            mp_tensor_decref(outs[k]);
        if (fresh)
            mp_tensor_decref(fresh[k]);
    }
    PyMem_Free(in);
    PyMem_Free(rin);
    PyMem_Free(outs);
    PyMem_Free(fresh);
    return res;
}

/* graph_tape_recording() -> is a GradientTape recording on this thread? */
static PyObject *py_tape_recording(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    return PyBool_FromLong(mp_tape_recording());
}

static PyMethodDef loop_functions[] = {
    {"graph_tape_recording", py_tape_recording, METH_NOARGS, NULL},
    {"graph_loop", py_graph_loop, METH_VARARGS,
     "graph_loop(body, cond, init, now, src_inputs, n_elems, src_kind, max_iter, source, start, run, tracer)"},
    {NULL},
};

int mp_py_graph_loop_init(PyObject *module) {
    PyModule_AddIntConstant(module, "GLOOP_SRC_NONE", MP_GLOOP_SRC_NONE);
    PyModule_AddIntConstant(module, "GLOOP_SRC_ROWS", MP_GLOOP_SRC_ROWS);
    PyModule_AddIntConstant(module, "GLOOP_SRC_HOST", MP_GLOOP_SRC_HOST);
    return PyModule_AddFunctions(module, loop_functions);
}
