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
