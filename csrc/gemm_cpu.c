/* gemm_cpu.c — matrix products on the CPU backend, through OpenBLAS (and oneDNN for
 * 16-bit types where the CPU has units for them: mp_gemm_uses_onednn, dnnl_cpu.c).
 * float32 -> sgemm, float64 -> dgemm. float16/bfloat16 are widened to float32 (F16C) panel
 * by panel, multiplied by sgemm with float32 accumulation, and rounded once on the way
 * out: never a 16-bit accumulation. Integer products use a plain loop (rare).
 * NOTE: OpenBLAS runs single-threaded; the product is split into row (or column) blocks
 * across mixprec's own thread pool instead. Two thread pools on two cores fought each
 * other (OpenBLAS's workers spin between calls), see docs/architecture.md.
 * NOTE: OpenBLAS here is the 32-bit-index build: dimensions must fit in int. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "cpu_kernels.h"
#include "dnnl_cpu.h"

/* Smallest block (rows or columns of C) worth giving to a thread. */
#define BLOCK_MIN 64
/* Smallest product (M*N*K) worth giving to a thread: 2^21 is ~45 us of sgemm on one core
 * (AVX-512, ~93 GFLOP/s). NOTE: measured on the 2-core dev machine (bench numbers in
 * docs/architecture.md): a 32x256x256 product on two threads took 44 us against 46 us on
 * one when the other core was idle, and 53 us against 46 us when other jobs ran there (waking
 * a worker costs tens of microseconds then); products of 6.4M and up gained 1.4-1.9x on
 * two threads. So a product is split into at most MNK / 2^21 parts. */
#define THREAD_MNK ((int64_t)1 << 21)

static mp_status check_dims(int64_t M, int64_t N, int64_t K) {
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX)
        return mp_error_set(MP_ERR_VALUE,
                            "matmul dimensions (%lld, %lld, %lld) exceed the 32-bit BLAS index range",
                            (long long)M, (long long)N, (long long)K);
    return MP_OK;
}

static int blas_init_done;

static void blas_init(void) {
    if (!blas_init_done) {
        scipy_openblas_set_num_threads(1);
        blas_init_done = 1;
    }
}

/* One product C = alpha op(A) op(B) + beta C, split into blocks of C's rows (when M is
 * the larger side) or columns, each block an independent single-threaded BLAS call. */
typedef struct {
    mp_dtype dt; /* F32 or F64 */
    int ta, tb;
    int64_t M, N, K;
    double alpha, beta;
    const void *A, *B;
    void *C;
    int split_rows;
    int64_t block;
} mm_ctx;

static void mm_blocks(void *vctx, int64_t b, int64_t e) {
    const mm_ctx *c = vctx;
    int lda = (int)(c->ta ? c->M : c->K), ldb = (int)(c->tb ? c->K : c->N), ldc = (int)c->N;
    for (int64_t blk = b; blk < e; blk++) {
        int64_t lo = blk * c->block;
        int64_t n = c->split_rows ? c->M : c->N;
        int64_t hi = lo + c->block < n ? lo + c->block : n;
        int64_t M = c->split_rows ? hi - lo : c->M, N = c->split_rows ? c->N : hi - lo;
        /* row block of op(A): rows lo..hi of A, or columns lo..hi of A when transposed */
        int64_t aoff = c->split_rows ? (c->ta ? lo : lo * c->K) : 0;
        int64_t boff = c->split_rows ? 0 : (c->tb ? lo * c->K : lo);
        int64_t coff = c->split_rows ? lo * c->N : lo;
        if (c->dt == MP_F32)
            scipy_cblas_sgemm(CblasRowMajor, c->ta ? CblasTrans : CblasNoTrans, c->tb ? CblasTrans : CblasNoTrans,
                              (int)M, (int)N, (int)c->K, (float)c->alpha, (const float *)c->A + aoff, lda,
                              (const float *)c->B + boff, ldb, (float)c->beta, (float *)c->C + coff, ldc);
        else
            scipy_cblas_dgemm(CblasRowMajor, c->ta ? CblasTrans : CblasNoTrans, c->tb ? CblasTrans : CblasNoTrans,
                              (int)M, (int)N, (int)c->K, c->alpha, (const double *)c->A + aoff, lda,
                              (const double *)c->B + boff, ldb, c->beta, (double *)c->C + coff, ldc);
    }
}

static void gemm_split(mp_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha, const void *A,
                       const void *B, double beta, void *C) {
    int threads = mp_num_threads();
    mm_ctx c = {dt, ta, tb, M, N, K, alpha, beta, A, B, C, M >= N, 0};
    int64_t n = c.split_rows ? M : N;
    int64_t by_work = M * N * K / THREAD_MNK, by_size = n / BLOCK_MIN;
    int parts = threads;
    if (parts > by_work)
        parts = (int)by_work;
    if (parts > by_size)
        parts = (int)by_size;
    if (parts < 1)
        parts = 1;
    int64_t block = (n + parts - 1) / parts;
    /* keep blocks a multiple of 16 so every thread's panel stays SIMD-aligned */
    block = (block + 15) / 16 * 16;
    c.block = block;
    int64_t nblocks = (n + block - 1) / block;
    mp_parallel_for(nblocks, 1, mm_blocks, &c);
}

/* float16/bfloat16: B is widened once; each row block of A is widened, multiplied and its
 * rows of C rounded by the thread that owns it (the panels stay in that core's cache). */
typedef struct {
    mp_dtype dt;
    int ta, tb;
    int64_t M, N, K;
    float alpha, beta;
    const void *A;   /* 16-bit, (M, K) or (K, M) */
    const float *fA; /* widened A when ta (NULL otherwise) */
    const float *fB; /* widened B */
    void *C;         /* 16-bit (M, N) */
    int64_t block;
    int oom;
} mm16_ctx;

static void mm16_blocks(void *vctx, int64_t b, int64_t e) {
    mm16_ctx *c = vctx;
    size_t es = mp_dtype_size(c->dt);
    int ldb = (int)(c->tb ? c->K : c->N);
    for (int64_t blk = b; blk < e; blk++) {
        int64_t lo = blk * c->block, hi = lo + c->block < c->M ? lo + c->block : c->M, m = hi - lo;
        float *fa = NULL, *fc;
        size_t abytes = c->fA ? 0 : (size_t)m * (size_t)c->K * 4, cbytes = (size_t)m * (size_t)c->N * 4;
        if (abytes && !(fa = mp_cpu_scratch_alloc(abytes))) {
            c->oom = 1;
            return;
        }
        if (!(fc = mp_cpu_scratch_alloc(cbytes))) {
            if (fa)
                mp_cpu_scratch_free(fa, abytes);
            c->oom = 1;
            return;
        }
        const float *ap;
        int lda;
        if (c->fA) { /* transposed A: columns lo..hi of the widened (K, M) matrix */
            ap = c->fA + lo;
            lda = (int)c->M;
        } else {
            mp_load_f32(c->dt, (const char *)c->A + lo * c->K * (int64_t)es, fa, m * c->K);
            ap = fa;
            lda = (int)c->K;
        }
        if (c->beta != 0.0f)
            mp_load_f32(c->dt, (const char *)c->C + lo * c->N * (int64_t)es, fc, m * c->N);
        scipy_cblas_sgemm(CblasRowMajor, c->ta ? CblasTrans : CblasNoTrans, c->tb ? CblasTrans : CblasNoTrans, (int)m,
                          (int)c->N, (int)c->K, c->alpha, ap, lda, c->fB, ldb, c->beta, fc, (int)c->N);
        mp_store_f32(c->dt, fc, (char *)c->C + lo * c->N * (int64_t)es, m * c->N);
        if (fa)
            mp_cpu_scratch_free(fa, abytes);
        mp_cpu_scratch_free(fc, cbytes);
    }
}

/* A small batch side (gemm_small.c's route): A, B (and C when beta != 0) widened whole, the
 * float32 product by oneDNN on one thread per column block, rounded once. *unimpl: C untouched. */
static mp_status gemm_16_small(mp_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha,
                               const void *A, const void *B, double beta, void *C, int *unimpl) {
    mp_device cpu = {MP_DEV_CPU, 0};
    size_t ab = (size_t)M * (size_t)K * 4, bb = (size_t)K * (size_t)N * 4, cb = (size_t)M * (size_t)N * 4;
    float *fa = mp_cpu_scratch_alloc(ab), *fb = mp_cpu_scratch_alloc(bb), *fc = mp_cpu_scratch_alloc(cb);
    mp_status st = MP_OK;
    if (!fa || !fb || !fc) {
        st = mp_error_set(MP_ERR_MEMORY, "out of host memory: float32 panels for a %s matmul (%lld x %lld x %lld)",
                          mp_dtype_name(dt), (long long)M, (long long)N, (long long)K);
    } else {
        mp_cpu_cast(cpu, A, dt, fa, MP_F32, M * K);
        mp_cpu_cast(cpu, B, dt, fb, MP_F32, K * N);
        if (beta != 0.0)
            mp_cpu_cast(cpu, C, dt, fc, MP_F32, M * N);
        st = mp_gemm_small_run(ta, tb, M, N, K, alpha, fa, fb, NULL, beta, fc, unimpl);
        if (st == MP_OK && !*unimpl)
            mp_cpu_cast(cpu, fc, MP_F32, C, dt, M * N);
    }
    if (fa)
        mp_cpu_scratch_free(fa, ab);
    if (fb)
        mp_cpu_scratch_free(fb, bb);
    if (fc)
        mp_cpu_scratch_free(fc, cb);
    return st;
}

static mp_status gemm_16(mp_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha, const void *A,
                         const void *B, double beta, void *C) {
    mp_device cpu = {MP_DEV_CPU, 0};
    if (mp_gemm_small_f32(M, N, K)) {
        int unimpl = 0;
        MP_TRY(gemm_16_small(dt, ta, tb, M, N, K, alpha, A, B, beta, C, &unimpl));
        if (!unimpl)
            return MP_OK;
    }
    size_t bbytes = (size_t)K * (size_t)N * 4, abytes = ta ? (size_t)M * (size_t)K * 4 : 0;
    float *fb = mp_cpu_scratch_alloc(bbytes ? bbytes : 4);
    float *fa = ta ? mp_cpu_scratch_alloc(abytes ? abytes : 4) : NULL;
    if (!fb || (ta && !fa)) {
        if (fb)
            mp_cpu_scratch_free(fb, bbytes ? bbytes : 4);
        if (fa)
            mp_cpu_scratch_free(fa, abytes ? abytes : 4);
        return mp_error_set(MP_ERR_MEMORY, "out of host memory: float32 panels for a %s matmul (%lld x %lld x %lld)",
                            mp_dtype_name(dt), (long long)M, (long long)N, (long long)K);
    }
    mp_cpu_cast(cpu, B, dt, fb, MP_F32, K * N);
    if (ta)
        mp_cpu_cast(cpu, A, dt, fa, MP_F32, M * K);
    /* Row blocks: at most ~32 MB of widened panels each, and a whole number of rounds for
     * every thread (5 blocks on 2 threads ran as 3 + 2: a 1.2x slower product).
     * NOTE: not smaller than 32 MB: every block is its own sgemm call, and each call packs
     * all of B again; with 8 MB blocks (256 rows at K = N = 4096) that repacking made a
     * float16 GEMM 1.45x the float32 one. A small B (widened, it fits in L2 and repacks from
     * there) takes ~1 MB blocks instead, so each widened A panel is still in cache when
     * sgemm reads it. */
    int threads = mp_num_threads();
    int64_t nblocks = 1;
    if (M * N * K >= 2 * THREAD_MNK) { /* at least two parts worth a thread each */
        int64_t row_bytes = (K + N) * 4;
        int64_t panel = bbytes <= ((size_t)1 << 20) ? (int64_t)1 << 20 : (int64_t)32 << 20;
        int64_t max_rows = panel / (row_bytes ? row_bytes : 1);
        if (max_rows < 16)
            max_rows = 16;
        nblocks = (M + max_rows - 1) / max_rows;
        nblocks = (nblocks + threads - 1) / threads * threads;
    }
    int64_t block = (M + nblocks - 1) / nblocks;
    block = (block + 15) / 16 * 16;
    mm16_ctx c = {dt, ta, tb, M, N, K, (float)alpha, (float)beta, A, fa, fb, C, block, 0};
    mp_parallel_for((M + block - 1) / block, 1, mm16_blocks, &c);
    mp_cpu_scratch_free(fb, bbytes ? bbytes : 4);
    if (fa)
        mp_cpu_scratch_free(fa, abytes ? abytes : 4);
    if (c.oom)
        return mp_error_set(MP_ERR_MEMORY, "out of host memory for %s matmul panels", mp_dtype_name(dt));
    return MP_OK;
}

static int64_t geti(mp_dtype dt, const void *p, int64_t i) {
    switch (dt) {
    case MP_I32: return ((const int32_t *)p)[i];
    case MP_I64: return ((const int64_t *)p)[i];
    case MP_U8: return ((const uint8_t *)p)[i];
    case MP_I8: return ((const int8_t *)p)[i];
    default: return 0;
    }
}

static void seti(mp_dtype dt, void *p, int64_t i, int64_t v) {
    switch (dt) {
    case MP_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
    case MP_I64: ((int64_t *)p)[i] = v; break;
    case MP_U8: ((uint8_t *)p)[i] = (uint8_t)(uint64_t)v; break;
    case MP_I8: ((int8_t *)p)[i] = (int8_t)(uint8_t)(uint64_t)v; break;
    default: break;
    }
}

static void gemm_int(mp_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, int64_t alpha, const void *A,
                     const void *B, int64_t beta, void *C) {
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            uint64_t acc = 0;
            for (int64_t k = 0; k < K; k++) {
                int64_t av = geti(dt, A, ta ? k * M + i : i * K + k);
                int64_t bv = geti(dt, B, tb ? j * K + k : k * N + j);
                acc += (uint64_t)av * (uint64_t)bv;
            }
            int64_t ci = i * N + j;
            uint64_t prev = beta ? (uint64_t)geti(dt, C, ci) * (uint64_t)beta : 0;
            seti(dt, C, ci, (int64_t)(acc * (uint64_t)alpha + prev));
        }
}

mp_status mp_cpu_gemm(mp_device dev, mp_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha,
                      const void *A, const void *B, double beta, void *C, int64_t batch, int64_t sa, int64_t sb,
                      int64_t sc) {
    (void)dev;
    if (M == 0 || N == 0 || batch == 0)
        return MP_OK;
    MP_TRY(check_dims(M, N, K));
    blas_init();
    if (K == 0) { /* empty contraction: C = beta * C */
        int64_t nc = (batch - 1) * sc + M * N;
        if (beta == 0.0)
            return mp_backend_cpu.fill(dev, C, dt, nc, 0.0);
        return MP_OK; /* beta == 1 in every caller */
    }
    size_t es = mp_dtype_size(dt);
    for (int64_t i = 0; i < batch; i++) {
        const char *a = (const char *)A + i * sa * (int64_t)es;
        const char *b = (const char *)B + i * sb * (int64_t)es;
        char *c = (char *)C + i * sc * (int64_t)es;
        if ((dt == MP_BF16 || dt == MP_F16 || dt == MP_F32) && mp_gemm_uses_onednn(dt)) {
            int unimpl = 0;
            MP_TRY(mp_dnnl_gemm(dt, ta, tb, M, N, K, alpha, a, b, beta, c, &unimpl));
            if (!unimpl)
                continue;
        } else if (dt == MP_F32 && mp_gemm_small_f32(M, N, K)) { /* a small batch side: gemm_small.c */
            int unimpl = 0;
            MP_TRY(mp_gemm_small_run(ta, tb, M, N, K, alpha, a, b, NULL, beta, c, &unimpl));
            if (!unimpl)
                continue;
        }
        switch (dt) {
        case MP_F32:
        case MP_F64: gemm_split(dt, ta, tb, M, N, K, alpha, a, b, beta, c); break;
        case MP_F16:
        case MP_BF16: MP_TRY(gemm_16(dt, ta, tb, M, N, K, alpha, a, b, beta, c)); break;
        case MP_I32:
        case MP_I64:
        case MP_U8:
        case MP_I8: gemm_int(dt, ta, tb, M, N, K, (int64_t)alpha, a, b, (int64_t)beta, c); break;
        default: return mp_error_set(MP_ERR_DTYPE, "matmul does not support %s", mp_dtype_name(dt));
        }
    }
    return MP_OK;
}

/* The gemm_bias_act slot (backend.def): oneDNN's products take the bias as oneDNN's bias
 * argument (no pass over C); the others get the bias rows and the gemm with beta = 1 (what
 * the op layer composes where a backend has no slot: the same values). ReLU is mixprec's own
 * pass after it (oneDNN's ReLU post-op maps NaN to 0; TensorFlow's eager Relu keeps NaN). */
mp_status mp_cpu_gemm_bias_act(mp_device dev, mp_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K,
                               const void *A, const void *B, const void *bias, int act, void *C) {
    if (M <= 0 || N <= 0)
        return MP_OK;
    if (K <= 0)
        return mp_error_set(MP_ERR_INTERNAL, "gemm_bias_act: K must be >= 1 (the op layer handles K == 0)");
    MP_TRY(check_dims(M, N, K));
    int unimpl = 1;
    if ((dt == MP_BF16 || dt == MP_F16 || dt == MP_F32) && mp_gemm_uses_onednn(dt)) {
        if (bias)
            MP_TRY(mp_dnnl_gemm_bias(dt, ta, tb, M, N, K, A, B, bias, C, &unimpl));
        else
            MP_TRY(mp_dnnl_gemm(dt, ta, tb, M, N, K, 1.0, A, B, 0.0, C, &unimpl));
    } else if (dt == MP_F32 && mp_gemm_small_f32(M, N, K)) {
        MP_TRY(mp_gemm_small_run(ta, tb, M, N, K, 1.0, A, B, bias, 0.0, C, &unimpl));
    }
    if (unimpl) {
        size_t row = (size_t)N * mp_dtype_size(dt);
        if (bias)
            for (int64_t r = 0; r < M; r++)
                memcpy((char *)C + (size_t)r * row, bias, row);
        MP_TRY(mp_cpu_gemm(dev, dt, ta, tb, M, N, K, 1.0, A, B, bias ? 1.0 : 0.0, C, 1, 0, 0, 0));
    }
    if (act)
        MP_TRY(mp_cpu_unary(dev, MP_UNARY_RELU, dt, C, C, M * N, 0.0));
    return MP_OK;
}

void mp_blas_set_num_threads(int n) {
    (void)n; /* OpenBLAS stays single-threaded: GEMMs are split across mixprec's pool */
    blas_init();
}
const char *mp_blas_config(void) { return scipy_openblas_get_config(); }
