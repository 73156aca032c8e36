// gemm.cu — matrix products on the GPU (the backend's gemm slot), through cuBLASLt:
// float16 / bfloat16 inputs with float32 accumulation and float32 alpha/beta, float32 on the
// TF32 tensor cores unless TF32 is disabled (TensorFlow's default on Ampere and later),
// float64 in double; a bias (+ ReLU) epilogue for the fused MatMul (gemm_bias_act). Integers
// (and any shape cuBLASLt has no algorithm for) go to a plain kernel with the CPU's
// accumulation types (int64 with wrap-around, float32, double).
// Row-major C = op(A) op(B) is computed as the column-major C^T = op(B)^T op(A)^T. A plan (the
// descriptors and the heuristic's algorithm) is cached per dtype, shape, transposes, batch
// strides, TF32 mode and pointer alignment; the workspace is the context's, allocated once.
#include <string.h>

#include <unordered_map>

#include "kernels.cuh"

struct gemm_key {
    int64_t dt, ta, tb, M, N, K, batch, sa, sb, sc, tf32, align_a, align_b, align_c;
    int64_t epi; // 0: none; else the cuBLASLt epilogue (bias, or ReLU and bias: gemm_bias_act)
    int64_t align_bias; // the bias pointer's alignment (the heuristic reads the pointer's value)
    bool operator==(const gemm_key &o) const { return memcmp(this, &o, sizeof *this) == 0; }
};
struct gemm_key_hash {
    size_t operator()(const gemm_key &k) const { // FNV-1a over the key's bytes
        const unsigned char *p = (const unsigned char *)&k;
        uint64_t h = 1469598103934665603ull;
        for (size_t i = 0; i < sizeof k; i++)
            h = (h ^ p[i]) * 1099511628211ull;
        return (size_t)h;
    }
};
struct gemm_plan {
    bool ok; // false: cuBLASLt has no algorithm for it, the plain kernel runs
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c; // cuBLASLt's A (our B), B (our A), C = D (our C)
    cublasLtMatmulAlgo_t algo;
};
typedef std::unordered_map<gemm_key, gemm_plan, gemm_key_hash> plan_map;
#define MAX_PLANS 1024

// ------------------------------------------------------------------ plain kernel

// C[b] = alpha * op(A[b]) op(B[b]) + beta * C[b], one thread per element of C, row-major;
// A (M, K) or (K, M) if ta, B (K, N) or (N, K) if tb. C is not read when beta == 0.
template <int DT>
static __global__ void gemm_plain_kernel(int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha,
                                         const typename mp_dt<DT>::T *A, const typename mp_dt<DT>::T *B, double beta,
                                         typename mp_dt<DT>::T *C, int64_t batch, int64_t sa, int64_t sb, int64_t sc) {
    typedef mp_dt<DT> D;
    MP_GRID_STRIDE(idx, batch * M * N) {
        const int64_t bi = idx / (M * N), r = idx % (M * N), i = r / N, j = r % N;
        const typename D::T *a = A + bi * sa, *b = B + bi * sb;
        typename D::T *c = C + bi * sc;
        if constexpr (DT == MP_F32 || DT == MP_F16 || DT == MP_BF16 || DT == MP_F64) {
            typedef typename D::C Acc; // float32 accumulation for 16-bit and float32, double for float64
            Acc acc = 0;
            for (int64_t k = 0; k < K; k++)
                acc += D::load(a, ta ? k * M + i : i * K + k) * D::load(b, tb ? j * K + k : k * N + j);
            Acc out = (Acc)alpha * acc;
            if (beta != 0.0)
                out += (Acc)beta * D::load(c, i * N + j);
            D::store(c, i * N + j, out);
        } else { // gemm_cpu.c's gemm_int
            uint64_t acc = 0;
            for (int64_t k = 0; k < K; k++)
                acc += (uint64_t)D::load(a, ta ? k * M + i : i * K + k) * (uint64_t)D::load(b, tb ? j * K + k : k * N + j);
            uint64_t prev = beta != 0.0 ? (uint64_t)D::load(c, i * N + j) * (uint64_t)(int64_t)beta : 0;
            D::store(c, i * N + j, (int64_t)(acc * (uint64_t)(int64_t)alpha + prev));
        }
    }
}

template <int DT>
static mp_status gemm_plain_launch(mp_cuda_ctx *c, int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha,
                                   const void *A, const void *B, double beta, void *C, int64_t batch, int64_t sa,
                                   int64_t sb, int64_t sc) {
    typedef typename mp_dt<DT>::T T;
    gemm_plain_kernel<DT><<<mp_cuda_grid(c, batch * M * N), MP_THREADS, 0, c->stream>>>(
        ta, tb, M, N, K, alpha, (const T *)A, (const T *)B, beta, (T *)C, batch, sa, sb, sc);
    MP_LAUNCH_CHECK();
    return MP_OK;
}

static mp_status gemm_plain(mp_cuda_ctx *c, mp_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K,
                            double alpha, const void *A, const void *B, double beta, void *C, int64_t batch, int64_t sa,
                            int64_t sb, int64_t sc) {
    MP_SWITCH_ALL(dt, gemm_plain_launch, c, ta, tb, M, N, K, alpha, A, B, beta, C, batch, sa, sb, sc)
    return MP_CUDA_FAIL(MP_ERR_DTYPE, "matmul does not support %s", mp_cuda_api->dtype_name(dt));
}

// ------------------------------------------------------------------ cuBLASLt plans

// The largest power of two (at most 256) dividing every batch's pointer.
static int64_t alignment(const void *p, int64_t stride_bytes) {
    uint64_t v = (uint64_t)(uintptr_t)p | (uint64_t)stride_bytes | 256u;
    return (int64_t)(v & (~v + 1));
}

static mp_status layout(cublasLtMatrixLayout_t *l, cudaDataType_t t, uint64_t rows, uint64_t cols, int64_t ld,
                        int64_t batch, int64_t stride) {
    MP_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(l, t, rows, cols, ld));
    if (batch > 1) {
        int32_t count = (int32_t)batch;
        MP_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
        MP_CUBLAS_CHECK(
            cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
    }
    return MP_OK;
}

static mp_status plan_build(mp_cuda_ctx *c, const gemm_key &k, gemm_plan *p, const void *bias = nullptr) {
    memset(p, 0, sizeof *p); // plan_destroy may run on a half-built plan
    cudaDataType_t t, scale;
    cublasComputeType_t compute;
    switch (k.dt) {
    case MP_F32:
        t = scale = CUDA_R_32F;
        compute = k.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
        break;
    case MP_F16:
        t = CUDA_R_16F;
        scale = CUDA_R_32F;
        compute = CUBLAS_COMPUTE_32F;
        break;
    case MP_BF16:
        t = CUDA_R_16BF;
        scale = CUDA_R_32F;
        compute = CUBLAS_COMPUTE_32F;
        break;
    case MP_F64:
        t = scale = CUDA_R_64F;
        compute = CUBLAS_COMPUTE_64F;
        break;
    default: return MP_CUDA_FAIL(MP_ERR_INTERNAL, "gemm: no cuBLASLt plan for dtype %d", (int)k.dt);
    }
    MP_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->desc, compute, scale));
    cublasOperation_t opa = k.tb ? CUBLAS_OP_T : CUBLAS_OP_N, opb = k.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    MP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
    MP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
    if (k.epi) { // D = act(A B + bias), the bias (our N columns = cuBLASLt's rows) of D's type
        cublasLtEpilogue_t epi = (cublasLtEpilogue_t)k.epi;
        MP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
        MP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    }
    // cuBLASLt's A is our B: stored (N, K) column-major (ld N), or (K, N) (ld K) when tb
    uint64_t ar = k.tb ? k.K : k.N, ac = k.tb ? k.N : k.K;
    // its B is our A: (K, M) (ld K), or (M, K) (ld M) when ta; C is (N, M) (ld N)
    uint64_t br = k.ta ? k.M : k.K, bc = k.ta ? k.K : k.M;
    MP_TRY(layout(&p->a, t, ar, ac, (int64_t)ar, k.batch, k.sb));
    MP_TRY(layout(&p->b, t, br, bc, (int64_t)br, k.batch, k.sa));
    MP_TRY(layout(&p->c, t, (uint64_t)k.N, (uint64_t)k.M, k.N, k.batch, k.sc));
    cublasLtMatmulPreference_t pref;
    MP_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t ws = MP_GEMM_WORKSPACE_BYTES;
    uint32_t al_a = (uint32_t)k.align_b, al_b = (uint32_t)k.align_a, al_c = (uint32_t)k.align_c;
    cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof al_a);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof al_b);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c, sizeof al_c);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c, sizeof al_c);
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulAlgoGetHeuristic(c->lt, p->desc, p->a, p->b, p->c, p->c, pref, 1, &res, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    // An epilogue plan the heuristic refuses in any way (float64 with a bias epilogue, an
    // unsupported combination reported as INVALID_VALUE by some cuBLASLt versions) runs the
    // composition instead of failing the op.
    if (s == CUBLAS_STATUS_NOT_SUPPORTED || (s == CUBLAS_STATUS_SUCCESS && found == 0) ||
        (k.epi && s != CUBLAS_STATUS_SUCCESS)) {
        p->ok = false; // the plain kernel computes this shape
        return MP_OK;
    }
    MP_CUBLAS_CHECK(s);
    p->algo = res.algo;
    p->ok = true;
    return MP_OK;
}

static void plan_destroy(gemm_plan *p) {
    if (p->a)
        cublasLtMatrixLayoutDestroy(p->a);
    if (p->b)
        cublasLtMatrixLayoutDestroy(p->b);
    if (p->c)
        cublasLtMatrixLayoutDestroy(p->c);
    if (p->desc)
        cublasLtMatmulDescDestroy(p->desc);
}

// One product (batch strides non-zero, or batch == 1), under c->gemm_mu.
static mp_status gemm_one(mp_cuda_ctx *c, mp_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha,
                          const void *A, const void *B, double beta, void *C, int64_t batch, int64_t sa, int64_t sb,
                          int64_t sc) {
    const int64_t es = (int64_t)mp_cuda_dtype_size(dt);
    gemm_key key;
    memset(&key, 0, sizeof key);
    key.dt = dt;
    key.ta = ta;
    key.tb = tb;
    key.M = M;
    key.N = N;
    key.K = K;
    key.batch = batch;
    key.sa = batch > 1 ? sa : 0;
    key.sb = batch > 1 ? sb : 0;
    key.sc = batch > 1 ? sc : 0;
    key.tf32 = dt == MP_F32 && mp_cuda_tf32.load(std::memory_order_relaxed);
    key.align_a = alignment(A, key.sa * es);
    key.align_b = alignment(B, key.sb * es);
    key.align_c = alignment(C, key.sc * es);
    if (!c->gemm_plans)
        c->gemm_plans = new plan_map();
    plan_map &plans = *(plan_map *)c->gemm_plans;
    auto it = plans.find(key);
    if (it == plans.end()) {
        if (plans.size() >= MAX_PLANS) { // many shapes: start over rather than grow without bound
            for (auto &kv : plans)
                plan_destroy(&kv.second);
            plans.clear();
        }
        gemm_plan p;
        mp_status st = plan_build(c, key, &p);
        if (st != MP_OK) {
            plan_destroy(&p);
            return st;
        }
        it = plans.emplace(key, p).first;
    }
    const gemm_plan &p = it->second;
    if (!p.ok)
        return gemm_plain(c, dt, ta, tb, M, N, K, alpha, A, B, beta, C, batch, sa, sb, sc);
    float af = (float)alpha, bf = (float)beta;
    const void *pa = dt == MP_F64 ? (const void *)&alpha : (const void *)&af;
    const void *pb = dt == MP_F64 ? (const void *)&beta : (const void *)&bf;
    MP_CUBLAS_CHECK(cublasLtMatmul(c->lt, p.desc, pa, B, p.a, A, p.b, pb, C, p.c, C, p.c, &p.algo, c->workspace,
                                   MP_GEMM_WORKSPACE_BYTES, c->stream));
    return MP_OK;
}

extern "C" mp_status mp_cuda_gemm(mp_device dev, mp_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K,
                                  double alpha, const void *A, const void *B, double beta, void *C, int64_t batch,
                                  int64_t sa, int64_t sb, int64_t sc) {
    mp_cuda_ctx *c;
    if (M <= 0 || N <= 0 || batch <= 0)
        return MP_OK;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    const int64_t es = (int64_t)mp_cuda_dtype_size(dt);
    if (K == 0) { // empty contraction: C = beta * C (beta is 0 or 1 in every caller)
        if (beta == 0.0)
            MP_CUDA_CHECK(cudaMemsetAsync(C, 0, (size_t)((batch - 1) * sc + M * N) * (size_t)es, c->stream));
        return MP_OK;
    }
    if (!mp_is_float(dt))
        return gemm_plain(c, dt, ta, tb, M, N, K, alpha, A, B, beta, C, batch, sa, sb, sc);
    if (batch > 1 && sb == 0 && !ta && sa == M * K && sc == M * N) { // one B for a batch of A: one tall product
        M *= batch;
        batch = 1;
    }
    std::lock_guard<std::mutex> lock(c->gemm_mu);
    if (batch > 1 && (sa == 0 || sb == 0)) { // a broadcast operand: one product per batch
        for (int64_t i = 0; i < batch; i++)
            MP_TRY(gemm_one(c, dt, ta, tb, M, N, K, alpha, (const char *)A + i * sa * es, (const char *)B + i * sb * es,
                            beta, (char *)C + i * sc * es, 1, 0, 0, 0));
        return MP_OK;
    }
    return gemm_one(c, dt, ta, tb, M, N, K, alpha, A, B, beta, C, batch, sa, sb, sc);
}

// ------------------------------------------------------------------ epilogues

// C (M, N) = act(op(A) op(B) + bias) with bias (N) of dtype dt (NULL: none: the product and
// the ReLU, no epilogue), act 0 none, 1 ReLU: one
// cuBLASLt call (CUBLASLT_EPILOGUE_BIAS / RELU_BIAS: float32 accumulation, the bias added and
// the ReLU applied before the one rounding). Shapes cuBLASLt has no epilogue algorithm for, an
// unaligned bias, integers and K == 0 run the composition _FusedMatMul's op layer uses (bias
// rows, gemm with beta = 1, ReLU). The contract of the gemm_bias_act slot (plugin.cpp fills it
// when the core's backend.def has it).
extern "C" mp_status mp_cuda_gemm_bias_act(mp_device dev, mp_dtype dt, int ta, int tb, int64_t M, int64_t N,
                                           int64_t K, const void *A, const void *B, const void *bias, int act,
                                           void *C) {
    mp_cuda_ctx *c;
    if (M <= 0 || N <= 0)
        return MP_OK;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    if (!bias) { // no bias: the product, then ReLU in place
        MP_TRY(mp_cuda_gemm(dev, dt, ta, tb, M, N, K, 1.0, A, B, 0.0, C, 1, 0, 0, 0));
        if (act)
            MP_TRY(mp_cuda_unary(dev, MP_UNARY_RELU, dt, C, C, M * N, 0.0));
        return MP_OK;
    }
    if (mp_is_float(dt) && K > 0 && alignment(bias, 0) >= 16) {
        std::lock_guard<std::mutex> lock(c->gemm_mu);
        gemm_key key;
        memset(&key, 0, sizeof key);
        key.dt = dt, key.ta = ta, key.tb = tb, key.M = M, key.N = N, key.K = K, key.batch = 1;
        key.tf32 = dt == MP_F32 && mp_cuda_tf32.load(std::memory_order_relaxed);
        key.align_a = alignment(A, 0), key.align_b = alignment(B, 0), key.align_c = alignment(C, 0);
        key.epi = act ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
        key.align_bias = alignment(bias, 0);
        if (!c->gemm_plans)
            c->gemm_plans = new plan_map();
        plan_map &plans = *(plan_map *)c->gemm_plans;
        auto it = plans.find(key);
        if (it == plans.end()) {
            if (plans.size() >= MAX_PLANS) {
                for (auto &kv : plans)
                    plan_destroy(&kv.second);
                plans.clear();
            }
            gemm_plan p;
            mp_status st = plan_build(c, key, &p, bias);
            if (st != MP_OK) {
                plan_destroy(&p);
                return st;
            }
            it = plans.emplace(key, p).first;
        }
        const gemm_plan &p = it->second;
        if (p.ok) {
            MP_CUBLAS_CHECK(
                cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
            double one = 1.0, zero = 0.0;
            float onef = 1.0f, zerof = 0.0f;
            const void *pa = dt == MP_F64 ? (const void *)&one : (const void *)&onef;
            const void *pb = dt == MP_F64 ? (const void *)&zero : (const void *)&zerof;
            MP_CUBLAS_CHECK(cublasLtMatmul(c->lt, p.desc, pa, B, p.a, A, p.b, pb, C, p.c, C, p.c, &p.algo,
                                           c->workspace, MP_GEMM_WORKSPACE_BYTES, c->stream));
            return MP_OK;
        }
    }
    // the composition: C = the bias rows, C += op(A) op(B), ReLU in place
    mp_strided bc;
    memset(&bc, 0, sizeof bc);
    bc.ndim = 2, bc.shape[0] = M, bc.shape[1] = N, bc.sstride[1] = 1, bc.dstride[0] = N, bc.dstride[1] = 1;
    MP_TRY(mp_cuda_strided_copy(dev, dt, &bc, bias, C));
    if (K > 0)
        MP_TRY(mp_cuda_gemm(dev, dt, ta, tb, M, N, K, 1.0, A, B, 1.0, C, 1, 0, 0, 0));
    if (act)
        MP_TRY(mp_cuda_unary(dev, MP_UNARY_RELU, dt, C, C, M * N, 0.0));
    return MP_OK;
}
