/* backend_cpu.c — the CPU backend table: memory, copies, casts, fills, layout copies,
 * select, one-hot and random numbers. Arithmetic kernels live in cpu_elementwise.c,
 * cpu_reduce.c and gemm_cpu.c. Inputs were validated by ops.c; this file only computes.
 * Large blocks are cached (exact size) so a training loop does not page-fault its
 * activations in afresh every step. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cpu_kernels.h"
#include "dnnl_cpu.h"
#include "philox.h"
#include "philox_tf.h"
#include "scalar_cast.h"

/* ------------------------------------------------------------------ memory */

/* NOTE: 128 KB, glibc's smallest mmap threshold, not 1 MB: blocks between the two went to
 * malloc, whose dynamic threshold (raised to a freed mmapped block's size) and heap trimming
 * (top free space > 2x that) then gave the pages of a 784x256 float32 gradient back to the
 * kernel at every step and faulted them in again at the next: the 3x256 model's eager step
 * at batch 32 took 2.4 ms instead of 1.3 ms, depending on what the process had allocated
 * before (docs/architecture.md). */
#define CACHE_MIN_BYTES ((size_t)128 << 10)
#define CACHE_SLOTS 256
#define HUGE_ALIGN ((size_t)2 << 20)

static struct {
    pthread_mutex_t mu;
    void *ptr[CACHE_SLOTS];
    size_t size[CACHE_SLOTS];
    size_t total;
    size_t limit;
} cache = {PTHREAD_MUTEX_INITIALIZER};

/* Under AddressSanitizer every block is allocated at its exact size and never cached, so
 * an access one element past a tensor, or to a freed one, is reported instead of landing in
 * rounding slack or a cached block. */
#if defined(__SANITIZE_ADDRESS__)
#define MP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MP_ASAN 1
#endif
#endif

static size_t cache_limit(void) {
#ifdef MP_ASAN
    return 1; /* disabled */
#else
    if (!cache.limit) {
        const char *env = getenv("MIXPREC_CPU_CACHE_MB");
        cache.limit = env ? (size_t)atol(env) << 20 : (size_t)2 << 30;
        if (!cache.limit)
            cache.limit = 1; /* disabled */
    }
    return cache.limit;
#endif
}

#ifndef MP_ASAN
static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }
#endif

static void *raw_alloc(size_t nbytes) {
#ifdef MP_ASAN
    void *q = NULL;
    return posix_memalign(&q, 64, nbytes ? nbytes : 1) == 0 ? q : NULL;
#else
    size_t align = nbytes >= 4 * HUGE_ALIGN ? HUGE_ALIGN : 64;
    size_t sz = round_up(nbytes ? nbytes : 1, align);
    void *p = aligned_alloc(align, sz);
#ifdef MADV_HUGEPAGE
    if (p && align == HUGE_ALIGN)
        madvise(p, sz, MADV_HUGEPAGE);
#endif
    return p;
#endif
}

/* Bytes handed out by cpu_alloc and not yet freed (cached blocks do not count), and the
 * high-water mark since the last reset: tf.config.experimental.get_memory_info('CPU:0'). */
static int64_t mem_current, mem_peak;

static void mem_add(int64_t n) {
    int64_t now = __atomic_add_fetch(&mem_current, n, __ATOMIC_RELAXED);
    int64_t peak = __atomic_load_n(&mem_peak, __ATOMIC_RELAXED);
    while (now > peak && !__atomic_compare_exchange_n(&mem_peak, &peak, now, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

static void mp_cpu_memory_stats(int64_t *current, int64_t *peak) {
    *current = __atomic_load_n(&mem_current, __ATOMIC_RELAXED);
    *peak = __atomic_load_n(&mem_peak, __ATOMIC_RELAXED);
}

static void mp_cpu_memory_reset_peak(void) {
    __atomic_store_n(&mem_peak, __atomic_load_n(&mem_current, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
}

/* The memory_stats slot: the host's tensor memory (the emulated GPU shares it). */
static mp_status cpu_memory_stats(mp_device dev, int reset_peak, int64_t *current, int64_t *peak) {
    (void)dev;
    mp_cpu_memory_stats(current, peak);
    if (reset_peak)
        mp_cpu_memory_reset_peak();
    return MP_OK;
}

/* The synchronize slot: CPU kernels have finished when they return. */
static mp_status cpu_synchronize(mp_device dev) {
    (void)dev;
    return MP_OK;
}

/* The host_syncs slot: the host never waits for itself. */
static mp_status cpu_host_syncs(mp_device dev, int64_t *count) {
    (void)dev;
    *count = 0;
    return MP_OK;
}

/* The stream slot: the CPU has no queue (its kernels are done when they return). */
static mp_status cpu_stream(mp_device dev, void **out) {
    (void)dev;
    *out = NULL;
    return MP_OK;
}

/* The stream_idle slot: nothing is ever left queued on the CPU. */
static mp_status cpu_stream_idle(mp_device dev, int *idle) {
    (void)dev;
    *idle = 1;
    return MP_OK;
}

static mp_status cpu_alloc(mp_device dev, size_t nbytes, void **out) {
    (void)dev;
    if (nbytes >= CACHE_MIN_BYTES) {
        pthread_mutex_lock(&cache.mu);
        for (int i = 0; i < CACHE_SLOTS; i++) {
            if (cache.ptr[i] && cache.size[i] == nbytes) {
                *out = cache.ptr[i];
                cache.ptr[i] = NULL;
                cache.total -= nbytes;
                pthread_mutex_unlock(&cache.mu);
                mem_add((int64_t)nbytes);
                return MP_OK;
            }
        }
        pthread_mutex_unlock(&cache.mu);
    }
    void *p = raw_alloc(nbytes);
    if (!p) {
        /* Give the cache back and retry once before failing. */
        pthread_mutex_lock(&cache.mu);
        for (int i = 0; i < CACHE_SLOTS; i++) {
            free(cache.ptr[i]);
            cache.ptr[i] = NULL;
        }
        cache.total = 0;
        pthread_mutex_unlock(&cache.mu);
        p = raw_alloc(nbytes);
    }
    if (!p)
        return mp_error_set(MP_ERR_MEMORY, "out of host memory: could not allocate %zu bytes", nbytes);
    mem_add((int64_t)nbytes);
    *out = p;
    return MP_OK;
}

static void cpu_free(mp_device dev, void *p, size_t nbytes) {
    (void)dev;
    if (!p)
        return;
    __atomic_sub_fetch(&mem_current, (int64_t)nbytes, __ATOMIC_RELAXED);
    if (nbytes >= CACHE_MIN_BYTES) {
        pthread_mutex_lock(&cache.mu);
        if (cache.total + nbytes <= cache_limit()) {
            int smallest = -1;
            for (int i = 0; i < CACHE_SLOTS; i++) {
                if (!cache.ptr[i]) {
                    cache.ptr[i] = p;
                    cache.size[i] = nbytes;
                    cache.total += nbytes;
                    pthread_mutex_unlock(&cache.mu);
                    return;
                }
                if (smallest < 0 || cache.size[i] < cache.size[smallest])
                    smallest = i;
            }
            /* every slot taken: a larger block displaces the smallest (the large ones are
             * the costly ones to fault in again) */
            if (cache.size[smallest] < nbytes) {
                void *old = cache.ptr[smallest];
                cache.total = cache.total - cache.size[smallest] + nbytes;
                cache.ptr[smallest] = p;
                cache.size[smallest] = nbytes;
                pthread_mutex_unlock(&cache.mu);
                free(old);
                return;
            }
        }
        pthread_mutex_unlock(&cache.mu);
    }
    free(p);
}

void mp_cpu_cache_clear(void) {
    pthread_mutex_lock(&cache.mu);
    for (int i = 0; i < CACHE_SLOTS; i++) {
        free(cache.ptr[i]);
        cache.ptr[i] = NULL;
    }
    cache.total = 0;
    pthread_mutex_unlock(&cache.mu);
}

size_t mp_cpu_cache_bytes(void) { return cache.total; }

void *mp_cpu_scratch_alloc(size_t nbytes) {
    void *p = NULL;
    if (cpu_alloc((mp_device){MP_DEV_CPU, 0}, nbytes, &p) != MP_OK)
        return NULL;
    return p;
}

void mp_cpu_scratch_free(void *p, size_t nbytes) { cpu_free((mp_device){MP_DEV_CPU, 0}, p, nbytes); }

/* ------------------------------------------------------------------ copies */

typedef struct {
    char *dst;
    const char *src;
} copy_ctx;

static void copy_range(void *vctx, int64_t b, int64_t e) {
    copy_ctx *c = vctx;
    memcpy(c->dst + b, c->src + b, (size_t)(e - b));
}

static mp_status cpu_copy(mp_device dev, void *dst, const void *src, size_t nbytes) {
    (void)dev;
    if (nbytes && dst != src) {
        copy_ctx c = {dst, src};
        mp_parallel_for((int64_t)nbytes, (int64_t)1 << 21, copy_range, &c);
    }
    return MP_OK;
}

/* ------------------------------------------------------------------ f32 widen/narrow */

void mp_load_f32(mp_dtype dt, const void *src, float *dst, int64_t n) {
    switch (dt) {
    case MP_F16: mp_row_f16_to_f32(src, dst, n); break;
    case MP_BF16: mp_row_bf16_to_f32(src, dst, n); break;
    default: memcpy(dst, src, (size_t)n * 4); break;
    }
}

void mp_store_f32(mp_dtype dt, const float *src, void *dst, int64_t n) {
    switch (dt) {
    case MP_F16: mp_row_f32_to_f16(src, dst, n); break;
    case MP_BF16: mp_row_f32_to_bf16(src, dst, n); break;
    default: memcpy(dst, src, (size_t)n * 4); break;
    }
}

/* ------------------------------------------------------------------ casts */

/* Generic element conversion (scalar_cast.h: the rules every backend shares). */
static void cast_generic(const void *src, mp_dtype sdt, void *dst, mp_dtype ddt, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        mp_cast_one(src, sdt, dst, ddt, i);
}

typedef struct {
    const char *src;
    char *dst;
    mp_dtype sdt, ddt;
} cast_ctx;

static void cast_range(void *vctx, int64_t b, int64_t e) {
    cast_ctx *c = vctx;
    const void *s = c->src + b * (int64_t)mp_dtype_size(c->sdt);
    void *d = c->dst + b * (int64_t)mp_dtype_size(c->ddt);
    int64_t n = e - b;
    mp_dtype sdt = c->sdt, ddt = c->ddt;
    if (sdt == ddt) {
        memcpy(d, s, (size_t)n * mp_dtype_size(sdt));
    } else if (sdt == MP_F32 && ddt == MP_F16) {
        mp_row_f32_to_f16(s, d, n);
    } else if (sdt == MP_F16 && ddt == MP_F32) {
        mp_row_f16_to_f32(s, d, n);
    } else if (sdt == MP_F32 && ddt == MP_BF16) {
        mp_row_f32_to_bf16(s, d, n);
    } else if (sdt == MP_BF16 && ddt == MP_F32) {
        mp_row_bf16_to_f32(s, d, n);
    } else if ((sdt == MP_F16 || sdt == MP_BF16) && (ddt == MP_F16 || ddt == MP_BF16)) {
        /* through f32 (exact widening, one rounding) */
        float buf[MP_BLOCK];
        for (int64_t i = 0; i < n; i += MP_BLOCK) {
            int64_t m = n - i < MP_BLOCK ? n - i : MP_BLOCK;
            mp_load_f32(sdt, (const uint16_t *)s + i, buf, m);
            mp_store_f32(ddt, buf, (uint16_t *)d + i, m);
        }
    } else {
        cast_generic(s, sdt, d, ddt, n);
    }
}

mp_status mp_cpu_cast(mp_device dev, const void *src, mp_dtype sdt, void *dst, mp_dtype ddt, int64_t n) {
    (void)dev;
    cast_ctx c = {src, dst, sdt, ddt};
    mp_parallel_for(n, MP_GRAIN * 4, cast_range, &c);
    return MP_OK;
}

mp_status mp_cast_host(const void *src, mp_dtype sdt, void *dst, mp_dtype ddt, int64_t n) {
    if (!mp_dtype_valid(sdt) || !mp_dtype_valid(ddt))
        return mp_error_set(MP_ERR_VALUE, "invalid dtype code in cast");
    return mp_cpu_cast((mp_device){MP_DEV_CPU, 0}, src, sdt, dst, ddt, n);
}

/* ------------------------------------------------------------------ fill / iota */

static void store_f64(mp_dtype dt, void *dst, int64_t i, double v) {
    cast_generic(&v, MP_F64, (char *)dst + i * (int64_t)mp_dtype_size(dt), dt, 1);
}

static mp_status cpu_fill(mp_device dev, void *dst, mp_dtype dt, int64_t n, double value) {
    (void)dev;
    if (n <= 0)
        return MP_OK;
    size_t es = mp_dtype_size(dt);
    store_f64(dt, dst, 0, value);
    /* replicate the first element by doubling copies */
    int64_t have = 1;
    while (have < n) {
        int64_t m = have < n - have ? have : n - have;
        memcpy((char *)dst + have * (int64_t)es, dst, (size_t)m * es);
        have += m;
    }
    return MP_OK;
}

static mp_status cpu_iota(mp_device dev, void *dst, mp_dtype dt, int64_t n, double start, double delta) {
    (void)dev;
    for (int64_t i = 0; i < n; i++) {
        if (dt == MP_I64) /* exact for large integer ranges */
            ((int64_t *)dst)[i] = (int64_t)start + i * (int64_t)delta;
        else
            store_f64(dt, dst, i, start + (double)i * delta);
    }
    return MP_OK;
}

/* ------------------------------------------------------------------ strided copy */

typedef struct {
    const mp_strided *s;
    const char *src;
    char *dst;
    size_t es;
} sc_ctx;

/* Rows are the innermost dimension; the range is over the product of the outer dims. */
static void strided_range(void *vctx, int64_t b, int64_t e) {
    sc_ctx *c = vctx;
    const mp_strided *s = c->s;
    int nd = s->ndim;
    int64_t inner = s->shape[nd - 1];
    int64_t ss = s->sstride[nd - 1], ds = s->dstride[nd - 1];
    size_t es = c->es;
    for (int64_t r = b; r < e; r++) {
        int64_t rem = r, so = 0, doff = 0;
        for (int d = nd - 2; d >= 0; d--) {
            int64_t i = rem % s->shape[d];
            rem /= s->shape[d];
            so += i * s->sstride[d];
            doff += i * s->dstride[d];
        }
        const char *sp = c->src + so * (int64_t)es;
        char *dp = c->dst + doff * (int64_t)es;
        if (ss == 1 && ds == 1) {
            memcpy(dp, sp, (size_t)inner * es);
            continue;
        }
        switch (es) {
        case 1:
            for (int64_t i = 0; i < inner; i++) dp[i * ds] = sp[i * ss];
            break;
        case 2:
            for (int64_t i = 0; i < inner; i++) ((uint16_t *)dp)[i * ds] = ((const uint16_t *)sp)[i * ss];
            break;
        case 4:
            for (int64_t i = 0; i < inner; i++) ((uint32_t *)dp)[i * ds] = ((const uint32_t *)sp)[i * ss];
            break;
        default:
            for (int64_t i = 0; i < inner; i++) ((uint64_t *)dp)[i * ds] = ((const uint64_t *)sp)[i * ss];
            break;
        }
    }
}

static mp_status cpu_strided_copy(mp_device dev, mp_dtype dt, const mp_strided *s, const void *src, void *dst) {
    (void)dev;
    if (s->ndim == 0) {
        memcpy(dst, src, mp_dtype_size(dt));
        return MP_OK;
    }
    int64_t rows = 1;
    for (int d = 0; d < s->ndim - 1; d++)
        rows *= s->shape[d];
    if (rows == 0 || s->shape[s->ndim - 1] == 0)
        return MP_OK;
    sc_ctx c = {s, src, dst, mp_dtype_size(dt)};
    int64_t grain = MP_GRAIN / (s->shape[s->ndim - 1] + 1) + 1;
    mp_parallel_for(rows, grain, strided_range, &c);
    return MP_OK;
}

/* ------------------------------------------------------------------ where */

typedef struct {
    const mp_bcast *bc;
    const uint8_t *cond;
    const char *a, *b;
    char *y;
    size_t es;
} where_ctx;

static void where_range(void *vctx, int64_t b, int64_t e) {
    where_ctx *c = vctx;
    const mp_bcast *bc = c->bc;
    int nd = bc->ndim;
    int64_t inner = bc->shape[nd - 1];
    size_t es = c->es;
    for (int64_t r = b; r < e; r++) {
        int64_t rem = r, o[3] = {0, 0, 0};
        for (int d = nd - 2; d >= 0; d--) {
            int64_t i = rem % bc->shape[d];
            rem /= bc->shape[d];
            for (int k = 0; k < 3; k++)
                o[k] += i * bc->stride[k][d];
        }
        int64_t s0 = bc->stride[0][nd - 1], s1 = bc->stride[1][nd - 1], s2 = bc->stride[2][nd - 1];
        char *yp = c->y + r * inner * (int64_t)es;
        for (int64_t i = 0; i < inner; i++) {
            const char *src = c->cond[o[0] + i * s0] ? c->a + (o[1] + i * s1) * (int64_t)es
                                                      : c->b + (o[2] + i * s2) * (int64_t)es;
            memcpy(yp + i * (int64_t)es, src, es);
        }
    }
}

static mp_status cpu_where(mp_device dev, mp_dtype dt, const mp_bcast *bc, const void *cond, const void *a,
                           const void *b, void *y) {
    (void)dev;
    int64_t inner = bc->shape[bc->ndim - 1];
    if (bc->numel == 0)
        return MP_OK;
    where_ctx c = {bc, cond, a, b, y, mp_dtype_size(dt)};
    mp_parallel_for(bc->numel / inner, MP_GRAIN / (inner + 1) + 1, where_range, &c);
    return MP_OK;
}

/* ------------------------------------------------------------------ one_hot */

static mp_status cpu_one_hot(mp_device dev, mp_dtype dt, const int64_t *idx, void *y, int64_t n, int64_t depth,
                             double on, double off) {
    MP_TRY(cpu_fill(dev, y, dt, n * depth, off));
    for (int64_t i = 0; i < n; i++) {
        int64_t k = idx[i];
        if (k >= 0 && k < depth)
            store_f64(dt, y, i * depth + k, on);
    }
    return MP_OK;
}

/* ------------------------------------------------------------------ random */

typedef struct {
    int dist;
    mp_dtype dt;
    void *y;
    uint64_t seed, stream;
    double a, b;
} rand_ctx;

static void rand_range(void *vctx, int64_t beg, int64_t end) {
    rand_ctx *c = vctx;
    float buf[MP_BLOCK];
    for (int64_t i = beg; i < end; i += MP_BLOCK) {
        int64_t m = end - i < MP_BLOCK ? end - i : MP_BLOCK;
        if (c->dt == MP_F64) {
            for (int64_t j = 0; j < m; j++) {
                uint64_t k = (uint64_t)(i + j);
                double z = c->dist == MP_RANDOM_UNIFORM ? mp_philox_uniform(c->seed, c->stream, k)
                           : c->dist == MP_RANDOM_NORMAL ? mp_philox_normal(c->seed, c->stream, k)
                                                         : mp_philox_truncated_normal(c->seed, c->stream, k);
                ((double *)c->y)[i + j] = c->dist == MP_RANDOM_UNIFORM ? c->a + (c->b - c->a) * z : c->a + c->b * z;
            }
            continue;
        }
        float fa = (float)c->a, fb = (float)c->b;
        for (int64_t j = 0; j < m; j++) {
            uint64_t k = (uint64_t)(i + j);
            if (c->dist == MP_RANDOM_UNIFORM)
                buf[j] = fa + (fb - fa) * mp_philox_uniform(c->seed, c->stream, k);
            else if (c->dist == MP_RANDOM_NORMAL)
                buf[j] = fa + fb * mp_philox_normal(c->seed, c->stream, k);
            else
                buf[j] = fa + fb * mp_philox_truncated_normal(c->seed, c->stream, k);
        }
        if (c->dt == MP_F32 || c->dt == MP_F16 || c->dt == MP_BF16) {
            mp_store_f32(c->dt, buf, (char *)c->y + i * (int64_t)mp_dtype_size(c->dt), m);
        } else { /* integer uniform: floor into [a, b) */
            for (int64_t j = 0; j < m; j++) {
                double v = floor(c->a + (c->b - c->a) * (double)mp_philox_uniform(c->seed, c->stream, (uint64_t)(i + j)));
                if (v >= c->b)
                    v = c->b - 1;
                store_f64(c->dt, c->y, i + j, v);
            }
        }
    }
}

/* The next 16-bit float value toward -inf (bit patterns are sign-magnitude). */
static uint16_t step_down16(uint16_t h) {
    if (h & 0x8000u)
        return (uint16_t)(h + 1u);
    return h ? (uint16_t)(h - 1u) : 0x8001u;
}

/* Uniform draws are a + (b - a) * u with u < 1, computed in float32 (float64 for f64);
 * rounding that (or its conversion to a 16-bit dtype) can still land on b: about one
 * float16 draw in 4096 from [0, 1) did. Such values become the largest value of the dtype
 * below b, so the documented range [a, b) holds. */
static void clamp_below(mp_dtype dt, void *y, int64_t n, double b) {
    if (dt == MP_F64) {
        double lim = nextafter(b, -INFINITY);
        for (int64_t i = 0; i < n; i++)
            if (((double *)y)[i] >= b)
                ((double *)y)[i] = lim;
    } else if (dt == MP_F32) {
        float lim = (float)b;
        while ((double)lim >= b)
            lim = nextafterf(lim, -INFINITY);
        for (int64_t i = 0; i < n; i++)
            if ((double)((float *)y)[i] >= b)
                ((float *)y)[i] = lim;
    } else {
        float (*load)(uint16_t) = dt == MP_F16 ? mp_f16_to_f32 : mp_bf16_to_f32;
        uint16_t lim = dt == MP_F16 ? mp_f32_to_f16((float)b) : mp_f32_to_bf16((float)b);
        while ((double)load(lim) >= b)
            lim = step_down16(lim);
        for (int64_t i = 0; i < n; i++)
            if ((double)load(((uint16_t *)y)[i]) >= b)
                ((uint16_t *)y)[i] = lim;
    }
}

static void rand_clamp_range(void *vctx, int64_t beg, int64_t end) {
    rand_ctx *c = vctx;
    clamp_below(c->dt, (char *)c->y + beg * (int64_t)mp_dtype_size(c->dt), end - beg, c->b);
}

/* TensorFlow's streams (philox_tf.h), element by element: stateless (counter from 0) or a
 * Generator's (counter from a + b * 2^32; integers every bit) */
static void rand_tf_range(void *vctx, int64_t beg, int64_t end) {
    rand_ctx *c = vctx;
    int gen = c->dist >= MP_RANDOM_TFG_UNIFORM;
    int d = c->dist - (gen ? MP_RANDOM_TFG_UNIFORM : MP_RANDOM_TF_UNIFORM); /* 0 uniform, 1 normal, 2 truncated */
    uint64_t off = gen ? (uint64_t)c->a | ((uint64_t)c->b << 32) : 0;
    int64_t lo = gen ? 0 : (int64_t)c->a;
    uint64_t range = gen ? 0 : (uint64_t)((int64_t)c->b - lo);
    uint64_t sd = c->seed, st = c->stream;
    for (int64_t i = beg; i < end; i++) {
        uint64_t k = (uint64_t)i;
        switch (c->dt) {
        case MP_F64:
            ((double *)c->y)[i] = d == 0   ? mp_tf_uniform_f64(sd, st, off, k)
                                  : d == 1 ? mp_tf_normal_f64(sd, st, off, k)
                                           : mp_tf_truncated_f64(sd, st, off, k);
            break;
        case MP_F32:
        case MP_F16:
        case MP_BF16:
            if (d == 0 && c->dt != MP_F32) {
                ((uint16_t *)c->y)[i] = mp_tf_uniform_16(c->dt == MP_BF16, sd, st, off, k);
            } else {
                float v = d == 0   ? mp_tf_uniform_f32(sd, st, off, k)
                          : d == 1 ? mp_tf_normal_f32(sd, st, off, k)
                                   : mp_tf_truncated_f32(sd, st, off, k);
                mp_store_f32(c->dt, &v, (char *)c->y + i * (int64_t)mp_dtype_size(c->dt), 1);
            }
            break;
        default: { /* I32 / I64 uniform */
            int64_t v = mp_tf_uniform_int(c->dt == MP_I64, sd, st, off, k, lo, range);
            if (c->dt == MP_I64)
                ((int64_t *)c->y)[i] = v;
            else
                ((int32_t *)c->y)[i] = (int32_t)v;
        }
        }
    }
}

static mp_status cpu_random(mp_device dev, int dist, mp_dtype dt, void *y, int64_t n, uint64_t seed,
                            uint64_t stream, double a, double b) {
    (void)dev;
    rand_ctx c = {dist, dt, y, seed, stream, a, b};
    if (dist >= MP_RANDOM_TF_UNIFORM) {
        mp_parallel_for(n, 1 << 12, rand_tf_range, &c);
        return MP_OK;
    }
    mp_parallel_for(n, 1 << 14, rand_range, &c);
    if (dist == MP_RANDOM_UNIFORM && mp_dtype_is_floating(dt) && b > a)
        mp_parallel_for(n, MP_GRAIN * 4, rand_clamp_range, &c);
    return MP_OK;
}

/* ------------------------------------------------------------------ table */

const mp_backend mp_backend_cpu = {
    .name = "cpu",
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy_h2d = cpu_copy,
    .copy_d2h = cpu_copy,
    .copy_d2d = cpu_copy,
    .cast = mp_cpu_cast,
    .fill = cpu_fill,
    .iota = cpu_iota,
    .unary = mp_cpu_unary,
    .binary = mp_cpu_binary,
    .where = cpu_where,
    .reduce = mp_cpu_reduce,
    .argreduce = mp_cpu_argreduce,
    .strided_copy = cpu_strided_copy,
    .gemm = mp_cpu_gemm,
    .softmax = mp_cpu_softmax,
    .one_hot = cpu_one_hot,
    .random = cpu_random,
    .softmax_xent = mp_cpu_softmax_xent,
    .finite_check = mp_cpu_finite_check,
    .optim_update = mp_cpu_optim_update,
    .step_end = mp_cpu_step_end,
    .conv = mp_cpu_conv,
    .pool = mp_cpu_pool,
    .batch_norm = mp_cpu_batch_norm,
    .conv_bias_act = mp_cpu_conv_bias_act,
    .gemm_bias_act = mp_cpu_gemm_bias_act,
    .batch_stats = mp_cpu_batch_stats,
    .gather = mp_cpu_gather,
    .scatter_add = mp_cpu_scatter_add,
    .cumsum = mp_cpu_cumsum,
    .linalg = mp_cpu_linalg,
    .max_pool_grad_relu = mp_cpu_max_pool_grad_relu,
    .pool_workspace = mp_cpu_pool_workspace,
    .scan = mp_cpu_scan,
    .segment_reduce = mp_cpu_segment_reduce,
    .scatter_nd = mp_cpu_scatter_nd,
    .sort = mp_cpu_sort,
    .memory_stats = cpu_memory_stats,
    .synchronize = cpu_synchronize,
    .host_syncs = cpu_host_syncs,
    .stream = cpu_stream,
    .stream_idle = cpu_stream_idle,
    /* graph_capture_begin/end, graph_launch, graph_destroy: NULL (no CUDA graphs on a CPU;
     * graph replay runs its loop) */
};
