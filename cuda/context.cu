// context.cu — the per-device context of the CUDA backend (its stream, memory pool,
// cuBLASLt handle and workspace, staging ring), the error funnel of CUDA and cuBLASLt
// calls, and the host-synchronisation counter. Created lazily, once per device, and kept
// for the life of the process. Launches nothing.
#include <string.h>

#include "mp_cuda.h"

std::atomic<int> mp_cuda_tf32{1};

static std::atomic<int64_t> syncs{0};
void mp_cuda_count_sync(void) { syncs.fetch_add(1, std::memory_order_relaxed); }
int64_t mp_cuda_sync_count(void) { return syncs.load(std::memory_order_relaxed); }

mp_status mp_cuda_error(const char *file, int line, const char *expr, cudaError_t e) {
    cudaGetLastError(); // clear a non-sticky error so later checks see only their own call
    mp_status st = e == cudaErrorMemoryAllocation ? MP_ERR_MEMORY : MP_ERR_CUDA;
    return mp_cuda_api->error_set_at(file, line, st, "CUDA error %s (%s) in %s", cudaGetErrorName(e),
                                     cudaGetErrorString(e), expr);
}

mp_status mp_cublas_error(const char *file, int line, const char *expr, cublasStatus_t s) {
    mp_status st = s == CUBLAS_STATUS_ALLOC_FAILED ? MP_ERR_MEMORY : MP_ERR_CUDA;
    return mp_cuda_api->error_set_at(file, line, st, "cuBLASLt error %d in %s", (int)s, expr);
}

static mp_cuda_ctx ctxs[MP_CUDA_MAX_DEVICES];
static std::atomic<int> ready[MP_CUDA_MAX_DEVICES];
static std::mutex init_mu;
static int n_devices;

void mp_cuda_set_device_count(int n) { n_devices = n; }

// NOTE: a failure part-way leaves what was created (the device is then unusable anyway);
// the next call tries again from the start.
static mp_status ctx_init(mp_cuda_ctx *c, int index) {
    c->index = index;
    MP_CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    MP_CUDA_CHECK(cudaDeviceGetAttribute(&c->sm_count, cudaDevAttrMultiProcessorCount, index));
    // The stream-ordered pool keeps what it has (as TensorFlow's allocator does): with the
    // default threshold of 0 it would hand memory back at every synchronisation.
    MP_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&c->pool, index));
    uint64_t keep = UINT64_MAX;
    MP_CUDA_CHECK(cudaMemPoolSetAttribute(c->pool, cudaMemPoolAttrReleaseThreshold, &keep));
    MP_CUBLAS_CHECK(cublasLtCreate(&c->lt));
    MP_CUDA_CHECK(cudaMalloc(&c->workspace, MP_GEMM_WORKSPACE_BYTES));
    MP_CUDA_CHECK(cudaMalloc((void **)&c->flag, 1));
    MP_CUDA_CHECK(cudaMallocHost((void **)&c->staging, MP_STAGING_SLOTS * MP_STAGING_SLOT_BYTES));
    for (int i = 0; i < MP_STAGING_SLOTS; i++)
        MP_CUDA_CHECK(cudaEventCreateWithFlags(&c->staging_done[i], cudaEventDisableTiming));
    c->staging_next = 0;
    c->gemm_plans = nullptr;
    return MP_OK;
}

mp_status mp_cuda_ctx_get(mp_device dev, mp_cuda_ctx **out) {
    int i = dev.index;
    if (dev.type != MP_DEV_CUDA || i < 0 || i >= n_devices)
        return MP_CUDA_FAIL(MP_ERR_DEVICE, "GPU:%d is not available (this process sees %d GPU(s))", i, n_devices);
    int cur = -1;
    MP_CUDA_CHECK(cudaGetDevice(&cur));
    if (cur != i)
        MP_CUDA_CHECK(cudaSetDevice(i));
    if (!ready[i].load(std::memory_order_acquire)) {
        std::lock_guard<std::mutex> lock(init_mu);
        if (!ready[i].load(std::memory_order_relaxed)) {
            MP_TRY(ctx_init(&ctxs[i], i));
            ready[i].store(1, std::memory_order_release);
        }
    }
    *out = &ctxs[i];
    return MP_OK;
}

mp_status mp_cuda_stream_sync(mp_cuda_ctx *c) {
    // a synchronisation of a stream being captured would invalidate the capture (and, in
    // thread-local mode, fail): refused cleanly instead, so the capture ends as "not capturable"
    if (mp_cuda_capturing(c))
        return mp_cuda_capture_refuse(c, "a host synchronisation");
    mp_cuda_count_sync();
    MP_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    return MP_OK;
}
