// where.cu — y = cond ? a : b with broadcasting over the three operands (the backend's
// where slot). Moves elements by size only, so one kernel per element size serves every
// dtype.
#include "kernels.cuh"

// I: uint32_t when the output has fewer than 2^32 elements (cheaper division), else int64_t
template <typename T, typename I>
static __global__ void where_kernel(mp_bcast bc, const uint8_t *cond, const T *a, const T *b, T *y) {
    MP_GRID_STRIDE(i, bc.numel) {
        I rem = (I)i, o0 = 0, o1 = 0, o2 = 0;
        for (int d = bc.ndim - 1; d >= 0; d--) {
            I s = (I)bc.shape[d], q = rem / s, j = rem - q * s;
            rem = q;
            o0 += j * (I)bc.stride[0][d];
            o1 += j * (I)bc.stride[1][d];
            o2 += j * (I)bc.stride[2][d];
        }
        y[i] = cond[o0] ? a[o1] : b[o2];
    }
}

template <typename T>
static mp_status where_launch(mp_cuda_ctx *c, const mp_bcast *bc, const void *cond, const void *a, const void *b,
                              void *y) {
    if (bc->numel <= (int64_t)UINT32_MAX)
        where_kernel<T, uint32_t><<<mp_cuda_grid(c, bc->numel), MP_THREADS, 0, c->stream>>>(
            *bc, (const uint8_t *)cond, (const T *)a, (const T *)b, (T *)y);
    else
        where_kernel<T, int64_t><<<mp_cuda_grid(c, bc->numel), MP_THREADS, 0, c->stream>>>(
            *bc, (const uint8_t *)cond, (const T *)a, (const T *)b, (T *)y);
    MP_LAUNCH_CHECK();
    return MP_OK;
}

extern "C" mp_status mp_cuda_where(mp_device dev, mp_dtype dt, const mp_bcast *bc, const void *cond, const void *a,
                                   const void *b, void *y) {
    mp_cuda_ctx *c;
    if (bc->numel <= 0)
        return MP_OK;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    switch (mp_cuda_dtype_size(dt)) {
    case 1: return where_launch<uint8_t>(c, bc, cond, a, b, y);
    case 2: return where_launch<uint16_t>(c, bc, cond, a, b, y);
    case 4: return where_launch<uint32_t>(c, bc, cond, a, b, y);
    case 8: return where_launch<uint64_t>(c, bc, cond, a, b, y);
    default: return MP_CUDA_FAIL(MP_ERR_INTERNAL, "where: unknown dtype %d", (int)dt);
    }
}
