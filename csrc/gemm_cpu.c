/* gemm_cpu.c — matrix products on the CPU backend, through OpenBLAS.
 * float32 -> sgemm, float64 -> dgemm. float16/bfloat16 are widened to float32 (F16C),
 * multiplied by sgemm with float32 accumulation, and rounded once on the way out: never a
 * 16-bit accumulation. Integer products use a plain loop (rare; correctness only).
 * NOTE: OpenBLAS here is the 32-bit-index build: dimensions must fit in int. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "cpu_kernels.h"

static mp_status check_dims(int64_t M, int64_t N, int64_t K) {
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX || M * K > INT64_MAX / 4)
        return mp_error_set(MP_ERR_VALUE,
                            "matmul dimensions (%lld, %lld, %lld) exceed the 32-bit BLAS index range",
                            (long long)M, (long long)N, (long long)K);
    return MP_OK;
}

static void sgemm_batch(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                        const float *B, float beta, float *C, int64_t batch, int64_t sa, int64_t sb, int64_t sc) {
    int lda = (int)(ta ? M : K), ldb = (int)(tb ? K : N), ldc = (int)N;
    for (int64_t i = 0; i < batch; i++)
        scipy_cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M,
                          (int)N, (int)K, alpha, A + i * sa, lda, B + i * sb, ldb, beta, C + i * sc, ldc);
}

static mp_status gemm_16(mp_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha, const void *A,
                         const void *B, double beta, void *C, int64_t batch, int64_t sa, int64_t sb, int64_t sc) {
    mp_device cpu = {MP_DEV_CPU, 0};
    /* number of distinct matrices stored for A and B (stride 0 = one shared matrix) */
    int64_t na = sa ? (batch - 1) * sa + M * K : M * K;
    int64_t nb = sb ? (batch - 1) * sb + K * N : K * N;
    int64_t nc = (batch - 1) * sc + M * N;
    size_t bytes = (size_t)(na + nb + nc) * sizeof(float);
    float *fa = mp_cpu_scratch_alloc((size_t)na * 4);
    float *fb = mp_cpu_scratch_alloc((size_t)nb * 4);
    float *fc = mp_cpu_scratch_alloc((size_t)nc * 4);
    mp_status st = MP_OK;
    if (!fa || !fb || !fc) {
        st = mp_error_set(MP_ERR_MEMORY, "out of host memory: %zu bytes of float32 panels for a %s matmul", bytes,
                          mp_dtype_name(dt));
        goto done;
    }
    mp_cpu_cast(cpu, A, dt, fa, MP_F32, na);
    mp_cpu_cast(cpu, B, dt, fb, MP_F32, nb);
    if (beta != 0.0)
        mp_cpu_cast(cpu, C, dt, fc, MP_F32, nc);
    sgemm_batch(ta, tb, M, N, K, (float)alpha, fa, fb, (float)beta, fc, batch, sa, sb, sc);
    mp_cpu_cast(cpu, fc, MP_F32, C, dt, nc);
done:
    if (fa)
        mp_cpu_scratch_free(fa, (size_t)na * 4);
    if (fb)
        mp_cpu_scratch_free(fb, (size_t)nb * 4);
    if (fc)
        mp_cpu_scratch_free(fc, (size_t)nc * 4);
    return st;
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
                     const void *B, int64_t beta, void *C, int64_t batch, int64_t sa, int64_t sb, int64_t sc) {
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                uint64_t acc = 0;
                for (int64_t k = 0; k < K; k++) {
                    int64_t av = geti(dt, A, b * sa + (ta ? k * M + i : i * K + k));
                    int64_t bv = geti(dt, B, b * sb + (tb ? j * K + k : k * N + j));
                    acc += (uint64_t)av * (uint64_t)bv;
                }
                int64_t ci = b * sc + i * N + j;
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
    if (K == 0) { /* empty contraction: C = beta * C */
        int64_t nc = (batch - 1) * sc + M * N;
        if (beta == 0.0)
            return mp_backend_cpu.fill(dev, C, dt, nc, 0.0);
        return MP_OK; /* beta == 1 in every caller */
    }
    switch (dt) {
    case MP_F32:
        sgemm_batch(ta, tb, M, N, K, (float)alpha, A, B, (float)beta, C, batch, sa, sb, sc);
        return MP_OK;
    case MP_F64: {
        int lda = (int)(ta ? M : K), ldb = (int)(tb ? K : N), ldc = (int)N;
        for (int64_t i = 0; i < batch; i++)
            scipy_cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M,
                              (int)N, (int)K, alpha, (const double *)A + i * sa, lda, (const double *)B + i * sb,
                              ldb, beta, (double *)C + i * sc, ldc);
        return MP_OK;
    }
    case MP_F16:
    case MP_BF16: return gemm_16(dt, ta, tb, M, N, K, alpha, A, B, beta, C, batch, sa, sb, sc);
    case MP_I32:
    case MP_I64:
    case MP_U8:
    case MP_I8: gemm_int(dt, ta, tb, M, N, K, (int64_t)alpha, A, B, (int64_t)beta, C, batch, sa, sb, sc); return MP_OK;
    default: return mp_error_set(MP_ERR_DTYPE, "matmul does not support %s", mp_dtype_name(dt));
    }
}

void mp_blas_set_num_threads(int n) { scipy_openblas_set_num_threads(n); }
const char *mp_blas_config(void) { return scipy_openblas_get_config(); }
