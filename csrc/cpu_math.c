/* cpu_math.c — the CPU backend's scan (cumprod, cumulative log-sum-exp) and segment_reduce
 * slots. Floats are computed in float64 and rounded once per output; integers in int64 with
 * two's-complement wrap. Rows arrive grouped per segment (ops_math.c checked the ids); these
 * loops only combine values, one output column per iteration, so results are deterministic. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "cpu_kernels.h"

static int is_int(mp_dtype dt) { return dt == MP_I32 || dt == MP_I64 || dt == MP_I8 || dt == MP_U8; }

static double ldf(mp_dtype dt, const void *p, int64_t k) {
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

/* double -> dt, rounded once (16-bit: through float32, exact for what a double sum gives here
 * except at double-rounding ties, which these scans do not target) */
static void stf(mp_dtype dt, void *p, int64_t k, double v) {
    switch (dt) {
    case MP_F64: ((double *)p)[k] = v; break;
    case MP_F32: ((float *)p)[k] = (float)v; break;
    default: {
        float f = (float)v;
        mp_store_f32(dt, &f, (char *)p + (size_t)k * 2, 1);
    }
    }
}

static int64_t ldi(mp_dtype dt, const void *p, int64_t k) {
    switch (dt) {
    case MP_I32: return ((const int32_t *)p)[k];
    case MP_I64: return ((const int64_t *)p)[k];
    case MP_I8: return ((const int8_t *)p)[k];
    default: return ((const uint8_t *)p)[k];
    }
}

static void sti(mp_dtype dt, void *p, int64_t k, int64_t v) {
    switch (dt) {
    case MP_I32: ((int32_t *)p)[k] = (int32_t)(uint32_t)(uint64_t)v; break;
    case MP_I64: ((int64_t *)p)[k] = v; break;
    case MP_I8: ((int8_t *)p)[k] = (int8_t)(uint8_t)(uint64_t)v; break;
    default: ((uint8_t *)p)[k] = (uint8_t)(uint64_t)v; break;
    }
}

/* log(exp(a) + exp(b)) without overflow; infinities and NaN as the limit */
static double logaddexp(double a, double b) {
    if (a != a || b != b)
        return a + b;
    double m = a > b ? a : b;
    if (m == -INFINITY || m == INFINITY)
        return m;
    return m + log1p(exp(-fabs(a - b)));
}

typedef struct {
    int kind;
    mp_dtype dt;
    const void *x;
    void *y;
    int64_t n, inner;
    int exclusive, reverse;
} scan_ctx;

static void scan_range(void *p, int64_t b, int64_t e) {
    const scan_ctx *c = p;
    for (int64_t col = b; col < e; col++) {
        int64_t base = (col / c->inner) * c->n * c->inner + col % c->inner;
        double acc = c->kind ? -INFINITY : 1.0;
        int64_t iacc = 1;
        for (int64_t s = 0; s < c->n; s++) {
            int64_t k = base + (c->reverse ? c->n - 1 - s : s) * c->inner;
            if (is_int(c->dt)) {
                int64_t v = ldi(c->dt, c->x, k);
                int64_t next = (int64_t)((uint64_t)iacc * (uint64_t)v);
                sti(c->dt, c->y, k, c->exclusive ? iacc : next);
                iacc = next;
            } else {
                double v = ldf(c->dt, c->x, k);
                double next = c->kind ? logaddexp(acc, v) : acc * v;
                stf(c->dt, c->y, k, c->exclusive ? acc : next);
                acc = next;
            }
        }
    }
}

mp_status mp_cpu_scan(mp_device dev, int kind, mp_dtype dt, const void *x, void *y, int64_t outer, int64_t n,
                      int64_t inner, int exclusive, int reverse) {
    (void)dev;
    if (!mp_dtype_is_floating(dt) && (kind != 0 || !is_int(dt)))
        return mp_error_set(MP_ERR_INTERNAL, "scan: unsupported dtype %s", mp_dtype_name(dt));
    if (outer <= 0 || n <= 0 || inner <= 0)
        return MP_OK;
    scan_ctx c = {kind, dt, x, y, n, inner, exclusive, reverse};
    mp_parallel_for(outer * inner, MP_GRAIN / (n + 1) + 1, scan_range, &c);
    return MP_OK;
}

typedef struct {
    int kind, sorted;
    mp_dtype dt;
    const int64_t *perm, *off;
    const void *x;
    void *y;
    int64_t inner;
} seg_ctx;

/* the dtype's lowest (hi = 0) or highest finite value, as TensorFlow's empty unsorted max/min */
static double float_limit(mp_dtype dt, int hi) {
    double v = dt == MP_F64 ? DBL_MAX : dt == MP_F32 ? FLT_MAX : dt == MP_F16 ? 65504.0 : 3.3895313892515355e38;
    return hi ? v : -v;
}
static int64_t int_limit(mp_dtype dt, int hi) {
    switch (dt) {
    case MP_I32: return hi ? INT32_MAX : INT32_MIN;
    case MP_I64: return hi ? INT64_MAX : INT64_MIN;
    case MP_I8: return hi ? INT8_MAX : INT8_MIN;
    default: return hi ? UINT8_MAX : 0;
    }
}

static void seg_range(void *p, int64_t b, int64_t e) {
    const seg_ctx *c = p;
    int k = c->kind;
    for (int64_t o = b; o < e; o++) {
        int64_t s = o / c->inner, i = o % c->inner;
        int64_t lo = c->off[s], hi = c->off[s + 1], cnt = hi - lo;
        if (is_int(c->dt)) {
            int64_t acc = k == 4 ? 1 : k == 2 ? int_limit(c->dt, 0) : k == 3 ? int_limit(c->dt, 1) : 0;
            for (int64_t j = lo; j < hi; j++) {
                int64_t v = ldi(c->dt, c->x, c->perm[j] * c->inner + i);
                if (k == 0 || k == 1)
                    acc = (int64_t)((uint64_t)acc + (uint64_t)v);
                else if (k == 4)
                    acc = (int64_t)((uint64_t)acc * (uint64_t)v);
                else if (k == 2)
                    acc = v > acc ? v : acc;
                else
                    acc = v < acc ? v : acc;
            }
            if (cnt == 0 && (k == 2 || k == 3) && c->sorted)
                acc = 0;
            if (k == 1 && cnt > 0)
                acc = acc / cnt; /* C division: TensorFlow's SegmentMean on integers */
            sti(c->dt, c->y, o, acc);
        } else {
            double acc = k == 4 ? 1.0 : k == 2 ? float_limit(c->dt, 0) : k == 3 ? float_limit(c->dt, 1) : 0.0;
            for (int64_t j = lo; j < hi; j++) {
                double v = ldf(c->dt, c->x, c->perm[j] * c->inner + i);
                if (k == 0 || k == 1 || k == 5)
                    acc += v;
                else if (k == 4)
                    acc *= v;
                else if (k == 2)
                    acc = v < acc ? acc : v; /* NaN replaces, then stays unless a later value wins */
                else
                    acc = v > acc ? acc : v;
            }
            if (cnt == 0 && (k == 2 || k == 3) && c->sorted)
                acc = 0.0;
            if (k == 1 && cnt > 0)
                acc /= (double)cnt;
            if (k == 5 && cnt > 0)
                acc /= sqrt((double)cnt);
            stf(c->dt, c->y, o, acc);
        }
    }
}

mp_status mp_cpu_segment_reduce(mp_device dev, int kind, mp_dtype dt, const int64_t *perm, const int64_t *offsets,
                                const void *x, void *y, int64_t nseg, int64_t inner, int sorted) {
    (void)dev;
    if (!mp_dtype_is_floating(dt) && !is_int(dt))
        return mp_error_set(MP_ERR_INTERNAL, "segment_reduce: unsupported dtype %s", mp_dtype_name(dt));
    if (nseg <= 0 || inner <= 0)
        return MP_OK;
    seg_ctx c = {kind, sorted, dt, perm, offsets, x, y, inner};
    int64_t rows = offsets[nseg] / (nseg > 0 ? nseg : 1) + 1;
    mp_parallel_for(nseg * inner, MP_GRAIN / rows + 1, seg_range, &c);
    return MP_OK;
}
