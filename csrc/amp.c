/* amp.c — automatic mixed precision in the core (see amp.h): the class table, autocast
 * at dispatch (mp_op_run asks it which inputs to cast), the recorder of a function's op
 * sequence and TensorFlow's colouring pass over plain arrays.
 * It must not run kernels itself (casts go through mp_op_run, so the tape records them)
 * and must not know how a graph layer stores its nodes. */
#include <stdlib.h>
#include <string.h>

#include "amp.h"
#include "graph.h"

/* ------------------------------------------------------------------ class table */

static const mp_amp_class default_class[MP_OP_COUNT] = {
#define MP_OP(NAME, tfname, pyname, nin, amp, family, kind) [MP_OP_##NAME] = MP_AMP_##amp,
#include "ops.def"
#undef MP_OP
};
static mp_amp_class cur_class[MP_OP_COUNT];
static int cur_class_set;

mp_amp_class mp_amp_class_of(mp_op op) {
    if ((int)op < 0 || op >= MP_OP_COUNT)
        return MP_AMP_NONE;
    return cur_class_set ? cur_class[op] : default_class[op];
}

void mp_amp_set_classes(const mp_amp_class *classes) {
    if (!classes) {
        cur_class_set = 0;
        return;
    }
    memcpy(cur_class, classes, sizeof cur_class);
    cur_class_set = 1;
}

int mp_amp_input_typed(mp_op op, int i) { return !(op == MP_OP_BATCH_NORM && i > 0); }

/* ------------------------------------------------------------------ autocast mode */

static int autocast_on;
static mp_dtype autocast_dtype = MP_F16;
static _Thread_local int scope_depth, suspended, internal;

mp_status mp_amp_autocast_set(int on, mp_dtype dtype) {
    if (on && dtype != MP_F16 && dtype != MP_BF16)
        return mp_error_set(MP_ERR_VALUE, "automatic mixed precision lowers to float16 or bfloat16, not %s",
                            mp_dtype_name(dtype));
    if (on)
        autocast_dtype = dtype;
    __atomic_store_n(&autocast_on, on != 0, __ATOMIC_RELAXED);
    return MP_OK;
}

int mp_amp_autocast_on(void) { return __atomic_load_n(&autocast_on, __ATOMIC_RELAXED); }
mp_dtype mp_amp_autocast_dtype(void) { return autocast_dtype; }
void mp_amp_scope_enter(void) { scope_depth++; }
void mp_amp_scope_exit(void) {
    if (scope_depth > 0)
        scope_depth--;
}
void mp_amp_suspend(int delta) { suspended += delta; }

enum { PLAN_KEEP, PLAN_LOWER, PLAN_RESTORE };

/* Cast without autocast or the recorder looking (the tape still records it). */
static mp_status internal_cast(mp_tensor *x, mp_dtype dt, mp_tensor **out) {
    internal++;
    mp_status st = mp_cast(x, dt, out);
    internal--;
    return st;
}

mp_status mp_amp_prepare(mp_op op, int n_in, mp_tensor *const *in, mp_tensor **cast_in, int *lower,
                         int *active) {
    *lower = 0;
    *active = 0;
    if (!mp_amp_autocast_on() || suspended || internal || op == MP_OP_CAST)
        return MP_OK; /* a Cast reads a lowered input directly: same values as from float32 */
    if (mp_graph_recording())
        return MP_OK; /* a trace records float32 ops: the graph pass rewrites them (amp_graph.c) */
    int n_float = 0, n_f32 = 0, n_low = 0, n_other = 0, n_untyped_low = 0;
    for (int i = 0; i < n_in; i++) {
        if (!mp_amp_input_typed(op, i))
            n_untyped_low += in[i]->amp_lowered;
        if (!mp_dtype_is_floating(in[i]->dtype) || !mp_amp_input_typed(op, i))
            continue;
        n_float++;
        if (in[i]->amp_lowered)
            n_low++;
        else if (in[i]->dtype == MP_F32)
            n_f32++;
        else
            n_other++;
    }
    if (!n_float && !n_untyped_low)
        return MP_OK;
    mp_amp_class c = mp_amp_class_of(op);
    int plan = PLAN_KEEP;
    if (n_other) /* a float16/float64 the user chose: the op runs as written */
        plan = n_low ? PLAN_RESTORE : PLAN_KEEP;
    else if (c == MP_AMP_ALLOW)
        plan = PLAN_LOWER;
    else if ((c == MP_AMP_INFER || c == MP_AMP_CLEAR) && n_low)
        plan = PLAN_LOWER;
    else if (n_low)
        plan = PLAN_RESTORE; /* deny and unlisted ops run in float32 */
    if (plan == PLAN_KEEP && !n_untyped_low)
        return MP_OK;
    mp_dtype low = autocast_dtype;
    for (int i = 0; i < n_in; i++) {
        mp_tensor *x = in[i];
        mp_status st = MP_OK;
        cast_in[i] = NULL;
        if (!mp_amp_input_typed(op, i)) {
            if (x->amp_lowered) /* a float32 parameter input: the value it stands for */
                st = internal_cast(x, MP_F32, &cast_in[i]);
            else {
                mp_tensor_incref(x);
                cast_in[i] = x;
            }
        } else if (plan == PLAN_LOWER && mp_dtype_is_floating(x->dtype) && x->dtype != low)
            st = internal_cast(x, low, &cast_in[i]);
        else if (plan == PLAN_RESTORE && x->amp_lowered)
            st = internal_cast(x, MP_F32, &cast_in[i]);
        else {
            mp_tensor_incref(x);
            cast_in[i] = x;
        }
        if (st != MP_OK) {
            for (int j = 0; j < i; j++)
                mp_tensor_decref(cast_in[j]);
            return st;
        }
        if (plan == PLAN_LOWER && mp_amp_input_typed(op, i) && mp_dtype_is_floating(cast_in[i]->dtype))
            cast_in[i]->amp_lowered = 1;
    }
    *lower = plan == PLAN_LOWER;
    *active = 1;
    return MP_OK;
}

int mp_amp_cast_passthrough(const mp_tensor *x, mp_dtype to) {
    return mp_amp_autocast_on() && !suspended && !internal && x->amp_lowered && to == MP_F32 &&
           !mp_graph_recording();
}

mp_status mp_amp_finish(mp_op op, int n_in, mp_tensor *const *in, int lower, mp_tensor **out) {
    mp_tensor *y = *out;
    if (!mp_amp_autocast_on() || !mp_dtype_is_floating(y->dtype) || y->dtype != autocast_dtype)
        return MP_OK;
    if (!lower && suspended) {
        /* the backward pass: a result computed from lowered values (or the gradient
         * casts of autocast's own casts) is a lowered float32 value too */
        for (int i = 0; i < n_in && !lower; i++)
            lower = in[i]->amp_lowered || (op == MP_OP_CAST && in[i]->dtype == MP_F32);
    }
    if (!lower)
        return MP_OK;
    y->amp_lowered = 1;
    if (scope_depth > 0 || suspended || internal)
        return MP_OK;
    mp_tensor *back;
    MP_TRY(internal_cast(y, MP_F32, &back)); /* handed back to the user: float32, as at a graph's edge */
    mp_tensor_decref(y);
    *out = back;
    return MP_OK;
}

mp_status mp_amp_restore(mp_tensor *x, mp_tensor **out) {
    if (x->amp_lowered && x->dtype != MP_F32)
        return internal_cast(x, MP_F32, out);
    mp_tensor_incref(x);
    *out = x;
    return MP_OK;
}

/* ------------------------------------------------------------------ recorder */

typedef struct recorder {
    int on;
    int n, cap;
    int *op, *is_f32;
    int64_t *out_id;
    int *in_off; /* n + 1 */
    int64_t *in_id;
    int n_in, cap_in;
    int64_t *alias;
    int64_t n_alias, cap_alias;
    int failed;
} recorder;
static _Thread_local recorder rec;

static void rec_clear(void) {
    free(rec.op), free(rec.is_f32), free(rec.out_id), free(rec.in_off), free(rec.in_id), free(rec.alias);
    memset(&rec, 0, sizeof rec);
}

mp_status mp_amp_record_begin(void) {
    rec_clear();
    rec.in_off = calloc(1, sizeof(int));
    if (!rec.in_off)
        return mp_error_set(MP_ERR_MEMORY, "out of memory starting the AMP recorder");
    rec.on = 1;
    return MP_OK;
}

int mp_amp_recording(void) { return rec.on && !internal; }

static int grow(void **p, int64_t *cap, int64_t need, size_t elem) {
    if (need <= *cap)
        return 1;
    int64_t nc = *cap ? *cap * 2 : 64;
    while (nc < need)
        nc *= 2;
    void *q = realloc(*p, (size_t)nc * elem);
    if (!q)
        return 0;
    *p = q;
    *cap = nc;
    return 1;
}

/* the float type of a node: its output's if floating, else its first floating input's */
static int node_flags(int n_in, mp_tensor *const *in, mp_tensor *out) {
    const mp_tensor *t = NULL;
    if (out && mp_dtype_is_floating(out->dtype))
        t = out;
    for (int i = 0; i < n_in && !t; i++)
        if (mp_dtype_is_floating(in[i]->dtype))
            t = in[i];
    int f = 0;
    if (t && (t->dtype == MP_F32 || t->amp_lowered))
        f |= 1;
    if (out && (out->dtype == MP_F32 || (out->amp_lowered && mp_dtype_is_floating(out->dtype))))
        f |= 2;
    return f;
}

void mp_amp_record_op(mp_op op, int n_in, mp_tensor *const *in, mp_tensor *out) {
    if (!rec.on || internal || rec.failed)
        return;
    if (op == MP_OP_CAST && n_in == 1 && mp_amp_autocast_on() && suspended &&
        (in[0]->amp_lowered || out->amp_lowered)) {
        /* the gradient of a cast autocast inserted: not the user's op */
        int64_t cap = rec.cap_alias;
        if (!grow((void **)&rec.alias, &cap, 2 * (rec.n_alias + 1), sizeof(int64_t))) {
            rec.failed = 1;
            return;
        }
        rec.cap_alias = cap;
        rec.alias[2 * rec.n_alias] = out->id;
        rec.alias[2 * rec.n_alias + 1] = in[0]->id;
        rec.n_alias++;
        return;
    }
    int64_t cap = rec.cap, cap2 = rec.cap;
    int64_t cap3 = rec.cap, cap4 = rec.cap + 1;
    int ok = grow((void **)&rec.op, &cap, rec.n + 1, sizeof(int)) &&
             grow((void **)&rec.is_f32, &cap2, rec.n + 1, sizeof(int)) &&
             grow((void **)&rec.out_id, &cap3, rec.n + 1, sizeof(int64_t)) &&
             grow((void **)&rec.in_off, &cap4, rec.n + 2, sizeof(int));
    int64_t capi = rec.cap_in;
    ok = ok && grow((void **)&rec.in_id, &capi, (int64_t)rec.n_in + n_in, sizeof(int64_t));
    if (!ok) {
        rec.failed = 1;
        return;
    }
    /* all four grew to the same capacity from the same start */
    rec.cap = (int)(cap < cap2 ? cap : cap2);
    if (cap3 < rec.cap)
        rec.cap = (int)cap3;
    if (cap4 - 1 < rec.cap)
        rec.cap = (int)(cap4 - 1);
    rec.cap_in = (int)capi;
    rec.op[rec.n] = (int)op;
    rec.is_f32[rec.n] = node_flags(n_in, in, out);
    rec.out_id[rec.n] = out->id;
    for (int i = 0; i < n_in; i++)
        if (mp_amp_input_typed(op, i)) /* the pass sees the edges of the op's float type */
            rec.in_id[rec.n_in++] = in[i]->id;
    rec.in_off[rec.n + 1] = rec.n_in;
    rec.n++;
}

mp_status mp_amp_record_end(mp_amp_trace **out) {
    *out = NULL;
    if (!rec.on)
        return MP_OK;
    if (rec.failed) {
        rec_clear();
        return mp_error_set(MP_ERR_MEMORY, "out of memory recording the function's ops for the AMP pass");
    }
    mp_amp_trace *t = calloc(1, sizeof *t);
    if (!t) {
        rec_clear();
        return mp_error_set(MP_ERR_MEMORY, "out of memory recording the function's ops for the AMP pass");
    }
    t->n_nodes = rec.n;
    t->op = rec.op;
    t->is_f32 = rec.is_f32;
    t->out_id = rec.out_id;
    t->in_off = rec.in_off;
    t->in_id = rec.in_id;
    t->n_alias = rec.n_alias;
    t->alias = rec.alias;
    memset(&rec, 0, sizeof rec); /* ownership moved to t */
    *out = t;
    return MP_OK;
}

void mp_amp_trace_free(mp_amp_trace *t) {
    if (!t)
        return;
    free(t->op), free(t->is_f32), free(t->out_id), free(t->in_off), free(t->in_id), free(t->alias);
    free(t);
}

/* ------------------------------------------------------------------ the colouring pass */

typedef struct graph {
    int n;
    const int *op, *kind, *is_f32, *in_off, *in_node;
    int *out_off, *out_node; /* fanout CSR */
    int *stack;
} graph;

static mp_amp_class cls(const graph *g, int i) { return g->op[i] < 0 ? MP_AMP_NONE : mp_amp_class_of((mp_op)g->op[i]); }
static int process(const graph *g, int i) { return g->kind[i] == MP_AMP_NODE_OP && g->op[i] >= 0 && (g->is_f32[i] & 1); }

enum { DIR_IN = 1, DIR_OUT = 2 };
typedef int (*enter_fn)(const graph *g, int root, int idx, void *ctx);
typedef void (*visit_fn)(int idx, void *ctx);

/* Depth-first from root along inputs and/or outputs; a node is entered (and visited) when
 * `enter` says so, at most once per traversal. */
static void dfs(const graph *g, int root, int dir, enter_fn enter, visit_fn visit, void *ctx, uint8_t *seen) {
    memset(seen, 0, (size_t)g->n);
    int sp = 0;
    if (!enter(g, root, root, ctx))
        return;
    g->stack[sp++] = root;
    seen[root] = 1;
    while (sp) {
        int i = g->stack[--sp];
        visit(i, ctx);
        if (dir & DIR_IN)
            for (int k = g->in_off[i]; k < g->in_off[i + 1]; k++) {
                int j = g->in_node[k];
                if (!seen[j] && enter(g, root, j, ctx)) {
                    seen[j] = 1;
                    g->stack[sp++] = j;
                }
            }
        if (dir & DIR_OUT)
            for (int k = g->out_off[i]; k < g->out_off[i + 1]; k++) {
                int j = g->out_node[k];
                if (!seen[j] && enter(g, root, j, ctx)) {
                    seen[j] = 1;
                    g->stack[sp++] = j;
                }
            }
    }
}

typedef struct sets {
    uint8_t *up_di;    /* clear nodes upstream of deny/infer (and those roots) */
    uint8_t *deny;
    uint8_t *down_a;   /* clear/infer nodes downstream of allow */
    uint8_t *up_a;
    uint8_t *allow;
    uint8_t *clear_prop;
} sets;

static void mark_up_di(int i, void *c) { ((sets *)c)->up_di[i] = 1; }
static int enter_up_di(const graph *g, int root, int i, void *c) {
    return i == root || (!((sets *)c)->up_di[i] && cls(g, i) == MP_AMP_CLEAR);
}
static void mark_deny(int i, void *c) { ((sets *)c)->deny[i] = 1; }
static int enter_deny(const graph *g, int root, int i, void *c) {
    (void)g;
    sets *s = c;
    return i == root || (!s->deny[i] && s->up_di[i]);
}
static void mark_down_a(int i, void *c) { ((sets *)c)->down_a[i] = 1; }
static int enter_down_a(const graph *g, int root, int i, void *c) {
    sets *s = c;
    mp_amp_class k = cls(g, i);
    return i == root || (!s->down_a[i] && k != MP_AMP_ALLOW && !s->deny[i] && process(g, i) &&
                         (g->is_f32[i] & 2) && (k == MP_AMP_CLEAR || k == MP_AMP_INFER));
}
static void mark_up_a(int i, void *c) {
    sets *s = c;
    s->up_a[i] = 1;
    s->allow[i] = 1;
}
static int enter_up_a(const graph *g, int root, int i, void *c) {
    (void)g;
    sets *s = c;
    return i == root || (!s->up_a[i] && s->down_a[i]);
}
static void mark_clear_prop(int i, void *c) {
    sets *s = c;
    s->clear_prop[i] = 1;
    s->allow[i] = 1;
}
static int enter_clear_prop(const graph *g, int root, int i, void *c) {
    sets *s = c;
    return i == root || (!s->allow[i] && !s->deny[i] && process(g, i) && (g->is_f32[i] & 2) &&
                         cls(g, i) == MP_AMP_CLEAR);
}

mp_status mp_amp_color(int n, const int *op, const int *kind, const int *is_f32, const int *in_off,
                       const int *in_node, int bf16, uint8_t *lowered, mp_amp_summary *sum) {
    memset(sum, 0, sizeof *sum);
    if (n < 0)
        return mp_error_set(MP_ERR_VALUE, "AMP pass: negative node count %d", n);
    if (n == 0)
        return MP_OK;
    if (in_off[0] != 0)
        return mp_error_set(MP_ERR_VALUE, "AMP pass: in_off[0] must be 0");
    for (int i = 0; i < n; i++) {
        if (in_off[i + 1] < in_off[i])
            return mp_error_set(MP_ERR_VALUE, "AMP pass: in_off must not decrease (node %d)", i);
        if (op[i] >= (int)MP_OP_COUNT || op[i] < -1)
            return mp_error_set(MP_ERR_VALUE, "AMP pass: node %d has unknown op %d", i, op[i]);
    }
    int m = in_off[n];
    for (int k = 0; k < m; k++)
        if (in_node[k] < 0 || in_node[k] >= n)
            return mp_error_set(MP_ERR_VALUE, "AMP pass: an input edge names node %d of %d", in_node[k], n);

    graph g = {n, op, kind, is_f32, in_off, in_node, NULL, NULL, NULL};
    uint8_t *mem = calloc((size_t)n, 7);
    g.out_off = calloc((size_t)n + 1, sizeof(int));
    g.out_node = malloc(sizeof(int) * (size_t)(m ? m : 1));
    g.stack = malloc(sizeof(int) * ((size_t)n + (size_t)m + 1));
    if (!mem || !g.out_off || !g.out_node || !g.stack) {
        free(mem), free(g.out_off), free(g.out_node), free(g.stack);
        return mp_error_set(MP_ERR_MEMORY, "out of memory in the AMP pass (%d nodes)", n);
    }
    for (int k = 0; k < m; k++)
        g.out_off[in_node[k] + 1]++;
    for (int i = 0; i < n; i++)
        g.out_off[i + 1] += g.out_off[i];
    int *fill = g.stack; /* scratch: next free slot per producer */
    memcpy(fill, g.out_off, sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++)
        for (int k = in_off[i]; k < in_off[i + 1]; k++)
            g.out_node[fill[in_node[k]]++] = i;

    sets s = {mem, mem + n, mem + 2 * n, mem + 3 * n, mem + 4 * n, mem + 5 * n};
    uint8_t *seen = mem + 6 * n;

    /* 1. allow-list ops */
    for (int i = 0; i < n; i++)
        if (process(&g, i) && cls(&g, i) == MP_AMP_ALLOW)
            s.allow[i] = 1;
    /* 2. deny forward through clear/infer nodes that lead (through clear nodes) to a deny
     *    or infer node: deny -> infer -> clear -> allow keeps the clear node free */
    for (int i = 0; i < n; i++) {
        mp_amp_class k = cls(&g, i);
        if (k == MP_AMP_DENY || k == MP_AMP_INFER)
            dfs(&g, i, DIR_IN, enter_up_di, mark_up_di, &s, seen);
    }
    for (int i = 0; i < n; i++)
        if (!s.deny[i] && process(&g, i) && cls(&g, i) == MP_AMP_DENY)
            dfs(&g, i, DIR_OUT, enter_deny, mark_deny, &s, seen);
    /* 3. clear/infer nodes between two allow nodes join them */
    for (int i = 0; i < n; i++)
        if (process(&g, i) && cls(&g, i) == MP_AMP_ALLOW)
            dfs(&g, i, DIR_OUT, enter_down_a, mark_down_a, &s, seen);
    for (int i = 0; i < n; i++)
        if (process(&g, i) && !s.up_a[i] && cls(&g, i) == MP_AMP_ALLOW)
            dfs(&g, i, DIR_IN, enter_up_a, mark_up_a, &s, seen);
    /* 4. (bfloat16 only) an infer node fed by an allow node, and by no deny node */
    if (bf16)
        for (int i = 0; i < n; i++) {
            if (!process(&g, i) || s.deny[i] || s.allow[i] || cls(&g, i) != MP_AMP_INFER)
                continue;
            int has_allow = 0;
            for (int k = in_off[i]; k < in_off[i + 1]; k++) {
                if (s.deny[in_node[k]]) {
                    has_allow = 0;
                    break;
                }
                if (s.allow[in_node[k]])
                    has_allow = 1;
            }
            if (has_allow)
                s.allow[i] = 1;
        }
    /* 5. allow spreads through connected clear nodes, both directions */
    for (int i = 0; i < n; i++)
        if (process(&g, i) && !s.clear_prop[i] && s.allow[i])
            dfs(&g, i, DIR_IN | DIR_OUT, enter_clear_prop, mark_clear_prop, &s, seen);
    /* 6. a Cast to float32 whose every consumer is lowered casts to the 16-bit type instead */
    for (int i = 0; i < n; i++) {
        if (op[i] != MP_OP_CAST || !process(&g, i) || s.allow[i] || !(is_f32[i] & 2) ||
            g.out_off[i] == g.out_off[i + 1])
            continue;
        int all = 1;
        for (int k = g.out_off[i]; k < g.out_off[i + 1]; k++)
            all &= s.allow[g.out_node[k]];
        if (all)
            s.allow[i] = 1;
    }

    /* casts at colour boundaries: one per (producer, direction), as the rewrite shares
     * a cast among the consumers of one output */
    for (int i = 0; i < n; i++) {
        if (!(is_f32[i] & 2))
            continue;
        int to_low = 0, to_f32 = 0;
        for (int k = g.out_off[i]; k < g.out_off[i + 1]; k++) {
            int j = g.out_node[k];
            if (s.allow[j] && !s.allow[i])
                to_low = 1;
            if (!s.allow[j] && s.allow[i])
                to_f32 = 1;
        }
        sum->casts_total += to_low + to_f32;
        if (to_low && kind[i] != MP_AMP_NODE_VARIABLE && kind[i] != MP_AMP_NODE_CONST)
            sum->casts_to_lowered++;
    }
    sum->total_nodes = n;
    int64_t deny_n = 0;
    for (int i = 0; i < n; i++) {
        mp_amp_class k = cls(&g, i);
        lowered[i] = s.allow[i];
        if (process(&g, i) && k != MP_AMP_NONE)
            sum->recognized++;
        sum->converted += s.allow[i];
        if (s.allow[i] && k == MP_AMP_ALLOW)
            sum->allowlisted++;
        if (process(&g, i) && k == MP_AMP_DENY)
            sum->denylisted++;
        deny_n += s.deny[i];
    }
    sum->blocked = deny_n - sum->denylisted;
    if (sum->blocked < 0)
        sum->blocked = 0;
    free(mem), free(g.out_off), free(g.out_node), free(g.stack);
    return MP_OK;
}
