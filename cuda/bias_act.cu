// bias_act.cu — y = act(y + bias[channel]) in place, in float32 for 16-bit data (double for
// float64), rounded once: the second half of a fused convolution + bias (+ ReLU) where cuDNN
// has no engine for the fused graph (conv_cudnn.cpp). The ReLU keeps NaN (as the CPU's).
// Must not be used for what one cuDNN graph can do.
#include "kernels.cuh"

template <int DT>
static __global__ void bias_act_kernel(int64_t n, int64_t C, int64_t inner, int act, typename mp_dt<DT>::T *y,
                                       const typename mp_dt<DT>::T *bias) {
    typedef mp_dt<DT> D;
    typedef typename D::C Acc;
    MP_GRID_STRIDE(i, n) {
        Acc v = D::load(y, i) + D::load(bias, (i / inner) % C);
        if (act && v < (Acc)0)
            v = 0;
        D::store(y, i, v);
    }
}

template <int DT>
static mp_status bias_act_launch(mp_cuda_ctx *c, void *y, const void *bias, int64_t n, int64_t C, int64_t inner,
                                 int act) {
    typedef typename mp_dt<DT>::T T;
    bias_act_kernel<DT><<<mp_cuda_grid(c, n), MP_THREADS, 0, c->stream>>>(n, C, inner, act, (T *)y, (const T *)bias);
    MP_LAUNCH_CHECK();
    return MP_OK;
}

extern "C" mp_status mp_cuda_bias_act(mp_device dev, mp_dtype dt, void *y, const void *bias, int64_t n, int64_t C,
                                      int64_t inner, int act) {
    mp_cuda_ctx *c;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    if (n <= 0)
        return MP_OK;
    MP_SWITCH_FLOAT(dt, bias_act_launch, c, y, bias, n, C, inner, act)
    return MP_CUDA_FAIL(MP_ERR_DTYPE, "bias_act on the GPU: no kernel for %s", mp_cuda_api->dtype_name(dt));
}
