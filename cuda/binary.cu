// binary.cu — y = f(a, b) elementwise with broadcasting (the backend's binary slot, the
// kinds of csrc/binary.def). Arithmetic as csrc/cpu_elementwise.c: 16-bit floats in float32
// rounded once, float64 in double, integers in int64 with wrap-around; comparisons write
// bool. Integer division by zero and negative integer powers are errors, as on the CPU: the
// kernel raises a device flag that only those integer kinds read back (a host
// synchronisation, never on a float training path).
#include "kernels.cuh"

// Offsets of a and b for output element i of the collapsed broadcast. I is uint32_t when
// the output has fewer than 2^32 elements (then so do a and b): 32-bit division is several
// times cheaper than 64-bit on a GPU, and this runs once per element (bias additions).
template <typename I> __device__ __forceinline__ void bcast_offsets(const mp_bcast &bc, I i, int64_t *oa, int64_t *ob) {
    I a = 0, b = 0;
    for (int d = bc.ndim - 1; d >= 0; d--) {
        I s = (I)bc.shape[d];
        I q = i / s;
        I j = i - q * s;
        i = q;
        a += j * (I)bc.stride[0][d];
        b += j * (I)bc.stride[1][d];
    }
    *oa = (int64_t)a;
    *ob = (int64_t)b;
}

__device__ __forceinline__ float pow_(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double pow_(double a, double b) { return pow(a, b); }
__device__ __forceinline__ float floor_(float a) { return floorf(a); }
__device__ __forceinline__ double floor_(double a) { return floor(a); }
__device__ __forceinline__ float atan2_(float a, float b) { return atan2f(a, b); }
__device__ __forceinline__ double atan2_(double a, double b) { return atan2(a, b); }
__device__ __forceinline__ float trunc_(float a) { return truncf(a); }
__device__ __forceinline__ double trunc_(double a) { return trunc(a); }
__device__ __forceinline__ float fmod_(float a, float b) { return fmodf(a, b); }
__device__ __forceinline__ double fmod_(double a, double b) { return fmod(a, b); }
__device__ __forceinline__ float log_(float a) { return logf(a); }
__device__ __forceinline__ double log_(double a) { return log(a); }
__device__ __forceinline__ float log1p_(float a) { return log1pf(a); }
__device__ __forceinline__ double log1p_(double a) { return log1p(a); }
__device__ __forceinline__ float nextafter_(float a, float b) { return nextafterf(a, b); }
__device__ __forceinline__ double nextafter_(double a, double b) { return nextafter(a, b); }

// NaN-propagating max/min (NumPy's maximum/minimum), as the CPU's PMAX/PMIN.
template <typename T> __device__ __forceinline__ T pmax_(T x, T z) { return x > z || x != x ? x : z; }
template <typename T> __device__ __forceinline__ T pmin_(T x, T z) { return x < z || x != x ? x : z; }

// The CPU's BINARY_FLOAT_BODY for one element (T = float or double; alpha already (T)).
template <typename T> __device__ __forceinline__ T fbin_(mp_binary_kind k, T x, T z, T alpha) {
    switch (k) {
    case MP_BINARY_ADD: return x + z;
    case MP_BINARY_SUB: return x - z;
    case MP_BINARY_MUL: return x * z;
    case MP_BINARY_DIV: return x / z;
    case MP_BINARY_FLOORDIV: return floor_(x / z);
    case MP_BINARY_FLOORMOD: return mp_floormod(x, z);
    case MP_BINARY_POW: return pow_(x, z);
    case MP_BINARY_MAXIMUM: return pmax_(x, z);
    case MP_BINARY_MINIMUM: return pmin_(x, z);
    case MP_BINARY_SQUARED_DIFFERENCE: return (x - z) * (x - z);
    case MP_BINARY_RELU_GRAD: return x > 0 ? z : (T)0;
    case MP_BINARY_SIGMOID_GRAD: return z * x * ((T)1 - x);
    case MP_BINARY_TANH_GRAD: return z * ((T)1 - x * x);
    case MP_BINARY_ELU_GRAD: return x > 0 ? z : z * (x + alpha);
    case MP_BINARY_SOFTPLUS_GRAD: return z * mp_sigmoid(x);
    case MP_BINARY_GELU_GRAD: return z * (T)mp_gelu_grad_f64(x);
    case MP_BINARY_GELU_TANH_GRAD: return z * (T)mp_gelu_tanh_grad_f64(x);
    case MP_BINARY_RSQRT_GRAD: return z * (T)-0.5 * x * x * x;
    case MP_BINARY_SQRT_GRAD: return z * (T)0.5 / x;
    case MP_BINARY_LEAKY_RELU_GRAD: return x > 0 ? z : alpha * z;
    case MP_BINARY_ATAN2: return atan2_(x, z);
    case MP_BINARY_TRUNCATEDIV: return trunc_(x / z);
    case MP_BINARY_TRUNCATEMOD: return fmod_(x, z);
    case MP_BINARY_XLOGY: return MP_XLOGY(x, z, log_);
    case MP_BINARY_XDIVY: return MP_XDIVY(x, z);
    case MP_BINARY_XLOG1PY: return MP_XLOGY(x, z, log1p_);
    case MP_BINARY_DIV_NO_NAN: return MP_NO_NAN(z, x / z);
    case MP_BINARY_MUL_NO_NAN: return MP_NO_NAN(z, x * z);
    case MP_BINARY_NEXTAFTER: return nextafter_(x, z);
    case MP_BINARY_IGAMMA: return (T)mp_igamma_f64(x, z);
    case MP_BINARY_IGAMMAC: return (T)mp_igammac_f64(x, z);
    case MP_BINARY_ZETA: return (T)mp_zeta_f64(x, z);
    case MP_BINARY_POLYGAMMA: return (T)mp_polygamma_f64(x, z);
    case MP_BINARY_IGAMMA_GRAD_A: return (T)mp_igamma_grad_a_f64(x, z);
    default: return (T)0;
    }
}

template <typename T> __device__ __forceinline__ uint8_t cmp_(mp_binary_kind k, T x, T z) {
    switch (k) {
    case MP_BINARY_EQUAL: return x == z;
    case MP_BINARY_NOT_EQUAL: return x != z;
    case MP_BINARY_LESS: return x < z;
    case MP_BINARY_LESS_EQUAL: return x <= z;
    case MP_BINARY_GREATER: return x > z;
    case MP_BINARY_GREATER_EQUAL: return x >= z;
    case MP_BINARY_LOGICAL_AND: return (x != 0) && (z != 0);
    case MP_BINARY_LOGICAL_OR: return (x != 0) || (z != 0);
    default: return 0;
    }
}


// The CPU's bin_i64 for one element; *err = 1 (division by zero) or 2 (negative power).
__device__ __forceinline__ int64_t ibin_(mp_binary_kind k, int64_t x, int64_t z, int *err) {
    switch (k) {
    case MP_BINARY_ADD: return (int64_t)((uint64_t)x + (uint64_t)z);
    case MP_BINARY_SUB: return (int64_t)((uint64_t)x - (uint64_t)z);
    case MP_BINARY_MUL: return (int64_t)((uint64_t)x * (uint64_t)z);
    case MP_BINARY_FLOORDIV:
        if (z == 0) {
            *err = 1;
            return 0;
        }
        return mp_ifloordiv(x, z);
    case MP_BINARY_FLOORMOD:
        if (z == 0) {
            *err = 1;
            return 0;
        }
        return mp_ifloormod(x, z);
    case MP_BINARY_POW:
        if (z < 0) {
            *err = 2;
            return 0;
        }
        return mp_ipow(x, z);
    case MP_BINARY_TRUNCATEDIV:
        if (z == 0) {
            *err = 1;
            return 0;
        }
        return mp_itruncdiv(x, z);
    case MP_BINARY_TRUNCATEMOD:
        if (z == 0) {
            *err = 1;
            return 0;
        }
        return mp_itruncmod(x, z);
    case MP_BINARY_MAXIMUM: return x > z ? x : z;
    case MP_BINARY_MINIMUM: return x < z ? x : z;
    case MP_BINARY_SQUARED_DIFFERENCE: return (int64_t)(((uint64_t)x - (uint64_t)z) * ((uint64_t)x - (uint64_t)z));
    case MP_BINARY_RELU_GRAD: return x > 0 ? z : 0;
    default: return 0;
    }
}

__device__ __forceinline__ bool is_cmp(mp_binary_kind k) {
    switch (k) {
#define MP_BINARY(NAME, name, cmp) \
    case MP_BINARY_##NAME: return cmp;
#include "binary.def"
#undef MP_BINARY
    default: return false;
    }
}

template <int DT>
static __global__ void binary_kernel(mp_binary_kind k, mp_bcast bc, const typename mp_dt<DT>::T *a,
                                     const typename mp_dt<DT>::T *b, void *y, double alpha, uint8_t *err_flag) {
    typedef typename mp_dt<DT>::T T;
    typedef typename mp_dt<DT>::C C;
    const bool flat = bc.ndim == 1, narrow = bc.numel <= (int64_t)UINT32_MAX;
    const int64_t sa = bc.stride[0][0], sb = bc.stride[1][0];
    MP_GRID_STRIDE(i, bc.numel) {
        int64_t oa, ob;
        if (flat) {
            oa = i * sa;
            ob = i * sb;
        } else if (narrow) {
            bcast_offsets<uint32_t>(bc, (uint32_t)i, &oa, &ob);
        } else {
            bcast_offsets<int64_t>(bc, i, &oa, &ob);
        }
        C x = mp_dt<DT>::load(a, oa), z = mp_dt<DT>::load(b, ob);
        if (is_cmp(k)) {
            ((uint8_t *)y)[i] = cmp_(k, x, z);
            continue;
        }
        if constexpr (DT == MP_F32 || DT == MP_F64 || DT == MP_F16 || DT == MP_BF16) {
            mp_dt<DT>::store((T *)y, i, fbin_(k, x, z, (C)alpha));
        } else {
            int err = 0;
            C r = ibin_(k, x, z, &err);
            if (err)
                *err_flag = (uint8_t)err; // any one of the offending elements' codes
            mp_dt<DT>::store((T *)y, i, r);
        }
    }
}

template <int DT>
static mp_status binary_launch(mp_cuda_ctx *c, mp_binary_kind k, const mp_bcast *bc, const void *a, const void *b,
                               void *y, double alpha) {
    typedef typename mp_dt<DT>::T T;
    const bool checked = !mp_is_float((mp_dtype)DT) &&
                         (k == MP_BINARY_FLOORDIV || k == MP_BINARY_FLOORMOD || k == MP_BINARY_POW ||
                          k == MP_BINARY_TRUNCATEDIV || k == MP_BINARY_TRUNCATEMOD);
    if (checked && mp_cuda_capturing(c)) // its error check reads back: not in a CUDA graph
        return mp_cuda_capture_refuse(c, "an integer division's error check");
    // one flag per device: another thread's checked op must not zero or set it between this
    // op's zeroing and its read-back (its error would be lost, or blamed on this op)
    std::unique_lock<std::mutex> flag_lock(c->flag_mu, std::defer_lock);
    if (checked) {
        flag_lock.lock();
        MP_CUDA_CHECK(cudaMemsetAsync(c->flag, 0, 1, c->stream));
    }
    binary_kernel<DT><<<mp_cuda_grid(c, bc->numel), MP_THREADS, 0, c->stream>>>(k, *bc, (const T *)a, (const T *)b, y,
                                                                               alpha, c->flag);
    MP_LAUNCH_CHECK();
    if (!checked)
        return MP_OK;
    uint8_t err = 0;
    MP_CUDA_CHECK(cudaMemcpyAsync(&err, c->flag, 1, cudaMemcpyDeviceToHost, c->stream));
    MP_TRY(mp_cuda_stream_sync(c));
    if (err == 1)
        return MP_CUDA_FAIL(MP_ERR_VALUE, "Integer division by zero");
    if (err == 2)
        return MP_CUDA_FAIL(MP_ERR_VALUE, "Integers to negative integer powers are not allowed");
    return MP_OK;
}

extern "C" mp_status mp_cuda_binary(mp_device dev, mp_binary_kind k, mp_dtype dt, const mp_bcast *bc, const void *a,
                                    const void *b, void *y, double alpha) {
    mp_cuda_ctx *c;
    if (bc->numel <= 0)
        return MP_OK;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    MP_SWITCH_ALL(dt, binary_launch, c, k, bc, a, b, y, alpha)
    return MP_CUDA_FAIL(MP_ERR_INTERNAL, "binary: unknown dtype %d", (int)dt);
}
