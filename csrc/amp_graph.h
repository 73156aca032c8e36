/* amp_graph.h — the automatic-mixed-precision pass applied to a traced graph (graph.h):
 * the graph as mp_amp_color's arrays, and the rewrite that applies the colouring.
 * Implementation: amp_graph.c. */
#ifndef MP_AMP_GRAPH_H
#define MP_AMP_GRAPH_H
#include "amp.h"

struct mp_graph;

/* The pass's view of a graph: nodes 0..n_nodes-1 are the graph's (kind from the node:
 * input, const, variable read, op; assigns/optimizer/host nodes are sinks), then one
 * OUTPUT pseudo-node per graph output. */
typedef struct mp_amp_arrays {
    int n;
    int *op, *kind, *flags; /* (n) as mp_amp_color takes them */
    int *in_off;            /* (n + 1) */
    int *in_node;           /* (in_off[n]) */
} mp_amp_arrays;

mp_status mp_amp_graph_arrays(const struct mp_graph *g, mp_amp_arrays *a);
void mp_amp_arrays_free(mp_amp_arrays *a);

/* Colours g (TensorFlow's pass) and applies it: allow nodes compute in float16 (bfloat16
 * when bf16), a Cast per producer at each colour boundary, graph outputs stay float32,
 * then mp_graph_infer re-derives dtypes. *sum as mp_amp_color's; converted_ops (NULL, or
 * room for g->n_nodes) gets the ops of the converted nodes in graph order. */
mp_status mp_amp_graph_rewrite(struct mp_graph *g, int bf16, mp_amp_summary *sum, int *converted_ops);
#endif
