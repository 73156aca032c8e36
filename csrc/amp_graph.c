/* amp_graph.c — the automatic-mixed-precision pass on a traced graph (graph.h): turns the
 * graph into the arrays mp_amp_color reads, and applies the colouring: allow nodes take
 * the 16-bit type, one Cast per producer where the colour changes, dtypes re-derived.
 * Graph inputs, outputs, constants and variables keep their dtypes. It must not know how
 * graph.c stores or replays nodes beyond graph.h's public fields and pass API. */
#include <stdlib.h>
#include <string.h>

#include "amp.h"
#include "amp_graph.h"
#include "graph.h"

enum { COL_F32 = 0, COL_LOW = 1, COL_CAST_F32 = 2, COL_CAST_LOW = 3 };

/* an op node's input k that carries its float type (the others keep their dtype) */
static int typed(const mp_gnode *nd, int k) { return nd->kind != MP_GNODE_OP || mp_amp_input_typed(nd->op, k); }

static int node_float_f32(const mp_graph *g, int i) {
    const mp_gnode *nd = &g->nodes[i];
    if (nd->n_out == 1 && mp_dtype_is_floating(nd->dtype))
        return nd->dtype == MP_F32;
    for (int k = 0; k < nd->n_in; k++) {
        int p = nd->in[k].node;
        if (p >= 0 && g->nodes[p].n_out == 1 && mp_dtype_is_floating(g->nodes[p].dtype))
            return g->nodes[p].dtype == MP_F32;
    }
    return 0;
}

mp_status mp_amp_graph_arrays(const mp_graph *g, mp_amp_arrays *a) {
    memset(a, 0, sizeof *a);
    int n = g->n_nodes + g->n_outputs, m = 0;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++)
            m += g->nodes[i].in[k].node >= 0;
    m += g->n_outputs;
    a->n = n;
    a->op = malloc(sizeof(int) * (size_t)(n ? n : 1));
    a->kind = malloc(sizeof(int) * (size_t)(n ? n : 1));
    a->flags = malloc(sizeof(int) * (size_t)(n ? n : 1));
    a->in_off = malloc(sizeof(int) * ((size_t)n + 1));
    a->in_node = malloc(sizeof(int) * (size_t)(m ? m : 1));
    if (!a->op || !a->kind || !a->flags || !a->in_off || !a->in_node) {
        mp_amp_arrays_free(a);
        return mp_error_set(MP_ERR_MEMORY, "out of memory building the AMP pass's view of a graph");
    }
    int e = 0;
    a->in_off[0] = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const mp_gnode *nd = &g->nodes[i];
        int kind;
        switch (nd->kind) {
        case MP_GNODE_OP: kind = MP_AMP_NODE_OP; break;
        case MP_GNODE_INPUT: kind = MP_AMP_NODE_INPUT; break;
        case MP_GNODE_CONST: kind = MP_AMP_NODE_CONST; break;
        case MP_GNODE_VAR_READ: kind = MP_AMP_NODE_VARIABLE; break;
        case MP_GNODE_LOOP_OUT: kind = MP_AMP_NODE_INPUT; break; /* a loop's result keeps its dtype */
        case MP_GNODE_CALL_OUT: kind = MP_AMP_NODE_INPUT; break; /* so does a host call's (py_function) */
        default: kind = MP_AMP_NODE_OUTPUT; break; /* assigns, optimizer steps, host calls: sinks */
        }
        a->op[i] = nd->kind == MP_GNODE_OP ? (int)nd->op : -1;
        a->kind[i] = kind;
        a->flags[i] = (node_float_f32(g, i) ? 1 : 0) | (nd->n_out == 1 && nd->dtype == MP_F32 ? 2 : 0);
        for (int k = 0; k < nd->n_in; k++)
            if (nd->in[k].node >= 0 && (nd->kind != MP_GNODE_OP || mp_amp_input_typed(nd->op, k)))
                a->in_node[e++] = nd->in[k].node;
        a->in_off[i + 1] = e;
    }
    for (int o = 0; o < g->n_outputs; o++) {
        int i = g->n_nodes + o;
        a->op[i] = -1;
        a->kind[i] = MP_AMP_NODE_OUTPUT;
        a->flags[i] = 0;
        if (g->outputs[o].node >= 0)
            a->in_node[e++] = g->outputs[o].node;
        a->in_off[i + 1] = e;
    }
    return MP_OK;
}

void mp_amp_arrays_free(mp_amp_arrays *a) {
    free(a->op), free(a->kind), free(a->flags), free(a->in_off), free(a->in_node);
    memset(a, 0, sizeof *a);
}

/* Insert a cast of node p's output after p; shifts the colour array like the graph. */
static mp_status insert_cast(mp_graph *g, uint8_t **col, int *cap, int p, mp_dtype dt, int color, int *cast) {
    if (g->n_nodes + 1 > *cap) {
        int nc = *cap * 2 + 16;
        uint8_t *q = realloc(*col, (size_t)nc);
        if (!q)
            return mp_error_set(MP_ERR_MEMORY, "out of memory in the AMP graph rewrite");
        *col = q;
        *cap = nc;
    }
    mp_gedge out;
    MP_TRY(mp_graph_insert_cast(g, p + 1, (mp_gedge){p, 0}, dt, &out));
    memmove(*col + p + 2, *col + p + 1, (size_t)(g->n_nodes - 1 - (p + 1)));
    (*col)[p + 1] = (uint8_t)color;
    *cast = out.node;
    return MP_OK;
}

static int is_low(int c) { return c == COL_LOW || c == COL_CAST_LOW; }

mp_status mp_amp_graph_rewrite(mp_graph *g, int bf16, mp_amp_summary *sum, int *converted_ops) {
    mp_amp_arrays a;
    MP_TRY(mp_amp_graph_arrays(g, &a));
    int cap = a.n + 16;
    uint8_t *col = calloc((size_t)cap, 1);
    if (!col) {
        mp_amp_arrays_free(&a);
        return mp_error_set(MP_ERR_MEMORY, "out of memory in the AMP graph rewrite");
    }
    mp_status st = mp_amp_color(a.n, a.op, a.kind, a.flags, a.in_off, a.in_node, bf16, col, sum);
    mp_amp_arrays_free(&a);
    if (st == MP_OK && converted_ops)
        for (int i = 0, k = 0; i < g->n_nodes; i++)
            if (col[i])
                converted_ops[k++] = (int)g->nodes[i].op;
    if (st != MP_OK || !sum->converted) {
        free(col);
        return st;
    }
    mp_dtype low = bf16 ? MP_BF16 : MP_F16;
    /* ops that take their output dtype from an attribute follow their colour */
    for (int i = 0; i < g->n_nodes; i++) {
        mp_gnode *nd = &g->nodes[i];
        if (col[i] == COL_LOW && nd->kind == MP_GNODE_OP && nd->attrs.dtype == MP_F32 &&
            (nd->op == MP_OP_CAST || nd->op == MP_OP_FILL || nd->op == MP_OP_ONE_HOT))
            nd->attrs.dtype = (int)low;
    }
    /* one cast per producer and direction, inserted after the producer; consumers of the
     * other colour are rewired onto it. Indices move on insertion: rescan after each. */
    for (int p = 0; p < g->n_nodes && st == MP_OK; p++) {
        mp_gnode *src = &g->nodes[p];
        if (src->n_out != 1 || src->dtype != MP_F32 || col[p] == COL_CAST_F32 || col[p] == COL_CAST_LOW)
            continue;
        int src_low = col[p] == COL_LOW;
        int need = 0;
        for (int j = p + 1; j < g->n_nodes && !need; j++)
            for (int k = 0; k < g->nodes[j].n_in; k++)
                if (g->nodes[j].in[k].node == p && typed(&g->nodes[j], k) && is_low(col[j]) != src_low)
                    need = 1;
        /* a lowered value read where float32 is required (a batch norm's statistics) */
        for (int j = p + 1; j < g->n_nodes && !need && src_low; j++)
            for (int k = 0; k < g->nodes[j].n_in; k++)
                if (g->nodes[j].in[k].node == p && !typed(&g->nodes[j], k))
                    need = 1;
        for (int o = 0; o < g->n_outputs && !need; o++)
            need = src_low && g->outputs[o].node == p; /* graph outputs keep float32 */
        if (!need)
            continue;
        int c = -1;
        st = insert_cast(g, &col, &cap, p, src_low ? MP_F32 : low, src_low ? COL_CAST_F32 : COL_CAST_LOW, &c);
        if (st != MP_OK)
            break;
        for (int j = c + 1; j < g->n_nodes; j++)
            for (int k = 0; k < g->nodes[j].n_in; k++)
                if (g->nodes[j].in[k].node == p &&
                    (typed(&g->nodes[j], k) ? is_low(col[j]) != src_low : src_low))
                    g->nodes[j].in[k].node = c;
        if (src_low)
            for (int o = 0; o < g->n_outputs; o++)
                if (g->outputs[o].node == p) {
                    g->outputs[o].node = c;
                    g->nodes[c].flags |= MP_GNODE_FLAG_OUTPUT; /* replay must keep it */
                }
        p = c; /* the cast itself needs nothing */
    }
    free(col);
    /* NOTE: consumers were rewired after each insertion: last uses (replay frees a node's
     * output after its last reader) are recomputed here, not trusted from the insertion */
    for (int i = 0; i < g->n_nodes; i++)
        g->nodes[i].last_use = i;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++)
            if (g->nodes[i].in[k].node >= 0)
                g->nodes[g->nodes[i].in[k].node].last_use = i;
    if (st == MP_OK)
        st = mp_graph_infer(g);
    return st;
}
