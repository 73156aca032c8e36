/* window_ref.c — direct (loop) convolution and pooling in float64 on the CPU.
 * Owns the float64 path of the conv/pool backend slots (oneDNN has no float64) and the
 * fallback for shapes oneDNN refuses (callers widen to float64 and narrow once).
 * It must not allocate tensors or validate shapes: ops.c has resolved the mp_window. */
#include <math.h>
#include <string.h>

#include "cpu_kernels.h"
#include "window_ref.h"

static inline int64_t at(const mp_window *w, int64_t n, int64_t c, int64_t y, int64_t x, int64_t C, int64_t H,
                         int64_t W) {
    return w->nchw ? ((n * C + c) * H + y) * W + x : ((n * H + y) * W + x) * C + c;
}

typedef struct {
    const mp_window *w;
    const double *a, *b;
    double *out;
    int kind;
    double lowest; /* max pooling's start value: the result of a window of NaNs */
} job;

/* forward and backward data: one image per task. Both walk the same nest (image, output
 * pixel, output channel, valid tap); forward gathers out[o] = sum x * w, backward data
 * scatters dx += dy[o] * w into the task's own image. Forward: a = x, b = filter;
 * backward data: a = filter, b = dy. */
static void conv_fwd_or_bwd_data(void *ctx, int64_t n0, int64_t n1) {
    const job *j = ctx;
    const mp_window *w = j->w;
    const int fwd = j->kind == MP_CONV_FWD;
    const double *filt = fwd ? j->b : j->a; /* (kh, kw, c / groups, oc) */
    int64_t icg = w->c / w->groups, ocg = w->oc / w->groups;
    for (int64_t n = n0; n < n1; n++)
        for (int64_t oy = 0; oy < w->oh; oy++)
            for (int64_t ox = 0; ox < w->ow; ox++)
                for (int64_t o = 0; o < w->oc; o++) {
                    int64_t g = o / ocg;
                    int64_t oi = at(w, n, o, oy, ox, w->oc, w->oh, w->ow);
                    double acc = 0, d = fwd ? 0 : j->b[oi];
                    for (int64_t ky = 0; ky < w->kh; ky++) {
                        int64_t iy = oy * w->sh - w->pt + ky * w->dh;
                        if (iy < 0 || iy >= w->h)
                            continue;
                        for (int64_t kx = 0; kx < w->kw; kx++) {
                            int64_t ix = ox * w->sw - w->pl + kx * w->dw;
                            if (ix < 0 || ix >= w->w)
                                continue;
                            for (int64_t i = 0; i < icg; i++) {
                                int64_t xi = at(w, n, g * icg + i, iy, ix, w->c, w->h, w->w);
                                double f = filt[((ky * w->kw + kx) * icg + i) * w->oc + o];
                                if (fwd)
                                    acc += j->a[xi] * f;
                                else
                                    j->out[xi] += d * f;
                            }
                        }
                    }
                    if (fwd)
                        j->out[oi] = acc;
                }
}

/* backward filter: one (ky, kx) filter tap per task */
static void conv_bwd_filter(void *ctx, int64_t t0, int64_t t1) {
    const job *j = ctx;
    const mp_window *w = j->w;
    int64_t icg = w->c / w->groups, ocg = w->oc / w->groups;
    for (int64_t t = t0; t < t1; t++) {
        int64_t ky = t / w->kw, kx = t % w->kw;
        double *dw = j->out + t * icg * w->oc;
        for (int64_t n = 0; n < w->n; n++)
            for (int64_t oy = 0; oy < w->oh; oy++) {
                int64_t iy = oy * w->sh - w->pt + ky * w->dh;
                if (iy < 0 || iy >= w->h)
                    continue;
                for (int64_t ox = 0; ox < w->ow; ox++) {
                    int64_t ix = ox * w->sw - w->pl + kx * w->dw;
                    if (ix < 0 || ix >= w->w)
                        continue;
                    for (int64_t o = 0; o < w->oc; o++) {
                        int64_t g = o / ocg;
                        double d = j->b[at(w, n, o, oy, ox, w->oc, w->oh, w->ow)];
                        for (int64_t i = 0; i < icg; i++)
                            dw[i * w->oc + o] += d * j->a[at(w, n, g * icg + i, iy, ix, w->c, w->h, w->w)];
                    }
                }
            }
    }
}

mp_status mp_ref_conv_f64(mp_conv_kind k, const mp_window *w, const double *a, const double *b, double *out) {
    job j = {w, a, b, out, (int)k, 0.0};
    if (k == MP_CONV_FWD) {
        mp_parallel_for(w->n, 1, conv_fwd_or_bwd_data, &j);
    } else if (k == MP_CONV_BWD_DATA) {
        memset(out, 0, (size_t)(w->n * w->c * w->h * w->w) * sizeof(double));
        mp_parallel_for(w->n, 1, conv_fwd_or_bwd_data, &j);
    } else {
        memset(out, 0, (size_t)(w->kh * w->kw * (w->c / w->groups) * w->oc) * sizeof(double));
        mp_parallel_for(w->kh * w->kw, 1, conv_bwd_filter, &j);
    }
    return MP_OK;
}

/* pooling: one (image, channel) plane per task */
static void pool_plane(void *ctx, int64_t p0, int64_t p1) {
    const job *j = ctx;
    const mp_window *w = j->w;
    for (int64_t p = p0; p < p1; p++) {
        int64_t n = p / w->c, c = p % w->c;
        for (int64_t oy = 0; oy < w->oh; oy++)
            for (int64_t ox = 0; ox < w->ow; ox++) {
                int64_t y0 = oy * w->sh - w->pt, x0 = ox * w->sw - w->pl;
                int64_t ya = y0 < 0 ? 0 : y0, yb = y0 + w->kh > w->h ? w->h : y0 + w->kh;
                int64_t xa = x0 < 0 ? 0 : x0, xb = x0 + w->kw > w->w ? w->w : x0 + w->kw;
                int64_t oi = at(w, n, c, oy, ox, w->c, w->oh, w->ow);
                if (j->kind == MP_POOL_MAX || j->kind == MP_POOL_MAX_BWD || j->kind == MP_POOL_MAX_GRADGRAD) {
                    /* TensorFlow 2.21's three rules (CPU, measured): NaN never beats a value.
                     * MaxPool starts from the dtype's lowest value (a window of NaNs gives
                     * it); MaxPoolGrad starts from the window's first element, so a NaN there
                     * takes the gradient; MaxPoolGradGrad starts from nothing, and a window
                     * with no value above -inf gathers 0. */
                    const int bwd = j->kind == MP_POOL_MAX_BWD;
                    double best = j->kind == MP_POOL_MAX ? j->lowest : -INFINITY;
                    int64_t bi = -1;
                    for (int64_t y = ya; y < yb; y++)
                        for (int64_t x = xa; x < xb; x++) {
                            int64_t ii = at(w, n, c, y, x, w->c, w->h, w->w);
                            double v = j->a[ii];
                            if (v > best || (bwd && bi < 0)) {
                                best = v;
                                bi = ii;
                            }
                        }
                    if (j->kind == MP_POOL_MAX)
                        j->out[oi] = best;
                    else if (j->kind == MP_POOL_MAX_GRADGRAD)
                        j->out[oi] = bi >= 0 ? j->b[bi] : 0.0;
                    else if (bi >= 0)
                        j->out[bi] += j->b[oi];
                } else {
                    double cnt = (double)((yb - ya) * (xb - xa));
                    if (cnt <= 0) {
                        if (j->kind == MP_POOL_AVG)
                            j->out[oi] = 0;
                        continue;
                    }
                    if (j->kind == MP_POOL_AVG) {
                        double s = 0;
                        for (int64_t y = ya; y < yb; y++)
                            for (int64_t x = xa; x < xb; x++)
                                s += j->a[at(w, n, c, y, x, w->c, w->h, w->w)];
                        j->out[oi] = s / cnt;
                    } else {
                        double d = j->b[oi] / cnt;
                        for (int64_t y = ya; y < yb; y++)
                            for (int64_t x = xa; x < xb; x++)
                                j->out[at(w, n, c, y, x, w->c, w->h, w->w)] += d;
                    }
                }
            }
    }
}

mp_status mp_ref_pool_f64(mp_pool_kind k, const mp_window *w, const double *a, const double *b, double *out,
                          double lowest) {
    job j = {w, a, b, out, (int)k, lowest};
    if (k == MP_POOL_MAX_BWD || k == MP_POOL_AVG_BWD)
        memset(out, 0, (size_t)(w->n * w->c * w->h * w->w) * sizeof(double));
    /* a task owns whole (image, channel) planes, so its writes are disjoint in both layouts */
    mp_parallel_for(w->n * w->c, 1, pool_plane, &j);
    return MP_OK;
}

/* Is the first element (padding excluded) of some max-pooling window NaN? There
 * MaxPoolGrad's rule (above) differs from oneDNN's, which skips the NaN. Reads one element
 * per window and channel (a quarter of x for 2x2 windows of stride 2), images in parallel. */
typedef struct {
    mp_dtype dt;
    const mp_window *w;
    const void *x;
    int found;
} nan_job;

static void first_nan_images(void *ctx, int64_t n0, int64_t n1) {
    nan_job *j = ctx;
    const mp_window *w = j->w;
    mp_dtype dt = j->dt;
    const void *x = j->x;
    size_t es = mp_dtype_size(dt);
    for (int64_t n = n0; n < n1 && !__atomic_load_n(&j->found, __ATOMIC_RELAXED); n++)
        for (int64_t oy = 0; oy < w->oh; oy++)
            for (int64_t ox = 0; ox < w->ow; ox++) {
                int64_t y0 = oy * w->sh - w->pt, x0 = ox * w->sw - w->pl;
                int64_t y = y0 < 0 ? 0 : y0, xx = x0 < 0 ? 0 : x0;
                if (y >= w->h || xx >= w->w)
                    continue;
                int64_t i0 = at(w, n, 0, y, xx, w->c, w->h, w->w), step = w->nchw ? w->h * w->w : 1;
                int nan = 0; /* on the bits: integer tests vectorize, float self-compares do not */
                if (dt == MP_F32) {
                    const uint32_t *p = (const uint32_t *)x + i0;
                    if (step == 1)
                        for (int64_t c = 0; c < w->c; c++)
                            nan |= (p[c] & 0x7fffffffu) > 0x7f800000u;
                    else
                        for (int64_t c = 0; c < w->c; c++)
                            nan |= (p[c * step] & 0x7fffffffu) > 0x7f800000u;
                } else if (dt == MP_F64) {
                    const double *p = (const double *)x + i0;
                    for (int64_t c = 0; c < w->c; c++)
                        nan |= p[c * step] != p[c * step];
                } else if (es == 2) { /* exponent all ones, mantissa not zero */
                    const uint16_t *p = (const uint16_t *)x + i0;
                    uint16_t e = dt == MP_BF16 ? 0x7f80 : 0x7c00;
                    if (step == 1)
                        for (int64_t c = 0; c < w->c; c++)
                            nan |= (p[c] & 0x7fff) > e;
                    else
                        for (int64_t c = 0; c < w->c; c++)
                            nan |= (p[c * step] & 0x7fff) > e;
                }
                if (nan) {
                    __atomic_store_n(&j->found, 1, __ATOMIC_RELAXED);
                    return;
                }
            }
}

int mp_ref_pool_first_nan(mp_dtype dt, const mp_window *w, const void *x) {
    nan_job j = {dt, w, x, 0};
    mp_parallel_for(w->n, 1, first_nan_images, &j);
    return j.found;
}
