/* scalar_cast.h — one element converted between dtypes: the reference both backends use, so
 * the CPU (dtype.c, backend_cpu.c) and the CUDA kernels produce the same bits.
 * float16 rounds as NumPy does, bfloat16 as ml_dtypes does (round-to-nearest-even; NaN rules
 * below); float -> integer saturates (NaN -> 0); integer -> integer wraps.
 * NOTE: the vectorised host rows (cast_x86.c) must match these bit for bit; change them here
 * only. Plain arithmetic: no FMA contraction may be applied to this file's float code. */
#ifndef MP_SCALAR_CAST_H
#define MP_SCALAR_CAST_H
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "mixprec.h"
#include "mp_hd.h"

MP_HD uint32_t mp_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
MP_HD float mp_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* float32 -> float16, round-to-nearest-even. NaN: sign kept, payload = top 10 mantissa
 * bits, forced non-zero (NumPy's rule: the quiet bit is not forced). */
MP_HD uint16_t mp_cvt_f32_f16(float f) {
    uint32_t x = mp_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) {
        if (ax == 0x7f800000u)
            return sign | 0x7c00u;
        uint16_t payload = (uint16_t)((ax & 0x7fffffu) >> 13);
        return sign | 0x7c00u | (payload ? payload : 1u);
    }
    if (ax >= 0x477ff000u) /* >= 65520: rounds to inf */
        return sign | 0x7c00u;
    if (ax < 0x38800000u) {
        /* Result is subnormal or zero: let the FPU round |f| + 0.5 (whose ulp is 2^-24)
         * to nearest-even, then read the low mantissa bits. (Needs IEEE subnormals: no
         * flush-to-zero, on the host or the device.) */
        float r = mp_bits_f32(ax) + 0.5f;
        return sign | (uint16_t)(mp_f32_bits(r) - 0x3f000000u);
    }
    uint32_t odd = (ax >> 13) & 1u;
    ax += 0xc8000fffu + odd; /* rebias exponent 127 -> 15 and round half to even */
    return sign | (uint16_t)(ax >> 13);
}

/* float16 -> float32, exact; NaN payload kept (no quieting), as NumPy. */
MP_HD float mp_cvt_f16_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu;
    uint32_t m = h & 0x3ffu;
    if (e == 0x1f)
        return mp_bits_f32(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        float v = (float)m * 5.9604644775390625e-08f; /* m * 2^-24, exact */
        return mp_bits_f32(sign | mp_f32_bits(v));
    }
    return mp_bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

/* float32 -> bfloat16, round-to-nearest-even; NaN -> quiet NaN 0x7fc0 with the sign
 * (ml_dtypes' rule). */
MP_HD uint16_t mp_cvt_f32_bf16(float f) {
    uint32_t x = mp_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)(((x >> 16) & 0x8000u) | 0x7fc0u);
    uint32_t lsb = (x >> 16) & 1u;
    x += 0x7fffu + lsb;
    return (uint16_t)(x >> 16);
}

MP_HD float mp_cvt_bf16_f32(uint16_t b) { return mp_bits_f32((uint32_t)b << 16); }

/* float64 -> float16 with a single rounding (NumPy's npy_double_to_half). */
MP_HD uint16_t mp_cvt_f64_f16(double d) {
    uint64_t x;
    memcpy(&x, &d, 8);
    uint16_t sign = (uint16_t)((x >> 48) & 0x8000u);
    uint64_t ax = x & 0x7fffffffffffffffull;
    if (ax >= 0x7ff0000000000000ull) {
        if (ax == 0x7ff0000000000000ull)
            return sign | 0x7c00u;
        uint16_t payload = (uint16_t)((ax & 0xfffffffffffffull) >> 42);
        return sign | 0x7c00u | (payload ? payload : 1u);
    }
    if (ax >= 0x40effe0000000000ull) /* >= 65520 */
        return sign | 0x7c00u;
    if (ax < 0x3f10000000000000ull) { /* < 2^-14: subnormal or zero */
        /* q = |d| / 2^-24 rounded half-to-even (the scaling is exact); q <= 1024, and
         * q == 1024 is the smallest normal's bit pattern, so it needs no special case. */
        double a;
        memcpy(&a, &ax, 8);
        double v = a * 16777216.0;
        double fl = floor(v);
        double frac = v - fl;
        uint64_t q = (uint64_t)fl;
        if (frac > 0.5 || (frac == 0.5 && (q & 1u)))
            q++;
        return sign | (uint16_t)q;
    }
    uint64_t odd = (ax >> 42) & 1u;
    ax += (uint64_t)0x1ffffffffffull + odd; /* half of bit 42 (2^41) minus 1, plus odd: ties to even */
    uint64_t e = (ax >> 52) - 1008u;        /* rebias 1023 -> 15 */
    uint64_t m = (ax >> 42) & 0x3ffu;
    return sign | (uint16_t)((e << 10) | m);
}

/* float64 -> bfloat16 goes through float32, as ml_dtypes does (two roundings). */
MP_HD uint16_t mp_cvt_f64_bf16(double d) { return mp_cvt_f32_bf16((float)d); }

/* Saturating float -> integer conversions: C leaves out-of-range undefined; we define
 * NaN -> 0 and clamp to the type's range (saturation is the documented mixprec rule). */
MP_HD int32_t mp_sat_i32(double v) {
    if (v != v)
        return 0;
    if (v <= -2147483648.0)
        return INT32_MIN;
    if (v >= 2147483647.0)
        return INT32_MAX;
    return (int32_t)v;
}
MP_HD uint8_t mp_sat_u8(double v) {
    if (v != v || v <= 0.0)
        return 0;
    if (v >= 255.0)
        return 255;
    return (uint8_t)v;
}
MP_HD int8_t mp_sat_i8(double v) {
    if (v != v)
        return 0;
    if (v <= -128.0)
        return -128;
    if (v >= 127.0)
        return 127;
    return (int8_t)v;
}
MP_HD int64_t mp_sat_i64(double v) {
    if (v != v)
        return 0;
    if (v <= -9223372036854775808.0)
        return INT64_MIN;
    if (v >= 9223372036854775808.0)
        return INT64_MAX;
    return (int64_t)v;
}

/* Element i of src (dtype sdt) converted into element i of dst (dtype ddt). Integer
 * sources go through int64 (exact), float sources through double (exact widening);
 * integer -> integer wraps (two's complement, as NumPy and TensorFlow), float -> integer
 * saturates, float -> float rounds once (except float64 -> bfloat16, which goes through
 * float32 as ml_dtypes does). */
MP_HD void mp_cast_one(const void *src, int sdt, void *dst, int ddt, int64_t i) {
    int src_int = sdt == MP_I32 || sdt == MP_I64 || sdt == MP_U8 || sdt == MP_I8 || sdt == MP_BOOL;
    int64_t iv = 0;
    double v = 0.0;
    switch (sdt) {
    case MP_F32: v = ((const float *)src)[i]; break;
    case MP_F16: v = mp_cvt_f16_f32(((const uint16_t *)src)[i]); break;
    case MP_BF16: v = mp_cvt_bf16_f32(((const uint16_t *)src)[i]); break;
    case MP_F64: v = ((const double *)src)[i]; break;
    case MP_I32: iv = ((const int32_t *)src)[i]; break;
    case MP_I64: iv = ((const int64_t *)src)[i]; break;
    case MP_U8: iv = ((const uint8_t *)src)[i]; break;
    case MP_BOOL: iv = ((const uint8_t *)src)[i] != 0; break;
    case MP_I8: iv = ((const int8_t *)src)[i]; break;
    default: break;
    }
    if (src_int)
        v = (double)iv;
    switch (ddt) {
    case MP_F32: ((float *)dst)[i] = src_int ? (float)iv : (float)v; break;
    case MP_F16:
        ((uint16_t *)dst)[i] =
            (sdt == MP_F32 || sdt == MP_BF16 || sdt == MP_F16) ? mp_cvt_f32_f16((float)v) : mp_cvt_f64_f16(v);
        break;
    case MP_BF16: ((uint16_t *)dst)[i] = mp_cvt_f32_bf16(src_int ? (float)iv : (float)v); break;
    case MP_F64: ((double *)dst)[i] = v; break;
    case MP_I32: ((int32_t *)dst)[i] = src_int ? (int32_t)(uint32_t)(uint64_t)iv : mp_sat_i32(v); break;
    case MP_I64: ((int64_t *)dst)[i] = src_int ? iv : mp_sat_i64(v); break;
    case MP_U8: ((uint8_t *)dst)[i] = src_int ? (uint8_t)(uint64_t)iv : mp_sat_u8(v); break;
    case MP_I8: ((int8_t *)dst)[i] = src_int ? (int8_t)(uint8_t)(uint64_t)iv : mp_sat_i8(v); break;
    case MP_BOOL: ((uint8_t *)dst)[i] = src_int ? (iv != 0) : (v != 0.0); break;
    default: break;
    }
}
#endif
