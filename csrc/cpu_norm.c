/* cpu_norm.c — the CPU backend's batch normalization: one pass y = x * a + b per channel
 * with given statistics (a = scale / sqrt(var + eps), b = offset - mean * a, computed once
 * per call in the statistics' dtype), and the batch-statistics slot (moments, the gradient
 * sums of batch norm's backward, the moments' gradient) summed in float64. 16-bit data is
 * widened to float32 in blocks and rounded once. It must not validate shapes (ops did). */
#include <math.h>
#include <string.h>

#include "cpu_kernels.h"

typedef struct {
    mp_dtype dt;
    const void *x;
    void *y;
    const float *a, *b;    /* float32 statistics */
    const double *ad, *bd; /* float64 statistics */
    int64_t C, inner;
    int act;               /* 1: ReLU after (TensorFlow's Relu: NaN stays NaN, -0 becomes 0) */
} bn_ctx;

#define BN_RELU(v) ((v) > 0 ? (v) : ((v) == (v) ? 0 : (v)))

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
                if (c->act)
                    for (int64_t k = 0; k < c->C; k++)
                        y[k] = BN_RELU(y[k]);
                continue;
            }
            for (int64_t k0 = 0; k0 < c->C; k0 += MP_BLOCK) {
                int64_t m = c->C - k0 < MP_BLOCK ? c->C - k0 : MP_BLOCK;
                mp_load_f32(c->dt, (const char *)c->x + (r * c->C + k0) * (int64_t)es, buf, m);
                for (int64_t k = 0; k < m; k++)
                    buf[k] = buf[k] * c->a[k0 + k] + c->b[k0 + k];
                if (c->act)
                    for (int64_t k = 0; k < m; k++)
                        buf[k] = BN_RELU(buf[k]);
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
            if (c->act)
                for (int64_t k = 0; k < c->inner; k++)
                    y[k] = BN_RELU(y[k]);
            continue;
        }
        float a = c->a[ch], b = c->b[ch];
        for (int64_t k0 = 0; k0 < c->inner; k0 += MP_BLOCK) {
            int64_t m = c->inner - k0 < MP_BLOCK ? c->inner - k0 : MP_BLOCK;
            mp_load_f32(c->dt, (const char *)c->x + (r * c->inner + k0) * (int64_t)es, buf, m);
            for (int64_t k = 0; k < m; k++)
                buf[k] = buf[k] * a + b;
            if (c->act)
                for (int64_t k = 0; k < m; k++)
                    buf[k] = BN_RELU(buf[k]);
            mp_store_f32(c->dt, buf, (char *)c->y + (r * c->inner + k0) * (int64_t)es, m);
        }
    }
}

mp_status mp_cpu_batch_norm(mp_device dev, mp_dtype dt, mp_dtype sdt, const void *x, const void *scale,
                            const void *offset, const void *mean, const void *var, double eps, void *y, int64_t outer,
                            int64_t C, int64_t inner, int act) {
    (void)dev;
    size_t ss = mp_dtype_size(sdt);
    void *ab = mp_cpu_scratch_alloc(2 * (size_t)C * ss + 64);
    if (!ab)
        return mp_error_set(MP_ERR_MEMORY, "out of memory for batch normalization factors");
    bn_ctx c = {dt, x, y, NULL, NULL, NULL, NULL, C, inner, act != 0};
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

/* ------------------------------------------------------------------ batch statistics */

/* Per-channel sums over (outer, C, inner) in float64, in a fixed split of the rows (the
 * same partial sums whatever the thread count: replay == eager bit for bit). */
enum { SUM_X = 0, SUM_SQDEV = 1, SUM_GRAD = 2, SUM_SHIFTED = 3 };
#define STAT_CHUNKS 64

typedef struct {
    int mode;
    mp_dtype dt, sdt;
    const void *x, *y;
    const double *m; /* (C) mean in float64 */
    int64_t outer, C, inner, per;
    double *part; /* channels last: (chunks, 2, C); channels first: (outer * C, 2) */
} sums_ctx;

static void acc_run(const sums_ctx *c, const char *x, const char *y, int64_t n, int64_t ch0, int64_t step_ch,
                    double *s0, double *s1) {
    /* n values starting at channel ch0; channel advances by step_ch per value (1: channels
     * last, 0: one channel) */
    size_t es = mp_dtype_size(c->dt);
    float bx[MP_BLOCK], by[MP_BLOCK];
    for (int64_t i0 = 0; i0 < n; i0 += MP_BLOCK) {
        int64_t m = n - i0 < MP_BLOCK ? n - i0 : MP_BLOCK;
        const char *xp = x + i0 * (int64_t)es, *yp = y ? y + i0 * (int64_t)es : NULL;
        if (c->dt == MP_F64) {
            const double *xd = (const double *)xp, *yd = (const double *)yp;
            for (int64_t i = 0; i < m; i++) {
                int64_t ch = ch0 + (i0 + i) * step_ch;
                double v = xd[i];
                if (c->mode == SUM_X)
                    s0[ch * step_ch] += v;
                else if (c->mode == SUM_SQDEV)
                    s0[ch * step_ch] += (v - c->m[ch]) * (v - c->m[ch]);
                else {
                    s0[ch * step_ch] += yd[i];
                    s1[ch * step_ch] += yd[i] * (v - c->m[ch]);
                }
            }
            continue;
        }
        mp_load_f32(c->dt, xp, bx, m);
        if (yp)
            mp_load_f32(c->dt, yp, by, m);
        if (c->mode == SUM_SHIFTED) { /* sums of d and d^2, d = x - K (K: the channel's first value) */
            if (step_ch) {
                const double *K = c->m + ch0 + i0;
                double *a0 = s0 + ch0 + i0, *a1 = s1 + ch0 + i0;
                for (int64_t i = 0; i < m; i++) {
                    double d = (double)bx[i] - K[i];
                    a0[i] += d;
                    a1[i] += d * d;
                }
            } else {
                double K = c->m[ch0], t0 = 0.0, t1 = 0.0;
                for (int64_t i = 0; i < m; i++) {
                    double d = (double)bx[i] - K;
                    t0 += d;
                    t1 += d * d;
                }
                s0[0] += t0;
                s1[0] += t1;
            }
            continue;
        }
        if (step_ch && c->mode == SUM_GRAD) { /* channels last: one loop over contiguous channels,
                                                * each channel's sums in the same order (vectorizes) */
            const double *M = c->m + ch0 + i0;
            double *a0 = s0 + ch0 + i0, *a1 = s1 + ch0 + i0;
            for (int64_t i = 0; i < m; i++) {
                double g = by[i];
                a0[i] += g;
                a1[i] += g * ((double)bx[i] - M[i]);
            }
            continue;
        }
        for (int64_t i = 0; i < m; i++) {
            int64_t ch = ch0 + (i0 + i) * step_ch;
            double v = bx[i];
            if (c->mode == SUM_X)
                s0[ch * step_ch] += v;
            else if (c->mode == SUM_SQDEV)
                s0[ch * step_ch] += (v - c->m[ch]) * (v - c->m[ch]);
            else {
                s0[ch * step_ch] += by[i];
                s1[ch * step_ch] += by[i] * (v - c->m[ch]);
            }
        }
    }
}

static void sums_chunks(void *vctx, int64_t b, int64_t e) {
    const sums_ctx *c = vctx;
    size_t es = mp_dtype_size(c->dt);
    const char *x = c->x, *y = c->y;
    if (c->inner == 1) { /* chunk k: rows [k * per, (k + 1) * per) of C channels */
        for (int64_t k = b; k < e; k++) {
            double *s0 = c->part + k * 2 * c->C, *s1 = s0 + c->C;
            int64_t r0 = k * c->per, r1 = r0 + c->per < c->outer ? r0 + c->per : c->outer;
            for (int64_t r = r0; r < r1; r++)
                acc_run(c, x + r * c->C * (int64_t)es, y ? y + r * c->C * (int64_t)es : NULL, c->C, 0, 1, s0, s1);
        }
        return;
    }
    for (int64_t r = b; r < e; r++) { /* row r = (o, ch): inner values of one channel */
        double *s = c->part + r * 2;
        int64_t off = r * c->inner * (int64_t)es;
        acc_run(c, x + off, y ? y + off : NULL, c->inner, r % c->C, 0, s, s + 1);
    }
}

/* out0[ch] (and out1) = the per-channel sums of mode */
static mp_status chan_sums(sums_ctx *c, double *out0, double *out1) {
    int64_t C = c->C;
    int last = c->inner == 1;
    if (c->outer == 0 || c->inner == 0) { /* sums over nothing */
        for (int64_t ch = 0; ch < C; ch++)
            out0[ch] = out1[ch] = 0.0;
        return MP_OK;
    }
    int64_t chunks = last ? (c->outer < STAT_CHUNKS ? c->outer : STAT_CHUNKS) : c->outer * C;
    if (chunks < 1)
        chunks = 1;
    c->per = last ? (c->outer + chunks - 1) / chunks : 0;
    size_t bytes = (size_t)(last ? chunks * 2 * C : chunks * 2) * sizeof(double);
    c->part = mp_cpu_scratch_alloc(bytes);
    if (!c->part)
        return mp_error_set(MP_ERR_MEMORY, "out of memory for batch statistics");
    memset(c->part, 0, bytes);
    int64_t work = last ? c->per * C : c->inner;
    mp_parallel_for(chunks, work >= MP_GRAIN ? 1 : MP_GRAIN / (work ? work : 1), sums_chunks, c);
    for (int64_t ch = 0; ch < C; ch++)
        out0[ch] = out1[ch] = 0.0;
    if (last) {
        for (int64_t k = 0; k < chunks; k++)
            for (int64_t ch = 0; ch < C; ch++) {
                out0[ch] += c->part[k * 2 * C + ch];
                out1[ch] += c->part[k * 2 * C + C + ch];
            }
    } else {
        for (int64_t r = 0; r < chunks; r++) {
            out0[r % C] += c->part[2 * r];
            out1[r % C] += c->part[2 * r + 1];
        }
    }
    mp_cpu_scratch_free(c->part, bytes);
    return MP_OK;
}

static void put_stat(mp_dtype sdt, void *out, int64_t i, double v) {
    if (sdt == MP_F64)
        ((double *)out)[i] = v;
    else
        ((float *)out)[i] = (float)v;
}

static double get_stat(mp_dtype sdt, const void *p, int64_t i) {
    return sdt == MP_F64 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

typedef struct {
    mp_dtype dt;
    const void *x;
    void *out;
    const double *a, *b, *m; /* out = b + a (x - m) per channel */
    int64_t C, inner;
} mgrad_ctx;

static void mgrad_rows(void *vctx, int64_t r0, int64_t r1) {
    const mgrad_ctx *c = vctx;
    size_t es = mp_dtype_size(c->dt);
    int last = c->inner == 1;
    int64_t len = last ? c->C : c->inner;
    float buf[MP_BLOCK];
    for (int64_t r = r0; r < r1; r++) {
        const char *x = (const char *)c->x + r * len * (int64_t)es;
        char *o = (char *)c->out + r * len * (int64_t)es;
        for (int64_t i0 = 0; i0 < len; i0 += MP_BLOCK) {
            int64_t n = len - i0 < MP_BLOCK ? len - i0 : MP_BLOCK;
            if (c->dt == MP_F64) {
                const double *xd = (const double *)x + i0;
                double *od = (double *)o + i0;
                for (int64_t i = 0; i < n; i++) {
                    int64_t ch = last ? i0 + i : r % c->C;
                    od[i] = c->b[ch] + c->a[ch] * (xd[i] - c->m[ch]);
                }
                continue;
            }
            mp_load_f32(c->dt, x + i0 * (int64_t)es, buf, n);
            if (last) { /* contiguous channels: the same arithmetic as one loop that vectorizes */
                const double *A = c->a + i0, *B = c->b + i0, *M = c->m + i0;
                for (int64_t i = 0; i < n; i++)
                    buf[i] = (float)(B[i] + A[i] * ((double)buf[i] - M[i]));
            } else {
                int64_t ch = r % c->C;
                double A = c->a[ch], B = c->b[ch], M = c->m[ch];
                for (int64_t i = 0; i < n; i++)
                    buf[i] = (float)(B + A * ((double)buf[i] - M));
            }
            mp_store_f32(c->dt, buf, o + i0 * (int64_t)es, n);
        }
    }
}

static int two_pass; /* mp_cpu_moments_two_pass: the two reads for every dtype (A/B, tests) */

int mp_cpu_moments_two_pass(int on) { return __atomic_exchange_n(&two_pass, on != 0, __ATOMIC_RELAXED); }

mp_status mp_cpu_batch_stats(mp_device dev, mp_stats_kind k, mp_dtype dt, mp_dtype sdt, const void *x, const void *y,
                             const void *mean, const void *g, void *out, int64_t outer, int64_t C, int64_t inner) {
    (void)dev;
    size_t bytes = (size_t)(5 * C + 1) * sizeof(double);
    double *w = mp_cpu_scratch_alloc(bytes);
    if (!w)
        return mp_error_set(MP_ERR_MEMORY, "out of memory for batch statistics");
    double *m = w, *s0 = w + C, *s1 = w + 2 * C, *a = w + 3 * C, *b = w + 4 * C;
    double N = (double)outer * (double)inner;
    sums_ctx c = {SUM_X, dt, sdt, x, NULL, m, outer, C, inner, 0, NULL};
    mp_status st = MP_OK;
    if (k == MP_STATS_MOMENTS && dt != MP_F64 && N > 0 && !__atomic_load_n(&two_pass, __ATOMIC_RELAXED)) {
        /* one read: sums of d = x - K and d^2 in float64 with K the channel's first value, so
         * mean = K + S1/N and var = S2/N - (S1/N)^2 lose nothing a float32 result keeps (K is
         * a sample, |mean - K| ~ the standard deviation); float64 data keeps the two reads */
        size_t es = mp_dtype_size(dt);
        float kv;
        for (int64_t ch = 0; ch < C; ch++) {
            mp_load_f32(dt, (const char *)x + (inner == 1 ? ch : ch * inner) * (int64_t)es, &kv, 1);
            m[ch] = (double)kv;
        }
        c.mode = SUM_SHIFTED;
        if ((st = chan_sums(&c, s0, s1)) != MP_OK)
            goto out;
        int finite = 1;
        for (int64_t ch = 0; ch < C; ch++)
            finite &= isfinite(m[ch]) && isfinite(s0[ch]) && isfinite(s1[ch]);
        if (finite) {
            for (int64_t ch = 0; ch < C; ch++) {
                double d = s0[ch] / N, v = s1[ch] / N - d * d;
                put_stat(sdt, out, ch, m[ch] + d);
                put_stat(sdt, out, C + ch, v < 0 ? 0.0 : v);
            }
            goto out;
        }
        c.mode = SUM_X; /* inf or NaN in x: the two reads, whose inf and NaN results TensorFlow's match */
    }
    if (k == MP_STATS_MOMENTS && c.mode == SUM_X) {
        if ((st = chan_sums(&c, s0, s1)) != MP_OK)
            goto out;
        for (int64_t ch = 0; ch < C; ch++)
            m[ch] = N > 0 ? s0[ch] / N : NAN;
        c.mode = SUM_SQDEV;
        if ((st = chan_sums(&c, s0, s1)) != MP_OK)
            goto out;
        for (int64_t ch = 0; ch < C; ch++) {
            put_stat(sdt, out, ch, m[ch]);
            put_stat(sdt, out, C + ch, N > 0 ? s0[ch] / N : NAN);
        }
    } else if (k == MP_STATS_GRAD_SUMS) {
        for (int64_t ch = 0; ch < C; ch++)
            m[ch] = get_stat(sdt, mean, ch);
        c.mode = SUM_GRAD;
        c.y = y;
        if ((st = chan_sums(&c, s0, s1)) != MP_OK)
            goto out;
        for (int64_t ch = 0; ch < C; ch++) {
            put_stat(sdt, out, ch, s0[ch]);
            put_stat(sdt, out, C + ch, s1[ch]);
        }
    } else {
        for (int64_t ch = 0; ch < C; ch++) {
            m[ch] = get_stat(sdt, mean, ch);
            b[ch] = get_stat(sdt, g, ch) / N;
            a[ch] = 2.0 * get_stat(sdt, g, C + ch) / N;
        }
        mgrad_ctx mc = {dt, x, out, a, b, m, C, inner};
        int64_t rows = inner == 1 ? outer : outer * C, len = inner == 1 ? C : inner;
        mp_parallel_for(rows, len >= MP_GRAIN ? 1 : MP_GRAIN / (len ? len : 1), mgrad_rows, &mc);
    }
out:
    mp_cpu_scratch_free(w, bytes);
    return st;
}
