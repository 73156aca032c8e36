/* cpu_scatter.c — the CPU backend's scatter_nd and sort slots (tf.tensor_scatter_nd_*,
 * tf.scatter_nd, tf.math.top_k, tf.sort, tf.argsort). Row indices arrive checked by the op
 * layer (ops_array.c); scatter_nd applies the updates serially in index order (a duplicate's
 * last write wins, sums are deterministic). sort is a stable merge sort per row. */
#include <math.h>
#include <string.h>

#include "cpu_kernels.h"

/* ---------------------------------------------------------------- scatter_nd */

#define SCATTER_LOOP(T, LOAD, STORE)                                                                                  \
    for (int64_t j = 0; j < nidx; j++) {                                                                              \
        const char *u = (const char *)upd + (size_t)(j * inner) * es;                                               \
        char *o = (char *)y + (size_t)(rows[j] * inner) * es;                                                        \
        for (int64_t i = 0; i < inner; i++) {                                                                         \
            T a = LOAD(o, i), b = LOAD(u, i);                                                                         \
            T r = mode == 1 ? a + b : mode == 2 ? a - b : mode == 3 ? (b < a ? b : a) : (b > a ? b : a);             \
            STORE(o, i, r);                                                                                           \
        }                                                                                                             \
    }

#define LD_F32(p, i) ((const float *)(p))[i]
#define ST_F32(p, i, v) (((float *)(p))[i] = (v))
#define LD_F64(p, i) ((const double *)(p))[i]
#define ST_F64(p, i, v) (((double *)(p))[i] = (v))
#define LD_I32(p, i) ((int64_t)((const int32_t *)(p))[i])
#define ST_I32(p, i, v) (((int32_t *)(p))[i] = (int32_t)(uint32_t)(uint64_t)(v))
#define LD_I64(p, i) ((const int64_t *)(p))[i]
#define ST_I64(p, i, v) (((int64_t *)(p))[i] = (v))
#define LD_I8(p, i) ((int64_t)((const int8_t *)(p))[i])
#define ST_I8(p, i, v) (((int8_t *)(p))[i] = (int8_t)(uint8_t)(uint64_t)(v))
#define LD_U8(p, i) ((int64_t)((const uint8_t *)(p))[i])
#define ST_U8(p, i, v) (((uint8_t *)(p))[i] = (uint8_t)(uint64_t)(v))

static float ld16(mp_dtype dt, const void *p, int64_t i) {
    float f;
    mp_load_f32(dt, (const char *)p + (size_t)i * 2, &f, 1);
    return f;
}
static void st16(mp_dtype dt, void *p, int64_t i, float v) { mp_store_f32(dt, &v, (char *)p + (size_t)i * 2, 1); }

mp_status mp_cpu_scatter_nd(mp_device dev, int mode, mp_dtype dt, const int64_t *rows, const void *upd, void *y,
                            int64_t nidx, int64_t inner) {
    (void)dev;
    size_t es = mp_dtype_size(dt);
    if (nidx <= 0 || inner <= 0)
        return MP_OK;
    if (mode == 0) {
        for (int64_t j = 0; j < nidx; j++)
            memcpy((char *)y + (size_t)(rows[j] * inner) * es, (const char *)upd + (size_t)(j * inner) * es,
                   (size_t)inner * es);
        return MP_OK;
    }
    if (mode < 0 || mode > 4 || dt == MP_BOOL)
        return mp_error_set(MP_ERR_INTERNAL, "scatter_nd: mode %d on %s", mode, mp_dtype_name(dt));
    switch (dt) {
    case MP_F32: SCATTER_LOOP(float, LD_F32, ST_F32) break;
    case MP_F64: SCATTER_LOOP(double, LD_F64, ST_F64) break;
    case MP_I32: SCATTER_LOOP(int64_t, LD_I32, ST_I32) break;
    case MP_I64: SCATTER_LOOP(int64_t, LD_I64, ST_I64) break;
    case MP_I8: SCATTER_LOOP(int64_t, LD_I8, ST_I8) break;
    case MP_U8: SCATTER_LOOP(int64_t, LD_U8, ST_U8) break;
    case MP_F16:
    case MP_BF16:
#define LD_H(p, i) ld16(dt, p, i)
#define ST_H(p, i, v) st16(dt, p, i, v)
        SCATTER_LOOP(float, LD_H, ST_H)
#undef LD_H
#undef ST_H
        break;
    default: return mp_error_set(MP_ERR_INTERNAL, "scatter_nd: unsupported dtype %s", mp_dtype_name(dt));
    }
    return MP_OK;
}

/* ---------------------------------------------------------------------- sort */

typedef struct {
    mp_dtype dt, idt;
    int desc;
    const void *x;
    int64_t n, k;
    int64_t *work;
    void *idx;
} sort_ctx;

/* does position a come strictly before position b (values va, vb)? NaN above +inf */
static int before_f(double va, double vb, int desc) {
    int na = isnan(va), nb = isnan(vb);
    if (na || nb)
        return desc ? (na && !nb) : (!na && nb);
    return desc ? va > vb : va < vb;
}

static double ldf(mp_dtype dt, const void *p, int64_t i) {
    switch (dt) {
    case MP_F64: return ((const double *)p)[i];
    case MP_F32: return ((const float *)p)[i];
    default: return ld16(dt, p, i);
    }
}
static int64_t ldi(mp_dtype dt, const void *p, int64_t i) {
    switch (dt) {
    case MP_I32: return ((const int32_t *)p)[i];
    case MP_I64: return ((const int64_t *)p)[i];
    case MP_I8: return ((const int8_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}

static void sort_range(void *p, int64_t b, int64_t e) {
    const sort_ctx *c = p;
    int isf = mp_dtype_is_floating(c->dt);
    for (int64_t r = b; r < e; r++) {
        int64_t *a = c->work + 2 * r * c->n, *t = a + c->n;
        int64_t base = r * c->n;
        for (int64_t i = 0; i < c->n; i++)
            a[i] = i;
        for (int64_t w = 1; w < c->n; w *= 2) {
            for (int64_t lo = 0; lo < c->n; lo += 2 * w) {
                int64_t mid = lo + w < c->n ? lo + w : c->n, hi = lo + 2 * w < c->n ? lo + 2 * w : c->n;
                int64_t i = lo, j = mid, o = lo;
                while (i < mid && j < hi) {
                    int right_first;
                    if (isf)
                        right_first = before_f(ldf(c->dt, c->x, base + a[j]), ldf(c->dt, c->x, base + a[i]), c->desc);
                    else {
                        int64_t vj = ldi(c->dt, c->x, base + a[j]), vi = ldi(c->dt, c->x, base + a[i]);
                        right_first = c->desc ? vj > vi : vj < vi;
                    }
                    t[o++] = right_first ? a[j++] : a[i++];
                }
                while (i < mid)
                    t[o++] = a[i++];
                while (j < hi)
                    t[o++] = a[j++];
            }
            int64_t *s = a;
            a = t;
            t = s;
        }
        for (int64_t i = 0; i < c->k; i++) {
            if (c->idt == MP_I32)
                ((int32_t *)c->idx)[r * c->k + i] = (int32_t)a[i];
            else
                ((int64_t *)c->idx)[r * c->k + i] = a[i];
        }
    }
}

mp_status mp_cpu_sort(mp_device dev, mp_dtype dt, int descending, const void *x, int64_t rows, int64_t n, int64_t k,
                      int64_t *work, mp_dtype idt, void *idx) {
    (void)dev;
    if (dt == MP_BOOL || (idt != MP_I32 && idt != MP_I64))
        return mp_error_set(MP_ERR_INTERNAL, "sort: unsupported dtype %s / %s", mp_dtype_name(dt), mp_dtype_name(idt));
    if (rows <= 0 || n <= 0 || k <= 0)
        return MP_OK;
    sort_ctx c = {dt, idt, descending, x, n, k, work, idx};
    mp_parallel_for(rows, MP_GRAIN / (n * 8 + 1) + 1, sort_range, &c);
    return MP_OK;
}
