// mp_cuda.h — what the CUDA backend's files share (not public): the core's C API, the checks
// every CUDA and cuBLASLt call goes through, the per-device context (stream, memory pool,
// cuBLASLt handle and workspace, pinned staging ring) and the entry points of the backend
// table, one mp_cuda_<op> per file. Host C++ only (plugin.cpp includes it); device helpers
// live in kernels.cuh.
// NOTE: every CUDA/cuBLASLt call is checked (MP_CUDA_CHECK / MP_CUBLAS_CHECK) and every kernel
// launch is followed by MP_LAUNCH_CHECK(). Nothing here prints, exits or aborts: failures are
// recorded with the core's error funnel and returned as an mp_status.
#ifndef MP_CUDA_H
#define MP_CUDA_H
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <atomic>
#include <mutex>

#include "mixprec.h"

// The core's services (set by register() before the table is installed).
extern const mp_c_api *mp_cuda_api;

// Records file:line and a message in the core's thread-local error record; returns st.
#define MP_CUDA_FAIL(st, ...) mp_cuda_api->error_set_at(__FILE__, __LINE__, (st), __VA_ARGS__)

// A failed CUDA call: cudaErrorMemoryAllocation -> MP_ERR_MEMORY, anything else MP_ERR_CUDA.
// Clears the runtime's (non-sticky) last error so the next check sees only its own call.
mp_status mp_cuda_error(const char *file, int line, const char *expr, cudaError_t e);
mp_status mp_cublas_error(const char *file, int line, const char *expr, cublasStatus_t s);

#define MP_CUDA_CHECK(expr)                                          \
    do {                                                             \
        cudaError_t mp_cuda_e_ = (expr);                             \
        if (mp_cuda_e_ != cudaSuccess)                               \
            return mp_cuda_error(__FILE__, __LINE__, #expr, mp_cuda_e_); \
    } while (0)
#define MP_CUBLAS_CHECK(expr)                                          \
    do {                                                               \
        cublasStatus_t mp_cublas_s_ = (expr);                          \
        if (mp_cublas_s_ != CUBLAS_STATUS_SUCCESS)                     \
            return mp_cublas_error(__FILE__, __LINE__, #expr, mp_cublas_s_); \
    } while (0)
// After every <<<...>>>: a bad launch configuration is reported here, at its launcher.
#define MP_LAUNCH_CHECK() MP_CUDA_CHECK(cudaGetLastError())

#define MP_CUDA_MAX_DEVICES 16
#define MP_STAGING_SLOTS 8
#define MP_STAGING_SLOT_BYTES ((size_t)4 << 20)
#define MP_GEMM_WORKSPACE_BYTES ((size_t)32 << 20)

// One per GPU, created on first use and kept for the life of the process.
struct mp_cuda_ctx {
    int index;
    cudaStream_t stream; // every launch, copy, allocation and free of this device is on it
    cudaMemPool_t pool;  // the device's default pool (cudaMallocAsync), never trimmed
    int sm_count;
    cublasLtHandle_t lt;
    void *workspace; // (MP_GEMM_WORKSPACE_BYTES) cuBLASLt's, allocated once
    uint8_t *flag;   // (1) device scratch for the integer kernels' error flag
    std::mutex flag_mu; // held from zeroing the flag to reading it back (binary.cu)
    // Host -> device copies go through pinned slots, so the source may be freed at once and
    // the copy never waits for the device (unless the ring wraps onto a copy in flight).
    std::mutex staging_mu;
    char *staging; // (MP_STAGING_SLOTS * MP_STAGING_SLOT_BYTES) pinned host memory
    cudaEvent_t staging_done[MP_STAGING_SLOTS];
    int staging_next;
    std::mutex gemm_mu; // guards gemm_plans (gemm.cu)
    void *gemm_plans;   // gemm.cu's plan cache, opaque elsewhere
};

// The context of dev, initialised on first use; also makes dev the calling thread's current
// device (the runtime's current device is per thread).
mp_status mp_cuda_ctx_get(mp_device dev, mp_cuda_ctx **out);
// Called once by register(): how many devices there are.
void mp_cuda_set_device_count(int n);

// Host synchronisations (the host waiting for a device): counted for the zero-sync tests.
void mp_cuda_count_sync(void);
int64_t mp_cuda_sync_count(void);
// Waits for c's stream (counted).
mp_status mp_cuda_stream_sync(mp_cuda_ctx *c);

// CUDA-graph capture bookkeeping (graph_capture.cu), called by memory.cu: an allocation made
// while the calling thread captures dev becomes graph memory; a free while capturing is a
// graph free node (memory of this capture) or waits until the graph ran (true: the caller
// must not free now); host copies while capturing are refused (capture fails, nothing ran).
void mp_cuda_capture_note_alloc(mp_cuda_ctx *c, void *p);
bool mp_cuda_capture_take_free(mp_cuda_ctx *c, void *p);
bool mp_cuda_capturing(mp_cuda_ctx *c);
mp_status mp_cuda_capture_refuse(mp_cuda_ctx *c, const char *what);

// TF32 for float32 GEMMs (TensorFlow's default on Ampere and later: on).
extern std::atomic<int> mp_cuda_tf32;

// Bytes per element (the core's mp_dtype_size, which a plugin cannot link).
static inline size_t mp_cuda_dtype_size(mp_dtype dt) {
    switch (dt) {
    case MP_F64:
    case MP_I64: return 8;
    case MP_F32:
    case MP_I32: return 4;
    case MP_F16:
    case MP_BF16: return 2;
    case MP_U8:
    case MP_I8:
    case MP_BOOL: return 1;
    default: return 0;
    }
}

// Blocks for a grid-stride loop over n > 0 items: enough to fill the device, no more.
#define MP_THREADS 256
static inline unsigned mp_cuda_grid(const mp_cuda_ctx *c, int64_t n, int threads = MP_THREADS) {
    int64_t blocks = (n + threads - 1) / threads;
    int64_t cap = (int64_t)c->sm_count * 16;
    return (unsigned)(blocks < cap ? blocks : cap);
}

// ------------------------------------------------------------------ the table's entries
// Each is defined in the file of its name; the semantics are the slots' (csrc/mixprec.h)
// and the CPU backend's (csrc/backend_cpu.c and friends).
extern "C" {
mp_status mp_cuda_alloc(mp_device dev, size_t nbytes, void **out);            // memory.cu
void mp_cuda_free(mp_device dev, void *p, size_t nbytes);                     // memory.cu
mp_status mp_cuda_copy_h2d(mp_device dev, void *dst, const void *src, size_t nbytes); // memory.cu
mp_status mp_cuda_copy_d2h(mp_device dev, void *dst, const void *src, size_t nbytes); // memory.cu
mp_status mp_cuda_copy_d2d(mp_device dev, void *dst, const void *src, size_t nbytes); // memory.cu
mp_status mp_cuda_cast(mp_device dev, const void *src, mp_dtype sdt, void *dst, mp_dtype ddt, int64_t n);
mp_status mp_cuda_fill(mp_device dev, void *dst, mp_dtype dt, int64_t n, double value);
mp_status mp_cuda_iota(mp_device dev, void *dst, mp_dtype dt, int64_t n, double start, double delta);
mp_status mp_cuda_unary(mp_device dev, mp_unary_kind k, mp_dtype dt, const void *x, void *y, int64_t n,
                        double alpha);
mp_status mp_cuda_binary(mp_device dev, mp_binary_kind k, mp_dtype dt, const mp_bcast *bc, const void *a,
                         const void *b, void *y, double alpha);
mp_status mp_cuda_where(mp_device dev, mp_dtype dt, const mp_bcast *bc, const void *cond, const void *a,
                        const void *b, void *y);
mp_status mp_cuda_reduce(mp_device dev, mp_reduce_kind k, mp_dtype dt, const void *x, void *y, int64_t outer,
                         int64_t red, int64_t inner);
mp_status mp_cuda_argreduce(mp_device dev, int is_min, mp_dtype dt, const void *x, int64_t *y, int64_t outer,
                            int64_t red, int64_t inner);
mp_status mp_cuda_strided_copy(mp_device dev, mp_dtype dt, const mp_strided *s, const void *src, void *dst);
mp_status mp_cuda_conv(mp_device dev, mp_conv_kind k, mp_dtype dt, const mp_window *win, const void *a,
                       const void *b, void *out); // conv_cudnn.cpp (cuDNN, loaded at run time)
// y = act(conv(x, f) + bias) (act 0 none, 1 ReLU), _FusedConv2D's slot (conv_cudnn.cpp)
mp_status mp_cuda_conv_bias_act(mp_device dev, mp_dtype dt, const mp_window *win, const void *x, const void *f,
                                const void *bias, int act, void *y);
// Batch norm's statistics: moments, gradient sums, the moments' gradient (batch_stats.cu)
mp_status mp_cuda_batch_stats(mp_device dev, mp_stats_kind kind, mp_dtype dt, mp_dtype sdt, const void *x, const void *y,
                              const void *mean, const void *g, void *out, int64_t outer, int64_t C, int64_t inner);
// C (M, N) = act(op(A) op(B) + bias), bias (N) of dtype dt, act 0 none, 1 ReLU: the
// gemm_bias_act slot's contract (a cuBLASLt epilogue; gemm.cu)
mp_status mp_cuda_gemm_bias_act(mp_device dev, mp_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K,
                                const void *A, const void *B, const void *bias, int act, void *C);
// y = act(y + bias[(i / inner) % C]) in place, n elements (bias_act.cu)
mp_status mp_cuda_bias_act(mp_device dev, mp_dtype dt, void *y, const void *bias, int64_t n, int64_t C,
                           int64_t inner, int act);
mp_status mp_cuda_pool(mp_device dev, mp_pool_kind k, mp_dtype dt, const mp_window *win, const void *a,
                       const void *b, void *out); // pool.cu
mp_status mp_cuda_batch_norm(mp_device dev, mp_dtype dt, mp_dtype sdt, const void *x, const void *scale,
                             const void *offset, const void *mean, const void *var, double eps, void *y,
                             int64_t outer, int64_t C, int64_t inner, int act); // batch_norm.cu
mp_status mp_cuda_gemm(mp_device dev, mp_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha,
                       const void *A, const void *B, double beta, void *C, int64_t batch, int64_t sa, int64_t sb,
                       int64_t sc);
mp_status mp_cuda_softmax(mp_device dev, int is_log, mp_dtype dt, const void *x, void *y, int64_t rows,
                          int64_t cols);
mp_status mp_cuda_one_hot(mp_device dev, mp_dtype dt, const int64_t *idx, void *y, int64_t n, int64_t depth,
                          double on, double off);
mp_status mp_cuda_gather(mp_device dev, mp_dtype dt, const int64_t *idx, const void *x, void *y, int64_t outer,
                         int64_t n, int64_t nidx, int64_t inner); // gather.cu
mp_status mp_cuda_scatter_add(mp_device dev, mp_dtype dt, const int64_t *idx, const void *x, void *y, int64_t outer,
                              int64_t n, int64_t nidx, int64_t inner);
/* ImageProjectiveTransformV3 (projective.cu) */
mp_status mp_cuda_projective_transform(mp_device dev, mp_dtype dt, const void *x, const float *t, void *y, int64_t b,
                                       int64_t h, int64_t w, int64_t c, int64_t oh, int64_t ow, int64_t tb, int interp,
                                       int fill_mode, double fill_value);
/* the linalg slot as a host round trip (linalg_host.cpp) */
mp_status mp_cuda_linalg(mp_device dev, const mp_linalg_call *c);
mp_status mp_cuda_cumsum(mp_device dev, mp_dtype dt, const void *x, void *y, int64_t outer, int64_t n,
                         int64_t inner, int exclusive, int reverse); // gather.cu
mp_status mp_cuda_scan(mp_device dev, int kind, mp_dtype dt, const void *x, void *y, int64_t outer, int64_t n,
                       int64_t inner, int exclusive, int reverse); // math.cu
mp_status mp_cuda_segment_reduce(mp_device dev, int kind, mp_dtype dt, const int64_t *perm, const int64_t *offsets,
                                 const void *x, void *y, int64_t nseg, int64_t inner, int sorted); // math.cu
mp_status mp_cuda_scatter_nd(mp_device dev, int mode, mp_dtype dt, const int64_t *rows, const void *upd, void *y,
                             int64_t nidx, int64_t inner); // scatter.cu
mp_status mp_cuda_sort(mp_device dev, mp_dtype dt, int descending, const void *x, int64_t rows, int64_t n, int64_t k,
                       int64_t *work, mp_dtype idt, void *idx); // scatter.cu
mp_status mp_cuda_random(mp_device dev, int dist, mp_dtype dt, void *y, int64_t n, uint64_t seed, uint64_t stream,
                         double a, double b);
mp_status mp_cuda_softmax_xent(mp_device dev, int sparse, mp_dtype dt, const void *logits, const void *labels,
                               void *loss, int64_t rows, int64_t cols);
mp_status mp_cuda_finite_check(mp_device dev, int n, const mp_span *xs, uint8_t *found_inf);
mp_status mp_cuda_optim_update(mp_device dev, mp_optim_kind kind, const mp_optim_step *step, int n,
                               const mp_optim_var *vars);
mp_status mp_cuda_step_end(mp_device dev, const uint8_t *found_inf, float *scale, int64_t *good_steps,
                           const mp_loss_scale_params *p, int64_t *iterations);
mp_status mp_cuda_stream(mp_device dev, void **out);                     // graph_capture.cu
mp_status mp_cuda_stream_idle(mp_device dev, int *idle);                 // graph_capture.cu
mp_status mp_cuda_graph_capture_begin(mp_device dev);                     // graph_capture.cu
mp_status mp_cuda_graph_capture_end(mp_device dev, void **exec, int *relaunchable);
mp_status mp_cuda_graph_launch(mp_device dev, void *exec);
mp_status mp_cuda_graph_destroy(mp_device dev, void *exec);
}

#endif
