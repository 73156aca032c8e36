/* grad_arena.h — the scratch arena and the small helpers every backward rule is written with
 * (grad.c, grad_math.c): temporaries released together, the first failure sticking so rules
 * read as straight-line math. Static helpers of the files that include it; not public. */
#ifndef MP_GRAD_ARENA_H
#define MP_GRAD_ARENA_H
#include "grad.h"

/* ------------------------------------------------------------------ scratch arena */

/* Temporaries of one rule; released together. The first failure sticks and turns every
 * later helper into a no-op returning NULL, so rules read as straight-line math. */
typedef struct {
    mp_tensor *t[48];
    int n;
    mp_status st;
} arena;

static inline mp_tensor *keep(arena *a, mp_status st, mp_tensor *t) {
    if (st != MP_OK) {
        if (a->st == MP_OK)
            a->st = st;
        return NULL;
    }
    if (a->n >= (int)(sizeof a->t / sizeof a->t[0])) {
        mp_tensor_decref(t);
        if (a->st == MP_OK)
            a->st = mp_error_set(MP_ERR_INTERNAL, "backward rule used too many temporaries");
        return NULL;
    }
    a->t[a->n++] = t;
    return t;
}

static inline mp_status finish(arena *a) {
    for (int i = 0; i < a->n; i++)
        mp_tensor_decref(a->t[i]);
    return a->st;
}

/* result for dx: a new reference that survives finish() */
static inline mp_tensor *out(mp_tensor *t) {
    mp_tensor_incref(t);
    return t;
}

static inline mp_tensor *run(arena *a, mp_op op, int n, mp_tensor *const *in, const mp_attrs *at) {
    if (a->st != MP_OK)
        return NULL;
    for (int i = 0; i < n; i++)
        if (!in[i])
            return NULL;
    mp_tensor *r = NULL;
    mp_status st_ = mp_op_run(op, n, in, at, &r);
    return keep(a, st_, r);
}

static inline mp_tensor *bin(arena *a, mp_op op, mp_tensor *x, mp_tensor *y) {
    mp_tensor *in[2] = {x, y};
    return run(a, op, 2, in, NULL);
}
static inline mp_tensor *bin_a(arena *a, mp_op op, mp_tensor *x, mp_tensor *y, double alpha) {
    mp_tensor *in[2] = {x, y};
    mp_attrs at = {.f0 = alpha};
    return run(a, op, 2, in, &at);
}
static inline mp_tensor *un(arena *a, mp_op op, mp_tensor *x) { return run(a, op, 1, &x, NULL); }

/* a 0-d tensor of x's dtype and device */
static inline mp_tensor *scalar(arena *a, mp_tensor *like, double v) {
    if (a->st != MP_OK || !like)
        return NULL;
    mp_tensor *r = NULL;
    mp_status st_ = mp_scalar(like->dtype, v, mp_tensor_device(like), &r);
    return keep(a, st_, r);
}

static inline mp_tensor *reshape(arena *a, mp_tensor *x, int nd, const int64_t *shape) {
    if (a->st != MP_OK || !x)
        return NULL;
    mp_tensor *r = NULL;
    mp_status st_ = mp_reshape(x, nd, shape, &r);
    return keep(a, st_, r);
}

static inline mp_tensor *sum_axes(arena *a, mp_tensor *x, int naxes, const int64_t *axes, int keepdims) {
    if (a->st != MP_OK || !x)
        return NULL;
    mp_tensor *r = NULL;
    mp_status st_ = mp_reduce_axes(MP_OP_SUM, x, naxes, axes, keepdims, &r);
    return keep(a, st_, r);
}

/* dy summed over the dimensions that broadcasting added to `like`, reshaped to it. */
static inline mp_tensor *unbroadcast(arena *a, mp_tensor *dy, const mp_tensor *like) {
    if (a->st != MP_OK || !dy)
        return NULL;
    int same = dy->ndim == like->ndim;
    for (int d = 0; same && d < dy->ndim; d++)
        same = dy->shape[d] == like->shape[d];
    if (same)
        return dy;
    int64_t axes[MP_MAX_DIMS];
    int na = 0, lead = dy->ndim - like->ndim;
    for (int d = 0; d < dy->ndim; d++)
        if (d < lead || (like->shape[d - lead] == 1 && dy->shape[d] != 1))
            axes[na++] = d;
    mp_tensor *s = na ? sum_axes(a, dy, na, axes, 1) : dy;
    return reshape(a, s, like->ndim, like->shape);
}

static inline mp_tensor *where(arena *a, mp_tensor *c, mp_tensor *x, mp_tensor *y) {
    mp_tensor *in[3] = {c, x, y};
    return run(a, MP_OP_WHERE, 3, in, NULL);
}

#define IN(k) (n->inputs[k])
#define Y (n->output)
#endif
