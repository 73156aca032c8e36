/* cpu_gather.c — the CPU backend's gather and scatter_add slots (tf.gather and its dense
 * gradient). Indices arrive checked in [0, n) by the op layer (ops_gather.c); these loops
 * only move or add rows. Scatter-add runs serially over the indices so sums are deterministic. */
#include <string.h>

#include "cpu_kernels.h"

typedef struct {
    const int64_t *idx;
    const char *x;
    char *y;
    int64_t n, nidx;
    size_t row;
} gather_ctx;

static void gather_range(void *p, int64_t b, int64_t e) {
    const gather_ctx *c = p;
    for (int64_t r = b; r < e; r++) {
        int64_t o = r / c->nidx, j = r % c->nidx;
        memcpy(c->y + (size_t)r * c->row, c->x + ((size_t)o * (size_t)c->n + (size_t)c->idx[j]) * c->row, c->row);
    }
}

mp_status mp_cpu_gather(mp_device dev, mp_dtype dt, const int64_t *idx, const void *x, void *y, int64_t outer,
                        int64_t n, int64_t nidx, int64_t inner) {
    (void)dev;
    if (outer <= 0 || nidx <= 0 || inner <= 0)
        return MP_OK;
    gather_ctx c = {idx, x, y, n, nidx, (size_t)inner * mp_dtype_size(dt)};
    mp_parallel_for(outer * nidx, MP_GRAIN / (inner + 1) + 1, gather_range, &c);
    return MP_OK;
}

mp_status mp_cpu_scatter_add(mp_device dev, mp_dtype dt, const int64_t *idx, const void *x, void *y, int64_t outer,
                             int64_t n, int64_t nidx, int64_t inner) {
    (void)dev;
    if (dt != MP_F32 && dt != MP_F64)
        return mp_error_set(MP_ERR_INTERNAL, "scatter_add: float32 or float64, got %s", mp_dtype_name(dt));
    if (outer <= 0 || n <= 0 || inner <= 0)
        return MP_OK;
    memset(y, 0, (size_t)(outer * n * inner) * mp_dtype_size(dt));
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < nidx; j++) {
            int64_t src = (o * nidx + j) * inner, dst = (o * n + idx[j]) * inner;
            if (dt == MP_F32) {
                const float *a = (const float *)x + src;
                float *b = (float *)y + dst;
                for (int64_t i = 0; i < inner; i++)
                    b[i] += a[i];
            } else {
                const double *a = (const double *)x + src;
                double *b = (double *)y + dst;
                for (int64_t i = 0; i < inner; i++)
                    b[i] += a[i];
            }
        }
    return MP_OK;
}

/* cumsum: one column (o, i) per iteration, sequential along the axis. */
typedef struct {
    mp_dtype dt;
    const void *x;
    void *y;
    int64_t n, inner;
    int exclusive, reverse;
} cumsum_ctx;

static double ld(mp_dtype dt, const void *p, int64_t k) {
    switch (dt) {
    case MP_F64: return ((const double *)p)[k];
    case MP_F32: return ((const float *)p)[k];
    default: {
        float f;
        mp_load_f32(dt, (const char *)p + (size_t)k * 2, &f, 1);
        return f;
    }
    }
}

static void st(mp_dtype dt, void *p, int64_t k, double v) {
    switch (dt) {
    case MP_F64: ((double *)p)[k] = v; break;
    case MP_F32: ((float *)p)[k] = (float)v; break;
    default: {
        float f = (float)v; /* double -> float -> 16-bit: the double sum is exact enough here */
        mp_store_f32(dt, &f, (char *)p + (size_t)k * 2, 1);
    }
    }
}

static void cumsum_range(void *p, int64_t b, int64_t e) {
    const cumsum_ctx *c = p;
    for (int64_t col = b; col < e; col++) {
        int64_t o = col / c->inner, i = col % c->inner;
        int64_t base = o * c->n * c->inner + i;
        double acc = 0.0;
        int64_t iacc = 0;
        for (int64_t s = 0; s < c->n; s++) {
            int64_t k = base + (c->reverse ? c->n - 1 - s : s) * c->inner;
            if (c->dt == MP_I32 || c->dt == MP_I64) {
                int64_t v = c->dt == MP_I32 ? ((const int32_t *)c->x)[k] : ((const int64_t *)c->x)[k];
                int64_t out = c->exclusive ? iacc : (int64_t)((uint64_t)iacc + (uint64_t)v);
                iacc = (int64_t)((uint64_t)iacc + (uint64_t)v);
                if (c->dt == MP_I32)
                    ((int32_t *)c->y)[k] = (int32_t)(uint32_t)(uint64_t)out;
                else
                    ((int64_t *)c->y)[k] = out;
            } else {
                double v = ld(c->dt, c->x, k);
                double out = c->exclusive ? acc : acc + v;
                acc += v;
                st(c->dt, c->y, k, out);
            }
        }
    }
}

mp_status mp_cpu_cumsum(mp_device dev, mp_dtype dt, const void *x, void *y, int64_t outer, int64_t n, int64_t inner,
                        int exclusive, int reverse) {
    (void)dev;
    if (!mp_dtype_is_floating(dt) && dt != MP_I32 && dt != MP_I64)
        return mp_error_set(MP_ERR_INTERNAL, "cumsum: unsupported dtype %s", mp_dtype_name(dt));
    if (outer <= 0 || n <= 0 || inner <= 0)
        return MP_OK;
    cumsum_ctx c = {dt, x, y, n, inner, exclusive, reverse};
    mp_parallel_for(outer * inner, MP_GRAIN / (n + 1) + 1, cumsum_range, &c);
    return MP_OK;
}
