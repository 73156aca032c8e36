// unary.cu — y = f(x) elementwise (the backend's unary slot, the kinds of csrc/unary.def).
// 16-bit floats are computed in float32 and rounded once, float64 in double, integers in
// int64 with wrap-around, as in csrc/cpu_elementwise.c; IS_FINITE/IS_NAN/IS_INF write bool.
// The kind is a run-time switch (uniform across threads): one kernel per dtype keeps the
// number of instantiations, and the build, small.
#include "kernels.cuh"

template <typename T> __device__ __forceinline__ T relu_(T x) { return x > (T)0 ? x : (x == x ? (T)0 : x); }
template <typename T> __device__ __forceinline__ T sign_(T x) { return x > (T)0 ? (T)1 : x < (T)0 ? (T)-1 : x; }

__device__ __forceinline__ float f_(mp_unary_kind k, float x, float alpha) {
    switch (k) {
    case MP_UNARY_NEG: return -x;
    case MP_UNARY_ABS: return fabsf(x);
    case MP_UNARY_EXP: return expf(x);
    case MP_UNARY_LOG: return logf(x);
    case MP_UNARY_SQRT: return sqrtf(x);
    case MP_UNARY_SQUARE: return x * x;
    case MP_UNARY_RELU: return relu_(x);
    case MP_UNARY_SIGMOID: return mp_sigmoid(x);
    case MP_UNARY_TANH: return tanhf(x);
    case MP_UNARY_RSQRT: return 1.0f / sqrtf(x);
    case MP_UNARY_RECIPROCAL: return 1.0f / x;
    case MP_UNARY_FLOOR: return floorf(x);
    case MP_UNARY_CEIL: return ceilf(x);
    case MP_UNARY_ROUND: return rintf(x);
    case MP_UNARY_SIGN: return sign_(x);
    case MP_UNARY_LOG1P: return log1pf(x);
    case MP_UNARY_EXPM1: return expm1f(x);
    case MP_UNARY_ELU: return x > 0 ? x : alpha * expm1f(x);
    case MP_UNARY_SOFTPLUS: return mp_softplus(x);
    case MP_UNARY_GELU: return (float)mp_gelu_f64(x);
    case MP_UNARY_GELU_TANH: return (float)mp_gelu_tanh_f64(x);
    case MP_UNARY_SIN: return sinf(x);
    case MP_UNARY_COS: return cosf(x);
    case MP_UNARY_LEAKY_RELU: return x > 0 ? x : alpha * x;
    case MP_UNARY_SCALE: return alpha * x;
    case MP_UNARY_TAN: return tanf(x);
    case MP_UNARY_ASIN: return asinf(x);
    case MP_UNARY_ACOS: return acosf(x);
    case MP_UNARY_ATAN: return atanf(x);
    case MP_UNARY_SINH: return sinhf(x);
    case MP_UNARY_COSH: return coshf(x);
    case MP_UNARY_ASINH: return asinhf(x);
    case MP_UNARY_ACOSH: return acoshf(x);
    case MP_UNARY_ATANH: return atanhf(x);
    case MP_UNARY_ERF: return erff(x);
    case MP_UNARY_ERFC: return erfcf(x);
    case MP_UNARY_ERFINV: return (float)mp_erfinv_f64(x);
    case MP_UNARY_NDTRI: return (float)mp_ndtri_f64(x);
    case MP_UNARY_LGAMMA: return (float)mp_lgamma_f64(x);
    case MP_UNARY_DIGAMMA: return (float)mp_digamma_f64(x);
    case MP_UNARY_SOFTSIGN: return x / (1.0f + fabsf(x));
    case MP_UNARY_SELU: return x > 0 ? (float)MP_SELU_SCALE * x : (float)(MP_SELU_SCALE * MP_SELU_ALPHA) * expm1f(x);
    case MP_UNARY_BESSEL_I0: return (float)mp_bessel_i_f64(0, x);
    case MP_UNARY_BESSEL_I0E: return (float)mp_bessel_ie_f64(0, x);
    case MP_UNARY_BESSEL_I1: return (float)mp_bessel_i_f64(1, x);
    case MP_UNARY_BESSEL_I1E: return (float)mp_bessel_ie_f64(1, x);
    default: return x;
    }
}

__device__ __forceinline__ double f_(mp_unary_kind k, double x, double alpha) {
    switch (k) {
    case MP_UNARY_NEG: return -x;
    case MP_UNARY_ABS: return fabs(x);
    case MP_UNARY_EXP: return exp(x);
    case MP_UNARY_LOG: return log(x);
    case MP_UNARY_SQRT: return sqrt(x);
    case MP_UNARY_SQUARE: return x * x;
    case MP_UNARY_RELU: return relu_(x);
    case MP_UNARY_SIGMOID: return mp_sigmoid(x);
    case MP_UNARY_TANH: return tanh(x);
    case MP_UNARY_RSQRT: return 1.0 / sqrt(x);
    case MP_UNARY_RECIPROCAL: return 1.0 / x;
    case MP_UNARY_FLOOR: return floor(x);
    case MP_UNARY_CEIL: return ceil(x);
    case MP_UNARY_ROUND: return rint(x);
    case MP_UNARY_SIGN: return sign_(x);
    case MP_UNARY_LOG1P: return log1p(x);
    case MP_UNARY_EXPM1: return expm1(x);
    case MP_UNARY_ELU: return x > 0 ? x : alpha * expm1(x);
    case MP_UNARY_SOFTPLUS: return mp_softplus(x);
    case MP_UNARY_GELU: return mp_gelu_f64(x);
    case MP_UNARY_GELU_TANH: return mp_gelu_tanh_f64(x);
    case MP_UNARY_SIN: return sin(x);
    case MP_UNARY_COS: return cos(x);
    case MP_UNARY_LEAKY_RELU: return x > 0 ? x : alpha * x;
    case MP_UNARY_SCALE: return alpha * x;
    case MP_UNARY_TAN: return tan(x);
    case MP_UNARY_ASIN: return asin(x);
    case MP_UNARY_ACOS: return acos(x);
    case MP_UNARY_ATAN: return atan(x);
    case MP_UNARY_SINH: return sinh(x);
    case MP_UNARY_COSH: return cosh(x);
    case MP_UNARY_ASINH: return asinh(x);
    case MP_UNARY_ACOSH: return acosh(x);
    case MP_UNARY_ATANH: return atanh(x);
    case MP_UNARY_ERF: return erf(x);
    case MP_UNARY_ERFC: return erfc(x);
    case MP_UNARY_ERFINV: return mp_erfinv_f64(x);
    case MP_UNARY_NDTRI: return mp_ndtri_f64(x);
    case MP_UNARY_LGAMMA: return mp_lgamma_f64(x);
    case MP_UNARY_DIGAMMA: return mp_digamma_f64(x);
    case MP_UNARY_SOFTSIGN: return x / (1.0 + fabs(x));
    case MP_UNARY_SELU: return x > 0 ? MP_SELU_SCALE * x : (MP_SELU_SCALE * MP_SELU_ALPHA) * expm1(x);
    case MP_UNARY_BESSEL_I0: return mp_bessel_i_f64(0, x);
    case MP_UNARY_BESSEL_I0E: return mp_bessel_ie_f64(0, x);
    case MP_UNARY_BESSEL_I1: return mp_bessel_i_f64(1, x);
    case MP_UNARY_BESSEL_I1E: return mp_bessel_ie_f64(1, x);
    default: return x;
    }
}

__device__ __forceinline__ int64_t i_(mp_unary_kind k, int64_t x) {
    uint64_t u = (uint64_t)x;
    switch (k) {
    case MP_UNARY_NEG: return (int64_t)(0 - u);
    case MP_UNARY_ABS: return x < 0 ? (int64_t)(0 - u) : x;
    case MP_UNARY_SQUARE: return (int64_t)(u * u);
    case MP_UNARY_SIGN: return (x > 0) - (x < 0);
    case MP_UNARY_RELU: return x > 0 ? x : 0;
    case MP_UNARY_LOGICAL_NOT: return !x;
    default: return x;
    }
}

__device__ __forceinline__ bool is_pred(mp_unary_kind k) {
    return k == MP_UNARY_IS_FINITE || k == MP_UNARY_IS_NAN || k == MP_UNARY_IS_INF;
}

template <int DT>
static __global__ void unary_float_kernel(mp_unary_kind k, const typename mp_dt<DT>::T *x, void *y, int64_t n,
                                          double alpha) {
    typedef typename mp_dt<DT>::C C;
    const C a = (C)alpha; // the CPU's (T)alpha
    MP_GRID_STRIDE(i, n) {
        C v = mp_dt<DT>::load(x, i);
        if (is_pred(k)) {
            ((uint8_t *)y)[i] = k == MP_UNARY_IS_FINITE ? isfinite(v) != 0 : k == MP_UNARY_IS_NAN ? v != v : isinf(v) != 0;
            continue;
        }
        mp_dt<DT>::store((typename mp_dt<DT>::T *)y, i, f_(k, v, a));
    }
}

template <int DT>
static __global__ void unary_int_kernel(mp_unary_kind k, const typename mp_dt<DT>::T *x, typename mp_dt<DT>::T *y,
                                        int64_t n) {
    MP_GRID_STRIDE(i, n) mp_dt<DT>::store(y, i, i_(k, mp_dt<DT>::load(x, i)));
}

template <int DT>
static mp_status unary_launch(mp_cuda_ctx *c, mp_unary_kind k, const void *x, void *y, int64_t n, double alpha) {
    typedef typename mp_dt<DT>::T T;
    if constexpr (DT == MP_F32 || DT == MP_F64 || DT == MP_F16 || DT == MP_BF16)
        unary_float_kernel<DT><<<mp_cuda_grid(c, n), MP_THREADS, 0, c->stream>>>(k, (const T *)x, y, n, alpha);
    else
        unary_int_kernel<DT><<<mp_cuda_grid(c, n), MP_THREADS, 0, c->stream>>>(k, (const T *)x, (T *)y, n);
    MP_LAUNCH_CHECK();
    return MP_OK;
}

extern "C" mp_status mp_cuda_unary(mp_device dev, mp_unary_kind k, mp_dtype dt, const void *x, void *y, int64_t n,
                                   double alpha) {
    mp_cuda_ctx *c;
    if (n <= 0)
        return MP_OK;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    MP_SWITCH_ALL(dt, unary_launch, c, k, x, y, n, alpha)
    return MP_CUDA_FAIL(MP_ERR_INTERNAL, "unary: unknown dtype %d", (int)dt);
}
