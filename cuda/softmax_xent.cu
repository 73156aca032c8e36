// softmax_xent.cu — row-wise softmax cross-entropy of logits (rows, cols) (the backend's
// softmax_xent slot), a block per row, in double as csrc/cpu_reduce.c: log-sum-exp, then
// lse - logit[label] (sparse) or sum(label * (lse - logit)) over non-zero labels (dense).
// NOTE: a sparse label outside [0, cols) gives a NaN loss instead of the CPU's error, as
// TensorFlow's GPU kernel does: reporting it would need a host synchronisation every step.
#include "kernels.cuh"

template <int DT>
static __global__ void xent_kernel(int sparse, const typename mp_dt<DT>::T *logits, const void *labels,
                                   typename mp_dt<DT>::T *loss, int64_t rows, int64_t cols) {
    typedef typename mp_dt<DT>::T T;
    __shared__ double sh[32];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const T *xr = logits + row * cols;
        double mx = -INFINITY;
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
            mx = mp_op_max()(mx, (double)mp_dt<DT>::load(xr, j));
        mx = mp_block_reduce(mx, mp_op_max(), (double)-INFINITY, sh);
        double s = 0;
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
            s += exp((double)mp_dt<DT>::load(xr, j) - mx);
        s = mp_block_reduce(s, mp_op_sum(), 0.0, sh);
        double lse = mx + log(s);
        double l = 0;
        if (sparse) {
            int64_t k = ((const int64_t *)labels)[row];
            l = k < 0 || k >= cols ? NAN : lse - (double)mp_dt<DT>::load(xr, k);
        } else {
            const T *lr = (const T *)labels + row * cols;
            for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
                double lab = (double)mp_dt<DT>::load(lr, j);
                if (lab != 0)
                    l += lab * (lse - (double)mp_dt<DT>::load(xr, j));
            }
            l = mp_block_reduce(l, mp_op_sum(), 0.0, sh);
        }
        if (threadIdx.x == 0) {
            if constexpr (DT == MP_F64)
                loss[row] = l;
            else
                mp_dt<DT>::store(loss, row, (float)l);
        }
    }
}

template <int DT>
static mp_status xent_launch(mp_cuda_ctx *c, int sparse, const void *logits, const void *labels, void *loss,
                             int64_t rows, int64_t cols) {
    typedef typename mp_dt<DT>::T T;
    unsigned blocks = (unsigned)(rows < (int64_t)c->sm_count * 16 ? rows : (int64_t)c->sm_count * 16);
    xent_kernel<DT><<<blocks, MP_THREADS, 0, c->stream>>>(sparse, (const T *)logits, labels, (T *)loss, rows, cols);
    MP_LAUNCH_CHECK();
    return MP_OK;
}

extern "C" mp_status mp_cuda_softmax_xent(mp_device dev, int sparse, mp_dtype dt, const void *logits,
                                          const void *labels, void *loss, int64_t rows, int64_t cols) {
    mp_cuda_ctx *c;
    if (rows <= 0)
        return MP_OK;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    MP_SWITCH_FLOAT(dt, xent_launch, c, sparse, logits, labels, loss, rows, cols)
    return MP_CUDA_FAIL(MP_ERR_DTYPE, "softmax cross-entropy does not support %s", mp_cuda_api->dtype_name(dt));
}
