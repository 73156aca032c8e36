/* graph.c — recording a traced function's nodes and replaying them (graph.h).
 * Owns the per-thread recording slot, the tensor-id -> node map, pruning, dtype
 * inference for passes, the replay plan (last uses, kept buffers, the unscale fold) and
 * the replay loop. Replay calls the core's own entry points
 * (mp_op_exec / mp_op_run, mp_variable_read/assign, mp_optimizer_apply), so it shares
 * validation and dispatch with eager execution; it must not compute anything itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "tape.h"

enum {
    FLAG_DYNAMIC = 1 << 8,    /* value depends on inputs, variables, random ops or steps */
    FLAG_SHAPE_ONLY = 1 << 9, /* dynamic only through Shape ops: a function of the shapes a
                               * graph is specialised to, so a host read bakes it in (counted in
                               * shape_reads) instead of breaking the graph */
    FLAG_VALUE_SHAPED = 1 << 10, /* its shape may follow the values of a tensor-bound slice's
                                  * spec (STRIDED_SLICE_T, SLICE_T): replays may change it */
};

/* ------------------------------------------------------------------ id map */

typedef struct {
    int64_t *keys; /* 0 = empty (ids start at 1) */
    int32_t *vals;
    size_t cap, n;
} idmap;

static size_t hash_id(int64_t k) { return (size_t)((uint64_t)k * 0x9E3779B97F4A7C15ull >> 17); }

static int32_t idmap_get(const idmap *m, int64_t k) {
    if (!m || !m->cap)
        return -1;
    for (size_t i = hash_id(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == k)
            return m->vals[i];
        if (m->keys[i] == 0)
            return -1;
    }
}

static mp_status idmap_put(idmap *m, int64_t k, int32_t v) {
    if ((m->n + 1) * 2 > m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 256;
        int64_t *nk = calloc(ncap, sizeof *nk);
        int32_t *nv = calloc(ncap, sizeof *nv);
        if (!nk || !nv) {
            free(nk);
            free(nv);
            return mp_error_set(MP_ERR_MEMORY, "out of host memory growing a graph's tensor map");
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->keys[i])
                continue;
            size_t j = hash_id(m->keys[i]) & (ncap - 1);
            while (nk[j])
                j = (j + 1) & (ncap - 1);
            nk[j] = m->keys[i];
            nv[j] = m->vals[i];
        }
        free(m->keys);
        free(m->vals);
        m->keys = nk;
        m->vals = nv;
        m->cap = ncap;
    }
    size_t i = hash_id(k) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != k)
        i = (i + 1) & (m->cap - 1);
    if (!m->keys[i])
        m->n++;
    m->keys[i] = k;
    m->vals[i] = v;
    return MP_OK;
}

static void idmap_free(idmap *m) {
    if (!m)
        return;
    free(m->keys);
    free(m->vals);
    free(m);
}

/* ------------------------------------------------------------------ graph */

static _Thread_local mp_graph *rec;

mp_graph *mp_graph_recording(void) { return rec; }
int mp_graph_dry(void) { return rec && rec->dry; }
int mp_graph_effects_dry(void) { return rec && (rec->dry || rec->effects_dry); }

mp_graph *mp_graph_swap(mp_graph *g) {
    mp_graph *prev = rec;
    rec = g;
    return prev;
}

mp_status mp_graph_new(mp_graph **out) {
    mp_graph *g = calloc(1, sizeof *g);
    if (!g)
        return mp_error_set(MP_ERR_MEMORY, "out of host memory allocating a graph");
    *out = g;
    return MP_OK;
}

static void goptim_free(mp_goptim *o) {
    if (!o)
        return;
    for (int i = 0; i < o->n_vars; i++)
        mp_variable_decref(o->vars[i]);
    for (int i = 0; i < o->n_slots; i++)
        mp_variable_decref(o->slots[i]);
    mp_variable_decref(o->iterations);
    mp_variable_decref(o->state);
    free(o->no_decay);
    mp_loss_scale_decref(o->ls);
    if (o->refresh_free)
        o->refresh_free(o->refresh_ctx);
    free(o->vars);
    free(o->slots);
    free(o);
}

static void node_clear(mp_gnode *n) {
    free(n->in);
    mp_tensor_decref(n->value);
    mp_variable_decref(n->var);
    goptim_free(n->optim);
    if (n->host.free)
        n->host.free(n->host.ctx);
    mp_gloop_free(n->loop);
    mp_gcall_free(n->call);
    memset(n, 0, sizeof *n);
}

static void kept_clear(mp_graph *g) {
    mp_graph_capture_invalidate(g); /* a captured graph writes into these buffers */
    if (!g->kept)
        return;
    for (int i = 0; i < g->n_nodes; i++)
        mp_storage_decref(g->kept[i]);
    free(g->kept);
    g->kept = NULL;
}

void mp_graph_free(mp_graph *g) {
    if (!g)
        return;
    kept_clear(g);
    mp_graph_capture_free(g);
    if (rec == g)
        rec = g->parent;
    for (int i = 0; i < g->n_nodes; i++)
        node_clear(&g->nodes[i]);
    for (int i = 0; i < g->n_captured; i++)
        mp_tensor_decref(g->captured[i]);
    free(g->captured);
    free(g->nodes);
    free(g->inputs);
    free(g->outputs);
    idmap_free(g->id_map);
    free(g);
}

static mp_status push_node(mp_graph *g, mp_gnode_kind kind, int n_in, int32_t *idx) {
    if (g->n_nodes == g->cap_nodes) {
        int ncap = g->cap_nodes ? g->cap_nodes * 2 : 64;
        mp_gnode *nn = realloc(g->nodes, (size_t)ncap * sizeof *nn);
        if (!nn)
            return mp_error_set(MP_ERR_MEMORY, "out of host memory growing a graph to %d nodes", ncap);
        g->nodes = nn;
        g->cap_nodes = ncap;
    }
    mp_gnode *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->read_dtype = -1;
    n->input_index = -1;
    if (n_in > 0) {
        n->in = calloc((size_t)n_in, sizeof *n->in);
        if (!n->in)
            return mp_error_set(MP_ERR_MEMORY, "out of host memory recording a graph node");
    }
    n->n_in = n_in;
    *idx = g->n_nodes++;
    return MP_OK;
}

static void set_out(mp_gnode *n, const mp_tensor *t) {
    n->n_out = 1;
    n->dtype = t->dtype;
    n->ndim = t->ndim;
    memcpy(n->shape, t->shape, sizeof n->shape);
    n->device = mp_tensor_device(t);
}

static mp_status map_out(mp_graph *g, const mp_tensor *t, int32_t idx) {
    if (!g->id_map) {
        g->id_map = calloc(1, sizeof(idmap));
        if (!g->id_map)
            return mp_error_set(MP_ERR_MEMORY, "out of host memory for a graph's tensor map");
    }
    return idmap_put(g->id_map, t->id, idx);
}

/* The graph among g's ancestors (g excluded) that records t, and t's node there. */
static mp_graph *ancestor_of(const mp_graph *g, const mp_tensor *t, int32_t *idx) {
    for (mp_graph *p = g->parent; p; p = p->parent) {
        *idx = idmap_get(p->id_map, t->id);
        if (*idx >= 0)
            return p;
    }
    return NULL;
}

/* t computed by an enclosing graph from its inputs, variables, steps or random ops: the
 * sub-graph g reads it as one more input (a capture), fed by the loop node. */
static mp_status capture(mp_graph *g, mp_tensor *t, int32_t *idx) {
    mp_tensor **nc = realloc(g->captured, (size_t)(g->n_captured + 1) * sizeof *nc);
    if (!nc)
        return mp_error_set(MP_ERR_MEMORY, "out of host memory capturing a tensor into a loop");
    g->captured = nc;
    MP_TRY(mp_graph_add_input(g, t));
    mp_tensor_incref(t);
    g->captured[g->n_captured++] = t;
    *idx = g->inputs[g->n_inputs - 1];
    return MP_OK;
}

/* The edge producing t: its node, a capture from an enclosing graph, or a new CONST node
 * holding t. */
static mp_status edge_of(mp_graph *g, mp_tensor *t, mp_gedge *e) {
    if (!t) {
        e->node = -1;
        e->output = 0;
        return MP_OK;
    }
    int32_t idx = idmap_get(g->id_map, t->id), pidx;
    mp_graph *p = idx < 0 && g->parent ? ancestor_of(g, t, &pidx) : NULL;
    if (p && (p->nodes[pidx].flags & FLAG_DYNAMIC)) {
        MP_TRY(capture(g, t, &idx));
        g->nodes[idx].flags |= p->nodes[pidx].flags & (FLAG_SHAPE_ONLY | FLAG_VALUE_SHAPED);
    }
    if (idx < 0) {
        MP_TRY(push_node(g, MP_GNODE_CONST, 0, &idx));
        mp_gnode *n = &g->nodes[idx];
        mp_tensor_incref(t);
        n->value = t;
        set_out(n, t);
        MP_TRY(map_out(g, t, idx));
    }
    e->node = idx;
    e->output = 0;
    return MP_OK;
}

static int node_dynamic(const mp_graph *g, const mp_gnode *n) {
    for (int k = 0; k < n->n_in; k++)
        if (n->in[k].node >= 0 && (g->nodes[n->in[k].node].flags & FLAG_DYNAMIC))
            return 1;
    return 0;
}

mp_status mp_graph_begin(mp_graph *g, int dry) {
    if (rec)
        return mp_error_set(MP_ERR_INTERNAL, "a graph is already recording on this thread");
    g->dry = dry;
    g->effects_dry = 0;
    g->broken = 0;
    g->break_reason[0] = 0;
    g->n_created_vars = 0;
    rec = g;
    return MP_OK;
}

mp_status mp_graph_begin_sub(mp_graph *g) {
    if (!rec)
        return mp_error_set(MP_ERR_INTERNAL, "a loop's sub-graph records only inside a recording graph");
    g->parent = rec;
    g->dry = rec->dry;
    g->effects_dry = rec->effects_dry;
    g->broken = 0;
    g->break_reason[0] = 0;
    g->n_created_vars = 0;
    rec = g;
    return MP_OK;
}

void mp_graph_abort(mp_graph *g) {
    if (rec == g)
        rec = g->parent;
    g->parent = NULL;
}

mp_status mp_graph_add_input(mp_graph *g, mp_tensor *x) {
    int32_t idx = -1;
    int32_t *ni = realloc(g->inputs, (size_t)(g->n_inputs + 1) * sizeof *ni);
    if (!ni)
        return mp_error_set(MP_ERR_MEMORY, "out of host memory adding a graph input");
    g->inputs = ni;
    MP_TRY(push_node(g, MP_GNODE_INPUT, 0, &idx));
    mp_gnode *n = &g->nodes[idx];
    n->input_index = g->n_inputs;
    n->flags |= FLAG_DYNAMIC;
    set_out(n, x);
    g->inputs[g->n_inputs++] = idx;
    return map_out(g, x, idx);
}

mp_status mp_graph_add_output(mp_graph *g, mp_tensor *x) {
    mp_gedge *no = realloc(g->outputs, (size_t)(g->n_outputs + 1) * sizeof *no);
    if (!no)
        return mp_error_set(MP_ERR_MEMORY, "out of host memory adding a graph output");
    g->outputs = no;
    mp_gedge e;
    MP_TRY(edge_of(g, x, &e));
    g->outputs[g->n_outputs++] = e;
    return MP_OK;
}

static int is_random(mp_op op) {
    return op == MP_OP_RANDOM_UNIFORM || op == MP_OP_RANDOM_NORMAL || op == MP_OP_TRUNCATED_NORMAL;
}

/* Ops whose attributes hold sizes taken from shapes at trace time (a reshape's target, a
 * gradient's broadcast, a static slice, a fill, a window's pads): fed by a value-shaped
 * tensor, a replay at other slice bounds would use the traced sizes. */
static int bakes_shapes(mp_op op) {
    switch (op) {
    case MP_OP_RESHAPE:
    case MP_OP_BROADCAST_TO:
    case MP_OP_FILL:
    case MP_OP_RANGE:
    case MP_OP_STRIDED_SLICE:
    case MP_OP_STRIDED_SLICE_GRAD:
    case MP_OP_GATHER_GRAD:
    case MP_OP_RANDOM_UNIFORM:
    case MP_OP_RANDOM_NORMAL:
    case MP_OP_TRUNCATED_NORMAL:
    case MP_OP_CONV2D:
    case MP_OP_CONV2D_BACKPROP_INPUT:
    case MP_OP_CONV2D_BACKPROP_FILTER:
    case MP_OP_CONV2D_BIAS_ACT:
    case MP_OP_MAX_POOL:
    case MP_OP_MAX_POOL_GRAD:
    case MP_OP_MAX_POOL_GRAD_GRAD:
    case MP_OP_AVG_POOL:
    case MP_OP_AVG_POOL_GRAD:
    case MP_OP_BATCH_NORM:
    case MP_OP_ALL_REDUCE: return 1;
    default: return 0;
    }
}

/* Value shapes: a tensor-bound slice's output, and what is computed from a value-shaped
 * tensor (a Shape op's output has the rank's size; a slice gradient has x's shape). A
 * value-shaped input to an op that bakes sizes marks the graph value_baked: its replays
 * then check the slices' shapes (mp_graph_run_with). */
static void note_value_shaped(mp_graph *g, mp_gnode *n) {
    /* a size baked from a shape a backward rule read (a fill of IN(0)'s shape) is not an
     * edge: any baking op next to a tensor-bound slice makes replays check (and a second
     * recording that shows nothing was baked switches the checks off, _function.py) */
    if (bakes_shapes(n->op))
        g->value_baked |= MP_GRAPH_VALUE_BAKES;
    int vs = n->op == MP_OP_STRIDED_SLICE_T || n->op == MP_OP_SLICE_T;
    if (vs)
        g->value_baked |= MP_GRAPH_VALUE_SLICE;
    for (int k = 0; k < n->n_in && !vs; k++) {
        if (n->op == MP_OP_SHAPE || (n->op == MP_OP_STRIDED_SLICE_T_GRAD && k != 1))
            continue;
        const mp_gnode *s = n->in[k].node >= 0 ? &g->nodes[n->in[k].node] : NULL;
        vs = s && (s->flags & FLAG_VALUE_SHAPED);
    }
    if (!vs)
        return;
    n->flags |= FLAG_VALUE_SHAPED;
    if (n->op != MP_OP_STRIDED_SLICE_T && n->op != MP_OP_SLICE_T && bakes_shapes(n->op))
        g->value_baked |= MP_GRAPH_VALUE_READ;
}

mp_status mp_graph_record_op(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at, mp_tensor *out) {
    mp_graph *g = rec;
    if (!g)
        return MP_OK;
    int32_t idx = -1;
    mp_gedge stack[16], *tmp = n_in <= 16 ? stack : malloc((size_t)n_in * sizeof *tmp);
    if (!tmp)
        return mp_error_set(MP_ERR_MEMORY, "out of host memory recording %s", mp_op_get_info(op)->name);
    mp_status st = MP_OK;
    for (int k = 0; k < n_in && st == MP_OK; k++)
        st = edge_of(g, in[k], &tmp[k]);
    if (st == MP_OK)
        st = push_node(g, MP_GNODE_OP, n_in, &idx);
    if (st == MP_OK && n_in > 0)
        memcpy(g->nodes[idx].in, tmp, (size_t)n_in * sizeof *tmp);
    if (tmp != stack)
        free(tmp);
    MP_TRY(st);
    mp_gnode *n = &g->nodes[idx];
    n->op = op;
    if (at)
        n->attrs = *at;
    set_out(n, out);
    if (is_random(op))
        n->flags |= MP_GNODE_FLAG_RANDOM | FLAG_DYNAMIC;
    else if (node_dynamic(g, n)) {
        n->flags |= FLAG_DYNAMIC;
        int shape_only = 1; /* every dynamic input is a shape's */
        for (int k = 0; k < n->n_in && shape_only; k++) {
            const mp_gnode *s = n->in[k].node >= 0 ? &g->nodes[n->in[k].node] : NULL;
            if (s && (s->flags & FLAG_DYNAMIC) && !(s->flags & FLAG_SHAPE_ONLY))
                shape_only = op == MP_OP_SHAPE;
        }
        if (shape_only)
            n->flags |= FLAG_SHAPE_ONLY;
    }
    note_value_shaped(g, n);
    return map_out(g, out, idx);
}

mp_status mp_graph_record_read(mp_variable *v, int read_dtype, mp_tensor *out) {
    mp_graph *g = rec;
    if (!g)
        return MP_OK;
    int32_t idx = -1;
    MP_TRY(push_node(g, MP_GNODE_VAR_READ, 0, &idx));
    mp_gnode *n = &g->nodes[idx];
    mp_variable_incref(v);
    n->var = v;
    n->read_dtype = read_dtype;
    n->flags |= FLAG_DYNAMIC;
    set_out(n, out);
    return map_out(g, out, idx);
}

mp_status mp_graph_record_assign(mp_variable *v, mp_tensor *x) {
    mp_graph *g = rec;
    if (!g)
        return MP_OK;
    mp_gedge e;
    int32_t idx = -1;
    MP_TRY(edge_of(g, x, &e));
    MP_TRY(push_node(g, MP_GNODE_VAR_ASSIGN, 1, &idx));
    mp_gnode *n = &g->nodes[idx];
    n->in[0] = e;
    mp_variable_incref(v);
    n->var = v;
    n->flags |= MP_GNODE_FLAG_EFFECT;
    return MP_OK;
}

static mp_status goptim_copy(const mp_goptim *o, mp_goptim **out) {
    mp_goptim *c = calloc(1, sizeof *c);
    if (!c)
        return mp_error_set(MP_ERR_MEMORY, "out of host memory recording an optimizer step");
    *c = *o;
    c->vars = calloc((size_t)(o->n_vars ? o->n_vars : 1), sizeof *c->vars);
    c->slots = calloc((size_t)(o->n_slots ? o->n_slots : 1), sizeof *c->slots);
    if (!c->vars || !c->slots) {
        free(c->vars);
        free(c->slots);
        free(c);
        return mp_error_set(MP_ERR_MEMORY, "out of host memory recording an optimizer step");
    }
    for (int i = 0; i < o->n_vars; i++) {
        c->vars[i] = o->vars[i];
        mp_variable_incref(c->vars[i]);
    }
    for (int i = 0; i < o->n_slots; i++) {
        c->slots[i] = o->slots[i];
        mp_variable_incref(c->slots[i]);
    }
    mp_variable_incref(c->iterations);
    if (c->state)
        mp_variable_incref(c->state);
    c->no_decay = NULL;
    if (o->no_decay) {
        c->no_decay = malloc((size_t)(o->n_vars ? o->n_vars : 1));
        if (!c->no_decay) {
            c->refresh_free = NULL;
            c->ls = NULL;
            goptim_free(c); /* drops the references taken above */
            return mp_error_set(MP_ERR_MEMORY, "out of host memory recording an optimizer step");
        }
        memcpy(c->no_decay, o->no_decay, (size_t)o->n_vars);
    }
    if (c->ls)
        mp_loss_scale_incref(c->ls);
    c->refresh = NULL;
    c->refresh_ctx = NULL;
    c->refresh_free = NULL;
    *out = c;
    return MP_OK;
}

int mp_graph_record_optim(const mp_goptim *o, mp_tensor *const *grads, mp_tensor *found_inf) {
    mp_graph *g = rec;
    if (!g)
        return -1;
    mp_gedge *tmp = calloc((size_t)(o->n_vars ? o->n_vars : 1), sizeof *tmp);
    if (!tmp) {
        mp_error_set(MP_ERR_MEMORY, "out of host memory recording an optimizer step");
        return -2;
    }
    for (int k = 0; k < o->n_vars; k++)
        if (edge_of(g, grads[k], &tmp[k]) != MP_OK) {
            free(tmp);
            return -2;
        }
    int32_t idx = -1;
    mp_goptim *c = NULL;
    if (goptim_copy(o, &c) != MP_OK || push_node(g, MP_GNODE_OPTIM, 0, &idx) != MP_OK) {
        free(tmp);
        return -2;
    }
    mp_gnode *n = &g->nodes[idx];
    n->in = tmp;
    n->n_in = o->n_vars;
    n->optim = c;
    n->flags |= MP_GNODE_FLAG_EFFECT | FLAG_DYNAMIC;
    if (found_inf) {
        set_out(n, found_inf);
        if (map_out(g, found_inf, idx) != MP_OK)
            return -2;
    }
    return idx;
}

mp_status mp_graph_guard_effects(mp_graph *g, int from, mp_tensor *pred, int neg) {
    if (!g || !pred || from < 0)
        return mp_error_set(MP_ERR_VALUE, "guard_effects: no graph, predicate or start");
    if (pred->dtype != MP_BOOL || pred->numel != 1)
        return mp_error_set(MP_ERR_VALUE, "guard_effects: the predicate must be a boolean scalar, got %s with %lld "
                            "elements", mp_dtype_name(pred->dtype), (long long)pred->numel);
    for (int i = from; i < g->n_nodes; i++) {
        const mp_gnode *n = &g->nodes[i];
        if (!(n->flags & MP_GNODE_FLAG_EFFECT))
            continue;
        if ((n->kind != MP_GNODE_VAR_ASSIGN && n->kind != MP_GNODE_HOST && n->kind != MP_GNODE_CALL) ||
            (n->flags & MP_GNODE_FLAG_GUARD))
            return mp_error_set(MP_ERR_VALUE, "guard_effects: node %d (kind %d) cannot be gated", i, (int)n->kind);
    }
    mp_gedge e;
    MP_TRY(edge_of(g, pred, &e)); /* (a capture of the parent's predicate in a sub-graph) */
    for (int i = from; i < g->n_nodes; i++) {
        mp_gnode *n = &g->nodes[i];
        if (!(n->flags & MP_GNODE_FLAG_EFFECT))
            continue;
        mp_gedge *in = realloc(n->in, (size_t)(n->n_in + 1) * sizeof *in);
        if (!in)
            return mp_error_set(MP_ERR_MEMORY, "out of host memory gating a side effect");
        in[n->n_in] = e;
        n->in = in;
        n->n_in++;
        n->flags |= MP_GNODE_FLAG_GUARD | (neg ? MP_GNODE_FLAG_GUARD_NEG : 0);
    }
    return MP_OK;
}

mp_status mp_graph_record_host(mp_ghost host, int n_in, mp_tensor *const *in) {
    mp_graph *g = rec;
    if (!g) {
        if (host.free)
            host.free(host.ctx);
        return MP_OK;
    }
    mp_gedge *tmp = calloc((size_t)(n_in ? n_in : 1), sizeof *tmp);
    if (!tmp)
        return mp_error_set(MP_ERR_MEMORY, "out of host memory recording a host callback");
    mp_status st = MP_OK;
    for (int k = 0; k < n_in && st == MP_OK; k++)
        st = edge_of(g, in[k], &tmp[k]);
    int32_t idx = -1;
    if (st == MP_OK)
        st = push_node(g, MP_GNODE_HOST, 0, &idx);
    if (st != MP_OK) {
        free(tmp);
        if (host.free)
            host.free(host.ctx);
        return st;
    }
    mp_gnode *n = &g->nodes[idx];
    n->in = tmp;
    n->n_in = n_in;
    n->host = host;
    n->flags |= MP_GNODE_FLAG_EFFECT;
    return MP_OK;
}

void mp_gcall_free(mp_gcall *c) {
    if (!c)
        return;
    for (int k = 0; c->results && k < c->n_out; k++)
        mp_tensor_decref(c->results[k]);
    if (c->free)
        c->free(c->ctx);
    free(c->results);
    free(c->dtypes);
    free(c->ndims);
    free(c->shapes);
    free(c->devices);
    free(c);
}

void mp_graph_note_python_grad(void) {
    for (mp_graph *g = rec; g; g = g->parent)
        g->python_grads++;
}

mp_status mp_graph_record_call(mp_gcall *c, int n_in, mp_tensor *const *in, mp_tensor *const *outs) {
    mp_graph *g = rec;
    if (!g) {
        mp_gcall_free(c);
        return MP_OK;
    }
    size_t no = (size_t)(c->n_out ? c->n_out : 1);
    if (!c->results)
        c->results = calloc(no, sizeof *c->results);
    free(c->ndims);
    free(c->shapes);
    free(c->devices);
    c->ndims = calloc(no, sizeof *c->ndims);
    c->shapes = calloc(no * MP_MAX_DIMS, sizeof *c->shapes);
    c->devices = calloc(no, sizeof *c->devices);
    mp_gedge *tmp = calloc((size_t)(n_in ? n_in : 1), sizeof *tmp);
    if (!tmp || !c->results || !c->ndims || !c->shapes || !c->devices) {
        free(tmp);
        mp_gcall_free(c);
        return mp_error_set(MP_ERR_MEMORY, "out of host memory recording a host call");
    }
    for (int k = 0; k < c->n_out; k++) {
        c->ndims[k] = outs[k]->ndim;
        c->devices[k] = mp_tensor_device(outs[k]);
        memcpy(&c->shapes[(size_t)k * MP_MAX_DIMS], outs[k]->shape, sizeof(int64_t) * (size_t)outs[k]->ndim);
    }
    mp_status st = MP_OK;
    for (int k = 0; k < n_in && st == MP_OK; k++)
        st = edge_of(g, in[k], &tmp[k]);
    int32_t idx = -1;
    if (st == MP_OK)
        st = push_node(g, MP_GNODE_CALL, 0, &idx);
    if (st != MP_OK) {
        free(tmp);
        mp_gcall_free(c);
        return st;
    }
    mp_gnode *n = &g->nodes[idx];
    n->in = tmp;
    n->n_in = n_in;
    n->call = c;
    n->flags |= MP_GNODE_FLAG_EFFECT | FLAG_DYNAMIC;
    for (int k = 0; k < c->n_out; k++) {
        int32_t o;
        MP_TRY(push_node(g, MP_GNODE_CALL_OUT, 1, &o));
        mp_gnode *out = &g->nodes[o];
        out->in[0].node = idx;
        out->in[0].output = k;
        out->flags |= FLAG_DYNAMIC;
        set_out(out, outs[k]);
        MP_TRY(map_out(g, outs[k], o));
    }
    mp_graph_note_python_grad();
    return MP_OK;
}

void mp_graph_note_variable_created(void) {
    if (rec)
        rec->n_created_vars++;
}

/* A break inside a loop's sub-graph breaks every enclosing graph: the function runs
 * eagerly. */
static void break_chain(mp_graph *g, const char *reason) {
    for (; g; g = g->parent) {
        g->broken = 1;
        snprintf(g->break_reason, sizeof g->break_reason, "%s", reason);
    }
}

int mp_graph_break(const char *reason) {
    mp_graph *g = rec;
    if (!g || g->broken)
        return 0;
    break_chain(g, reason);
    return 1;
}

/* x's node in the recording graph or its ancestors (NULL when none records x). */
static const mp_gnode *node_of(const mp_graph *g, const mp_tensor *x) {
    int32_t idx = idmap_get(g->id_map, x->id);
    if (idx >= 0)
        return &g->nodes[idx];
    const mp_graph *p = g->parent ? ancestor_of(g, x, &idx) : NULL;
    return p ? &p->nodes[idx] : NULL;
}

int mp_graph_is_dynamic(const mp_tensor *x) {
    mp_graph *g = rec;
    if (!g || !x)
        return 0;
    const mp_gnode *n = node_of(g, x);
    return n && (n->flags & FLAG_DYNAMIC);
}

int mp_graph_is_value_shaped(const mp_tensor *x) {
    mp_graph *g = rec;
    if (!g || !x)
        return 0;
    const mp_gnode *n = node_of(g, x);
    return n && (n->flags & FLAG_VALUE_SHAPED);
}

int mp_graph_note_host_read(const mp_tensor *x, const char *what) {
    mp_graph *g = rec;
    if (!g || g->broken || !x)
        return 0;
    const mp_gnode *n = node_of(g, x);
    if (!n || !(n->flags & FLAG_DYNAMIC))
        return 0;
    if (n->flags & FLAG_SHAPE_ONLY) { /* tf.zeros(tf.shape(x)): the traced shape, baked in */
        for (mp_graph *q = g; q; q = q->parent)
            q->shape_reads++;
        return 0;
    }
    const char *src = n->kind == MP_GNODE_OP ? mp_op_get_info(n->op)->name
                      : n->kind == MP_GNODE_INPUT ? "an input"
                      : n->kind == MP_GNODE_VAR_READ ? "a variable read"
                      : n->kind == MP_GNODE_LOOP_OUT ? "a loop"
                      : n->kind == MP_GNODE_CALL_OUT ? "a host call (tf.py_function)"
                                                      : "an optimizer step";
    char reason[sizeof g->break_reason];
    snprintf(reason, sizeof reason, "%s of a traced tensor (the output of %s)", what, src);
    break_chain(g, reason);
    return 1;
}

mp_status mp_graph_record_loop(mp_gloop *l, int n_in, mp_tensor *const *in, mp_tensor *const *outs) {
    mp_graph *g = rec;
    if (!g) {
        mp_gloop_free(l);
        return MP_OK;
    }
    mp_gedge *tmp = calloc((size_t)(n_in ? n_in : 1), sizeof *tmp);
    if (!tmp) {
        mp_gloop_free(l);
        return mp_error_set(MP_ERR_MEMORY, "out of host memory recording a loop");
    }
    mp_status st = MP_OK;
    for (int k = 0; k < n_in && st == MP_OK; k++)
        st = edge_of(g, in[k], &tmp[k]);
    int32_t idx = -1;
    if (st == MP_OK)
        st = push_node(g, MP_GNODE_LOOP, 0, &idx);
    if (st != MP_OK) {
        free(tmp);
        mp_gloop_free(l);
        return st;
    }
    mp_gnode *n = &g->nodes[idx];
    n->in = tmp;
    n->n_in = n_in;
    n->loop = l;
    /* a loop has effects when a sub-graph has (writes, steps, prints) or it pulls a
     * dataset's elements; one without can be pruned, and selected by a traced if */
    int effects = l->src == MP_GLOOP_SRC_HOST;
    for (int b = -1; b < l->n_bodies && !effects; b++) {
        const mp_graph *sg = b < 0 ? l->cond : l->bodies[b];
        for (int i = 0; sg && i < sg->n_nodes && !effects; i++)
            effects = (sg->nodes[i].flags & MP_GNODE_FLAG_EFFECT) != 0;
    }
    n->flags |= FLAG_DYNAMIC | (effects ? MP_GNODE_FLAG_EFFECT : 0);
    for (int k = 0; k < l->n_carried; k++) {
        int32_t o;
        MP_TRY(push_node(g, MP_GNODE_LOOP_OUT, 1, &o));
        mp_gnode *out = &g->nodes[o];
        out->in[0].node = idx;
        out->in[0].output = k;
        out->flags |= FLAG_DYNAMIC;
        set_out(out, outs[k]);
        MP_TRY(map_out(g, outs[k], o));
    }
    return MP_OK;
}

/* ------------------------------------------------------------------ end: prune, last uses */

/* The replay plan's one fusion: an optimizer step whose every gradient is `Mul(g, s)` by
 * one float32 scalar s (LossScaleOptimizer.get_unscaled_gradients: s = 1 / loss scale, each
 * Mul through its own float32 -> float32 Cast of it),
 * each Mul read by the step only, on the CPU, replays as one step over the g's with s as
 * its gradient factor (run_optim): no pass writing the unscaled copies. Exact: the kernel
 * multiplies float32 g by float32 s as the Mul does, and when 0 <= s <= 1 a g is finite
 * exactly when g * s is (the finite check reads the g's); other s (a loss scale below 1,
 * NaN) and replays under a tape or an outer trace run the Muls as recorded. */
static int fold_candidate(const mp_graph *g, int32_t m, int32_t step, int32_t *src, int32_t *inv) {
    if (m < 0)
        return 0;
    const mp_gnode *n = &g->nodes[m];
    if (n->kind != MP_GNODE_OP || n->op != MP_OP_MUL || n->n_in != 2 || n->dtype != MP_F32 ||
        n->device.type != MP_DEV_CPU || n->last_use != step ||
        (n->flags & (MP_GNODE_FLAG_OUTPUT | MP_GNODE_FLAG_RANDOM)))
        return 0;
    for (int k = 0; k < 2; k++) {
        const mp_gnode *a = &g->nodes[n->in[k].node], *b = &g->nodes[n->in[1 - k].node];
        if (b->ndim != 0 || b->dtype != MP_F32 || b->device.type != MP_DEV_CPU || a->dtype != MP_F32 ||
            a->ndim != n->ndim || memcmp(a->shape, n->shape, (size_t)n->ndim * sizeof *n->shape) != 0)
            continue;
        *src = n->in[k].node;
        *inv = n->in[1 - k].node;
        return 1;
    }
    return 0;
}

/* A scalar through value-preserving casts (get_unscaled_gradients casts 1 / scale to each
 * gradient's dtype: float32 to float32 for float32 variables, one Cast node each). */
static int32_t same_value_root(const mp_graph *g, int32_t i) {
    while (g->nodes[i].kind == MP_GNODE_OP && g->nodes[i].op == MP_OP_CAST && g->nodes[i].n_in == 1 &&
           g->nodes[i].in[0].node >= 0 && g->nodes[g->nodes[i].in[0].node].dtype == g->nodes[i].dtype)
        i = g->nodes[i].in[0].node;
    return i;
}

static void plan_folds(mp_graph *g) {
    for (int i = 0; i < g->n_nodes; i++)
        g->nodes[i].flags &= ~MP_GNODE_FLAG_FOLDED;
    for (int j = 0; j < g->n_nodes; j++) {
        mp_gnode *o = &g->nodes[j];
        if (o->kind != MP_GNODE_OPTIM || o->n_in == 0)
            continue;
        int32_t inv = -1, src = -1, s = -1;
        int ok = 1;
        for (int k = 0; k < o->n_in && ok; k++) {
            if (o->in[k].node < 0) /* no gradient */
                continue;
            ok = fold_candidate(g, o->in[k].node, j, &src, &s) &&
                 (inv < 0 || same_value_root(g, s) == same_value_root(g, inv));
            inv = s;
        }
        if (!ok || inv < 0)
            continue;
        for (int k = 0; k < o->n_in; k++) {
            if (o->in[k].node < 0)
                continue;
            mp_gnode *m = &g->nodes[o->in[k].node];
            fold_candidate(g, o->in[k].node, j, &m->fold_src, &m->fold_inv);
            m->flags |= MP_GNODE_FLAG_FOLDED;
            if (g->nodes[m->fold_src].last_use < j) /* read by the step now */
                g->nodes[m->fold_src].last_use = j;
            if (g->nodes[m->fold_inv].last_use < j)
                g->nodes[m->fold_inv].last_use = j;
        }
    }
}

/* A MaxPool node that a MaxPoolGrad of the same x reads (the trace recorded its gradient)
 * keeps its argmax workspace for it (attr i2 = 1, ops_window.c); i2 = 2 when its only such
 * readers are MaxPoolGrads with ReLU's gradient (graph_fuse.c), whose one-pass kernel needs
 * none where the backend has it (ops_window.c asks); the others run as inference.
 * Recomputed with the plan: passes and pruning may remove the gradient. */
static void plan_pool_workspaces(mp_graph *g) {
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].kind == MP_GNODE_OP && g->nodes[i].op == MP_OP_MAX_POOL)
            g->nodes[i].attrs.i2 = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const mp_gnode *n = &g->nodes[i];
        if (n->kind != MP_GNODE_OP || n->op != MP_OP_MAX_POOL_GRAD || n->n_in != 3 || n->in[1].node < 0)
            continue;
        mp_gnode *p = &g->nodes[n->in[1].node];
        if (p->kind == MP_GNODE_OP && p->op == MP_OP_MAX_POOL && p->in[0].node == n->in[0].node &&
            p->in[0].output == n->in[0].output && p->attrs.i2 != 1)
            p->attrs.i2 = n->attrs.i2 == 1 ? 2 : 1;
    }
}

static void plan_last_uses(mp_graph *g) {
    plan_pool_workspaces(g);
    for (int i = 0; i < g->n_nodes; i++)
        g->nodes[i].last_use = i;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++)
            if (g->nodes[i].in[k].node >= 0)
                g->nodes[g->nodes[i].in[k].node].last_use = i;
    for (int i = 0; i < g->n_nodes; i++)
        g->nodes[i].flags &= ~MP_GNODE_FLAG_OUTPUT;
    for (int o = 0; o < g->n_outputs; o++)
        if (g->outputs[o].node >= 0)
            g->nodes[g->outputs[o].node].flags |= MP_GNODE_FLAG_OUTPUT;
    plan_folds(g);
}

/* Drops nodes that reach neither an output nor a side effect, renumbering edges. */
static mp_status prune(mp_graph *g) {
    int nn = g->n_nodes;
    char *need = calloc((size_t)(nn ? nn : 1), 1);
    int32_t *remap = malloc((size_t)(nn ? nn : 1) * sizeof *remap);
    if (!need || !remap) {
        free(need);
        free(remap);
        return mp_error_set(MP_ERR_MEMORY, "out of host memory pruning a graph");
    }
    for (int o = 0; o < g->n_outputs; o++)
        if (g->outputs[o].node >= 0)
            need[g->outputs[o].node] = 1;
    for (int i = nn - 1; i >= 0; i--) {
        mp_gnode *n = &g->nodes[i];
        if (n->kind == MP_GNODE_INPUT || (n->flags & MP_GNODE_FLAG_EFFECT))
            need[i] = 1;
        if (!need[i])
            continue;
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k].node >= 0)
                need[n->in[k].node] = 1;
    }
    int m = 0;
    for (int i = 0; i < nn; i++) {
        if (!need[i]) {
            node_clear(&g->nodes[i]);
            remap[i] = -1;
            continue;
        }
        remap[i] = m;
        if (m != i)
            g->nodes[m] = g->nodes[i];
        mp_gnode *n = &g->nodes[m];
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k].node >= 0)
                n->in[k].node = remap[n->in[k].node];
        if (n->kind == MP_GNODE_INPUT)
            g->inputs[n->input_index] = m;
        m++;
    }
    g->n_nodes = m;
    for (int o = 0; o < g->n_outputs; o++)
        if (g->outputs[o].node >= 0) {
            g->outputs[o].node = remap[g->outputs[o].node];
            g->nodes[g->outputs[o].node].flags |= MP_GNODE_FLAG_OUTPUT;
        }
    free(need);
    free(remap);
    return MP_OK;
}

mp_status mp_graph_end(mp_graph *g) {
    if (rec == g)
        rec = g->parent;
    g->parent = NULL;
    MP_TRY(prune(g));
    idmap_free(g->id_map);
    g->id_map = NULL;
    plan_last_uses(g);
    return MP_OK;
}

mp_status mp_graph_prune(mp_graph *g) {
    kept_clear(g); /* node indices move */
    MP_TRY(prune(g));
    plan_last_uses(g);
    return MP_OK;
}

/* ------------------------------------------------------------------ passes */

int mp_op_infer_dtype(mp_op op, int n_in, const mp_dtype *in, const mp_attrs *at) {
    if ((int)op < 0 || op >= MP_OP_COUNT)
        return -1;
    switch (op) {
    case MP_OP_CAST:
    case MP_OP_FILL:
    case MP_OP_RANGE:
    case MP_OP_RANGE_T:
    case MP_OP_SHAPE:
    case MP_OP_ONE_HOT:
    case MP_OP_RANDOM_UNIFORM:
    case MP_OP_RANDOM_NORMAL:
    case MP_OP_TRUNCATED_NORMAL:
    case MP_OP_ARGMAX:
    case MP_OP_ARGMIN: return at ? at->dtype : -1;
    case MP_OP_IS_FINITE:
    case MP_OP_IS_NAN:
    case MP_OP_IS_INF:
    case MP_OP_LOGICAL_NOT:
    case MP_OP_EQUAL:
    case MP_OP_NOT_EQUAL:
    case MP_OP_LESS:
    case MP_OP_LESS_EQUAL:
    case MP_OP_GREATER:
    case MP_OP_GREATER_EQUAL:
    case MP_OP_LOGICAL_AND:
    case MP_OP_LOGICAL_OR:
    case MP_OP_ALL:
    case MP_OP_ANY: return MP_BOOL;
    case MP_OP_WHERE: return n_in == 3 && in[1] == in[2] ? (int)in[1] : -1;
    case MP_OP_BATCH_NORM: return n_in >= 1 ? (int)in[0] : -1; /* statistics are float32 */
    /* batch statistics of x (float64 for float64 x, else float32); the moments' gradient has x's */
    case MP_OP_BATCH_MOMENTS: return n_in == 1 ? (in[0] == MP_F64 ? MP_F64 : MP_F32) : -1;
    case MP_OP_BATCH_NORM_GRAD_SUMS:
        return n_in == 3 && in[1] == in[0] ? (in[0] == MP_F64 ? MP_F64 : MP_F32) : -1;
    case MP_OP_BATCH_MOMENTS_GRAD: return n_in == 3 ? (int)in[0] : -1;
    case MP_OP_GATHER:      /* (params, integer indices) */
    case MP_OP_GATHER_GRAD: /* (dy, integer indices) */
    case MP_OP_INDEX_T:     /* (x, integer index) */
    case MP_OP_GATHER_ND:   /* (params, integer indices) */
        return n_in == 2 && (in[1] == MP_I32 || in[1] == MP_I64) ? (int)in[0] : -1;
    case MP_OP_STRIDED_SLICE_T: /* (x, integer spec tensors...) */
    case MP_OP_SLICE_T:
        return n_in >= 3 && (in[1] == MP_I32 || in[1] == MP_I64) ? (int)in[0] : -1;
    case MP_OP_STRIDED_SLICE_T_GRAD: /* (dy, x, integer spec tensors...) */
        return n_in >= 4 ? (int)in[0] : -1; /* (x gives its shape only) */
    case MP_OP_TENSOR_SCATTER_UPDATE: /* (tensor, integer indices, updates of tensor's dtype) */
    case MP_OP_TENSOR_SCATTER_ADD:
    case MP_OP_TENSOR_SCATTER_SUB:
    case MP_OP_TENSOR_SCATTER_MIN:
    case MP_OP_TENSOR_SCATTER_MAX:
        return n_in == 3 && in[0] == in[2] && (in[1] == MP_I32 || in[1] == MP_I64) ? (int)in[0] : -1;
    case MP_OP_TOP_K: return at ? at->dtype : -1;
    case MP_OP_UNIQUE: return at ? (at->i0 == 1 ? MP_I64 : at->dtype) : -1;
    case MP_OP_WHERE_INDICES: return MP_I64;
    default: break;
    }
    if (n_in == 0)
        return -1;
    /* the same-dtype ops: every floating/numeric input agrees (labels of the sparse
     * cross-entropy are ids and exempt) */
    int check = op == MP_OP_SPARSE_SOFTMAX_XENT ? 1 : n_in;
    for (int k = 1; k < check; k++)
        if (in[k] != in[0])
            return -1;
    return in[0];
}

mp_status mp_graph_infer(mp_graph *g) {
    kept_clear(g); /* dtypes (so sizes) may change */
    for (int i = 0; i < g->n_nodes; i++) {
        mp_gnode *n = &g->nodes[i];
        if (n->kind != MP_GNODE_OP)
            continue;
        mp_dtype dts[64];
        int nin = n->n_in < 64 ? n->n_in : 64; /* variadic ops (concat) check their first 64 */
        for (int k = 0; k < nin; k++)
            dts[k] = g->nodes[n->in[k].node].dtype;
        int dt = mp_op_infer_dtype(n->op, nin, dts, &n->attrs);
        if (dt < 0) {
            char buf[160] = "";
            size_t used = 0;
            for (int k = 0; k < n->n_in && k < 64 && used < sizeof buf; k++)
                used += (size_t)snprintf(buf + used, sizeof buf - used, k ? ", %s" : "%s", mp_dtype_name(dts[k]));
            return mp_error_set(MP_ERR_DTYPE, "graph node %d (%s): its inputs' dtypes (%s) do not fit the op", i,
                                mp_op_get_info(n->op)->name, buf);
        }
        n->dtype = (mp_dtype)dt;
    }
    plan_last_uses(g); /* a pass may have rewired edges */
    return MP_OK;
}

mp_status mp_graph_insert_cast(mp_graph *g, int at, mp_gedge src, mp_dtype dt, mp_gedge *out) {
    kept_clear(g); /* node indices move */
    if (at < 0 || at > g->n_nodes || src.node < 0 || src.node >= at)
        return mp_error_set(MP_ERR_VALUE, "graph: cannot insert a cast of node %d before node %d", src.node, at);
    int32_t idx = -1;
    MP_TRY(push_node(g, MP_GNODE_OP, 1, &idx)); /* grows the array; moved into place below */
    mp_gnode cast = g->nodes[idx];
    memmove(&g->nodes[at + 1], &g->nodes[at], (size_t)(g->n_nodes - 1 - at) * sizeof *g->nodes);
    g->nodes[at] = cast;
    for (int i = at + 1; i < g->n_nodes; i++) {
        mp_gnode *n = &g->nodes[i];
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k].node >= at)
                n->in[k].node++;
        if (n->kind == MP_GNODE_INPUT)
            g->inputs[n->input_index] = i;
    }
    for (int o = 0; o < g->n_outputs; o++)
        if (g->outputs[o].node >= at)
            g->outputs[o].node++;
    mp_gnode *c = &g->nodes[at];
    const mp_gnode *s = &g->nodes[src.node];
    c->op = MP_OP_CAST;
    c->attrs.dtype = dt;
    c->in[0] = src;
    c->n_out = 1;
    c->dtype = dt;
    c->ndim = s->ndim;
    memcpy(c->shape, s->shape, sizeof c->shape);
    c->device = s->device;
    c->flags = s->flags & FLAG_DYNAMIC;
    plan_last_uses(g); /* recomputed wholesale (cheap, passes are rare) */
    out->node = at;
    out->output = 0;
    return MP_OK;
}

static int same_attrs(mp_op op, const mp_attrs *a, const mp_attrs *b) {
    if (a->n_ints != b->n_ints || a->i0 != b->i0 || a->i2 != b->i2 || a->dtype != b->dtype ||
        memcmp(&a->f0, &b->f0, sizeof a->f0) || memcmp(&a->f1, &b->f1, sizeof a->f1) ||
        !mp_device_eq(a->device, b->device))
        return 0;
    if (a->i1 != b->i1 && !is_random(op)) /* a random op's stream differs per trace */
        return 0;
    return !memcmp(a->ints, b->ints, sizeof a->ints) && !memcmp(a->ints2, b->ints2, sizeof a->ints2) &&
           !memcmp(a->ints3, b->ints3, sizeof a->ints3) && !memcmp(a->ints4, b->ints4, sizeof a->ints4);
}

static int same_const(const mp_tensor *a, const mp_tensor *b) {
    if (a == b)
        return 1;
    if (a->dtype != b->dtype || a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim))
        return 0;
    mp_device da = mp_tensor_device(a), db = mp_tensor_device(b);
    size_t nb = mp_tensor_nbytes(a);
    if (da.type == MP_DEV_CPU && db.type == MP_DEV_CPU)
        return !memcmp(mp_tensor_data(a), mp_tensor_data(b), nb);
    /* device constants: small ones are read back and compared (traces are compared rarely,
     * so the host synchronisation is paid once per retrace, not per replay) */
    enum { SAME_CONST_MAX_BYTES = 4096 };
    if (!mp_device_eq(da, db) || nb > SAME_CONST_MAX_BYTES)
        return 0;
    const mp_backend *be = mp_backend_get(da.type);
    unsigned char ha[SAME_CONST_MAX_BYTES], hb[SAME_CONST_MAX_BYTES];
    if (!be || MP_BACKEND_CALL(be, copy_d2h, da, ha, mp_tensor_data(a), nb) != MP_OK ||
        MP_BACKEND_CALL(be, copy_d2h, db, hb, mp_tensor_data(b), nb) != MP_OK) {
        mp_error_clear();
        return 0; /* unreadable: not the same */
    }
    return !memcmp(ha, hb, nb);
}

int mp_graph_same_structure(const mp_graph *a, const mp_graph *b) {
    if (!a || !b || a->n_nodes != b->n_nodes || a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs)
        return 0;
    for (int o = 0; o < a->n_outputs; o++)
        if (a->outputs[o].node != b->outputs[o].node || a->outputs[o].output != b->outputs[o].output)
            return 0;
    for (int i = 0; i < a->n_nodes; i++) {
        const mp_gnode *x = &a->nodes[i], *y = &b->nodes[i];
        if (x->kind != y->kind || x->n_in != y->n_in || x->n_out != y->n_out || x->dtype != y->dtype ||
            x->ndim != y->ndim || (x->flags & 0xff) != (y->flags & 0xff))
            return 0;
        for (int k = 0; k < x->n_in; k++)
            if (x->in[k].node != y->in[k].node || x->in[k].output != y->in[k].output)
                return 0;
        switch (x->kind) {
        case MP_GNODE_INPUT:
            if (x->input_index != y->input_index)
                return 0;
            break;
        case MP_GNODE_CONST:
            if (!same_const(x->value, y->value))
                return 0;
            break;
        case MP_GNODE_OP:
            if (x->op != y->op || !same_attrs(x->op, &x->attrs, &y->attrs))
                return 0;
            break;
        case MP_GNODE_VAR_READ:
        case MP_GNODE_VAR_ASSIGN:
            if (x->var != y->var || x->read_dtype != y->read_dtype)
                return 0;
            break;
        case MP_GNODE_OPTIM:
            if (x->optim->kind != y->optim->kind || x->optim->n_vars != y->optim->n_vars ||
                x->optim->ls != y->optim->ls || x->optim->iterations != y->optim->iterations ||
                x->optim->state != y->optim->state || (x->optim->no_decay == NULL) != (y->optim->no_decay == NULL) ||
                (x->optim->no_decay && memcmp(x->optim->no_decay, y->optim->no_decay, (size_t)x->optim->n_vars)) ||
                memcmp(x->optim->vars, y->optim->vars, sizeof *x->optim->vars * (size_t)x->optim->n_vars))
                return 0;
            break;
        case MP_GNODE_HOST: break; /* tf.print: the same call site prints the same way */
        default: return 0;         /* loops: their bodies hold element shapes */
        }
    }
    return 1;
}

/* ------------------------------------------------------------------ replay */

static const char *shape_str(int nd, const int64_t *s, char *buf, size_t cap) {
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < nd && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, i ? ",%lld" : "%lld", (long long)s[i]);
    if (used < cap)
        snprintf(buf + used, cap - used, "]");
    return buf;
}

static mp_status check_input(const mp_gnode *n, const mp_tensor *x, int polymorphic) {
    int same = x->dtype == n->dtype && x->ndim == n->ndim;
    for (int d = 0; same && !polymorphic && d < n->ndim; d++)
        same = x->shape[d] == n->shape[d];
    if (!same) {
        char a[96], b[96];
        return mp_error_set(MP_ERR_VALUE, "graph input %d: traced for a %s tensor of shape %s, given %s %s",
                            n->input_index, mp_dtype_name(n->dtype), shape_str(n->ndim, n->shape, a, sizeof a),
                            mp_dtype_name(x->dtype), shape_str(x->ndim, x->shape, b, sizeof b));
    }
    return MP_OK;
}

typedef struct {
    int n;
    mp_variable *const *from, *const *to;
} var_sub;

static mp_variable *subst(const var_sub *vs, mp_variable *v) {
    for (int j = 0; j < vs->n; j++)
        if (vs->from[j] == v)
            return vs->to[j];
    return v;
}

/* The factor s of a folded step (plan_folds), or -1 when this replay runs the Muls. */
static double fold_factor(const mp_graph *g, const mp_gnode *n, mp_tensor **vals, int hooks) {
    const mp_goptim *o = n->optim;
    int k = 0;
    while (k < n->n_in && n->in[k].node < 0)
        k++;
    if (hooks || k == n->n_in || !(g->nodes[n->in[k].node].flags & MP_GNODE_FLAG_FOLDED) || o->grad_scale != 1.0 ||
        o->unscale)
        return -1;
    const mp_tensor *s = vals[g->nodes[n->in[k].node].fold_inv];
    if (!s || s->dtype != MP_F32 || s->numel != 1 || mp_tensor_device(s).type != MP_DEV_CPU)
        return -1;
    float v = *(const float *)mp_tensor_data(s);
    return v >= 0.0f && v <= 1.0f ? (double)v : -1; /* NaN fails both */
}

static mp_status run_optim(const mp_graph *g, mp_gnode *n, mp_tensor **vals, const var_sub *vs, int hooks,
                           mp_tensor **out) {
    mp_goptim *o = n->optim;
    if (o->refresh)
        MP_TRY(o->refresh(o->refresh_ctx, &o->hp, &o->grad_scale));
    size_t cnt = (size_t)(o->n_vars ? o->n_vars : 1);
    mp_tensor **grads = calloc(cnt, sizeof *grads);
    mp_tensor **made = calloc(cnt, sizeof *made); /* Muls run here for a folded step */
    mp_variable **vars = calloc(cnt, sizeof *vars);
    if (!grads || !made || !vars) {
        free(grads);
        free(made);
        free(vars);
        return mp_error_set(MP_ERR_MEMORY, "out of host memory replaying an optimizer step");
    }
    double factor = fold_factor(g, n, vals, hooks), grad_scale = o->grad_scale;
    mp_status st = MP_OK;
    for (int k = 0; k < o->n_vars && st == MP_OK; k++) {
        int32_t m = n->in[k].node;
        vars[k] = subst(vs, o->vars[k]);
        if (m < 0)
            continue;
        if (vals[m] || !(g->nodes[m].flags & MP_GNODE_FLAG_FOLDED)) {
            grads[k] = vals[m];
        } else if (factor >= 0) {
            grads[k] = vals[g->nodes[m].fold_src];
        } else { /* the recorded Mul, run now */
            const mp_gnode *mn = &g->nodes[m];
            mp_tensor *args[2] = {vals[mn->in[0].node], vals[mn->in[1].node]};
            st = mp_op_exec(MP_OP_MUL, 2, args, &mn->attrs, &made[k]);
            grads[k] = made[k];
        }
    }
    if (factor >= 0)
        grad_scale = factor; /* o->grad_scale is 1: the kernel multiplies by (float)factor */
    if (st == MP_OK)
        st = mp_optimizer_apply(o->kind, &o->hp, o->n_vars, vars, grads, o->slots, o->iterations, o->state,
                                o->no_decay, o->ls,
                                o->check_finite, grad_scale, o->unscale, n->n_out ? out : NULL);
    for (int k = 0; k < o->n_vars; k++)
        mp_tensor_decref(made[k]);
    free(grads);
    free(made);
    free(vars);
    return st;
}

/* Keep node i's output buffer for the next replay, unless it is an input's (a view). */
static void keep_buffer(mp_graph *g, int i, mp_tensor *const *args, const mp_tensor *out) {
    mp_storage *s = out->storage;
    if (s->deleter)
        return;
    for (int k = 0; k < g->nodes[i].n_in; k++)
        if (args[k] && args[k]->storage == s)
            return;
    if (g->kept[i] == s)
        return;
    if (g->kept[i])
        mp_graph_capture_invalidate(g); /* a captured graph writes into the old buffer */
    mp_storage_decref(g->kept[i]);
    mp_storage_incref(s);
    g->kept[i] = s;
}

/* A gated node's predicate (its last input) on the host: does the node run? */
static mp_status guard_open(const mp_gnode *n, mp_tensor *const *args, int *open) {
    mp_tensor *p = args[n->n_in - 1], *h = p;
    if (!p || p->dtype != MP_BOOL || p->numel != 1)
        return mp_error_set(MP_ERR_INTERNAL, "graph: a gated node without its boolean predicate");
    mp_device cpu = {MP_DEV_CPU, 0};
    if (mp_tensor_device(p).type != MP_DEV_CPU)
        MP_TRY(mp_copy_to_device(p, cpu, &h));
    int v = *(const unsigned char *)mp_tensor_data(h) != 0;
    if (h != p)
        mp_tensor_decref(h);
    *open = (n->flags & MP_GNODE_FLAG_GUARD_NEG) ? !v : v;
    return MP_OK;
}

static int same_shape(const mp_gnode *n, const mp_tensor *t) {
    if (t->ndim != n->ndim)
        return 0;
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] != n->shape[d])
            return 0;
    return 1;
}

/* A host call node at a replay: the callback (Python: it takes the GIL), its results
 * checked against the dtypes traced (a result's shape may change, as TensorFlow's
 * py_function leaves it unknown). */
static mp_status run_call(mp_gnode *n, mp_tensor *const *args) {
    mp_gcall *c = n->call;
    for (int k = 0; k < c->n_out; k++) {
        mp_tensor_decref(c->results[k]);
        c->results[k] = NULL;
    }
    int guarded = (n->flags & MP_GNODE_FLAG_GUARD) != 0, open = 1;
    if (guarded)
        MP_TRY(guard_open(n, args, &open));
    if (!open) { /* a branch not taken: zeros of the traced shapes (its values are not selected) */
        for (int k = 0; k < c->n_out; k++) {
            mp_tensor *z = NULL;
            mp_device cpu = {MP_DEV_CPU, 0};
            mp_status st = mp_tensor_new(c->dtypes[k], c->ndims[k], &c->shapes[(size_t)k * MP_MAX_DIMS], cpu, &z);
            if (st != MP_OK)
                return st;
            memset(mp_tensor_data(z), 0, mp_tensor_nbytes(z));
            if (!mp_device_eq(c->devices[k], cpu)) { /* where the traced result lived */
                st = mp_copy_to_device(z, c->devices[k], &c->results[k]);
                mp_tensor_decref(z);
                if (st != MP_OK)
                    return st;
            } else {
                c->results[k] = z;
            }
        }
        return MP_OK;
    }
    MP_TRY(c->fn(c->ctx, n->n_in - guarded, args, c->n_out, c->results));
    for (int k = 0; k < c->n_out; k++) {
        const mp_tensor *r = c->results[k];
        if (!r || r->dtype != c->dtypes[k]) {
            mp_status st = mp_error_set(MP_ERR_VALUE,
                                        "a host call of a traced function returned %s for result %d, traced as %s",
                                        r ? mp_dtype_name(r->dtype) : "nothing", k, mp_dtype_name(c->dtypes[k]));
            for (int j = 0; j < c->n_out; j++) {
                mp_tensor_decref(c->results[j]);
                c->results[j] = NULL;
            }
            return st;
        }
    }
    return MP_OK;
}

mp_status mp_graph_run(mp_graph *g, int n_in, mp_tensor *const *in, mp_tensor **outs) {
    return mp_graph_run_with(g, n_in, in, 0, NULL, NULL, outs);
}

mp_status mp_graph_run_with(mp_graph *g, int n_in, mp_tensor *const *in, int n_sub, mp_variable *const *from,
                            mp_variable *const *to, mp_tensor **outs) {
    const var_sub vs = {n_sub, from, to};
    if (n_in != g->n_inputs)
        return mp_error_set(MP_ERR_VALUE, "graph: traced with %d inputs, given %d", g->n_inputs, n_in);
    for (int i = 0; i < g->n_inputs; i++)
        MP_TRY(check_input(&g->nodes[g->inputs[i]], in[i], g->polymorphic));
    mp_graph_capture_call cap; /* CUDA graphs: may run the captured graph instead, or capture this replay */
    MP_TRY(mp_graph_capture_pre(g, n_in, in, n_sub, outs, &cap));
    if (cap.handled)
        return MP_OK;
    mp_tensor **vals = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *vals);
    if (!vals)
        return mp_error_set(MP_ERR_MEMORY, "out of host memory replaying a graph of %d nodes", g->n_nodes);
    g->n_replays++;
    if (!g->kept && !rec) /* buffers are planned by the first replay, reused by the next */
        g->kept = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *g->kept);
    /* ops record on tapes (gradients through a replayed function) and into an outer
     * graph (a function called while another traces is inlined): mp_op_run then */
    int hooks = mp_tape_recording() || rec != NULL;
    mp_status st = MP_OK;
    int max_in = 1;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].n_in > max_in)
            max_in = g->nodes[i].n_in;
    int effects_ran = 0; /* a value-shape miss after a state change cannot be undone */
    g->value_shape_miss = 0;
    mp_tensor **args = calloc((size_t)max_in, sizeof *args);
    if (!args) {
        free(vals);
        return mp_error_set(MP_ERR_MEMORY, "out of host memory replaying a graph");
    }
    const int prof = mp_graph_profile_on();
    for (int i = 0; i < g->n_nodes && st == MP_OK; i++) {
        mp_gnode *n = &g->nodes[i];
        mp_graph_prof_mark pm;
        if (prof)
            mp_graph_profile_start(&pm);
        for (int k = 0; k < n->n_in; k++)
            args[k] = n->in[k].node >= 0 ? vals[n->in[k].node] : NULL;
        switch (n->kind) {
        case MP_GNODE_INPUT:
            mp_tensor_incref(cap.inputs[n->input_index]);
            vals[i] = cap.inputs[n->input_index];
            break;
        case MP_GNODE_CONST:
            mp_tensor_incref(n->value);
            vals[i] = n->value;
            break;
        case MP_GNODE_OP: {
            if ((n->flags & MP_GNODE_FLAG_FOLDED) && !hooks)
                break; /* computed inside the optimizer step that reads it (plan_folds) */
            mp_attrs at = n->attrs;
            /* (a stateless op, i2 == 1, draws the same numbers at every call) */
            if ((n->flags & MP_GNODE_FLAG_RANDOM) && at.i2 != 1)
                at.i1 = (int64_t)((uint64_t)at.i1 + ((uint64_t)g->n_replays << 32));
            if (g->kept)
                mp_storage_offer(g->kept[i]);
            st = hooks ? mp_op_run(n->op, n->n_in, args, &at, &vals[i]) : mp_op_exec(n->op, n->n_in, args, &at, &vals[i]);
            mp_storage_offer(NULL);
            if (st == MP_OK && mp_graph_value_baked(g) && !effects_ran &&
                (n->op == MP_OP_STRIDED_SLICE_T || n->op == MP_OP_SLICE_T) && !same_shape(n, vals[i])) {
                /* the graph holds sizes of the traced slice: tf.function records it again */
                g->value_shape_miss = 1;
                st = mp_error_set(MP_ERR_VALUE, "graph: a tensor-bound slice (node %d) gave another shape than "
                                                "traced, and the graph holds sizes taken from it",
                                  i);
            }
            if (st == MP_OK && g->kept)
                keep_buffer(g, i, args, vals[i]);
            break;
        }
        case MP_GNODE_VAR_READ: {
            int prev = mp_autocast_set(n->read_dtype >= 0 ? n->read_dtype : -1);
            mp_variable *v = subst(&vs, n->var);
            st = n->read_dtype == MP_GNODE_READ_RAW ? mp_variable_read_raw(v, &vals[i]) : mp_variable_read(v, &vals[i]);
            mp_autocast_set(prev);
            break;
        }
        case MP_GNODE_VAR_ASSIGN:
            if (n->flags & MP_GNODE_FLAG_GUARD) {
                int open = 0;
                st = guard_open(n, args, &open);
                if (st != MP_OK || !open)
                    break;
            }
            st = mp_variable_assign(subst(&vs, n->var), args[0]);
            effects_ran = 1;
            break;
        case MP_GNODE_OPTIM:
            st = run_optim(g, n, vals, &vs, hooks, &vals[i]);
            effects_ran = 1;
            break;
        case MP_GNODE_HOST: {
            int open = 1, guarded = (n->flags & MP_GNODE_FLAG_GUARD) != 0;
            if (guarded)
                st = guard_open(n, args, &open);
            if (rec) /* inlined into an outer trace: recorded there, run at its replays */
                st = MP_OK;
            else if (st == MP_OK && open)
                st = n->host.fn(n->host.ctx, n->n_in - guarded, args);
            effects_ran = 1;
            break;
        }
        case MP_GNODE_LOOP: {
            mp_gloop *l = n->loop;
            for (int k = 0; k < l->n_carried; k++) {
                mp_tensor_decref(l->results[k]);
                l->results[k] = NULL;
            }
            st = mp_gloop_run(l, args, 0, 0, 1, vs.n, vs.from, vs.to, l->results);
            effects_ran = 1;
            break;
        }
        case MP_GNODE_LOOP_OUT: {
            mp_gloop *l = g->nodes[n->in[0].node].loop;
            vals[i] = l->results[n->in[0].output];
            l->results[n->in[0].output] = NULL;
            break;
        }
        case MP_GNODE_CALL:
            st = run_call(n, args);
            effects_ran = 1; /* (a py_function may change state) */
            break;
        case MP_GNODE_CALL_OUT: {
            mp_gcall *c = g->nodes[n->in[0].node].call;
            vals[i] = c->results[n->in[0].output];
            c->results[n->in[0].output] = NULL;
            break;
        }
        default: st = mp_error_set(MP_ERR_INTERNAL, "graph: node %d has unknown kind %d", i, (int)n->kind);
        }
        if (prof && st == MP_OK && n->kind != MP_GNODE_INPUT && n->kind != MP_GNODE_CONST) {
            static const char *kinds[] = {"(input)", "(const)", "", "(variable read)", "(variable assign)",
                                          "(optimizer)", "(host)", "(loop)", "(loop out)", "(call)", "(call out)"};
            const char *name = n->kind == MP_GNODE_OP ? mp_op_get_info(n->op)->name
                               : (size_t)n->kind < sizeof kinds / sizeof kinds[0] ? kinds[n->kind]
                                                                                 : "(node)";
            if (n->kind != MP_GNODE_OP || !((n->flags & MP_GNODE_FLAG_FOLDED) && !hooks))
                mp_graph_profile_stop(&pm, name, vals[i]);
        }
        /* free what no later node reads */
        for (int k = 0; k < n->n_in; k++) {
            int32_t s = n->in[k].node;
            if (s >= 0 && g->nodes[s].last_use == i && !(g->nodes[s].flags & MP_GNODE_FLAG_OUTPUT)) {
                mp_tensor_decref(vals[s]);
                vals[s] = NULL;
            }
        }
        if (n->last_use == i && !(n->flags & MP_GNODE_FLAG_OUTPUT)) {
            mp_tensor_decref(vals[i]);
            vals[i] = NULL;
        }
    }
    st = mp_graph_capture_post(g, st, vals, &cap);
    if (st == MP_OK && !cap.retry) {
        for (int o = 0; o < g->n_outputs; o++) {
            mp_tensor *t = g->outputs[o].node >= 0 ? vals[g->outputs[o].node] : NULL;
            mp_tensor_incref(t);
            outs[o] = t;
        }
    }
    for (int i = 0; i < g->n_nodes; i++)
        mp_tensor_decref(vals[i]);
    free(vals);
    free(args);
    if (cap.retry) /* the capture failed before anything ran: replay normally */
        return mp_graph_run_with(g, n_in, in, n_sub, from, to, outs);
    return st;
}
