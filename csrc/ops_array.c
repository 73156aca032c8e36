/* ops_array.c — the op layer of tf.gather_nd, the tf.tensor_scatter_nd_* family, tf.reverse
 * and tf.roll. Owns the validation with TensorFlow's messages, the output shapes and the row
 * indices each op reads or writes (computed on the host from the indices, which are read at
 * every run: a host synchronisation on a GPU), then calls the gather / scatter_nd slots.
 * It must not touch tensor elements itself. */
#include <stdio.h>
#include <string.h>

#include "ops_internal.h"

static int64_t prod(const int64_t *s, int n) {
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        p *= s[i];
    return p;
}

static const char *shape_s(const int64_t *s, int n, char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = 0;
    for (int d = 0; d < n && used < cap; d++)
        used += (size_t)snprintf(buf + used, cap - used, d ? ",%lld" : "%lld", (long long)s[d]);
    return buf;
}

mp_status mp_array_host_i64(mp_tensor *t, mp_tensor **h) {
    *h = NULL;
    mp_tensor *c = t;
    if (t->dtype != MP_I64)
        MP_TRY(mp_op_exec(MP_OP_CAST, 1, &t, &(mp_attrs){.dtype = MP_I64}, &c));
    else
        mp_tensor_incref(c);
    if (mp_tensor_device(c).type == MP_DEV_CPU) {
        *h = c;
        return MP_OK;
    }
    mp_device cpu = {MP_DEV_CPU, 0};
    mp_status st = mp_copy_to_device(c, cpu, h);
    mp_tensor_decref(c);
    return st;
}

mp_status mp_array_upload_i64(const int64_t *v, int64_t n, mp_device dev, mp_tensor **out) {
    mp_device cpu = {MP_DEV_CPU, 0};
    mp_tensor *h = NULL;
    *out = NULL;
    MP_TRY(mp_tensor_new(MP_I64, 1, &n, cpu, &h));
    if (n)
        memcpy(mp_tensor_data(h), v, (size_t)n * sizeof(int64_t));
    if (dev.type == MP_DEV_CPU) {
        *out = h;
        return MP_OK;
    }
    mp_status st = mp_copy_to_device(h, dev, out);
    mp_tensor_decref(h);
    return st;
}

static mp_status check_index_dtype(const char *opname, mp_tensor *ind) {
    if (ind->dtype != MP_I32 && ind->dtype != MP_I64)
        return mp_error_set(MP_ERR_SHAPE,
                            "Value for attr 'Tindices' of %s is not in the list of allowed values: int16, int32, "
                            "int64 (%s)", mp_dtype_name(ind->dtype), opname);
    return MP_OK;
}

/* The flat row of params (shape[:K]) each index vector of `ind` (N, K) addresses, checked
 * in TensorFlow's words. rows: N int64 on dev (NULL under a dry trace). */
static mp_status nd_rows(const char *opname, const char *what, mp_tensor *ind, const int64_t *shape, int rank,
                         int K, mp_device dev, mp_tensor **rows) {
    *rows = NULL;
    int64_t N = ind->ndim ? prod(ind->shape, ind->ndim - 1) : 1;
    if (mp_ops_skip_kernels)
        return MP_OK;
    mp_tensor *h = NULL;
    MP_TRY(mp_array_host_i64(ind, &h));
    const int64_t *v = (const int64_t *)mp_tensor_data(h);
    int64_t *r = malloc(sizeof(int64_t) * (size_t)(N ? N : 1));
    mp_status st = r ? MP_OK : mp_error_set(MP_ERR_MEMORY, "%s: out of memory for %lld indices", opname, (long long)N);
    for (int64_t j = 0; st == MP_OK && j < N; j++) {
        int64_t flat = 0;
        for (int k = 0; k < K; k++) {
            int64_t i = v[j * K + k];
            if (i < 0 || i >= shape[k]) {
                char idx[40 * MP_MAX_DIMS], shp[24 * MP_MAX_DIMS];
                size_t used = 0;
                for (int q = 0; q < K && used < sizeof idx; q++)
                    used += (size_t)snprintf(idx + used, sizeof idx - used, q ? ", %lld" : "%lld",
                                             (long long)v[j * K + q]);
                st = mp_error_set(MP_ERR_SHAPE, "indices[%lld] = [%s] does not index into %s [%s]%s", (long long)j,
                                  idx, what, shape_s(shape, rank, shp, sizeof shp),
                                  strcmp(opname, "GatherNd") ? "" : ", node name: GatherNd");
                break;
            }
            flat = flat * shape[k] + i;
        }
        if (st == MP_OK)
            r[j] = flat;
    }
    mp_tensor_decref(h);
    if (st == MP_OK)
        st = mp_array_upload_i64(r, N, dev, rows);
    free(r);
    return st;
}

static mp_status run_gather_nd(mp_tensor *x, mp_tensor *ind, const mp_backend *be, mp_tensor **out) {
    MP_TRY(check_index_dtype("GatherNd", ind));
    if (ind->ndim < 1)
        return mp_error_set(MP_ERR_SHAPE, "indices must be at least a vector, got shape []");
    int K = (int)ind->shape[ind->ndim - 1];
    if (K > x->ndim)
        return mp_error_set(MP_ERR_SHAPE, "index innermost dimension length must be <= params rank; saw: %d vs. %d",
                            K, x->ndim);
    int nd = ind->ndim - 1 + x->ndim - K;
    if (nd > MP_MAX_DIMS)
        return mp_error_set(MP_ERR_SHAPE, "GatherNd: the result would have more than %d dimensions", MP_MAX_DIMS);
    int64_t shape[MP_MAX_DIMS];
    for (int d = 0; d < ind->ndim - 1; d++)
        shape[d] = ind->shape[d];
    for (int d = K; d < x->ndim; d++)
        shape[ind->ndim - 1 + d - K] = x->shape[d];
    mp_device dev = mp_tensor_device(x);
    int64_t N = prod(ind->shape, ind->ndim - 1), nrows = prod(x->shape, K), inner = prod(x->shape + K, x->ndim - K);
    mp_tensor *rows = NULL;
    MP_TRY(nd_rows("GatherNd", "param shape", ind, x->shape, x->ndim, K, dev, &rows));
    mp_status st = mp_tensor_new(x->dtype, nd, shape, dev, out);
    if (st == MP_OK && N && inner)
        st = BE_CALL(be, gather, dev, x->dtype, rows ? mp_tensor_data(rows) : NULL, mp_tensor_data(x),
                     mp_tensor_data(*out), 1, nrows, N, inner);
    if (rows)
        mp_tensor_decref(rows);
    if (st != MP_OK && *out) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

static mp_status run_tensor_scatter(mp_op op, mp_tensor *const *in, const mp_backend *be, mp_tensor **out) {
    mp_tensor *x = in[0], *ind = in[1], *upd = in[2];
    const char *name = mp_op_get_info(op)->name;
    int mode = (int)(op - MP_OP_TENSOR_SCATTER_UPDATE);
    MP_TRY(check_index_dtype(name, ind));
    if (upd->dtype != x->dtype)
        return mp_error_set(MP_ERR_DTYPE,
                            "cannot compute %s as input #2(zero-based) was expected to be a %s tensor but is a %s "
                            "tensor", name, mp_dtype_name(x->dtype), mp_dtype_name(upd->dtype));
    if (mode && x->dtype == MP_BOOL)
        return mp_error_set(MP_ERR_DTYPE, "%s: no kernel for dtype bool (only TensorScatterUpdate takes bool)", name);
    if (ind->ndim < 1)
        return mp_error_set(MP_ERR_SHAPE, "Indices shape must have rank at least one. Found:[]");
    if (x->ndim < 1)
        return mp_error_set(MP_ERR_SHAPE, "Output must be at least 1-D, got shape: []");
    int K = (int)ind->shape[ind->ndim - 1];
    char s1[24 * MP_MAX_DIMS], s2[24 * MP_MAX_DIMS];
    if (K > x->ndim)
        return mp_error_set(MP_ERR_SHAPE, "Index innermost dimension length must be <= output rank; saw: %d vs. %d", K,
                            x->ndim);
    int outer_ok = upd->ndim >= ind->ndim - 1;
    for (int d = 0; outer_ok && d < ind->ndim - 1; d++)
        outer_ok = upd->shape[d] == ind->shape[d];
    if (!outer_ok)
        return mp_error_set(MP_ERR_SHAPE,
                            "Outer dimensions of indices and update must match. Indices shape: [%s], updates "
                            "shape:[%s]", shape_s(ind->shape, ind->ndim, s1, sizeof s1),
                            shape_s(upd->shape, upd->ndim, s2, sizeof s2));
    int inner_n = x->ndim - K, inner_ok = upd->ndim - (ind->ndim - 1) == inner_n;
    for (int d = 0; inner_ok && d < inner_n; d++)
        inner_ok = upd->shape[ind->ndim - 1 + d] == x->shape[K + d];
    if (!inner_ok)
        return mp_error_set(MP_ERR_SHAPE,
                            "The inner %d dimensions of output.shape=[%s] must match the inner %d dimensions of "
                            "updates.shape=[%s]", inner_n, shape_s(x->shape, x->ndim, s1, sizeof s1), inner_n,
                            shape_s(upd->shape, upd->ndim, s2, sizeof s2));
    mp_device dev = mp_tensor_device(x);
    int64_t N = prod(ind->shape, ind->ndim - 1), inner = prod(x->shape + K, inner_n);
    mp_tensor *rows = NULL;
    MP_TRY(nd_rows(name, "shape", ind, x->shape, x->ndim, K, dev, &rows));
    mp_status st = mp_tensor_new(x->dtype, x->ndim, x->shape, dev, out);
    if (st == MP_OK && x->numel)
        st = BE_CALL(be, copy_d2d, dev, mp_tensor_data(*out), mp_tensor_data(x), mp_tensor_nbytes(x));
    if (st == MP_OK && N && inner)
        st = BE_CALL(be, scatter_nd, dev, mode, x->dtype, rows ? mp_tensor_data(rows) : NULL, mp_tensor_data(upd),
                     mp_tensor_data(*out), N, inner);
    if (rows)
        mp_tensor_decref(rows);
    if (st != MP_OK && *out) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

/* reverse / roll: one gather of the permuted positions per dimension that moves */
static mp_status run_permute(mp_op op, mp_tensor *x, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    *out = NULL;
    const char *name = mp_op_get_info(op)->name;
    if (at->n_ints != x->ndim)
        return mp_error_set(MP_ERR_SHAPE, "%s: expected %d per-dimension attrs, got %d", name, x->ndim, at->n_ints);
    mp_device dev = mp_tensor_device(x);
    mp_tensor *cur = x;
    mp_tensor_incref(cur);
    mp_status st = MP_OK;
    int moved = 0;
    for (int d = 0; d < x->ndim && st == MP_OK; d++) {
        int64_t n = x->shape[d], s = at->ints[d];
        if (n <= 1 || x->numel == 0)
            continue;
        if (op == MP_OP_ROLL) {
            s %= n;
            if (s < 0)
                s += n;
            if (s == 0)
                continue;
        } else if (!s) {
            continue;
        }
        int64_t *idx = malloc(sizeof(int64_t) * (size_t)n);
        if (!idx) {
            st = mp_error_set(MP_ERR_MEMORY, "%s: out of memory", name);
            break;
        }
        for (int64_t j = 0; j < n; j++)
            idx[j] = op == MP_OP_REVERSE ? n - 1 - j : (j - s + n) % n;
        mp_tensor *didx = NULL, *next = NULL;
        st = mp_array_upload_i64(idx, n, dev, &didx);
        free(idx);
        if (st == MP_OK)
            st = mp_tensor_new(x->dtype, x->ndim, x->shape, dev, &next);
        if (st == MP_OK)
            st = BE_CALL(be, gather, dev, x->dtype, mp_tensor_data(didx), mp_tensor_data(cur), mp_tensor_data(next),
                         prod(x->shape, d), n, n, prod(x->shape + d + 1, x->ndim - d - 1));
        if (didx)
            mp_tensor_decref(didx);
        if (st == MP_OK) {
            mp_tensor_decref(cur);
            cur = next;
            moved = 1;
        } else if (next) {
            mp_tensor_decref(next);
        }
    }
    if (st == MP_OK && !moved) { /* a new tensor all the same (never an alias of the input) */
        mp_tensor *copy = NULL;
        st = mp_tensor_new(x->dtype, x->ndim, x->shape, dev, &copy);
        if (st == MP_OK && x->numel)
            st = BE_CALL(be, copy_d2d, dev, mp_tensor_data(copy), mp_tensor_data(x), mp_tensor_nbytes(x));
        mp_tensor_decref(cur);
        cur = copy;
        if (st != MP_OK && copy) {
            mp_tensor_decref(copy);
            cur = NULL;
        }
    }
    if (st != MP_OK) {
        if (cur)
            mp_tensor_decref(cur);
        return st;
    }
    *out = cur;
    return MP_OK;
}

mp_status mp_run_array(mp_op op, mp_tensor *const *in, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    *out = NULL;
    switch (op) {
    case MP_OP_GATHER_ND: return run_gather_nd(in[0], in[1], be, out);
    case MP_OP_TENSOR_SCATTER_UPDATE:
    case MP_OP_TENSOR_SCATTER_ADD:
    case MP_OP_TENSOR_SCATTER_SUB:
    case MP_OP_TENSOR_SCATTER_MIN:
    case MP_OP_TENSOR_SCATTER_MAX: return run_tensor_scatter(op, in, be, out);
    case MP_OP_REVERSE:
    case MP_OP_ROLL: return run_permute(op, in[0], at, be, out);
    default: return mp_error_set(MP_ERR_INTERNAL, "mp_run_array: not an array op");
    }
}
