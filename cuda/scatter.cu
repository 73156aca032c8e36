// scatter.cu — the scatter_nd and sort slots (tf.tensor_scatter_nd_*, tf.scatter_nd,
// tf.math.top_k, tf.sort, tf.argsort). Row indices arrive checked by the op layer. scatter_nd:
// one thread per column of the rows, walking the updates in index order (the CPU's order:
// deterministic, the last duplicate wins). sort: one thread per row, a stable merge sort of
// positions in the op layer's scratch (the CPU's comparison: NaN above +inf, ties by position).
#include "kernels.cuh"

template <int DT>
static __global__ void scatter_nd_kernel(int mode, const int64_t *rows, const void *upd, void *y, int64_t nidx,
                                         int64_t inner) {
    typedef mp_dt<DT> D;
    typedef typename D::C C;
    const typename D::T *u = (const typename D::T *)upd;
    typename D::T *o = (typename D::T *)y;
    MP_GRID_STRIDE(i, inner) {
        for (int64_t j = 0; j < nidx; j++) {
            int64_t dst = rows[j] * inner + i;
            if (mode == 0) { // a write moves the bits, as the CPU's memcpy (NaN payloads, bool bytes)
                o[dst] = u[j * inner + i];
                continue;
            }
            C a = D::load(o, dst), b = D::load(u, j * inner + i);
            C r = mode == 0 ? b : mode == 1 ? a + b : mode == 2 ? a - b : mode == 3 ? (b < a ? b : a) : (b > a ? b : a);
            D::store(o, dst, r);
        }
    }
}

template <int DT>
static mp_status scatter_nd_launch(mp_cuda_ctx *c, int mode, const int64_t *rows, const void *upd, void *y,
                                   int64_t nidx, int64_t inner) {
    scatter_nd_kernel<DT><<<mp_cuda_grid(c, inner), MP_THREADS, 0, c->stream>>>(mode, rows, upd, y, nidx, inner);
    MP_LAUNCH_CHECK();
    return MP_OK;
}

extern "C" mp_status mp_cuda_scatter_nd(mp_device dev, int mode, mp_dtype dt, const int64_t *rows, const void *upd,
                                        void *y, int64_t nidx, int64_t inner) {
    mp_cuda_ctx *c;
    if (nidx <= 0 || inner <= 0)
        return MP_OK;
    if (mode < 0 || mode > 4 || (mode && dt == MP_BOOL))
        return MP_CUDA_FAIL(MP_ERR_INTERNAL, "scatter_nd: mode %d on dtype %d", mode, (int)dt);
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    MP_SWITCH_ALL(dt, scatter_nd_launch, c, mode, rows, upd, y, nidx, inner)
    return MP_CUDA_FAIL(MP_ERR_INTERNAL, "scatter_nd: unknown dtype %d", (int)dt);
}

// does the value vb come strictly before va (descending: larger first; NaN above +inf)?
template <typename C>
static __device__ __forceinline__ bool first_of(C vb, C va, int desc) {
    return desc ? vb > va : vb < va;
}
template <>
__device__ __forceinline__ bool first_of<float>(float vb, float va, int desc) {
    bool nb = isnan(vb), na = isnan(va);
    if (na || nb)
        return desc ? (nb && !na) : (!nb && na);
    return desc ? vb > va : vb < va;
}
template <>
__device__ __forceinline__ bool first_of<double>(double vb, double va, int desc) {
    bool nb = isnan(vb), na = isnan(va);
    if (na || nb)
        return desc ? (nb && !na) : (!nb && na);
    return desc ? vb > va : vb < va;
}

template <int DT>
static __global__ void sort_kernel(int desc, const void *xv, int64_t rows, int64_t n, int64_t k, int64_t *work,
                                   int idx64, void *idx) {
    typedef mp_dt<DT> D;
    const typename D::T *x = (const typename D::T *)xv;
    MP_GRID_STRIDE(r, rows) {
        int64_t *a = work + 4 * r * n, *t = a + n, base = r * n;
        for (int64_t i = 0; i < n; i++)
            a[i] = i;
        for (int64_t w = 1; w < n; w *= 2) {
            for (int64_t lo = 0; lo < n; lo += 2 * w) {
                int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
                int64_t i = lo, j = mid, o = lo;
                while (i < mid && j < hi)
                    t[o++] = first_of(D::load(x, base + a[j]), D::load(x, base + a[i]), desc) ? a[j++] : a[i++];
                while (i < mid)
                    t[o++] = a[i++];
                while (j < hi)
                    t[o++] = a[j++];
            }
            int64_t *s = a;
            a = t;
            t = s;
        }
        for (int64_t i = 0; i < k; i++) {
            if (idx64)
                ((int64_t *)idx)[r * k + i] = a[i];
            else
                ((int32_t *)idx)[r * k + i] = (int32_t)a[i];
        }
    }
}

template <int DT>
static mp_status sort_launch(mp_cuda_ctx *c, int desc, const void *x, int64_t rows, int64_t n, int64_t k,
                             int64_t *work, int idx64, void *idx) {
    sort_kernel<DT><<<mp_cuda_grid(c, rows), MP_THREADS, 0, c->stream>>>(desc, x, rows, n, k, work, idx64, idx);
    MP_LAUNCH_CHECK();
    return MP_OK;
}

extern "C" mp_status mp_cuda_sort(mp_device dev, mp_dtype dt, int descending, const void *x, int64_t rows, int64_t n,
                                  int64_t k, int64_t *work, mp_dtype idt, void *idx) {
    mp_cuda_ctx *c;
    if (dt == MP_BOOL || (idt != MP_I32 && idt != MP_I64))
        return MP_CUDA_FAIL(MP_ERR_INTERNAL, "sort: unsupported dtypes %d / %d", (int)dt, (int)idt);
    if (rows <= 0 || n <= 0 || k <= 0)
        return MP_OK;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    MP_SWITCH_ALL(dt, sort_launch, c, descending, x, rows, n, k, work, idt == MP_I64, idx)
    return MP_CUDA_FAIL(MP_ERR_INTERNAL, "sort: unknown dtype %d", (int)dt);
}
