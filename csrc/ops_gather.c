/* ops_gather.c — the op layer of tf.gather (GATHER) and its dense gradient (GATHER_GRAD).
 * Owns the validation with TensorFlow's messages (the out-of-range index by its position),
 * the output shapes and the calls into the gather / scatter_add slots. The indices are read
 * on the host to be checked (a host synchronisation on a GPU). It must not touch elements. */
#include <stdio.h>
#include <string.h>

#include "ops_internal.h"

static int64_t prod(const int64_t *s, int n) {
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        p *= s[i];
    return p;
}

/* idx (int64, on x's device) and the check of every value against [0, n) in TensorFlow's words. */
static mp_status indices_i64(const char *opname, mp_tensor *ind, int64_t n, mp_tensor **idx) {
    if (!mp_dtype_is_integer(ind->dtype) || ind->dtype == MP_BOOL || ind->dtype == MP_U8)
        return mp_error_set(MP_ERR_SHAPE,
                            "Value for attr 'Tindices' of %s is not in the list of allowed values: int16, int32, "
                            "int64 (%s)", mp_dtype_name(ind->dtype), opname);
    *idx = NULL;
    if (ind->dtype == MP_I64)
        *idx = (mp_tensor_incref(ind), ind);
    else
        MP_TRY(mp_op_exec(MP_OP_CAST, 1, &ind, &(mp_attrs){.dtype = MP_I64}, idx));
    if (mp_ops_skip_kernels || ind->numel == 0)
        return MP_OK;
    mp_tensor *h = *idx;
    mp_device cpu = {MP_DEV_CPU, 0};
    if (mp_tensor_device(h).type != MP_DEV_CPU) {
        mp_status st = mp_copy_to_device(*idx, cpu, &h);
        if (st != MP_OK) {
            mp_tensor_decref(*idx);
            *idx = NULL;
            return st;
        }
    }
    const int64_t *v = (const int64_t *)mp_tensor_data(h);
    mp_status st = MP_OK;
    for (int64_t j = 0; j < ind->numel; j++)
        if (v[j] < 0 || v[j] >= n) {
            char pos[32 * MP_MAX_DIMS];
            size_t used = 0;
            int64_t rest = j;
            int64_t coord[MP_MAX_DIMS];
            for (int d = ind->ndim - 1; d >= 0; d--) {
                coord[d] = ind->shape[d] ? rest % ind->shape[d] : 0;
                rest = ind->shape[d] ? rest / ind->shape[d] : 0;
            }
            pos[0] = 0;
            for (int d = 0; d < ind->ndim && used < sizeof pos; d++)
                used += (size_t)snprintf(pos + used, sizeof pos - used, d ? ",%lld" : "%lld", (long long)coord[d]);
            st = mp_error_set(MP_ERR_SHAPE, "indices[%s] = %lld is not in [0, %lld)", pos, (long long)v[j],
                              (long long)n);
            break;
        }
    if (h != *idx)
        mp_tensor_decref(h);
    if (st != MP_OK) {
        mp_tensor_decref(*idx);
        *idx = NULL;
    }
    return st;
}

mp_status mp_run_gather(mp_op op, mp_tensor *const *in, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    mp_tensor *x = in[0], *ind = in[1];
    *out = NULL;
    int64_t axis = at->i0;
    int grad = op == MP_OP_GATHER_GRAD;
    const char *name = grad ? "UnsortedSegmentSum" : "GatherV2";
    if (!grad && axis < 0 && axis >= -x->ndim)
        axis += x->ndim;
    if (axis < 0)
        return mp_error_set(MP_ERR_SHAPE, "Expected axis in the range [%d, %d), but got %lld", -x->ndim, x->ndim,
                            (long long)at->i0);
    if (!grad && axis >= x->ndim)
        return mp_error_set(MP_ERR_SHAPE, "Shape must be at least rank %lld but is rank %d", (long long)axis + 1,
                            x->ndim);
    if (mp_tensor_device(x).type != mp_tensor_device(ind).type || mp_tensor_device(x).index != mp_tensor_device(ind).index)
        return mp_error_set(MP_ERR_DEVICE, "%s: params and indices are on different devices", name);
    int64_t shape[MP_MAX_DIMS];
    int nd = 0;
    int64_t outer = prod(x->shape, (int)axis), n, nidx, inner;
    if (!grad) {
        if (x->ndim - 1 + ind->ndim > MP_MAX_DIMS)
            return mp_error_set(MP_ERR_SHAPE, "GatherV2: the result would have more than %d dimensions", MP_MAX_DIMS);
        n = x->shape[axis];
        nidx = ind->numel;
        inner = prod(x->shape + axis + 1, x->ndim - (int)axis - 1);
        for (int d = 0; d < axis; d++)
            shape[nd++] = x->shape[d];
        for (int d = 0; d < ind->ndim; d++)
            shape[nd++] = ind->shape[d];
        for (int d = (int)axis + 1; d < x->ndim; d++)
            shape[nd++] = x->shape[d];
    } else {
        /* dy = shape[:axis] + indices.shape + shape[axis+1:] -> shape[:axis] + (i1) + rest */
        if (!mp_dtype_is_floating(x->dtype))
            return mp_error_set(MP_ERR_DTYPE, "UnsortedSegmentSum: gather's gradient needs a floating dy, got %s",
                                mp_dtype_name(x->dtype));
        if (x->ndim < axis + ind->ndim || at->i1 < 0)
            return mp_error_set(MP_ERR_SHAPE, "UnsortedSegmentSum: dy of rank %d does not fit indices of rank %d",
                                x->ndim, ind->ndim);
        for (int d = 0; d < ind->ndim; d++)
            if (x->shape[axis + d] != ind->shape[d])
                return mp_error_set(MP_ERR_SHAPE, "UnsortedSegmentSum: dy's shape does not match the indices'");
        n = at->i1;
        nidx = ind->numel;
        inner = prod(x->shape + axis + ind->ndim, x->ndim - (int)axis - ind->ndim);
        for (int d = 0; d < axis; d++)
            shape[nd++] = x->shape[d];
        shape[nd++] = n;
        for (int d = (int)axis + ind->ndim; d < x->ndim; d++)
            shape[nd++] = x->shape[d];
    }
    mp_tensor *idx = NULL;
    MP_TRY(indices_i64(name, ind, n, &idx));
    mp_status st = MP_OK;
    mp_device dev = mp_tensor_device(x);
    if (!grad) {
        st = mp_tensor_new(x->dtype, nd, shape, dev, out);
        if (st == MP_OK)
            st = BE_CALL(be, gather, dev, x->dtype, mp_tensor_data(idx), mp_tensor_data(x), mp_tensor_data(*out), outer,
                         n, nidx, inner);
    } else {
        /* 16-bit sums in float32, rounded once */
        mp_dtype acc = x->dtype == MP_F64 ? MP_F64 : MP_F32;
        mp_tensor *src = x, *sum = NULL;
        if (acc != x->dtype)
            st = mp_op_exec(MP_OP_CAST, 1, &x, &(mp_attrs){.dtype = acc}, &src);
        if (st == MP_OK)
            st = mp_tensor_new(acc, nd, shape, dev, &sum);
        if (st == MP_OK)
            st = BE_CALL(be, scatter_add, dev, acc, mp_tensor_data(idx), mp_tensor_data(src), mp_tensor_data(sum),
                         outer, n, nidx, inner);
        if (st == MP_OK && acc != x->dtype)
            st = mp_op_exec(MP_OP_CAST, 1, &sum, &(mp_attrs){.dtype = x->dtype}, out);
        else if (st == MP_OK)
            *out = (mp_tensor_incref(sum), sum);
        if (src != x && src)
            mp_tensor_decref(src);
        if (sum)
            mp_tensor_decref(sum);
    }
    if (st != MP_OK && *out) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    mp_tensor_decref(idx);
    return st;
}

/* tf.cumsum: attrs i0 = axis (< 0 counts from the end), i1 = exclusive, i2 = reverse. */
mp_status mp_run_cumsum(mp_tensor *x, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    *out = NULL;
    if (!mp_dtype_is_floating(x->dtype) && x->dtype != MP_I32 && x->dtype != MP_I64)
        return mp_error_set(MP_ERR_SHAPE,
                            "Value for attr 'T' of %s is not in the list of allowed values (Cumsum: float16, "
                            "bfloat16, float32, float64, int32, int64)", mp_dtype_name(x->dtype));
    int64_t axis = at->i0;
    if (axis < -x->ndim || axis >= x->ndim)
        return mp_error_set(MP_ERR_SHAPE, "ScanOp: Expected scan axis in the range [%d, %d), but got %lld", -x->ndim,
                            x->ndim, (long long)axis);
    if (axis < 0)
        axis += x->ndim;
    mp_device dev = mp_tensor_device(x);
    MP_TRY(mp_tensor_new(x->dtype, x->ndim, x->shape, dev, out));
    mp_status st = BE_CALL(be, cumsum, dev, x->dtype, mp_tensor_data(x), mp_tensor_data(*out),
                           prod(x->shape, (int)axis), x->shape[axis], prod(x->shape + axis + 1, x->ndim - (int)axis - 1),
                           (int)(at->i1 != 0), (int)(at->i2 != 0));
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
