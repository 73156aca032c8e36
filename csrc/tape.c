/* tape.c — reverse-mode autodiff: recording op calls and walking them backwards.
 * Owns the per-thread stack of recording tapes, the watched-id sets, the node list and
 * the backward walk (gradient accumulation, pruning to the requested sources). The rule
 * for each op lives in grad.c. Backward rules run through mp_op_run, so an outer tape
 * records them: that is how second-order gradients work.
 * NOTE: a tape records an op only if one of its inputs is watched and its output is a
 * floating tensor; integer and bool results never carry gradients (as TensorFlow). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "grad.h"
#include "amp.h"
#include "tape.h"
#include "graph.h"

#define MAX_ACTIVE 64

/* ------------------------------------------------------------------ id set */

typedef struct {
    int64_t *keys; /* 0 = empty (ids start at 1) */
    size_t cap, n;
} idset;

static size_t hash_id(int64_t k) { return (size_t)((uint64_t)k * 0x9E3779B97F4A7C15ull >> 17); }

static int idset_has(const idset *s, int64_t k) {
    if (!s->cap)
        return 0;
    for (size_t i = hash_id(k) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (s->keys[i] == k)
            return 1;
        if (s->keys[i] == 0)
            return 0;
    }
}

static mp_status idset_add(idset *s, int64_t k) {
    if ((s->n + 1) * 2 > s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 64;
        int64_t *nk = calloc(ncap, sizeof *nk);
        if (!nk)
            return mp_error_set(MP_ERR_MEMORY, "out of host memory growing the tape's watch set");
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->keys[i])
                continue;
            size_t j = hash_id(s->keys[i]) & (ncap - 1);
            while (nk[j])
                j = (j + 1) & (ncap - 1);
            nk[j] = s->keys[i];
        }
        free(s->keys);
        s->keys = nk;
        s->cap = ncap;
    }
    size_t i = hash_id(k) & (s->cap - 1);
    while (s->keys[i] && s->keys[i] != k)
        i = (i + 1) & (s->cap - 1);
    if (!s->keys[i]) {
        s->keys[i] = k;
        s->n++;
    }
    return MP_OK;
}

static void idset_clear(idset *s) {
    free(s->keys);
    memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------------ tape */

/* Lifetime: the Python GradientTape owns one reference, and a thread's active stack holds
 * one while the tape is entered there. A tape is active on at most one thread. When its
 * owner drops it while it is still entered on another thread, it is marked dropped; that
 * thread takes it off its stack (and drops the last reference) the next time it records. */
struct mp_tape {
    pthread_mutex_t mu; /* recursive: recording, watching and differentiating take it */
    int refs;           /* atomic */
    int entered; /* atomic: on some thread's active stack */
    int dropped; /* atomic: the owner let go */
    int persistent;
    int watch_accessed_variables;
    int recording;
    int used; /* a non-persistent tape computed its gradient */
    idset watched;
    mp_node *nodes;
    size_t n_nodes, cap_nodes;
    mp_variable **vars; /* watched variables, one reference each */
    size_t n_vars, cap_vars;
};

static _Thread_local mp_tape *active[MAX_ACTIVE];
static _Thread_local int n_active;
static _Thread_local int n_recording;
/* tapes below this index of the stack record nothing (tf.recompute_grad's forward) */
static _Thread_local int suspend_below;

int mp_tape_suspend_outer(void) {
    int prev = suspend_below;
    suspend_below = n_active;
    return prev;
}

void mp_tape_resume_outer(int prev) { suspend_below = prev; }

static int first_recordable(void) { return suspend_below < n_active ? suspend_below : n_active; }

int mp_tape_recording(void) { return n_recording > 0; }

mp_status mp_tape_new(int persistent, int watch_accessed_variables, mp_tape **out) {
    mp_tape *t = calloc(1, sizeof *t);
    if (!t)
        return mp_error_set(MP_ERR_MEMORY, "out of host memory allocating a tape");
    t->persistent = persistent;
    t->watch_accessed_variables = watch_accessed_variables;
    t->recording = 1;
    t->refs = 1;
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&t->mu, &ma);
    pthread_mutexattr_destroy(&ma);
    *out = t;
    return MP_OK;
}

static void free_nodes(mp_tape *t) {
    for (size_t i = 0; i < t->n_nodes; i++) {
        mp_node *nd = &t->nodes[i];
        for (int k = 0; k < nd->n_in; k++)
            mp_tensor_decref(nd->inputs[k]);
        free(nd->inputs);
        free(nd->in_ids);
        mp_tensor_decref(nd->output);
        if (nd->custom_ref)
            nd->custom_ref(nd->custom_ctx, -1);
    }
    free(t->nodes);
    t->nodes = NULL;
    t->n_nodes = t->cap_nodes = 0;
}

static void free_record(mp_tape *t) {
    free_nodes(t);
    idset_clear(&t->watched);
    for (size_t i = 0; i < t->n_vars; i++)
        mp_variable_decref(t->vars[i]);
    free(t->vars);
    t->vars = NULL;
    t->n_vars = t->cap_vars = 0;
}

static void tape_decref(mp_tape *t) {
    if (__atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        free_record(t);
        pthread_mutex_destroy(&t->mu);
        free(t);
    }
}

/* Take entry i off this thread's stack and drop the stack's reference. */
static void remove_active(int i) {
    mp_tape *t = active[i];
    if (t->recording)
        n_recording--;
    memmove(&active[i], &active[i + 1], sizeof(active[0]) * (size_t)(n_active - i - 1));
    n_active--;
    if (i < suspend_below)
        suspend_below--;
    __atomic_store_n(&t->entered, 0, __ATOMIC_RELEASE);
    tape_decref(t);
}

/* Tapes whose owner let go while they were entered here leave this thread's stack. */
static void prune_dropped(void) {
    for (int i = n_active - 1; i >= 0; i--)
        if (__atomic_load_n(&active[i]->dropped, __ATOMIC_ACQUIRE))
            remove_active(i);
}

void mp_tape_free(mp_tape *t) {
    if (!t)
        return;
    __atomic_store_n(&t->dropped, 1, __ATOMIC_RELEASE);
    mp_tape_pop(t); /* harmless when not active on this thread */
    tape_decref(t);
}

mp_status mp_tape_push(mp_tape *t) {
    prune_dropped();
    if (n_active >= MAX_ACTIVE)
        return mp_error_set(MP_ERR_VALUE, "too many nested GradientTapes (more than %d)", MAX_ACTIVE);
    if (__atomic_exchange_n(&t->entered, 1, __ATOMIC_ACQ_REL))
        return mp_error_set(MP_ERR_VALUE, "this GradientTape is already active (entered twice, or on another thread)");
    __atomic_add_fetch(&t->refs, 1, __ATOMIC_RELAXED);
    active[n_active++] = t;
    if (t->recording)
        n_recording++;
    return MP_OK;
}

mp_status mp_tape_pop(mp_tape *t) {
    for (int i = n_active - 1; i >= 0; i--) {
        if (active[i] == t) {
            remove_active(i);
            break;
        }
    }
    return MP_OK;
}

static int is_active(const mp_tape *t) {
    for (int i = 0; i < n_active; i++)
        if (active[i] == t)
            return 1;
    return 0;
}

void mp_tape_set_recording(mp_tape *t, int on) {
    on = on != 0;
    if (t->recording == on)
        return;
    if (is_active(t))
        n_recording += on ? 1 : -1;
    t->recording = on;
}

int mp_tape_is_recording(const mp_tape *t) { return t->recording; }

static mp_status check_usable(const mp_tape *t) {
    if (t->used)
        return mp_error_set(MP_ERR_VALUE, "A non-persistent GradientTape can only be used to compute one set of "
                            "gradients (or jacobians). hint: GradientTape(persistent=True)");
    return MP_OK;
}

mp_status mp_tape_watch_tensor(mp_tape *t, const mp_tensor *x) {
    MP_TRY(check_usable(t));
    if (!mp_dtype_is_floating(x->dtype))
        return MP_OK; /* as TensorFlow: integer tensors cannot be watched (silently ignored) */
    pthread_mutex_lock(&t->mu);
    mp_status st = idset_add(&t->watched, x->id);
    pthread_mutex_unlock(&t->mu);
    return st;
}

static mp_status watch_variable(mp_tape *t, mp_variable *v);

mp_status mp_tape_watch_variable(mp_tape *t, mp_variable *v) {
    pthread_mutex_lock(&t->mu);
    mp_status st = watch_variable(t, v);
    pthread_mutex_unlock(&t->mu);
    return st;
}

static mp_status watch_variable(mp_tape *t, mp_variable *v) {
    MP_TRY(check_usable(t));
    if (!mp_dtype_is_floating(v->value->dtype) || idset_has(&t->watched, v->id))
        return MP_OK;
    MP_TRY(idset_add(&t->watched, v->id));
    if (t->n_vars == t->cap_vars) {
        size_t nc = t->cap_vars ? t->cap_vars * 2 : 16;
        mp_variable **nv = realloc(t->vars, nc * sizeof *nv);
        if (!nv)
            return mp_error_set(MP_ERR_MEMORY, "out of host memory on the tape");
        t->vars = nv;
        t->cap_vars = nc;
    }
    mp_variable_incref(v);
    t->vars[t->n_vars++] = v;
    return MP_OK;
}

int mp_tape_watched_variables(const mp_tape *t, mp_variable ***vars) {
    *vars = t->vars;
    return (int)t->n_vars;
}

static mp_status add_node_locked(mp_tape *t, mp_op op, int n_in, const int64_t *in_ids, mp_tensor *const *in,
                                 const mp_attrs *at, mp_tensor *out);

/* Another thread may be differentiating this tape (a misuse, which must not crash). */
static mp_status add_node(mp_tape *t, mp_op op, int n_in, const int64_t *in_ids, mp_tensor *const *in,
                          const mp_attrs *at, mp_tensor *out) {
    pthread_mutex_lock(&t->mu);
    mp_status st = add_node_locked(t, op, n_in, in_ids, in, at, out);
    pthread_mutex_unlock(&t->mu);
    return st;
}

static mp_status add_node_locked(mp_tape *t, mp_op op, int n_in, const int64_t *in_ids, mp_tensor *const *in,
                                 const mp_attrs *at, mp_tensor *out) {
    if (t->n_nodes == t->cap_nodes) {
        size_t nc = t->cap_nodes ? t->cap_nodes * 2 : 64;
        mp_node *nn = realloc(t->nodes, nc * sizeof *nn);
        if (!nn)
            return mp_error_set(MP_ERR_MEMORY, "out of host memory recording on the tape");
        t->nodes = nn;
        t->cap_nodes = nc;
    }
    mp_node *nd = &t->nodes[t->n_nodes];
    memset(nd, 0, sizeof *nd);
    nd->inputs = calloc((size_t)(n_in ? n_in : 1), sizeof *nd->inputs);
    nd->in_ids = calloc((size_t)(n_in ? n_in : 1), sizeof *nd->in_ids);
    if (!nd->inputs || !nd->in_ids) {
        free(nd->inputs);
        free(nd->in_ids);
        return mp_error_set(MP_ERR_MEMORY, "out of host memory recording on the tape");
    }
    MP_TRY(idset_add(&t->watched, out->id));
    nd->op = op;
    nd->n_in = n_in;
    if (at)
        nd->attrs = *at;
    for (int k = 0; k < n_in; k++) {
        nd->inputs[k] = in[k];
        mp_tensor_incref(in[k]);
        nd->in_ids[k] = in_ids ? in_ids[k] : in[k]->id;
    }
    nd->output = out;
    mp_tensor_incref(out);
    t->n_nodes++;
    return MP_OK;
}

/* Whether tape t watches one of the floating inputs (by ids[k] where given, else in[k]'s id). */
static int watches_an_input(mp_tape *t, int n_in, mp_tensor *const *in, const int64_t *ids) {
    for (int k = 0; k < n_in; k++)
        if (mp_dtype_is_floating(in[k]->dtype) && idset_has(&t->watched, ids ? ids[k] : in[k]->id))
            return 1;
    return 0;
}

mp_status mp_tape_record(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at, mp_tensor *out) {
    if (!mp_dtype_is_floating(out->dtype) || !mp_grad_is_differentiable(op))
        return MP_OK;
    prune_dropped();
    for (int i = first_recordable(); i < n_active; i++) {
        mp_tape *t = active[i];
        if (!t->recording)
            continue;
        if (watches_an_input(t, n_in, in, NULL))
            MP_TRY(add_node(t, op, n_in, NULL, in, at, out));
    }
    return MP_OK;
}

int mp_tape_would_record(int n_in, mp_tensor *const *in) {
    if (!mp_tape_recording())
        return 0;
    prune_dropped();
    for (int i = first_recordable(); i < n_active; i++)
        if (active[i]->recording && watches_an_input(active[i], n_in, in, NULL))
            return 1;
    return 0;
}

mp_status mp_tape_record_custom(int n_in, mp_tensor *const *in, const int64_t *in_ids, int n_out,
                                mp_tensor *const *outs, mp_custom_backward_fn fn, mp_custom_ref_fn ref,
                                void *ctx) {
    prune_dropped();
    for (int i = first_recordable(); i < n_active; i++) {
        mp_tape *t = active[i];
        if (!t->recording)
            continue;
        if (!watches_an_input(t, n_in, in, in_ids))
            continue;
        pthread_mutex_lock(&t->mu);
        mp_status st = MP_OK;
        for (int j = 0; j < n_out && st == MP_OK; j++) {
            st = add_node_locked(t, MP_OP_IDENTITY, n_in, in_ids, in, NULL, outs[j]);
            if (st != MP_OK)
                break;
            mp_node *nd = &t->nodes[t->n_nodes - 1];
            nd->custom_fn = fn;
            nd->custom_ref = ref;
            nd->custom_ctx = ctx;
            nd->custom_index = j;
            nd->custom_count = n_out;
            ref(ctx, +1);
        }
        pthread_mutex_unlock(&t->mu);
        MP_TRY(st);
    }
    return MP_OK;
}

mp_status mp_tape_record_read(mp_variable *v, mp_tensor *value, mp_tensor *out) {
    prune_dropped();
    for (int i = first_recordable(); i < n_active; i++) {
        mp_tape *t = active[i];
        if (!t->recording)
            continue;
        if (t->watch_accessed_variables && v->trainable && !t->used)
            MP_TRY(mp_tape_watch_variable(t, v));
        if (!idset_has(&t->watched, v->id))
            continue;
        mp_attrs at = {.dtype = (int)out->dtype};
        MP_TRY(add_node(t, out->dtype == value->dtype ? MP_OP_IDENTITY : MP_OP_CAST, 1, &v->id, &value, &at, out));
    }
    return MP_OK;
}

/* ------------------------------------------------------------------ backward walk */

typedef struct {
    int64_t *keys;
    mp_tensor **vals;
    size_t cap;
} gradmap;

static mp_status gm_init(gradmap *g, size_t expected) {
    size_t cap = 64;
    while (cap < expected * 2)
        cap *= 2;
    g->keys = calloc(cap, sizeof *g->keys);
    g->vals = calloc(cap, sizeof *g->vals);
    g->cap = cap;
    if (!g->keys || !g->vals) {
        free(g->keys);
        free(g->vals);
        return mp_error_set(MP_ERR_MEMORY, "out of host memory for gradients");
    }
    return MP_OK;
}

static mp_tensor **gm_slot(gradmap *g, int64_t k) {
    size_t i = hash_id(k) & (g->cap - 1);
    while (g->keys[i] && g->keys[i] != k)
        i = (i + 1) & (g->cap - 1);
    g->keys[i] = k;
    return &g->vals[i];
}

static void gm_free(gradmap *g) {
    for (size_t i = 0; i < g->cap; i++)
        mp_tensor_decref(g->vals[i]);
    free(g->keys);
    free(g->vals);
}

/* grads[k] += dx (takes the reference to dx) */
static mp_status accumulate(gradmap *g, int64_t id, mp_tensor *dx) {
    mp_tensor **slot = gm_slot(g, id);
    if (!*slot) {
        *slot = dx;
        return MP_OK;
    }
    mp_tensor *sum;
    mp_status st;
    if ((*slot)->dtype != dx->dtype) { /* a tensor read both as f16 and f32: add in the slot's dtype */
        mp_tensor *c;
        st = mp_cast(dx, (*slot)->dtype, &c);
        mp_tensor_decref(dx);
        if (st != MP_OK)
            return st;
        dx = c;
    }
    st = mp_binary(MP_OP_ADD, *slot, dx, &sum);
    mp_tensor_decref(dx);
    if (st != MP_OK)
        return st;
    mp_tensor_decref(*slot);
    *slot = sum;
    return MP_OK;
}

/* The custom node group ending at nodes[last]: one call with every output's dy. */
static mp_status custom_backward(mp_tape *t, size_t last, gradmap *g, const idset *relevant, int *need,
                                 mp_tensor **dx) {
    mp_node *nd = &t->nodes[last];
    int n = nd->custom_count, any = 0;
    mp_tensor *dys[n > 0 ? n : 1];
    for (int j = 0; j < n; j++) {
        mp_node *oj = &t->nodes[last - (size_t)(n - 1 - j)];
        mp_tensor **slot = gm_slot(g, oj->output->id);
        dys[j] = idset_has(relevant, oj->output->id) ? *slot : NULL;
        any |= dys[j] != NULL;
    }
    if (!any)
        return MP_OK;
    return nd->custom_fn(nd->custom_ctx, n, dys, nd->n_in, nd->inputs, need, dx);
}

static mp_status gradient_locked(mp_tape *t, int n_targets, mp_tensor *const *targets, mp_tensor *const *seeds,
                                 int n_src, const int64_t *src_ids, mp_tensor **grads);

mp_status mp_tape_gradient(mp_tape *t, int n_targets, mp_tensor *const *targets, mp_tensor *const *seeds,
                           int n_src, const int64_t *src_ids, mp_tensor **grads) {
    pthread_mutex_lock(&t->mu);
    mp_amp_suspend(1); /* the backward ops run on the dtypes the forward recorded */
    mp_status st = gradient_locked(t, n_targets, targets, seeds, n_src, src_ids, grads);
    mp_amp_suspend(-1);
    pthread_mutex_unlock(&t->mu);
    return st;
}

static mp_status gradient_locked(mp_tape *t, int n_targets, mp_tensor *const *targets, mp_tensor *const *seeds,
                                 int n_src, const int64_t *src_ids, mp_tensor **grads) {
    MP_TRY(check_usable(t));
    for (int j = 0; j < n_src; j++)
        grads[j] = NULL;
    /* relevance: which ids lead to a requested source */
    idset relevant = {0};
    mp_status st = MP_OK;
    for (int j = 0; j < n_src && st == MP_OK; j++)
        st = idset_add(&relevant, src_ids[j]);
    for (size_t i = 0; i < t->n_nodes && st == MP_OK; i++) {
        mp_node *nd = &t->nodes[i];
        for (int k = 0; k < nd->n_in; k++)
            if (idset_has(&relevant, nd->in_ids[k])) {
                st = idset_add(&relevant, nd->output->id);
                break;
            }
    }
    gradmap g = {0};
    if (st == MP_OK)
        st = gm_init(&g, t->n_nodes + (size_t)n_targets + (size_t)n_src);
    if (st != MP_OK) {
        idset_clear(&relevant);
        return st;
    }
    /* our own recording stops while we differentiate; outer tapes keep recording */
    int was_recording = t->recording;
    mp_tape_set_recording(t, 0);
    for (int i = 0; i < n_targets && st == MP_OK; i++) {
        mp_tensor *seed;
        if (!mp_dtype_is_floating(targets[i]->dtype))
            continue;
        if (seeds && seeds[i]) {
            seed = seeds[i];
            mp_tensor_incref(seed);
        } else {
            st = mp_full(targets[i]->dtype, targets[i]->ndim, targets[i]->shape, 1.0, mp_tensor_device(targets[i]),
                         &seed);
        }
        if (st == MP_OK)
            st = accumulate(&g, targets[i]->id, seed);
    }
    for (size_t i = t->n_nodes; i-- > 0 && st == MP_OK;) {
        mp_node *nd = &t->nodes[i];
        mp_tensor **dyp = gm_slot(&g, nd->output->id);
        if (nd->custom_fn) { /* a custom group is handled once, at its last output */
            if (nd->custom_index != nd->custom_count - 1)
                continue;
        } else if (!*dyp || !idset_has(&relevant, nd->output->id)) {
            continue;
        }
        int *need = calloc((size_t)nd->n_in + 1, sizeof *need), any = 0;
        mp_tensor **dx = calloc((size_t)nd->n_in + 1, sizeof *dx);
        if (!need || !dx) {
            free(need);
            free(dx);
            st = mp_error_set(MP_ERR_MEMORY, "out of host memory in the backward pass");
            break;
        }
        for (int k = 0; k < nd->n_in; k++) {
            need[k] = idset_has(&relevant, nd->in_ids[k]) && mp_dtype_is_floating(nd->inputs[k]->dtype);
            any |= need[k];
        }
        if (!any) {
            free(need);
            free(dx);
            continue;
        }
        mp_graph_static_backward++;
        st = nd->custom_fn ? custom_backward(t, i, &g, &relevant, need, dx) : mp_grad_apply(nd, *dyp, need, dx);
        mp_graph_static_backward--;
        for (int k = 0; k < nd->n_in; k++) {
            if (st == MP_OK && dx[k] && need[k]) {
                mp_graph_static_like(dx[k], nd->inputs[k]); /* (traced: its source's static shape) */
                st = accumulate(&g, nd->in_ids[k], dx[k]);
            }
            else
                mp_tensor_decref(dx[k]);
        }
        free(dx);
        free(need);
    }
    if (st == MP_OK) {
        for (int j = 0; j < n_src; j++) {
            mp_tensor **slot = gm_slot(&g, src_ids[j]);
            if (*slot) {
                grads[j] = *slot;
                mp_tensor_incref(grads[j]);
            }
        }
    }
    gm_free(&g);
    idset_clear(&relevant);
    mp_tape_set_recording(t, was_recording);
    if (st != MP_OK) {
        for (int j = 0; j < n_src; j++) {
            mp_tensor_decref(grads[j]);
            grads[j] = NULL;
        }
        return st;
    }
    if (!t->persistent) {
        t->used = 1;
        free_record(t);
    }
    return MP_OK;
}
