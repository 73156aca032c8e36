/* gemm_small.c — float32 products with a small batch side (a small-batch training step's
 * forward, dX and dW products: M or K <= 64) through oneDNN's matmul, each column block on
 * one thread of mixprec's pool (the route's policy; the primitives live in dnnl_cpu.c).
 * It must not change which library the other products use, nor thread oneDNN itself
 * (its OpenMP team waits for workers the scheduler has not run; mixprec's pool does not). */
#include <stdlib.h>

#include "cpu_kernels.h"
#include "dnnl_cpu.h"

/* The small side: a batch of up to 64 rows. NOTE: measured on the Zen 5 EPYC (one thread,
 * fastest of 200 traced replays of bench/step_profile.py, 2026-11-25): oneDNN 3.2's
 * brgemm matmul ran the 3x256 model's products at 102-110 GFLOP/s against OpenBLAS's
 * 80-94 (32x256x784 117 vs 143 us, 32x256x256 40 vs 47 us, 784x256x32 121 vs 137 us), and
 * lost on the tiny ones (32x10x256: 5 vs 3 us): hence the work floor below. Products with
 * a larger batch stay OpenBLAS's (docs/architecture.md: oneDNN 0.4-0.9x at batch 2048). */
#define SMALL_SIDE 64
#define SMALL_MIN_MNK ((int64_t)1 << 18)
/* as gemm_cpu.c: a product is split into at most MNK / 2^21 column blocks */
#define THREAD_MNK ((int64_t)1 << 21)
#define BLOCK_N 64 /* oneDNN's float32 AVX-512 N block: blocks stay whole multiples */

int mp_gemm_small_f32(int64_t M, int64_t N, int64_t K) {
    if (mp_gemm_get_mode(MP_F32) != MP_GEMM_AUTO || !mp_dnnl_mm_available())
        return 0;
    return (M <= SMALL_SIDE || K <= SMALL_SIDE) && M * N * K >= SMALL_MIN_MNK && N >= BLOCK_N;
}

typedef struct {
    int ta, tb;
    int64_t M, N, K, block;
    float alpha;
    const float *A, *B, *bias;
    float *C;
    mp_dnnl_mm *full, *last; /* primitives for a whole block and the last (narrower) one */
    mp_status st;            /* the first failure (MP_OK) */
} small_ctx;

static void small_blocks(void *vctx, int64_t b, int64_t e) {
    small_ctx *c = vctx;
    for (int64_t blk = b; blk < e; blk++) {
        int64_t lo = blk * c->block;
        int last = lo + c->block >= c->N;
        const float *B = c->tb ? c->B + lo * c->K : c->B + lo;
        mp_status st = mp_dnnl_mm_run(last && c->last ? c->last : c->full, c->alpha, c->A, B,
                                      c->bias ? c->bias + lo : NULL, c->C + lo);
        if (st != MP_OK)
            __atomic_compare_exchange_n(&c->st, &(mp_status){MP_OK}, st, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    }
}

mp_status mp_gemm_small_run(int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha, const void *A,
                            const void *B, const void *bias, double beta, void *C, int *unimpl) {
    int64_t parts = mp_num_threads(), by_work = M * N * K / THREAD_MNK, by_size = N / BLOCK_N;
    if (parts > by_work)
        parts = by_work;
    if (parts > by_size)
        parts = by_size;
    if (parts < 1)
        parts = 1;
    int64_t block = (N + parts - 1) / parts;
    block = (block + BLOCK_N - 1) / BLOCK_N * BLOCK_N;
    int64_t nblocks = (N + block - 1) / block, tail = N - (nblocks - 1) * block;
    small_ctx c = {ta, tb, M, N, K, block, (float)alpha, A, B, bias, C, NULL, NULL, MP_OK};
    /* the primitives are made here, before any block runs: a shape oneDNN refuses leaves C
     * untouched for the caller's own route */
    MP_TRY(mp_dnnl_mm_get(MP_F32, ta, tb, M, nblocks > 1 ? block : N, K, N, N, alpha != 1.0, bias != NULL, beta,
                          &c.full, unimpl));
    if (*unimpl)
        return MP_OK;
    if (nblocks > 1 && tail != block) {
        mp_status st = mp_dnnl_mm_get(MP_F32, ta, tb, M, tail, K, N, N, alpha != 1.0, bias != NULL, beta, &c.last,
                                      unimpl);
        if (st != MP_OK || *unimpl) {
            mp_dnnl_mm_release(c.full);
            return st;
        }
    }
    mp_parallel_for(nblocks, 1, small_blocks, &c);
    mp_dnnl_mm_release(c.full);
    mp_dnnl_mm_release(c.last);
    return c.st;
}
