/* ops_math.c — the op layer of tf.math's scans (cumprod, cumulative_logsumexp) and segment
 * reductions (segment_* / unsorted_segment_*): dtype and shape validation with TensorFlow's
 * messages, output shapes, and the host-side grouping of rows per segment (the ids are read on
 * the host, a synchronisation on a GPU) before the scan / segment_reduce slots run. It must not
 * touch data elements. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "ops_internal.h"

static int64_t prod(const int64_t *s, int n) {
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        p *= s[i];
    return p;
}

mp_status mp_run_scan(mp_op op, mp_tensor *x, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    *out = NULL;
    int lse = op == MP_OP_CUMULATIVE_LOGSUMEXP;
    mp_dtype dt = x->dtype;
    int ok = mp_dtype_is_floating(dt) || (!lse && (dt == MP_I32 || dt == MP_I64 || dt == MP_I8 || dt == MP_U8));
    if (!ok)
        return mp_error_set(MP_ERR_SHAPE,
                            "Value for attr 'T' of %s is not in the list of allowed values (%s: %s)", mp_dtype_name(dt),
                            lse ? "CumulativeLogsumexp" : "Cumprod",
                            lse ? "bfloat16, half, float, double"
                                : "float16, bfloat16, float32, float64, int8, uint8, int32, int64");
    int64_t axis = at->i0;
    if (axis < -x->ndim || axis >= x->ndim)
        return mp_error_set(MP_ERR_SHAPE, "ScanOp: Expected scan axis in the range [%d, %d), but got %lld", -x->ndim,
                            x->ndim, (long long)axis);
    if (axis < 0)
        axis += x->ndim;
    mp_device dev = mp_tensor_device(x);
    MP_TRY(mp_tensor_new(dt, x->ndim, x->shape, dev, out));
    mp_status st = BE_CALL(be, scan, dev, lse, dt, mp_tensor_data(x), mp_tensor_data(*out), prod(x->shape, (int)axis),
                           x->shape[axis], prod(x->shape + axis + 1, x->ndim - (int)axis - 1), (int)(at->i1 != 0),
                           (int)(at->i2 != 0));
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

static void shape_str(const int64_t *s, int n, char *buf, size_t cap) {
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, i ? ",%lld" : "%lld", (long long)s[i]);
    if (used < cap)
        snprintf(buf + used, cap - used, "]");
}

static const char *const seg_names[2][6] = {
    {"UnsortedSegmentSum", "UnsortedSegmentMean", "UnsortedSegmentMax", "UnsortedSegmentMin", "UnsortedSegmentProd",
     "UnsortedSegmentSqrtN"},
    {"SegmentSum", "SegmentMean", "SegmentMax", "SegmentMin", "SegmentProd", "SegmentSqrtN"},
};

/* The ids as int64 on the host (malloc'd; copied from the device when they live there). */
static mp_status host_ids(mp_tensor *ind, int64_t **out) {
    mp_tensor *h = ind;
    mp_device cpu = {MP_DEV_CPU, 0};
    *out = NULL;
    if (mp_tensor_device(ind).type != MP_DEV_CPU)
        MP_TRY(mp_copy_to_device(ind, cpu, &h));
    int64_t n = ind->numel, *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (v) {
        const void *src = mp_tensor_data(h);
        for (int64_t j = 0; j < n; j++)
            v[j] = ind->dtype == MP_I64 ? ((const int64_t *)src)[j] : ((const int32_t *)src)[j];
    }
    if (h != ind)
        mp_tensor_decref(h);
    if (!v)
        return mp_error_set(MP_ERR_MEMORY, "segment ids: out of memory reading %lld ids", (long long)n);
    *out = v;
    return MP_OK;
}

mp_status mp_run_segment_reduce(mp_tensor *const *in, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    mp_tensor *x = in[0], *ind = in[1];
    *out = NULL;
    int kind = (int)at->i0, sorted = at->i2 != 0;
    if (kind < 0 || kind > 5)
        return mp_error_set(MP_ERR_INTERNAL, "segment_reduce: unknown kind %d", kind);
    const char *name = seg_names[sorted][kind];
    mp_dtype dt = x->dtype;
    if (dt == MP_BOOL || (kind == 5 && !mp_dtype_is_floating(dt)))
        return mp_error_set(MP_ERR_SHAPE, "Value for attr 'T' of %s is not in the list of allowed values (%s)",
                            mp_dtype_name(dt), name);
    if (ind->dtype != MP_I32 && ind->dtype != MP_I64)
        return mp_error_set(MP_ERR_SHAPE,
                            "Value for attr 'Tindices' of %s is not in the list of allowed values: int16, int32, "
                            "int64 (%s)", mp_dtype_name(ind->dtype), name);
    if (mp_tensor_device(x).type != mp_tensor_device(ind).type ||
        mp_tensor_device(x).index != mp_tensor_device(ind).index)
        return mp_error_set(MP_ERR_DEVICE, "%s: data and segment_ids are on different devices", name);
    if (sorted) {
        if (ind->ndim != 1)
            return mp_error_set(MP_ERR_SHAPE, "segment_ids should be a vector. (%s)", name);
        if (x->ndim < 1 || x->shape[0] != ind->shape[0])
            return mp_error_set(MP_ERR_SHAPE, "segment_ids should be the same size as dimension 0 of input. (%s)",
                                name);
    } else {
        int okp = x->ndim >= ind->ndim;
        for (int d = 0; okp && d < ind->ndim; d++)
            okp = x->shape[d] == ind->shape[d];
        if (!okp) {
            char a[32 * MP_MAX_DIMS], b[32 * MP_MAX_DIMS];
            shape_str(x->shape, x->ndim, a, sizeof a);
            shape_str(ind->shape, ind->ndim, b, sizeof b);
            return mp_error_set(MP_ERR_SHAPE, "data.shape = %s does not start with segment_ids.shape = %s (%s)", a, b,
                                name);
        }
        if (at->i1 < 0)
            return mp_error_set(MP_ERR_SHAPE, "Input num_segments == %lld must not be negative. (%s)",
                                (long long)at->i1, name);
    }
    int64_t nrows = ind->numel, inner = prod(x->shape + ind->ndim, x->ndim - ind->ndim);
    int64_t nseg = sorted ? 0 : at->i1;
    int64_t *h = NULL;
    /* a dry trace has no values for computed ids (allocated, not written): not read then */
    if (nrows > 0 && (!mp_ops_skip_kernels || !mp_graph_is_dynamic(ind)))
        MP_TRY(host_ids(ind, &h));
    const int64_t *v = h;
    mp_status st = MP_OK;
    /* validation in TensorFlow's words */
    for (int64_t j = 0; v && j < nrows && st == MP_OK; j++) {
        if (sorted) {
            if (v[j] < 0)
                st = mp_error_set(MP_ERR_SHAPE,
                                  "Segment id %lld out of range [0, %lld), possibly because 'segment_ids' input is not "
                                  "sorted. (%s)", (long long)v[j], (long long)(v[nrows - 1] + 1), name);
            else if (j > 0 && v[j] < v[j - 1])
                st = mp_error_set(MP_ERR_SHAPE, "segment ids are not increasing (%s)", name);
        } else if (v[j] >= nseg) {
            char pos[32 * MP_MAX_DIMS];
            size_t used = 0;
            int64_t rest = j, coord[MP_MAX_DIMS];
            for (int d = ind->ndim - 1; d >= 0; d--) {
                coord[d] = rest % ind->shape[d];
                rest /= ind->shape[d];
            }
            pos[0] = 0;
            for (int d = 0; d < ind->ndim && used < sizeof pos; d++)
                used += (size_t)snprintf(pos + used, sizeof pos - used, d ? ",%lld" : "%lld", (long long)coord[d]);
            st = mp_error_set(MP_ERR_SHAPE, "segment_ids[%s] = %lld is out of range [0, %lld) (%s)", pos,
                              (long long)v[j], (long long)nseg, name);
        }
    }
    if (st == MP_OK && sorted)
        nseg = (v && nrows > 0) ? v[nrows - 1] + 1 : 0;
    if (st == MP_OK && sorted && !v && nrows > 0)
        st = mp_error_set(MP_ERR_NOT_IMPLEMENTED, "%s: the number of segments depends on the ids' values, which a "
                                                   "dry trace does not have", name);
    int64_t oshape[MP_MAX_DIMS];
    int ond = 0;
    oshape[ond++] = nseg;
    for (int d = ind->ndim; d < x->ndim; d++)
        oshape[ond++] = x->shape[d];
    if (st == MP_OK)
        st = mp_shape_check(ond, oshape, NULL);
    /* rows grouped per segment (a counting sort, stable): perm and offsets on the host */
    mp_device cpu = {MP_DEV_CPU, 0}, dev = mp_tensor_device(x);
    mp_tensor *hperm = NULL, *hoff = NULL, *dperm = NULL, *doff = NULL;
    int64_t one = nrows > 0 ? nrows : 1, noff = nseg + 1;
    if (st == MP_OK)
        st = mp_tensor_new(MP_I64, 1, &one, cpu, &hperm);
    if (st == MP_OK)
        st = mp_tensor_new(MP_I64, 1, &noff, cpu, &hoff);
    if (st == MP_OK) {
        int64_t *perm = (int64_t *)mp_tensor_data(hperm), *off = (int64_t *)mp_tensor_data(hoff);
        memset(off, 0, (size_t)noff * sizeof *off);
        for (int64_t j = 0; v && j < nrows; j++)
            if (v[j] >= 0)
                off[v[j] + 1]++;
        for (int64_t s = 0; s < nseg; s++)
            off[s + 1] += off[s];
        int64_t *fill = NULL;
        if (nseg > 0 && v) {
            fill = malloc((size_t)nseg * sizeof *fill);
            if (!fill)
                st = mp_error_set(MP_ERR_MEMORY, "%s: out of memory grouping %lld rows", name, (long long)nrows);
            else
                memcpy(fill, off, (size_t)nseg * sizeof *fill);
        }
        for (int64_t j = 0; fill && j < nrows; j++)
            if (v[j] >= 0)
                perm[fill[v[j]]++] = j;
        free(fill);
    }
    if (st == MP_OK && dev.type != MP_DEV_CPU) {
        st = mp_copy_to_device(hperm, dev, &dperm);
        if (st == MP_OK)
            st = mp_copy_to_device(hoff, dev, &doff);
    } else if (st == MP_OK) {
        dperm = (mp_tensor_incref(hperm), hperm);
        doff = (mp_tensor_incref(hoff), hoff);
    }
    if (st == MP_OK)
        st = mp_tensor_new(dt, ond, oshape, dev, out);
    if (st == MP_OK)
        st = BE_CALL(be, segment_reduce, dev, kind, dt, mp_tensor_data(dperm), mp_tensor_data(doff), mp_tensor_data(x),
                     mp_tensor_data(*out), nseg, inner, sorted);
    if (st != MP_OK && *out) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    free(h);
    mp_tensor *tmp[4] = {hperm, hoff, dperm, doff};
    for (int i = 0; i < 4; i++)
        if (tmp[i])
            mp_tensor_decref(tmp[i]);
    return st;
}
