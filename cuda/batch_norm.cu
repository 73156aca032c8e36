// batch_norm.cu — the batch_norm slot on the GPU: y = x * a + b per channel with the given
// statistics, a = 1 / sqrt(var + eps) * scale and b = offset - mean * a computed once per
// channel in the statistics' dtype (float32, or float64 for float64 data) exactly as
// cpu_norm.c does, then one pass over x (16-bit data in float32, rounded once). Training's
// batch statistics (moments) and the backward pass are other ops (reduce and elementwise
// slots): this file must not compute statistics. Not cuDNN: docs/architecture.md says why.
#include "kernels.cuh"

__device__ __forceinline__ float bn_sqrt(float v) {
    return sqrtf(v);
}
__device__ __forceinline__ double bn_sqrt(double v) {
    return sqrt(v);
}

template <typename S>
static __global__ void bn_factors_kernel(int64_t C, const S *scale, const S *offset, const S *mean, const S *var, S eps,
                                         S *ab) {
    MP_GRID_STRIDE(k, C) {
        S a = (S)1 / bn_sqrt(var[k] + eps) * scale[k]; // rsqrt(var + eps) * scale, as tf.nn (and the CPU)
        ab[k] = a;
        ab[C + k] = offset[k] - mean[k] * a;
    }
}

template <int DT, typename S>
static __global__ void bn_apply_kernel(int64_t n, int64_t C, int64_t inner, const S *ab, const typename mp_dt<DT>::T *x,
                                       typename mp_dt<DT>::T *y) {
    typedef mp_dt<DT> D;
    typedef typename D::C Acc;
    MP_GRID_STRIDE(i, n) {
        int64_t ch = (i / inner) % C;
        D::store(y, i, D::load(x, i) * (Acc)ab[ch] + (Acc)ab[C + ch]);
    }
}

template <int DT>
static mp_status bn_launch(mp_cuda_ctx *c, mp_device dev, mp_dtype sdt, const void *x, const void *scale,
                           const void *offset, const void *mean, const void *var, double eps, void *y, int64_t outer,
                           int64_t C, int64_t inner) {
    typedef typename mp_dt<DT>::T T;
    const bool f64 = sdt == MP_F64;
    if ((DT == MP_F64) != f64)
        return MP_CUDA_FAIL(MP_ERR_DTYPE, "batch_norm on the GPU: %s statistics for %s data",
                            mp_cuda_api->dtype_name(sdt), mp_cuda_api->dtype_name((mp_dtype)DT));
    const size_t bytes = 2 * (size_t)C * (f64 ? sizeof(double) : sizeof(float));
    void *ab = nullptr;
    MP_TRY(mp_cuda_alloc(dev, bytes, &ab));
    const int64_t n = outer * C * inner;
    if constexpr (DT == MP_F64) {
        bn_factors_kernel<double><<<mp_cuda_grid(c, C), MP_THREADS, 0, c->stream>>>(
            C, (const double *)scale, (const double *)offset, (const double *)mean, (const double *)var, eps,
            (double *)ab);
        if (cudaPeekAtLastError() == cudaSuccess)
            bn_apply_kernel<DT, double><<<mp_cuda_grid(c, n), MP_THREADS, 0, c->stream>>>(
                n, C, inner, (const double *)ab, (const T *)x, (T *)y);
    } else {
        bn_factors_kernel<float><<<mp_cuda_grid(c, C), MP_THREADS, 0, c->stream>>>(
            C, (const float *)scale, (const float *)offset, (const float *)mean, (const float *)var, (float)eps,
            (float *)ab);
        if (cudaPeekAtLastError() == cudaSuccess)
            bn_apply_kernel<DT, float><<<mp_cuda_grid(c, n), MP_THREADS, 0, c->stream>>>(n, C, inner, (const float *)ab,
                                                                                         (const T *)x, (T *)y);
    }
    cudaError_t e = cudaGetLastError();
    mp_cuda_free(dev, ab, bytes); // stream-ordered: after the kernels
    MP_CUDA_CHECK(e);
    return MP_OK;
}

extern "C" mp_status mp_cuda_batch_norm(mp_device dev, mp_dtype dt, mp_dtype sdt, const void *x, const void *scale,
                                        const void *offset, const void *mean, const void *var, double eps, void *y,
                                        int64_t outer, int64_t C, int64_t inner, int act) {
    mp_cuda_ctx *c;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    if (outer * C * inner == 0)
        return MP_OK;
    if (act) { // BatchNorm + ReLU (a fused graph node): the ReLU is a second pass here
        MP_TRY(mp_cuda_batch_norm(dev, dt, sdt, x, scale, offset, mean, var, eps, y, outer, C, inner, 0));
        return mp_cuda_unary(dev, MP_UNARY_RELU, dt, y, y, outer * C * inner, 0.0);
    }
    MP_SWITCH_FLOAT(dt, bn_launch, c, dev, sdt, x, scale, offset, mean, var, eps, y, outer, C, inner)
    return MP_CUDA_FAIL(MP_ERR_DTYPE, "batch_norm on the GPU: no kernel for %s", mp_cuda_api->dtype_name(dt));
}
