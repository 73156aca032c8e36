// pool.cu — the pool slot on the GPU: max and average pooling, their gradients and the
// max-pool gradient's gradient, with the CPU backend's exact rules (window_ref.c): TensorFlow's
// possibly asymmetric padding, averages over the window's part inside the input (padding not
// counted), the gradient of a max going to the window's first maximum in row-major order (NaN
// counts as the maximum), 16-bit data accumulated in float32 and rounded once. Gradients are
// gathered per input element (no atomics: deterministic). Not cuDNN: docs/architecture.md says why.
// Must not validate shapes (ops_window.c did) nor synchronise.
#include "kernels.cuh"

struct pool_geom { // mp_window, as kernel arguments
    int64_t n, c, h, w, oh, ow, kh, kw, sh, sw, pt, pl;
    int nchw;
};

// Flat index of (n, c, y, x) in a (n, C, H, W) tensor of the layout.
__device__ __forceinline__ int64_t at4(int nchw, int64_t n, int64_t c, int64_t y, int64_t x, int64_t C, int64_t H,
                                       int64_t W) {
    return nchw ? ((n * C + c) * H + y) * W + x : ((n * H + y) * W + x) * C + c;
}

// The inverse of at4.
__device__ __forceinline__ void split4(int nchw, int64_t i, int64_t C, int64_t H, int64_t W, int64_t *n, int64_t *c,
                                       int64_t *y, int64_t *x) {
    if (nchw) {
        *x = i % W, i /= W, *y = i % H, i /= H, *c = i % C, *n = i / C;
    } else {
        *c = i % C, i /= C, *x = i % W, i /= W, *y = i % H, *n = i / H;
    }
}

// The part of output (oy, ox)'s window inside the input: rows [*ya, *yb), columns [*xa, *xb).
__device__ __forceinline__ void window(const pool_geom &g, int64_t oy, int64_t ox, int64_t *ya, int64_t *yb,
                                       int64_t *xa, int64_t *xb) {
    int64_t y0 = oy * g.sh - g.pt, x0 = ox * g.sw - g.pl;
    *ya = y0 < 0 ? 0 : y0, *yb = y0 + g.kh > g.h ? g.h : y0 + g.kh;
    *xa = x0 < 0 ? 0 : x0, *xb = x0 + g.kw > g.w ? g.w : x0 + g.kw;
}

// Forward (max or average) and, for max, the first maximum's position y * w + x in its plane
// (-1 for an empty window) into arg when arg is not NULL. One thread per output element.
template <int DT>
static __global__ void pool_fwd_kernel(pool_geom g, int is_max, const typename mp_dt<DT>::T *x,
                                       typename mp_dt<DT>::T *y, int64_t *arg) {
    typedef mp_dt<DT> D;
    typedef typename D::C Acc;
    MP_GRID_STRIDE(i, g.n * g.c * g.oh * g.ow) {
        int64_t n, c, oy, ox, ya, yb, xa, xb;
        split4(g.nchw, i, g.c, g.oh, g.ow, &n, &c, &oy, &ox);
        window(g, oy, ox, &ya, &yb, &xa, &xb);
        if (is_max) {
            Acc best = -INFINITY;
            int64_t bi = -1;
            for (int64_t yy = ya; yy < yb; yy++)
                for (int64_t xx = xa; xx < xb; xx++) {
                    Acc v = D::load(x, at4(g.nchw, n, c, yy, xx, g.c, g.h, g.w));
                    if (bi < 0 || v > best || (v != v && best == best)) {
                        best = v;
                        bi = yy * g.w + xx;
                    }
                }
            if (y)
                D::store(y, i, best);
            if (arg)
                arg[i] = bi;
        } else {
            int64_t cnt = (yb - ya) * (xb - xa);
            Acc s = 0;
            for (int64_t yy = ya; yy < yb; yy++)
                for (int64_t xx = xa; xx < xb; xx++)
                    s += D::load(x, at4(g.nchw, n, c, yy, xx, g.c, g.h, g.w));
            D::store(y, i, cnt > 0 ? s / (Acc)cnt : (Acc)0);
        }
    }
}

// Backward, gathered: dx at each input element is the sum over the windows that contain it
// of dy (max: only windows whose first maximum it is; average: dy / the window's count).
template <int DT>
static __global__ void pool_bwd_kernel(pool_geom g, int is_max, const int64_t *arg, const typename mp_dt<DT>::T *dy,
                                       typename mp_dt<DT>::T *dx) {
    typedef mp_dt<DT> D;
    typedef typename D::C Acc;
    MP_GRID_STRIDE(i, g.n * g.c * g.h * g.w) {
        int64_t n, c, yy, xx;
        split4(g.nchw, i, g.c, g.h, g.w, &n, &c, &yy, &xx);
        // windows oy with oy * sh - pt <= yy < oy * sh - pt + kh
        int64_t lo_y = yy + g.pt - g.kh + 1, lo_x = xx + g.pl - g.kw + 1;
        int64_t oy0 = lo_y <= 0 ? 0 : (lo_y + g.sh - 1) / g.sh, ox0 = lo_x <= 0 ? 0 : (lo_x + g.sw - 1) / g.sw;
        int64_t oy1 = (yy + g.pt) / g.sh, ox1 = (xx + g.pl) / g.sw;
        if (oy1 > g.oh - 1)
            oy1 = g.oh - 1;
        if (ox1 > g.ow - 1)
            ox1 = g.ow - 1;
        const int64_t me = yy * g.w + xx;
        Acc acc = 0;
        for (int64_t oy = oy0; oy <= oy1; oy++)
            for (int64_t ox = ox0; ox <= ox1; ox++) {
                int64_t oi = at4(g.nchw, n, c, oy, ox, g.c, g.oh, g.ow);
                if (is_max) {
                    if (arg[oi] == me)
                        acc += D::load(dy, oi);
                } else {
                    int64_t ya, yb, xa, xb;
                    window(g, oy, ox, &ya, &yb, &xa, &xb);
                    acc += D::load(dy, oi) / (Acc)((yb - ya) * (xb - xa));
                }
            }
        D::store(dx, i, acc);
    }
}

// The max-pool gradient's gradient: out (y's shape) = gg at each window's first maximum.
template <int DT>
static __global__ void pool_gradgrad_kernel(pool_geom g, const int64_t *arg, const typename mp_dt<DT>::T *gg,
                                            typename mp_dt<DT>::T *out) {
    typedef mp_dt<DT> D;
    MP_GRID_STRIDE(i, g.n * g.c * g.oh * g.ow) {
        int64_t n, c, oy, ox;
        split4(g.nchw, i, g.c, g.oh, g.ow, &n, &c, &oy, &ox);
        int64_t bi = arg[i];
        D::store(out, i, bi >= 0 ? D::load(gg, at4(g.nchw, n, c, bi / g.w, bi % g.w, g.c, g.h, g.w))
                                 : (typename D::C)0);
    }
}

template <int DT>
static mp_status pool_launch(mp_cuda_ctx *c, mp_device dev, mp_pool_kind k, const pool_geom &g, const void *a,
                             const void *b, void *out) {
    typedef typename mp_dt<DT>::T T;
    const int64_t n_out = g.n * g.c * g.oh * g.ow, n_in = g.n * g.c * g.h * g.w;
    if (k == MP_POOL_MAX || k == MP_POOL_AVG) {
        pool_fwd_kernel<DT><<<mp_cuda_grid(c, n_out), MP_THREADS, 0, c->stream>>>(g, k == MP_POOL_MAX, (const T *)a,
                                                                                    (T *)out, nullptr);
        MP_LAUNCH_CHECK();
        return MP_OK;
    }
    if (k == MP_POOL_AVG_BWD) {
        pool_bwd_kernel<DT><<<mp_cuda_grid(c, n_in), MP_THREADS, 0, c->stream>>>(g, 0, nullptr, (const T *)b,
                                                                                   (T *)out);
        MP_LAUNCH_CHECK();
        return MP_OK;
    }
    // MAX_BWD and MAX_GRADGRAD: the first maxima first, in pool-ordered scratch
    int64_t *arg = nullptr;
    const size_t bytes = (size_t)n_out * sizeof(int64_t);
    MP_TRY(mp_cuda_alloc(dev, bytes, (void **)&arg));
    pool_fwd_kernel<DT><<<mp_cuda_grid(c, n_out), MP_THREADS, 0, c->stream>>>(g, 1, (const T *)a, nullptr, arg);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) {
        if (k == MP_POOL_MAX_BWD)
            pool_bwd_kernel<DT><<<mp_cuda_grid(c, n_in), MP_THREADS, 0, c->stream>>>(g, 1, arg, (const T *)b,
                                                                                       (T *)out);
        else
            pool_gradgrad_kernel<DT><<<mp_cuda_grid(c, n_out), MP_THREADS, 0, c->stream>>>(g, arg, (const T *)b,
                                                                                            (T *)out);
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
