/* cast_x86.c — F16C/AVX2 row casts between float32 and float16/bfloat16.
 * Compiled with -mavx2 -mf16c (this file only) and called only after a run-time CPU
 * check, so the rest of the library runs on any x86-64. Results must equal the scalar
 * reference in dtype.c bit for bit, NaN payloads included: F16C quiets NaNs, NumPy does
 * not, so NaN lanes are patched. */
#include <stdint.h>

#include "cast_internal.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>

int mp_cast_x86_available(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
}

/* 8 x (32-bit lanes holding values <= 0xffff) -> 8 x uint16 in order. */
static inline __m128i pack_u32_to_u16(__m256i v) {
    __m256i p = _mm256_packus_epi32(v, v);             /* lanes: a0..3 a0..3 | a4..7 a4..7 */
    p = _mm256_permute4x64_epi64(p, 0x08);              /* a0..3 a4..7 in the low 128 bits */
    return _mm256_castsi256_si128(p);
}

void mp_row_f32_to_f16_x86(const float *src, uint16_t *dst, int64_t n) {
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
    const __m256i inf = _mm256_set1_epi32(0x7f800000);
    const __m256i mant = _mm256_set1_epi32(0x7fffff);
    const __m256i sign = _mm256_set1_epi32((int)0x80000000u);
    const __m256i h_inf = _mm256_set1_epi32(0x7c00);
    const __m256i one = _mm256_set1_epi32(1);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(src + i);
        __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m256i xi = _mm256_castps_si256(v);
        __m256i isnan = _mm256_cmpgt_epi32(_mm256_and_si256(xi, abs_mask), inf);
        if (__builtin_expect(!_mm256_testz_si256(isnan, isnan), 0)) {
            __m256i pay = _mm256_max_epu32(_mm256_srli_epi32(_mm256_and_si256(xi, mant), 13), one);
            __m256i nh = _mm256_or_si256(_mm256_srli_epi32(_mm256_and_si256(xi, sign), 16),
                                         _mm256_or_si256(h_inf, pay));
            __m128i nh16 = pack_u32_to_u16(nh);
            __m128i m16 = pack_u32_to_u16(_mm256_srli_epi32(isnan, 16));
            h = _mm_blendv_epi8(h, nh16, m16);
        }
        _mm_storeu_si128((__m128i *)(dst + i), h);
    }
    if (i < n)
        mp_row_f32_to_f16_scalar(src + i, dst + i, n - i);
}

void mp_row_f16_to_f32_x86(const uint16_t *src, float *dst, int64_t n) {
    const __m256i exp_mask = _mm256_set1_epi32(0x7c00);
    const __m256i man_mask = _mm256_set1_epi32(0x3ff);
    const __m256i zero = _mm256_setzero_si256();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(src + i));
        __m256 f = _mm256_cvtph_ps(h);
        __m256i hw = _mm256_cvtepu16_epi32(h);
        __m256i isnan = _mm256_andnot_si256(
            _mm256_cmpeq_epi32(_mm256_and_si256(hw, man_mask), zero),
            _mm256_cmpeq_epi32(_mm256_and_si256(hw, exp_mask), exp_mask));
        if (__builtin_expect(!_mm256_testz_si256(isnan, isnan), 0)) {
            /* sign | 0x7f800000 | mantissa << 13: payload kept, not quieted */
            __m256i nf = _mm256_or_si256(_mm256_slli_epi32(_mm256_and_si256(hw, _mm256_set1_epi32(0x8000)), 16),
                                         _mm256_or_si256(_mm256_set1_epi32(0x7f800000),
                                                         _mm256_slli_epi32(_mm256_and_si256(hw, man_mask), 13)));
            f = _mm256_blendv_ps(f, _mm256_castsi256_ps(nf), _mm256_castsi256_ps(isnan));
        }
        _mm256_storeu_ps(dst + i, f);
    }
    if (i < n)
        mp_row_f16_to_f32_scalar(src + i, dst + i, n - i);
}

void mp_row_bf16_to_f32_x86(const uint16_t *src, float *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i b = _mm_loadu_si128((const __m128i *)(src + i));
        __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16);
        _mm256_storeu_si256((__m256i *)(dst + i), w);
    }
    if (i < n)
        mp_row_bf16_to_f32_scalar(src + i, dst + i, n - i);
}

void mp_row_f32_to_bf16_x86(const float *src, uint16_t *dst, int64_t n) {
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
    const __m256i inf = _mm256_set1_epi32(0x7f800000);
    const __m256i bias = _mm256_set1_epi32(0x7fff);
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i qnan = _mm256_set1_epi32(0x7fc0);
    const __m256i sign16 = _mm256_set1_epi32(0x8000);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(src + i));
        __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), one);
        __m256i r = _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(bias, lsb)), 16);
        __m256i isnan = _mm256_cmpgt_epi32(_mm256_and_si256(x, abs_mask), inf);
        __m256i nanv = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(x, 16), sign16), qnan);
        r = _mm256_blendv_epi8(r, nanv, isnan);
        _mm_storeu_si128((__m128i *)(dst + i), pack_u32_to_u16(r));
    }
    if (i < n)
        mp_row_f32_to_bf16_scalar(src + i, dst + i, n - i);
}

#else /* not x86-64 with AVX2/F16C at compile time: scalar only */

int mp_cast_x86_available(void) { return 0; }
void mp_row_f16_to_f32_x86(const uint16_t *s, float *d, int64_t n) { mp_row_f16_to_f32_scalar(s, d, n); }
void mp_row_f32_to_f16_x86(const float *s, uint16_t *d, int64_t n) { mp_row_f32_to_f16_scalar(s, d, n); }
void mp_row_bf16_to_f32_x86(const uint16_t *s, float *d, int64_t n) { mp_row_bf16_to_f32_scalar(s, d, n); }
void mp_row_f32_to_bf16_x86(const float *s, uint16_t *d, int64_t n) { mp_row_f32_to_bf16_scalar(s, d, n); }

#endif
