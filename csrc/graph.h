/* graph.h — a traced function as plain data: nodes recorded once, replayed many times.
 * Owns the node list (ops of ops.def, variable reads/writes, fused optimizer steps, host
 * callbacks such as tf.print), the recording hooks the op layer calls, and replay.
 * It must not know Python (host callbacks are opaque function pointers) nor any op's
 * arithmetic: replay runs every op through the same validate/allocate/dispatch path as
 * eager execution (mp_op_exec in ops.c).
 *
 * NOTE for graph passes (the automatic-mixed-precision rewrite walks this): nodes are in
 * execution order and every edge points to an earlier node; a pass may insert nodes with
 * mp_graph_insert_cast, rewire consumers (n->in[k] = edge, g->outputs[o] = edge) and then
 * calls mp_graph_infer to re-derive dtypes (it also re-plans when replay frees values).
 * Node indices change on insertion, so a pass that inserts walks from the end or re-reads. */
#ifndef MP_GRAPH_H
#define MP_GRAPH_H
#include "mixprec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* NOTE: append-only (bindings expose the numbers). */
typedef enum mp_gnode_kind {
    MP_GNODE_INPUT = 0,  /* graph input number `input_index`; its output is the argument */
    MP_GNODE_CONST,      /* a tensor captured at trace time (`value`), e.g. a NumPy constant */
    MP_GNODE_OP,         /* one op of ops.def: `op`, `attrs`, inputs -> one output */
    MP_GNODE_VAR_READ,   /* reads `var` (autocast to `read_dtype` when >= 0) -> one output */
    MP_GNODE_VAR_ASSIGN, /* var := input 0 (cast to the variable's dtype by its rule); no output */
    MP_GNODE_OPTIM,      /* fused optimizer step (`optim`); inputs: gradients (edges, NULL
                          * gradients have node -1); output: the found_inf flag when
                          * optim->check_finite, else none */
    MP_GNODE_HOST,       /* a host callback (`host`) given the input tensors: tf.print; no output */
    MP_GNODE_LOOP,       /* a loop (`loop`, graph_loop.c): inputs = loop variables, source
                          * inputs, captures; no output of its own (its results are taken by
                          * the LOOP_OUT nodes that follow it) */
    MP_GNODE_LOOP_OUT,   /* result `in[0].output` of the loop node `in[0].node` -> one output */
    MP_GNODE_CALL,       /* a host call with results (`call`: tf.py_function, tf.numpy_function),
                          * given the input tensors at every replay; no output of its own (its
                          * results are taken by the CALL_OUT nodes that follow it) */
    MP_GNODE_CALL_OUT,   /* result `in[0].output` of the call node `in[0].node` -> one output */
    MP_GNODE_KIND_COUNT
} mp_gnode_kind;

/* One tensor-valued edge: output `output` of node `node` (ops have one output: 0).
 * node == -1: no tensor (a NULL gradient). */
typedef struct mp_gedge {
    int32_t node;
    int32_t output;
} mp_gedge;

/* The fused optimizer step's arguments (mp_optimizer_apply), held by the node. The
 * variables, slots, iterations and loss scale are referenced (kept alive) by the graph. */
typedef struct mp_goptim {
    mp_optim_kind kind;
    mp_optim_hparams hp;
    int n_vars;
    mp_variable **vars;     /* (n_vars) */
    int n_slots;
    mp_variable **slots;    /* (n_slots) = n_vars * slots_per_var */
    mp_variable *iterations;/* or NULL */
    mp_variable *state;     /* the rule's scalar state (Nadam), or NULL */
    uint8_t *no_decay;      /* (n_vars) excluded from weight decay, or NULL */
    mp_loss_scale *ls;      /* or NULL */
    int check_finite;
    double grad_scale;
    int unscale;
    /* Called before every replay of this step (may be NULL): refreshes hp/grad_scale from
     * the host (a learning-rate schedule, a learning rate assigned by a callback). */
    mp_status (*refresh)(void *ctx, mp_optim_hparams *hp, double *grad_scale);
    void *refresh_ctx;
    void (*refresh_free)(void *ctx);
} mp_goptim;

/* A host callback node: fn(ctx, n, inputs) at every replay (inputs borrowed). */
typedef struct mp_ghost {
    mp_status (*fn)(void *ctx, int n, mp_tensor *const *inputs);
    void *ctx;
    void (*free)(void *ctx);
} mp_ghost;

struct mp_gloop;

/* A host call node: fn(ctx, n_in, inputs, n_out, outs) at every replay (inputs borrowed;
 * outs[k] new references, checked against `dtypes`, the results as traced). */
typedef struct mp_gcall {
    mp_status (*fn)(void *ctx, int n_in, mp_tensor *const *in, int n_out, mp_tensor **outs);
    void *ctx;
    void (*free)(void *ctx);
    int n_out;
    mp_dtype *dtypes;     /* (n_out) */
    int *ndims;           /* (n_out) the results' ranks and shapes as traced: a call gated */
    int64_t *shapes;      /* (n_out * MP_MAX_DIMS) off by a traced `if` gives zeros of them */
    mp_device *devices;   /* (n_out) (on the traced results' devices) */
    mp_tensor **results;  /* (n_out) of the last run, taken by the CALL_OUT nodes */
} mp_gcall;

enum {
    MP_GNODE_FLAG_OUTPUT = 1, /* some graph output reads this node */
    MP_GNODE_FLAG_RANDOM = 2, /* a random op: its stream advances at every replay */
    MP_GNODE_FLAG_EFFECT = 4, /* has a side effect (assign, optimizer, host): never pruned */
    MP_GNODE_FLAG_FOLDED = 8, /* replay plan: a gradient's unscale Mul folded into the
                               * optimizer step that reads it (graph.c plan_folds) */
    MP_GNODE_FLAG_GUARD = 16, /* a variable write or host callback of a branch on a traced
                               * predicate: its last input is that boolean scalar, and the
                               * replay runs the node only when it is true (or, with
                               * GUARD_NEG, false) — tf.cond's side effects */
    MP_GNODE_FLAG_GUARD_NEG = 32,
};

enum { MP_GNODE_READ_RAW = -2 };

typedef struct mp_gnode {
    mp_gnode_kind kind;
    mp_op op;            /* MP_GNODE_OP */
    mp_attrs attrs;      /* MP_GNODE_OP */
    int n_in;
    mp_gedge *in;        /* (n_in) */
    int n_out;           /* 0 or 1 */
    /* the output's dtype, shape and device as traced (re-derived by mp_graph_infer) */
    mp_dtype dtype;
    int ndim;
    int64_t shape[MP_MAX_DIMS];
    mp_device device;
    int input_index;     /* MP_GNODE_INPUT */
    mp_tensor *value;    /* MP_GNODE_CONST (referenced) */
    mp_variable *var;    /* MP_GNODE_VAR_READ / VAR_ASSIGN (referenced) */
    int read_dtype;      /* MP_GNODE_VAR_READ: autocast dtype in force when traced, -1 none,
                          * MP_GNODE_READ_RAW: an untaped read of the true value (peek) */
    mp_goptim *optim;    /* MP_GNODE_OPTIM */
    mp_ghost host;       /* MP_GNODE_HOST */
    struct mp_gloop *loop; /* MP_GNODE_LOOP (owned) */
    int flags;           /* MP_GNODE_FLAG_* */
    int32_t last_use;    /* index of the last node reading this one (replay frees after it) */
    int32_t fold_src, fold_inv; /* MP_GNODE_FLAG_FOLDED: the Mul's gradient and scalar inputs */
    mp_gcall *call;      /* MP_GNODE_CALL (owned) */
} mp_gnode;

typedef struct mp_graph {
    int n_nodes, cap_nodes;
    mp_gnode *nodes;     /* (n_nodes) in execution order */
    int n_inputs;
    int32_t *inputs;     /* (n_inputs) node index of each graph input */
    int n_outputs;
    mp_gedge *outputs;   /* (n_outputs) */
    /* recording state (valid while recording) */
    void *id_map;        /* tensor id -> node (private to graph.c) */
    int broken;          /* a host read of a traced value happened: the graph is unusable */
    char break_reason[256];
    int n_created_vars;  /* variables created while recording */
    int dry;             /* recording without executing side effects (see mp_graph_begin) */
    int64_t n_replays;   /* random ops draw stream + n_replays << 32 at replay n_replays */
    mp_storage **kept;   /* (n_nodes or NULL) each op's buffer from the last replay, offered
                          * back to it at the next (private to graph.c) */
    int effects_dry;     /* ops execute, but variable writes, optimizer steps and host
                          * callbacks are only recorded (autograph: the branch not taken) */
    /* a loop's body or condition (graph_loop.c) records with its enclosing graph as parent:
     * a tensor of the parent (or its ancestors) that the sub-graph reads becomes one more
     * input of the sub-graph, its capture; breaks and host reads act on the whole chain */
    int polymorphic;     /* replay accepts inputs of other shapes (same dtype and rank):
                          * set by tf.function when two traces at different shapes of a
                          * relaxed signature recorded the same graph */
    int shape_reads;     /* Python read the shape of a value this graph computes from its
                          * inputs (.shape while recording): a size may be baked in */
    int value_baked;     /* MP_GRAPH_VALUE_* bits: an op that bakes sizes (a reshape, a
                          * gradient's broadcast) or Python's .shape read a tensor whose shape
                          * follows a tensor-bound slice's values (READ), or the graph has
                          * both such a slice (SLICE) and a baking op (BAKES): replays then
                          * check those slices' shapes (mp_graph_value_baked, graph.c) */
    int value_shape_miss;/* the last replay stopped (before any state change) because such
                          * a slice took another shape: tf.function records the call again */
    struct mp_graph *parent; /* while recording, else NULL */
    int n_captured;
    mp_tensor **captured;    /* (n_captured) the parent's tensors, in input order (referenced) */
    struct mp_graph_capture *capture; /* its replay as a CUDA graph (graph_capture.c) or NULL */
    /* nodes whose gradient is Python (tf.custom_gradient's outputs, host calls): a replay
     * under a recording tape cannot give their gradients, so tf.function runs the Python
     * function for such a call instead (counted on the recording graph and its parents) */
    int python_grads;
} mp_graph;

enum { MP_GRAPH_VALUE_READ = 1, MP_GRAPH_VALUE_SLICE = 2, MP_GRAPH_VALUE_BAKES = 4 };
static inline int mp_graph_value_baked(const mp_graph *g) {
    return (g->value_baked & MP_GRAPH_VALUE_READ) ||
           (g->value_baked & (MP_GRAPH_VALUE_SLICE | MP_GRAPH_VALUE_BAKES)) == (MP_GRAPH_VALUE_SLICE | MP_GRAPH_VALUE_BAKES);
}
mp_status mp_graph_new(mp_graph **out);
/* Whether x (recorded in the graph recording on this thread) has a shape that follows a
 * tensor-bound slice's values (see value_baked). */
int mp_graph_is_value_shaped(const mp_tensor *x);
void mp_graph_free(mp_graph *g); /* NULL-safe */

/* --- recording (one graph per thread at a time) ---------------------------------- */
/* Start recording into g on this thread. dry: variable writes, optimizer steps and host
 * callbacks are recorded but not executed (their outputs are placeholders) — a trace
 * then has no side effect on state, and the first real run is a replay. */
mp_status mp_graph_begin(mp_graph *g, int dry);
/* Start recording the sub-graph g (a loop body or condition) inside the graph recording on
 * this thread, which becomes g's parent (g inherits its dry and effects_dry flags). The
 * matching mp_graph_end/abort resumes recording into the parent. */
mp_status mp_graph_begin_sub(mp_graph *g);
/* Stop recording; computes last uses and prunes nodes that reach neither an output nor a
 * side effect. Call after the outputs are set. */
mp_status mp_graph_end(mp_graph *g);
/* Abandon recording on this thread (error paths); g stays allocated. */
void mp_graph_abort(mp_graph *g);
/* The graph recording on this thread, or NULL. */
mp_graph *mp_graph_recording(void);
/* Make g (or NULL) the graph recording on this thread; returns the previous one (pausing
 * recording around host-side bookkeeping, and resuming it). */
mp_graph *mp_graph_swap(mp_graph *g);
/* Is this thread in a dry recording (side effects suppressed)? */
int mp_graph_dry(void);
/* dry, or recording a branch whose side effects must not execute (effects_dry) */
int mp_graph_effects_dry(void);
/* Declare x as the next graph input (x is the argument given at trace time). */
mp_status mp_graph_add_input(mp_graph *g, mp_tensor *x);
/* Declare x as the next graph output (a captured constant if x is not from the graph). */
mp_status mp_graph_add_output(mp_graph *g, mp_tensor *x);

/* Hooks called by the core while recording (no-ops when nothing records). */
mp_status mp_graph_record_op(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at, mp_tensor *out);
mp_status mp_graph_record_read(mp_variable *v, int read_dtype, mp_tensor *out);
mp_status mp_graph_record_assign(mp_variable *v, mp_tensor *x);
/* Returns the node index of the recorded step (or -1 when not recording). */
int mp_graph_record_optim(const mp_goptim *o, mp_tensor *const *grads, mp_tensor *found_inf);
mp_status mp_graph_record_host(mp_ghost host, int n, mp_tensor *const *inputs);
/* Records a host call node (taking ownership of c, also on failure; c->n_out, c->dtypes
 * set) reading `in`, whose results are `outs` (the tensors the call gave while tracing),
 * followed by its CALL_OUT nodes. A call is a side effect (never pruned). */
mp_status mp_graph_record_call(mp_gcall *c, int n_in, mp_tensor *const *in, mp_tensor *const *outs);
void mp_gcall_free(mp_gcall *c); /* NULL-safe */
/* Counts a node with a Python gradient (graph.h `python_grads`) on the recording graph
 * and its parents. */
void mp_graph_note_python_grad(void);
/* Gates the side effects recorded in g since node `from` (variable writes, host
 * callbacks, host calls — which give zeros of their traced shapes when off) on `pred`, a boolean scalar: at replay each runs only when pred is true
 * (neg: false). MP_ERR_VALUE when one of them cannot be gated (an optimizer step, a loop
 * with effects, a node gated already): the caller then breaks the graph. */
mp_status mp_graph_guard_effects(mp_graph *g, int from, mp_tensor *pred, int neg);
void mp_graph_note_variable_created(void);
/* Records a loop node (taking ownership of l, also on failure) with inputs `in` (l's loop
 * variables, source inputs and captures, in that order) whose results are `outs`
 * (n_carried, the tensors the loop produced while tracing). */
mp_status mp_graph_record_loop(struct mp_gloop *l, int n_in, mp_tensor *const *in, mp_tensor *const *outs);
/* Break the recording graph explicitly (a construct that needs Python at every call,
 * such as iterating a dataset). Returns 1 when it broke now. */
int mp_graph_break(const char *reason);
/* Does the recording graph compute x from its inputs, variables, steps or random ops? */
int mp_graph_is_dynamic(const mp_tensor *x);
/* A host read of x (numpy(), float(), bool() …): when x depends on the graph's inputs,
 * variables or random ops, the graph breaks (reason recorded). Returns 1 when it broke now. */
int mp_graph_note_host_read(const mp_tensor *x, const char *what);

/* --- passes ----------------------------------------------------------------------- */
/* Insert before node `at` a Cast of edge src to dt; *out gets its edge. Edges that pointed
 * at nodes >= at are renumbered (also in g->outputs); the caller rewires the consumers it
 * wants onto *out. */
mp_status mp_graph_insert_cast(mp_graph *g, int at, mp_gedge src, mp_dtype dt, mp_gedge *out);
/* Re-derive every node's output dtype from its inputs (after a pass changed dtypes) and
 * check each op's dtype rules; shapes are unchanged by dtype passes. Also recomputes the
 * replay plan (last uses, output flags): call it after any rewiring. */
mp_status mp_graph_infer(mp_graph *g);
/* Drop the nodes that reach neither an output nor a side effect (a pass left them without
 * readers), renumbering edges and re-planning the replay. */
mp_status mp_graph_prune(mp_graph *g);
/* The remapper's fusions (graph_fuse.c): Conv2D (NHWC) or a MatMul of matrices, read only by
 * an AddV2 of a vector over its last axis (a bias), becomes CONV2D_BIAS_ACT / MATMUL_BIAS_ACT,
 * with the ReLU when one Relu is the sum's only reader (besides ReluGrads of the sum, which
 * then read the fused output); a fused op without activation read that way by one Relu takes
 * it in; a BatchNorm read by one Relu takes it in; a ReluGrad over a MaxPoolGrad of the
 * ReLU's output becomes one MaxPoolGrad with ReLU's gradient (attr i2 = 1). *n_fused gets
 * the number of fused nodes made. */
mp_status mp_graph_fuse(mp_graph *g, int *n_fused);
/* Whether later passes make the MaxPoolGrad + ReluGrad fusion (default 1; A/B, tests);
 * returns the previous setting. */
int mp_graph_fuse_pool_relu(int on);
/* 1 when a and b are the same graph up to the shapes of their values: the same nodes,
 * edges, attributes (random ops' streams aside), constants' values, variables and outputs;
 * 0 otherwise (loops never compare equal). Two traces of a relaxed signature that agree
 * did not bake a shape into an attribute or a constant (tf.function then replays one for
 * every shape). */
int mp_graph_same_structure(const mp_graph *a, const mp_graph *b);
/* The dtype an op produces from its inputs' dtypes (the op layer's rule; -1 on refusal). */
int mp_op_infer_dtype(mp_op op, int n_in, const mp_dtype *in, const mp_attrs *at);

/* --- replay ----------------------------------------------------------------------- */
/* Run the graph with new inputs (same dtypes/shapes as traced); outs (g->n_outputs) get
 * new references. Runs no Python except host callbacks. */
mp_status mp_graph_run(mp_graph *g, int n_in, mp_tensor *const *in, mp_tensor **outs);
/* mp_graph_run with variables passed as arguments swapped: nodes that read, write or
 * update from[j] use to[j] instead (tf.function traces a Variable argument by its shape and
 * dtype: another variable of the same spec replays the same graph). */
mp_status mp_graph_run_with(mp_graph *g, int n_in, mp_tensor *const *in, int n_sub, mp_variable *const *from,
                            mp_variable *const *to, mp_tensor **outs);

/* --- loops (graph_loop.c) ----------------------------------------------------------- */
typedef enum mp_gloop_src {
    MP_GLOOP_SRC_NONE = 0, /* a while loop: no elements */
    MP_GLOOP_SRC_ROWS,     /* iterating a tensor (source input 0): element k is its row k */
    MP_GLOOP_SRC_HOST,     /* elements from a host callback (a dataset's iterator) */
} mp_gloop_src;

/* A loop replayed in C: per iteration, the condition graph (if any) decides, the source
 * gives the elements, and a body graph maps the loop variables to their next values.
 * Neither graph runs Python (except its host nodes and a HOST source's callback).
 * A body is traced per element shape (a dataset's last partial batch): bodies[] holds the
 * variants; the ones after the first are traced while the tracing call runs the loop
 * (`trace_body`); a shape first met at a replay is traced then (`retrace`: recorded
 * without effects against the captures the node already feeds, then replayed).
 * Node inputs: loop variables (n_carried), source inputs (n_src), then the captures of
 * cond and of bodies[0], bodies[1] ... in order (each graph's n_captured). */
typedef struct mp_gloop {
    int n_carried;      /* loop variables: node inputs [0, n_carried), the loop's results */
    int n_src;          /* source inputs: the next n_src node inputs */
    int n_elems;        /* elements per iteration (body inputs before the loop variables) */
    int n_bodies;
    mp_graph **bodies;  /* (n_bodies) (elements, loop variables, its captures) -> next loop
                         * variables, one per element shape */
    mp_graph *cond;     /* NULL, or (loop variables, cond captures) -> one bool scalar */
    mp_gloop_src src;
    int64_t max_iter;   /* maximum_iterations, < 0: none */
    /* MP_GLOOP_SRC_HOST: the next element into elems (new references); restart = 1 at the
     * first iteration of a run from the start; *done = 1 when the source is exhausted */
    mp_status (*next)(void *ctx, int restart, int n, mp_tensor **elems, int *done);
    void *ctx;
    void (*free)(void *ctx);
    /* set only while the tracing call runs the loop: runs one iteration in Python for an
     * element shape without a body, tracing it (*g, owned by the loop then) or, when the
     * function's graph broke, not (*g = NULL: every later iteration comes here too) */
    mp_status (*trace_body)(void *ctx, int ne, mp_tensor *const *elems, int nc, mp_tensor *const *carried,
                            mp_graph **g, mp_tensor **next);
    void *trace_ctx;
    int python_mode;    /* the graph broke while tracing: iterations run trace_body */
    /* at a replay, for an element shape without a body: records a new body (*g) reading
     * only `known` (the tensors whose values the node's capture inputs carry) */
    mp_status (*retrace)(void *ctx, int ne, mp_tensor *const *elems, int nc, mp_tensor *const *carried,
                         int n_known, mp_tensor *const *known, mp_graph **g);
    void *retrace_ctx;
    void (*retrace_free)(void *ctx);
    int n_known;
    mp_tensor **known;  /* (n_known) the traced tensors behind the node's capture inputs */
    int32_t **capmaps;  /* (n_bodies) NULL, or for a body traced at a replay: the node
                         * capture input feeding each of its captures */
    mp_tensor **results; /* (n_carried) of the last run, taken by the LOOP_OUT nodes */
} mp_gloop;

mp_status mp_gloop_new(mp_gloop **out);
void mp_gloop_free(mp_gloop *l); /* NULL-safe; frees the sub-graphs and the source */
/* Appends a body variant (owned by the loop from now on, also on failure). */
mp_status mp_gloop_add_body(mp_gloop *l, mp_graph *body);
/* The number of node inputs: loop variables, source inputs and every sub-graph's captures. */
int mp_gloop_n_inputs(const mp_gloop *l);
/* Runs the loop from iteration `start` (iterations before it already ran, e.g. the one a
 * trace ran in Python) on the node inputs `in` (loop variables and source inputs; the
 * captures follow them, or come from the sub-graphs' own `captured` tensors when
 * own_captures: the tracing call); restart: the source starts over. out (n_carried) gets
 * new references to the final loop variables. Checks that every iteration keeps the loop
 * variables' dtypes and shapes (TensorFlow's loop invariants). Variables swapped as
 * mp_graph_run_with. */
mp_status mp_gloop_run(mp_gloop *l, mp_tensor *const *in, int own_captures, int64_t start, int restart, int n_sub,
                       mp_variable *const *from, mp_variable *const *to, mp_tensor **out);
/* --- capture of a replay as a device graph (graph_capture.c; CUDA graphs) ------------ */
typedef struct mp_graph_capture mp_graph_capture;
/* What one call of mp_graph_run does about capture (filled by mp_graph_capture_pre). */
typedef struct mp_graph_capture_call {
    int handled;                /* a captured graph ran: outs are set, skip the replay */
    int capturing;              /* this replay is being captured (nothing runs until post) */
    int measure;                /* this replay is watched (clean or not) */
    int retry;                  /* (post) the capture failed, nothing ran: replay again */
    int64_t syncs_before;
    mp_tensor *const *inputs;   /* what INPUT nodes read: the arguments or static buffers */
} mp_graph_capture_call;
/* Called by mp_graph_run before its loop, and after it with the loop's status and values
 * (output values are replaced by copies when a capture ran). Off on the CPU, under
 * MIXPREC_CUDA_GRAPHS=0, on tapes, in traces, with random ops or host callbacks. */
mp_status mp_graph_capture_pre(mp_graph *g, int n_in, mp_tensor *const *in, int n_sub, mp_tensor **outs,
                               mp_graph_capture_call *call);
mp_status mp_graph_capture_post(mp_graph *g, mp_status st, mp_tensor **vals, mp_graph_capture_call *call);
/* Drops the captured graph (buffers, variables or shapes changed); the next clean replay
 * captures again. */
void mp_graph_capture_invalidate(mp_graph *g);
void mp_graph_capture_free(mp_graph *g);
/* Debug counters of the process: graphs captured (and run once), later launches of a
 * captured graph, captures or launches that failed and fell back to a replay. */
void mp_graph_capture_counts(int64_t *captures, int64_t *launches, int64_t *failed);
/* Debug: 1 when a captured graph is ready; *failures, *clean as kept. */
int mp_graph_capture_info(const mp_graph *g, int *failures, int *clean);

/* Opt-in per-op timing of replays (graph_profile.c; env MIXPREC_PROFILE=1 or
 * _core.graph_profile): wall and process CPU seconds summed per (op, dtype, output shape). */
typedef struct mp_graph_prof_mark {
    double wall, cpu;
} mp_graph_prof_mark;
int mp_graph_profile_on(void);
int mp_graph_profile_set(int on); /* returns the previous setting */
void mp_graph_profile_start(mp_graph_prof_mark *m);
void mp_graph_profile_stop(const mp_graph_prof_mark *m, const char *name, const mp_tensor *out);
int mp_graph_profile_rows(void);
int mp_graph_profile_row(int i, const char **name, int *dtype, int *ndim, const int64_t **shape, int64_t *count,
                         double *wall, double *cpu);
void mp_graph_profile_reset(void);

#ifdef __cplusplus
}
#endif
#endif /* MP_GRAPH_H */
