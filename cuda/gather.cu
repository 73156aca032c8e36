// gather.cu — the gather and scatter_add slots (tf.gather and its dense gradient): rows of the
// middle axis of x (outer, n, inner) picked by int64 indices the op layer has already checked
// in [0, n). Gather moves elements as raw bits; scatter_add sums float32/float64 with atomics.
#include "kernels.cuh"

template <typename T>
static __global__ void gather_kernel(const int64_t *idx, const T *x, T *y, int64_t outer, int64_t n, int64_t nidx,
                                     int64_t inner) {
    MP_GRID_STRIDE(i, outer * nidx * inner) {
        int64_t k = i % inner, r = i / inner, j = r % nidx, o = r / nidx;
        y[i] = x[(o * n + idx[j]) * inner + k];
    }
}

template <typename T>
static mp_status gather_launch(mp_cuda_ctx *c, const int64_t *idx, const void *x, void *y, int64_t outer, int64_t n,
                               int64_t nidx, int64_t inner) {
    int64_t total = outer * nidx * inner;
    gather_kernel<T><<<mp_cuda_grid(c, total), MP_THREADS, 0, c->stream>>>(idx, (const T *)x, (T *)y, outer, n, nidx,
                                                                            inner);
    MP_LAUNCH_CHECK();
    return MP_OK;
}

extern "C" mp_status mp_cuda_gather(mp_device dev, mp_dtype dt, const int64_t *idx, const void *x, void *y,
                                    int64_t outer, int64_t n, int64_t nidx, int64_t inner) {
    mp_cuda_ctx *c;
    if (outer <= 0 || nidx <= 0 || inner <= 0)
        return MP_OK;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    switch (mp_cuda_dtype_size(dt)) {
    case 1: return gather_launch<uint8_t>(c, idx, x, y, outer, n, nidx, inner);
    case 2: return gather_launch<uint16_t>(c, idx, x, y, outer, n, nidx, inner);
    case 4: return gather_launch<uint32_t>(c, idx, x, y, outer, n, nidx, inner);
    case 8: return gather_launch<uint64_t>(c, idx, x, y, outer, n, nidx, inner);
    default: return MP_CUDA_FAIL(MP_ERR_INTERNAL, "gather: unknown dtype %d", (int)dt);
    }
}

template <typename T>
static __global__ void scatter_add_kernel(const int64_t *idx, const T *x, T *y, int64_t outer, int64_t n, int64_t nidx,
                                          int64_t inner) {
    MP_GRID_STRIDE(i, outer * nidx * inner) {
        int64_t k = i % inner, r = i / inner, j = r % nidx, o = r / nidx;
        atomicAdd(&y[(o * n + idx[j]) * inner + k], x[i]);
    }
}

extern "C" mp_status mp_cuda_scatter_add(mp_device dev, mp_dtype dt, const int64_t *idx, const void *x, void *y,
                                         int64_t outer, int64_t n, int64_t nidx, int64_t inner) {
    mp_cuda_ctx *c;
    if (dt != MP_F32 && dt != MP_F64)
        return MP_CUDA_FAIL(MP_ERR_INTERNAL, "scatter_add: float32 or float64, got %d", (int)dt);
    if (outer <= 0 || n <= 0 || inner <= 0)
        return MP_OK;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    size_t bytes = (size_t)(outer * n * inner) * mp_cuda_dtype_size(dt);
    MP_CUDA_CHECK(cudaMemsetAsync(y, 0, bytes, c->stream));
    int64_t total = outer * nidx * inner;
    if (total <= 0)
        return MP_OK;
    if (dt == MP_F32)
        scatter_add_kernel<float><<<mp_cuda_grid(c, total), MP_THREADS, 0, c->stream>>>(idx, (const float *)x,
                                                                                       (float *)y, outer, n, nidx, inner);
    else
        scatter_add_kernel<double><<<mp_cuda_grid(c, total), MP_THREADS, 0, c->stream>>>(
            idx, (const double *)x, (double *)y, outer, n, nidx, inner);
    MP_LAUNCH_CHECK();
    return MP_OK;
}

// cumsum: one thread per column (o, i), sequential along the axis; floats accumulate in double
// and round once per output (as the CPU backend), integers in int64 with wrap.
template <int DT>
static __global__ void cumsum_float_kernel(const void *x, void *y, int64_t outer, int64_t n, int64_t inner, int ex,
                                           int rev) {
    typedef mp_dt<DT> D;
    MP_GRID_STRIDE(col, outer * inner) {
        int64_t base = (col / inner) * n * inner + col % inner;
        double acc = 0.0;
        for (int64_t s = 0; s < n; s++) {
            int64_t k = base + (rev ? n - 1 - s : s) * inner;
            double v = (double)D::load((const typename D::T *)x, k);
            double out = ex ? acc : acc + v;
            acc += v;
            D::store((typename D::T *)y, k, (typename D::C)out);
        }
    }
}

template <typename T>
static __global__ void cumsum_int_kernel(const T *x, T *y, int64_t outer, int64_t n, int64_t inner, int ex, int rev) {
    MP_GRID_STRIDE(col, outer * inner) {
        int64_t base = (col / inner) * n * inner + col % inner;
        uint64_t acc = 0;
        for (int64_t s = 0; s < n; s++) {
            int64_t k = base + (rev ? n - 1 - s : s) * inner;
            uint64_t v = (uint64_t)(int64_t)x[k];
            y[k] = (T)(ex ? acc : acc + v);
            acc += v;
        }
    }
}

extern "C" mp_status mp_cuda_cumsum(mp_device dev, mp_dtype dt, const void *x, void *y, int64_t outer, int64_t n,
                                    int64_t inner, int exclusive, int reverse) {
    mp_cuda_ctx *c;
    if (outer <= 0 || n <= 0 || inner <= 0)
        return MP_OK;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    int64_t cols = outer * inner;
    switch (dt) {
#define MP_CUMSUM_F(D)                                                                                                 \
    case D:                                                                                                            \
        cumsum_float_kernel<D><<<mp_cuda_grid(c, cols), MP_THREADS, 0, c->stream>>>(x, y, outer, n, inner, exclusive, \
                                                                                     reverse);                         \
        break;
        MP_CUMSUM_F(MP_F16)
        MP_CUMSUM_F(MP_BF16)
        MP_CUMSUM_F(MP_F32)
        MP_CUMSUM_F(MP_F64)
#undef MP_CUMSUM_F
    case MP_I32:
        cumsum_int_kernel<int32_t><<<mp_cuda_grid(c, cols), MP_THREADS, 0, c->stream>>>(
            (const int32_t *)x, (int32_t *)y, outer, n, inner, exclusive, reverse);
        break;
    case MP_I64:
        cumsum_int_kernel<int64_t><<<mp_cuda_grid(c, cols), MP_THREADS, 0, c->stream>>>(
            (const int64_t *)x, (int64_t *)y, outer, n, inner, exclusive, reverse);
        break;
    default: return MP_CUDA_FAIL(MP_ERR_INTERNAL, "cumsum: unsupported dtype %d", (int)dt);
    }
    MP_LAUNCH_CHECK();
    return MP_OK;
}
