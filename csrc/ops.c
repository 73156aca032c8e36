/* ops.c — the op layer: one entry point (mp_op_run) for every op in ops.def.
 * Owns validation (shapes, dtypes, devices, attributes), output allocation, layout
 * decisions (views vs copies, moving reduced axes together, broadcasting) and the call
 * into the device's backend table. It must not touch elements itself and must not test
 * which device it runs on. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "mixprec.h"
#include "strings.h"
#include "amp.h"
#include "ops_internal.h"
#include "tape.h"

/* ------------------------------------------------------------------ op tables */

enum { FAM_UNARY, FAM_BINARY, FAM_COMPARE, FAM_REDUCE, FAM_OTHER };
#define KIND_UNARY(k) MP_UNARY_##k
#define KIND_BINARY(k) MP_BINARY_##k
#define KIND_COMPARE(k) MP_BINARY_##k
#define KIND_REDUCE(k) MP_REDUCE_##k
#define KIND_OTHER(k) 0

static const mp_op_info op_info[MP_OP_COUNT] = {
#define MP_OP(NAME, tfname, pyname, nin, amp, family, kind) [MP_OP_##NAME] = {tfname, nin, MP_AMP_##amp},
#include "ops.def"
#undef MP_OP
};

static const struct {
    int family;
    int kind;
} op_kernel[MP_OP_COUNT] = {
#define MP_OP(NAME, tfname, pyname, nin, amp, family, kind) [MP_OP_##NAME] = {FAM_##family, KIND_##family(kind)},
#include "ops.def"
#undef MP_OP
};

/* Tripwire: a new op must also get its backward rule (grad.c), its binding
 * (csrc/python/functions.c) and a row in tests/test_ops.py; then bump this number. */
_Static_assert(MP_OP_COUNT == 171, "ops.def changed: update grad.c, functions.c, tests/test_ops.py, then this count");

const mp_op_info *mp_op_get_info(mp_op op) {
    if ((int)op < 0 || op >= MP_OP_COUNT)
        return NULL;
    return &op_info[op];
}

#define OPNAME(op) (op_info[op].name)

/* ------------------------------------------------------------------ shape helpers */

static int64_t prod(const int64_t *s, int n) {
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        p *= s[i];
    return p;
}

/* "[2,3,4]" into buf (TensorFlow's shape spelling in messages). */
static const char *shape_str(const int64_t *s, int n, char *buf, size_t cap) {
    size_t used = 0;
    used += (size_t)snprintf(buf + used, cap - used, "[");
    for (int i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, i ? ",%lld" : "%lld", (long long)s[i]);
    if (used < cap)
        snprintf(buf + used, cap - used, "]");
    return buf;
}

mp_status mp_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout, int64_t *out) {
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int64_t da = i < n - na ? 1 : a[i - (n - na)];
        int64_t db = i < n - nb ? 1 : b[i - (n - nb)];
        if (da != db && da != 1 && db != 1) {
            char sa[128], sb[128];
            return mp_error_set(MP_ERR_SHAPE, "Incompatible shapes: %s vs. %s", shape_str(a, na, sa, sizeof sa),
                                shape_str(b, nb, sb, sizeof sb));
        }
        out[i] = da == 1 ? db : da;
    }
    *nout = n;
    return MP_OK;
}

/* Fill bc for `nops` operands of shapes (nd[k], sh[k]) broadcast to (n, out), then
 * collapse dims that are contiguous for every operand. */
static void make_bcast(int nops, const int *nd, const int64_t *const *sh, int n, const int64_t *out, mp_bcast *bc) {
    int64_t stride[3][MP_MAX_DIMS];
    for (int k = 0; k < nops; k++) {
        int64_t acc = 1;
        for (int i = n - 1; i >= 0; i--) {
            int j = i - (n - nd[k]);
            int64_t dim = j >= 0 ? sh[k][j] : 1;
            stride[k][i] = (dim == 1 && out[i] != 1) || j < 0 ? 0 : acc;
            if (j >= 0)
                acc *= dim;
        }
    }
    /* drop size-1 output dims, then merge neighbours */
    int m = 0;
    int64_t cs[MP_MAX_DIMS], cst[3][MP_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        if (out[i] == 1)
            continue;
        if (m > 0) {
            int mergeable = 1;
            for (int k = 0; k < nops; k++)
                if (cst[k][m - 1] != stride[k][i] * out[i])
                    mergeable = 0;
            if (mergeable) {
                cs[m - 1] *= out[i];
                for (int k = 0; k < nops; k++)
                    cst[k][m - 1] = stride[k][i];
                continue;
            }
        }
        cs[m] = out[i];
        for (int k = 0; k < nops; k++)
            cst[k][m] = stride[k][i];
        m++;
    }
    if (m == 0) {
        cs[0] = 1;
        for (int k = 0; k < nops; k++)
            cst[k][0] = 0;
        m = 1;
    }
    memset(bc, 0, sizeof *bc);
    bc->ndim = m;
    for (int i = 0; i < m; i++) {
        bc->shape[i] = cs[i];
        for (int k = 0; k < nops; k++)
            bc->stride[k][i] = cst[k][i];
    }
    bc->numel = prod(out, n);
}

/* Set while a dry trace (graph.h) runs an op whose value nobody may read: the outputs are
 * allocated with their shapes and dtypes, the kernels are not run (BE_CALL skips them). */
_Thread_local int mp_ops_skip_kernels;

static mp_status new_like_device(mp_dtype dt, int ndim, const int64_t *shape, mp_device dev, mp_tensor **out) {
    return mp_tensor_new(dt, ndim, shape, dev, out);
}

static const char *dev_str(mp_device d, char *buf, size_t cap) {
    snprintf(buf, cap, "%s:%d", d.type == MP_DEV_CUDA ? "GPU" : "CPU", d.index);
    return buf;
}

static mp_status need_float(mp_op op, mp_dtype dt) {
    if (!mp_dtype_is_floating(dt))
        return mp_error_set(MP_ERR_DTYPE,
                            "%s does not support %s tensors; it needs a floating dtype (float16, bfloat16, "
                            "float32 or float64). hint: cast first, e.g. mixprec.cast(x, 'float32')",
                            OPNAME(op), mp_dtype_name(dt));
    return MP_OK;
}

static mp_status need_numeric(mp_op op, mp_dtype dt) {
    if (dt == MP_BOOL)
        return mp_error_set(MP_ERR_DTYPE, "%s does not support bool tensors. hint: cast to an integer or float dtype",
                            OPNAME(op));
    return MP_OK;
}

static mp_status need_bool(mp_op op, mp_dtype dt) {
    if (dt != MP_BOOL)
        return mp_error_set(MP_ERR_DTYPE, "%s needs bool tensors, got %s", OPNAME(op), mp_dtype_name(dt));
    return MP_OK;
}

static mp_status same_dtype(mp_op op, mp_tensor *const *in, int n) {
    for (int i = 1; i < n; i++)
        if (in[i]->dtype != in[0]->dtype)
            return mp_error_set(MP_ERR_DTYPE,
                                "cannot compute %s as input #%d (zero-based) was expected to be a %s tensor but "
                                "is a %s tensor. mixprec does not promote dtypes (as TensorFlow). hint: cast one "
                                "side, e.g. mixprec.cast(y, x.dtype)",
                                OPNAME(op), i, mp_dtype_name(in[0]->dtype), mp_dtype_name(in[i]->dtype));
    return MP_OK;
}

/* A new tensor header on the same storage (new id): identity, cast-to-same, reshape. */
static mp_status alias(mp_tensor *x, int ndim, const int64_t *shape, mp_tensor **out) {
    return mp_tensor_view(x, x->offset, x->dtype, ndim, shape, out);
}

/* ------------------------------------------------------------------ families */

static mp_status run_unary(mp_op op, mp_unary_kind k, mp_tensor *x, const mp_attrs *at, const mp_backend *be,
                           mp_tensor **out) {
    mp_dtype dt = x->dtype, odt = dt;
    switch (k) {
    case MP_UNARY_NEG:
    case MP_UNARY_ABS:
    case MP_UNARY_SQUARE:
    case MP_UNARY_SIGN:
    case MP_UNARY_RELU: MP_TRY(need_numeric(op, dt)); break;
    case MP_UNARY_LOGICAL_NOT: MP_TRY(need_bool(op, dt)); break;
    case MP_UNARY_IS_FINITE:
    case MP_UNARY_IS_NAN:
    case MP_UNARY_IS_INF:
        MP_TRY(need_float(op, dt));
        odt = MP_BOOL;
        break;
    default: MP_TRY(need_float(op, dt)); break;
    }
    if (op == MP_OP_GELU && at->i0)
        k = MP_UNARY_GELU_TANH;
    double alpha = at->f0; /* ELU / LeakyRelu alpha, passed explicitly by every caller */
    MP_TRY(new_like_device(odt, x->ndim, x->shape, mp_tensor_device(x), out));
    mp_status st = BE_CALL(be, unary, mp_tensor_device(x), k, dt, mp_tensor_data(x), mp_tensor_data(*out), x->numel, alpha);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

static mp_status run_binary(mp_op op, mp_binary_kind k, int is_cmp, mp_tensor *a, mp_tensor *b, const mp_attrs *at,
                            const mp_backend *be, mp_tensor **out) {
    mp_tensor *in[2] = {a, b};
    MP_TRY(same_dtype(op, in, 2));
    mp_dtype dt = a->dtype;
    switch (k) {
    case MP_BINARY_EQUAL:
    case MP_BINARY_NOT_EQUAL: break;
    case MP_BINARY_LOGICAL_AND:
    case MP_BINARY_LOGICAL_OR: MP_TRY(need_bool(op, dt)); break;
    case MP_BINARY_DIV:
    case MP_BINARY_SIGMOID_GRAD:
    case MP_BINARY_TANH_GRAD:
    case MP_BINARY_ELU_GRAD:
    case MP_BINARY_SOFTPLUS_GRAD:
    case MP_BINARY_GELU_GRAD:
    case MP_BINARY_GELU_TANH_GRAD:
    case MP_BINARY_RSQRT_GRAD:
    case MP_BINARY_SQRT_GRAD:
    case MP_BINARY_LEAKY_RELU_GRAD:
    case MP_BINARY_ATAN2:
    case MP_BINARY_XLOGY:
    case MP_BINARY_XDIVY:
    case MP_BINARY_XLOG1PY:
    case MP_BINARY_DIV_NO_NAN:
    case MP_BINARY_MUL_NO_NAN:
    case MP_BINARY_IGAMMA:
    case MP_BINARY_IGAMMAC:
    case MP_BINARY_IGAMMA_GRAD_A: MP_TRY(need_float(op, dt)); break;
    case MP_BINARY_NEXTAFTER:
    case MP_BINARY_ZETA:
    case MP_BINARY_POLYGAMMA: /* TensorFlow's kernels: float32 and float64 only */
        if (dt != MP_F32 && dt != MP_F64)
            return mp_error_set(MP_ERR_DTYPE,
                                "Value for attr 'T' of %s is not in the list of allowed values: double, float (%s)",
                                mp_dtype_name(dt), OPNAME(op));
        break;
    default: MP_TRY(need_numeric(op, dt)); break;
    }
    int n;
    int64_t oshape[MP_MAX_DIMS];
    MP_TRY(mp_broadcast_shapes(a->ndim, a->shape, b->ndim, b->shape, &n, oshape));
    MP_TRY(mp_shape_check(n, oshape, NULL)); /* before make_bcast multiplies the dims */
    mp_bcast bc;
    int nd[2] = {a->ndim, b->ndim};
    const int64_t *sh[2] = {a->shape, b->shape};
    make_bcast(2, nd, sh, n, oshape, &bc);
    MP_TRY(new_like_device(is_cmp ? MP_BOOL : dt, n, oshape, mp_tensor_device(a), out));
    double alpha = at->f0;
    mp_status st = BE_CALL(be, binary, mp_tensor_device(a), k, dt, &bc, mp_tensor_data(a), mp_tensor_data(b),
                              mp_tensor_data(*out), alpha);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

static mp_status check_axes(mp_op op, const mp_tensor *x, const mp_attrs *at) {
    for (int i = 0; i < at->n_ints; i++) {
        if (at->ints[i] < 0 || at->ints[i] >= x->ndim || (i > 0 && at->ints[i] <= at->ints[i - 1]))
            return mp_error_set(MP_ERR_INTERNAL, "%s: axes must be normalised, sorted and unique", OPNAME(op));
    }
    return MP_OK;
}

/* Copy x into a new contiguous tensor whose dims are x's permuted by perm. */
static mp_status permute(mp_tensor *x, const int64_t *perm, const mp_backend *be, mp_tensor **out) {
    int64_t oshape[MP_MAX_DIMS], cstride[MP_MAX_DIMS];
    int nd = x->ndim;
    int64_t acc = 1;
    for (int d = nd - 1; d >= 0; d--) {
        cstride[d] = acc;
        acc *= x->shape[d];
    }
    mp_strided s = {.ndim = nd};
    for (int d = 0; d < nd; d++) {
        oshape[d] = x->shape[perm[d]];
        s.shape[d] = oshape[d];
        s.sstride[d] = cstride[perm[d]];
    }
    acc = 1;
    for (int d = nd - 1; d >= 0; d--) {
        s.dstride[d] = acc;
        acc *= oshape[d];
    }
    MP_TRY(new_like_device(x->dtype, nd, oshape, mp_tensor_device(x), out));
    mp_status st = BE_CALL(be, strided_copy, mp_tensor_device(x), x->dtype, &s, mp_tensor_data(x), mp_tensor_data(*out));
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

static mp_status run_reduce(mp_op op, mp_reduce_kind k, mp_tensor *x, const mp_attrs *at, const mp_backend *be,
                            mp_tensor **out) {
    if (k == MP_REDUCE_ALL || k == MP_REDUCE_ANY)
        MP_TRY(need_bool(op, x->dtype));
    else
        MP_TRY(need_numeric(op, x->dtype));
    MP_TRY(check_axes(op, x, at));
    int nd = x->ndim, na = at->n_ints;
    int reduced[MP_MAX_DIMS] = {0};
    for (int i = 0; i < na; i++)
        reduced[at->ints[i]] = 1;
    int64_t oshape[MP_MAX_DIMS];
    int on = 0;
    for (int d = 0; d < nd; d++) {
        if (!reduced[d])
            oshape[on++] = x->shape[d];
        else if (at->i0)
            oshape[on++] = 1;
    }
    if (na == 0) /* nothing to reduce: a copy with a new id */
        return alias(x, x->ndim, x->shape, out);
    int contiguous = at->ints[na - 1] - at->ints[0] == na - 1;
    mp_tensor *src = x;
    int64_t outer, red, inner;
    if (contiguous) {
        outer = prod(x->shape, (int)at->ints[0]);
        red = 1;
        for (int i = 0; i < na; i++)
            red *= x->shape[at->ints[i]];
        inner = prod(x->shape + at->ints[na - 1] + 1, nd - (int)at->ints[na - 1] - 1);
    } else {
        int64_t perm[MP_MAX_DIMS];
        int p = 0;
        outer = 1;
        red = 1;
        for (int d = 0; d < nd; d++)
            if (!reduced[d]) {
                perm[p++] = d;
                outer *= x->shape[d];
            }
        for (int d = 0; d < nd; d++)
            if (reduced[d]) {
                perm[p++] = d;
                red *= x->shape[d];
            }
        inner = 1;
        MP_TRY(permute(x, perm, be, &src));
    }
    mp_status st = new_like_device(x->dtype, on, oshape, mp_tensor_device(x), out);
    if (st == MP_OK) {
        st = BE_CALL(be, reduce, mp_tensor_device(x), k, x->dtype, mp_tensor_data(src), mp_tensor_data(*out), outer, red,
                        inner);
        if (st != MP_OK) {
            mp_tensor_decref(*out);
            *out = NULL;
        }
    }
    if (src != x)
        mp_tensor_decref(src);
    return st;
}

/* ------------------------------------------------------------------ other ops */

static mp_status run_cast(mp_tensor *x, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    if (!mp_dtype_valid(at->dtype))
        return mp_error_set(MP_ERR_VALUE, "Cast: invalid target dtype code %d", at->dtype);
    if ((mp_dtype)at->dtype == x->dtype)
        return alias(x, x->ndim, x->shape, out);
    MP_TRY(new_like_device((mp_dtype)at->dtype, x->ndim, x->shape, mp_tensor_device(x), out));
    mp_status st = BE_CALL(be, cast, mp_tensor_device(x), mp_tensor_data(x), x->dtype, mp_tensor_data(*out), (mp_dtype)at->dtype,
                            x->numel);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

static mp_status run_where(mp_tensor *const *in, const mp_backend *be, mp_tensor **out) {
    mp_tensor *c = in[0], *a = in[1], *b = in[2];
    if (c->dtype != MP_BOOL)
        return mp_error_set(MP_ERR_DTYPE, "SelectV2: the condition must be a bool tensor, got %s",
                            mp_dtype_name(c->dtype));
    mp_tensor *ab[2] = {a, b};
    MP_TRY(same_dtype(MP_OP_WHERE, ab, 2));
    int n1, n;
    int64_t s1[MP_MAX_DIMS], os[MP_MAX_DIMS];
    MP_TRY(mp_broadcast_shapes(c->ndim, c->shape, a->ndim, a->shape, &n1, s1));
    MP_TRY(mp_broadcast_shapes(n1, s1, b->ndim, b->shape, &n, os));
    MP_TRY(mp_shape_check(n, os, NULL));
    mp_bcast bc;
    int nd[3] = {c->ndim, a->ndim, b->ndim};
    const int64_t *sh[3] = {c->shape, a->shape, b->shape};
    make_bcast(3, nd, sh, n, os, &bc);
    MP_TRY(new_like_device(a->dtype, n, os, mp_tensor_device(a), out));
    mp_status st = BE_CALL(be, where, mp_tensor_device(a), a->dtype, &bc, mp_tensor_data(c), mp_tensor_data(a),
                             mp_tensor_data(b), mp_tensor_data(*out));
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

static mp_status run_arg(mp_op op, mp_tensor *x, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    MP_TRY(need_numeric(op, x->dtype));
    int ax = (int)at->i0;
    if (ax < 0 || ax >= x->ndim)
        return mp_error_set(MP_ERR_VALUE, "%s: axis %d is out of range for a tensor of rank %d", OPNAME(op), ax,
                            x->ndim);
    if (x->shape[ax] == 0) {
        char s[128];
        return mp_error_set(MP_ERR_VALUE, "%s: reduction axis %d is empty in shape %s", OPNAME(op), ax,
                            shape_str(x->shape, x->ndim, s, sizeof s));
    }
    mp_dtype odt = at->dtype == MP_I32 ? MP_I32 : MP_I64;
    int64_t oshape[MP_MAX_DIMS];
    int on = 0;
    for (int d = 0; d < x->ndim; d++)
        if (d != ax)
            oshape[on++] = x->shape[d];
    mp_tensor *idx;
    MP_TRY(new_like_device(MP_I64, on, oshape, mp_tensor_device(x), &idx));
    mp_status st = BE_CALL(be, argreduce, mp_tensor_device(x), op == MP_OP_ARGMIN, x->dtype, mp_tensor_data(x),
                                 mp_tensor_data(idx), prod(x->shape, ax), x->shape[ax],
                                 prod(x->shape + ax + 1, x->ndim - ax - 1));
    if (st != MP_OK) {
        mp_tensor_decref(idx);
        return st;
    }
    if (odt == MP_I64) {
        *out = idx;
        return MP_OK;
    }
    mp_attrs ca = {.dtype = MP_I32};
    st = run_cast(idx, &ca, be, out);
    mp_tensor_decref(idx);
    return st;
}

static mp_status run_broadcast_to(mp_tensor *x, int n, const int64_t *target, const mp_backend *be, mp_tensor **out);

static mp_status run_matmul(mp_tensor *a, mp_tensor *b, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    mp_tensor *in[2] = {a, b};
    MP_TRY(same_dtype(MP_OP_MATMUL, in, 2));
    MP_TRY(need_numeric(MP_OP_MATMUL, a->dtype));
    char s1[128], s2[128];
    if (a->ndim < 2 || b->ndim < 2)
        return mp_error_set(MP_ERR_SHAPE,
                            "MatMul needs inputs of rank >= 2, got In[0]: %s and In[1]: %s. hint: use "
                            "mixprec.expand_dims or mixprec.reshape to add a dimension",
                            shape_str(a->shape, a->ndim, s1, sizeof s1), shape_str(b->shape, b->ndim, s2, sizeof s2));
    int ta = (int)at->i0, tb = (int)at->i1;
    int64_t M = a->shape[a->ndim - (ta ? 1 : 2)], Ka = a->shape[a->ndim - (ta ? 2 : 1)];
    int64_t Kb = b->shape[b->ndim - (tb ? 1 : 2)], N = b->shape[b->ndim - (tb ? 2 : 1)];
    if (Ka != Kb)
        return mp_error_set(MP_ERR_SHAPE, "Matrix size-incompatible: In[0]: %s, In[1]: %s%s",
                            shape_str(a->shape, a->ndim, s1, sizeof s1), shape_str(b->shape, b->ndim, s2, sizeof s2),
                            ta || tb ? " (after transpose_a/transpose_b)" : "");
    /* batch dims broadcast */
    int nb_out;
    int64_t bshape[MP_MAX_DIMS];
    MP_TRY(mp_broadcast_shapes(a->ndim - 2, a->shape, b->ndim - 2, b->shape, &nb_out, bshape));
    int64_t batch;
    MP_TRY(mp_shape_check(nb_out, bshape, &batch)); /* the batch dims multiply without overflow */
    mp_tensor *A = a, *B = b;
    mp_status st = MP_OK;
    int64_t sa = M * Ka, sb = Ka * N;
    /* an operand whose batch part differs from the output's is materialised unless it is one matrix */
    int64_t abatch = prod(a->shape, a->ndim - 2), bbatch = prod(b->shape, b->ndim - 2);
    if (abatch == 1)
        sa = 0;
    else if (abatch != batch) {
        int64_t ts[MP_MAX_DIMS];
        memcpy(ts, bshape, sizeof(int64_t) * (size_t)nb_out);
        ts[nb_out] = a->shape[a->ndim - 2];
        ts[nb_out + 1] = a->shape[a->ndim - 1];
        MP_TRY(run_broadcast_to(a, nb_out + 2, ts, be, &A));
    }
    if (bbatch == 1)
        sb = 0;
    else if (bbatch != batch) {
        int64_t ts[MP_MAX_DIMS];
        memcpy(ts, bshape, sizeof(int64_t) * (size_t)nb_out);
        ts[nb_out] = b->shape[b->ndim - 2];
        ts[nb_out + 1] = b->shape[b->ndim - 1];
        st = run_broadcast_to(b, nb_out + 2, ts, be, &B);
        if (st != MP_OK)
            goto done;
    }
    {
        int64_t oshape[MP_MAX_DIMS];
        memcpy(oshape, bshape, sizeof(int64_t) * (size_t)nb_out);
        oshape[nb_out] = M;
        oshape[nb_out + 1] = N;
        st = new_like_device(a->dtype, nb_out + 2, oshape, mp_tensor_device(a), out);
        if (st != MP_OK)
            goto done;
        st = BE_CALL(be, gemm, mp_tensor_device(a), a->dtype, ta, tb, M, N, Ka, 1.0, mp_tensor_data(A), mp_tensor_data(B), 0.0,
                      mp_tensor_data(*out), batch, sa, sb, M * N);
        if (st != MP_OK) {
            mp_tensor_decref(*out);
            *out = NULL;
        }
    }
done:
    if (A != a)
        mp_tensor_decref(A);
    if (B != b)
        mp_tensor_decref(B);
    return st;
}

/* MatMul + bias (+ ReLU): the backend's fused-GEMM slot gemm_bias_act (the CPU: oneDNN's bias
 * argument or its own composition; CUDA: one cuBLASLt call with the bias / ReLU+bias
 * epilogue) when it has one and the product sums over something; otherwise out (M, N) filled
 * with the bias rows and out += op(a) op(b) by the gemm slot (beta = 1), then ReLU in place. */
static mp_status run_matmul_bias_act(mp_tensor *const *in, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    mp_tensor *a = in[0], *b = in[1], *bias = in[2];
    MP_TRY(same_dtype(MP_OP_MATMUL_BIAS_ACT, in, 3));
    MP_TRY(need_float(MP_OP_MATMUL_BIAS_ACT, a->dtype));
    char s1[128], s2[128];
    if (a->ndim != 2 || b->ndim != 2)
        return mp_error_set(MP_ERR_SHAPE, "MatMul (with a bias) needs inputs of rank 2, got In[0]: %s and In[1]: %s",
                            shape_str(a->shape, a->ndim, s1, sizeof s1), shape_str(b->shape, b->ndim, s2, sizeof s2));
    int ta = (int)at->i0, tb = (int)at->i1;
    int64_t M = a->shape[ta ? 1 : 0], Ka = a->shape[ta ? 0 : 1], Kb = b->shape[tb ? 1 : 0], N = b->shape[tb ? 0 : 1];
    if (Ka != Kb)
        return mp_error_set(MP_ERR_SHAPE, "Matrix size-incompatible: In[0]: %s, In[1]: %s%s",
                            shape_str(a->shape, a->ndim, s1, sizeof s1), shape_str(b->shape, b->ndim, s2, sizeof s2),
                            ta || tb ? " (after transpose_a/transpose_b)" : "");
    if (bias->ndim != 1 || bias->shape[0] != N)
        return mp_error_set(MP_ERR_SHAPE, "MatMul: the bias must have shape [%lld] (the product's columns), got %s",
                            (long long)N, shape_str(bias->shape, bias->ndim, s1, sizeof s1));
    if (at->i2 != 0 && at->i2 != 1)
        return mp_error_set(MP_ERR_VALUE, "MatMul: unknown activation code %lld (0 none, 1 relu)",
                            (long long)at->i2);
    int64_t oshape[2] = {M, N};
    mp_device dev = mp_tensor_device(a);
    MP_TRY(new_like_device(a->dtype, 2, oshape, dev, out));
    mp_status st = MP_OK;
    if ((*out)->numel > 0 && Ka > 0 && be->gemm_bias_act) {
        st = BE_CALL(be, gemm_bias_act, dev, a->dtype, ta, tb, M, N, Ka, mp_tensor_data(a), mp_tensor_data(b),
                     mp_tensor_data(bias), (int)at->i2, mp_tensor_data(*out));
    } else if ((*out)->numel > 0) {
        mp_strided sc = {.ndim = 2};
        sc.shape[0] = M, sc.shape[1] = N;
        sc.sstride[0] = 0, sc.sstride[1] = 1;
        sc.dstride[0] = N, sc.dstride[1] = 1;
        st = BE_CALL(be, strided_copy, dev, a->dtype, &sc, mp_tensor_data(bias), mp_tensor_data(*out));
        if (st == MP_OK && Ka > 0)
            st = BE_CALL(be, gemm, dev, a->dtype, ta, tb, M, N, Ka, 1.0, mp_tensor_data(a), mp_tensor_data(b), 1.0,
                         mp_tensor_data(*out), 1, 0, 0, 0);
        if (st == MP_OK && at->i2)
            st = BE_CALL(be, unary, dev, MP_UNARY_RELU, a->dtype, mp_tensor_data(*out), mp_tensor_data(*out),
                         (*out)->numel, 0.0);
    }
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

static mp_status run_softmax(mp_op op, mp_tensor *x, const mp_backend *be, mp_tensor **out) {
    MP_TRY(need_float(op, x->dtype));
    if (x->ndim < 1)
        return mp_error_set(MP_ERR_SHAPE, "%s: logits must have rank >= 1, got a scalar", OPNAME(op));
    MP_TRY(new_like_device(x->dtype, x->ndim, x->shape, mp_tensor_device(x), out));
    int64_t cols = x->shape[x->ndim - 1];
    int64_t rows = cols ? x->numel / cols : 0;
    mp_status st = BE_CALL(be, softmax, mp_tensor_device(x), op == MP_OP_LOG_SOFTMAX, x->dtype, mp_tensor_data(x),
                               mp_tensor_data(*out), rows, cols);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

static mp_status run_reshape(mp_tensor *x, const mp_attrs *in_at, mp_tensor **out) {
    int64_t numel;
    mp_attrs local;
    const mp_attrs *at = in_at;
    if (in_at->i1 > 0 && in_at->i1 <= in_at->n_ints) {
        /* attrs i1 = 1 + the dimension given as -1: inferred from this input's size */
        local = *in_at;
        int k = (int)in_at->i1 - 1;
        int64_t rest = 1;
        for (int d = 0; d < local.n_ints; d++)
            if (d != k)
                rest *= local.ints[d];
        if (rest > 0 && x->numel % rest == 0)
            local.ints[k] = x->numel / rest;
        at = &local;
    }
    MP_TRY(mp_shape_check(at->n_ints, at->ints, &numel));
    if (numel != x->numel) {
        char s1[128], s2[128];
        return mp_error_set(MP_ERR_SHAPE,
                            "Input to reshape is a tensor with %lld values, but the requested shape %s has %lld "
                            "(input shape %s)",
                            (long long)x->numel, shape_str(at->ints, at->n_ints, s1, sizeof s1), (long long)numel,
                            shape_str(x->shape, x->ndim, s2, sizeof s2));
    }
    return alias(x, at->n_ints, at->ints, out);
}

static mp_status run_transpose(mp_tensor *x, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    if (at->n_ints != x->ndim)
        return mp_error_set(MP_ERR_VALUE, "transpose: perm has %d entries for a tensor of rank %d", at->n_ints,
                            x->ndim);
    int seen[MP_MAX_DIMS] = {0}, identity = 1;
    for (int d = 0; d < x->ndim; d++) {
        int64_t p = at->ints[d];
        if (p < 0 || p >= x->ndim || seen[p])
            return mp_error_set(MP_ERR_VALUE, "transpose: perm is not a permutation of 0..%d", x->ndim - 1);
        seen[p] = 1;
        if (p != d)
            identity = 0;
    }
    if (identity)
        return alias(x, x->ndim, x->shape, out);
    return permute(x, at->ints, be, out);
}

/* Copy src into the region of dst starting at element offset `off` with dst's strides. */
static mp_status copy_into(mp_tensor *src, mp_tensor *dst, int64_t off, const int64_t *dstride, const int64_t *step,
                           const mp_backend *be) {
    if (src->numel == 0)
        return MP_OK;
    mp_strided s = {.ndim = src->ndim};
    int64_t acc = 1;
    for (int d = src->ndim - 1; d >= 0; d--) {
        s.shape[d] = src->shape[d];
        s.sstride[d] = acc;
        s.dstride[d] = src->shape[d] > 1 ? dstride[d] * (step ? step[d] : 1) : 0; /* see run_strided_slice */
        acc *= src->shape[d];
    }
    char *base = (char *)mp_tensor_data(dst) + off * (int64_t)mp_dtype_size(dst->dtype);
    return BE_CALL(be, strided_copy, mp_tensor_device(dst), dst->dtype, &s, mp_tensor_data(src), base);
}

static void contig_strides(const int64_t *shape, int nd, int64_t *st) {
    int64_t acc = 1;
    for (int d = nd - 1; d >= 0; d--) {
        st[d] = acc;
        acc *= shape[d];
    }
}

static mp_status run_concat(int n, mp_tensor *const *in, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    if (n < 1)
        return mp_error_set(MP_ERR_VALUE, "ConcatV2 needs at least one input");
    MP_TRY(same_dtype(MP_OP_CONCAT, in, n));
    int nd = in[0]->ndim, ax = (int)at->i0;
    if (nd == 0)
        return mp_error_set(MP_ERR_SHAPE, "ConcatV2: cannot concatenate scalars. hint: use mixprec.stack");
    if (ax < 0 || ax >= nd)
        return mp_error_set(MP_ERR_VALUE, "ConcatV2: axis %d is out of range for rank %d", ax, nd);
    int64_t oshape[MP_MAX_DIMS];
    memcpy(oshape, in[0]->shape, sizeof(int64_t) * (size_t)nd);
    oshape[ax] = 0;
    for (int i = 0; i < n; i++) {
        char s1[128], s2[128];
        if (in[i]->ndim != nd)
            return mp_error_set(MP_ERR_SHAPE, "ConcatV2: input #%d has rank %d but input #0 has rank %d", i,
                                in[i]->ndim, nd);
        for (int d = 0; d < nd; d++)
            if (d != ax && in[i]->shape[d] != in[0]->shape[d])
                return mp_error_set(MP_ERR_SHAPE,
                                    "ConcatV2: dimension %d of input #%d does not match: shape %s vs. input #0 %s", d,
                                    i, shape_str(in[i]->shape, nd, s1, sizeof s1),
                                    shape_str(in[0]->shape, nd, s2, sizeof s2));
        oshape[ax] += in[i]->shape[ax];
    }
    MP_TRY(new_like_device(in[0]->dtype, nd, oshape, mp_tensor_device(in[0]), out));
    int64_t ost[MP_MAX_DIMS];
    contig_strides(oshape, nd, ost);
    int64_t off = 0;
    for (int i = 0; i < n; i++) {
        mp_status st = copy_into(in[i], *out, off * ost[ax], ost, NULL, be);
        if (st != MP_OK) {
            mp_tensor_decref(*out);
            *out = NULL;
            return st;
        }
        off += in[i]->shape[ax];
    }
    return MP_OK;
}

static mp_status run_stack(int n, mp_tensor *const *in, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    if (n < 1)
        return mp_error_set(MP_ERR_VALUE, "Pack needs at least one input");
    MP_TRY(same_dtype(MP_OP_STACK, in, n));
    int nd = in[0]->ndim, ax = (int)at->i0;
    if (ax < 0 || ax > nd)
        return mp_error_set(MP_ERR_VALUE, "Pack: axis %d is out of range for inputs of rank %d", ax, nd);
    if (nd + 1 > MP_MAX_DIMS)
        return mp_error_set(MP_ERR_VALUE, "Pack: the result would have more than %d dimensions", MP_MAX_DIMS);
    for (int i = 1; i < n; i++) {
        int same = in[i]->ndim == nd;
        for (int d = 0; same && d < nd; d++)
            same = in[i]->shape[d] == in[0]->shape[d];
        if (!same) {
            char s1[128], s2[128];
            return mp_error_set(MP_ERR_SHAPE, "Pack: shapes of all inputs must match: input #0 is %s, input #%d is %s",
                                shape_str(in[0]->shape, nd, s1, sizeof s1), i,
                                shape_str(in[i]->shape, in[i]->ndim, s2, sizeof s2));
        }
    }
    int64_t oshape[MP_MAX_DIMS], eshape[MP_MAX_DIMS];
    for (int d = 0, j = 0; d <= nd; d++) {
        oshape[d] = d == ax ? n : in[0]->shape[j];
        eshape[d] = d == ax ? 1 : in[0]->shape[j];
        if (d != ax)
            j++;
    }
    MP_TRY(new_like_device(in[0]->dtype, nd + 1, oshape, mp_tensor_device(in[0]), out));
    int64_t ost[MP_MAX_DIMS];
    contig_strides(oshape, nd + 1, ost);
    for (int i = 0; i < n; i++) {
        mp_tensor *v;
        mp_status st = alias(in[i], nd + 1, eshape, &v);
        if (st == MP_OK) {
            st = copy_into(v, *out, i * ost[ax], ost, NULL, be);
            mp_tensor_decref(v);
        }
        if (st != MP_OK) {
            mp_tensor_decref(*out);
            *out = NULL;
            return st;
        }
    }
    return MP_OK;
}

static mp_status check_slice(const char *what, const int64_t *shape, int nd, const mp_attrs *at) {
    if (at->n_ints != nd)
        return mp_error_set(MP_ERR_INTERNAL, "%s: %d slice specs for rank %d", what, at->n_ints, nd);
    for (int d = 0; d < nd; d++) {
        int64_t b = at->ints[d], c = at->ints2[d], s = at->ints3[d];
        if (c < 0 || s == 0)
            return mp_error_set(MP_ERR_INTERNAL, "%s: bad slice spec on dim %d", what, d);
        int64_t last; /* b + (c - 1) * s, which a huge step overflows */
        if (c > 0 && (b < 0 || b >= shape[d] || __builtin_mul_overflow(c - 1, s, &last) ||
                      __builtin_add_overflow(b, last, &last) || last < 0 || last >= shape[d]))
            return mp_error_set(MP_ERR_INDEX, "%s: slice on dimension %d is out of bounds for size %lld", what, d,
                                (long long)shape[d]);
        if (((at->i0 >> d) & 1) && c != 1)
            return mp_error_set(MP_ERR_INTERNAL, "%s: shrunk dimension %d must have one element", what, d);
    }
    return MP_OK;
}

static mp_status run_strided_slice(mp_tensor *x, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    int nd = x->ndim;
    MP_TRY(check_slice("StridedSlice", x->shape, nd, at));
    int64_t full[MP_MAX_DIMS], oshape[MP_MAX_DIMS], xst[MP_MAX_DIMS];
    int on = 0;
    for (int d = 0; d < nd; d++) {
        full[d] = at->ints2[d];
        if (!((at->i0 >> d) & 1))
            oshape[on++] = at->ints2[d];
    }
    contig_strides(x->shape, nd, xst);
    int64_t off = 0;
    for (int d = 0; d < nd; d++)
        if (full[d] > 0)
            off += at->ints[d] * xst[d];
    /* a run of whole rows (step 1 on dim 0, every later dim whole) is a zero-copy view */
    int view = nd == 0 || at->ints3[0] == 1;
    for (int d = 1; view && d < nd; d++)
        view = at->ints[d] == 0 && at->ints2[d] == x->shape[d] && at->ints3[d] == 1;
    if (view)
        return mp_tensor_view(x, x->offset + (size_t)off * mp_dtype_size(x->dtype), x->dtype, on, oshape, out);
    MP_TRY(new_like_device(x->dtype, on, oshape, mp_tensor_device(x), out));
    if ((*out)->numel == 0)
        return MP_OK;
    mp_strided s = {.ndim = nd};
    int64_t dst[MP_MAX_DIMS];
    contig_strides(full, nd, dst);
    for (int d = 0; d < nd; d++) {
        s.shape[d] = full[d];
        /* the step only matters along a dimension that takes two or more elements, and
         * there |step| < size (check_slice), so the product cannot overflow */
        s.sstride[d] = full[d] > 1 ? xst[d] * at->ints3[d] : 0;
        s.dstride[d] = dst[d];
    }
    const char *src = (const char *)mp_tensor_data(x) + off * (int64_t)mp_dtype_size(x->dtype);
    mp_status st = BE_CALL(be, strided_copy, mp_tensor_device(x), x->dtype, &s, src, mp_tensor_data(*out));
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

static mp_status run_strided_slice_grad(mp_tensor *dy, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    int nd = at->n_ints;
    MP_TRY(mp_shape_check(nd, at->ints4, NULL));
    MP_TRY(check_slice("StridedSliceGrad", at->ints4, nd, at));
    int64_t full[MP_MAX_DIMS], xst[MP_MAX_DIMS];
    int64_t numel = 1;
    for (int d = 0; d < nd; d++) {
        full[d] = at->ints2[d];
        numel *= full[d];
    }
    if (numel != dy->numel)
        return mp_error_set(MP_ERR_SHAPE, "StridedSliceGrad: upstream gradient has %lld values, the slice %lld",
                            (long long)dy->numel, (long long)numel);
    MP_TRY(new_like_device(dy->dtype, nd, at->ints4, mp_tensor_device(dy), out));
    mp_status st = BE_CALL(be, fill, mp_tensor_device(dy), mp_tensor_data(*out), dy->dtype, (*out)->numel, 0.0);
    if (st == MP_OK && numel > 0) {
        contig_strides(at->ints4, nd, xst);
        int64_t off = 0;
        for (int d = 0; d < nd; d++)
            off += at->ints[d] * xst[d];
        mp_tensor *v;
        st = alias(dy, nd, full, &v);
        if (st == MP_OK) {
            st = copy_into(v, *out, off, xst, at->ints3, be);
            mp_tensor_decref(v);
        }
    }
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

static mp_status run_broadcast_to(mp_tensor *x, int n, const int64_t *target, const mp_backend *be, mp_tensor **out) {
    int bn;
    int64_t bs[MP_MAX_DIMS];
    MP_TRY(mp_shape_check(n, target, NULL));
    mp_status st = mp_broadcast_shapes(x->ndim, x->shape, n, target, &bn, bs);
    int ok = st == MP_OK && bn == n;
    for (int d = 0; ok && d < n; d++)
        ok = bs[d] == target[d];
    if (!ok) {
        char s1[128], s2[128];
        return mp_error_set(MP_ERR_SHAPE, "BroadcastTo: cannot broadcast a tensor of shape %s to shape %s",
                            shape_str(x->shape, x->ndim, s1, sizeof s1), shape_str(target, n, s2, sizeof s2));
    }
    MP_TRY(new_like_device(x->dtype, n, target, mp_tensor_device(x), out));
    if ((*out)->numel == 0)
        return MP_OK;
    mp_strided s = {.ndim = n};
    int64_t xst[MP_MAX_DIMS];
    contig_strides(x->shape, x->ndim, xst);
    contig_strides(target, n, s.dstride);
    for (int d = 0; d < n; d++) {
        int j = d - (n - x->ndim);
        s.shape[d] = target[d];
        s.sstride[d] = (j < 0 || x->shape[j] == 1) ? 0 : xst[j];
    }
    st = BE_CALL(be, strided_copy, mp_tensor_device(x), x->dtype, &s, mp_tensor_data(x), mp_tensor_data(*out));
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

static mp_status run_fill(const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    if (!mp_dtype_valid(at->dtype))
        return mp_error_set(MP_ERR_VALUE, "Fill: invalid dtype code %d", at->dtype);
    MP_TRY(new_like_device((mp_dtype)at->dtype, at->n_ints, at->ints, at->device, out));
    mp_status st = BE_CALL(be, fill, at->device, mp_tensor_data(*out), (mp_dtype)at->dtype, (*out)->numel, at->f0);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

static mp_status run_range(const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    if (!mp_dtype_valid(at->dtype) || at->dtype == MP_BOOL)
        return mp_error_set(MP_ERR_DTYPE, "Range: unsupported dtype %s", mp_dtype_name((mp_dtype)at->dtype));
    int64_t n = at->i0;
    if (n < 0)
        return mp_error_set(MP_ERR_VALUE, "Range: negative length %lld", (long long)n);
    MP_TRY(new_like_device((mp_dtype)at->dtype, 1, &n, at->device, out));
    mp_status st = BE_CALL(be, iota, at->device, mp_tensor_data(*out), (mp_dtype)at->dtype, n, at->f0, at->f1);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

static mp_status run_shape(mp_tensor *x, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    if (at->dtype != MP_I32 && at->dtype != MP_I64)
        return mp_error_set(MP_ERR_DTYPE, "Shape: out_type must be int32 or int64, got %s",
                            mp_dtype_name((mp_dtype)at->dtype));
    int64_t n = x->ndim, v64[MP_MAX_DIMS];
    int32_t v32[MP_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) {
        if (at->dtype == MP_I32 && x->shape[d] > INT32_MAX)
            return mp_error_set(MP_ERR_VALUE, "Shape: dimension %d (%lld) does not fit in int32; use out_type=int64",
                                d, (long long)x->shape[d]);
        v64[d] = x->shape[d];
        v32[d] = (int32_t)x->shape[d];
    }
    mp_device dev = mp_tensor_device(x);
    MP_TRY(new_like_device((mp_dtype)at->dtype, 1, &n, dev, out));
    if (n == 0)
        return MP_OK;
    mp_status st = BE_CALL(be, copy_h2d, dev, mp_tensor_data(*out), at->dtype == MP_I32 ? (void *)v32 : (void *)v64,
                           mp_tensor_nbytes(*out));
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

/* One scalar bound of RANGE_T on the host, as a double. */
static mp_status range_bound(mp_tensor *t, const char *what, const mp_backend *be, double *v) {
    if (t->numel != 1 || t->ndim != 0)
        return mp_error_set(MP_ERR_VALUE, "Range: %s must be a scalar, got a tensor of rank %d", what, t->ndim);
    mp_device dev = mp_tensor_device(t);
    if (dev.type == MP_DEV_CPU) {
        *v = mp_tensor_get_f64(t, 0);
        return MP_OK;
    }
    mp_tensor *h = NULL;
    mp_device cpu = {MP_DEV_CPU, 0};
    (void)be;
    MP_TRY(mp_copy_to_device(t, cpu, &h));
    *v = mp_tensor_get_f64(h, 0);
    mp_tensor_decref(h);
    return MP_OK;
}

static mp_status run_range_t(mp_tensor *const *in, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    if (!mp_dtype_valid(at->dtype) || at->dtype == MP_BOOL)
        return mp_error_set(MP_ERR_DTYPE, "Range: unsupported dtype %s", mp_dtype_name((mp_dtype)at->dtype));
    static const char *const what[3] = {"start", "limit", "delta"};
    double v[3];
    for (int i = 0; i < 3; i++) {
        if (in[i]->dtype != (mp_dtype)at->dtype)
            return mp_error_set(MP_ERR_DTYPE, "Range: %s has dtype %s, expected %s", what[i],
                                mp_dtype_name(in[i]->dtype), mp_dtype_name((mp_dtype)at->dtype));
        MP_TRY(range_bound(in[i], what[i], be, &v[i]));
    }
    double s = v[0], l = v[1], d = v[2];
    if (!isfinite(s) || !isfinite(l) || !isfinite(d))
        return mp_error_set(MP_ERR_SHAPE, "range: start, limit and delta must be finite");
    if (d == 0)
        return mp_error_set(MP_ERR_SHAPE, "Requires delta != 0");
    if ((d > 0 && s > l) || (d < 0 && s < l))
        return mp_error_set(MP_ERR_SHAPE,
                            "Requires start <= limit when delta > 0: %g/%g (or >= when delta < 0)", s, l);
    double count = mp_dtype_is_integer((mp_dtype)at->dtype) ? ceil(fabs(l - s) / fabs(d)) : ceil(fabs((l - s) / d));
    if (!(count < 9.0e15))
        return mp_error_set(MP_ERR_VALUE, "range: too many elements");
    int64_t n = (int64_t)count;
    MP_TRY(new_like_device((mp_dtype)at->dtype, 1, &n, at->device, out));
    mp_status st = BE_CALL(be, iota, at->device, mp_tensor_data(*out), (mp_dtype)at->dtype, n, s, d);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

static mp_status run_index_t(mp_tensor *x, mp_tensor *i, const mp_backend *be, mp_tensor **out) {
    if (!mp_dtype_is_integer(i->dtype) || i->dtype == MP_BOOL)
        return mp_error_set(MP_ERR_TYPE, "StridedSlice: an index tensor must be int32 or int64, got %s",
                            mp_dtype_name(i->dtype));
    if (x->ndim < 1)
        return mp_error_set(MP_ERR_SHAPE, "Index out of range using input dim 0; input has only 0 dims");
    double v;
    MP_TRY(range_bound(i, "index", be, &v));
    int64_t n = x->shape[0], k = (int64_t)v;
    if (k < -n || k >= n)
        return mp_error_set(MP_ERR_SHAPE, "slice index %lld of dimension 0 out of bounds.", (long long)k);
    if (k < 0)
        k += n;
    size_t rowbytes = n ? mp_tensor_nbytes(x) / (size_t)n : 0;
    return mp_tensor_view(x, x->offset + (size_t)k * rowbytes, x->dtype, x->ndim - 1, x->shape + 1, out);
}

static mp_status run_one_hot(mp_tensor *x, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    if (!mp_dtype_is_integer(x->dtype))
        return mp_error_set(MP_ERR_DTYPE, "OneHot: indices must be an integer tensor, got %s", mp_dtype_name(x->dtype));
    if (at->i0 < 0)
        return mp_error_set(MP_ERR_VALUE, "OneHot: depth must be non-negative, got %lld", (long long)at->i0);
    if (x->ndim + 1 > MP_MAX_DIMS)
        return mp_error_set(MP_ERR_VALUE, "OneHot: result would exceed %d dimensions", MP_MAX_DIMS);
    if (!mp_dtype_valid(at->dtype))
        return mp_error_set(MP_ERR_VALUE, "OneHot: invalid dtype code %d", at->dtype);
    mp_tensor *idx = x;
    if (x->dtype != MP_I64) {
        mp_attrs ca = {.dtype = MP_I64};
        MP_TRY(run_cast(x, &ca, be, &idx));
    }
    int64_t oshape[MP_MAX_DIMS];
    memcpy(oshape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    oshape[x->ndim] = at->i0;
    mp_status st = new_like_device((mp_dtype)at->dtype, x->ndim + 1, oshape, mp_tensor_device(x), out);
    if (st == MP_OK) {
        st = BE_CALL(be, one_hot, mp_tensor_device(x), (mp_dtype)at->dtype, mp_tensor_data(idx), mp_tensor_data(*out),
                         x->numel, at->i0, at->f0, at->f1);
        if (st != MP_OK) {
            mp_tensor_decref(*out);
            *out = NULL;
        }
    }
    if (idx != x)
        mp_tensor_decref(idx);
    return st;
}

static mp_status run_random(mp_op op, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    if (!mp_dtype_valid(at->dtype))
        return mp_error_set(MP_ERR_VALUE, "%s: invalid dtype code %d", OPNAME(op), at->dtype);
    mp_dtype dt = (mp_dtype)at->dtype;
    /* TensorFlow's conversions (csrc/philox_tf.h): i2 == 1 stateless (a replay keeps the
     * stream), 2 a tf.random.Generator's draw (its counter's start in f0, f1; a replay
     * takes the next stream) */
    int tf = at->i2 == 1 || at->i2 == 2;
    if (op == MP_OP_RANDOM_UNIFORM) {
        if (!mp_dtype_is_floating(dt) && dt != MP_I32 && dt != MP_I64)
            return mp_error_set(MP_ERR_DTYPE, "RandomUniform: unsupported dtype %s", mp_dtype_name(dt));
        if (!mp_dtype_is_floating(dt) && !(at->f1 > at->f0) && !(tf && at->f0 == 0 && at->f1 == 0) &&
            at->i2 != 2)
            return mp_error_set(MP_ERR_VALUE, "RandomUniform: need minval < maxval, got minval=%g maxval=%g", at->f0,
                                at->f1);
    } else {
        MP_TRY(need_float(op, dt));
    }
    MP_TRY(new_like_device(dt, at->n_ints, at->ints, at->device, out));
    int dist = op == MP_OP_RANDOM_UNIFORM ? MP_RANDOM_UNIFORM
               : op == MP_OP_RANDOM_NORMAL ? MP_RANDOM_NORMAL
                                           : MP_RANDOM_TRUNCATED_NORMAL;
    if (tf)
        dist += at->i2 == 2 ? MP_RANDOM_TFG_UNIFORM : MP_RANDOM_TF_UNIFORM;
    mp_status st = BE_CALL(be, random, at->device, dist, dt, mp_tensor_data(*out), (*out)->numel, (uint64_t)at->i0,
                              (uint64_t)at->i1, at->f0, at->f1);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

static mp_status run_xent(mp_op op, mp_tensor *logits, mp_tensor *labels, const mp_backend *be, mp_tensor **out) {
    MP_TRY(need_float(op, logits->dtype));
    char s1[128], s2[128];
    if (logits->ndim < 1)
        return mp_error_set(MP_ERR_SHAPE, "%s: logits must have rank >= 1, got a scalar", OPNAME(op));
    int sparse = op == MP_OP_SPARSE_SOFTMAX_XENT;
    int ok = labels->ndim == logits->ndim - (sparse ? 1 : 0);
    for (int d = 0; ok && d < labels->ndim; d++)
        ok = labels->shape[d] == logits->shape[d];
    if (!ok && sparse && labels->ndim == logits->ndim && labels->ndim > 0 &&
        memcmp(labels->shape, logits->shape, sizeof(int64_t) * (size_t)labels->ndim) == 0)
        return mp_error_set(MP_ERR_SHAPE,
                            "%s: labels of shape %s have the logits' shape: they look one-hot, but a sparse "
                            "loss takes integer class ids of shape %s. Use categorical_crossentropy "
                            "(CategoricalCrossentropy) for one-hot labels, or pass the class ids "
                            "(np.argmax(labels, axis=-1))",
                            OPNAME(op), shape_str(labels->shape, labels->ndim, s1, sizeof s1),
                            shape_str(logits->shape, logits->ndim - 1, s2, sizeof s2));
    if (!ok)
        return mp_error_set(MP_ERR_SHAPE,
                            "%s: labels of shape %s do not match logits of shape %s (%s)", OPNAME(op),
                            shape_str(labels->shape, labels->ndim, s1, sizeof s1),
                            shape_str(logits->shape, logits->ndim, s2, sizeof s2),
                            sparse ? "sparse labels have the logits' shape without the last dimension"
                                   : "dense labels have the logits' shape");
    mp_tensor *lab = labels;
    if (sparse) {
        if (!mp_dtype_is_integer(labels->dtype))
            return mp_error_set(MP_ERR_DTYPE, "%s: labels must be integer class ids, got %s", OPNAME(op),
                                mp_dtype_name(labels->dtype));
        if (labels->dtype != MP_I64) {
            mp_attrs ca = {.dtype = MP_I64};
            MP_TRY(run_cast(labels, &ca, be, &lab));
        }
    } else {
        mp_tensor *pair[2] = {logits, labels};
        MP_TRY(same_dtype(op, pair, 2));
    }
    int64_t cols = logits->shape[logits->ndim - 1];
    int64_t rows = cols ? logits->numel / cols : prod(logits->shape, logits->ndim - 1);
    mp_status st = new_like_device(logits->dtype, logits->ndim - 1, logits->shape, mp_tensor_device(logits), out);
    if (st == MP_OK) {
        st = BE_CALL(be, softmax_xent, mp_tensor_device(logits), sparse, logits->dtype, mp_tensor_data(logits),
                                  mp_tensor_data(lab), mp_tensor_data(*out), rows, cols);
        if (st != MP_OK) {
            mp_tensor_decref(*out);
            *out = NULL;
        }
    }
    if (lab != labels)
        mp_tensor_decref(lab);
    return st;
}

/* ------------------------------------------------------------------ entry point */

static mp_status dispatch(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at, const mp_backend *be,
                          mp_tensor **out) {
    int fam = op_kernel[op].family, kind = op_kernel[op].kind;
    switch (fam) {
    case FAM_UNARY: return run_unary(op, (mp_unary_kind)kind, in[0], at, be, out);
    case FAM_BINARY: return run_binary(op, (mp_binary_kind)kind, 0, in[0], in[1], at, be, out);
    case FAM_COMPARE: return run_binary(op, (mp_binary_kind)kind, 1, in[0], in[1], at, be, out);
    case FAM_REDUCE: return run_reduce(op, (mp_reduce_kind)kind, in[0], at, be, out);
    default: break;
    }
    switch (op) {
    case MP_OP_CAST: return run_cast(in[0], at, be, out);
    case MP_OP_IDENTITY:
    case MP_OP_STOP_GRADIENT: return alias(in[0], in[0]->ndim, in[0]->shape, out);
    case MP_OP_WHERE: return run_where(in, be, out);
    case MP_OP_ARGMAX:
    case MP_OP_ARGMIN: return run_arg(op, in[0], at, be, out);
    case MP_OP_MATMUL: return run_matmul(in[0], in[1], at, be, out);
    case MP_OP_MATMUL_BIAS_ACT: return run_matmul_bias_act(in, at, be, out);
    case MP_OP_SOFTMAX:
    case MP_OP_LOG_SOFTMAX: return run_softmax(op, in[0], be, out);
    case MP_OP_RESHAPE: return run_reshape(in[0], at, out);
    case MP_OP_TRANSPOSE: return run_transpose(in[0], at, be, out);
    case MP_OP_CONCAT: return run_concat(n_in, in, at, be, out);
    case MP_OP_STACK: return run_stack(n_in, in, at, be, out);
    case MP_OP_STRIDED_SLICE: return run_strided_slice(in[0], at, be, out);
    case MP_OP_STRIDED_SLICE_GRAD: return run_strided_slice_grad(in[0], at, be, out);
    case MP_OP_BROADCAST_TO: return run_broadcast_to(in[0], at->n_ints, at->ints, be, out);
    case MP_OP_FILL: return run_fill(at, be, out);
    case MP_OP_RANGE: return run_range(at, be, out);
    case MP_OP_SHAPE: return run_shape(in[0], at, be, out);
    case MP_OP_RANGE_T: return run_range_t(in, at, be, out);
    case MP_OP_INDEX_T: return run_index_t(in[0], in[1], be, out);
    case MP_OP_GATHER:
    case MP_OP_GATHER_GRAD: return mp_run_gather(op, in, at, be, out);
    case MP_OP_CUMSUM: return mp_run_cumsum(in[0], at, be, out);
    case MP_OP_STRIDED_SLICE_T:
    case MP_OP_SLICE_T:
    case MP_OP_STRIDED_SLICE_T_GRAD: return mp_run_slice_t(op, n_in, in, at, out);
    case MP_OP_CUMPROD:
    case MP_OP_CUMULATIVE_LOGSUMEXP: return mp_run_scan(op, in[0], at, be, out);
    case MP_OP_SEGMENT_REDUCE: return mp_run_segment_reduce(in, at, be, out);
    case MP_OP_GATHER_ND:
    case MP_OP_TENSOR_SCATTER_UPDATE:
    case MP_OP_TENSOR_SCATTER_ADD:
    case MP_OP_TENSOR_SCATTER_SUB:
    case MP_OP_TENSOR_SCATTER_MIN:
    case MP_OP_TENSOR_SCATTER_MAX:
    case MP_OP_REVERSE:
    case MP_OP_ROLL: return mp_run_array(op, in, at, be, out);
    case MP_OP_TOP_K:
    case MP_OP_UNIQUE:
    case MP_OP_WHERE_INDICES: return mp_run_sort_op(op, in, at, be, out);
    case MP_OP_MATRIX_INVERSE:
    case MP_OP_MATRIX_DETERMINANT:
    case MP_OP_CHOLESKY:
    case MP_OP_MATRIX_TRIANGULAR_SOLVE:
    case MP_OP_MATRIX_SOLVE:
    case MP_OP_QR:
    case MP_OP_SELF_ADJOINT_EIG:
    case MP_OP_SVD:
    case MP_OP_LOG_MATRIX_DETERMINANT:
    case MP_OP_MATRIX_BAND_PART:
    case MP_OP_LU: return mp_run_linalg(op, n_in, in, at, be, out);
    case MP_OP_IMAGE_PROJECTIVE_TRANSFORM: return mp_run_image_transform(in, at, be, out);
    case MP_OP_ONE_HOT: return run_one_hot(in[0], at, be, out);
    case MP_OP_RANDOM_UNIFORM:
    case MP_OP_RANDOM_NORMAL:
    case MP_OP_TRUNCATED_NORMAL: return run_random(op, at, be, out);
    case MP_OP_SPARSE_SOFTMAX_XENT:
    case MP_OP_SOFTMAX_XENT: return run_xent(op, in[0], in[1], be, out);
    case MP_OP_CONV2D:
    case MP_OP_CONV2D_BIAS_ACT:
    case MP_OP_CONV2D_BACKPROP_INPUT:
    case MP_OP_CONV2D_BACKPROP_FILTER:
    case MP_OP_MAX_POOL:
    case MP_OP_MAX_POOL_GRAD:
    case MP_OP_AVG_POOL:
    case MP_OP_AVG_POOL_GRAD:
    case MP_OP_MAX_POOL_GRAD_GRAD: return mp_run_window(op, in, at, be, out);
    case MP_OP_ALL_REDUCE: return mp_run_all_reduce(in[0], at, out);
    case MP_OP_BATCH_NORM: return mp_run_batch_norm(in, at, be, out);
    case MP_OP_BATCH_MOMENTS:
    case MP_OP_BATCH_MOMENTS_GRAD:
    case MP_OP_BATCH_NORM_GRAD_SUMS: return mp_run_batch_stats(op, in, at, be, out);
    default: return mp_error_set(MP_ERR_INTERNAL, "op %s has no forward implementation", OPNAME(op));
    }
}

static int check_numerics;
static _Thread_local char scope_name[128];

int mp_check_numerics_set(int on) {
    return __atomic_exchange_n(&check_numerics, on != 0, __ATOMIC_RELAXED);
}

void mp_scope_set(const char *name) {
    snprintf(scope_name, sizeof scope_name, "%s", name ? name : "");
}

const char *mp_scope_get(void) { return scope_name; }

static mp_status numerics_check(mp_op op, mp_tensor *t) {
    int finite = 1;
    MP_TRY(mp_all_finite(1, &t, &finite));
    if (finite)
        return MP_OK;
    char s[128];
    return mp_error_set(MP_ERR_NONFINITE,
                        "check_numerics: Detected Infinity or NaN in the output of op \"%s\"%s%s%s (dtype %s, "
                        "shape %s). hint: in float16 look for overflow (> 65504) or log/division of zero; "
                        "a float32 softmax/loss and loss scaling usually fix it",
                        op_info[op].name, scope_name[0] ? " in layer \"" : "", scope_name,
                        scope_name[0] ? "\"" : "", mp_dtype_name(t->dtype), shape_str(t->shape, t->ndim, s, sizeof s));
}

/* Validate, allocate and dispatch: what eager execution and graph replay share. */
mp_status mp_op_exec(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at, mp_tensor **out) {
    static const mp_attrs no_attrs;
    *out = NULL;
    if ((int)op < 0 || op >= MP_OP_COUNT)
        return mp_error_set(MP_ERR_VALUE, "unknown op code %d", (int)op);
    const mp_op_info *info = &op_info[op];
    if (info->n_inputs >= 0 && n_in != info->n_inputs)
        return mp_error_set(MP_ERR_VALUE, "%s takes %d inputs, got %d", info->name, info->n_inputs, n_in);
    if (!at)
        at = &no_attrs;
    if (mp_str_involved(op, n_in, in, at)) /* host-only string elements: csrc/strings.c */
        return mp_str_op_exec(op, n_in, in, at, out);
    mp_device dev = n_in > 0 ? mp_tensor_device(in[0]) : at->device;
    for (int i = 1; i < n_in; i++) {
        if (!mp_device_eq(mp_tensor_device(in[i]), dev)) {
            char d0[32], d1[32];
            return mp_error_set(MP_ERR_DEVICE,
                                "%s: input #%d is on %s but input #0 is on %s. hint: copy it with "
                                "mixprec.identity under `with mixprec.device(...)`",
                                info->name, i, dev_str(mp_tensor_device(in[i]), d1, sizeof d1),
                                dev_str(dev, d0, sizeof d0));
        }
    }
    const mp_backend *be = mp_backend_get(dev.type);
    if (!be || dev.index < 0 || dev.index >= mp_device_count(dev.type)) {
        char d0[32];
        return mp_error_set(MP_ERR_DEVICE, "%s: device %s is not available", info->name, dev_str(dev, d0, sizeof d0));
    }
    MP_TRY(dispatch(op, n_in, in, at, be, out));
    if (!mp_ops_skip_kernels && __atomic_load_n(&check_numerics, __ATOMIC_RELAXED) && mp_dtype_is_floating((*out)->dtype)) {
        mp_status st = numerics_check(op, *out);
        if (st != MP_OK) {
            mp_tensor_decref(*out);
            *out = NULL;
            return st;
        }
    }
    return MP_OK;
}

static int dry_skippable(mp_op op, int n_in, mp_tensor *const *in) {
    if (op == MP_OP_RANDOM_UNIFORM || op == MP_OP_RANDOM_NORMAL || op == MP_OP_TRUNCATED_NORMAL)
        return 1;
    for (int i = 0; i < n_in; i++)
        if (mp_graph_is_dynamic(in[i]))
            return 1;
    return 0;
}

/* mp_op_exec, then the recording tapes and the recording graph see it. */
static mp_status exec_and_record(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at, mp_tensor **out) {
    if (mp_graph_dry() && dry_skippable(op, n_in, in)) {
        /* a dry trace needs shapes only: any host read of this value breaks the graph */
        mp_ops_skip_kernels = 1;
        mp_status st = mp_op_exec(op, n_in, in, at, out);
        mp_ops_skip_kernels = 0;
        MP_TRY(st);
    } else {
        MP_TRY(mp_op_exec(op, n_in, in, at, out));
    }
    mp_status st = MP_OK;
    if (mp_tape_recording())
        st = mp_tape_record(op, n_in, in, at, *out);
    if (st == MP_OK && mp_graph_recording())
        st = mp_graph_record_op(op, n_in, in, at, *out);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

/* Eager execution: under automatic mixed precision (amp.c) on the inputs autocast picks,
 * its casts executed and recorded like any op. */
mp_status mp_op_run(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at, mp_tensor **out) {
    *out = NULL;
    if (!mp_amp_autocast_on() && !mp_amp_recording())
        return exec_and_record(op, n_in, in, at, out);
    if ((int)op < 0 || op >= MP_OP_COUNT)
        return mp_error_set(MP_ERR_VALUE, "unknown op code %d", (int)op);
    const mp_op_info *info = &op_info[op];
    if (info->n_inputs >= 0 && n_in != info->n_inputs)
        return mp_error_set(MP_ERR_VALUE, "%s takes %d inputs, got %d", info->name, info->n_inputs, n_in);
    if (op == MP_OP_CAST && at && mp_amp_cast_passthrough(in[0], (mp_dtype)at->dtype)) {
        mp_tensor_incref(in[0]); /* a lowered float32 value cast to float32: itself */
        *out = in[0];
        return MP_OK;
    }
    mp_tensor *stack_in[8], **cast_in = stack_in;
    if (n_in > 8 && !(cast_in = malloc(sizeof(mp_tensor *) * (size_t)n_in)))
        return mp_error_set(MP_ERR_MEMORY, "%s: out of memory for %d inputs", info->name, n_in);
    int lower = 0, active = 0;
    mp_status st = mp_amp_prepare(op, n_in, in, cast_in, &lower, &active);
    if (st == MP_OK)
        st = exec_and_record(op, n_in, active ? cast_in : in, at, out);
    if (st == MP_OK)
        st = mp_amp_finish(op, n_in, active ? cast_in : in, lower, out);
    if (active)
        for (int i = 0; i < n_in; i++)
            mp_tensor_decref(cast_in[i]);
    if (cast_in != stack_in)
        free(cast_in);
    if (st != MP_OK && *out) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    if (st == MP_OK && mp_amp_recording())
        mp_amp_record_op(op, n_in, in, *out);
    return st;
}

/* ------------------------------------------------------------------ conveniences */

mp_status mp_cast(mp_tensor *x, mp_dtype dt, mp_tensor **out) {
    mp_attrs at = {.dtype = (int)dt};
    return mp_op_run(MP_OP_CAST, 1, &x, &at, out);
}

mp_status mp_binary(mp_op op, mp_tensor *a, mp_tensor *b, mp_tensor **out) {
    mp_tensor *in[2] = {a, b};
    return mp_op_run(op, 2, in, NULL, out);
}

mp_status mp_unary(mp_op op, mp_tensor *x, mp_tensor **out) { return mp_op_run(op, 1, &x, NULL, out); }

mp_status mp_reshape(mp_tensor *x, int ndim, const int64_t *shape, mp_tensor **out) {
    if (ndim < 0 || ndim > MP_MAX_DIMS)
        return mp_error_set(MP_ERR_VALUE, "reshape: rank %d is out of range", ndim);
    mp_attrs at = {.n_ints = ndim};
    if (ndim > 0) /* shape may be NULL for a scalar; memcpy(NULL) is undefined even for 0 bytes */
        memcpy(at.ints, shape, sizeof(int64_t) * (size_t)ndim);
    return mp_op_run(MP_OP_RESHAPE, 1, &x, &at, out);
}

mp_status mp_full(mp_dtype dt, int ndim, const int64_t *shape, double value, mp_device dev, mp_tensor **out) {
    if (ndim < 0 || ndim > MP_MAX_DIMS)
        return mp_error_set(MP_ERR_VALUE, "fill: rank %d is out of range", ndim);
    mp_attrs at = {.n_ints = ndim, .dtype = (int)dt, .f0 = value, .device = dev};
    if (ndim > 0) /* shape may be NULL for a scalar; memcpy(NULL) is undefined even for 0 bytes */
        memcpy(at.ints, shape, sizeof(int64_t) * (size_t)ndim);
    return mp_op_run(MP_OP_FILL, 0, NULL, &at, out);
}

mp_status mp_scalar(mp_dtype dt, double value, mp_device dev, mp_tensor **out) {
    return mp_full(dt, 0, NULL, value, dev, out);
}

mp_status mp_reduce_axes(mp_op op, mp_tensor *x, int naxes, const int64_t *axes, int keepdims, mp_tensor **out) {
    mp_attrs at = {.n_ints = naxes, .i0 = keepdims};
    if (naxes > 0)
        memcpy(at.ints, axes, sizeof(int64_t) * (size_t)naxes);
    return mp_op_run(op, 1, &x, &at, out);
}

mp_status mp_copy_to_device(mp_tensor *x, mp_device dev, mp_tensor **out) {
    mp_device src = mp_tensor_device(x);
    if (mp_device_eq(src, dev) || x->dtype == MP_STRING) { /* string tensors stay on the host */
        mp_tensor_incref(x);
        *out = x;
        return MP_OK;
    }
    const mp_backend *sbe = mp_backend_get(src.type), *dbe = mp_backend_get(dev.type);
    MP_TRY(mp_tensor_new(x->dtype, x->ndim, x->shape, dev, out)); /* checks that dev exists */
    size_t nb = mp_tensor_nbytes(x);
    mp_status st = MP_OK;
    if (nb == 0) {
        /* nothing to copy */
    } else if (src.type == MP_DEV_CPU) {
        st = BE_CALL(dbe, copy_h2d, dev, mp_tensor_data(*out), mp_tensor_data(x), nb);
    } else if (dev.type == MP_DEV_CPU) {
        st = sbe ? BE_CALL(sbe, copy_d2h, src, mp_tensor_data(*out), mp_tensor_data(x), nb)
                 : mp_error_set(MP_ERR_DEVICE, "the backend of the source tensor is gone");
    } else { /* between two devices: through the host */
        mp_tensor *host;
        st = mp_copy_to_device(x, (mp_device){MP_DEV_CPU, 0}, &host);
        if (st == MP_OK) {
            st = BE_CALL(dbe, copy_h2d, dev, mp_tensor_data(*out), mp_tensor_data(host), nb);
            mp_tensor_decref(host);
        }
    }
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
