// kernels.cuh — device-side helpers every kernel file shares: the grid-stride loop and the
// dtype traits that load an element into its compute type and store it back rounding once,
// exactly as the CPU backend's mp_load_f32 / mp_store_f32 / load_i64 / store_i64 do
// (16-bit floats compute in float32, float64 in double, integers and bool in int64 with
// two's-complement wrap on store). Conversions are scalar_cast.h's, shared with the CPU.
#ifndef MP_KERNELS_CUH
#define MP_KERNELS_CUH
#include "mp_cuda.h"
#include "elementwise_math.h"
#include "scalar_cast.h"

#define MP_GRID_STRIDE(i, n) \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

template <int DT> struct mp_dt;

template <> struct mp_dt<MP_F32> {
    typedef float T;   // storage
    typedef float C;   // compute
    static __device__ __forceinline__ C load(const T *p, int64_t i) { return p[i]; }
    static __device__ __forceinline__ void store(T *p, int64_t i, C v) { p[i] = v; }
};
template <> struct mp_dt<MP_F64> {
    typedef double T;
    typedef double C;
    static __device__ __forceinline__ C load(const T *p, int64_t i) { return p[i]; }
    static __device__ __forceinline__ void store(T *p, int64_t i, C v) { p[i] = v; }
};
template <> struct mp_dt<MP_F16> {
    typedef uint16_t T;
    typedef float C;
    static __device__ __forceinline__ C load(const T *p, int64_t i) { return mp_cvt_f16_f32(p[i]); }
    static __device__ __forceinline__ void store(T *p, int64_t i, C v) { p[i] = mp_cvt_f32_f16(v); }
};
template <> struct mp_dt<MP_BF16> {
    typedef uint16_t T;
    typedef float C;
    static __device__ __forceinline__ C load(const T *p, int64_t i) { return mp_cvt_bf16_f32(p[i]); }
    static __device__ __forceinline__ void store(T *p, int64_t i, C v) { p[i] = mp_cvt_f32_bf16(v); }
};
#define MP_INT_DT(DT, TYPE, WRAP)                                                                       \
    template <> struct mp_dt<DT> {                                                                      \
        typedef TYPE T;                                                                                 \
        typedef int64_t C;                                                                              \
        static __device__ __forceinline__ C load(const T *p, int64_t i) { return (int64_t)p[i]; }       \
        static __device__ __forceinline__ void store(T *p, int64_t i, C v) { p[i] = WRAP; }             \
    };
MP_INT_DT(MP_I32, int32_t, (int32_t)(uint32_t)(uint64_t)v)
MP_INT_DT(MP_I64, int64_t, v)
MP_INT_DT(MP_U8, uint8_t, (uint8_t)(uint64_t)v)
MP_INT_DT(MP_I8, int8_t, (int8_t)(uint8_t)(uint64_t)v)
#undef MP_INT_DT
template <> struct mp_dt<MP_BOOL> {
    typedef uint8_t T;
    typedef int64_t C;
    static __device__ __forceinline__ C load(const T *p, int64_t i) { return p[i] != 0; }
    static __device__ __forceinline__ void store(T *p, int64_t i, C v) { p[i] = v != 0; }
};

// return FN<DT>(args...) for the dtype dt (a float dtype, or any dtype); falls through for
// other dtypes, so the caller reports them after the switch.
#define MP_SWITCH_FLOAT(dt, FN, ...)                     \
    switch (dt) {                                        \
    case MP_F32: return FN<MP_F32>(__VA_ARGS__);         \
    case MP_F16: return FN<MP_F16>(__VA_ARGS__);         \
    case MP_BF16: return FN<MP_BF16>(__VA_ARGS__);       \
    case MP_F64: return FN<MP_F64>(__VA_ARGS__);         \
    default: break;                                      \
    }
#define MP_SWITCH_ALL(dt, FN, ...)                       \
    switch (dt) {                                        \
    case MP_F32: return FN<MP_F32>(__VA_ARGS__);         \
    case MP_F16: return FN<MP_F16>(__VA_ARGS__);         \
    case MP_BF16: return FN<MP_BF16>(__VA_ARGS__);       \
    case MP_F64: return FN<MP_F64>(__VA_ARGS__);         \
    case MP_I32: return FN<MP_I32>(__VA_ARGS__);         \
    case MP_I64: return FN<MP_I64>(__VA_ARGS__);         \
    case MP_U8: return FN<MP_U8>(__VA_ARGS__);           \
    case MP_I8: return FN<MP_I8>(__VA_ARGS__);           \
    case MP_BOOL: return FN<MP_BOOL>(__VA_ARGS__);       \
    default: break;                                      \
    }

// ------------------------------------------------------------------ elementwise math
// csrc/elementwise_math.h's formulas (the CPU's), as float / double overloads for templates.
// Libm results (exp, tanh, erf ...) are CUDA's: within a few ulp of glibc's, not equal.
__device__ __forceinline__ float mp_sigmoid(float x) { return mp_sigmoid_f32(x); }
__device__ __forceinline__ double mp_sigmoid(double x) { return mp_sigmoid_f64(x); }
__device__ __forceinline__ float mp_softplus(float x) { return mp_softplus_f32(x); }
__device__ __forceinline__ double mp_softplus(double x) { return mp_softplus_f64(x); }
__device__ __forceinline__ float mp_floormod(float a, float b) { return mp_floormod_f32(a, b); }
__device__ __forceinline__ double mp_floormod(double a, double b) { return mp_floormod_f64(a, b); }
__device__ __forceinline__ float mp_exp(float x) { return expf(x); }
__device__ __forceinline__ double mp_exp(double x) { return exp(x); }

// ------------------------------------------------------------------ block reductions
// Every thread of the block calls it with its value; all get the block's result. blockDim.x
// is a multiple of 32 (at most 1024); `shared` holds 32 T; `identity` is op's neutral value.
template <typename T, typename Op> __device__ T mp_block_reduce(T v, Op op, T identity, T *shared) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int d = 16; d > 0; d >>= 1)
        v = op(v, __shfl_down_sync(0xffffffffu, v, d));
    if (lane == 0)
        shared[w] = v;
    __syncthreads();
    if (w == 0) {
        v = lane < nw ? shared[lane] : identity;
        for (int d = 16; d > 0; d >>= 1)
            v = op(v, __shfl_down_sync(0xffffffffu, v, d));
        if (lane == 0)
            shared[0] = v;
    }
    __syncthreads();
    T r = shared[0];
    __syncthreads(); // shared may be reused right after
    return r;
}
// NaN-propagating max (the CPU's `mx = x > mx || x != x ? x : mx`) and a plain sum.
struct mp_op_max {
    template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return b > a || b != b ? b : a; }
};
struct mp_op_sum {
    template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};

static inline bool mp_is_float(mp_dtype dt) { return dt == MP_F32 || dt == MP_F16 || dt == MP_BF16 || dt == MP_F64; }
#endif
