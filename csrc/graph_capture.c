/* graph_capture.c — a traced graph's replay captured once as a device graph (CUDA graphs,
 * through the backend's graph_capture_begin/end, graph_launch, graph_destroy slots) and
 * re-launched by later calls: when to capture, what must still hold for a launch to stand
 * for a replay (variables' buffers and versions, hyperparameters, device), the static
 * input buffers and the copies of the outputs. Must not compute anything nor know CUDA;
 * graph.c calls it around its replay loop only. NOTE: not yet run on a GPU.
 *
 * Why a failed capture is harmless: a capture is tried only after a replay that moved no
 * variable's buffer and did not wait for the device (a "clean" replay). Then the capturing
 * replay changes no host state that the device work would have to match (no variable is
 * cloned; version counters move together), nothing of it runs on the device when the
 * capture fails, and the call simply replays again normally. */
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "tape.h"

enum { MAX_FAILURES = 3 };
static int64_t n_captures, n_launches, n_failed; /* debug counters (atomic) */
enum { WRITE_ASSIGN = 1, WRITE_UPDATE = 2 }; /* assigned by a node; updated by an optimizer step */

typedef struct {
    mp_variable *v;
    const void *value, *cache; /* data pointers */
    int64_t version, cache_version;
    int written;               /* WRITE_ASSIGN | WRITE_UPDATE: what the graph does to it */
} var_print;

struct mp_graph_capture {
    mp_device dev;
    int failures;          /* failed or invalidated captures; capture stops at MAX_FAILURES */
    int clean;             /* the last normal replay was clean (see the file comment) */
    void *exec;            /* the instantiated graph, or NULL */
    int relaunchable;
    mp_tensor **inputs;    /* (n_inputs) static buffers the captured graph reads */
    int n_vars;
    var_print *vars;       /* (n_vars) every variable the graph touches, as expected now */
    mp_optim_hparams *hp;  /* (n_nodes) per optimizer node: what the capture baked in */
    double *gs;            /* (n_nodes) */
    const void **out_src;  /* (n_outputs) where each output is after a launch (NULL: none) */
    /* (n_nodes) optimizer refresh callbacks, held back while capturing: they were called
     * just before, so no Python runs during a capture (no other thread can reach the GPU) */
    mp_status (**refresh)(void *ctx, mp_optim_hparams *hp, double *grad_scale);
};

static int disabled_by_env(void) {
    const char *e = getenv("MIXPREC_CUDA_GRAPHS");
    return e && (strcmp(e, "0") == 0 || strcmp(e, "off") == 0 || strcmp(e, "false") == 0);
}

void mp_graph_capture_invalidate(mp_graph *g) {
    mp_graph_capture *c = g->capture;
    if (!c || !c->exec)
        return;
    const mp_backend *be = mp_backend_get(c->dev.type);
    if (be && be->graph_destroy)
        be->graph_destroy(c->dev, c->exec);
    c->exec = NULL;
    c->clean = 0;
}

void mp_graph_capture_free(mp_graph *g) {
    mp_graph_capture *c = g->capture;
    if (!c)
        return;
    mp_graph_capture_invalidate(g);
    if (c->inputs)
        for (int i = 0; i < g->n_inputs; i++)
            mp_tensor_decref(c->inputs[i]);
    free(c->inputs);
    free(c->vars);
    free(c->hp);
    free(c->gs);
    free(c->out_src);
    free(c->refresh);
    free(c);
    g->capture = NULL;
}

/* The graph's one device, when everything it touches is on one device whose backend can
 * capture; 0 otherwise (the CPU, random ops, host callbacks, mixed devices). */
static int capturable(const mp_graph *g, int n_in, mp_tensor *const *in, mp_device *dev) {
    if (n_in < 1 && g->n_nodes == 0)
        return 0;
    if (g->polymorphic) /* replays take other shapes: static input buffers cannot */
        return 0;
    mp_device d = {-1, -1};
    for (int i = 0; i < g->n_nodes; i++) {
        const mp_gnode *n = &g->nodes[i];
        /* loops (graph_loop.c) run sub-graphs and host iterators: never captured */
        if (n->kind == MP_GNODE_HOST || n->kind == MP_GNODE_LOOP || n->kind == MP_GNODE_LOOP_OUT ||
            n->kind == MP_GNODE_CALL || n->kind == MP_GNODE_CALL_OUT || n->kind >= MP_GNODE_KIND_COUNT || (n->flags & MP_GNODE_FLAG_RANDOM))
            return 0;
        if (n->kind == MP_GNODE_OP && n->op == MP_OP_ALL_REDUCE) /* a collective: peers' timing */
            return 0;
        /* host values: a shape written from the stack, range bounds read back */
        if (n->kind == MP_GNODE_OP && (n->op == MP_OP_SHAPE || n->op == MP_OP_RANGE_T ||
                                         n->op == MP_OP_INDEX_T || n->op == MP_OP_STRIDED_SLICE_T ||
                                         n->op == MP_OP_SLICE_T || n->op == MP_OP_STRIDED_SLICE_T_GRAD ||
                                         n->op == MP_OP_GATHER || n->op == MP_OP_GATHER_GRAD ||
                                         /* the array ops: indices/values read, rows uploaded */
                                         n->op == MP_OP_GATHER_ND || n->op == MP_OP_UNIQUE ||
                                         n->op == MP_OP_WHERE_INDICES || n->op == MP_OP_REVERSE ||
                                         n->op == MP_OP_ROLL || (n->op >= MP_OP_TENSOR_SCATTER_UPDATE &&
                                                                  n->op <= MP_OP_TENSOR_SCATTER_MAX)))
            return 0;
        if (n->flags & MP_GNODE_FLAG_GUARD) /* a branch's effect: its predicate is read back */
            return 0;
        mp_device nd;
        if (n->kind == MP_GNODE_INPUT)
            nd = mp_tensor_device(in[n->input_index]);
        else if (n->kind == MP_GNODE_VAR_READ || n->kind == MP_GNODE_VAR_ASSIGN)
            nd = mp_tensor_device(n->var->value);
        else if (n->kind == MP_GNODE_OPTIM)
            continue; /* its variables are checked through the reads and the fingerprint */
        else if (n->kind == MP_GNODE_CONST)
            nd = mp_tensor_device(n->value);
        else if (n->kind == MP_GNODE_OP)
            nd = n->device;
        else /* a kind added after this file: not captured until it is looked at here */
            return 0;
        if (d.type < 0)
            d = nd;
        else if (!mp_device_eq(d, nd))
            return 0;
    }
    if (d.type != MP_DEV_CUDA)
        return 0;
    const mp_backend *be = mp_backend_get(d.type);
    if (!be || !be->graph_capture_begin || !be->graph_capture_end || !be->graph_launch || !be->graph_destroy)
        return 0;
    *dev = d;
    return 1;
}

static int add_var(var_print *vp, int n, mp_variable *v, int written) {
    if (!v)
        return n;
    for (int j = 0; j < n; j++)
        if (vp[j].v == v) {
            vp[j].written |= written;
            return n;
        }
    vp[n].v = v;
    vp[n].written = written;
    return n + 1;
}

static void take_print(var_print *p) {
    p->value = mp_tensor_data(p->v->value);
    p->cache = p->v->cast_cache ? mp_tensor_data(p->v->cast_cache) : NULL;
    p->version = p->v->version;
    p->cache_version = p->v->cache_version;
}

/* Every variable the graph touches, with its pointers and versions now. */
static mp_status fingerprint(const mp_graph *g, int *n_out, var_print **out) {
    int cap = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const mp_gnode *n = &g->nodes[i];
        if (n->kind == MP_GNODE_VAR_READ || n->kind == MP_GNODE_VAR_ASSIGN)
            cap++;
        else if (n->kind == MP_GNODE_OPTIM)
            cap += n->optim->n_vars + n->optim->n_slots + 4;
    }
    var_print *vp = calloc((size_t)(cap ? cap : 1), sizeof *vp);
    if (!vp)
        return mp_error_set(MP_ERR_MEMORY, "out of host memory checking a captured graph");
    int m = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const mp_gnode *n = &g->nodes[i];
        if (n->kind == MP_GNODE_VAR_READ)
            m = add_var(vp, m, n->var, 0);
        else if (n->kind == MP_GNODE_VAR_ASSIGN)
            m = add_var(vp, m, n->var, WRITE_ASSIGN);
        else if (n->kind == MP_GNODE_OPTIM) {
            const mp_goptim *o = n->optim;
            int per = o->n_vars ? o->n_slots / o->n_vars : 0;
            for (int k = 0; k < o->n_vars; k++) {
                int has_grad = n->in[k].node >= 0 ? WRITE_UPDATE : 0;
                m = add_var(vp, m, o->vars[k], has_grad);
                for (int s = 0; s < per; s++)
                    m = add_var(vp, m, o->slots[k * per + s], has_grad);
            }
            m = add_var(vp, m, o->iterations, WRITE_UPDATE);
            if (o->state)
                m = add_var(vp, m, o->state, WRITE_UPDATE);
            if (o->ls) {
                m = add_var(vp, m, o->ls->scale, WRITE_UPDATE);
                m = add_var(vp, m, o->ls->good_steps, WRITE_UPDATE);
            }
        }
    }
    for (int j = 0; j < m; j++)
        take_print(&vp[j]);
    *n_out = m;
    *out = vp;
    return MP_OK;
}

static int same_pointers(const var_print *a, const var_print *b, int n) {
    for (int j = 0; j < n; j++)
        if (a[j].v != b[j].v || a[j].value != b[j].value || a[j].cache != b[j].cache)
            return 0;
    return 1;
}

static int hp_equal(const mp_optim_hparams *a, const mp_optim_hparams *b) {
    return a->lr == b->lr && a->momentum == b->momentum && a->nesterov == b->nesterov && a->rho == b->rho &&
           a->epsilon == b->epsilon && a->centered == b->centered && a->beta_1 == b->beta_1 &&
           a->beta_2 == b->beta_2 && a->amsgrad == b->amsgrad && a->use_momentum == b->use_momentum &&
           a->use_weight_decay == b->use_weight_decay && a->weight_decay == b->weight_decay &&
           a->lr_power == b->lr_power && a->l1 == b->l1 && a->l2 == b->l2 && a->l2_shrinkage == b->l2_shrinkage &&
           a->beta == b->beta && a->schedule_decay == b->schedule_decay && a->eps_outside == b->eps_outside;
}

static mp_status ensure_state(mp_graph *g, mp_device dev) {
    if (g->capture)
        return MP_OK;
    mp_graph_capture *c = calloc(1, sizeof *c);
    if (!c)
        return mp_error_set(MP_ERR_MEMORY, "out of host memory for a graph's capture state");
    c->dev = dev;
    g->capture = c;
    return MP_OK;
}

/* A new tensor of (dt, shape) on dev holding a copy of the device memory at src. */
static mp_status copy_tensor(mp_dtype dt, int ndim, const int64_t *shape, mp_device dev, const void *src,
                             mp_tensor **out) {
    mp_tensor *t = NULL;
    MP_TRY(mp_tensor_new(dt, ndim, shape, dev, &t));
    size_t nbytes = (size_t)t->numel * mp_dtype_size(t->dtype);
    mp_status st = nbytes ? MP_BACKEND_CALL(mp_backend_get(dev.type), copy_d2d, dev, mp_tensor_data(t), src, nbytes)
                          : MP_OK;
    if (st != MP_OK) {
        mp_tensor_decref(t);
        return st;
    }
    *out = t;
    return MP_OK;
}

/* Launch the captured graph for this call, when everything it baked in still holds.
 * *handled = 0 (and the exec dropped when it no longer fits) otherwise. */
static mp_status try_launch(mp_graph *g, mp_graph_capture *c, mp_tensor *const *in, mp_tensor **outs,
                            int *handled) {
    const mp_backend *be = mp_backend_get(c->dev.type);
    int n = 0;
    var_print *now = NULL;
    MP_TRY(fingerprint(g, &n, &now));
    int ok = n == c->n_vars && same_pointers(now, c->vars, n);
    for (int j = 0; ok && j < n; j++)
        ok = now[j].version == c->vars[j].version && now[j].cache_version == c->vars[j].cache_version &&
             /* the graph writes in place: a buffer someone else holds must be cloned by a replay */
             (!now[j].written || (!mp_tensor_storage_shared(now[j].v->value) &&
                                  (!now[j].v->cast_cache || !mp_tensor_storage_shared(now[j].v->cast_cache))));
    free(now);
    mp_status st = MP_OK;
    for (int i = 0; ok && i < g->n_nodes; i++) { /* host hyperparameters, as a replay reads them */
        mp_gnode *nd = &g->nodes[i];
        if (nd->kind != MP_GNODE_OPTIM)
            continue;
        mp_goptim *o = nd->optim;
        if (o->refresh && (st = o->refresh(o->refresh_ctx, &o->hp, &o->grad_scale)) != MP_OK)
            return st;
        ok = hp_equal(&o->hp, &c->hp[i]) && o->grad_scale == c->gs[i];
    }
    if (!ok) { /* something moved: replay, and capture again after a clean replay */
        mp_graph_capture_invalidate(g);
        c->failures++;
        return MP_OK;
    }
    for (int k = 0; k < g->n_inputs; k++) {
        size_t nbytes = (size_t)in[k]->numel * mp_dtype_size(in[k]->dtype);
        if (nbytes)
            MP_TRY(MP_BACKEND_CALL(be, copy_d2d, c->dev, mp_tensor_data(c->inputs[k]), mp_tensor_data(in[k]), nbytes));
    }
    st = MP_BACKEND_CALL(be, graph_launch, c->dev, c->exec);
    if (st != MP_OK) {
        mp_error_clear();
        mp_graph_capture_invalidate(g);
        c->failures++;
        __atomic_add_fetch(&n_failed, 1, __ATOMIC_RELAXED);
        return MP_OK;
    }
    __atomic_add_fetch(&n_launches, 1, __ATOMIC_RELAXED);
    /* the host side of what ran: versions move as the replay's writes move them */
    for (int j = 0; j < c->n_vars; j++) {
        var_print *p = &c->vars[j];
        if (!p->written)
            continue;
        int synced = p->v->cache_version == p->v->version;
        p->v->version++;
        if (synced && p->cache && p->written == WRITE_UPDATE) /* the fused update rewrote the 16-bit copy */
            p->v->cache_version = p->v->version;
        take_print(p);
    }
    g->n_replays++;
    for (int o = 0; o < g->n_outputs && st == MP_OK; o++) {
        outs[o] = NULL;
        const mp_gedge e = g->outputs[o];
        if (e.node < 0 || !c->out_src[o])
            continue;
        const mp_gnode *nd = &g->nodes[e.node];
        st = copy_tensor(nd->dtype, nd->ndim, nd->shape, c->dev, c->out_src[o], &outs[o]);
    }
    if (st != MP_OK)
        for (int o = 0; o < g->n_outputs; o++) {
            mp_tensor_decref(outs[o]);
            outs[o] = NULL;
        }
    *handled = st == MP_OK;
    return st;
}

/* Before a capture: buffers of ops whose last output someone still holds (the caller's
 * results) are replaced by fresh ones, so the capturing replay allocates nothing that
 * would outlive it; the inputs get static buffers. */
static mp_status prepare_capture(mp_graph *g, mp_graph_capture *c, mp_tensor *const *in) {
    for (int i = 0; i < g->n_nodes; i++) {
        mp_storage *s = g->kept ? g->kept[i] : NULL;
        if (!s || __atomic_load_n(&s->refcount, __ATOMIC_ACQUIRE) == 1)
            continue;
        const mp_gnode *n = &g->nodes[i];
        mp_tensor *t = NULL;
        MP_TRY(mp_tensor_new(n->dtype, n->ndim, n->shape, n->device, &t));
        if (t->storage->nbytes != s->nbytes) { /* not the op's own buffer after all: leave it */
            mp_tensor_decref(t);
            continue;
        }
        mp_storage_incref(t->storage);
        mp_storage_decref(s);
        g->kept[i] = t->storage;
        mp_tensor_decref(t);
    }
    if (!c->inputs) {
        c->inputs = calloc((size_t)(g->n_inputs ? g->n_inputs : 1), sizeof *c->inputs);
        if (!c->inputs)
            return mp_error_set(MP_ERR_MEMORY, "out of host memory for a captured graph's inputs");
    }
    const mp_backend *be = mp_backend_get(c->dev.type);
    for (int k = 0; k < g->n_inputs; k++) {
        if (!c->inputs[k])
            MP_TRY(mp_tensor_new(in[k]->dtype, in[k]->ndim, in[k]->shape, c->dev, &c->inputs[k]));
        size_t nbytes = (size_t)in[k]->numel * mp_dtype_size(in[k]->dtype);
        if (nbytes)
            MP_TRY(MP_BACKEND_CALL(be, copy_d2d, c->dev, mp_tensor_data(c->inputs[k]), mp_tensor_data(in[k]), nbytes));
    }
    if (!c->hp) {
        c->hp = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *c->hp);
        c->gs = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *c->gs);
        c->out_src = calloc((size_t)(g->n_outputs ? g->n_outputs : 1), sizeof *c->out_src);
        c->refresh = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *c->refresh);
        if (!c->hp || !c->gs || !c->out_src || !c->refresh)
            return mp_error_set(MP_ERR_MEMORY, "out of host memory for a captured graph");
    }
    return MP_OK;
}

mp_status mp_graph_capture_pre(mp_graph *g, int n_in, mp_tensor *const *in, int n_sub, mp_tensor **outs,
                               mp_graph_capture_call *call) {
    memset(call, 0, sizeof *call);
    call->inputs = in;
    const mp_backend *cuda = mp_backend_get(MP_DEV_CUDA);
    if (!cuda || !cuda->graph_capture_begin) /* CPU-only: one test, nothing else */
        return MP_OK;
    /* gradients through the replay, an outer trace, swapped variables, an unplanned graph */
    if (n_sub || !g->kept || g->n_replays < 1 || mp_graph_recording() || mp_tape_recording() || disabled_by_env())
        return MP_OK;
    mp_device dev;
    if (!capturable(g, n_in, in, &dev))
        return MP_OK;
    MP_TRY(ensure_state(g, dev));
    mp_graph_capture *c = g->capture;
    if (!mp_device_eq(c->dev, dev) || c->failures >= MAX_FAILURES)
        return MP_OK;
    if (c->exec) {
        MP_TRY(try_launch(g, c, in, outs, &call->handled));
        if (call->handled)
            return MP_OK;
    }
    /* measure this replay: clean when no variable buffer moves and the host never waits */
    free(c->vars);
    c->vars = NULL;
    MP_TRY(fingerprint(g, &c->n_vars, &c->vars));
    MP_TRY(mp_device_host_syncs(dev, &call->syncs_before));
    call->measure = 1;
    if (!c->clean || c->exec)
        return MP_OK;
    MP_TRY(prepare_capture(g, c, in));
    for (int i = 0; i < g->n_nodes; i++) { /* host hyperparameters now, not during the capture */
        mp_goptim *o = g->nodes[i].kind == MP_GNODE_OPTIM ? g->nodes[i].optim : NULL;
        if (o && o->refresh)
            MP_TRY(o->refresh(o->refresh_ctx, &o->hp, &o->grad_scale));
    }
    const mp_backend *be = mp_backend_get(dev.type);
    if (MP_BACKEND_CALL(be, graph_capture_begin, dev) != MP_OK) {
        mp_error_clear();
        c->failures++;
        return MP_OK;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        mp_goptim *o = g->nodes[i].kind == MP_GNODE_OPTIM ? g->nodes[i].optim : NULL;
        c->refresh[i] = o ? o->refresh : NULL;
        if (o)
            o->refresh = NULL;
    }
    call->capturing = 1;
    call->inputs = c->inputs;
    return MP_OK;
}

mp_status mp_graph_capture_post(mp_graph *g, mp_status st, mp_tensor **vals, mp_graph_capture_call *call) {
    mp_graph_capture *c = g->capture;
    if (!call->measure)
        return st;
    const mp_backend *be = mp_backend_get(c->dev.type);
    if (!call->capturing) {
        int64_t syncs = -1;
        int n = 0;
        var_print *after = NULL;
        c->clean = 0;
        if (st == MP_OK && mp_device_host_syncs(c->dev, &syncs) == MP_OK && fingerprint(g, &n, &after) == MP_OK)
            c->clean = syncs == call->syncs_before && n == c->n_vars && same_pointers(after, c->vars, n);
        free(after);
        return st;
    }
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].kind == MP_GNODE_OPTIM)
            g->nodes[i].optim->refresh = c->refresh[i];
    void *exec = NULL;
    int relaunchable = 0;
    mp_status end = MP_BACKEND_CALL(be, graph_capture_end, c->dev, &exec, &relaunchable);
    if (st != MP_OK || end != MP_OK) { /* nothing ran: the caller replays normally */
        if (exec)
            be->graph_destroy(c->dev, exec);
        mp_error_clear();
        c->failures++;
        c->clean = 0;
        call->retry = 1;
        __atomic_add_fetch(&n_failed, 1, __ATOMIC_RELAXED);
        return MP_OK;
    }
    st = MP_BACKEND_CALL(be, graph_launch, c->dev, exec);
    if (st != MP_OK) {
        be->graph_destroy(c->dev, exec);
        return st; /* the graph was whole and valid: a launch failure is the device's error */
    }
    __atomic_add_fetch(&n_captures, 1, __ATOMIC_RELAXED);
    /* what a relaunch reads back: each output where this launch left it */
    for (int o = 0; o < g->n_outputs; o++) {
        const mp_gedge e = g->outputs[o];
        c->out_src[o] = e.node >= 0 && vals[e.node] ? mp_tensor_data(vals[e.node]) : NULL;
    }
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].kind == MP_GNODE_OPTIM) {
            c->hp[i] = g->nodes[i].optim->hp;
            c->gs[i] = g->nodes[i].optim->grad_scale;
        }
    /* the caller keeps copies: the graph's own buffers are rewritten by the next launch */
    for (int o = 0; o < g->n_outputs && st == MP_OK; o++) {
        const mp_gedge e = g->outputs[o];
        if (e.node < 0 || !vals[e.node])
            continue;
        mp_tensor *copy = NULL;
        const mp_tensor *v = vals[e.node];
        st = copy_tensor(v->dtype, v->ndim, v->shape, c->dev, mp_tensor_data(v), &copy);
        if (st == MP_OK) {
            mp_tensor_decref(vals[e.node]);
            vals[e.node] = copy;
        }
    }
    int n = 0;
    var_print *after = NULL;
    mp_status fs = fingerprint(g, &n, &after);
    int stable = fs == MP_OK && n == c->n_vars && same_pointers(after, c->vars, n);
    if (stable && relaunchable) {
        free(c->vars);
        c->vars = after;
        c->exec = exec;
        c->relaunchable = 1;
    } else { /* ran once, as this call's replay; not again */
        free(after);
        be->graph_destroy(c->dev, exec);
        c->failures++;
        c->clean = 0;
    }
    return st != MP_OK ? st : fs;
}

void mp_graph_capture_counts(int64_t *captures, int64_t *launches, int64_t *failed) {
    *captures = __atomic_load_n(&n_captures, __ATOMIC_RELAXED);
    *launches = __atomic_load_n(&n_launches, __ATOMIC_RELAXED);
    *failed = __atomic_load_n(&n_failed, __ATOMIC_RELAXED);
}

int mp_graph_capture_info(const mp_graph *g, int *failures, int *clean) {
    const mp_graph_capture *c = g->capture;
    *failures = c ? c->failures : 0;
    *clean = c ? c->clean : 0;
    return c && c->exec ? 1 : 0;
}
