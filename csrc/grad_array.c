/* grad_array.c — the backward rules of the array ops of ops_array.c (GatherNd, the
 * TensorScatter* family, ReverseV2, Roll), TensorFlow's rules built from ops (so they are
 * differentiable again and run on every backend). The indices get no gradient. It must not
 * touch elements. */
#include <string.h>

#include "grad.h"

typedef struct {
    mp_tensor *t[24];
    int n;
    mp_status st;
} tmp;

static mp_tensor *keep(tmp *a, mp_status st, mp_tensor *t) {
    if (st != MP_OK) {
        if (a->st == MP_OK)
            a->st = st;
        return NULL;
    }
    if (a->n >= (int)(sizeof a->t / sizeof a->t[0])) {
        mp_tensor_decref(t);
        a->st = mp_error_set(MP_ERR_INTERNAL, "array backward rule used too many temporaries");
        return NULL;
    }
    return a->t[a->n++] = t;
}

static mp_tensor *op(tmp *a, mp_op o, int n, mp_tensor *const *in, const mp_attrs *at) {
    if (a->st != MP_OK)
        return NULL;
    for (int i = 0; i < n; i++)
        if (!in[i])
            return NULL;
    mp_tensor *r = NULL;
    mp_status st = mp_op_run(o, n, in, at, &r);
    return keep(a, st, r);
}
static mp_tensor *op2(tmp *a, mp_op o, mp_tensor *x, mp_tensor *y) { return op(a, o, 2, (mp_tensor *[]){x, y}, NULL); }
static mp_tensor *op3(tmp *a, mp_op o, mp_tensor *x, mp_tensor *y, mp_tensor *z) {
    return op(a, o, 3, (mp_tensor *[]){x, y, z}, NULL);
}
static mp_tensor *zeros(tmp *a, mp_dtype dt, const mp_tensor *like) {
    if (a->st != MP_OK)
        return NULL;
    mp_tensor *r = NULL;
    mp_status st = mp_full(dt, like->ndim, like->shape, 0.0, mp_tensor_device(like), &r);
    return keep(a, st, r);
}
static mp_tensor *cast(tmp *a, mp_tensor *x, mp_dtype dt) {
    if (a->st != MP_OK || !x)
        return NULL;
    mp_tensor *r = NULL;
    mp_status st = mp_cast(x, dt, &r);
    return keep(a, st, r);
}
static mp_status done(tmp *a, mp_tensor **dx, int n, mp_tensor *const *res) {
    if (a->st == MP_OK)
        for (int i = 0; i < n; i++)
            if ((dx[i] = res[i]))
                mp_tensor_incref(dx[i]);
    for (int i = 0; i < a->n; i++)
        mp_tensor_decref(a->t[i]);
    return a->st;
}

#define IN(k) (n->inputs[k])

/* gather_nd: dy's rows added into zeros of params' shape at the indices */
mp_status mp_grad_gather_nd(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    if (!need[0])
        return MP_OK;
    tmp a = {0};
    mp_tensor *r = op3(&a, MP_OP_TENSOR_SCATTER_ADD, zeros(&a, dy->dtype, IN(0)), IN(1), dy);
    return done(&a, dx, 1, &r);
}

/* TensorFlow's rules: update: tensor gets dy with zeros at the indices, updates the gathered
 * dy; add / sub: dy and +/- the gathered dy; min / max: dy shared between the tensor's and
 * the updates' elements equal to the result (as _TensorScatterMinOrMaxGrad). */
mp_status mp_grad_tensor_scatter(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    tmp a = {0};
    mp_tensor *res[3] = {NULL, NULL, NULL}, *ind = IN(1);
    switch (n->op) {
    case MP_OP_TENSOR_SCATTER_UPDATE:
        if (need[0])
            res[0] = op3(&a, MP_OP_TENSOR_SCATTER_UPDATE, dy, ind, zeros(&a, dy->dtype, IN(2)));
        if (need[2])
            res[2] = op2(&a, MP_OP_GATHER_ND, dy, ind);
        break;
    case MP_OP_TENSOR_SCATTER_ADD:
    case MP_OP_TENSOR_SCATTER_SUB:
        if (need[0])
            res[0] = dy;
        if (need[2]) {
            res[2] = op2(&a, MP_OP_GATHER_ND, dy, ind);
            if (n->op == MP_OP_TENSOR_SCATTER_SUB)
                res[2] = op(&a, MP_OP_NEG, 1, &res[2], NULL);
        }
        break;
    default: {
        mp_tensor *y = n->output;
        mp_tensor *x_ind = cast(&a, op2(&a, MP_OP_EQUAL, IN(0), y), dy->dtype);
        mp_tensor *y_ind = cast(&a, op2(&a, MP_OP_EQUAL, IN(2), op2(&a, MP_OP_GATHER_ND, y, ind)), dy->dtype);
        mp_tensor *ys_ind = op3(&a, MP_OP_TENSOR_SCATTER_ADD, zeros(&a, dy->dtype, IN(0)), ind, y_ind);
        mp_tensor *total = op2(&a, MP_OP_ADD, x_ind, ys_ind);
        mp_tensor *share = op2(&a, MP_OP_DIV, dy, total);
        if (need[0])
            res[0] = op2(&a, MP_OP_MUL, share, x_ind);
        if (need[2])
            res[2] = op2(&a, MP_OP_MUL, op2(&a, MP_OP_GATHER_ND, share, ind), y_ind);
    }
    }
    return done(&a, dx, 3, res);
}

/* reverse: the same reverse of dy; roll: dy rolled back */
mp_status mp_grad_permute(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    if (!need[0])
        return MP_OK;
    mp_attrs at = n->attrs;
    if (n->op == MP_OP_ROLL)
        for (int d = 0; d < at.n_ints; d++) {
            int64_t size = IN(0)->shape[d];
            at.ints[d] = size ? (size - at.ints[d] % size) % size : 0;
        }
    return mp_op_run(n->op, 1, &dy, &at, &dx[0]);
}
