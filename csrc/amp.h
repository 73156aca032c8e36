/* amp.h — automatic mixed precision in the core: the per-op class table (ops.def's AMP
 * column, editable at run time), the autocast-at-dispatch mode mp_op_run consults, the
 * recorder of a function's op sequence, and TensorFlow's graph colouring pass.
 * The pass works on plain arrays (op ids + input edges + node kinds), so it does not
 * depend on how a graph stores its nodes. Nothing here knows Python. */
#ifndef MP_AMP_H
#define MP_AMP_H
#include "mixprec.h"

/* ---------------------------------------------------------------- class table */
mp_amp_class mp_amp_class_of(mp_op op);
/* Replace the whole table (MP_OP_COUNT entries) or, with NULL, go back to ops.def's. */
void mp_amp_set_classes(const mp_amp_class *classes);

/* Whether input i of op carries the op's float type (the one the rewrite lowers). Not the
 * statistics/scale/offset of FusedBatchNormV3 (TensorFlow's separate type U: float32). */
int mp_amp_input_typed(mp_op op, int i);

/* ---------------------------------------------------------------- autocast mode */
/* Turns autocast on (dtype float16 or bfloat16) or off (on = 0). Process-wide. */
mp_status mp_amp_autocast_set(int on, mp_dtype dtype);
int mp_amp_autocast_on(void);
mp_dtype mp_amp_autocast_dtype(void);
/* Function scopes (thread-local depth): inside one, lowered tensors flow between ops;
 * outside (depth 0) every lowered result is cast back to float32 before it is returned. */
void mp_amp_scope_enter(void);
void mp_amp_scope_exit(void);
/* Suspends autocast on this thread (the tape's backward pass runs its ops as recorded). */
void mp_amp_suspend(int delta);

/* Called by mp_op_run before dispatch: writes the inputs the op must run on into
 * `cast_in` (new references for every entry, casts recorded on the tape) and sets
 * *lower when the output will be a lowered float32 value. */
mp_status mp_amp_prepare(mp_op op, int n_in, mp_tensor *const *in, mp_tensor **cast_in, int *lower,
                         int *active);
/* Called by mp_op_run after dispatch (and tape recording): marks the output and, at
 * depth 0, replaces it by its float32 cast. */
mp_status mp_amp_finish(mp_op op, int n_in, mp_tensor *const *in, int lower, mp_tensor **out);
/* Whether Cast(x -> to) is x itself: x is a lowered float32 value and `to` is float32
 * (as tf.cast of a float32 tensor to float32; Keras' input casts then keep the flow). */
int mp_amp_cast_passthrough(const mp_tensor *x, mp_dtype to);
/* x itself (new reference) or, when x is a lowered float32 value, its float32 cast. */
mp_status mp_amp_restore(mp_tensor *x, mp_tensor **out);

/* ---------------------------------------------------------------- recorder */
/* Records (op, input ids, output id, float32-ness) of every op this thread runs between
 * begin and end. Casts that autocast inserts are not recorded (they are not the user's). */
mp_status mp_amp_record_begin(void);
int mp_amp_recording(void);
void mp_amp_record_op(mp_op op, int n_in, mp_tensor *const *in, mp_tensor *out);
typedef struct mp_amp_trace {
    int n_nodes;
    int *op;          /* (n_nodes) mp_op */
    int *is_f32;      /* (n_nodes) the node's float type is float32 (before autocast) */
    int64_t *out_id;  /* (n_nodes) id of the output tensor */
    int *in_off;      /* (n_nodes + 1) offsets into in_id */
    int64_t *in_id;   /* (in_off[n_nodes]) input tensor ids */
    int64_t n_alias;
    int64_t *alias;   /* (2 * n_alias) pairs (id, id it stands for) */
} mp_amp_trace;
/* Stops recording; *out is NULL when nothing was recorded. Free with mp_amp_trace_free. */
mp_status mp_amp_record_end(mp_amp_trace **out);
void mp_amp_trace_free(mp_amp_trace *t);

/* ---------------------------------------------------------------- the colouring pass */
enum { MP_AMP_NODE_OP = 0, MP_AMP_NODE_INPUT = 1, MP_AMP_NODE_VARIABLE = 2, MP_AMP_NODE_CONST = 3,
       MP_AMP_NODE_OUTPUT = 4 };

typedef struct mp_amp_summary {
    int64_t total_nodes;      /* every node of the graph (inputs, outputs, variables too) */
    int64_t recognized;       /* float32 nodes whose op is on one of the four lists */
    int64_t converted;        /* nodes painted ALLOW */
    int64_t casts_to_lowered; /* casts to the 16-bit type, excluding Const/Variable casts */
    int64_t casts_total;      /* every cast inserted (both directions, all sources) */
    int64_t allowlisted;      /* converted nodes whose op is on the allow list */
    int64_t denylisted;       /* float32 nodes whose op is on the deny list */
    int64_t blocked;          /* nodes painted DENY by propagation (not on the deny list) */
} mp_amp_summary;

/* TensorFlow's colouring over a graph of n nodes:
 *   op[i]       mp_op of node i (-1 for INPUT/VARIABLE/CONST/OUTPUT pseudo-nodes)
 *   kind[i]     MP_AMP_NODE_*
 *   is_f32[i]   the node's float type is float32 (only those are processed)
 *   in_off/in_node  CSR fanin: node i's inputs are in_node[in_off[i] .. in_off[i+1]) (node
 *               indices; any order of nodes)
 *   bf16        1: the oneDNN bfloat16 variant (infer nodes that follow an allow node join it)
 * Writes lowered[i] = 1 for nodes that run in the 16-bit type, and the summary. */
mp_status mp_amp_color(int n, const int *op, const int *kind, const int *is_f32, const int *in_off,
                       const int *in_node, int bf16, uint8_t *lowered, mp_amp_summary *sum);
#endif
