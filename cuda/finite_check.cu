// finite_check.cu — *found_inf = 1 when any element of the spans is inf or NaN (the
// backend's finite_check slot): one multi-tensor launch over up to MAX_SPANS tensors, each
// cut into chunks of CHUNK elements, a block per chunk. The test is on the exponent bits
// (as csrc/cpu_optim.c), read 128 bits at a time where the data is aligned. The flag stays on
// the device: the optimizer update and the loss-scale update read it there.
#include "kernels.cuh"

#define MAX_SPANS 32
#define CHUNK ((int64_t)1 << 16) // elements; a multiple of 8 keeps every chunk 16-byte aligned

struct finite_args {
    int n;
    int dt[MAX_SPANS];
    int aligned[MAX_SPANS];
    const void *p[MAX_SPANS];
    int64_t len[MAX_SPANS];
    int64_t first_chunk[MAX_SPANS + 1]; // chunk index where span k starts
};

// inf/NaN in a 32-bit word of dtype dt; for float64, `high` says the word is an element's
// upper half (where its exponent is).
__device__ __forceinline__ bool bad_word(int dt, uint32_t w, bool high) {
    switch (dt) {
    case MP_F32: return (w & 0x7f800000u) == 0x7f800000u;
    case MP_F16: return (w & 0x7c00u) == 0x7c00u || (w & 0x7c000000u) == 0x7c000000u;
    case MP_BF16: return (w & 0x7f80u) == 0x7f80u || (w & 0x7f800000u) == 0x7f800000u;
    case MP_F64: return high && (w & 0x7ff00000u) == 0x7ff00000u;
    default: return false;
    }
}

__device__ __forceinline__ bool bad_elem(int dt, const void *p, int64_t i) {
    switch (dt) {
    case MP_F32: return (((const uint32_t *)p)[i] & 0x7f800000u) == 0x7f800000u;
    case MP_F16: return (((const uint16_t *)p)[i] & 0x7c00u) == 0x7c00u;
    case MP_BF16: return (((const uint16_t *)p)[i] & 0x7f80u) == 0x7f80u;
    case MP_F64: return (((const uint64_t *)p)[i] & 0x7ff0000000000000ull) == 0x7ff0000000000000ull;
    default: return false;
    }
}

static __global__ void finite_check_kernel(finite_args a, uint8_t *found_inf) {
    if (*(volatile uint8_t *)found_inf) // an earlier block already found one
        return;
    int k = 0;
    while (k + 1 < a.n && a.first_chunk[k + 1] <= (int64_t)blockIdx.x)
        k++;
    const int dt = a.dt[k];
    const int64_t b = ((int64_t)blockIdx.x - a.first_chunk[k]) * CHUNK;
    const int64_t e = b + CHUNK < a.len[k] ? b + CHUNK : a.len[k];
    bool bad = false;
    int64_t i = b;
    if (a.aligned[k]) {
        const int per = 16 / (int)(dt == MP_F64 ? 8 : dt == MP_F32 ? 4 : 2); // elements per 128 bits
        const int64_t nvec = (e - b) / per;
        const uint4 *v = (const uint4 *)((const char *)a.p[k] + b * (16 / per));
        for (int64_t j = threadIdx.x; j < nvec; j += blockDim.x) {
            uint4 w = v[j];
            bad |= bad_word(dt, w.x, false) | bad_word(dt, w.y, true) | bad_word(dt, w.z, false) |
                   bad_word(dt, w.w, true);
        }
        i = b + nvec * per;
    }
    for (int64_t j = i + threadIdx.x; j < e; j += blockDim.x)
        bad |= bad_elem(dt, a.p[k], j);
    if (__syncthreads_or(bad) && threadIdx.x == 0)
        *found_inf = 1;
}

extern "C" mp_status mp_cuda_finite_check(mp_device dev, int n, const mp_span *xs, uint8_t *found_inf) {
    mp_cuda_ctx *c;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    for (int base = 0; base < n; base += MAX_SPANS) {
        finite_args a;
        a.n = 0;
        int64_t chunks = 0;
        for (int i = base; i < n && i < base + MAX_SPANS; i++) {
            if (xs[i].n <= 0 || !mp_is_float(xs[i].dt))
                continue;
            int k = a.n++;
            a.dt[k] = xs[i].dt;
            a.p[k] = xs[i].p;
            a.len[k] = xs[i].n;
            a.aligned[k] = ((uintptr_t)xs[i].p & 15) == 0;
            a.first_chunk[k] = chunks;
            chunks += (xs[i].n + CHUNK - 1) / CHUNK;
        }
        if (a.n == 0)
            continue;
        a.first_chunk[a.n] = chunks;
        if (chunks > INT32_MAX)
            return MP_CUDA_FAIL(MP_ERR_VALUE, "finite check: %lld chunks exceed one launch", (long long)chunks);
        finite_check_kernel<<<(unsigned)chunks, MP_THREADS, 0, c->stream>>>(a, found_inf);
        MP_LAUNCH_CHECK();
    }
    return MP_OK;
}
