/* dtype.c — the only place that knows dtype sizes, names and bit layouts.
 * Scalar conversions here are the reference the vectorised rows (cast_x86.c) and the
 * CUDA kernels must match bit for bit: float16 as NumPy converts, bfloat16 as ml_dtypes
 * does (round-to-nearest-even; NaN payload rules below). */
#include <math.h>
#include <string.h>

#include "mixprec.h"
#include "cast_internal.h"

static const size_t dtype_size[MP_DTYPE_COUNT] = {
    [MP_F32] = 4, [MP_F16] = 2, [MP_BF16] = 2, [MP_F64] = 8, [MP_I32] = 4,
    [MP_I64] = 8, [MP_U8] = 1,  [MP_BOOL] = 1, [MP_I8] = 1,
};
static const char *const dtype_name[MP_DTYPE_COUNT] = {
    [MP_F32] = "float32", [MP_F16] = "float16", [MP_BF16] = "bfloat16",
    [MP_F64] = "float64", [MP_I32] = "int32",   [MP_I64] = "int64",
    [MP_U8] = "uint8",    [MP_BOOL] = "bool",   [MP_I8] = "int8",
};
_Static_assert(MP_DTYPE_COUNT == 9, "new dtype: extend the tables in dtype.c, _dtypes.py and convert.c");

int mp_dtype_valid(int dt) { return dt >= 0 && dt < MP_DTYPE_COUNT; }
size_t mp_dtype_size(mp_dtype dt) { return mp_dtype_valid(dt) ? dtype_size[dt] : 0; }
const char *mp_dtype_name(mp_dtype dt) { return mp_dtype_valid(dt) ? dtype_name[dt] : "<invalid dtype>"; }
int mp_dtype_is_floating(mp_dtype dt) {
    return dt == MP_F32 || dt == MP_F16 || dt == MP_BF16 || dt == MP_F64;
}
int mp_dtype_is_integer(mp_dtype dt) { return dt == MP_I32 || dt == MP_I64 || dt == MP_U8 || dt == MP_I8; }

static inline uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static inline float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* float32 -> float16, round-to-nearest-even. NaN: sign kept, payload = top 10 mantissa
 * bits, forced non-zero (NumPy's rule: the quiet bit is not forced). */
uint16_t mp_f32_to_f16(float f) {
    uint32_t x = f32_bits(f);
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
         * to nearest-even, then read the low mantissa bits. */
        float r = bits_f32(ax) + 0.5f;
        return sign | (uint16_t)(f32_bits(r) - 0x3f000000u);
    }
    uint32_t odd = (ax >> 13) & 1u;
    ax += 0xc8000fffu + odd; /* rebias exponent 127 -> 15 and round half to even */
    return sign | (uint16_t)(ax >> 13);
}

/* float16 -> float32, exact; NaN payload kept (no quieting), as NumPy. */
float mp_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu;
    uint32_t m = h & 0x3ffu;
    if (e == 0x1f)
        return bits_f32(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        float v = (float)m * 5.9604644775390625e-08f; /* m * 2^-24, exact */
        return bits_f32(sign | f32_bits(v));
    }
    return bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

/* float32 -> bfloat16, round-to-nearest-even; NaN -> quiet NaN 0x7fc0 with the sign
 * (ml_dtypes' rule). */
uint16_t mp_f32_to_bf16(float f) {
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)(((x >> 16) & 0x8000u) | 0x7fc0u);
    uint32_t lsb = (x >> 16) & 1u;
    x += 0x7fffu + lsb;
    return (uint16_t)(x >> 16);
}

float mp_bf16_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }

/* float64 -> float16 with a single rounding (NumPy's npy_double_to_half). */
uint16_t mp_f64_to_f16(double d) {
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
uint16_t mp_f64_to_bf16(double d) { return mp_f32_to_bf16((float)d); }

/* ------------------------------------------------------------------ row casts */

static int force_scalar;

int mp_cast_force_scalar(int on) {
    int prev = force_scalar;
    force_scalar = on;
    return prev;
}

void mp_row_f16_to_f32_scalar(const uint16_t *src, float *dst, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        dst[i] = mp_f16_to_f32(src[i]);
}
void mp_row_f32_to_f16_scalar(const float *src, uint16_t *dst, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        dst[i] = mp_f32_to_f16(src[i]);
}
void mp_row_bf16_to_f32_scalar(const uint16_t *src, float *dst, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        dst[i] = mp_bf16_to_f32(src[i]);
}
void mp_row_f32_to_bf16_scalar(const float *src, uint16_t *dst, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        dst[i] = mp_f32_to_bf16(src[i]);
}

static int use_x86(void) {
    static int cached = -1;
    if (cached < 0)
        cached = mp_cast_x86_available();
    return cached && !force_scalar;
}

const char *mp_cast_isa(void) { return use_x86() ? "avx2+f16c" : "scalar"; }

void mp_row_f16_to_f32(const uint16_t *src, float *dst, int64_t n) {
    if (use_x86())
        mp_row_f16_to_f32_x86(src, dst, n);
    else
        mp_row_f16_to_f32_scalar(src, dst, n);
}
void mp_row_f32_to_f16(const float *src, uint16_t *dst, int64_t n) {
    if (use_x86())
        mp_row_f32_to_f16_x86(src, dst, n);
    else
        mp_row_f32_to_f16_scalar(src, dst, n);
}
void mp_row_bf16_to_f32(const uint16_t *src, float *dst, int64_t n) {
    if (use_x86())
        mp_row_bf16_to_f32_x86(src, dst, n);
    else
        mp_row_bf16_to_f32_scalar(src, dst, n);
}
void mp_row_f32_to_bf16(const float *src, uint16_t *dst, int64_t n) {
    if (use_x86())
        mp_row_f32_to_bf16_x86(src, dst, n);
    else
        mp_row_f32_to_bf16_scalar(src, dst, n);
}
