// one_hot.cu — y (n, depth) = on where column == idx[row], off elsewhere (the backend's
// one_hot slot); an index outside [0, depth) gives an all-off row. on/off are converted once
// on the host by scalar_cast.h, as the CPU backend converts them.
#include "kernels.cuh"

template <typename T>
static __global__ void one_hot_kernel(const int64_t *idx, T *y, int64_t n, int64_t depth, T on, T off) {
    MP_GRID_STRIDE(i, n * depth) y[i] = idx[i / depth] == i % depth ? on : off;
}

template <typename T>
static mp_status one_hot_launch(mp_cuda_ctx *c, const int64_t *idx, void *y, int64_t n, int64_t depth,
                                const uint64_t *on, const uint64_t *off) {
    T a, b;
    memcpy(&a, on, sizeof a);
    memcpy(&b, off, sizeof b);
    one_hot_kernel<T><<<mp_cuda_grid(c, n * depth), MP_THREADS, 0, c->stream>>>(idx, (T *)y, n, depth, a, b);
    MP_LAUNCH_CHECK();
    return MP_OK;
}

extern "C" mp_status mp_cuda_one_hot(mp_device dev, mp_dtype dt, const int64_t *idx, void *y, int64_t n,
                                     int64_t depth, double on, double off) {
    mp_cuda_ctx *c;
    if (n <= 0 || depth <= 0)
        return MP_OK;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    uint64_t on_bits = 0, off_bits = 0;
    mp_cast_one(&on, MP_F64, &on_bits, dt, 0);
    mp_cast_one(&off, MP_F64, &off_bits, dt, 0);
    switch (mp_cuda_dtype_size(dt)) {
    case 1: return one_hot_launch<uint8_t>(c, idx, y, n, depth, &on_bits, &off_bits);
    case 2: return one_hot_launch<uint16_t>(c, idx, y, n, depth, &on_bits, &off_bits);
    case 4: return one_hot_launch<uint32_t>(c, idx, y, n, depth, &on_bits, &off_bits);
    case 8: return one_hot_launch<uint64_t>(c, idx, y, n, depth, &on_bits, &off_bits);
    default: return MP_CUDA_FAIL(MP_ERR_INTERNAL, "one_hot: unknown dtype %d", (int)dt);
    }
}
