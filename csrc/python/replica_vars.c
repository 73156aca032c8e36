/* replica_vars.c (binding) — mirrored variables of a strategy over several GPUs: a table
 * maps each variable created in the strategy's scope (its primary mp_variable) to its copy
 * on one replica's GPU. A replica thread uses its replica's table; every binding path that
 * reaches a variable's value (reads, assignments, tapes, optimizer steps, the loss-scale
 * state) goes through MpVariable_V, which resolves through it. Identity (Variable._id)
 * stays the primary's. Holds references, parses, never computes. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "mp_py.h"

typedef struct {
    pthread_mutex_t mu;
    size_t cap, n;          /* open addressing, cap a power of two (or 0) */
    mp_variable **from;     /* (cap) primary; NULL = empty */
    mp_variable **to;       /* (cap) the replica's copy */
} var_table;

static const char *CAPSULE = "mixprec.replica_vars";
static _Thread_local var_table *current;

static size_t slot_of(const var_table *t, const mp_variable *v) {
    return (size_t)(((uintptr_t)v >> 4) * 0x9E3779B97F4A7C15ull >> 20) & (t->cap - 1);
}

mp_variable *mp_py_replica_resolve(mp_variable *v) {
    var_table *t = current;
    if (!t || !v)
        return v;
    mp_variable *r = v;
    pthread_mutex_lock(&t->mu);
    if (t->cap)
        for (size_t i = slot_of(t, v);; i = (i + 1) & (t->cap - 1)) {
            if (t->from[i] == v) {
                r = t->to[i];
                break;
            }
            if (!t->from[i])
                break;
        }
    pthread_mutex_unlock(&t->mu);
    return r;
}

static int put(var_table *t, mp_variable *from, mp_variable *to) {
    if ((t->n + 1) * 2 > t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 64;
        mp_variable **nf = calloc(ncap, sizeof *nf), **nt = calloc(ncap, sizeof *nt);
        if (!nf || !nt) {
            free(nf);
            free(nt);
            return -1;
        }
        var_table old = *t;
        t->from = nf;
        t->to = nt;
        t->cap = ncap;
        for (size_t i = 0; i < old.cap; i++)
            if (old.from[i]) {
                size_t j = slot_of(t, old.from[i]);
                while (t->from[j])
                    j = (j + 1) & (t->cap - 1);
                t->from[j] = old.from[i];
                t->to[j] = old.to[i];
            }
        free(old.from);
        free(old.to);
    }
    size_t i = slot_of(t, from);
    while (t->from[i] && t->from[i] != from)
        i = (i + 1) & (t->cap - 1);
    if (t->from[i]) { /* replaced */
        mp_variable_decref(t->to[i]);
        mp_variable_decref(t->from[i]);
    } else {
        t->n++;
    }
    mp_variable_incref(from);
    mp_variable_incref(to);
    t->from[i] = from;
    t->to[i] = to;
    return 0;
}

static void table_free(PyObject *cap) {
    var_table *t = PyCapsule_GetPointer(cap, CAPSULE);
    if (!t)
        return;
    for (size_t i = 0; i < t->cap; i++)
        if (t->from[i]) {
            mp_variable_decref(t->from[i]);
            mp_variable_decref(t->to[i]);
        }
    free(t->from);
    free(t->to);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static var_table *get_table(PyObject *o) {
    if (!PyCapsule_IsValid(o, CAPSULE)) {
        PyErr_Format(PyExc_TypeError, "expected a replica variable table, got %.80s", Py_TYPE(o)->tp_name);
        return NULL;
    }
    return PyCapsule_GetPointer(o, CAPSULE);
}

static PyObject *py_new(PyObject *self, PyObject *noargs) {
    var_table *t = calloc(1, sizeof *t);
    if (!t)
        return PyErr_NoMemory();
    pthread_mutex_init(&t->mu, NULL);
    PyObject *cap = PyCapsule_New(t, CAPSULE, table_free);
    if (!cap) {
        pthread_mutex_destroy(&t->mu);
        free(t);
    }
    return cap;
}

/* replica_vars_add(table, primary, copy) */
static PyObject *py_add(PyObject *self, PyObject *args) {
    PyObject *cap, *a, *b;
    if (!PyArg_ParseTuple(args, "OOO", &cap, &a, &b))
        return NULL;
    var_table *t = get_table(cap);
    if (!t)
        return NULL;
    if (!MpVariable_Check(a) || !MpVariable_Check(b) || !MpVariable_Raw(a) || !MpVariable_Raw(b))
        return PyErr_Format(PyExc_TypeError, "replica_vars_add takes two initialised Variables");
    pthread_mutex_lock(&t->mu);
    int rc = put(t, MpVariable_Raw(a), MpVariable_Raw(b));
    pthread_mutex_unlock(&t->mu);
    if (rc)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* replica_vars_use(table or None): this thread's variables resolve through table from now
 * on. The caller keeps the capsule alive while it is in use (the thread holds no reference)
 * and restores what it replaced. */
static PyObject *py_use(PyObject *self, PyObject *arg) {
    var_table *t = NULL;
    if (arg != Py_None && !(t = get_table(arg)))
        return NULL;
    current = t;
    Py_RETURN_NONE;
}

/* replica_vars_resolve(variable) -> the id of what this thread's table maps it to */
static PyObject *py_resolve_id(PyObject *self, PyObject *o) {
    if (!MpVariable_Check(o) || !MpVariable_Raw(o))
        return PyErr_Format(PyExc_TypeError, "expected an initialised Variable");
    return PyLong_FromLongLong(MpVariable_V(o)->id);
}

static PyMethodDef methods[] = {
    {"replica_vars_new", py_new, METH_NOARGS, "replica_vars_new() -> an empty replica variable table"},
    {"replica_vars_add", py_add, METH_VARARGS, "replica_vars_add(table, primary, copy)"},
    {"replica_vars_use", py_use, METH_O,
     "replica_vars_use(table or None): this thread's variables resolve through table"},
    {"replica_vars_resolve_id", py_resolve_id, METH_O, "the id of the variable this thread reaches"},
    {NULL},
};

int mp_py_replica_vars_init(PyObject *module) { return PyModule_AddFunctions(module, methods); }
