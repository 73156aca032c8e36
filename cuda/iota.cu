// iota.cu — start + i * delta in every element i (the backend's iota slot, tf.range): int64
// exactly in integers, every other dtype computed in double and converted by scalar_cast.h,
// as the CPU backend does.
#include "kernels.cuh"

static __global__ void iota_i64_kernel(int64_t *dst, int64_t start, int64_t delta, int64_t n) {
    // unsigned arithmetic: the CPU's signed expression, without undefined overflow
    MP_GRID_STRIDE(i, n) dst[i] = (int64_t)((uint64_t)start + (uint64_t)i * (uint64_t)delta);
}

static __global__ void iota_any_kernel(char *dst, int dt, size_t es, double start, double delta, int64_t n) {
    MP_GRID_STRIDE(i, n) {
        double v = start + (double)i * delta;
        mp_cast_one(&v, MP_F64, dst + i * (int64_t)es, dt, 0);
    }
}

extern "C" mp_status mp_cuda_iota(mp_device dev, void *dst, mp_dtype dt, int64_t n, double start, double delta) {
    mp_cuda_ctx *c;
    if (n <= 0)
        return MP_OK;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    if (dt == MP_I64)
        iota_i64_kernel<<<mp_cuda_grid(c, n), MP_THREADS, 0, c->stream>>>((int64_t *)dst, (int64_t)start,
                                                                         (int64_t)delta, n);
    else
        iota_any_kernel<<<mp_cuda_grid(c, n), MP_THREADS, 0, c->stream>>>((char *)dst, dt, mp_cuda_dtype_size(dt),
                                                                         start, delta, n);
    MP_LAUNCH_CHECK();
    return MP_OK;
}
