/* projective_math.h — the arithmetic of ImageProjectiveTransformV3 shared by the CPU kernel
 * (cpu_projective.c) and the CUDA one (cuda/projective.cu): where an output pixel samples
 * the input (TensorFlow's float32 formulas), the fill modes' coordinate mapping and the
 * interpolation taps. It reads no tensor: a kernel loads the taps and blends them. */
#ifndef MP_PROJECTIVE_MATH_H
#define MP_PROJECTIVE_MATH_H
#include <math.h>
#include <stdint.h>

#include "mp_hd.h"

/* fill modes (attrs i1) and interpolations (attrs i0) of the op, TensorFlow's order */
enum { MP_FILL_REFLECT = 0, MP_FILL_WRAP = 1, MP_FILL_CONSTANT = 2, MP_FILL_NEAREST = 3 };
enum { MP_INTERP_NEAREST = 0, MP_INTERP_BILINEAR = 1 };

MP_HD float mp_pt_clamp(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* An input coordinate outside [0, len - 1] brought back by the fill mode (constant leaves it:
 * its taps outside the image read the fill value). NOTE: wrap divides by len - 1 and reflect
 * by 2 len, with integer truncation, exactly as TensorFlow's kernel does. */
MP_HD float mp_pt_map(float c, int64_t len, int mode) {
    if (mode == MP_FILL_CONSTANT)
        return c;
    if (mode == MP_FILL_NEAREST)
        return mp_pt_clamp(c, 0.f, (float)(len - 1));
    if (c < 0.f) {
        if (len <= 1) {
            c = 0.f;
        } else if (mode == MP_FILL_REFLECT) {
            float sz2 = (float)(2 * len);
            if (c < -sz2)
                c = sz2 * (float)(int64_t)(-c / sz2) + c;
            c = c < (float)-len ? c + sz2 : -c - 1.f;
        } else {
            float sz = (float)(len - 1);
            c += (float)len * (float)((int64_t)(-c / sz) + 1);
        }
    } else if (c > (float)(len - 1)) {
        if (len <= 1) {
            c = 0.f;
        } else if (mode == MP_FILL_REFLECT) {
            float sz2 = (float)(2 * len);
            c -= sz2 * (float)(int64_t)(c / sz2);
            if (c >= (float)len)
                c = sz2 - c - 1.f;
        } else {
            float sz = (float)(len - 1);
            c -= (float)len * (float)(int64_t)(c / sz);
        }
    }
    return mp_pt_clamp(c, 0.f, (float)(len - 1));
}

/* The taps of output pixel (oy, ox) under transform t[8]: up to four input offsets
 * (row * w + col, or -1 for "the fill value") with weights; returns the tap count (0: the
 * projection's denominator is 0 and the pixel is the fill value). Bilinear taps come in
 * TensorFlow's order (y0x0, y0x1, y1x0, y1x1) and are blended by mp_pt_blend. */
MP_HD int mp_pt_taps(const float *t, int64_t oy, int64_t ox, int64_t h, int64_t w, int interp, int mode,
                     int64_t *off, float *wt) {
    float x = (float)ox, y = (float)oy;
    float k = t[6] * x + t[7] * y + 1.f;
    if (k == 0.f)
        return 0;
    float ix = mp_pt_map((t[0] * x + t[1] * y + t[2]) / k, w, mode);
    float iy = mp_pt_map((t[3] * x + t[4] * y + t[5]) / k, h, mode);
    if (interp == MP_INTERP_NEAREST) {
        int64_t r = (int64_t)roundf(iy), c = (int64_t)roundf(ix);
        off[0] = (r < 0 || r >= h || c < 0 || c >= w) ? -1 : r * w + c;
        wt[0] = 1.f;
        return 1;
    }
    float y0 = floorf(iy), x0 = floorf(ix), y1 = y0 + 1.f, x1 = x0 + 1.f;
    float ys[2] = {y0, y1}, xs[2] = {x0, x1};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            int64_t r = (int64_t)ys[a], c = (int64_t)xs[b];
            off[a * 2 + b] = (ys[a] < 0.f || r >= h || xs[b] < 0.f || c >= w) ? -1 : r * w + c;
        }
    wt[0] = x1 - ix; /* x weights */
    wt[1] = ix - x0;
    wt[2] = y1 - iy; /* y weights */
    wt[3] = iy - y0;
    return 4;
}

/* The output value from the loaded taps v[] (fill value already in place of -1 taps). */
MP_HD float mp_pt_blend(int n, const float *v, const float *wt) {
    if (n == 1)
        return v[0];
    float top = wt[0] * v[0] + wt[1] * v[1];
    float bottom = wt[0] * v[2] + wt[1] * v[3];
    return wt[2] * top + wt[3] * bottom;
}
#endif
