/* vecmath.c — exp over arrays through glibc's vector math library (libmvec), used by the
 * CPU kernels whose time is exp: the exp op, softmax/log_softmax and the softmax
 * cross-entropy. Compiled with -mavx2 -mfma (this file only, x86-64) and taken only after
 * a run-time AVX2 check; elsewhere, or without libmvec, the scalar libm loop.
 * NOTE: libmvec's AVX2 expf is within 2 ulp of glibc's scalar expf (measured on every
 * 2^16 random input in [-20, 20]; NaN, ±inf, overflow and underflow equal); the float32
 * "transcendental" row of src/mixprec/testing/tolerances.py allows 8. Every element, the
 * tail of a call included (padded into one vector), goes through the vector routine, so
 * a result depends only on its input, never on how the work was split across threads. */
#include <math.h>
#include <stdint.h>

#include "cpu_kernels.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(MIXPREC_HAVE_LIBMVEC)
#include <immintrin.h>

/* libmvec's AVX2 entry points (glibc >= 2.22), named by the x86-64 vector ABI. */
__m256 _ZGVdN8v_expf(__m256 x);
__m256d _ZGVdN4v_exp(__m256d x);

static int have_avx2(void) {
    static int cached = -1;
    if (cached < 0) {
        __builtin_cpu_init();
        cached = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return cached;
}

void mp_vexpf(const float *x, float *y, int64_t n) {
    if (!have_avx2()) {
        for (int64_t i = 0; i < n; i++)
            y[i] = expf(x[i]);
        return;
    }
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _ZGVdN8v_expf(_mm256_loadu_ps(x + i)));
    if (i < n) {
        float t[8] = {0};
        for (int64_t j = i; j < n; j++)
            t[j - i] = x[j];
        _mm256_storeu_ps(t, _ZGVdN8v_expf(_mm256_loadu_ps(t)));
        for (int64_t j = i; j < n; j++)
            y[j] = t[j - i];
    }
}

void mp_vexp(const double *x, double *y, int64_t n) {
    if (!have_avx2()) {
        for (int64_t i = 0; i < n; i++)
            y[i] = exp(x[i]);
        return;
    }
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        _mm256_storeu_pd(y + i, _ZGVdN4v_exp(_mm256_loadu_pd(x + i)));
    if (i < n) {
        double t[4] = {0};
        for (int64_t j = i; j < n; j++)
            t[j - i] = x[j];
        _mm256_storeu_pd(t, _ZGVdN4v_exp(_mm256_loadu_pd(t)));
        for (int64_t j = i; j < n; j++)
            y[j] = t[j - i];
    }
}

const char *mp_vecmath_isa(void) { return have_avx2() ? "libmvec-avx2" : "scalar"; }

#else

void mp_vexpf(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        y[i] = expf(x[i]);
}

void mp_vexp(const double *x, double *y, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        y[i] = exp(x[i]);
}

const char *mp_vecmath_isa(void) { return "scalar"; }

#endif
