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

/* An order-preserving unsigned key: ascending keys give the ascending order (-0 as +0, NaN
 * above +inf); the complement gives the descending one. Equal values get equal keys, so the
 * stable merge keeps them in position order. */
static uint64_t sort_key(mp_dtype dt, const void *p, int64_t i) {
    double d;
    switch (dt) {
    case MP_F64: d = ((const double *)p)[i]; break;
    case MP_F32: d = ((const float *)p)[i]; break;
    case MP_F16:
    case MP_BF16: d = ld16(dt, p, i); break;
    case MP_I32: return (uint64_t)(int64_t)((const int32_t *)p)[i] ^ 0x8000000000000000ULL;
    case MP_I64: return (uint64_t)((const int64_t *)p)[i] ^ 0x8000000000000000ULL;
    case MP_I8: return (uint64_t)(int64_t)((const int8_t *)p)[i] ^ 0x8000000000000000ULL;
    default: return (uint64_t)((const uint8_t *)p)[i];
    }
    if (isnan(d))
        return ~0ULL;
    if (d == 0)
        d = 0.0;
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return (u >> 63) ? ~u : u | 0x8000000000000000ULL;
}

static void sort_range(void *p, int64_t b, int64_t e) {
    const sort_ctx *c = p;
    int64_t n = c->n;
    /* (key, position) pairs in the row's 4 n int64 of scratch: the pairs and the merge buffer */
    for (int64_t r = b; r < e; r++) {
        uint64_t *a = (uint64_t *)(c->work + 4 * r * n), *t = a + 2 * n;
        int64_t base = r * n;
        if (c->k * 16 <= n) { /* a few of many (top_k): the first k kept in order, O(n) typical */
            int64_t have = 0;
            for (int64_t i = 0; i < n; i++) {
                uint64_t key = sort_key(c->dt, c->x, base + i);
                key = c->desc ? ~key : key;
                if (have == c->k && key >= a[2 * (have - 1)])
                    continue; /* not before the k-th (ties keep the earlier position) */
                int64_t at = have < c->k ? have++ : have - 1;
                while (at > 0 && a[2 * (at - 1)] > key) {
                    a[2 * at] = a[2 * (at - 1)];
                    a[2 * at + 1] = a[2 * (at - 1) + 1];
                    at--;
                }
                a[2 * at] = key;
                a[2 * at + 1] = (uint64_t)i;
            }
            for (int64_t i = 0; i < c->k; i++) {
                if (c->idt == MP_I32)
                    ((int32_t *)c->idx)[r * c->k + i] = (int32_t)a[2 * i + 1];
                else
                    ((int64_t *)c->idx)[r * c->k + i] = (int64_t)a[2 * i + 1];
            }
            continue;
        }
        for (int64_t i = 0; i < n; i++) {
            uint64_t key = sort_key(c->dt, c->x, base + i);
            a[2 * i] = c->desc ? ~key : key;
            a[2 * i + 1] = (uint64_t)i;
        }
        for (int64_t w = 1; w < n; w *= 2) {
            for (int64_t lo = 0; lo < n; lo += 2 * w) {
                int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
                int64_t i = lo, j = mid, o = lo;
                while (i < mid && j < hi) {
                    int64_t from = a[2 * j] < a[2 * i] ? j++ : i++;
                    t[2 * o] = a[2 * from];
                    t[2 * o + 1] = a[2 * from + 1];
                    o++;
                }
                if (i < mid)
                    memcpy(t + 2 * o, a + 2 * i, sizeof(uint64_t) * 2 * (size_t)(mid - i));
                else if (j < hi)
                    memcpy(t + 2 * o, a + 2 * j, sizeof(uint64_t) * 2 * (size_t)(hi - j));
            }
            uint64_t *sw = a;
            a = t;
            t = sw;
        }
        for (int64_t i = 0; i < c->k; i++) {
            if (c->idt == MP_I32)
                ((int32_t *)c->idx)[r * c->k + i] = (int32_t)a[2 * i + 1];
            else
                ((int64_t *)c->idx)[r * c->k + i] = (int64_t)a[2 * i + 1];
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
