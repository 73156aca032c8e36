// memory.cu — device memory and copies of the CUDA backend: stream-ordered allocation from
// the device's pool (cudaMallocAsync / cudaFreeAsync on the device's one stream), host ->
// device copies through pinned staging slots (never waiting for the device), device -> host
// copies (the only place a training step could wait; each is counted), device copies.
// Must not synchronise anywhere else: no cudaDeviceSynchronize, no cudaMalloc on this path.
#include <string.h>

#include "mp_cuda.h"

extern "C" mp_status mp_cuda_alloc(mp_device dev, size_t nbytes, void **out) {
    mp_cuda_ctx *c;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    void *p = nullptr;
    cudaError_t e = cudaMallocAsync(&p, nbytes ? nbytes : 1, c->stream);
    if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError(); // not sticky: the process and the device go on
        size_t free_b = 0, total = 0;
        uint64_t reserved = 0, used = 0;
        if (cudaMemGetInfo(&free_b, &total) != cudaSuccess ||
            cudaMemPoolGetAttribute(c->pool, cudaMemPoolAttrReservedMemCurrent, &reserved) != cudaSuccess ||
            cudaMemPoolGetAttribute(c->pool, cudaMemPoolAttrUsedMemCurrent, &used) != cudaSuccess)
            cudaGetLastError();
        return MP_CUDA_FAIL(MP_ERR_MEMORY,
                            "out of GPU memory: could not allocate %zu bytes on GPU:%d (free on the device: %zu "
                            "of %zu bytes; mixprec's pool holds %llu bytes, %llu of them in use). hint: use a "
                            "smaller batch or model",
                            nbytes, dev.index, free_b, total, (unsigned long long)reserved,
                            (unsigned long long)used);
    }
    MP_CUDA_CHECK(e);
    mp_cuda_capture_note_alloc(c, p);
    *out = p;
    return MP_OK;
}

// Frees in stream order: work already queued that reads p still sees it. A failure cannot be
// reported (the slot returns nothing); it is cleared so the next check is not blamed.
extern "C" void mp_cuda_free(mp_device dev, void *p, size_t nbytes) {
    mp_cuda_ctx *c;
    if (!p || mp_cuda_ctx_get(dev, &c) != MP_OK)
        return;
    if (mp_cuda_capture_take_free(c, p)) // deferred (or never backed) while a graph is captured
        return;
    if (cudaFreeAsync(p, c->stream) != cudaSuccess)
        cudaGetLastError(); // e.g. the runtime already torn down at interpreter exit
}

extern "C" mp_status mp_cuda_copy_h2d(mp_device dev, void *dst, const void *src, size_t nbytes) {
    mp_cuda_ctx *c;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    if (nbytes && mp_cuda_capturing(c)) // the staging memcpy would not be part of the graph
        return mp_cuda_capture_refuse(c, "a host-to-device copy");
    std::lock_guard<std::mutex> lock(c->staging_mu);
    for (size_t done = 0; done < nbytes;) {
        size_t chunk = nbytes - done < MP_STAGING_SLOT_BYTES ? nbytes - done : MP_STAGING_SLOT_BYTES;
        int s = c->staging_next;
        c->staging_next = (s + 1) % MP_STAGING_SLOTS;
        // the slot's previous copy must have left it (it almost always has: the ring is long)
        cudaError_t q = cudaEventQuery(c->staging_done[s]);
        if (q == cudaErrorNotReady) {
            mp_cuda_count_sync();
            MP_CUDA_CHECK(cudaEventSynchronize(c->staging_done[s]));
        } else {
            MP_CUDA_CHECK(q);
        }
        char *slot = c->staging + (size_t)s * MP_STAGING_SLOT_BYTES;
        memcpy(slot, (const char *)src + done, chunk);
        MP_CUDA_CHECK(cudaMemcpyAsync((char *)dst + done, slot, chunk, cudaMemcpyHostToDevice, c->stream));
        MP_CUDA_CHECK(cudaEventRecord(c->staging_done[s], c->stream));
        done += chunk;
    }
    return MP_OK;
}

// The host reads dst right after: this waits for the stream (a counted synchronisation).
extern "C" mp_status mp_cuda_copy_d2h(mp_device dev, void *dst, const void *src, size_t nbytes) {
    mp_cuda_ctx *c;
    if (!nbytes)
        return MP_OK;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    if (mp_cuda_capturing(c)) // the host would read before the graph ever ran
        return mp_cuda_capture_refuse(c, "a device-to-host copy");
    MP_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, c->stream));
    return mp_cuda_stream_sync(c);
}

extern "C" mp_status mp_cuda_copy_d2d(mp_device dev, void *dst, const void *src, size_t nbytes) {
    mp_cuda_ctx *c;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    if (nbytes && dst != src)
        MP_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, c->stream));
    return MP_OK;
}
