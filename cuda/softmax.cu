// softmax.cu — row softmax / log_softmax over the last axis of (rows, cols) (the backend's
// softmax slot), a block per row. As csrc/cpu_reduce.c: float32 math for float32 and 16-bit
// data (max in float, the sum of expf in double, one normalisation, rounded once), double
// for float64; NaN propagates through the max.
#include "kernels.cuh"

template <int DT>
static __global__ void softmax_kernel(int is_log, const typename mp_dt<DT>::T *x, typename mp_dt<DT>::T *y,
                                      int64_t rows, int64_t cols) {
    typedef typename mp_dt<DT>::C C; // float, or double for float64
    __shared__ C shc[32];
    __shared__ double shd[32];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const typename mp_dt<DT>::T *xr = x + row * cols;
        typename mp_dt<DT>::T *yr = y + row * cols;
        C mx = -INFINITY;
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
            mx = mp_op_max()(mx, mp_dt<DT>::load(xr, j));
        mx = mp_block_reduce(mx, mp_op_max(), (C)-INFINITY, shc);
        double s = 0;
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
            s += (double)mp_exp(mp_dt<DT>::load(xr, j) - mx);
        s = mp_block_reduce(s, mp_op_sum(), 0.0, shd);
        if constexpr (DT == MP_F64) {
            double ls = log(s);
            for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
                double v = xr[j];
                yr[j] = is_log ? v - mx - ls : exp(v - mx) / s;
            }
        } else if (is_log) {
            float ls = (float)log(s);
            for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
                mp_dt<DT>::store(yr, j, mp_dt<DT>::load(xr, j) - mx - ls);
        } else {
            float inv = (float)(1.0 / s);
            for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
                mp_dt<DT>::store(yr, j, expf(mp_dt<DT>::load(xr, j) - mx) * inv);
        }
    }
}

template <int DT>
static mp_status softmax_launch(mp_cuda_ctx *c, int is_log, const void *x, void *y, int64_t rows, int64_t cols) {
    typedef typename mp_dt<DT>::T T;
    unsigned blocks = (unsigned)(rows < (int64_t)c->sm_count * 16 ? rows : (int64_t)c->sm_count * 16);
    softmax_kernel<DT><<<blocks, MP_THREADS, 0, c->stream>>>(is_log, (const T *)x, (T *)y, rows, cols);
    MP_LAUNCH_CHECK();
    return MP_OK;
}

extern "C" mp_status mp_cuda_softmax(mp_device dev, int is_log, mp_dtype dt, const void *x, void *y, int64_t rows,
                                     int64_t cols) {
    mp_cuda_ctx *c;
    if (rows <= 0 || cols <= 0)
        return MP_OK;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    MP_SWITCH_FLOAT(dt, softmax_launch, c, is_log, x, y, rows, cols)
    return MP_CUDA_FAIL(MP_ERR_DTYPE, "softmax does not support %s", mp_cuda_api->dtype_name(dt));
}
