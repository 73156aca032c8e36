/* ops_slice_t.c — tf.strided_slice and tf.slice whose begin/end/strides (or begin/size)
 * are tensors, read on the host at every run (STRIDED_SLICE_T, SLICE_T and their gradient
 * STRIDED_SLICE_T_GRAD): TensorFlow's sparse-to-dense slice spec, its clamping and its
 * errors. The elements are moved by the STRIDED_SLICE(_GRAD) ops this file plans; it must
 * not touch them itself. */
#include <stdio.h>
#include <string.h>

#include "ops_internal.h"

enum { SPEC_MAX = 64 };

/* The dense plan: per input dimension the first element, the count and the step; the
 * shrunk dimensions; the final shape (new axes included). */
typedef struct {
    int64_t begin[MP_MAX_DIMS], count[MP_MAX_DIMS], step[MP_MAX_DIMS];
    int64_t shrink;
    int on;
    int64_t oshape[MP_MAX_DIMS];
} slice_plan;

static void shape_txt(const mp_tensor *t, char *buf, size_t cap) {
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < t->ndim && used < cap; d++)
        used += (size_t)snprintf(buf + used, cap - used, d ? ",%lld" : "%lld", (long long)t->shape[d]);
    if (used < cap)
        snprintf(buf + used, cap - used, "]");
}

/* A dry trace skips kernels (ops_internal.h): a spec computed by a skipped op holds no
 * values. The op is then planned again with this set: begin/end/size 0, strides 1 (its
 * shape is a placeholder; a replay reads the real spec). */
static _Thread_local int dry_zero_spec;

/* A 1-D spec tensor's values on the host as int64 (dtype checked by the caller). */
static mp_status read_spec(mp_tensor *t, int64_t *v) {
    if (dry_zero_spec) {
        for (int64_t k = 0; k < t->numel; k++)
            v[k] = 0;
        return MP_OK;
    }
    mp_tensor *h = t;
    if (mp_tensor_device(t).type != MP_DEV_CPU) {
        mp_device cpu = {MP_DEV_CPU, 0};
        MP_TRY(mp_copy_to_device(t, cpu, &h));
    }
    const void *p = mp_tensor_data(h);
    for (int64_t k = 0; k < t->numel; k++)
        v[k] = t->dtype == MP_I64 ? ((const int64_t *)p)[k] : (int64_t)((const int32_t *)p)[k];
    if (h != t)
        mp_tensor_decref(h);
    return MP_OK;
}

/* TensorFlow's spelling of a dtype in its attr messages */
static const char *tf_type_name(mp_dtype dt) {
    switch (dt) {
    case MP_F32: return "float";
    case MP_F64: return "double";
    case MP_F16: return "half";
    default: return mp_dtype_name(dt);
    }
}

static mp_status check_index_dtypes(const char *op, mp_tensor *const *spec, int n) {
    for (int k = 0; k < n; k++)
        if (spec[k]->dtype != MP_I32 && spec[k]->dtype != MP_I64)
            return mp_error_set(MP_ERR_SHAPE, "Value for attr 'Index' of %s is not in the list of allowed values: %s",
                                tf_type_name(spec[k]->dtype), n == 3 ? "int16, int32, int64" : "int32, int64");
    for (int k = 1; k < n; k++)
        if (spec[k]->dtype != spec[0]->dtype)
            return mp_error_set(MP_ERR_SHAPE,
                                "cannot compute %s as input #%d(zero-based) was expected to be a %s tensor but is a %s "
                                "tensor",
                                op, k + 1, mp_dtype_name(spec[0]->dtype), mp_dtype_name(spec[k]->dtype));
    return MP_OK;
}

static mp_status push_dim(slice_plan *p, int64_t n) {
    if (p->on >= MP_MAX_DIMS)
        return mp_error_set(MP_ERR_VALUE, "StridedSlice: the result would have more than %d dimensions", MP_MAX_DIMS);
    p->oshape[p->on++] = n;
    return MP_OK;
}

/* TensorFlow's ValidateStridedSliceOp: spec = begin, end, strides; masks in attrs ints[0..4]. */
static mp_status plan_strided(const int64_t *shape, int nd, mp_tensor *const *spec, const mp_attrs *at,
                              slice_plan *p) {
    MP_TRY(check_index_dtypes("StridedSlice", spec, 3));
    if (spec[0]->ndim != 1 || spec[1]->ndim != 1 || spec[2]->ndim != 1 || spec[1]->numel != spec[0]->numel ||
        spec[2]->numel != spec[0]->numel) {
        char a[96], b[96], c[96];
        shape_txt(spec[0], a, sizeof a);
        shape_txt(spec[1], b, sizeof b);
        shape_txt(spec[2], c, sizeof c);
        return mp_error_set(MP_ERR_SHAPE,
                            "Expected begin, end, and strides to be 1D equal size tensors, but got shapes %s, %s, "
                            "and %s instead.",
                            a, b, c);
    }
    int n = (int)spec[0]->numel;
    if (n > SPEC_MAX - 1)
        return mp_error_set(MP_ERR_SHAPE, "StridedSlice: a slice spec of %d entries is more than %d", n, SPEC_MAX - 1);
    int64_t b[SPEC_MAX], e[SPEC_MAX], s[SPEC_MAX];
    MP_TRY(read_spec(spec[0], b));
    MP_TRY(read_spec(spec[1], e));
    MP_TRY(read_spec(spec[2], s));
    if (dry_zero_spec)
        for (int i = 0; i < n; i++)
            s[i] = 1;
    uint64_t bm = (uint64_t)at->ints[0], em = (uint64_t)at->ints[1], ell = (uint64_t)at->ints[2],
             nam = (uint64_t)at->ints[3], shm = (uint64_t)at->ints[4];
    if (ell & (ell - 1))
        return mp_error_set(MP_ERR_SHAPE, "Multiple ellipses in slice spec not allowed");
    /* the sparse spec: an implicit ellipsis at the end when there is none */
    int ellipsis_seen = 0, add_after_ellipsis = 0, sn = n;
    for (int i = 0; i < n; i++) {
        if (ellipsis_seen && ((nam >> i) & 1))
            add_after_ellipsis++;
        if ((ell >> i) & 1)
            ellipsis_seen = 1;
    }
    if (!ellipsis_seen) {
        ell |= (uint64_t)1 << n;
        b[n] = e[n] = 0;
        s[n] = 1;
        sn = n + 1;
    }
    /* dense: one entry per input dimension; gather[] says where each final dim comes from */
    int64_t db[MP_MAX_DIMS], de[MP_MAX_DIMS], ds[MP_MAX_DIMS];
    uint64_t dbm = 0, dem = 0, dshm = 0;
    int gather[SPEC_MAX + MP_MAX_DIMS], ng = 0; /* >= 0 a dense dim, -1 new axis, -2 shrunk */
    int full = 0;
    for (int i = 0; i < sn; i++) {
        if ((ell >> i) & 1) {
            int next = nd - (sn - i) + 1 + add_after_ellipsis;
            if (next > nd)
                next = nd;
            for (; full < next; full++) {
                db[full] = de[full] = 0;
                ds[full] = 1;
                dbm |= (uint64_t)1 << full;
                dem |= (uint64_t)1 << full;
                gather[ng++] = full;
            }
        } else if ((nam >> i) & 1) {
            gather[ng++] = -1;
        } else {
            if (full == nd)
                return mp_error_set(MP_ERR_SHAPE, "Index out of range using input dim %d; input has only %d dims",
                                    full, nd);
            db[full] = b[i];
            de[full] = e[i];
            ds[full] = s[i];
            if ((bm >> i) & 1)
                dbm |= (uint64_t)1 << full;
            if ((em >> i) & 1)
                dem |= (uint64_t)1 << full;
            if ((shm >> i) & 1) {
                dshm |= (uint64_t)1 << full;
                gather[ng++] = -2;
            } else {
                gather[ng++] = full;
            }
            full++;
        }
    }
    /* the spec may leave trailing dims unnamed only through the ellipsis, which covers them */
    p->shrink = 0;
    for (int d = 0; d < nd; d++) {
        int64_t dim = shape[d], st = ds[d], bi = db[d], ei = de[d];
        if (st == 0)
            return mp_error_set(MP_ERR_SHAPE, "strides[%d] must be non-zero", d);
        if ((dshm >> d) & 1) {
            if (st <= 0)
                return mp_error_set(MP_ERR_SHAPE, "only stride 1 allowed on non-range indexing.");
            int64_t fwd = bi < 0 ? dim + bi : bi;
            if (fwd < 0 || fwd >= dim)
                return mp_error_set(MP_ERR_INDEX, "slice index %lld of dimension %d out of bounds.", (long long)bi,
                                    d);
            p->begin[d] = fwd;
            p->count[d] = 1;
            p->step[d] = 1;
            p->shrink |= (int64_t)1 << d;
            continue;
        }
        int64_t lo = st > 0 ? 0 : -1, hi = st > 0 ? dim : dim - 1;
        int64_t c0, c1;
        if ((dbm >> d) & 1)
            c0 = st > 0 ? lo : hi;
        else {
            int64_t f = bi < 0 ? dim + bi : bi;
            c0 = f < lo ? lo : f > hi ? hi : f;
        }
        if ((dem >> d) & 1)
            c1 = st > 0 ? hi : lo;
        else {
            int64_t f = ei < 0 ? dim + ei : ei;
            c1 = f < lo ? lo : f > hi ? hi : f;
        }
        int64_t len = c1 - c0, cnt;
        if (len == 0 || ((len < 0) != (st < 0)))
            cnt = 0;
        else
            cnt = len / st + (len % st != 0);
        p->begin[d] = cnt > 0 ? c0 : 0;
        p->count[d] = cnt;
        p->step[d] = cnt > 1 ? st : 1;
    }
    p->on = 0;
    for (int k = 0; k < ng; k++) {
        if (gather[k] == -2)
            continue;
        MP_TRY(push_dim(p, gather[k] == -1 ? 1 : p->count[gather[k]]));
    }
    return MP_OK;
}

/* TensorFlow's Slice: spec = begin, size (size -1: to the end). */
static mp_status plan_slice(const int64_t *shape, int nd, mp_tensor *const *spec, slice_plan *p) {
    MP_TRY(check_index_dtypes("Slice", spec, 2));
    if (spec[0]->ndim != 1 || spec[1]->ndim != 1 || spec[0]->numel != nd || spec[1]->numel != nd) {
        char a[96], b[96];
        shape_txt(spec[0], a, sizeof a);
        shape_txt(spec[1], b, sizeof b);
        return mp_error_set(MP_ERR_SHAPE,
                            "Expected begin and size arguments to be 1-D tensors of size %d, but got shapes %s and %s "
                            "instead.",
                            nd, a, b);
    }
    int64_t b[MP_MAX_DIMS], sz[MP_MAX_DIMS];
    MP_TRY(read_spec(spec[0], b));
    MP_TRY(read_spec(spec[1], sz));
    p->shrink = 0;
    p->on = nd;
    for (int d = 0; d < nd; d++) {
        int64_t dim = shape[d], bi = b[d], si = sz[d] == -1 ? dim - bi : sz[d];
        if (dim == 0) {
            if (bi != 0 || si != 0)
                return mp_error_set(MP_ERR_SHAPE,
                                    "Expected begin[%d] == 0 (got %lld) and size[%d] == 0 (got %lld) when "
                                    "input.dim_size(%d) == 0",
                                    d, (long long)bi, d, (long long)si, d);
        } else {
            if (bi < 0 || bi > dim)
                return mp_error_set(MP_ERR_SHAPE, "Expected begin[%d] in [0, %lld], but got %lld", d, (long long)dim,
                                    (long long)bi);
            if (si < 0 || bi + si > dim)
                return mp_error_set(MP_ERR_SHAPE, "Expected size[%d] in [0, %lld], but got %lld", d,
                                    (long long)(dim - bi), (long long)sz[d]);
        }
        p->begin[d] = si > 0 ? bi : 0;
        p->count[d] = si;
        p->step[d] = 1;
        p->oshape[d] = si;
    }
    return MP_OK;
}

static void plan_attrs(const slice_plan *p, int nd, mp_attrs *a) {
    memset(a, 0, sizeof *a);
    a->n_ints = nd;
    memcpy(a->ints, p->begin, sizeof(int64_t) * (size_t)nd);
    memcpy(a->ints2, p->count, sizeof(int64_t) * (size_t)nd);
    memcpy(a->ints3, p->step, sizeof(int64_t) * (size_t)nd);
    a->i0 = p->shrink;
}

static mp_status plan_any(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at, slice_plan *p) {
    if (op == MP_OP_STRIDED_SLICE_T_GRAD) {
        int slice = at->ints[5] == 1;
        if (n_in != (slice ? 4 : 5))
            return mp_error_set(MP_ERR_VALUE, "StridedSliceGrad takes %d inputs, got %d", slice ? 4 : 5, n_in);
        return slice ? plan_slice(in[1]->shape, in[1]->ndim, in + 2, p)
                     : plan_strided(in[1]->shape, in[1]->ndim, in + 2, at, p);
    }
    return op == MP_OP_SLICE_T ? plan_slice(in[0]->shape, in[0]->ndim, in + 1, p)
                               : plan_strided(in[0]->shape, in[0]->ndim, in + 1, at, p);
}

mp_status mp_run_slice_t(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at, mp_tensor **out) {
    *out = NULL;
    slice_plan p;
    mp_status pst = plan_any(op, n_in, in, at, &p);
    if (pst != MP_OK && mp_ops_skip_kernels) { /* a dry trace: the spec's values are unknown */
        mp_error_clear();
        dry_zero_spec = 1;
        pst = plan_any(op, n_in, in, at, &p);
        dry_zero_spec = 0;
    }
    MP_TRY(pst);
    if (op == MP_OP_STRIDED_SLICE_T_GRAD) {
        /* inputs (dy, x, begin, end, strides) or, for Slice (ints[5] = 1), (dy, x, begin, size) */
        mp_tensor *x = in[1];
        mp_attrs a;
        plan_attrs(&p, x->ndim, &a);
        memcpy(a.ints4, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        return mp_op_exec(MP_OP_STRIDED_SLICE_GRAD, 1, in, &a, out);
    }
    mp_tensor *x = in[0];
    mp_attrs a;
    plan_attrs(&p, x->ndim, &a);
    mp_tensor *r;
    MP_TRY(mp_op_exec(MP_OP_STRIDED_SLICE, 1, &x, &a, &r));
    int same = r->ndim == p.on;
    for (int d = 0; same && d < p.on; d++)
        same = r->shape[d] == p.oshape[d];
    if (same) {
        *out = r;
        return MP_OK;
    }
    mp_status st = mp_tensor_view(r, r->offset, r->dtype, p.on, p.oshape, out); /* new axes: r is contiguous */
    mp_tensor_decref(r);
    return st;
}
