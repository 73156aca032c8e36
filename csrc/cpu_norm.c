/* cpu_norm.c — the CPU backend's batch normalization with given statistics.
 * Owns one pass y = x * a + b per channel (a = scale / sqrt(var + eps), b = offset - mean * a,
 * computed once per call in the statistics' dtype); 16-bit data is widened to float32 in
 * blocks and rounded once. It must not compute statistics (moments does) nor validate. */
#include <math.h>

#include "cpu_kernels.h"

typedef struct {
    mp_dtype dt;
    const void *x;
    void *y;
    const float *a, *b;    /* float32 statistics */
    const double *ad, *bd; /* float64 statistics */
    int64_t C, inner;
} bn_ctx;

/* rows of the (outer * C, inner) view; a row has one channel */
static void bn_rows(void *vctx, int64_t r0, int64_t r1) {
    const bn_ctx *c = vctx;
    float buf[MP_BLOCK];
    size_t es = mp_dtype_size(c->dt);
    if (c->inner == 1) { /* channels last: a row of C channels per outer index */
        for (int64_t r = r0; r < r1; r++) {
            if (c->dt == MP_F64) {
                const double *x = (const double *)c->x + r * c->C;
                double *y = (double *)c->y + r * c->C;
                for (int64_t k = 0; k < c->C; k++)
                    y[k] = x[k] * c->ad[k] + c->bd[k];
                continue;
            }
            for (int64_t k0 = 0; k0 < c->C; k0 += MP_BLOCK) {
                int64_t m = c->C - k0 < MP_BLOCK ? c->C - k0 : MP_BLOCK;
                mp_load_f32(c->dt, (const char *)c->x + (r * c->C + k0) * (int64_t)es, buf, m);
                for (int64_t k = 0; k < m; k++)
                    buf[k] = buf[k] * c->a[k0 + k] + c->b[k0 + k];
                mp_store_f32(c->dt, buf, (char *)c->y + (r * c->C + k0) * (int64_t)es, m);
            }
        }
        return;
    }
    for (int64_t r = r0; r < r1; r++) { /* channels first: a row of `inner` values of one channel */
        int64_t ch = r % c->C;
        if (c->dt == MP_F64) {
            const double *x = (const double *)c->x + r * c->inner;
            double *y = (double *)c->y + r * c->inner;
            for (int64_t k = 0; k < c->inner; k++)
                y[k] = x[k] * c->ad[ch] + c->bd[ch];
            continue;
        }
        float a = c->a[ch], b = c->b[ch];
        for (int64_t k0 = 0; k0 < c->inner; k0 += MP_BLOCK) {
            int64_t m = c->inner - k0 < MP_BLOCK ? c->inner - k0 : MP_BLOCK;
            mp_load_f32(c->dt, (const char *)c->x + (r * c->inner + k0) * (int64_t)es, buf, m);
            for (int64_t k = 0; k < m; k++)
                buf[k] = buf[k] * a + b;
            mp_store_f32(c->dt, buf, (char *)c->y + (r * c->inner + k0) * (int64_t)es, m);
        }
    }
}

mp_status mp_cpu_batch_norm(mp_device dev, mp_dtype dt, mp_dtype sdt, const void *x, const void *scale,
                            const void *offset, const void *mean, const void *var, double eps, void *y, int64_t outer,
                            int64_t C, int64_t inner) {
    (void)dev;
    size_t ss = mp_dtype_size(sdt);
    void *ab = mp_cpu_scratch_alloc(2 * (size_t)C * ss + 64);
    if (!ab)
        return mp_error_set(MP_ERR_MEMORY, "out of memory for batch normalization factors");
    bn_ctx c = {dt, x, y, NULL, NULL, NULL, NULL, C, inner};
    if (sdt == MP_F64) {
        double *a = ab, *b = a + C;
        const double *s = scale, *o = offset, *mu = mean, *v = var;
        for (int64_t k = 0; k < C; k++) {
            a[k] = 1.0 / sqrt(v[k] + eps) * s[k];
            b[k] = o[k] - mu[k] * a[k];
        }
        c.ad = a, c.bd = b;
    } else {
        float *a = ab, *b = a + C;
        const float *s = scale, *o = offset, *mu = mean, *v = var;
        for (int64_t k = 0; k < C; k++) {
            a[k] = 1.0f / sqrtf(v[k] + (float)eps) * s[k]; /* rsqrt(var + eps) * scale, as tf.nn */
            b[k] = o[k] - mu[k] * a[k];
        }
        c.a = a, c.b = b;
    }
    int64_t rows = inner == 1 ? outer : outer * C;
    int64_t per_row = inner == 1 ? C : inner;
    int64_t grain = per_row >= MP_GRAIN ? 1 : MP_GRAIN / (per_row ? per_row : 1);
    mp_parallel_for(rows, grain, bn_rows, &c);
    mp_cpu_scratch_free(ab, 2 * (size_t)C * ss + 64);
    return MP_OK;
}
