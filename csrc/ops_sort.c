/* ops_sort.c — the op layer of the value-ordering ops: TopKV2's indices (tf.math.top_k,
 * tf.sort, tf.argsort: the sort slot), Unique and Where (tf.unique, tf.where(condition)),
 * whose output sizes depend on the values: those two read their input on the host at every
 * run (a host synchronisation on a GPU) and compute there. Validation in TensorFlow's words. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops_internal.h"

static mp_status run_top_k(mp_tensor *x, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    if (x->dtype == MP_BOOL)
        return mp_error_set(MP_ERR_SHAPE,
                            "Value for attr 'T' of bool is not in the list of allowed values: float, double, int32, "
                            "uint8, int16, int8, int64, bfloat16, uint16, half, uint32, uint64");
    if (at->dtype != MP_I32 && at->dtype != MP_I64)
        return mp_error_set(MP_ERR_DTYPE, "TopKV2: index_type must be int32 or int64, got %s",
                            mp_dtype_name((mp_dtype)at->dtype));
    if (x->ndim < 1)
        return mp_error_set(MP_ERR_SHAPE, "input must be >= 1-D, got shape []");
    int64_t k = at->i0, n = x->shape[x->ndim - 1];
    if (k < 0)
        return mp_error_set(MP_ERR_SHAPE, "Need k >= 0, got %lld", (long long)k);
    if (n < k)
        return mp_error_set(MP_ERR_SHAPE, "input must have at least k columns. Had %lld, needed %lld", (long long)n,
                            (long long)k);
    int64_t shape[MP_MAX_DIMS];
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    shape[x->ndim - 1] = k;
    mp_device dev = mp_tensor_device(x);
    MP_TRY(mp_tensor_new((mp_dtype)at->dtype, x->ndim, shape, dev, out));
    int64_t rows = n ? x->numel / n : 0;
    if (!rows || !k)
        return MP_OK;
    /* the rows in chunks whose scratch (4 n int64 a row) stays within 64 MiB */
    int64_t chunk = ((int64_t)64 << 20) / (32 * n);
    if (chunk < 1)
        chunk = 1;
    if (chunk > rows)
        chunk = rows;
    int64_t wshape = 4 * chunk * n;
    size_t xrow = (size_t)n * mp_dtype_size(x->dtype), irow = (size_t)k * mp_dtype_size((mp_dtype)at->dtype);
    mp_tensor *work = NULL;
    mp_status st = mp_tensor_new(MP_I64, 1, &wshape, dev, &work);
    for (int64_t r0 = 0; st == MP_OK && r0 < rows; r0 += chunk)
        st = BE_CALL(be, sort, dev, x->dtype, at->i1 != 0, (const char *)mp_tensor_data(x) + (size_t)r0 * xrow,
                     rows - r0 < chunk ? rows - r0 : chunk, n, k, (int64_t *)mp_tensor_data(work),
                     (mp_dtype)at->dtype, (char *)mp_tensor_data(*out) + (size_t)r0 * irow);
    if (work)
        mp_tensor_decref(work);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

static mp_status host_copy(mp_tensor *x, mp_tensor **h) {
    if (mp_tensor_device(x).type == MP_DEV_CPU) {
        mp_tensor_incref(x);
        *h = x;
        return MP_OK;
    }
    mp_device cpu = {MP_DEV_CPU, 0};
    return mp_copy_to_device(x, cpu, h);
}

/* A key that is equal for equal values: the value as a double (-0 as +0) or as an int64. */
static uint64_t key_of(mp_dtype dt, const void *p, int64_t i, int *nan) {
    *nan = 0;
    double d;
    switch (dt) {
    case MP_F64: d = ((const double *)p)[i]; break;
    case MP_F32: d = ((const float *)p)[i]; break;
    case MP_F16:
    case MP_BF16: {
        float f;
        mp_load_f32(dt, (const char *)p + (size_t)i * 2, &f, 1);
        d = f;
        break;
    }
    case MP_I32: return (uint64_t)(int64_t)((const int32_t *)p)[i];
    case MP_I64: return (uint64_t)((const int64_t *)p)[i];
    case MP_I8: return (uint64_t)(int64_t)((const int8_t *)p)[i];
    default: return (uint64_t)((const uint8_t *)p)[i]; /* uint8, bool */
    }
    if (isnan(d)) {
        *nan = 1;
        return 0;
    }
    if (d == 0)
        d = 0.0;
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static uint64_t mix(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    return k ^ (k >> 33);
}

static void store_int(mp_dtype dt, void *p, int64_t i, int64_t v) {
    if (dt == MP_I32)
        ((int32_t *)p)[i] = (int32_t)v;
    else
        ((int64_t *)p)[i] = v;
}

static mp_status run_unique(mp_tensor *x, const mp_attrs *at, mp_tensor **out) {
    int mode = (int)at->i0;
    mp_dtype idt = mode == 1 ? MP_I64 : (mp_dtype)at->dtype;
    if (idt != MP_I32 && idt != MP_I64)
        return mp_error_set(MP_ERR_DTYPE, "Unique: out_idx must be int32 or int64, got %s", mp_dtype_name(idt));
    if (x->ndim != 1)
        return mp_error_set(MP_ERR_SHAPE, "unique expects a 1D vector.");
    mp_device dev = mp_tensor_device(x), cpu = {MP_DEV_CPU, 0};
    int64_t n = x->shape[0];
    if (mp_ops_skip_kernels) /* a dry trace: the size is not known; n is its bound */
        return mp_tensor_new(idt, 1, &n, dev, out);
    mp_tensor *h = NULL;
    MP_TRY(host_copy(x, &h));
    int64_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    int64_t *slot = malloc(sizeof(int64_t) * (size_t)cap);          /* unique id, -1 empty */
    uint64_t *keys = malloc(sizeof(uint64_t) * (size_t)(n ? n : 1)); /* per unique id */
    int64_t *first = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    int64_t *count = calloc((size_t)(n ? n : 1), sizeof(int64_t));
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    mp_status st = MP_OK;
    if (!slot || !keys || !first || !count || !idx)
        st = mp_error_set(MP_ERR_MEMORY, "Unique: out of memory for %lld values", (long long)n);
    int64_t m = 0;
    if (st == MP_OK) {
        memset(slot, 0xff, sizeof(int64_t) * (size_t)cap);
        const void *p = mp_tensor_data(h);
        for (int64_t i = 0; i < n; i++) {
            int nan;
            uint64_t k = key_of(x->dtype, p, i, &nan);
            int64_t id = -1;
            if (!nan) {
                uint64_t s = mix(k) & (uint64_t)(cap - 1);
                while (slot[s] >= 0 && keys[slot[s]] != k)
                    s = (s + 1) & (uint64_t)(cap - 1);
                if (slot[s] >= 0)
                    id = slot[s];
                else
                    slot[s] = m;
            }
            if (id < 0) {
                id = m++;
                keys[id] = k;
                first[id] = i;
            }
            count[id]++;
            idx[i] = id;
        }
    }
    mp_tensor *r = NULL;
    if (st == MP_OK) {
        int64_t len = mode == 0 ? n : m;
        const int64_t *src = mode == 0 ? idx : mode == 1 ? first : count;
        st = mp_tensor_new(idt, 1, &len, cpu, &r);
        for (int64_t i = 0; st == MP_OK && i < len; i++)
            store_int(idt, mp_tensor_data(r), i, src[i]);
    }
    free(slot);
    free(keys);
    free(first);
    free(count);
    free(idx);
    mp_tensor_decref(h);
    if (st != MP_OK) {
        if (r)
            mp_tensor_decref(r);
        return st;
    }
    if (dev.type == MP_DEV_CPU) {
        *out = r;
        return MP_OK;
    }
    st = mp_copy_to_device(r, dev, out);
    mp_tensor_decref(r);
    return st;
}

static int nonzero(mp_dtype dt, const void *p, int64_t i) {
    switch (dt) {
    case MP_F64: return ((const double *)p)[i] != 0;
    case MP_F32: return ((const float *)p)[i] != 0;
    case MP_F16:
    case MP_BF16: return (((const uint16_t *)p)[i] & 0x7fff) != 0;
    case MP_I32: return ((const int32_t *)p)[i] != 0;
    case MP_I64: return ((const int64_t *)p)[i] != 0;
    default: return ((const uint8_t *)p)[i] != 0; /* int8, uint8, bool */
    }
}

static mp_status run_where_indices(mp_tensor *x, mp_tensor **out) {
    mp_device dev = mp_tensor_device(x), cpu = {MP_DEV_CPU, 0};
    int64_t shape[2] = {0, x->ndim};
    if (mp_ops_skip_kernels) /* a dry trace: the count is not known */
        return mp_tensor_new(MP_I64, 2, shape, dev, out);
    mp_tensor *h = NULL, *r = NULL;
    MP_TRY(host_copy(x, &h));
    const void *p = mp_tensor_data(h);
    for (int64_t i = 0; i < x->numel; i++)
        shape[0] += nonzero(x->dtype, p, i);
    mp_status st = mp_tensor_new(MP_I64, 2, shape, cpu, &r);
    if (st == MP_OK) {
        int64_t *o = (int64_t *)mp_tensor_data(r), w = 0;
        for (int64_t i = 0; i < x->numel; i++) {
            if (!nonzero(x->dtype, p, i))
                continue;
            int64_t rest = i;
            for (int d = x->ndim - 1; d >= 0; d--) {
                o[w * x->ndim + d] = rest % x->shape[d];
                rest /= x->shape[d];
            }
            w++;
        }
    }
    mp_tensor_decref(h);
    if (st != MP_OK)
        return st;
    if (dev.type == MP_DEV_CPU) {
        *out = r;
        return MP_OK;
    }
    st = mp_copy_to_device(r, dev, out);
    mp_tensor_decref(r);
    return st;
}

mp_status mp_run_sort_op(mp_op op, mp_tensor *const *in, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    *out = NULL;
    switch (op) {
    case MP_OP_TOP_K: return run_top_k(in[0], at, be, out);
    case MP_OP_UNIQUE: return run_unique(in[0], at, out);
    case MP_OP_WHERE_INDICES: return run_where_indices(in[0], out);
    default: return mp_error_set(MP_ERR_INTERNAL, "mp_run_sort_op: not a sort op");
    }
}
