// strided_copy.cu — dst[sum(i * dstride)] = src[sum(i * sstride)] over a shape (the backend's
// strided_copy slot: transpose, slicing, concat, broadcast_to, slice gradients). Element
// strides may be negative for src. Moves elements by size only.
#include "kernels.cuh"

template <typename T> static __global__ void strided_copy_kernel(mp_strided s, int64_t n, const T *src, T *dst) {
    MP_GRID_STRIDE(i, n) {
        int64_t rem = i, so = 0, d = 0;
        for (int k = s.ndim - 1; k >= 0; k--) {
            int64_t j = rem % s.shape[k];
            rem /= s.shape[k];
            so += j * s.sstride[k];
            d += j * s.dstride[k];
        }
        dst[d] = src[so];
    }
}

template <typename T>
static mp_status strided_copy_launch(mp_cuda_ctx *c, const mp_strided *s, int64_t n, const void *src, void *dst) {
    strided_copy_kernel<T><<<mp_cuda_grid(c, n), MP_THREADS, 0, c->stream>>>(*s, n, (const T *)src, (T *)dst);
    MP_LAUNCH_CHECK();
    return MP_OK;
}

extern "C" mp_status mp_cuda_strided_copy(mp_device dev, mp_dtype dt, const mp_strided *s, const void *src,
                                          void *dst) {
    mp_cuda_ctx *c;
    int64_t n = 1;
    for (int k = 0; k < s->ndim; k++)
        n *= s->shape[k];
    if (n <= 0)
        return MP_OK;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    switch (mp_cuda_dtype_size(dt)) {
    case 1: return strided_copy_launch<uint8_t>(c, s, n, src, dst);
    case 2: return strided_copy_launch<uint16_t>(c, s, n, src, dst);
    case 4: return strided_copy_launch<uint32_t>(c, s, n, src, dst);
    case 8: return strided_copy_launch<uint64_t>(c, s, n, src, dst);
    default: return MP_CUDA_FAIL(MP_ERR_INTERNAL, "strided_copy: unknown dtype %d", (int)dt);
    }
}
