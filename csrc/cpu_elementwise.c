/* cpu_elementwise.c — unary and broadcasting binary kernels of the CPU backend.
 * float32 and float64 run in their own type; float16/bfloat16 are widened to float32 in
 * stack blocks, computed, and rounded once per element (NumPy's float16 semantics);
 * integers and bool compute in 64-bit two's complement and wrap on store.
 * NOTE: no kernel may trap: integer division by zero and INT_MIN / -1 are reported or
 * defined here, never left to the CPU. */
#include <math.h>
#include <string.h>

#include "cpu_kernels.h"
#include "elementwise_math.h"

/* ------------------------------------------------------------------ scalar helpers */

/* NaN-propagating max/min (NumPy's maximum/minimum). */
#define PMAX(x, z) ((x) > (z) || (x) != (x) ? (x) : (z))
#define PMIN(x, z) ((x) < (z) || (x) != (x) ? (x) : (z))
#define RELU_(x) ((x) > 0 ? (x) : ((x) == (x) ? 0 : (x)))
#define SIGN_(x) ((x) > 0 ? 1 : (x) < 0 ? -1 : (x))

/* ------------------------------------------------------------------ unary */

#define UNARY_FLOAT_BODY(T, EXP, LOG, SQRT, TANH, FLOOR, CEIL, RINT, LOG1P, EXPM1, SIN, COS, SIGM, SOFTP, FABS) \
    switch (k) {                                                                                               \
    case MP_UNARY_NEG: for (i = 0; i < n; i++) y[i] = -x[i]; break;                                            \
    case MP_UNARY_ABS: for (i = 0; i < n; i++) y[i] = FABS(x[i]); break;                                       \
    case MP_UNARY_EXP: for (i = 0; i < n; i++) y[i] = EXP(x[i]); break;                                        \
    case MP_UNARY_LOG: for (i = 0; i < n; i++) y[i] = LOG(x[i]); break;                                        \
    case MP_UNARY_SQRT: for (i = 0; i < n; i++) y[i] = SQRT(x[i]); break;                                      \
    case MP_UNARY_SQUARE: for (i = 0; i < n; i++) y[i] = x[i] * x[i]; break;                                   \
    case MP_UNARY_RELU: for (i = 0; i < n; i++) y[i] = RELU_(x[i]); break;                                     \
    case MP_UNARY_SIGMOID: for (i = 0; i < n; i++) y[i] = SIGM(x[i]); break;                                   \
    case MP_UNARY_TANH: for (i = 0; i < n; i++) y[i] = TANH(x[i]); break;                                      \
    case MP_UNARY_RSQRT: for (i = 0; i < n; i++) y[i] = (T)1 / SQRT(x[i]); break;                              \
    case MP_UNARY_RECIPROCAL: for (i = 0; i < n; i++) y[i] = (T)1 / x[i]; break;                               \
    case MP_UNARY_FLOOR: for (i = 0; i < n; i++) y[i] = FLOOR(x[i]); break;                                    \
    case MP_UNARY_CEIL: for (i = 0; i < n; i++) y[i] = CEIL(x[i]); break;                                      \
    case MP_UNARY_ROUND: for (i = 0; i < n; i++) y[i] = RINT(x[i]); break;                                     \
    case MP_UNARY_SIGN: for (i = 0; i < n; i++) y[i] = (T)SIGN_(x[i]); break;                                  \
    case MP_UNARY_LOG1P: for (i = 0; i < n; i++) y[i] = LOG1P(x[i]); break;                                    \
    case MP_UNARY_EXPM1: for (i = 0; i < n; i++) y[i] = EXPM1(x[i]); break;                                    \
    case MP_UNARY_ELU: for (i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : (T)alpha * EXPM1(x[i]); break;         \
    case MP_UNARY_SOFTPLUS: for (i = 0; i < n; i++) y[i] = SOFTP(x[i]); break;                                 \
    case MP_UNARY_GELU:                                                                                        \
        for (i = 0; i < n; i++) y[i] = (T)mp_gelu_f64(x[i]);                                                 \
        break;                                                                                                 \
    case MP_UNARY_GELU_TANH: for (i = 0; i < n; i++) y[i] = (T)mp_gelu_tanh_f64(x[i]); break;                        \
    case MP_UNARY_SIN: for (i = 0; i < n; i++) y[i] = SIN(x[i]); break;                                        \
    case MP_UNARY_COS: for (i = 0; i < n; i++) y[i] = COS(x[i]); break;                                        \
    case MP_UNARY_LEAKY_RELU: for (i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : (T)alpha * x[i]; break;         \
    case MP_UNARY_SCALE: for (i = 0; i < n; i++) y[i] = (T)alpha * x[i]; break;                                \
    default: break;                                                                                            \
    }

/* the kinds of special_math.h (and libm's inverse and hyperbolic functions) */
#define UNARY_EXTRA_BODY(T, TAN, ASIN, ACOS, ATAN, SINH, COSH, ASINH, ACOSH, ATANH, ERF, ERFC, EXPM1, FABS)          \
    switch (k) {                                                                                               \
    case MP_UNARY_TAN: for (i = 0; i < n; i++) y[i] = TAN(x[i]); break;                                        \
    case MP_UNARY_ASIN: for (i = 0; i < n; i++) y[i] = ASIN(x[i]); break;                                      \
    case MP_UNARY_ACOS: for (i = 0; i < n; i++) y[i] = ACOS(x[i]); break;                                      \
    case MP_UNARY_ATAN: for (i = 0; i < n; i++) y[i] = ATAN(x[i]); break;                                      \
    case MP_UNARY_SINH: for (i = 0; i < n; i++) y[i] = SINH(x[i]); break;                                      \
    case MP_UNARY_COSH: for (i = 0; i < n; i++) y[i] = COSH(x[i]); break;                                      \
    case MP_UNARY_ASINH: for (i = 0; i < n; i++) y[i] = ASINH(x[i]); break;                                    \
    case MP_UNARY_ACOSH: for (i = 0; i < n; i++) y[i] = ACOSH(x[i]); break;                                    \
    case MP_UNARY_ATANH: for (i = 0; i < n; i++) y[i] = ATANH(x[i]); break;                                    \
    case MP_UNARY_ERF: for (i = 0; i < n; i++) y[i] = ERF(x[i]); break;                                        \
    case MP_UNARY_ERFC: for (i = 0; i < n; i++) y[i] = ERFC(x[i]); break;                                      \
    case MP_UNARY_ERFINV: for (i = 0; i < n; i++) y[i] = (T)mp_erfinv_f64(x[i]); break;                        \
    case MP_UNARY_NDTRI: for (i = 0; i < n; i++) y[i] = (T)mp_ndtri_f64(x[i]); break;                          \
    case MP_UNARY_LGAMMA: for (i = 0; i < n; i++) y[i] = (T)mp_lgamma_f64(x[i]); break;                        \
    case MP_UNARY_DIGAMMA: for (i = 0; i < n; i++) y[i] = (T)mp_digamma_f64(x[i]); break;                      \
    case MP_UNARY_SOFTSIGN: for (i = 0; i < n; i++) y[i] = x[i] / ((T)1 + FABS(x[i])); break;                  \
    case MP_UNARY_SELU:                                                                                        \
        for (i = 0; i < n; i++)                                                                                \
            y[i] = x[i] > 0 ? (T)MP_SELU_SCALE * x[i] : (T)(MP_SELU_SCALE * MP_SELU_ALPHA) * EXPM1(x[i]);     \
        break;                                                                                                 \
    case MP_UNARY_BESSEL_I0: for (i = 0; i < n; i++) y[i] = (T)mp_bessel_i_f64(0, x[i]); break;               \
    case MP_UNARY_BESSEL_I0E: for (i = 0; i < n; i++) y[i] = (T)mp_bessel_ie_f64(0, x[i]); break;             \
    case MP_UNARY_BESSEL_I1: for (i = 0; i < n; i++) y[i] = (T)mp_bessel_i_f64(1, x[i]); break;               \
    case MP_UNARY_BESSEL_I1E: for (i = 0; i < n; i++) y[i] = (T)mp_bessel_ie_f64(1, x[i]); break;             \
    default: break;                                                                                            \
    }

static void unary_f32(mp_unary_kind k, const float *x, float *y, int64_t n, double alpha) {
    int64_t i;
    if (k == MP_UNARY_EXP) { /* libmvec where the CPU has AVX2: ~8x the scalar expf */
        mp_vexpf(x, y, n);
        return;
    }
    if (k >= MP_UNARY_TAN) {
        UNARY_EXTRA_BODY(float, tanf, asinf, acosf, atanf, sinhf, coshf, asinhf, acoshf, atanhf, erff, erfcf, expm1f,
                         fabsf)
        return;
    }
    UNARY_FLOAT_BODY(float, expf, logf, sqrtf, tanhf, floorf, ceilf, rintf, log1pf, expm1f, sinf, cosf, mp_sigmoid_f32,
                     mp_softplus_f32, fabsf)
}
static void unary_f64(mp_unary_kind k, const double *x, double *y, int64_t n, double alpha) {
    int64_t i;
    if (k >= MP_UNARY_TAN) {
        UNARY_EXTRA_BODY(double, tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, erf, erfc, expm1, fabs)
        return;
    }
    UNARY_FLOAT_BODY(double, exp, log, sqrt, tanh, floor, ceil, rint, log1p, expm1, sin, cos, mp_sigmoid_f64, mp_softplus_f64,
                     fabs)
}

static void unary_pred_f32(mp_unary_kind k, const float *x, uint8_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = k == MP_UNARY_IS_FINITE ? isfinite(v) != 0 : k == MP_UNARY_IS_NAN ? v != v : isinf(v) != 0;
    }
}
static void unary_pred_f64(mp_unary_kind k, const double *x, uint8_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        double v = x[i];
        y[i] = k == MP_UNARY_IS_FINITE ? isfinite(v) != 0 : k == MP_UNARY_IS_NAN ? v != v : isinf(v) != 0;
    }
}

/* int64 load/store for integer and bool dtypes */
static void load_i64(mp_dtype dt, const void *src, int64_t *dst, int64_t n) {
    switch (dt) {
    case MP_I32: for (int64_t i = 0; i < n; i++) dst[i] = ((const int32_t *)src)[i]; break;
    case MP_I64: memcpy(dst, src, (size_t)n * 8); break;
    case MP_U8: for (int64_t i = 0; i < n; i++) dst[i] = ((const uint8_t *)src)[i]; break;
    case MP_I8: for (int64_t i = 0; i < n; i++) dst[i] = ((const int8_t *)src)[i]; break;
    case MP_BOOL: for (int64_t i = 0; i < n; i++) dst[i] = ((const uint8_t *)src)[i] != 0; break;
    default: break;
    }
}
static void store_i64(mp_dtype dt, const int64_t *src, void *dst, int64_t n) {
    switch (dt) {
    case MP_I32: for (int64_t i = 0; i < n; i++) ((int32_t *)dst)[i] = (int32_t)(uint32_t)(uint64_t)src[i]; break;
    case MP_I64: memcpy(dst, src, (size_t)n * 8); break;
    case MP_U8: for (int64_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = (uint8_t)(uint64_t)src[i]; break;
    case MP_I8: for (int64_t i = 0; i < n; i++) ((int8_t *)dst)[i] = (int8_t)(uint8_t)(uint64_t)src[i]; break;
    case MP_BOOL: for (int64_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = src[i] != 0; break;
    default: break;
    }
}

static void unary_i64(mp_unary_kind k, const int64_t *x, int64_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        uint64_t u = (uint64_t)x[i];
        switch (k) {
        case MP_UNARY_NEG: y[i] = (int64_t)(0 - u); break;
        case MP_UNARY_ABS: y[i] = x[i] < 0 ? (int64_t)(0 - u) : x[i]; break;
        case MP_UNARY_SQUARE: y[i] = (int64_t)(u * u); break;
        case MP_UNARY_SIGN: y[i] = (x[i] > 0) - (x[i] < 0); break;
        case MP_UNARY_RELU: y[i] = x[i] > 0 ? x[i] : 0; break;
        case MP_UNARY_LOGICAL_NOT: y[i] = !x[i]; break;
        default: y[i] = x[i]; break;
        }
    }
}

/* 16-bit sign/NaN tests on the bits (float16: exponent 0x7C00, bfloat16: 0x7F80) */
static inline int pos16(uint16_t v, uint16_t inf) { return v != 0 && v <= inf; }  /* x > 0 (inf included) */
static inline int neg16(uint16_t v, uint16_t inf) { return (v & 0x8000u) && (uint16_t)(v & 0x7FFFu) <= inf; }

/* relu(x) = x > 0 ? x : (x is NaN ? x : +0) */
static void relu16(mp_dtype dt, const uint16_t *x, uint16_t *y, int64_t n) {
    uint16_t inf = dt == MP_F16 ? 0x7C00u : 0x7F80u;
    for (int64_t i = 0; i < n; i++)
        y[i] = (uint16_t)(x[i] & (uint16_t)(neg16(x[i], inf) - 1)); /* branch-free: vectorizes */
}

typedef struct {
    mp_unary_kind k;
    mp_dtype dt;
    const char *x;
    char *y;
    double alpha;
} unary_ctx;

static int unary_is_pred(mp_unary_kind k) {
    return k == MP_UNARY_IS_FINITE || k == MP_UNARY_IS_NAN || k == MP_UNARY_IS_INF;
}

static void unary_range(void *vctx, int64_t b, int64_t e) {
    unary_ctx *c = vctx;
    size_t es = mp_dtype_size(c->dt);
    size_t os = unary_is_pred(c->k) ? 1 : es;
    const char *x = c->x + b * (int64_t)es;
    char *y = c->y + b * (int64_t)os;
    int64_t n = e - b;
    switch (c->dt) {
    case MP_F32:
        if (unary_is_pred(c->k))
            unary_pred_f32(c->k, (const float *)x, (uint8_t *)y, n);
        else
            unary_f32(c->k, (const float *)x, (float *)y, n, c->alpha);
        return;
    case MP_F64:
        if (unary_is_pred(c->k))
            unary_pred_f64(c->k, (const double *)x, (uint8_t *)y, n);
        else
            unary_f64(c->k, (const double *)x, (double *)y, n, c->alpha);
        return;
    case MP_F16:
    case MP_BF16: {
        if (c->k == MP_UNARY_RELU) { /* on the bits: exactly RELU_ of the widened value */
            relu16(c->dt, (const uint16_t *)x, (uint16_t *)y, n);
            return;
        }
        float buf[MP_BLOCK];
        for (int64_t i = 0; i < n; i += MP_BLOCK) {
            int64_t m = n - i < MP_BLOCK ? n - i : MP_BLOCK;
            mp_load_f32(c->dt, x + i * 2, buf, m);
            if (unary_is_pred(c->k)) {
                unary_pred_f32(c->k, buf, (uint8_t *)y + i, m);
            } else {
                unary_f32(c->k, buf, buf, m, c->alpha);
                mp_store_f32(c->dt, buf, y + i * 2, m);
            }
        }
        return;
    }
    default: {
        int64_t buf[MP_BLOCK];
        for (int64_t i = 0; i < n; i += MP_BLOCK) {
            int64_t m = n - i < MP_BLOCK ? n - i : MP_BLOCK;
            load_i64(c->dt, x + i * (int64_t)es, buf, m);
            unary_i64(c->k, buf, buf, m);
            store_i64(c->dt, buf, y + i * (int64_t)es, m);
        }
        return;
    }
    }
}

mp_status mp_cpu_unary(mp_device dev, mp_unary_kind k, mp_dtype dt, const void *x, void *y, int64_t n,
                       double alpha) {
    (void)dev;
    unary_ctx c = {k, dt, x, y, alpha};
    /* transcendental kinds are worth threading sooner */
    int64_t grain = (k == MP_UNARY_NEG || k == MP_UNARY_ABS || k == MP_UNARY_RELU || k == MP_UNARY_SCALE ||
                     k == MP_UNARY_SQUARE)
                        ? MP_GRAIN * 4
                        : MP_GRAIN / 4;
    mp_parallel_for(n, grain, unary_range, &c);
    return MP_OK;
}

/* ------------------------------------------------------------------ binary */

/* x from a (advances iff sa), z from b (advances iff sb); EXPR uses x and z. */
#define BLOOP(T, EXPR)                                          \
    do {                                                        \
        if (sa && sb) {                                         \
            for (int64_t i = 0; i < n; i++) {                   \
                T x = a[i], z = b[i];                           \
                y[i] = (EXPR);                                  \
            }                                                   \
        } else if (sb) {                                        \
            T x = a[0];                                         \
            for (int64_t i = 0; i < n; i++) {                   \
                T z = b[i];                                     \
                y[i] = (EXPR);                                  \
            }                                                   \
        } else if (sa) {                                        \
            T z = b[0];                                         \
            for (int64_t i = 0; i < n; i++) {                   \
                T x = a[i];                                     \
                y[i] = (EXPR);                                  \
            }                                                   \
        } else {                                                \
            T x = a[0], z = b[0];                               \
            for (int64_t i = 0; i < n; i++)                     \
                y[i] = (EXPR);                                  \
        }                                                       \
    } while (0)

#define BINARY_FLOAT_BODY(T, FLOOR, FMOD_, POW, TANHF, SIGM, ERF, EXP, SQRT, ATAN2, TRUNC, FMOD, LOG, LOG1P, \
                          NEXTAFTER)                              \
    switch (k) {                                                                                          \
    case MP_BINARY_ADD: BLOOP(T, x + z); break;                                                           \
    case MP_BINARY_SUB: BLOOP(T, x - z); break;                                                           \
    case MP_BINARY_MUL: BLOOP(T, x * z); break;                                                           \
    case MP_BINARY_DIV: BLOOP(T, x / z); break;                                                           \
    case MP_BINARY_FLOORDIV: BLOOP(T, FLOOR(x / z)); break;                                               \
    case MP_BINARY_FLOORMOD: BLOOP(T, FMOD_(x, z)); break;                                                \
    case MP_BINARY_POW: BLOOP(T, POW(x, z)); break;                                                       \
    case MP_BINARY_MAXIMUM: BLOOP(T, PMAX(x, z)); break;                                                  \
    case MP_BINARY_MINIMUM: BLOOP(T, PMIN(x, z)); break;                                                  \
    case MP_BINARY_SQUARED_DIFFERENCE: BLOOP(T, (x - z) * (x - z)); break;                                \
    case MP_BINARY_RELU_GRAD: BLOOP(T, x > 0 ? z : (T)0); break;                                          \
    case MP_BINARY_SIGMOID_GRAD: BLOOP(T, z * x * ((T)1 - x)); break;                                     \
    case MP_BINARY_TANH_GRAD: BLOOP(T, z * ((T)1 - x * x)); break;                                        \
    case MP_BINARY_ELU_GRAD: BLOOP(T, x > 0 ? z : z * (x + (T)alpha)); break;                             \
    case MP_BINARY_SOFTPLUS_GRAD: BLOOP(T, z * SIGM(x)); break;                                           \
    case MP_BINARY_GELU_GRAD: BLOOP(T, z * (T)mp_gelu_grad_f64(x)); break;                                      \
    case MP_BINARY_GELU_TANH_GRAD: BLOOP(T, z * (T)mp_gelu_tanh_grad_f64(x)); break;                            \
    case MP_BINARY_RSQRT_GRAD: BLOOP(T, z * (T)-0.5 * x * x * x); break;                                  \
    case MP_BINARY_SQRT_GRAD: BLOOP(T, z * (T)0.5 / x); break;                                            \
    case MP_BINARY_LEAKY_RELU_GRAD: BLOOP(T, x > 0 ? z : (T)alpha * z); break;                            \
    case MP_BINARY_ATAN2: BLOOP(T, ATAN2(x, z)); break;                                                   \
    case MP_BINARY_TRUNCATEDIV: BLOOP(T, TRUNC(x / z)); break;                                            \
    case MP_BINARY_TRUNCATEMOD: BLOOP(T, FMOD(x, z)); break;                                              \
    case MP_BINARY_XLOGY: BLOOP(T, MP_XLOGY(x, z, LOG)); break;                                           \
    case MP_BINARY_XDIVY: BLOOP(T, MP_XDIVY(x, z)); break;                                                \
    case MP_BINARY_XLOG1PY: BLOOP(T, MP_XLOGY(x, z, LOG1P)); break;                                       \
    case MP_BINARY_DIV_NO_NAN: BLOOP(T, MP_NO_NAN(z, x / z)); break;                                      \
    case MP_BINARY_MUL_NO_NAN: BLOOP(T, MP_NO_NAN(z, x * z)); break;                                      \
    case MP_BINARY_NEXTAFTER: BLOOP(T, NEXTAFTER(x, z)); break;                                           \
    case MP_BINARY_IGAMMA: BLOOP(T, (T)mp_igamma_f64(x, z)); break;                                       \
    case MP_BINARY_IGAMMAC: BLOOP(T, (T)mp_igammac_f64(x, z)); break;                                     \
    case MP_BINARY_ZETA: BLOOP(T, (T)mp_zeta_f64(x, z)); break;                                           \
    case MP_BINARY_POLYGAMMA: BLOOP(T, (T)mp_polygamma_f64(x, z)); break;                                 \
    case MP_BINARY_IGAMMA_GRAD_A: BLOOP(T, (T)mp_igamma_grad_a_f64(x, z)); break;                         \
    default: break;                                                                                       \
    }

static void bin_f32(mp_binary_kind k, const float *a, int sa, const float *b, int sb, float *y, int64_t n,
                    double alpha) {
    BINARY_FLOAT_BODY(float, floorf, mp_floormod_f32, powf, tanhf, mp_sigmoid_f32, erff, expf, sqrtf, atan2f, truncf,
                      fmodf, logf, log1pf, nextafterf)
}
static void bin_f64(mp_binary_kind k, const double *a, int sa, const double *b, int sb, double *y, int64_t n,
                    double alpha) {
    BINARY_FLOAT_BODY(double, floor, mp_floormod_f64, pow, tanh, mp_sigmoid_f64, erf, exp, sqrt, atan2, trunc, fmod,
                      log, log1p, nextafter)
}

#define CMP_BODY(T)                                                \
    switch (k) {                                                   \
    case MP_BINARY_EQUAL: BLOOP(T, x == z); break;                 \
    case MP_BINARY_NOT_EQUAL: BLOOP(T, x != z); break;             \
    case MP_BINARY_LESS: BLOOP(T, x < z); break;                   \
    case MP_BINARY_LESS_EQUAL: BLOOP(T, x <= z); break;            \
    case MP_BINARY_GREATER: BLOOP(T, x > z); break;                \
    case MP_BINARY_GREATER_EQUAL: BLOOP(T, x >= z); break;         \
    case MP_BINARY_LOGICAL_AND: BLOOP(T, (x != 0) && (z != 0)); break; \
    case MP_BINARY_LOGICAL_OR: BLOOP(T, (x != 0) || (z != 0)); break;  \
    default: break;                                                \
    }

static void cmp_f32(mp_binary_kind k, const float *a, int sa, const float *b, int sb, uint8_t *y, int64_t n) {
    CMP_BODY(float)
}
static void cmp_f64(mp_binary_kind k, const double *a, int sa, const double *b, int sb, uint8_t *y, int64_t n) {
    CMP_BODY(double)
}
static void cmp_i64(mp_binary_kind k, const int64_t *a, int sa, const int64_t *b, int sb, uint8_t *y, int64_t n) {
    CMP_BODY(int64_t)
}


/* Returns nonzero on an integer error (division by zero, negative power). */
static int bin_i64(mp_binary_kind k, const int64_t *a, int sa, const int64_t *b, int sb, int64_t *y, int64_t n) {
    if (k == MP_BINARY_FLOORDIV || k == MP_BINARY_FLOORMOD || k == MP_BINARY_POW || k == MP_BINARY_TRUNCATEDIV ||
        k == MP_BINARY_TRUNCATEMOD) {
        int64_t nb = sb ? n : 1;
        for (int64_t i = 0; i < nb; i++) {
            if (k != MP_BINARY_POW && b[i] == 0)
                return 1;
            if (k == MP_BINARY_POW && b[i] < 0)
                return 2;
        }
    }
    switch (k) {
    case MP_BINARY_ADD: BLOOP(int64_t, (int64_t)((uint64_t)x + (uint64_t)z)); break;
    case MP_BINARY_SUB: BLOOP(int64_t, (int64_t)((uint64_t)x - (uint64_t)z)); break;
    case MP_BINARY_MUL: BLOOP(int64_t, (int64_t)((uint64_t)x * (uint64_t)z)); break;
    case MP_BINARY_FLOORDIV: BLOOP(int64_t, mp_ifloordiv(x, z)); break;
    case MP_BINARY_FLOORMOD: BLOOP(int64_t, mp_ifloormod(x, z)); break;
    case MP_BINARY_POW: BLOOP(int64_t, mp_ipow(x, z)); break;
    case MP_BINARY_TRUNCATEDIV: BLOOP(int64_t, mp_itruncdiv(x, z)); break;
    case MP_BINARY_TRUNCATEMOD: BLOOP(int64_t, mp_itruncmod(x, z)); break;
    case MP_BINARY_MAXIMUM: BLOOP(int64_t, x > z ? x : z); break;
    case MP_BINARY_MINIMUM: BLOOP(int64_t, x < z ? x : z); break;
    case MP_BINARY_SQUARED_DIFFERENCE:
        BLOOP(int64_t, (int64_t)(((uint64_t)x - (uint64_t)z) * ((uint64_t)x - (uint64_t)z)));
        break;
    case MP_BINARY_RELU_GRAD: BLOOP(int64_t, x > 0 ? z : 0); break;
    default: break;
    }
    return 0;
}

static int binary_is_cmp(mp_binary_kind k) {
    switch (k) {
#define MP_BINARY(NAME, name, is_cmp) \
    case MP_BINARY_##NAME: return is_cmp;
#include "binary.def"
#undef MP_BINARY
    default: return 0;
    }
}

typedef struct {
    mp_binary_kind k;
    mp_dtype dt;
    const mp_bcast *bc;
    const char *a, *b;
    char *y;
    double alpha;
    int flat;     /* the whole broadcast collapsed to one contiguous row */
    int error;    /* set (racy but monotone) when an integer error occurs */
} bin_ctx;

/* Computes y[0:n] from a (element offset oa, inner stride sa) and b likewise. */
static void bin_run(bin_ctx *c, int64_t oa, int sa, int64_t ob, int sb, int64_t oy, int64_t n) {
    mp_dtype dt = c->dt;
    size_t es = mp_dtype_size(dt);
    int cmp = binary_is_cmp(c->k);
    size_t ys = cmp ? 1 : es;
    const char *a = c->a + oa * (int64_t)es;
    const char *b = c->b + ob * (int64_t)es;
    char *y = c->y + oy * (int64_t)ys;
    mp_binary_kind k = c->k;
    if (dt == MP_F32) {
        if (cmp)
            cmp_f32(k, (const float *)a, sa, (const float *)b, sb, (uint8_t *)y, n);
        else
            bin_f32(k, (const float *)a, sa, (const float *)b, sb, (float *)y, n, c->alpha);
        return;
    }
    if (dt == MP_F64) {
        if (cmp)
            cmp_f64(k, (const double *)a, sa, (const double *)b, sb, (uint8_t *)y, n);
        else
            bin_f64(k, (const double *)a, sa, (const double *)b, sb, (double *)y, n, c->alpha);
        return;
    }
    if ((dt == MP_F16 || dt == MP_BF16) && k == MP_BINARY_RELU_GRAD && sa && sb) {
        /* x > 0 ? dy : +0, on the bits (the widened comparison exactly) */
        uint16_t inf = dt == MP_F16 ? 0x7C00u : 0x7F80u;
        const uint16_t *x = (const uint16_t *)a, *z = (const uint16_t *)b;
        uint16_t *o = (uint16_t *)y;
        for (int64_t i = 0; i < n; i++)
            o[i] = (uint16_t)(z[i] & (uint16_t)-(uint16_t)pos16(x[i], inf)); /* branch-free: vectorizes */
        return;
    }
    if (dt == MP_F16 || dt == MP_BF16) {
        float ba[MP_BLOCK], bb[MP_BLOCK], by[MP_BLOCK];
        if (!sa)
            mp_load_f32(dt, a, ba, 1);
        if (!sb)
            mp_load_f32(dt, b, bb, 1);
        for (int64_t i = 0; i < n; i += MP_BLOCK) {
            int64_t m = n - i < MP_BLOCK ? n - i : MP_BLOCK;
            if (sa)
                mp_load_f32(dt, a + i * 2, ba, m);
            if (sb)
                mp_load_f32(dt, b + i * 2, bb, m);
            if (cmp) {
                cmp_f32(k, ba, sa, bb, sb, (uint8_t *)y + i, m);
            } else {
                bin_f32(k, ba, sa, bb, sb, by, m, c->alpha);
                mp_store_f32(dt, by, y + i * 2, m);
            }
        }
        return;
    }
    int64_t ba[MP_BLOCK], bb[MP_BLOCK], by[MP_BLOCK];
    if (!sa)
        load_i64(dt, a, ba, 1);
    if (!sb)
        load_i64(dt, b, bb, 1);
    for (int64_t i = 0; i < n; i += MP_BLOCK) {
        int64_t m = n - i < MP_BLOCK ? n - i : MP_BLOCK;
        if (sa)
            load_i64(dt, a + i * (int64_t)es, ba, m);
        if (sb)
            load_i64(dt, b + i * (int64_t)es, bb, m);
        if (cmp) {
            cmp_i64(k, ba, sa, bb, sb, (uint8_t *)y + i, m);
        } else {
            int err = bin_i64(k, ba, sa, bb, sb, by, m);
            if (err) {
                c->error = err;
                return;
            }
            store_i64(dt, by, y + i * (int64_t)es, m);
        }
    }
}

/* 16-bit (rows, inner) with short rows where each operand is either contiguous or one row
 * repeated (a bias): whole blocks of rows per widening instead of one call per row. The
 * same float32 arithmetic and rounding as bin_run. Returns 0 when the shape does not fit. */
static int bin_rows16(bin_ctx *c, int64_t beg, int64_t end) {
    const mp_bcast *bc = c->bc;
    mp_dtype dt = c->dt;
    if (bc->ndim != 2 || (dt != MP_F16 && dt != MP_BF16) || binary_is_cmp(c->k))
        return 0;
    int64_t inner = bc->shape[1];
    if (inner > MP_BLOCK / 4)
        return 0;
    int row[2];
    for (int o = 0; o < 2; o++) {
        if (bc->stride[o][1] != 1 || (bc->stride[o][0] != 0 && bc->stride[o][0] != inner))
            return 0;
        row[o] = bc->stride[o][0] == 0;
    }
    int64_t per = MP_BLOCK / inner; /* rows per block */
    float ba[MP_BLOCK], bb[MP_BLOCK], by[MP_BLOCK];
    float *buf[2] = {ba, bb};
    const char *src[2] = {c->a, c->b};
    for (int o = 0; o < 2; o++)
        if (row[o]) { /* the repeated row, tiled once */
            mp_load_f32(dt, src[o], buf[o], inner);
            for (int64_t r = 1; r < per; r++)
                memcpy(buf[o] + r * inner, buf[o], (size_t)inner * sizeof(float));
        }
    for (int64_t r = beg; r < end; r += per) {
        int64_t nr = end - r < per ? end - r : per, m = nr * inner;
        for (int o = 0; o < 2; o++)
            if (!row[o])
                mp_load_f32(dt, src[o] + r * inner * 2, buf[o], m);
        bin_f32(c->k, ba, 1, bb, 1, by, m, c->alpha);
        mp_store_f32(dt, by, c->y + r * inner * 2, m);
    }
    return 1;
}

static void bin_range(void *vctx, int64_t beg, int64_t end) {
    bin_ctx *c = vctx;
    const mp_bcast *bc = c->bc;
    int nd = bc->ndim;
    if (!c->flat && bin_rows16(c, beg, end))
        return;
    int sa = bc->stride[0][nd - 1] != 0, sb = bc->stride[1][nd - 1] != 0;
    if (c->flat) {
        bin_run(c, sa ? beg : 0, sa, sb ? beg : 0, sb, beg, end - beg);
        return;
    }
    int64_t inner = bc->shape[nd - 1];
    for (int64_t r = beg; r < end; r++) {
        int64_t rem = r, oa = 0, ob = 0;
        for (int d = nd - 2; d >= 0; d--) {
            int64_t i = rem % bc->shape[d];
            rem /= bc->shape[d];
            oa += i * bc->stride[0][d];
            ob += i * bc->stride[1][d];
        }
        bin_run(c, oa, sa, ob, sb, r * inner, inner);
        if (c->error)
            return;
    }
}

mp_status mp_cpu_binary(mp_device dev, mp_binary_kind k, mp_dtype dt, const mp_bcast *bc, const void *a,
                        const void *b, void *y, double alpha) {
    (void)dev;
    if (bc->numel == 0)
        return MP_OK;
    bin_ctx c = {k, dt, bc, a, b, y, alpha, bc->ndim == 1, 0};
    int heavy = k == MP_BINARY_POW || k >= MP_BINARY_SIGMOID_GRAD;
    int64_t grain = heavy ? MP_GRAIN / 4 : MP_GRAIN * 2;
    if (c.flat) {
        mp_parallel_for(bc->numel, grain, bin_range, &c);
    } else {
        int64_t inner = bc->shape[bc->ndim - 1];
        mp_parallel_for(bc->numel / inner, grain / inner + 1, bin_range, &c);
    }
    if (c.error == 1)
        return mp_error_set(MP_ERR_VALUE, "Integer division by zero");
    if (c.error == 2)
        return mp_error_set(MP_ERR_VALUE, "Integers to negative integer powers are not allowed");
    return MP_OK;
}
