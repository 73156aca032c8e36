// batch_stats.cu — batch normalization's statistics on the GPU, the batch_stats slot
// (cpu_norm.c's contract; kinds as mp_stats_kind): the per-channel moments
// of x (mean, biased variance: two passes, summed in float64), the sums of batch norm's
// backward (sum dy, sum dy (x - mean)) and the moments' gradient (g0 + 2 g1 (x - mean)) / N
// computed in float64 and rounded once. One block per channel, a fixed reduction tree: the
// same result every run. x is (outer, C, inner). Must not apply the normalization itself
// (batch_norm.cu does) nor validate shapes.
// NOTE: one block per channel reads channels-last data with a stride of C elements (not
// coalesced): correct, not fast; a tiled two-stage reduction is the follow-up.
#include <type_traits>

#include "kernels.cuh"

enum { STATS_MOMENTS = MP_STATS_MOMENTS, STATS_GRAD_SUMS = MP_STATS_GRAD_SUMS, STATS_MOMENTS_GRAD = MP_STATS_MOMENTS_GRAD };

#define STATS_THREADS 256

template <int DT, typename S>
static __global__ void stats_sums_kernel(int kind, const typename mp_dt<DT>::T *x, const typename mp_dt<DT>::T *y,
                                         const S *mean, S *out, int64_t outer, int64_t C, int64_t inner) {
    typedef mp_dt<DT> D;
    __shared__ double shared[32];
    const int64_t ch = blockIdx.x, n = outer * inner;
    const double N = (double)outer * (double)inner;
    double s0 = 0, s1 = 0, m = 0;
    if (kind == STATS_MOMENTS) {
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
            s0 += (double)D::load(x, ((j / inner) * C + ch) * inner + j % inner);
        s0 = mp_block_reduce(s0, mp_op_sum(), 0.0, shared);
        m = N > 0 ? s0 / N : (double)NAN;
        double sq = 0;
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
            double d = (double)D::load(x, ((j / inner) * C + ch) * inner + j % inner) - m;
            sq += d * d;
        }
        sq = mp_block_reduce(sq, mp_op_sum(), 0.0, shared);
        if (threadIdx.x == 0) {
            out[ch] = (S)m;
            out[C + ch] = (S)(N > 0 ? sq / N : (double)NAN);
        }
        return;
    }
    m = (double)mean[ch]; // STATS_GRAD_SUMS
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
        int64_t i = ((j / inner) * C + ch) * inner + j % inner;
        double dy = (double)D::load(y, i);
        s0 += dy;
        s1 += dy * ((double)D::load(x, i) - m);
    }
    s0 = mp_block_reduce(s0, mp_op_sum(), 0.0, shared);
    s1 = mp_block_reduce(s1, mp_op_sum(), 0.0, shared);
    if (threadIdx.x == 0) {
        out[ch] = (S)s0;
        out[C + ch] = (S)s1;
    }
}

// out = (g[0] + 2 g[1] (x - mean)) / N per channel, in float64, rounded once into DT (16-bit
// data through float32, as the CPU does).
template <int DT, typename S>
static __global__ void moments_grad_kernel(const typename mp_dt<DT>::T *x, const S *mean, const S *g,
                                           typename mp_dt<DT>::T *out, int64_t outer, int64_t C, int64_t inner) {
    typedef mp_dt<DT> D;
    const double N = (double)outer * (double)inner;
    MP_GRID_STRIDE(i, outer * C * inner) {
        int64_t ch = (i / inner) % C;
        double b = (double)g[ch] / N, a = 2.0 * (double)g[C + ch] / N;
        double v = b + a * ((double)D::load(x, i) - (double)mean[ch]);
        if constexpr (DT == MP_F64)
            D::store(out, i, v);
        else
            D::store(out, i, (float)v);
    }
}

template <int DT>
static mp_status stats_launch(mp_cuda_ctx *c, int kind, mp_dtype sdt, const void *x, const void *y, const void *mean,
                              const void *g, void *out, int64_t outer, int64_t C, int64_t inner) {
    typedef typename mp_dt<DT>::T T;
    if ((DT == MP_F64) != (sdt == MP_F64))
        return MP_CUDA_FAIL(MP_ERR_DTYPE, "batch statistics on the GPU: %s statistics for %s data",
                            mp_cuda_api->dtype_name(sdt), mp_cuda_api->dtype_name((mp_dtype)DT));
    typedef typename std::conditional<DT == MP_F64, double, float>::type S;
    if (kind == STATS_MOMENTS_GRAD) {
        const int64_t n = outer * C * inner;
        if (n > 0) {
            moments_grad_kernel<DT, S><<<mp_cuda_grid(c, n), MP_THREADS, 0, c->stream>>>(
                (const T *)x, (const S *)mean, (const S *)g, (T *)out, outer, C, inner);
            MP_LAUNCH_CHECK();
        }
        return MP_OK;
    }
    if (C > 0) {
        stats_sums_kernel<DT, S><<<(unsigned)C, STATS_THREADS, 0, c->stream>>>(
            kind, (const T *)x, (const T *)y, (const S *)mean, (S *)out, outer, C, inner);
        MP_LAUNCH_CHECK();
    }
    return MP_OK;
}

extern "C" mp_status mp_cuda_batch_stats(mp_device dev, mp_stats_kind k, mp_dtype dt, mp_dtype sdt, const void *x,
                                         const void *y, const void *mean, const void *g, void *out, int64_t outer,
                                         int64_t C, int64_t inner) {
    mp_cuda_ctx *c;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    const int kind = (int)k;
    if (kind < STATS_MOMENTS || kind > STATS_MOMENTS_GRAD)
        return MP_CUDA_FAIL(MP_ERR_INTERNAL, "batch statistics: unknown kind %d", kind);
    if (C > 2147483647LL)
        return MP_CUDA_FAIL(MP_ERR_VALUE, "batch statistics on the GPU: %lld channels (at most 2^31 - 1)",
                            (long long)C);
    MP_SWITCH_FLOAT(dt, stats_launch, c, kind, sdt, x, y, mean, g, out, outer, C, inner)
    return MP_CUDA_FAIL(MP_ERR_DTYPE, "batch statistics on the GPU: no kernel for %s", mp_cuda_api->dtype_name(dt));
}
