// fill.cu — a constant in every element (the backend's fill slot). The value is converted
// once on the host with scalar_cast.h (the CPU's rule, so both write the same bits) and
// its bit pattern is replicated on the device.
#include "kernels.cuh"

template <typename T> static __global__ void fill_bits_kernel(T *dst, T bits, int64_t n) {
    MP_GRID_STRIDE(i, n) dst[i] = bits;
}

template <typename T> static mp_status fill_launch(mp_cuda_ctx *c, void *dst, const void *bits, int64_t n) {
    T v;
    memcpy(&v, bits, sizeof v);
    fill_bits_kernel<T><<<mp_cuda_grid(c, n), MP_THREADS, 0, c->stream>>>((T *)dst, v, n);
    MP_LAUNCH_CHECK();
    return MP_OK;
}

extern "C" mp_status mp_cuda_fill(mp_device dev, void *dst, mp_dtype dt, int64_t n, double value) {
    mp_cuda_ctx *c;
    if (n <= 0)
        return MP_OK;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    uint64_t bits = 0;
    mp_cast_one(&value, MP_F64, &bits, dt, 0);
    size_t es = mp_cuda_dtype_size(dt);
    if (bits == 0 || es == 1) { // zeros (the common fill) and bytes are a memset
        MP_CUDA_CHECK(cudaMemsetAsync(dst, (int)(bits & 0xff), (size_t)n * es, c->stream));
        return MP_OK;
    }
    switch (es) {
    case 2: return fill_launch<uint16_t>(c, dst, &bits, n);
    case 4: return fill_launch<uint32_t>(c, dst, &bits, n);
    case 8: return fill_launch<uint64_t>(c, dst, &bits, n);
    default: return MP_CUDA_FAIL(MP_ERR_INTERNAL, "fill: unknown dtype %d", (int)dt);
    }
}
