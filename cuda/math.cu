// math.cu — the scan (cumprod, cumulative log-sum-exp) and segment_reduce slots, as
// csrc/cpu_math.c: floats in double rounded once per output, integers in int64 with wrap. One
// thread per output column (scan) or output element (segments, rows grouped per segment by the
// op layer), sequential inside, so results do not depend on the launch.
#include "kernels.cuh"

__device__ __forceinline__ double logaddexp_(double a, double b) {
    if (a != a || b != b)
        return a + b;
    double m = a > b ? a : b;
    if (m == -INFINITY || m == INFINITY)
        return m;
    return m + log1p(exp(-fabs(a - b)));
}

template <int DT>
static __global__ void scan_kernel(int kind, const void *x, void *y, int64_t outer, int64_t n, int64_t inner, int ex,
                                   int rev) {
    typedef mp_dt<DT> D;
    typedef typename D::T T;
    const bool fl = DT == MP_F32 || DT == MP_F64 || DT == MP_F16 || DT == MP_BF16;
    MP_GRID_STRIDE(col, outer * inner) {
        int64_t base = (col / inner) * n * inner + col % inner;
        double acc = kind ? -INFINITY : 1.0;
        uint64_t iacc = 1;
        for (int64_t s = 0; s < n; s++) {
            int64_t k = base + (rev ? n - 1 - s : s) * inner;
            if (fl) {
                double v = (double)D::load((const T *)x, k);
                double next = kind ? logaddexp_(acc, v) : acc * v;
                D::store((T *)y, k, (typename D::C)(ex ? acc : next));
                acc = next;
            } else {
                uint64_t v = (uint64_t)(int64_t)D::load((const T *)x, k);
                uint64_t next = iacc * v;
                D::store((T *)y, k, (typename D::C)(int64_t)(ex ? iacc : next));
                iacc = next;
            }
        }
    }
}

template <int DT>
static mp_status scan_launch(mp_cuda_ctx *c, int kind, const void *x, void *y, int64_t outer, int64_t n, int64_t inner,
                             int ex, int rev) {
    if constexpr (DT == MP_BOOL) {
        return MP_CUDA_FAIL(MP_ERR_INTERNAL, "scan: bool is not supported");
    } else {
        int64_t cols = outer * inner;
        scan_kernel<DT><<<mp_cuda_grid(c, cols), MP_THREADS, 0, c->stream>>>(kind, x, y, outer, n, inner, ex, rev);
        MP_LAUNCH_CHECK();
        return MP_OK;
    }
}

extern "C" mp_status mp_cuda_scan(mp_device dev, int kind, mp_dtype dt, const void *x, void *y, int64_t outer,
                                  int64_t n, int64_t inner, int exclusive, int reverse) {
    mp_cuda_ctx *c;
    // the slot's contract (as cpu_math.c): log-sum-exp is floats only; the integer branch of
    // scan_kernel would otherwise run a running product for kind 1 without a word
    if (kind != 0 && !mp_is_float(dt))
        return MP_CUDA_FAIL(MP_ERR_INTERNAL, "scan: unsupported dtype %d for kind %d", (int)dt, kind);
    if (outer <= 0 || n <= 0 || inner <= 0)
        return MP_OK;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    MP_SWITCH_ALL(dt, scan_launch, c, kind, x, y, outer, n, inner, exclusive, reverse)
    return MP_CUDA_FAIL(MP_ERR_INTERNAL, "scan: unknown dtype %d", (int)dt);
}

template <int DT> __device__ __forceinline__ double flimit_(int hi) {
    double v = DT == MP_F64 ? 1.7976931348623157e308 : DT == MP_F32 ? 3.4028234663852886e38
               : DT == MP_F16                     ? 65504.0
                                                  : 3.3895313892515355e38;
    return hi ? v : -v;
}
template <int DT> __device__ __forceinline__ int64_t ilimit_(int hi) {
    if (DT == MP_I32)
        return hi ? 2147483647LL : -2147483648LL;
    if (DT == MP_I8)
        return hi ? 127 : -128;
    if (DT == MP_U8)
        return hi ? 255 : 0;
    return hi ? 9223372036854775807LL : (-9223372036854775807LL - 1);
}

template <int DT>
static __global__ void segment_kernel(int k, const int64_t *perm, const int64_t *off, const void *x, void *y,
                                      int64_t nseg, int64_t inner, int sorted) {
    typedef mp_dt<DT> D;
    typedef typename D::T T;
    const bool fl = DT == MP_F32 || DT == MP_F64 || DT == MP_F16 || DT == MP_BF16;
    MP_GRID_STRIDE(o, nseg * inner) {
        int64_t s = o / inner, i = o % inner;
        int64_t lo = off[s], hi = off[s + 1], cnt = hi - lo;
        if (fl) {
            double acc = k == 4 ? 1.0 : k == 2 ? flimit_<DT>(0) : k == 3 ? flimit_<DT>(1) : 0.0;
            for (int64_t j = lo; j < hi; j++) {
                double v = (double)D::load((const T *)x, perm[j] * inner + i);
                if (k == 0 || k == 1 || k == 5)
                    acc += v;
                else if (k == 4)
                    acc *= v;
                else if (k == 2)
                    acc = v < acc ? acc : v;
                else
                    acc = v > acc ? acc : v;
            }
            if (cnt == 0 && (k == 2 || k == 3) && sorted)
                acc = 0.0;
            if (k == 1 && cnt > 0)
                acc /= (double)cnt;
            if (k == 5 && cnt > 0)
                acc /= sqrt((double)cnt);
            D::store((T *)y, o, (typename D::C)acc);
        } else {
            int64_t acc = k == 4 ? 1 : k == 2 ? ilimit_<DT>(0) : k == 3 ? ilimit_<DT>(1) : 0;
            for (int64_t j = lo; j < hi; j++) {
                int64_t v = (int64_t)D::load((const T *)x, perm[j] * inner + i);
                if (k == 0 || k == 1)
                    acc = (int64_t)((uint64_t)acc + (uint64_t)v);
                else if (k == 4)
                    acc = (int64_t)((uint64_t)acc * (uint64_t)v);
                else if (k == 2)
                    acc = v > acc ? v : acc;
                else
                    acc = v < acc ? v : acc;
            }
            if (cnt == 0 && (k == 2 || k == 3) && sorted)
                acc = 0;
            if (k == 1 && cnt > 0)
                acc = acc / cnt;
            D::store((T *)y, o, (typename D::C)acc);
        }
    }
}

template <int DT>
static mp_status segment_launch(mp_cuda_ctx *c, int kind, const int64_t *perm, const int64_t *off, const void *x,
                                void *y, int64_t nseg, int64_t inner, int sorted) {
    if constexpr (DT == MP_BOOL) {
        return MP_CUDA_FAIL(MP_ERR_INTERNAL, "segment_reduce: bool is not supported");
    } else {
        segment_kernel<DT><<<mp_cuda_grid(c, nseg * inner), MP_THREADS, 0, c->stream>>>(kind, perm, off, x, y, nseg,
                                                                                        inner, sorted);
        MP_LAUNCH_CHECK();
        return MP_OK;
    }
}

extern "C" mp_status mp_cuda_segment_reduce(mp_device dev, int kind, mp_dtype dt, const int64_t *perm,
                                            const int64_t *offsets, const void *x, void *y, int64_t nseg,
                                            int64_t inner, int sorted) {
    mp_cuda_ctx *c;
    if (nseg <= 0 || inner <= 0)
        return MP_OK;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    MP_SWITCH_ALL(dt, segment_launch, c, kind, perm, offsets, x, y, nseg, inner, sorted)
    return MP_CUDA_FAIL(MP_ERR_INTERNAL, "segment_reduce: unknown dtype %d", (int)dt);
}
