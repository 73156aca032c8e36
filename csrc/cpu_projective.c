/* cpu_projective.c — the CPU's projective_transform slot (ImageProjectiveTransformV3):
 * each output pixel samples the input through projective_math.h (shared with CUDA), parallel
 * over output rows. Numbers only: shapes, dtypes and attributes are checked by ops_image.c. */
#include "cpu_kernels.h"
#include "mixprec.h"
#include "projective_math.h"
#include "scalar_cast.h"

typedef struct {
    mp_dtype dt;
    const void *x;      /* (b, h, w, c) */
    const float *t;     /* (tb, 8), tb 1 or b */
    void *y;            /* (b, oh, ow, c) */
    int64_t b, h, w, c, oh, ow, tb;
    int interp, mode;
    float fill;
} pt_ctx;

static float load(mp_dtype dt, const void *p, int64_t i) {
    switch (dt) {
    case MP_F16: return mp_cvt_f16_f32(((const uint16_t *)p)[i]);
    case MP_BF16: return mp_cvt_bf16_f32(((const uint16_t *)p)[i]);
    case MP_F64: return (float)((const double *)p)[i];
    default: return ((const float *)p)[i];
    }
}

static void store(mp_dtype dt, void *p, int64_t i, float v) {
    switch (dt) {
    case MP_F16: ((uint16_t *)p)[i] = mp_cvt_f32_f16(v); break;
    case MP_BF16: ((uint16_t *)p)[i] = mp_cvt_f32_bf16(v); break;
    case MP_F64: ((double *)p)[i] = (double)v; break;
    default: ((float *)p)[i] = v; break;
    }
}

/* rows [begin, end) of the (b * oh) output rows */
static void pt_rows(void *vctx, int64_t begin, int64_t end) {
    const pt_ctx *c = (const pt_ctx *)vctx;
    for (int64_t row = begin; row < end; row++) {
        int64_t n = row / c->oh, oy = row % c->oh;
        const float *t = c->t + (c->tb == 1 ? 0 : n) * 8;
        int64_t img = n * c->h * c->w;
        for (int64_t ox = 0; ox < c->ow; ox++) {
            int64_t off[4];
            float wt[4], v[4];
            int k = mp_pt_taps(t, oy, ox, c->h, c->w, c->interp, c->mode, off, wt);
            int64_t o = ((row * c->ow) + ox) * c->c;
            for (int64_t ch = 0; ch < c->c; ch++) {
                if (k == 0) {
                    store(c->dt, c->y, o + ch, c->fill);
                    continue;
                }
                for (int j = 0; j < k; j++)
                    v[j] = off[j] < 0 ? c->fill : load(c->dt, c->x, (img + off[j]) * c->c + ch);
                store(c->dt, c->y, o + ch, mp_pt_blend(k, v, wt));
            }
        }
    }
}

mp_status mp_cpu_projective_transform(mp_device dev, mp_dtype dt, const void *x, const float *t, void *y, int64_t b,
                                      int64_t h, int64_t w, int64_t c, int64_t oh, int64_t ow, int64_t tb, int interp,
                                      int fill_mode, double fill_value) {
    (void)dev;
    if (dt != MP_F32 && dt != MP_F16 && dt != MP_BF16 && dt != MP_F64)
        return mp_error_set(MP_ERR_INTERNAL, "projective_transform: dtype %s", mp_dtype_name(dt));
    double fill_t[1]; /* the fill value as TensorFlow uses it: converted to the images' dtype */
    store(dt, fill_t, 0, (float)fill_value);
    pt_ctx ctx = {dt, x, t, y, b, h, w, c, oh, ow, tb, interp, fill_mode, load(dt, fill_t, 0)};
    int64_t rows = b * oh;
    if (rows <= 0 || ow <= 0 || c <= 0)
        return MP_OK;
    mp_parallel_for(rows, MP_GRAIN / (ow * c * 8 + 1) + 1, pt_rows, &ctx);
    return MP_OK;
}
