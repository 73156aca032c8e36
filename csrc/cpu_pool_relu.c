/* cpu_pool_relu.c — the CPU's max_pool_grad_relu slot (backend.def): max pooling's gradient
 * masked by ReLU's, dx = ReluGrad(x, MaxPoolGrad(x, MaxPool(x), dy)), in one pass over dx
 * for float32 NHWC and windows that do not overlap (stride >= window, the CNN's 2x2/2).
 * It owns only that arithmetic (a selection: bit for bit the two ops'); other shapes and
 * dtypes answer *done = 0 and the op layer runs the two ops. No validation (ops did). */
#include <string.h>

#include "cpu_kernels.h"

#define PR_CH 256 /* channels per block of the per-window argmax */

typedef struct {
    const mp_window *w;
    const float *x, *dy;
    float *dx;
} pr_ctx;

/* window (b, oh, ow)'s channels [c0, c0 + m): dy to the first maximum (MaxPoolGrad's rule:
 * the first valid element starts, a later one replaces it only when greater, so a leading NaN
 * keeps it) when that maximum is > 0 (ReluGrad's mask; NaN is not), 0 to the rest. The first
 * maximum is the first element equal to it (a positive maximum's bits are unique; a maximum
 * <= 0 or NaN passes nothing): branch-free selects over channels, which vectorize. */
static inline __attribute__((always_inline)) void window_block(const pr_ctx *c, int64_t b, int64_t oh, int64_t ow, int64_t c0, int64_t m) {
    const mp_window *w = c->w;
    int64_t C = w->c, y0 = oh * w->sh - w->pt, x0 = ow * w->sw - w->pl;
    int64_t ya = y0 < 0 ? 0 : y0, yb = y0 + w->kh > w->h ? w->h : y0 + w->kh;
    int64_t xa = x0 < 0 ? 0 : x0, xb = x0 + w->kw > w->w ? w->w : x0 + w->kw;
    if (ya >= yb || xa >= xb)
        return;
    float best[PR_CH], gm[PR_CH];
    const float *__restrict p = c->x + ((b * w->h + ya) * w->w + xa) * C + c0;
    for (int64_t k = 0; k < m; k++)
        best[k] = p[k];
    for (int64_t y = ya; y < yb; y++)
        for (int64_t x = y == ya ? xa + 1 : xa; x < xb; x++) {
            p = c->x + ((b * w->h + y) * w->w + x) * C + c0;
            for (int64_t k = 0; k < m; k++)
                best[k] = p[k] > best[k] ? p[k] : best[k];
        }
    const float *__restrict g = c->dy + ((b * w->oh + oh) * w->ow + ow) * C + c0;
    for (int64_t k = 0; k < m; k++)
        gm[k] = best[k] > 0 ? g[k] : 0.0f;
    for (int64_t y = ya; y < yb; y++)
        for (int64_t x = xa; x < xb; x++) {
            p = c->x + ((b * w->h + y) * w->w + x) * C + c0;
            float *__restrict o = c->dx + ((b * w->h + y) * w->w + x) * C + c0;
            for (int64_t k = 0; k < m; k++) {
                int hit = p[k] == best[k];
                o[k] = hit ? gm[k] : 0.0f;
                gm[k] = hit ? 0.0f : gm[k];
            }
        }
}

/* one output row (b, oh): the input rows of its stride band [oh*sh - pt, (oh+1)*sh - pt)
 * (the first band from row 0, the last to the bottom), every element written once */
static inline __attribute__((always_inline)) void rows_body(void *vctx, int64_t t0, int64_t t1) {
    const pr_ctx *c = vctx;
    const mp_window *w = c->w;
    int64_t C = w->c;
    for (int64_t t = t0; t < t1; t++) {
        int64_t b = t / w->oh, oh = t % w->oh;
        int64_t r0 = oh * w->sh - w->pt;
        int64_t rlo = oh == 0 ? 0 : r0, rhi = oh == w->oh - 1 ? w->h : r0 + w->sh;
        if (rhi > w->h)
            rhi = w->h;
        for (int64_t y = rlo; y < rhi; y++) {
            float *row = c->dx + (b * w->h + y) * w->w * C;
            if (y - r0 >= w->kh) { /* between windows or below the last: no gradient */
                memset(row, 0, (size_t)(w->w * C) * sizeof(float));
                continue;
            }
            for (int64_t ow = 0; ow < w->ow; ow++) { /* the columns of the band no window covers */
                int64_t q0 = ow * w->sw - w->pl;
                int64_t qlo = q0 + w->kw < 0 ? 0 : q0 + w->kw, qhi = ow == w->ow - 1 ? w->w : q0 + w->sw;
                if (ow == 0 && q0 > 0)
                    memset(row, 0, (size_t)(q0 * C) * sizeof(float));
                if (qhi > w->w)
                    qhi = w->w;
                if (qlo < qhi)
                    memset(row + qlo * C, 0, (size_t)((qhi - qlo) * C) * sizeof(float));
            }
        }
        for (int64_t ow = 0; ow < w->ow; ow++)
            for (int64_t c0 = 0; c0 < C; c0 += PR_CH)
                window_block(c, b, oh, ow, c0, C - c0 < PR_CH ? C - c0 : PR_CH);
    }
}

static void pr_rows(void *vctx, int64_t t0, int64_t t1) { rows_body(vctx, t0, t1); }

#if defined(__x86_64__) && defined(__GNUC__)
/* the same selects in 8 lanes where the CPU has AVX2 (no arithmetic: the same bits) */
__attribute__((target("avx2"))) static void pr_rows_avx2(void *vctx, int64_t t0, int64_t t1) {
    rows_body(vctx, t0, t1);
}
static int has_avx2(void) {
    static int has = -1; /* racing first callers compute the same answer */
    int h = __atomic_load_n(&has, __ATOMIC_RELAXED);
    if (h < 0) {
        __builtin_cpu_init();
        h = __builtin_cpu_supports("avx2") != 0;
        __atomic_store_n(&has, h, __ATOMIC_RELAXED);
    }
    return h;
}
#else
#define pr_rows_avx2 pr_rows
static int has_avx2(void) { return 0; }
#endif

mp_status mp_cpu_max_pool_grad_relu(mp_device dev, mp_dtype dt, const mp_window *w, const void *x, const void *dy,
                                    void *dx, int *done) {
    (void)dev;
    *done = 0;
    if (dt != MP_F32 || w->nchw || w->kh > w->sh || w->kw > w->sw || w->pt < 0 || w->pl < 0 || w->pt >= w->sh ||
        w->pl >= w->sw || w->n <= 0 || w->oh <= 0 || w->ow <= 0 || w->c <= 0 || w->h <= 0 || w->w <= 0 ||
        (w->oh - 1) * w->sh - w->pt >= w->h || (w->ow - 1) * w->sw - w->pl >= w->w)
        return MP_OK;
    if (!x) { /* the query */
        *done = 1;
        return MP_OK;
    }
    pr_ctx c = {w, x, dy, dx};
    int64_t band = w->sh * w->w * w->c;
    mp_parallel_for(w->n * w->oh, band >= MP_GRAIN ? 1 : MP_GRAIN / band, has_avx2() ? pr_rows_avx2 : pr_rows, &c);
    *done = 1;
    return MP_OK;
}
