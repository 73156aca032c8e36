// reduce.cu — sum / mean / max / min / prod / all / any over the middle axis of x viewed as
// (outer, red, inner) (the backend's reduce slot). As csrc/cpu_reduce.c: floats accumulate
// in double and round once to the output dtype (float16 with a single rounding), max/min
// propagate NaN, integers accumulate in int64 with wrap-around. The order of the additions
// differs from the CPU's (tolerance "reduction" of tests/tolerances.py).
// Rows (inner == 1) are reduced by a warp each, columns (inner > 1) by 32 x 8 thread tiles;
// when there are too few rows or tiles to fill the GPU, the reduced axis is split into parts
// whose partial results a second kernel combines.
#include <type_traits>

#include "kernels.cuh"

template <int DT> struct red_t {
    typedef typename mp_dt<DT>::C C;
    static constexpr bool is_float = DT == MP_F32 || DT == MP_F64 || DT == MP_F16 || DT == MP_BF16;
    typedef typename std::conditional<is_float, double, int64_t>::type A; // accumulator

    static __device__ __forceinline__ A init(mp_reduce_kind k) {
        if constexpr (is_float) {
            return k == MP_REDUCE_MAX ? -INFINITY : k == MP_REDUCE_MIN ? INFINITY : k == MP_REDUCE_PROD ? 1.0 : 0.0;
        } else {
            switch (k) {
            case MP_REDUCE_MAX:
                return DT == MP_I32 ? INT32_MIN : DT == MP_I64 ? INT64_MIN : DT == MP_I8 ? -128 : 0;
            case MP_REDUCE_MIN:
                return DT == MP_I32 ? INT32_MAX : DT == MP_I64 ? INT64_MAX : DT == MP_I8 ? 127 : DT == MP_U8 ? 255 : 1;
            case MP_REDUCE_PROD:
            case MP_REDUCE_ALL: return 1;
            default: return 0;
            }
        }
    }
    // acc <- acc (op) v; also combines two partial results (NaN sticks once seen).
    static __device__ __forceinline__ void add(mp_reduce_kind k, A &acc, A v) {
        if constexpr (is_float) {
            switch (k) {
            case MP_REDUCE_SUM:
            case MP_REDUCE_MEAN: acc += v; break;
            case MP_REDUCE_PROD: acc *= v; break;
            case MP_REDUCE_MAX:
                if (acc == acc && (v > acc || v != v))
                    acc = v;
                break;
            case MP_REDUCE_MIN:
                if (acc == acc && (v < acc || v != v))
                    acc = v;
                break;
            default: break;
            }
        } else {
            switch (k) {
            case MP_REDUCE_SUM:
            case MP_REDUCE_MEAN: acc = (int64_t)((uint64_t)acc + (uint64_t)v); break;
            case MP_REDUCE_PROD: acc = (int64_t)((uint64_t)acc * (uint64_t)v); break;
            case MP_REDUCE_MAX: acc = v > acc ? v : acc; break;
            case MP_REDUCE_MIN: acc = v < acc ? v : acc; break;
            case MP_REDUCE_ALL: acc = acc && v; break;
            case MP_REDUCE_ANY: acc = acc || v; break;
            default: break;
            }
        }
    }
    static __device__ __forceinline__ void store(mp_reduce_kind k, A acc, int64_t red, typename mp_dt<DT>::T *y,
                                                 int64_t i) {
        if constexpr (is_float) {
            if (k == MP_REDUCE_MEAN)
                acc = red ? acc / (double)red : NAN;
            if constexpr (DT == MP_F64)
                y[i] = acc;
            else if constexpr (DT == MP_F16)
                y[i] = mp_cvt_f64_f16(acc); // one rounding
            else if constexpr (DT == MP_BF16)
                y[i] = mp_cvt_f32_bf16((float)acc); // through float32, as every float64 -> bfloat16
            else
                y[i] = (float)acc;
        } else {
            if (k == MP_REDUCE_MEAN)
                acc = red ? acc / red : 0;
            mp_dt<DT>::store(y, i, acc);
        }
    }
};

template <typename A> __device__ __forceinline__ A shfl_down(A v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }

// inner == 1: a warp per (row, part); 8 warps per block; rows grid-strided.
template <int DT>
static __global__ void reduce_rows_kernel(mp_reduce_kind k, const typename mp_dt<DT>::T *x,
                                          typename mp_dt<DT>::T *y, typename red_t<DT>::A *partial, int64_t outer,
                                          int64_t red, int64_t chunk) {
    typedef red_t<DT> R;
    typedef typename R::A A;
    const int lane = threadIdx.x & 31;
    const int64_t warp = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
    const int64_t p = blockIdx.y, parts = gridDim.y;
    const int64_t r0 = p * chunk, r1 = r0 + chunk < red ? r0 + chunk : red;
    for (int64_t o = warp; o < outer; o += warps) {
        A acc = R::init(k);
        for (int64_t r = r0 + lane; r < r1; r += 32)
            R::add(k, acc, (A)mp_dt<DT>::load(x, o * red + r));
        for (int d = 16; d > 0; d >>= 1)
            R::add(k, acc, shfl_down(acc, d));
        if (lane == 0) {
            if (parts == 1)
                R::store(k, acc, red, y, o);
            else
                partial[o * parts + p] = acc;
        }
    }
}

// inner > 1: a (32 columns) x (8 row lanes) tile per (outer, column block, part).
template <int DT>
static __global__ void reduce_cols_kernel(mp_reduce_kind k, const typename mp_dt<DT>::T *x,
                                          typename mp_dt<DT>::T *y, typename red_t<DT>::A *partial, int64_t outer,
                                          int64_t red, int64_t inner, int64_t chunk) {
    typedef red_t<DT> R;
    typedef typename R::A A;
    __shared__ A tile[8][33];
    const int64_t col_blocks = (inner + 31) / 32, tiles = outer * col_blocks;
    const int64_t p = blockIdx.y, parts = gridDim.y;
    const int64_t r0 = p * chunk, r1 = r0 + chunk < red ? r0 + chunk : red;
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const int64_t o = t / col_blocks, j = (t % col_blocks) * 32 + threadIdx.x;
        A acc = R::init(k);
        if (j < inner)
            for (int64_t r = r0 + threadIdx.y; r < r1; r += 8)
                R::add(k, acc, (A)mp_dt<DT>::load(x, (o * red + r) * inner + j));
        tile[threadIdx.y][threadIdx.x] = acc;
        __syncthreads();
        if (threadIdx.y == 0 && j < inner) {
            for (int q = 1; q < 8; q++)
                R::add(k, acc, tile[q][threadIdx.x]);
            if (parts == 1)
                R::store(k, acc, red, y, o * inner + j);
            else
                partial[(o * parts + p) * inner + j] = acc;
        }
        __syncthreads();
    }
}

// Combines the parts: partial is (outer, parts, inner).
template <int DT>
static __global__ void reduce_finish_kernel(mp_reduce_kind k, const typename red_t<DT>::A *partial,
                                            typename mp_dt<DT>::T *y, int64_t outer, int64_t red, int64_t inner,
                                            int64_t parts) {
    typedef red_t<DT> R;
    MP_GRID_STRIDE(i, outer * inner) {
        int64_t o = i / inner, j = i % inner;
        typename R::A acc = R::init(k);
        for (int64_t p = 0; p < parts; p++)
            R::add(k, acc, partial[(o * parts + p) * inner + j]);
        R::store(k, acc, red, y, i);
    }
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

template <int DT>
static mp_status reduce_launch(mp_cuda_ctx *c, mp_reduce_kind k, const void *xv, void *yv, int64_t outer, int64_t red,
                               int64_t inner) {
    typedef typename mp_dt<DT>::T T;
    typedef typename red_t<DT>::A A;
    const T *x = (const T *)xv;
    T *y = (T *)yv;
    const int64_t sms = c->sm_count;
    int64_t parts;
    dim3 grid, block;
    if (inner == 1) {
        parts = outer >= sms * 32 ? 1 : clamp64((sms * 64 + outer - 1) / outer, 1, (red + 1023) / 1024 + 1);
        block = dim3(MP_THREADS);
        grid = dim3((unsigned)clamp64((outer + 7) / 8, 1, sms * 16), 1);
    } else {
        int64_t tiles = outer * ((inner + 31) / 32);
        parts = tiles >= sms * 4 ? 1 : clamp64((sms * 8 + tiles - 1) / tiles, 1, (red + 63) / 64 + 1);
        block = dim3(32, 8);
        grid = dim3((unsigned)clamp64(tiles, 1, sms * 16), 1);
    }
    parts = clamp64(parts, 1, 1024);
    grid.y = (unsigned)parts;
    int64_t chunk = (red + parts - 1) / parts;
    A *partial = nullptr;
    size_t pbytes = (size_t)(outer * parts * inner) * sizeof(A);
    if (parts > 1)
        MP_CUDA_CHECK(cudaMallocAsync((void **)&partial, pbytes, c->stream));
    if (inner == 1)
        reduce_rows_kernel<DT><<<grid, block, 0, c->stream>>>(k, x, y, partial, outer, red, chunk);
    else
        reduce_cols_kernel<DT><<<grid, block, 0, c->stream>>>(k, x, y, partial, outer, red, inner, chunk);
    cudaError_t launched = cudaGetLastError();
    if (launched == cudaSuccess && parts > 1) {
        reduce_finish_kernel<DT><<<mp_cuda_grid(c, outer * inner), MP_THREADS, 0, c->stream>>>(k, partial, y, outer,
                                                                                              red, inner, parts);
        launched = cudaGetLastError();
    }
    if (partial)
        MP_CUDA_CHECK(cudaFreeAsync(partial, c->stream));
    MP_CUDA_CHECK(launched);
    return MP_OK;
}

extern "C" mp_status mp_cuda_reduce(mp_device dev, mp_reduce_kind k, mp_dtype dt, const void *x, void *y,
                                    int64_t outer, int64_t red, int64_t inner) {
    mp_cuda_ctx *c;
    if (outer <= 0 || inner <= 0)
        return MP_OK;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    MP_SWITCH_ALL(dt, reduce_launch, c, k, x, y, outer, red, inner)
    return MP_CUDA_FAIL(MP_ERR_INTERNAL, "reduce: unknown dtype %d", (int)dt);
}
