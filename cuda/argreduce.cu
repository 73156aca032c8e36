// argreduce.cu — the index (int64) of the max or min over the middle axis of (outer, red,
// inner) (the backend's argreduce slot). As csrc/cpu_reduce.c: the first NaN wins (NumPy),
// otherwise the first index of the extreme value. A warp per output; each lane scans its
// indices in order, then lanes combine (NaN by lowest index, else the value, ties to the
// lower index), which is the same answer as one scan in order.
#include "kernels.cuh"

template <int DT>
static __global__ void argreduce_kernel(int is_min, const typename mp_dt<DT>::T *x, int64_t *y, int64_t outer,
                                        int64_t red, int64_t inner) {
    typedef typename mp_dt<DT>::C C;
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
    for (int64_t w = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32; w < outer * inner; w += warps) {
        const int64_t o = w / inner, j = w % inner;
        C best = 0;
        int64_t bi = -1, ni = -1; // index of the best value / of the first NaN (-1: none)
        for (int64_t r = lane; r < red; r += 32) {
            C v = mp_dt<DT>::load(x, (o * red + r) * inner + j);
            if (v != v) {
                ni = r;
                break;
            }
            if (bi < 0 || (is_min ? v < best : v > best)) {
                best = v;
                bi = r;
            }
        }
        for (int d = 16; d > 0; d >>= 1) {
            C ov = __shfl_down_sync(0xffffffffu, best, d);
            int64_t oi = __shfl_down_sync(0xffffffffu, bi, d);
            int64_t on = __shfl_down_sync(0xffffffffu, ni, d);
            if (on >= 0 && (ni < 0 || on < ni))
                ni = on;
            if (oi >= 0 && (bi < 0 || (is_min ? ov < best : ov > best) || (ov == best && oi < bi))) {
                best = ov;
                bi = oi;
            }
        }
        if (lane == 0)
            y[w] = ni >= 0 ? ni : bi;
    }
}

template <int DT>
static mp_status argreduce_launch(mp_cuda_ctx *c, int is_min, const void *x, int64_t *y, int64_t outer, int64_t red,
                                  int64_t inner) {
    int64_t warps = outer * inner;
    argreduce_kernel<DT><<<mp_cuda_grid(c, warps * 32), MP_THREADS, 0, c->stream>>>(
        is_min, (const typename mp_dt<DT>::T *)x, y, outer, red, inner);
    MP_LAUNCH_CHECK();
    return MP_OK;
}

extern "C" mp_status mp_cuda_argreduce(mp_device dev, int is_min, mp_dtype dt, const void *x, int64_t *y,
                                       int64_t outer, int64_t red, int64_t inner) {
    mp_cuda_ctx *c;
    if (outer <= 0 || inner <= 0)
        return MP_OK;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    MP_SWITCH_ALL(dt, argreduce_launch, c, is_min, x, y, outer, red, inner)
    return MP_CUDA_FAIL(MP_ERR_INTERNAL, "argreduce: unknown dtype %d", (int)dt);
}
