// optim_update.cu — the fused optimizer update of many variables in one launch (the backend's
// optim_update slot): per element, the gradient times the step's multiplier, the rule (SGD,
// RMSprop, Adam, Adagrad, Adadelta, Adamax, Nadam, Ftrl, Lion as tf-keras', weight decay
// first where asked) on the float32 master weight and its float32 slots, and the
// low-precision copy refreshed. Everything the step depends on is read on the device: the
// found-inf flag (skip), the loss scale (unscale) and the iteration count (Adam's bias
// correction; Nadam's running product, advanced by one more single-thread launch after the
// updates), so the host never waits.
// The rules are csrc/optim_rule.h, the CPU's own definition; with no FMA contraction
// (CMakeLists.txt) the float32 results are the CPU's bits.
// Only Adam's lr_t (double pow) may differ in its last bits before its rounding to float.
#include "kernels.cuh"
#include "optim_rule.h"

#define MAX_VARS 24
#define CHUNK ((int64_t)1 << 16) // elements per block

struct optim_args {
    int n, kind;
    mp_optim_hparams hp;
    double grad_scale;
    const float *loss_scale;   // () or NULL
    const int64_t *iterations; // () or NULL
    const uint8_t *found_inf;  // () or NULL
    const float *state;        // () Nadam's u_product, or NULL
    int wdt[MAX_VARS], cdt[MAX_VARS], cache_es[MAX_VARS], decay[MAX_VARS];
    void *w[MAX_VARS];
    const void *g[MAX_VARS];
    void *s0[MAX_VARS], *s1[MAX_VARS], *s2[MAX_VARS]; // float32; float64 for float64 variables
    void *cache[MAX_VARS];
    int64_t len[MAX_VARS];
    int64_t first_chunk[MAX_VARS + 1];
};

__device__ __forceinline__ float load_f(int dt, const void *p, int64_t i) {
    switch (dt) {
    case MP_F16: return mp_cvt_f16_f32(((const uint16_t *)p)[i]);
    case MP_BF16: return mp_cvt_bf16_f32(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}
__device__ __forceinline__ void store_f(int dt, void *p, int64_t i, float v) {
    switch (dt) {
    case MP_F16: ((uint16_t *)p)[i] = mp_cvt_f32_f16(v); break;
    case MP_BF16: ((uint16_t *)p)[i] = mp_cvt_f32_bf16(v); break;
    default: ((float *)p)[i] = v; break;
    }
}

static __global__ void optim_update_kernel(optim_args a) {
    __shared__ int skip;
    __shared__ double gs;
    __shared__ mp_optim_rule r32, r64;
    if (threadIdx.x == 0) { // the step's scalars, from device memory, once per block
        skip = a.found_inf && *a.found_inf;
        double g = a.grad_scale;
        if (a.loss_scale)
            g = g / (double)*a.loss_scale;
        gs = g;
        const int64_t t = a.iterations ? mp_next_iteration(*a.iterations) : 1;
        mp_optim_rule_make(&r32, a.kind, &a.hp, t, 0, a.state, nullptr);
        mp_optim_rule_make(&r64, a.kind, &a.hp, t, 1, a.state, nullptr);
    }
    __syncthreads();
    if (skip)
        return;
    int k = 0;
    while (k + 1 < a.n && a.first_chunk[k + 1] <= (int64_t)blockIdx.x)
        k++;
    mp_optim_rule r = a.wdt[k] == MP_F64 ? r64 : r32;
    r.decay = a.decay[k];
    const int64_t b = ((int64_t)blockIdx.x - a.first_chunk[k]) * CHUNK;
    const int64_t e = b + CHUNK < a.len[k] ? b + CHUNK : a.len[k];
    const int wdt = a.wdt[k], cdt = a.cdt[k];
    void *wp = a.w[k], *cache = a.cache[k];
    const void *gp = a.g[k];
    if (wdt == MP_F64) {
        double *s0 = (double *)a.s0[k], *s1 = (double *)a.s1[k], *s2 = (double *)a.s2[k];
        for (int64_t i = b + threadIdx.x; i < e; i += blockDim.x) {
            double w = ((double *)wp)[i];
            mp_optim_rule_f64(&r, &w, ((const double *)gp)[i] * gs, s0 ? s0 + i : nullptr, s1 ? s1 + i : nullptr,
                              s2 ? s2 + i : nullptr);
            ((double *)wp)[i] = w;
            if (cache) // the CPU casts with mp_cpu_cast: scalar_cast.h's rule
                mp_cast_one(&w, MP_F64, (char *)cache + i * a.cache_es[k], cdt, 0);
        }
        return;
    }
    float *s0 = (float *)a.s0[k], *s1 = (float *)a.s1[k], *s2 = (float *)a.s2[k];
    const bool scaled = gs != 1.0;
    const float fgs = (float)gs;
    for (int64_t i = b + threadIdx.x; i < e; i += blockDim.x) {
        float w = load_f(wdt, wp, i);
        float gi = load_f(wdt, gp, i);
        if (scaled)
            gi *= fgs;
        mp_optim_rule_f32(&r, &w, gi, s0 ? s0 + i : nullptr, s1 ? s1 + i : nullptr, s2 ? s2 + i : nullptr);
        store_f(wdt, wp, i, w);
        if (cache)
            store_f(cdt, cache, i, w);
    }
}

// Nadam's u_product advances once per applied step (optim_rule.h's product, as the CPU).
static __global__ void nadam_state_kernel(mp_optim_hparams hp, const int64_t *iterations, const uint8_t *found_inf,
                                          float *state) {
    if (found_inf && *found_inf)
        return;
    mp_optim_rule r;
    float next = 1.0f;
    const int64_t t = iterations ? mp_next_iteration(*iterations) : 1;
    mp_optim_rule_make(&r, MP_OPTIM_NADAM, &hp, t, 0, state, &next);
    *state = next;
}

extern "C" mp_status mp_cuda_optim_update(mp_device dev, mp_optim_kind kind, const mp_optim_step *step, int n,
                                          const mp_optim_var *vars) {
    mp_cuda_ctx *c;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    for (int i = 0; i < n; i++) {
        const mp_optim_var *v = &vars[i];
        if (v->cache && v->wdt != MP_F64 && v->cdt != MP_F16 && v->cdt != MP_BF16 && v->cdt != MP_F32)
            return MP_CUDA_FAIL(MP_ERR_INTERNAL, "optimizer: cannot refresh a %s copy",
                                mp_cuda_api->dtype_name(v->cdt));
        if (v->wdt != MP_F32 && v->wdt != MP_F16 && v->wdt != MP_BF16 && v->wdt != MP_F64)
            return MP_CUDA_FAIL(MP_ERR_DTYPE, "optimizer: cannot train a %s variable", mp_cuda_api->dtype_name(v->wdt));
    }
    for (int base = 0; base < n; base += MAX_VARS) {
        optim_args a;
        memset(&a, 0, sizeof a);
        a.kind = kind;
        a.hp = step->hp;
        a.state = step->state;
        a.grad_scale = step->grad_scale;
        a.loss_scale = step->loss_scale;
        a.iterations = step->iterations;
        a.found_inf = step->found_inf;
        int64_t chunks = 0;
        for (int i = base; i < n && i < base + MAX_VARS; i++) {
            const mp_optim_var *v = &vars[i];
            if (v->n <= 0)
                continue;
            int k = a.n++;
            a.wdt[k] = v->wdt;
            a.cdt[k] = v->cdt;
            a.cache_es[k] = (int)mp_cuda_dtype_size(v->cdt);
            a.w[k] = v->w;
            a.g[k] = v->g;
            a.s0[k] = v->s[0];
            a.s1[k] = v->s[1];
            a.s2[k] = v->s[2];
            a.cache[k] = v->cache;
            a.decay[k] = v->decay && step->hp.use_weight_decay;
            a.len[k] = v->n;
            a.first_chunk[k] = chunks;
            chunks += (v->n + CHUNK - 1) / CHUNK;
        }
        if (a.n == 0)
            continue;
        a.first_chunk[a.n] = chunks;
        if (chunks > INT32_MAX)
            return MP_CUDA_FAIL(MP_ERR_VALUE, "optimizer: %lld chunks exceed one launch", (long long)chunks);
        optim_update_kernel<<<(unsigned)chunks, MP_THREADS, 0, c->stream>>>(a);
        MP_LAUNCH_CHECK();
    }
    if (step->state) { // after every update launch read it: stream order
        nadam_state_kernel<<<1, 1, 0, c->stream>>>(step->hp, step->iterations, step->found_inf, step->state);
        MP_LAUNCH_CHECK();
    }
    return MP_OK;
}
