/* dtype.c — dtype sizes and names, the exported scalar conversions and the row casts.
 * The scalar conversions are scalar_cast.h's (the reference the vectorised rows in
 * cast_x86.c and the CUDA kernels match bit for bit: float16 as NumPy converts, bfloat16 as
 * ml_dtypes does). */
#include <math.h>
#include <string.h>

#include "mixprec.h"
#include "cast_internal.h"
#include "scalar_cast.h"

static const size_t dtype_size[MP_DTYPE_COUNT] = {
    [MP_F32] = 4, [MP_F16] = 2, [MP_BF16] = 2, [MP_F64] = 8, [MP_I32] = 4,
    [MP_I64] = 8, [MP_U8] = 1,  [MP_BOOL] = 1, [MP_I8] = 1,
    [MP_STRING] = 16, /* an (offset, length) record into the tensor's arena */
};
static const char *const dtype_name[MP_DTYPE_COUNT] = {
    [MP_F32] = "float32", [MP_F16] = "float16", [MP_BF16] = "bfloat16",
    [MP_F64] = "float64", [MP_I32] = "int32",   [MP_I64] = "int64",
    [MP_U8] = "uint8",    [MP_BOOL] = "bool",   [MP_I8] = "int8",
    [MP_STRING] = "string",
};
_Static_assert(MP_DTYPE_COUNT == 10, "new dtype: extend the tables in dtype.c, _dtypes.py and convert.c");

int mp_dtype_valid(int dt) { return dt >= 0 && dt < MP_DTYPE_COUNT; }
size_t mp_dtype_size(mp_dtype dt) { return mp_dtype_valid(dt) ? dtype_size[dt] : 0; }
const char *mp_dtype_name(mp_dtype dt) { return mp_dtype_valid(dt) ? dtype_name[dt] : "<invalid dtype>"; }
int mp_dtype_is_floating(mp_dtype dt) {
    return dt == MP_F32 || dt == MP_F16 || dt == MP_BF16 || dt == MP_F64;
}
int mp_dtype_is_integer(mp_dtype dt) { return dt == MP_I32 || dt == MP_I64 || dt == MP_U8 || dt == MP_I8; }

/* The scalar conversions live in scalar_cast.h (shared with the CUDA kernels). */
uint16_t mp_f32_to_f16(float f) { return mp_cvt_f32_f16(f); }
float mp_f16_to_f32(uint16_t h) { return mp_cvt_f16_f32(h); }
uint16_t mp_f32_to_bf16(float f) { return mp_cvt_f32_bf16(f); }
float mp_bf16_to_f32(uint16_t b) { return mp_cvt_bf16_f32(b); }
uint16_t mp_f64_to_f16(double d) { return mp_cvt_f64_f16(d); }
uint16_t mp_f64_to_bf16(double d) { return mp_cvt_f64_bf16(d); }

/* ------------------------------------------------------------------ row casts */

static int force_scalar;

int mp_cast_force_scalar(int on) {
    int prev = force_scalar;
    force_scalar = on;
    return prev;
}

static int use_x86(void) {
    static int cached = -1;
    if (cached < 0)
        cached = mp_cast_x86_available();
    return cached && !force_scalar;
}

const char *mp_cast_isa(void) { return use_x86() ? "avx2+f16c" : "scalar"; }

/* Each row cast: a scalar loop (the reference, and the path without AVX2/F16C) and the
 * entry point that picks the x86 kernel when the CPU has it. */
#define MP_ROW_CAST(NAME, SRC, DST, CVT)                                      \
    void mp_row_##NAME##_scalar(const SRC *src, DST *dst, int64_t n) {        \
        for (int64_t i = 0; i < n; i++)                                       \
            dst[i] = CVT(src[i]);                                             \
    }                                                                         \
    void mp_row_##NAME(const SRC *src, DST *dst, int64_t n) {                 \
        if (use_x86())                                                        \
            mp_row_##NAME##_x86(src, dst, n);                                 \
        else                                                                  \
            mp_row_##NAME##_scalar(src, dst, n);                              \
    }
MP_ROW_CAST(f16_to_f32, uint16_t, float, mp_f16_to_f32)
MP_ROW_CAST(f32_to_f16, float, uint16_t, mp_f32_to_f16)
MP_ROW_CAST(bf16_to_f32, uint16_t, float, mp_bf16_to_f32)
MP_ROW_CAST(f32_to_bf16, float, uint16_t, mp_f32_to_bf16)
#undef MP_ROW_CAST
