// random.cu — counter-based random numbers (the backend's random slot): element i of the
// stream keyed by (seed, stream) is philox.h's function of (seed, stream, i), the same
// definition the CPU backend uses, with the same arithmetic afterwards (csrc/backend_cpu.c):
// a + (b - a) * u (uniform) or a + b * z (normal, truncated normal) in float32 (double for
// float64), floor into [a, b) for integers, and uniform draws that round up to b replaced by
// the largest value of the dtype below b.
// NOTE: uniform draws equal the CPU's bit for bit; normal draws go through CUDA's logf,
// sqrtf, sinf and cosf and may differ from glibc's in the last bits.
#include <math.h>

#include "kernels.cuh"
#include "philox.h"
#include "philox_tf.h"

__device__ __forceinline__ float draw(int dist, uint64_t seed, uint64_t stream, uint64_t i) {
    return dist == MP_RANDOM_UNIFORM  ? mp_philox_uniform(seed, stream, i)
           : dist == MP_RANDOM_NORMAL ? mp_philox_normal(seed, stream, i)
                                      : mp_philox_truncated_normal(seed, stream, i);
}

// float32 / float16 / bfloat16; lim: the bits of the largest value below b (uniform clamp)
template <int DT>
static __global__ void random_float_kernel(int dist, typename mp_dt<DT>::T *y, int64_t n, uint64_t seed,
                                           uint64_t stream, float fa, float fb, double b, int clamp,
                                           typename mp_dt<DT>::T lim) {
    MP_GRID_STRIDE(i, n) {
        float z = draw(dist, seed, stream, (uint64_t)i);
        float v = dist == MP_RANDOM_UNIFORM ? fa + (fb - fa) * z : fa + fb * z;
        mp_dt<DT>::store(y, i, v);
        if (clamp && (double)mp_dt<DT>::load(y, i) >= b)
            y[i] = lim;
    }
}

static __global__ void random_f64_kernel(int dist, double *y, int64_t n, uint64_t seed, uint64_t stream, double a,
                                         double b, int clamp, double lim) {
    MP_GRID_STRIDE(i, n) {
        double z = draw(dist, seed, stream, (uint64_t)i);
        double v = dist == MP_RANDOM_UNIFORM ? a + (b - a) * z : a + b * z;
        y[i] = clamp && v >= b ? lim : v;
    }
}

// integer uniform: floor into [a, b)
static __global__ void random_int_kernel(int dt, void *y, int64_t n, uint64_t seed, uint64_t stream, double a,
                                         double b) {
    MP_GRID_STRIDE(i, n) {
        double v = floor(a + (b - a) * (double)mp_philox_uniform(seed, stream, (uint64_t)i));
        if (v >= b)
            v = b - 1;
        mp_cast_one(&v, MP_F64, (char *)y + i * (int64_t)(dt == MP_I64 ? 8 : 4), dt, 0);
    }
}

// The next 16-bit float value toward -inf (bit patterns are sign-magnitude).
static uint16_t step_down16(uint16_t h) {
    if (h & 0x8000u)
        return (uint16_t)(h + 1u);
    return h ? (uint16_t)(h - 1u) : 0x8001u;
}

template <int DT>
static mp_status random_launch(mp_cuda_ctx *c, int dist, void *y, int64_t n, uint64_t seed, uint64_t stream,
                               double a, double b) {
    typedef typename mp_dt<DT>::T T;
    int clamp = dist == MP_RANDOM_UNIFORM && b > a;
    unsigned grid = mp_cuda_grid(c, n);
    if constexpr (DT == MP_F64) {
        random_f64_kernel<<<grid, MP_THREADS, 0, c->stream>>>(dist, (double *)y, n, seed, stream, a, b, clamp,
                                                              nextafter(b, -INFINITY));
    } else if constexpr (DT == MP_F32) {
        float lim = (float)b; // the CPU's clamp_below
        while ((double)lim >= b)
            lim = nextafterf(lim, -INFINITY);
        random_float_kernel<MP_F32><<<grid, MP_THREADS, 0, c->stream>>>(dist, (T *)y, n, seed, stream, (float)a,
                                                                        (float)b, b, clamp, lim);
    } else if constexpr (DT == MP_F16 || DT == MP_BF16) {
        uint16_t lim = DT == MP_F16 ? mp_cvt_f32_f16((float)b) : mp_cvt_f32_bf16((float)b);
        while ((double)(DT == MP_F16 ? mp_cvt_f16_f32(lim) : mp_cvt_bf16_f32(lim)) >= b)
            lim = step_down16(lim);
        random_float_kernel<DT><<<grid, MP_THREADS, 0, c->stream>>>(dist, (T *)y, n, seed, stream, (float)a,
                                                                    (float)b, b, clamp, lim);
    } else {
        random_int_kernel<<<grid, MP_THREADS, 0, c->stream>>>(DT, y, n, seed, stream, a, b);
    }
    MP_LAUNCH_CHECK();
    return MP_OK;
}

// TensorFlow's streams (philox_tf.h): d 0 uniform, 1 normal, 2 truncated normal; the counter
// starts at off (a Generator's state; 0 stateless); floats are the standard draw, integers
// lo + bits % range (range 0: every bit)
static __global__ void random_tf_kernel(int d, int dt, void *y, int64_t n, uint64_t seed, uint64_t stream,
                                        uint64_t off, int64_t lo, uint64_t range) {
    MP_GRID_STRIDE(i, n) {
        uint64_t k = (uint64_t)i;
        if (dt == MP_F64) {
            ((double *)y)[i] = d == 0   ? mp_tf_uniform_f64(seed, stream, off, k)
                               : d == 1 ? mp_tf_normal_f64(seed, stream, off, k)
                                        : mp_tf_truncated_f64(seed, stream, off, k);
        } else if (dt == MP_F32 || dt == MP_F16 || dt == MP_BF16) {
            if (d == 0 && dt != MP_F32) {
                ((uint16_t *)y)[i] = mp_tf_uniform_16(dt == MP_BF16, seed, stream, off, k);
                continue;
            }
            float v = d == 0   ? mp_tf_uniform_f32(seed, stream, off, k)
                      : d == 1 ? mp_tf_normal_f32(seed, stream, off, k)
                               : mp_tf_truncated_f32(seed, stream, off, k);
            if (dt == MP_F32)
                ((float *)y)[i] = v;
            else
                ((uint16_t *)y)[i] = dt == MP_F16 ? mp_cvt_f32_f16(v) : mp_cvt_f32_bf16(v);
        } else {
            int64_t v = mp_tf_uniform_int(dt == MP_I64, seed, stream, off, k, lo, range);
            if (dt == MP_I64)
                ((int64_t *)y)[i] = v;
            else
                ((int32_t *)y)[i] = (int32_t)v;
        }
    }
}

extern "C" mp_status mp_cuda_random(mp_device dev, int dist, mp_dtype dt, void *y, int64_t n, uint64_t seed,
                                    uint64_t stream, double a, double b) {
    mp_cuda_ctx *c;
    if (n <= 0)
        return MP_OK;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    if (dist >= MP_RANDOM_TF_UNIFORM) {
        if (dt != MP_F32 && dt != MP_F16 && dt != MP_BF16 && dt != MP_F64 && dt != MP_I32 && dt != MP_I64)
            return MP_CUDA_FAIL(MP_ERR_DTYPE, "random numbers of dtype %s", mp_cuda_api->dtype_name(dt));
        int gen = dist >= MP_RANDOM_TFG_UNIFORM;
        uint64_t off = gen ? (uint64_t)a | ((uint64_t)b << 32) : 0;
        int64_t lo = gen ? 0 : (int64_t)a;
        random_tf_kernel<<<mp_cuda_grid(c, n), MP_THREADS, 0, c->stream>>>(
            dist - (gen ? MP_RANDOM_TFG_UNIFORM : MP_RANDOM_TF_UNIFORM), (int)dt, y, n, seed, stream, off, lo,
            gen ? 0 : (uint64_t)((int64_t)b - lo));
        MP_LAUNCH_CHECK();
        return MP_OK;
    }
    switch (dt) {
    case MP_F32: return random_launch<MP_F32>(c, dist, y, n, seed, stream, a, b);
    case MP_F16: return random_launch<MP_F16>(c, dist, y, n, seed, stream, a, b);
    case MP_BF16: return random_launch<MP_BF16>(c, dist, y, n, seed, stream, a, b);
    case MP_F64: return random_launch<MP_F64>(c, dist, y, n, seed, stream, a, b);
    case MP_I32: return random_launch<MP_I32>(c, dist, y, n, seed, stream, a, b);
    case MP_I64: return random_launch<MP_I64>(c, dist, y, n, seed, stream, a, b);
    default: return MP_CUDA_FAIL(MP_ERR_DTYPE, "random numbers of dtype %s", mp_cuda_api->dtype_name(dt));
    }
}
