// projective.cu — the projective_transform slot (ImageProjectiveTransformV3) on the GPU: one
// thread per output pixel, its taps from projective_math.h (the CPU's formulas), blended in
// float32 and rounded once to the images' dtype. Shapes arrive checked by ops_image.c.
#include "kernels.cuh"
#include "projective_math.h"

template <int DT>
static __global__ void projective_kernel(const void *x, const float *t, void *y, int64_t b, int64_t h, int64_t w,
                                         int64_t c, int64_t oh, int64_t ow, int64_t tb, int interp, int mode,
                                         float fill) {
    typedef mp_dt<DT> D;
    const typename D::T *in = (const typename D::T *)x;
    typename D::T *o = (typename D::T *)y;
    MP_GRID_STRIDE(p, b * oh * ow) {
        int64_t n = p / (oh * ow), oy = (p / ow) % oh, ox = p % ow;
        int64_t off[4];
        float wt[4], v[4];
        int k = mp_pt_taps(t + (tb == 1 ? 0 : n) * 8, oy, ox, h, w, interp, mode, off, wt);
        int64_t img = n * h * w;
        for (int64_t ch = 0; ch < c; ch++) {
            if (k == 0) {
                D::store(o, p * c + ch, fill);
                continue;
            }
            for (int j = 0; j < k; j++)
                v[j] = off[j] < 0 ? fill : (float)D::load(in, (img + off[j]) * c + ch);
            D::store(o, p * c + ch, mp_pt_blend(k, v, wt));
        }
    }
}

// the fill value as the images' dtype holds it (TensorFlow converts it before blending)
template <int DT> static float fill_as(float f);
template <> float fill_as<MP_F32>(float f) { return f; }
template <> float fill_as<MP_F64>(float f) { return f; }
template <> float fill_as<MP_F16>(float f) { return mp_cvt_f16_f32(mp_cvt_f32_f16(f)); }
template <> float fill_as<MP_BF16>(float f) { return mp_cvt_bf16_f32(mp_cvt_f32_bf16(f)); }

template <int DT>
static mp_status projective_launch(mp_cuda_ctx *cx, const void *x, const float *t, void *y, int64_t b, int64_t h,
                                   int64_t w, int64_t c, int64_t oh, int64_t ow, int64_t tb, int interp, int mode,
                                   double fill) {
    projective_kernel<DT><<<mp_cuda_grid(cx, b * oh * ow), MP_THREADS, 0, cx->stream>>>(
        x, t, y, b, h, w, c, oh, ow, tb, interp, mode, fill_as<DT>((float)fill));
    MP_LAUNCH_CHECK();
    return MP_OK;
}

extern "C" mp_status mp_cuda_projective_transform(mp_device dev, mp_dtype dt, const void *x, const float *t, void *y,
                                                  int64_t b, int64_t h, int64_t w, int64_t c, int64_t oh, int64_t ow,
                                                  int64_t tb, int interp, int fill_mode, double fill_value) {
    mp_cuda_ctx *cx;
    if (b <= 0 || oh <= 0 || ow <= 0 || c <= 0)
        return MP_OK;
    MP_TRY(mp_cuda_ctx_get(dev, &cx));
    MP_SWITCH_FLOAT(dt, projective_launch, cx, x, t, y, b, h, w, c, oh, ow, tb, interp, fill_mode, fill_value)
    return MP_CUDA_FAIL(MP_ERR_INTERNAL, "projective_transform: dtype %d", (int)dt);
}
