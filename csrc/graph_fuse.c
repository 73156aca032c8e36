/* graph_fuse.c — the remapper's fusions on a traced graph (graph.h): Conv2D / MatMul
 * followed by the add of a channel bias (and a Relu) become one CONV2D_BIAS_ACT /
 * MATMUL_BIAS_ACT node, as TensorFlow's remapper makes _FusedConv2D / _FusedMatMul inside
 * tf.function; a fused op without activation read by one Relu takes the Relu in, and so
 * does a BatchNorm (its act attr: scale, shift and ReLU in one pass); a ReluGrad over a
 * MaxPoolGrad of the same x (the backward of ReLU then max pooling) becomes one MaxPoolGrad
 * with ReLU's gradient (its act attr; mixprec's fusion, TensorFlow's remapper has none).
 * It only rewires nodes through graph.h's pass API; it must not compute values
 * nor know how graph.c replays (the fused ops' arithmetic and backward live in the op layer). */
#include <stdlib.h>
#include <string.h>

#include "graph.h"

/* readers of each node's output: edges from nodes, plus graph outputs */
static int *count_readers(const mp_graph *g) {
    int *cnt = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *cnt);
    if (!cnt)
        return NULL;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++)
            if (g->nodes[i].in[k].node >= 0)
                cnt[g->nodes[i].in[k].node]++;
    for (int o = 0; o < g->n_outputs; o++)
        if (g->outputs[o].node >= 0)
            cnt[g->outputs[o].node]++;
    return cnt;
}

static int is_op(const mp_gnode *n, mp_op op) { return n->kind == MP_GNODE_OP && n->op == op; }

static int same_shape(const mp_gnode *a, const mp_gnode *b) {
    return a->ndim == b->ndim && memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof *a->shape) == 0;
}

/* Is node c a contraction whose output the fused op can produce with a bias of length
 * c's last dimension? Conv2D over NHWC (NCHW's channels are not the last axis) or a MatMul
 * of two matrices; a floating dtype (the fused ops' rule). */
static mp_op fusable_contraction(const mp_graph *g, const mp_gnode *c) {
    if (c->kind != MP_GNODE_OP || c->n_out != 1 || !mp_dtype_is_floating(c->dtype) || c->ndim < 1)
        return MP_OP_COUNT;
    if (c->op == MP_OP_CONV2D && c->n_in == 2 && c->attrs.i0 == 0 && c->ndim == 4)
        return MP_OP_CONV2D_BIAS_ACT;
    if (c->op == MP_OP_MATMUL && c->n_in == 2 && c->ndim == 2 && g->nodes[c->in[0].node].ndim == 2 &&
        g->nodes[c->in[1].node].ndim == 2)
        return MP_OP_MATMUL_BIAS_ACT;
    return MP_OP_COUNT;
}

/* Add node a = c + b (either order) with c a fusable contraction read only by a, and b a
 * vector over c's last axis of c's dtype: *ci gets c, *bias b's edge; the fused op or
 * MP_OP_COUNT. */
static mp_op match_bias_add(const mp_graph *g, const int *readers, int a, int *ci, mp_gedge *bias) {
    const mp_gnode *an = &g->nodes[a];
    if (!is_op(an, MP_OP_ADD) || an->n_in != 2 || an->n_out != 1)
        return MP_OP_COUNT;
    for (int k = 0; k < 2; k++) {
        int c = an->in[k].node, b = an->in[1 - k].node;
        if (c < 0 || b < 0 || c == b || readers[c] != 1 || (g->nodes[c].flags & MP_GNODE_FLAG_OUTPUT))
            continue;
        const mp_gnode *cn = &g->nodes[c], *bn = &g->nodes[b];
        mp_op f = fusable_contraction(g, cn);
        if (f == MP_OP_COUNT || !same_shape(cn, an) || cn->dtype != an->dtype || bn->n_out != 1 ||
            bn->dtype != cn->dtype || bn->ndim != 1 || bn->shape[0] != cn->shape[cn->ndim - 1] ||
            !mp_device_eq(bn->device, cn->device))
            continue;
        *ci = c;
        *bias = an->in[1 - k];
        return f;
    }
    return MP_OP_COUNT;
}

/* The one Relu reading node a, when a's other readers are only ReluGrad nodes after it
 * taking a as their features (ReluGrad(z, dy) == ReluGrad(relu(z), dy) for every z, NaN
 * and -0 included, so those read the fused output instead); -1 otherwise. */
static int match_relu(const mp_graph *g, const int *readers, int a) {
    if (g->nodes[a].flags & MP_GNODE_FLAG_OUTPUT)
        return -1;
    int relu = -1, seen = 0;
    for (int j = a + 1; j < g->n_nodes; j++) {
        const mp_gnode *n = &g->nodes[j];
        for (int k = 0; k < n->n_in; k++) {
            if (n->in[k].node != a)
                continue;
            seen++;
            if (is_op(n, MP_OP_RELU) && n->n_in == 1 && relu < 0)
                relu = j;
            else if (!(is_op(n, MP_OP_RELU_GRAD) && k == 0 && n->in[1].node != a && relu >= 0))
                return -1;
        }
    }
    return relu >= 0 && seen == readers[a] ? relu : -1;
}

/* Node n becomes the fused op over (x, filter or b, bias) with the contraction's attributes
 * and activation act. */
static mp_status make_fused(mp_gnode *n, mp_op op, const mp_gedge *xw, mp_gedge bias, const mp_attrs *at, int flags,
                            int act) {
    if (n->n_in < 3) {
        mp_gedge *in = realloc(n->in, 3 * sizeof *in);
        if (!in)
            return mp_error_set(MP_ERR_MEMORY, "out of host memory fusing a graph node");
        n->in = in;
    }
    n->in[0] = xw[0];
    n->in[1] = xw[1];
    n->in[2] = bias;
    n->n_in = 3;
    n->op = op;
    n->attrs = *at;
    n->attrs.i2 = act;
    n->flags |= flags & ~MP_GNODE_FLAG_OUTPUT;
    return MP_OK;
}

/* The Relu node r took over node a's value: the ReluGrads reading a read r, a reads nothing
 * (no reader is left: the pruning drops it). */
static void relu_took(mp_graph *g, int *readers, int a, int r) {
    for (int j = r + 1; j < g->n_nodes; j++)
        if (is_op(&g->nodes[j], MP_OP_RELU_GRAD) && g->nodes[j].in[0].node == a) {
            g->nodes[j].in[0].node = r;
            readers[r]++;
        }
    for (int k = 0; k < g->nodes[a].n_in; k++)
        g->nodes[a].in[k].node = -1;
    readers[a] = 0;
}

/* Node r (the Relu) becomes BatchNorm + ReLU over batch-norm node b's five inputs. */
static mp_status make_bn_relu(mp_gnode *r, const mp_gnode *b) {
    mp_gedge *in = realloc(r->in, 5 * sizeof *in);
    if (!in)
        return mp_error_set(MP_ERR_MEMORY, "out of host memory fusing a graph node");
    memcpy(in, b->in, 5 * sizeof *in);
    r->in = in;
    r->n_in = 5;
    r->op = MP_OP_BATCH_NORM;
    r->attrs = b->attrs;
    r->attrs.i2 = 1;
    r->flags |= b->flags & ~MP_GNODE_FLAG_OUTPUT;
    return MP_OK;
}

/* ReluGrad node r = ReluGrad(f, d) with d = MaxPoolGrad(x, y, dy), f = x (a fused op's ReLU
 * output, or a Relu whose gradients relu_took rewired) or x = Relu(f); NHWC, d read only by
 * r: d's index, -1 otherwise */
static int match_pool_relu_grad(const mp_graph *g, const int *readers, int r) {
    const mp_gnode *rn = &g->nodes[r];
    if (!is_op(rn, MP_OP_RELU_GRAD) || rn->n_in != 2 || rn->n_out != 1)
        return -1;
    int d = rn->in[1].node;
    if (d < 0 || d == rn->in[0].node || rn->in[0].node < 0 || readers[d] != 1)
        return -1;
    const mp_gnode *dn = &g->nodes[d];
    if (!is_op(dn, MP_OP_MAX_POOL_GRAD) || dn->n_in != 3 || dn->n_out != 1 || dn->attrs.i2 != 0 ||
        dn->attrs.i0 != 0 || (dn->flags & MP_GNODE_FLAG_OUTPUT) || dn->in[0].node < 0 || dn->dtype != rn->dtype ||
        !same_shape(dn, rn) || !mp_dtype_is_floating(rn->dtype))
        return -1;
    if (dn->in[0].node == rn->in[0].node && dn->in[0].output == rn->in[0].output)
        return d;
    /* x = Relu(z) and ReluGrad's features z (Relu's own rule): relu(z) > 0 exactly when z > 0 */
    const mp_gnode *xn = &g->nodes[dn->in[0].node];
    if (is_op(xn, MP_OP_RELU) && xn->n_in == 1 && xn->in[0].node == rn->in[0].node &&
        xn->in[0].output == rn->in[0].output)
        return d;
    return -1;
}

/* ReluGrad node r becomes MaxPoolGrad node d with ReLU's gradient (act attr i2 = 1); d reads
 * nothing (the pruning drops it) */
static mp_status make_pool_relu_grad(mp_graph *g, int *readers, int r, int d) {
    mp_gnode *rn = &g->nodes[r], *dn = &g->nodes[d];
    readers[rn->in[0].node]--; /* ReluGrad's features: x (read by both) or Relu's input */
    mp_gedge *in = realloc(rn->in, 3 * sizeof *in);
    if (!in)
        return mp_error_set(MP_ERR_MEMORY, "out of host memory fusing a graph node");
    memcpy(in, dn->in, 3 * sizeof *in);
    rn->in = in;
    rn->n_in = 3;
    rn->op = MP_OP_MAX_POOL_GRAD;
    rn->attrs = dn->attrs;
    rn->attrs.i2 = 1;
    rn->flags |= dn->flags & ~MP_GNODE_FLAG_OUTPUT;
    for (int k = 0; k < dn->n_in; k++)
        dn->in[k].node = -1;
    readers[d] = 0;
    return MP_OK;
}

static int pool_relu_on = 1; /* mp_graph_fuse_pool_relu: A/B measurements, tests */
int mp_graph_fuse_pool_relu(int on) { return __atomic_exchange_n(&pool_relu_on, on != 0, __ATOMIC_RELAXED); }

static int fused_without_act(const mp_gnode *n) {
    return (is_op(n, MP_OP_CONV2D_BIAS_ACT) || is_op(n, MP_OP_MATMUL_BIAS_ACT)) && n->n_in == 3 && n->attrs.i2 == 0;
}

mp_status mp_graph_fuse(mp_graph *g, int *n_fused) {
    *n_fused = 0;
    int *readers = count_readers(g);
    if (!readers)
        return mp_error_set(MP_ERR_MEMORY, "out of host memory in the graph fusion pass");
    mp_status st = MP_OK;
    int fused = 0;
    for (int a = 0; a < g->n_nodes && st == MP_OK; a++) {
        int c = -1, r;
        mp_gedge bias;
        mp_op f = match_bias_add(g, readers, a, &c, &bias);
        if (f != MP_OP_COUNT) { /* contraction + bias (+ relu) */
            const mp_gnode *cn = &g->nodes[c];
            r = match_relu(g, readers, a);
            st = make_fused(&g->nodes[r >= 0 ? r : a], f, cn->in, bias, &cn->attrs, cn->flags, r >= 0);
            if (st == MP_OK && r >= 0)
                relu_took(g, readers, a, r);
            readers[c] = 0; /* the contraction has no reader left */
        } else if (is_op(&g->nodes[a], MP_OP_BATCH_NORM) && g->nodes[a].n_in == 5 && g->nodes[a].attrs.i2 == 0 &&
                   (r = match_relu(g, readers, a)) >= 0) {
            /* batch normalization read by one Relu: one pass (the BatchNorm op's act) */
            st = make_bn_relu(&g->nodes[r], &g->nodes[a]);
            if (st == MP_OK)
                relu_took(g, readers, a, r);
        } else if (__atomic_load_n(&pool_relu_on, __ATOMIC_RELAXED) && (r = match_pool_relu_grad(g, readers, a)) >= 0) {
            /* ReLU's gradient after max pooling's: one pass */
            st = make_pool_relu_grad(g, readers, a, r);
        } else if (fused_without_act(&g->nodes[a]) && (r = match_relu(g, readers, a)) >= 0) {
            /* a Keras Conv2D/Dense layer's fused op read by one Relu */
            const mp_gnode *fn = &g->nodes[a];
            st = make_fused(&g->nodes[r], fn->op, fn->in, fn->in[2], &fn->attrs, fn->flags, 1);
            if (st == MP_OK)
                relu_took(g, readers, a, r);
        } else {
            continue;
        }
        fused += st == MP_OK;
    }
    free(readers);
    if (st != MP_OK)
        return st;
    if (fused)
        MP_TRY(mp_graph_prune(g));
    *n_fused = fused;
    return fused ? mp_graph_infer(g) : MP_OK;
}
