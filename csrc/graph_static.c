/* graph_static.c — static shapes of a traced graph: which dimensions of each recorded
 * value are unknown (None) for every shape the graph stands for (TensorFlow's shape
 * inference, driven from ops.def: an op whose family or case gives no rule gets every
 * dimension unknown as soon as an input has one, never a concrete guess).
 * Owns the per-op rules only; it must not change a node's concrete shape or any value. */
#include <string.h>

#include "graph.h"

enum { SF_UNARY, SF_BINARY, SF_COMPARE, SF_REDUCE, SF_OTHER };

static const unsigned char family[MP_OP_COUNT] = {
#define MP_OP(NAME, tfname, pyname, nin, amp, fam, kind) [MP_OP_##NAME] = SF_##fam,
#include "ops.def"
#undef MP_OP
};

#define ALL(nd) ((nd) >= 32 ? 0xffffffffu : ((1u << (nd)) - 1u))
#define BIT(m, d) (((m) >> (d)) & 1u)

static const mp_gnode *in_node(const mp_graph *g, const mp_gnode *n, int k) {
    return k < n->n_in && n->in[k].node >= 0 ? &g->nodes[n->in[k].node] : NULL;
}

static uint32_t in_bits(const mp_graph *g, const mp_gnode *n, int k) {
    const mp_gnode *s = in_node(g, n, k);
    return s ? s->unknown : 0;
}

/* NumPy broadcasting of the inputs [from, to): a dimension is known when some input has it
 * known and not 1 (or every input has it known). */
static uint32_t broadcast(const mp_graph *g, const mp_gnode *n, int from, int to) {
    uint32_t out = 0;
    for (int d = 0; d < n->ndim; d++) {
        int known_big = 0, unknown = 0;
        for (int k = from; k < to; k++) {
            const mp_gnode *s = in_node(g, n, k);
            if (!s)
                continue;
            int e = d - (n->ndim - s->ndim);
            if (e < 0)
                continue;
            if (BIT(s->unknown, e))
                unknown = 1;
            else if (s->shape[e] != 1)
                known_big = 1;
        }
        if (unknown && !known_big)
            out |= 1u << d;
    }
    return out;
}

/* out = x's dimensions with dimension `drop` removed (or kept known as 1). */
static uint32_t drop_dim(uint32_t x, int nd, int drop, int keep_one) {
    uint32_t out = 0;
    int o = 0;
    for (int d = 0; d < nd; d++) {
        if (d == drop) {
            if (keep_one)
                o++;
            continue;
        }
        out |= BIT(x, d) << o++;
    }
    return out;
}

/* window ops over NHWC (layout 0) or NCHW (1): batch and spatial dimensions from x, the
 * channels from `ch` (unknown bit), a formula of the known sizes and attributes otherwise */
static uint32_t window(uint32_t x, int layout, int ch_unknown) {
    int c = layout ? 1 : 3, h = layout ? 2 : 1, w = layout ? 3 : 2;
    return (BIT(x, 0) << 0) | (BIT(x, h) << h) | (BIT(x, w) << w) | ((uint32_t)(ch_unknown != 0) << c);
}

static uint32_t matmul(const mp_graph *g, const mp_gnode *n) {
    const mp_gnode *a = in_node(g, n, 0), *b = in_node(g, n, 1);
    if (!a || !b || a->ndim < 2 || b->ndim < 2 || n->ndim < 2)
        return ALL(n->ndim);
    int r = n->ndim;
    uint32_t out = 0;
    int am = n->attrs.i0 ? a->ndim - 1 : a->ndim - 2;
    int bn = n->attrs.i1 ? b->ndim - 2 : b->ndim - 1;
    out |= BIT(a->unknown, am) << (r - 2);
    out |= BIT(b->unknown, bn) << (r - 1);
    for (int d = 0; d < r - 2; d++) { /* batch dimensions broadcast */
        int ea = d - (r - a->ndim), eb = d - (r - b->ndim);
        int ua = ea >= 0 && BIT(a->unknown, ea), ub = eb >= 0 && BIT(b->unknown, eb);
        int ka = ea >= 0 && !ua && a->shape[ea] != 1, kb = eb >= 0 && !ub && b->shape[eb] != 1;
        if ((ua || ub) && !ka && !kb)
            out |= 1u << d;
    }
    return out;
}

/* Ops whose output sizes come from attributes set at trace time (a reshape's target, a
 * fill's shape, a gradient's broadcast): once the graph holds an unknown dimension such a
 * size may have been taken from it, so they are unknown (Python faces that know better,
 * a user's own reshape target, refine them with mp_graph_set_static_unknown). */
static int sized_by_attrs(mp_op op) {
    switch (op) {
    case MP_OP_FILL:
    case MP_OP_RANGE:
    case MP_OP_RANDOM_UNIFORM:
    case MP_OP_RANDOM_NORMAL:
    case MP_OP_TRUNCATED_NORMAL:
    case MP_OP_STRIDED_SLICE_GRAD:
    case MP_OP_CONV2D_BACKPROP_INPUT:
    case MP_OP_AVG_POOL_GRAD: return 1;
    default: return 0;
    }
}

/* A reshape: the input and output dimensions split into groups of equal element counts
 * (prefix products); a group of one dimension on each side keeps its bit, a group of known
 * inputs is known, a group holding an unknown input is unknown. An unknown input whose
 * traced size is 0 or 1 makes the grouping ambiguous: every dimension unknown. */
static uint32_t reshape(const mp_graph *g, const mp_gnode *n) {
    const mp_gnode *s = in_node(g, n, 0);
    int ni = s ? s->ndim : 0, no = n->ndim;
    if (!s)
        return ALL(no);
    for (int d = 0; d < ni; d++)
        if (s->shape[d] == 0 || (BIT(s->unknown, d) && s->shape[d] == 1))
            return ALL(no);
    for (int d = 0; d < no; d++)
        if (n->shape[d] == 0)
            return ALL(no);
    uint32_t out = 0;
    int i = 0, j = 0;
    while (i < ni || j < no) {
        int i0 = i, j0 = j;
        int64_t pi = 1, pj = 1;
        if (i < ni)
            pi *= s->shape[i++];
        if (j < no)
            pj *= n->shape[j++];
        while (pi != pj) {
            if (pi < pj && i < ni)
                pi *= s->shape[i++];
            else if (pj < pi && j < no)
                pj *= n->shape[j++];
            else
                return ALL(no);
        }
        uint32_t u = 0;
        for (int d = i0; d < i; d++)
            u |= BIT(s->unknown, d);
        if (i - i0 == 1 && j - j0 == 1)
            out |= u << j0;
        else if (u)
            for (int d = j0; d < j; d++)
                out |= 1u << d;
    }
    return out;
}

static int graph_has_unknown(const mp_graph *g) {
    for (; g; g = g->parent)
        if (g->static_unknown)
            return 1;
    return 0;
}

_Thread_local int mp_graph_static_backward;

static int graph_tainted(const mp_graph *g) {
    for (; g; g = g->parent)
        if (g->static_tainted)
            return 1;
    return 0;
}

void mp_graph_static_taint(void) {
    for (mp_graph *g = mp_graph_recording(); g; g = g->parent)
        g->static_tainted = 1;
}

uint32_t mp_graph_static_rule(const mp_graph *g, const mp_gnode *n) {
    int nd = n->ndim;
    uint32_t any = 0, x = in_bits(g, n, 0);
    for (int k = 0; k < n->n_in; k++)
        any |= in_bits(g, n, k);
    const mp_attrs *at = &n->attrs;
    switch (n->op) { /* value-dependent sizes: unknown whatever the inputs */
    case MP_OP_RANGE_T:
    case MP_OP_UNIQUE:
    case MP_OP_STRIDED_SLICE_T:
    case MP_OP_SLICE_T: return ALL(nd);
    case MP_OP_WHERE_INDICES: return nd ? 1u : 0u;
    case MP_OP_SEGMENT_REDUCE: {
        const mp_gnode *ids = in_node(g, n, 1);
        int skip = ids ? ids->ndim : 1;
        uint32_t out = (at->i2 || graph_has_unknown(g)) ? 1u : 0u;
        for (int d = 1; d < nd; d++)
            out |= BIT(x, d - 1 + skip) << d;
        return out;
    }
    default: break;
    }
    int open = graph_has_unknown(g);
    if (sized_by_attrs(n->op) && open) /* (a user's literal sizes until a real size was read) */
        return graph_tainted(g) || mp_graph_static_backward ? ALL(nd) : 0;
    /* sized by attributes, but their rule keeps only what follows from the input */
    int by_rule = open && (n->op == MP_OP_BROADCAST_TO || n->op == MP_OP_GATHER_GRAD);
    if (!any && !by_rule)
        return 0;
    switch (family[n->op]) {
    case SF_UNARY: return x & ALL(nd);
    case SF_BINARY:
    case SF_COMPARE: return broadcast(g, n, 0, n->n_in);
    case SF_REDUCE: {
        uint32_t out = 0;
        int reduced[MP_MAX_DIMS] = {0}, o = 0;
        const mp_gnode *s = in_node(g, n, 0);
        for (int i = 0; i < at->n_ints && i < MP_MAX_DIMS; i++)
            if (at->ints[i] >= 0 && at->ints[i] < MP_MAX_DIMS)
                reduced[at->ints[i]] = 1;
        for (int d = 0; s && d < s->ndim; d++) {
            if (!reduced[d])
                out |= BIT(x, d) << o++;
            else if (at->i0)
                o++;
        }
        return o == nd ? out : ALL(nd);
    }
    default: break;
    }
    switch (n->op) {
    case MP_OP_CAST:
    case MP_OP_IDENTITY:
    case MP_OP_STOP_GRADIENT:
    case MP_OP_SOFTMAX:
    case MP_OP_LOG_SOFTMAX:
    case MP_OP_CUMSUM:
    case MP_OP_CUMPROD:
    case MP_OP_CUMULATIVE_LOGSUMEXP:
    case MP_OP_REVERSE:
    case MP_OP_ROLL:
    case MP_OP_MATRIX_INVERSE:
    case MP_OP_ALL_REDUCE:
    case MP_OP_BATCH_NORM:
    case MP_OP_BATCH_MOMENTS_GRAD:
    case MP_OP_MAX_POOL_GRAD:
    case MP_OP_TENSOR_SCATTER_UPDATE:
    case MP_OP_TENSOR_SCATTER_ADD:
    case MP_OP_TENSOR_SCATTER_SUB:
    case MP_OP_TENSOR_SCATTER_MIN:
    case MP_OP_TENSOR_SCATTER_MAX: return x & ALL(nd);
    case MP_OP_WHERE: return broadcast(g, n, 0, 3);
    case MP_OP_SHAPE: return 0;
    case MP_OP_STRIDED_SLICE_T_GRAD: return in_bits(g, n, 1) & ALL(nd);
    case MP_OP_ARGMAX:
    case MP_OP_ARGMIN: return drop_dim(x, nd + 1, (int)at->i0, 0);
    case MP_OP_MATMUL:
    case MP_OP_MATMUL_BIAS_ACT: return matmul(g, n);
    case MP_OP_TRANSPOSE: {
        uint32_t out = 0;
        for (int d = 0; d < nd && d < at->n_ints; d++)
            out |= BIT(x, at->ints[d]) << d;
        return out;
    }
    case MP_OP_CONCAT: {
        uint32_t out = 0;
        for (int d = 0; d < nd; d++) {
            int all_unknown = 1, some_unknown = 0;
            for (int k = 0; k < n->n_in; k++) {
                int u = (int)BIT(in_bits(g, n, k), d);
                all_unknown &= u;
                some_unknown |= u;
            }
            if (d == at->i0 ? some_unknown : all_unknown)
                out |= 1u << d;
        }
        return out;
    }
    case MP_OP_STACK: {
        uint32_t out = 0;
        for (int d = 0, e = 0; d < nd; d++) {
            if (d == at->i0)
                continue;
            int all_unknown = 1;
            for (int k = 0; k < n->n_in; k++)
                all_unknown &= (int)BIT(in_bits(g, n, k), e);
            out |= (uint32_t)all_unknown << d;
            e++;
        }
        return out;
    }
    case MP_OP_RESHAPE: return reshape(g, n);
    case MP_OP_STRIDED_SLICE: {
        /* a dimension sliced whole stays; a sliced unknown one is unknown (its count came
         * from the traced size) */
        const mp_gnode *s = in_node(g, n, 0);
        uint32_t out = 0;
        int o = 0;
        for (int d = 0; s && d < s->ndim; d++) {
            if ((at->i0 >> d) & 1)
                continue;
            out |= BIT(x, d) << o++;
        }
        return o == nd ? out : ALL(nd);
    }
    case MP_OP_BROADCAST_TO: {
        const mp_gnode *s = in_node(g, n, 0);
        uint32_t out = 0;
        for (int d = 0; d < nd; d++) {
            int e = s ? d - (nd - s->ndim) : -1;
            /* from the input, or (new, or broadcast from 1) the target's size: a user's
             * literal until a real size was read */
            if (e >= 0 && BIT(x, e))
                out |= 1u << d;
            else if ((e < 0 || s->shape[e] == 1) && (graph_tainted(g) || mp_graph_static_backward))
                out |= 1u << d;
        }
        return out;
    }
    case MP_OP_ONE_HOT: return x & ALL(nd);
    case MP_OP_SPARSE_SOFTMAX_XENT:
    case MP_OP_SOFTMAX_XENT: return x & ALL(nd);
    case MP_OP_CONV2D:
    case MP_OP_CONV2D_BIAS_ACT: {
        const mp_gnode *f = in_node(g, n, 1);
        return nd == 4 ? window(x, (int)at->i0, f ? (int)BIT(f->unknown, 3) : 1) : ALL(nd);
    }
    case MP_OP_MAX_POOL:
    case MP_OP_AVG_POOL:
    case MP_OP_MAX_POOL_GRAD_GRAD:
        return nd == 4 ? window(x, (int)at->i0, (int)BIT(x, at->i0 ? 1 : 3)) : ALL(nd);
    case MP_OP_CONV2D_BACKPROP_FILTER: return 0;
    case MP_OP_BATCH_MOMENTS:
    case MP_OP_BATCH_NORM_GRAD_SUMS: {
        const mp_gnode *s = in_node(g, n, 0);
        int c = !s ? 0 : at->i0 ? 1 : s->ndim - 1;
        return nd == 2 ? BIT(x, c) << 1 : ALL(nd);
    }
    case MP_OP_INDEX_T: return (x >> 1) & ALL(nd);
    case MP_OP_GATHER: {
        const mp_gnode *p = in_node(g, n, 0), *i = in_node(g, n, 1);
        if (!p || !i)
            return ALL(nd);
        int axis = (int)(at->i0 < 0 ? at->i0 + p->ndim : at->i0);
        uint32_t out = p->unknown & ALL(axis);
        out |= (i->unknown & ALL(i->ndim)) << axis;
        out |= (p->unknown >> (axis + 1)) << (axis + i->ndim);
        return out & ALL(nd);
    }
    case MP_OP_GATHER_ND: {
        const mp_gnode *p = in_node(g, n, 0), *i = in_node(g, n, 1);
        if (!p || !i || i->ndim < 1 || BIT(i->unknown, i->ndim - 1))
            return ALL(nd);
        int kk = (int)i->shape[i->ndim - 1], lead = i->ndim - 1;
        return ((i->unknown & ALL(lead)) | ((p->unknown >> kk) << lead)) & ALL(nd);
    }
    case MP_OP_TOP_K: return x & ALL(nd) & ~(1u << (nd - 1));
    case MP_OP_MATRIX_DETERMINANT: return x & ALL(nd);
    case MP_OP_GATHER_GRAD: {
        const mp_gnode *i = in_node(g, n, 1);
        int axis = (int)at->i0, ir = i ? i->ndim : 1;
        if (axis < 0)
            axis += nd;
        uint32_t out = (x & ALL(axis)) | (1u << axis);
        out |= (x >> (axis + ir)) << (axis + 1);
        return out & ALL(nd);
    }
    default: return ALL(nd); /* no rule: every dimension unknown */
    }
}

static mp_gnode *rec_node(const mp_tensor *x, mp_graph **owner);

uint32_t mp_graph_static_unknown(const mp_tensor *x) {
    mp_graph *g = NULL;
    const mp_gnode *n = x ? rec_node(x, &g) : NULL;
    return n ? n->unknown : 0;
}

mp_status mp_graph_set_static_unknown(const mp_tensor *x, uint32_t bits) {
    mp_graph *g = NULL;
    mp_gnode *n = x ? rec_node(x, &g) : NULL;
    if (!n)
        return mp_error_set(MP_ERR_VALUE, "the tensor is not recorded by the tracing graph");
    n->unknown = bits & ALL(n->ndim);
    if (n->unknown)
        g->static_unknown = 1;
    return MP_OK;
}

/* the graph.c lookup, exported under a private name */
mp_gnode *mp_graph_node_of_(const mp_tensor *x, mp_graph **owner);
static mp_gnode *rec_node(const mp_tensor *x, mp_graph **owner) { return mp_graph_node_of_(x, owner); }

void mp_graph_static_like(const mp_tensor *out, const mp_tensor *like) {
    mp_graph *go = NULL, *gl = NULL;
    mp_gnode *n = out && like ? rec_node(out, &go) : NULL;
    const mp_gnode *l = n ? rec_node(like, &gl) : NULL;
    if (!n || out->ndim != like->ndim || memcmp(out->shape, like->shape, sizeof(int64_t) * (size_t)out->ndim))
        return;
    n->unknown = l ? l->unknown : 0;
    if (n->unknown)
        go->static_unknown = 1;
}
