/* train.c — bindings of the training core: _core.Tape (GradientTape's engine),
 * _core.LossScale (the loss-scale state object) and the fused step functions
 * (optimizer_apply, all_finite). Parsing and conversion only; the core computes. */
#include "mp_py.h"

#include "../graph.h"

/* ------------------------------------------------------------------ Tape */

typedef struct {
    PyObject_HEAD
    mp_tape *tape;
} PyMpTape;

static PyObject *tape_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"persistent", "watch_accessed_variables", NULL};
    int persistent = 0, watch = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|pp:Tape", kwlist, &persistent, &watch))
        return NULL;
    PyMpTape *self = (PyMpTape *)tp->tp_alloc(tp, 0);
    if (!self)
        return NULL;
    mp_status st = mp_tape_new(persistent, watch, &self->tape);
    if (st != MP_OK) {
        Py_DECREF(self);
        return mp_py_raise(st);
    }
    return (PyObject *)self;
}

static void tape_dealloc(PyObject *o) {
    PyTypeObject *tp = Py_TYPE(o);
    mp_tape_free(((PyMpTape *)o)->tape);
    tp->tp_free(o);
    Py_DECREF(tp);
}

#define TAPE(o) (((PyMpTape *)(o))->tape)

static PyObject *t_push(PyObject *o, PyObject *unused) {
    (void)unused;
    mp_status st = mp_tape_push(TAPE(o));
    if (st != MP_OK)
        return mp_py_raise(st);
    Py_RETURN_NONE;
}

static PyObject *t_pop(PyObject *o, PyObject *unused) {
    (void)unused;
    mp_tape_pop(TAPE(o));
    Py_RETURN_NONE;
}

static PyObject *t_set_recording(PyObject *o, PyObject *arg) {
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    int prev = mp_tape_is_recording(TAPE(o));
    mp_tape_set_recording(TAPE(o), on);
    return PyBool_FromLong(prev);
}

static PyObject *t_watch(PyObject *o, PyObject *x) {
    mp_status st;
    if (MpTensor_Check(x))
        st = mp_tape_watch_tensor(TAPE(o), MpTensor_T(x));
    else if (MpVariable_Check(x) && MpVariable_V(x))
        st = mp_tape_watch_variable(TAPE(o), MpVariable_V(x));
    else {
        PyErr_Format(PyExc_ValueError, "GradientTape.watch: can only watch tensors and variables, got %.100R", x);
        return NULL;
    }
    if (st != MP_OK)
        return mp_py_raise(st);
    Py_RETURN_NONE;
}

static PyObject *t_watched_ids(PyObject *o, PyObject *unused) {
    (void)unused;
    mp_variable **vars;
    int n = mp_tape_watched_variables(TAPE(o), &vars);
    PyObject *lst = PyList_New(n);
    if (!lst)
        return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *v = PyLong_FromLongLong(vars[i]->id);
        if (!v) {
            Py_DECREF(lst);
            return NULL;
        }
        PyList_SET_ITEM(lst, i, v);
    }
    return lst;
}

static int source_id(PyObject *s, int64_t *id) {
    if (MpTensor_Check(s)) {
        *id = MpTensor_T(s)->id;
        return 0;
    }
    if (MpVariable_Check(s) && MpVariable_V(s)) {
        *id = MpVariable_V(s)->id;
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "GradientTape.gradient: sources must be tensors or variables, got %.100R", s);
    return -1;
}

/* gradient(targets: list, seeds: list or None, sources: list) -> list of Tensor/None */
static PyObject *t_gradient(PyObject *o, PyObject *args) {
    PyObject *targets, *seeds, *sources;
    if (!PyArg_ParseTuple(args, "O!OO!:gradient", &PyList_Type, &targets, &seeds, &PyList_Type, &sources))
        return NULL;
    Py_ssize_t nt = PyList_GET_SIZE(targets), ns = PyList_GET_SIZE(sources);
    if (seeds != Py_None && (!PyList_Check(seeds) || PyList_GET_SIZE(seeds) != nt)) {
        PyErr_SetString(PyExc_ValueError, "output_gradients must be a list with one entry per target");
        return NULL;
    }
    mp_tensor **tt = PyMem_Calloc((size_t)nt + 1, sizeof *tt);
    mp_tensor **sd = PyMem_Calloc((size_t)nt + 1, sizeof *sd);
    int64_t *ids = PyMem_Calloc((size_t)ns + 1, sizeof *ids);
    mp_tensor **gr = PyMem_Calloc((size_t)ns + 1, sizeof *gr);
    PyObject *result = NULL;
    if (!tt || !sd || !ids || !gr) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nt; i++) {
        if (mp_py_to_tensor(PyList_GET_ITEM(targets, i), MP_NO_DTYPE, 0, &tt[i]))
            goto done;
        if (seeds != Py_None && PyList_GET_ITEM(seeds, i) != Py_None) {
            if (mp_py_to_tensor(PyList_GET_ITEM(seeds, i), tt[i]->dtype, 0, &sd[i]))
                goto done;
            if (sd[i]->numel != tt[i]->numel) {
                PyErr_Format(MpExc_InvalidArgument,
                             "output_gradients[%zd] has %lld elements but its target has %lld", i,
                             (long long)sd[i]->numel, (long long)tt[i]->numel);
                goto done;
            }
        }
    }
    for (Py_ssize_t j = 0; j < ns; j++)
        if (source_id(PyList_GET_ITEM(sources, j), &ids[j]))
            goto done;
    mp_status st;
    Py_BEGIN_ALLOW_THREADS
    st = mp_tape_gradient(TAPE(o), (int)nt, tt, seeds == Py_None ? NULL : sd, (int)ns, ids, gr);
    Py_END_ALLOW_THREADS
    if (st != MP_OK) {
        if (!mp_py_custom_grad_reraise()) /* a custom gradient's own exception, as raised */
            mp_py_raise(st);
        goto done;
    }
    result = PyList_New(ns);
    if (!result)
        goto done;
    for (Py_ssize_t j = 0; j < ns; j++) {
        PyObject *g = gr[j] ? mp_py_wrap(gr[j]) : Py_NewRef(Py_None);
        gr[j] = NULL;
        if (!g) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, j, g);
    }
done:
    for (Py_ssize_t i = 0; tt && i < nt; i++)
        mp_tensor_decref(tt[i]);
    for (Py_ssize_t i = 0; sd && i < nt; i++)
        mp_tensor_decref(sd[i]);
    for (Py_ssize_t j = 0; gr && j < ns; j++)
        mp_tensor_decref(gr[j]);
    PyMem_Free(tt);
    PyMem_Free(sd);
    PyMem_Free(ids);
    PyMem_Free(gr);
    return result;
}

static PyMethodDef tape_methods[] = {
    {"push", t_push, METH_NOARGS, "Start recording on this thread."},
    {"pop", t_pop, METH_NOARGS, "Stop being this thread's active tape."},
    {"set_recording", t_set_recording, METH_O, "Pause/resume; returns the previous state."},
    {"watch", t_watch, METH_O, NULL},
    {"watched_variable_ids", t_watched_ids, METH_NOARGS, NULL},
    {"gradient", t_gradient, METH_VARARGS, "gradient(targets, seeds or None, sources) -> [Tensor or None]"},
    {NULL},
};

static PyType_Slot tape_slots[] = {
    {Py_tp_new, tape_new},
    {Py_tp_dealloc, tape_dealloc},
    {Py_tp_methods, tape_methods},
    {Py_tp_doc, "The C autodiff tape behind mixprec.GradientTape."},
    {0, NULL},
};

static PyType_Spec tape_spec = {
    .name = "mixprec._core.Tape", .basicsize = sizeof(PyMpTape), .flags = Py_TPFLAGS_DEFAULT, .slots = tape_slots};

/* ------------------------------------------------------------------ LossScale */

typedef struct {
    PyObject_HEAD
    mp_loss_scale *ls;
    PyObject *vars; /* (scale, good_steps) Variable handles, made on first request */
} PyMpLossScale;

static PyTypeObject *MpLossScale_Type;

static PyObject *ls_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"dynamic", "initial_scale", "growth_interval", "multiplier", "min_scale", NULL};
    int dynamic = 1;
    double initial = 32768.0, mult = 2.0, min_scale = 1.0;
    long long growth = 2000;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|pdLdd:LossScale", kwlist, &dynamic, &initial, &growth, &mult,
                                     &min_scale))
        return NULL;
    PyMpLossScale *self = (PyMpLossScale *)tp->tp_alloc(tp, 0);
    if (!self)
        return NULL;
    mp_status st = mp_loss_scale_new(dynamic, initial, growth, mult, min_scale, mp_py_current_device(), &self->ls);
    if (st != MP_OK) {
        Py_DECREF(self);
        return mp_py_raise(st);
    }
    return (PyObject *)self;
}

static void ls_dealloc(PyObject *o) {
    PyTypeObject *tp = Py_TYPE(o);
    PyMpLossScale *self = (PyMpLossScale *)o;
    Py_XDECREF(self->vars);
    mp_loss_scale_decref(self->ls);
    tp->tp_free(o);
    Py_DECREF(tp);
}

#define LS(o) (((PyMpLossScale *)(o))->ls)

static PyObject *ls_value(PyObject *o, PyObject *unused) {
    mp_py_graph_break("reading the loss scale on the host");
    (void)unused;
    double v;
    /* the GIL stays held (a GPU copy waits for the device): the state is a pair of
     * variables, which change only under the GIL (see the optimizer step) */
    mp_status st = mp_loss_scale_value(LS(o), &v);
    return st == MP_OK ? PyFloat_FromDouble(v) : mp_py_raise(st);
}

static PyObject *ls_good_steps(PyObject *o, PyObject *unused) {
    (void)unused;
    int64_t g;
    mp_status st = mp_loss_scale_good_steps(LS(o), &g); /* under the GIL: see ls_value */
    return st == MP_OK ? PyLong_FromLongLong(g) : mp_py_raise(st);
}

static PyObject *ls_update(PyObject *o, PyObject *arg) {
    int finite = PyObject_IsTrue(arg);
    if (finite < 0)
        return NULL;
    mp_status st = mp_loss_scale_update(LS(o), finite);
    if (st != MP_OK)
        return mp_py_raise(st);
    Py_RETURN_NONE;
}

static PyObject *ls_variables(PyObject *o, PyObject *unused) {
    (void)unused;
    PyMpLossScale *self = (PyMpLossScale *)o;
    if (!self->vars) {
        mp_variable_incref(self->ls->scale);
        PyObject *a = mp_py_wrap_variable(self->ls->scale);
        if (!a)
            return NULL;
        mp_variable_incref(self->ls->good_steps);
        PyObject *b = mp_py_wrap_variable(self->ls->good_steps);
        if (!b) {
            Py_DECREF(a);
            return NULL;
        }
        self->vars = PyTuple_Pack(2, a, b);
        Py_DECREF(a);
        Py_DECREF(b);
        if (!self->vars)
            return NULL;
    }
    return Py_NewRef(self->vars);
}

static PyObject *ls_get(PyObject *o, void *which) {
    mp_loss_scale *ls = LS(o);
    switch ((int)(intptr_t)which) {
    case 0: return PyBool_FromLong(ls->dynamic);
    case 1: return PyLong_FromLongLong(ls->params.growth_interval);
    case 2: return PyFloat_FromDouble(ls->params.multiplier);
    default: return PyFloat_FromDouble(ls->params.min_scale);
    }
}

static PyMethodDef ls_methods[] = {
    {"value", ls_value, METH_NOARGS, "The current scale as a Python float (waits for a GPU)."},
    {"good_steps", ls_good_steps, METH_NOARGS, "Finite steps since the scale last changed (waits for a GPU)."},
    {"update", ls_update, METH_O, "update(finite): run the state machine once."},
    {"variables", ls_variables, METH_NOARGS, "(scale, good_steps) as Variables (for checkpoints)."},
    {NULL},
};

static PyGetSetDef ls_getset[] = {
    {"dynamic", ls_get, NULL, NULL, (void *)0},
    {"growth_interval", ls_get, NULL, NULL, (void *)1},
    {"multiplier", ls_get, NULL, NULL, (void *)2},
    {"min_scale", ls_get, NULL, NULL, (void *)3},
    {NULL},
};

static PyType_Slot ls_slots[] = {
    {Py_tp_new, ls_new},
    {Py_tp_dealloc, ls_dealloc},
    {Py_tp_methods, ls_methods},
    {Py_tp_getset, ls_getset},
    {Py_tp_doc, "Loss-scale state in the C core (used by LossScaleOptimizer and DynamicLossScale)."},
    {0, NULL},
};

static PyType_Spec ls_spec = {.name = "mixprec._core.LossScale",
                              .basicsize = sizeof(PyMpLossScale),
                              .flags = Py_TPFLAGS_DEFAULT,
                              .slots = ls_slots};

/* ------------------------------------------------------------------ step functions */

static int parse_hparams(PyObject *hpt, mp_optim_hparams *hp) {
    return PyArg_ParseTuple(hpt, "ddpddpddpp|pddddddddp:hparams", &hp->lr, &hp->momentum, &hp->nesterov, &hp->rho,
                            &hp->epsilon, &hp->centered, &hp->beta_1, &hp->beta_2, &hp->amsgrad,
                            &hp->use_momentum, &hp->use_weight_decay, &hp->weight_decay, &hp->lr_power, &hp->l1,
                            &hp->l2, &hp->l2_shrinkage, &hp->beta, &hp->schedule_decay,
                            &hp->eps_outside)
               ? 0
               : -1;
}

static int as_variable(PyObject *o, mp_variable **v, const char *what) {
    if (!MpVariable_Check(o) || !MpVariable_V(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be a mixprec.Variable, got %.100R", what, o);
        return -1;
    }
    *v = MpVariable_V(o);
    return 0;
}

/* A recorded optimizer step's hyperparameters at replay: ctx() -> (hparams, grad_scale). */
static mp_status optim_refresh(void *ctx, mp_optim_hparams *hp, double *grad_scale) {
    PyGILState_STATE gs = PyGILState_Ensure();
    mp_graph *prev = mp_graph_swap(NULL);
    mp_status st = MP_OK;
    PyObject *r = PyObject_CallNoArgs((PyObject *)ctx);
    if (r && PyTuple_Check(r) && PyTuple_GET_SIZE(r) == 2 && PyTuple_Check(PyTuple_GET_ITEM(r, 0))) {
        mp_optim_hparams h = {0};
        double gsc = PyFloat_AsDouble(PyTuple_GET_ITEM(r, 1));
        if (!PyErr_Occurred() && parse_hparams(PyTuple_GET_ITEM(r, 0), &h) == 0) {
            *hp = h;
            *grad_scale = gsc;
        }
    } else if (r) {
        PyErr_SetString(PyExc_TypeError, "an optimizer's refresh must return (hparams, grad_scale)");
    }
    Py_XDECREF(r);
    if (PyErr_Occurred()) {
        PyObject *type, *exc, *tb;
        PyErr_Fetch(&type, &exc, &tb);
        PyObject *s = exc ? PyObject_Str(exc) : NULL;
        st = mp_error_set(MP_ERR_VALUE, "reading an optimizer's hyperparameters failed: %s",
                          s && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : "?");
        PyErr_Clear();
        Py_XDECREF(s);
        Py_XDECREF(type);
        Py_XDECREF(exc);
        Py_XDECREF(tb);
    }
    mp_graph_swap(prev);
    PyGILState_Release(gs);
    return st;
}

static void optim_refresh_free(void *ctx) {
    PyGILState_STATE gs = PyGILState_Ensure();
    Py_XDECREF((PyObject *)ctx);
    PyGILState_Release(gs);
}

/* optimizer_apply(kind, hparams, vars, grads, slots, iterations, loss_scale, check_finite, grad_scale,
 *                 unscale=False, refresh=None, state=None, no_decay=None) -> applied
 * hparams = (lr, momentum, nesterov, rho, epsilon, centered, beta_1, beta_2, amsgrad, use_momentum
 *            [, use_weight_decay, weight_decay, lr_power, l1, l2, l2_shrinkage, beta, schedule_decay,
 *             eps_outside]).
 * state: Nadam's u_product variable; no_decay: per variable, excluded from weight decay.
 * applied: True when no finite check ran; otherwise a bool scalar tensor on the variables'
 * device, computed there (converting it to a Python bool waits for the device). */
static PyObject *py_optimizer_apply(PyObject *m, PyObject *args) {
    (void)m;
    int kind, check_finite, unscale = 0;
    PyObject *hpt, *vars, *grads, *slots, *iters, *lso, *refresh = Py_None, *stateo = Py_None, *nod = Py_None;
    double grad_scale;
    if (!PyArg_ParseTuple(args, "iO!O!O!O!OOpd|pOOO:optimizer_apply", &kind, &PyTuple_Type, &hpt, &PyList_Type,
                          &vars, &PyList_Type, &grads, &PyList_Type, &slots, &iters, &lso, &check_finite, &grad_scale,
                          &unscale, &refresh, &stateo, &nod))
        return NULL;
    mp_optim_hparams hp = {0};
    if (parse_hparams(hpt, &hp))
        return NULL;
    if (kind < 0 || kind >= MP_OPTIM_COUNT) {
        PyErr_Format(PyExc_ValueError, "unknown optimizer kind %d", kind);
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(vars);
    if (PyList_GET_SIZE(grads) != n) {
        PyErr_Format(PyExc_ValueError, "optimizer_apply: %zd gradients for %zd variables", PyList_GET_SIZE(grads), n);
        return NULL;
    }
    int k = mp_optimizer_slots_per_var((mp_optim_kind)kind, &hp);
    if (PyList_GET_SIZE(slots) != n * k) {
        PyErr_Format(PyExc_ValueError, "optimizer_apply: expected %zd slot variables, got %zd", n * k,
                     PyList_GET_SIZE(slots));
        return NULL;
    }
    mp_loss_scale *ls = NULL;
    if (lso != Py_None) {
        if (!PyObject_TypeCheck(lso, MpLossScale_Type)) {
            PyErr_SetString(PyExc_TypeError, "optimizer_apply: loss_scale must be a _core.LossScale or None");
            return NULL;
        }
        ls = LS(lso);
    }
    /* in a replica of a strategy over several GPUs: the state's copies on this replica's GPU */
    mp_loss_scale ls_here;
    if (ls && !mp_graph_recording() && (mp_py_replica_resolve(ls->scale) != ls->scale || mp_py_replica_resolve(ls->good_steps) != ls->good_steps)) {
        ls_here = *ls;
        ls_here.scale = mp_py_replica_resolve(ls->scale);
        ls_here.good_steps = mp_py_replica_resolve(ls->good_steps);
        ls = &ls_here;
    }
    mp_variable *it = NULL, *state = NULL;
    if (iters != Py_None && as_variable(iters, &it, "iterations"))
        return NULL;
    if (stateo != Py_None && as_variable(stateo, &state, "state"))
        return NULL;
    if (nod != Py_None && (!PyList_Check(nod) || PyList_GET_SIZE(nod) != n)) {
        PyErr_Format(PyExc_ValueError, "optimizer_apply: no_decay must be a list of %zd bools", n);
        return NULL;
    }
    mp_variable **vs = PyMem_Calloc((size_t)n + 1, sizeof *vs);
    mp_tensor **gs = PyMem_Calloc((size_t)n + 1, sizeof *gs);
    mp_variable **ss = PyMem_Calloc((size_t)(n * k) + 1, sizeof *ss);
    uint8_t *nd = nod != Py_None ? PyMem_Calloc((size_t)n + 1, 1) : NULL;
    PyObject *result = NULL;
    if (!vs || !gs || !ss || (nod != Py_None && !nd)) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (as_variable(PyList_GET_ITEM(vars, i), &vs[i], "var_list entries"))
            goto done;
        PyObject *g = PyList_GET_ITEM(grads, i);
        if (g != Py_None && mp_py_to_tensor(g, MP_NO_DTYPE, 0, &gs[i]))
            goto done;
    }
    for (Py_ssize_t i = 0; i < n * k; i++)
        if (as_variable(PyList_GET_ITEM(slots, i), &ss[i], "slots"))
            goto done;
    for (Py_ssize_t i = 0; nd && i < n; i++) {
        int b = PyObject_IsTrue(PyList_GET_ITEM(nod, i));
        if (b < 0)
            goto done;
        nd[i] = (uint8_t)b;
    }
    mp_tensor *found_inf = NULL;
    /* NOTE: the GIL stays held. Variables change (values swapped on copy-on-write, storage
     * written in place) only under the GIL, so another thread's assign or read never meets a
     * half-done step or a freed value (ASan found both when this released the GIL). The
     * update itself still runs on the thread pool; on a GPU it is an asynchronous launch. */
    mp_status st = mp_optimizer_apply((mp_optim_kind)kind, &hp, (int)n, vs, gs, ss, it, state, nd, ls,
                                      check_finite, grad_scale, unscale, &found_inf);
    if (st != MP_OK) {
        mp_py_raise(st);
        mp_tensor_decref(found_inf);
        goto done;
    }
    if (refresh != Py_None && mp_graph_recording()) {
        /* the recorded step re-reads its hyperparameters from the host at every replay */
        mp_graph *g = mp_graph_recording();
        mp_gnode *last = g->n_nodes ? &g->nodes[g->n_nodes - 1] : NULL;
        if (last && last->kind == MP_GNODE_OPTIM) {
            last->optim->refresh = optim_refresh;
            last->optim->refresh_ctx = Py_NewRef(refresh);
            last->optim->refresh_free = optim_refresh_free;
        }
    }
    if (!found_inf) {
        result = Py_NewRef(Py_True);
    } else {
        mp_tensor *applied = NULL;
        st = mp_unary(MP_OP_LOGICAL_NOT, found_inf, &applied);
        mp_tensor_decref(found_inf);
        result = st == MP_OK ? mp_py_wrap(applied) : mp_py_raise(st);
    }
done:
    for (Py_ssize_t i = 0; gs && i < n; i++)
        mp_tensor_decref(gs[i]);
    PyMem_Free(vs);
    PyMem_Free(gs);
    PyMem_Free(ss);
    PyMem_Free(nd);
    return result;
}

static PyObject *py_all_finite(PyObject *m, PyObject *seq) {
    (void)m;
    PyObject *fast = PySequence_Fast(seq, "all_finite expects a sequence of tensors");
    if (!fast)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    mp_tensor **ts = PyMem_Calloc((size_t)n + 1, sizeof *ts);
    PyObject *result = NULL;
    if (!ts) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PySequence_Fast_GET_ITEM(fast, i);
        if (x != Py_None && mp_py_to_tensor(x, MP_NO_DTYPE, 0, &ts[i]))
            goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        mp_py_note_host_read(ts[i], "all_finite (reading the answer on the host)");
    int finite = 1;
    mp_status st = mp_all_finite((int)n, ts, &finite);
    result = st == MP_OK ? PyBool_FromLong(finite) : mp_py_raise(st);
done:
    for (Py_ssize_t i = 0; ts && i < n; i++)
        mp_tensor_decref(ts[i]);
    PyMem_Free(ts);
    Py_DECREF(fast);
    return result;
}

static PyObject *py_slots_per_var(PyObject *m, PyObject *args) {
    (void)m;
    int kind;
    PyObject *hpt;
    if (!PyArg_ParseTuple(args, "iO!", &kind, &PyTuple_Type, &hpt))
        return NULL;
    mp_optim_hparams hp = {0};
    if (parse_hparams(hpt, &hp))
        return NULL;
    return PyLong_FromLong(mp_optimizer_slots_per_var((mp_optim_kind)kind, &hp));
}

static PyMethodDef train_methods[] = {
    {"optimizer_apply", py_optimizer_apply, METH_VARARGS,
     "Fused step: check finite, update or skip, update the loss scale, count the iteration."},
    {"all_finite", py_all_finite, METH_O, "True when no tensor in the list holds inf or NaN."},
    {"slots_per_var", py_slots_per_var, METH_VARARGS, NULL},
    {NULL},
};

int mp_py_train_init(PyObject *module) {
    PyObject *tape_t = PyType_FromSpec(&tape_spec);
    if (!tape_t || PyModule_AddObject(module, "Tape", tape_t) < 0) {
        Py_XDECREF(tape_t);
        return -1;
    }
    MpLossScale_Type = (PyTypeObject *)PyType_FromSpec(&ls_spec);
    if (!MpLossScale_Type)
        return -1;
    Py_INCREF(MpLossScale_Type);
    if (PyModule_AddObject(module, "LossScale", (PyObject *)MpLossScale_Type) < 0) {
        Py_DECREF(MpLossScale_Type);
        return -1;
    }
    PyModule_AddIntConstant(module, "OPTIM_SGD", MP_OPTIM_SGD);
    PyModule_AddIntConstant(module, "OPTIM_RMSPROP", MP_OPTIM_RMSPROP);
    PyModule_AddIntConstant(module, "OPTIM_ADAM", MP_OPTIM_ADAM);
    PyModule_AddIntConstant(module, "OPTIM_ADAGRAD", MP_OPTIM_ADAGRAD);
    PyModule_AddIntConstant(module, "OPTIM_ADADELTA", MP_OPTIM_ADADELTA);
    PyModule_AddIntConstant(module, "OPTIM_ADAMAX", MP_OPTIM_ADAMAX);
    PyModule_AddIntConstant(module, "OPTIM_NADAM", MP_OPTIM_NADAM);
    PyModule_AddIntConstant(module, "OPTIM_FTRL", MP_OPTIM_FTRL);
    PyModule_AddIntConstant(module, "OPTIM_LION", MP_OPTIM_LION);
    return PyModule_AddFunctions(module, train_methods);
}
