// pool.cu — the pool slot on the GPU: max and average pooling, their gradients and the
// max-pool gradient's gradient, with the CPU backend's rules: TensorFlow's possibly asymmetric
// padding, averages over the window's part inside the input (padding not counted), the
// maxima by TensorFlow's CPU rules (pool_rules.h: NaN never beats a value; MaxPool, its gradient
// and the gradient's gradient start differently), 16-bit data accumulated in float32 and
// rounded once. Gradients are
// gathered per input element (no atomics: deterministic). The element rules are pool_rules.h's,
// shared with the host check (host_check.cpp). Not cuDNN: docs/architecture.md says why.
// Must not validate shapes (ops_window.c did) nor synchronise.
#include "kernels.cuh"
#include "pool_rules.h"

template <int DT> struct pool_ld { // loads element j of a tensor of dtype DT in its compute type
    const typename mp_dt<DT>::T *p;
    __device__ __forceinline__ typename mp_dt<DT>::C operator()(int64_t j) const { return mp_dt<DT>::load(p, j); }
};

// Forward (max or average, by pool_rules.h's rule); for max also each window's position into
// arg (when not NULL; y may then be NULL). One thread per output element.
template <int DT>
static __global__ void pool_fwd_kernel(pool_geom g, int rule, double lowest, const typename mp_dt<DT>::T *x,
                                       typename mp_dt<DT>::T *y, int64_t *arg) {
    const pool_ld<DT> ld{x};
    MP_GRID_STRIDE(i, g.n * g.c * g.oh * g.ow) {
        int64_t bi;
        typename mp_dt<DT>::C v =
            pool_fwd_at<typename mp_dt<DT>::C>(g, rule, (typename mp_dt<DT>::C)lowest, ld, i, &bi);
        if (y)
            mp_dt<DT>::store(y, i, v);
        if (arg)
            arg[i] = bi;
    }
}

// Backward, gathered: one thread per input element (no atomics: deterministic).
template <int DT>
static __global__ void pool_bwd_kernel(pool_geom g, int is_max, const int64_t *arg, const typename mp_dt<DT>::T *dy,
                                       typename mp_dt<DT>::T *dx) {
    const pool_ld<DT> ld{dy};
    MP_GRID_STRIDE(i, g.n * g.c * g.h * g.w) {
        mp_dt<DT>::store(dx, i, pool_bwd_at<typename mp_dt<DT>::C>(g, is_max, arg, ld, i));
    }
}

// The max-pool gradient's gradient: out (y's shape) = gg at each window's first maximum.
template <int DT>
static __global__ void pool_gradgrad_kernel(pool_geom g, const int64_t *arg, const typename mp_dt<DT>::T *gg,
                                            typename mp_dt<DT>::T *out) {
    MP_GRID_STRIDE(i, g.n * g.c * g.oh * g.ow) {
        int64_t j = pool_gradgrad_src(g, arg, i);
        mp_dt<DT>::store(out, i, j >= 0 ? mp_dt<DT>::load(gg, j) : (typename mp_dt<DT>::C)0);
    }
}

// max pooling's start value in DT (TensorFlow's lowest; bfloat16's measured -inf)
static double pool_lowest(int dt) {
    return dt == MP_F32 ? -3.4028234663852886e38 : dt == MP_F16 ? -65504.0 : dt == MP_BF16 ? -INFINITY
                                                                                              : -1.7976931348623157e308;
}

template <int DT>
static mp_status pool_launch(mp_cuda_ctx *c, mp_device dev, mp_pool_kind k, const pool_geom &g, const void *a,
                             const void *b, void *out) {
    typedef typename mp_dt<DT>::T T;
    const int64_t n_out = g.n * g.c * g.oh * g.ow, n_in = g.n * g.c * g.h * g.w;
    if (k == MP_POOL_MAX || k == MP_POOL_AVG) {
        pool_fwd_kernel<DT><<<mp_cuda_grid(c, n_out), MP_THREADS, 0, c->stream>>>(
            g, k == MP_POOL_MAX ? POOL_RULE_MAX : POOL_RULE_AVG, pool_lowest(DT), (const T *)a, (T *)out, nullptr);
        MP_LAUNCH_CHECK();
        return MP_OK;
    }
    if (k == MP_POOL_AVG_BWD) {
        pool_bwd_kernel<DT><<<mp_cuda_grid(c, n_in), MP_THREADS, 0, c->stream>>>(g, 0, nullptr, (const T *)b, (T *)out);
        MP_LAUNCH_CHECK();
        return MP_OK;
    }
    // MAX_BWD and MAX_GRADGRAD: the windows' positions first (each op's rule), in scratch
    int64_t *arg = nullptr;
    const size_t bytes = (size_t)n_out * sizeof(int64_t);
    MP_TRY(mp_cuda_alloc(dev, bytes, (void **)&arg));
    pool_fwd_kernel<DT><<<mp_cuda_grid(c, n_out), MP_THREADS, 0, c->stream>>>(
        g, k == MP_POOL_MAX_BWD ? POOL_RULE_MAX_GRAD : POOL_RULE_MAX_GRADGRAD, 0.0, (const T *)a, nullptr, arg);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) {
        if (k == MP_POOL_MAX_BWD)
            pool_bwd_kernel<DT><<<mp_cuda_grid(c, n_in), MP_THREADS, 0, c->stream>>>(g, 1, arg, (const T *)b, (T *)out);
        else
            pool_gradgrad_kernel<DT>
                <<<mp_cuda_grid(c, n_out), MP_THREADS, 0, c->stream>>>(g, arg, (const T *)b, (T *)out);
        e = cudaGetLastError();
    }
    mp_cuda_free(dev, arg, bytes); // stream-ordered: after the kernels that read it
    MP_CUDA_CHECK(e);
    return MP_OK;
}

extern "C" mp_status mp_cuda_pool(mp_device dev, mp_pool_kind k, mp_dtype dt, const mp_window *w, const void *a,
                                  const void *b, void *out) {
    mp_cuda_ctx *c;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    pool_geom g = {w->n, w->c, w->h, w->w, w->oh, w->ow, w->kh, w->kw, w->sh, w->sw, w->pt, w->pl, w->nchw};
    if (g.n * g.c * g.oh * g.ow == 0 || g.n * g.c * g.h * g.w == 0)
        return MP_OK; // the op layer fills empty results itself
    MP_SWITCH_FLOAT(dt, pool_launch, c, dev, k, g, a, b, out)
    return MP_CUDA_FAIL(MP_ERR_DTYPE, "pooling on the GPU: no kernel for %s", mp_cuda_api->dtype_name(dt));
}
