/* elementwise_math.h — the formulas of the elementwise kernels that are more than one
 * operation (sigmoid, softplus, floor division and modulo, integer powers, the GELU family),
 * shared by the CPU backend (cpu_elementwise.c) and the CUDA kernels so both evaluate the
 * same expression in the same order. The libm calls inside resolve to glibc on the host and
 * to CUDA's libm on the device. */
#ifndef MP_ELEMENTWISE_MATH_H
#define MP_ELEMENTWISE_MATH_H
#include <math.h>
#include <stdint.h>

#include "mp_hd.h"

MP_HD float mp_sigmoid_f32(float x) {
    if (x >= 0.f)
        return 1.f / (1.f + expf(-x));
    float e = expf(x);
    return e / (1.f + e);
}
MP_HD double mp_sigmoid_f64(double x) {
    if (x >= 0.)
        return 1. / (1. + exp(-x));
    double e = exp(x);
    return e / (1. + e);
}
MP_HD float mp_softplus_f32(float x) { return fmaxf(x, 0.f) + log1pf(expf(-fabsf(x))); }
MP_HD double mp_softplus_f64(double x) { return fmax(x, 0.) + log1p(exp(-fabs(x))); }

/* Python's floor modulo: the result takes the divisor's sign. */
MP_HD float mp_floormod_f32(float a, float b) {
    float r = fmodf(a, b);
    if (r != 0.f && ((r < 0.f) != (b < 0.f)))
        r += b;
    return r;
}
MP_HD double mp_floormod_f64(double a, double b) {
    double r = fmod(a, b);
    if (r != 0. && ((r < 0.) != (b < 0.)))
        r += b;
    return r;
}

/* Integer power, floor division and floor modulo with two's-complement wrap-around; the
 * callers have refused a zero divisor and a negative exponent. */
MP_HD int64_t mp_ipow(int64_t base, int64_t e) {
    uint64_t r = 1, bb = (uint64_t)base;
    while (e > 0) {
        if (e & 1)
            r *= bb;
        bb *= bb;
        e >>= 1;
    }
    return (int64_t)r;
}
MP_HD int64_t mp_ifloordiv(int64_t x, int64_t z) {
    if (z == -1)
        return (int64_t)(0 - (uint64_t)x); /* INT64_MIN / -1 wraps instead of trapping */
    int64_t q = x / z;
    if ((x % z != 0) && ((x < 0) != (z < 0)))
        q--;
    return q;
}
MP_HD int64_t mp_ifloormod(int64_t x, int64_t z) {
    if (z == -1)
        return 0;
    int64_t r = x % z;
    if (r != 0 && ((r < 0) != (z < 0)))
        r += z;
    return r;
}

#define MP_SQRT_2_OVER_PI 0.79788456080286535588
#define MP_INV_SQRT_2 0.70710678118654752440
#define MP_INV_SQRT_2PI 0.39894228040143267794

/* GELU in double for every dtype (its inputs widened, its result rounded once). */
MP_HD double mp_gelu_f64(double x) { return 0.5 * x * (1. + erf(x * MP_INV_SQRT_2)); }
MP_HD double mp_gelu_tanh_f64(double x) {
    double u = MP_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x);
    return 0.5 * x * (1. + tanh(u));
}
MP_HD double mp_gelu_tanh_grad_f64(double x) {
    double u = MP_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x);
    double t = tanh(u);
    double du = MP_SQRT_2_OVER_PI * (1. + 3. * 0.044715 * x * x);
    return 0.5 * (1. + t) + 0.5 * x * (1. - t * t) * du;
}
MP_HD double mp_gelu_grad_f64(double x) {
    return 0.5 * (1. + erf(x * MP_INV_SQRT_2)) + x * MP_INV_SQRT_2PI * exp(-0.5 * x * x);
}
#include "special_math.h"
#endif
