// cast.cu — dtype conversion on the GPU (the backend's cast slot). The four conversions a
// mixed-precision step runs (float32 <-> float16 / bfloat16) move 128 bits per load and
// store; every other pair converts element by element through scalar_cast.h, the rules the
// CPU backend uses, so both produce the same bits (NaN payloads and saturation included).
#include "kernels.cuh"

struct f32_to_f16 {
    typedef float S;
    typedef uint16_t D;
    static __device__ __forceinline__ D cvt(S x) { return mp_cvt_f32_f16(x); }
};
struct f16_to_f32 {
    typedef uint16_t S;
    typedef float D;
    static __device__ __forceinline__ D cvt(S x) { return mp_cvt_f16_f32(x); }
};
struct f32_to_bf16 {
    typedef float S;
    typedef uint16_t D;
    static __device__ __forceinline__ D cvt(S x) { return mp_cvt_f32_bf16(x); }
};
struct bf16_to_f32 {
    typedef uint16_t S;
    typedef float D;
    static __device__ __forceinline__ D cvt(S x) { return mp_cvt_bf16_f32(x); }
};

// 8 elements per step: 8 * sizeof(S) and 8 * sizeof(D) bytes are whole 128-bit vectors.
// src and dst are 16-byte aligned (checked by the launcher); the < 8 tail is element-wise.
template <typename F>
static __global__ void cast_vec8_kernel(const typename F::S *__restrict__ src, typename F::D *__restrict__ dst,
                                        int64_t n) {
    typedef typename F::S S;
    typedef typename F::D D;
    constexpr int VS = 8 * sizeof(S) / 16, VD = 8 * sizeof(D) / 16;
    int64_t n8 = n / 8;
    MP_GRID_STRIDE(i, n8) {
        uint4 vs[VS], vd[VD];
        S in[8];
        D out[8];
        const uint4 *ps = reinterpret_cast<const uint4 *>(src + i * 8);
        for (int k = 0; k < VS; k++)
            vs[k] = ps[k];
        memcpy(in, vs, sizeof in);
        for (int j = 0; j < 8; j++)
            out[j] = F::cvt(in[j]);
        memcpy(vd, out, sizeof out);
        uint4 *pd = reinterpret_cast<uint4 *>(dst + i * 8);
        for (int k = 0; k < VD; k++)
            pd[k] = vd[k];
    }
    int64_t t = n8 * 8 + blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (t < n)
        dst[t] = F::cvt(src[t]);
}

template <typename F>
static __global__ void cast_scalar_kernel(const typename F::S *src, typename F::D *dst, int64_t n) {
    MP_GRID_STRIDE(i, n) dst[i] = F::cvt(src[i]);
}

static __global__ void cast_any_kernel(const void *src, int sdt, void *dst, int ddt, int64_t n) {
    MP_GRID_STRIDE(i, n) mp_cast_one(src, sdt, dst, ddt, i);
}

template <typename F> static mp_status cast_launch(mp_cuda_ctx *c, const void *src, void *dst, int64_t n) {
    const typename F::S *s = (const typename F::S *)src;
    typename F::D *d = (typename F::D *)dst;
    if ((((uintptr_t)src | (uintptr_t)dst) & 15) == 0) {
        int64_t work = n / 8 > 0 ? n / 8 : 1;
        cast_vec8_kernel<F><<<mp_cuda_grid(c, work), MP_THREADS, 0, c->stream>>>(s, d, n);
    } else {
        cast_scalar_kernel<F><<<mp_cuda_grid(c, n), MP_THREADS, 0, c->stream>>>(s, d, n);
    }
    MP_LAUNCH_CHECK();
    return MP_OK;
}

extern "C" mp_status mp_cuda_cast(mp_device dev, const void *src, mp_dtype sdt, void *dst, mp_dtype ddt, int64_t n) {
    mp_cuda_ctx *c;
    if (n <= 0)
        return MP_OK;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    if (sdt == ddt) {
        size_t nb = (size_t)n * mp_cuda_dtype_size(sdt);
        MP_CUDA_CHECK(cudaMemcpyAsync(dst, src, nb, cudaMemcpyDeviceToDevice, c->stream));
        return MP_OK;
    }
    if (sdt == MP_F32 && ddt == MP_F16)
        return cast_launch<f32_to_f16>(c, src, dst, n);
    if (sdt == MP_F16 && ddt == MP_F32)
        return cast_launch<f16_to_f32>(c, src, dst, n);
    if (sdt == MP_F32 && ddt == MP_BF16)
        return cast_launch<f32_to_bf16>(c, src, dst, n);
    if (sdt == MP_BF16 && ddt == MP_F32)
        return cast_launch<bf16_to_f32>(c, src, dst, n);
    cast_any_kernel<<<mp_cuda_grid(c, n), MP_THREADS, 0, c->stream>>>(src, sdt, dst, ddt, n);
    MP_LAUNCH_CHECK();
    return MP_OK;
}
