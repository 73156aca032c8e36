// graph_capture.cu — CUDA graphs of the CUDA backend: the stream slot, and capturing a
// replay of a traced function (csrc/graph_capture.c decides when) into a cudaGraphExec_t
// that later calls launch with one cudaGraphLaunch. Owns the capture's memory bookkeeping
// (allocations made while capturing become graph memory; frees of older memory wait until
// the graph has run). Must not decide what is captured, nor synchronise.
// NOTE: not yet run on a GPU. Capture assumes one thread drives a device while it captures
// (the replica-per-GPU threads of MirroredStrategy do); a second thread launching on the
// same device during a capture would be recorded into it.
#include <algorithm>
#include <mutex>
#include <thread>
#include <vector>

#include "mp_cuda.h"

namespace {

struct capture_state {
    std::mutex mu;
    bool active = false;
    std::thread::id owner;
    std::vector<void *> allocs;   // made during the capture and not freed in it (graph memory)
    std::vector<void *> deferred; // memory from before the capture freed during it
    bool refused = false;         // a call that cannot be captured was refused
};

struct graph_handle {
    cudaGraphExec_t exec = nullptr;
    int device = 0;
    bool relaunchable = true;
    bool launched = false;
    std::vector<void *> escaped;  // graph allocations alive after the capture: freed before a relaunch
    std::vector<void *> deferred; // freed after the first launch
};

capture_state states[MP_CUDA_MAX_DEVICES];
std::atomic<int> capturing_count{0}; // captures in progress (the allocator's fast path reads it)
// Graph allocations handed out by captures and not yet freed, per device: a relaunch needs
// its own freed first (CUDA re-creates them at the same addresses).
std::mutex live_mu;
std::vector<void *> live[MP_CUDA_MAX_DEVICES];
// Allocations of captures that never ran (their graph was dropped unlaunched): the
// addresses were never backed, so freeing them is skipped.
std::vector<void *> phantom[MP_CUDA_MAX_DEVICES];
std::atomic<int> live_count{0};

bool remove_ptr(std::vector<void *> &v, void *p) {
    auto it = std::find(v.begin(), v.end(), p);
    if (it == v.end())
        return false;
    *it = v.back();
    v.pop_back();
    return true;
}

bool is_capturing_here(capture_state &s) {
    return s.active && s.owner == std::this_thread::get_id();
}

} // namespace

void mp_cuda_capture_note_alloc(mp_cuda_ctx *c, void *p) {
    if (capturing_count.load(std::memory_order_acquire) == 0)
        return;
    capture_state &s = states[c->index];
    std::lock_guard<std::mutex> lock(s.mu);
    if (is_capturing_here(s))
        s.allocs.push_back(p);
}

bool mp_cuda_capture_take_free(mp_cuda_ctx *c, void *p) {
    capture_state &s = states[c->index];
    if (capturing_count.load(std::memory_order_acquire) > 0) {
        std::lock_guard<std::mutex> lock(s.mu);
        if (is_capturing_here(s)) {
            if (remove_ptr(s.allocs, p))
                return false; // made in this capture: a free node of the graph (caller frees)
            s.deferred.push_back(p);
            return true;      // older memory: freed once the graph has run
        }
    }
    if (live_count.load(std::memory_order_acquire) > 0) {
        std::lock_guard<std::mutex> lock(live_mu);
        if (remove_ptr(live[c->index], p)) {
            live_count.fetch_sub(1, std::memory_order_acq_rel);
            if (remove_ptr(phantom[c->index], p))
                return true;
        }
    }
    return false;
}

mp_status mp_cuda_capture_refuse(mp_cuda_ctx *c, const char *what) {
    capture_state &s = states[c->index];
    {
        std::lock_guard<std::mutex> lock(s.mu);
        s.refused = true;
    }
    return MP_CUDA_FAIL(MP_ERR_NOT_IMPLEMENTED, "%s cannot be captured in a CUDA graph (GPU:%d)", what, c->index);
}

bool mp_cuda_capturing(mp_cuda_ctx *c) {
    if (capturing_count.load(std::memory_order_acquire) == 0)
        return false;
    capture_state &s = states[c->index];
    std::lock_guard<std::mutex> lock(s.mu);
    return is_capturing_here(s);
}

extern "C" mp_status mp_cuda_stream(mp_device dev, void **out) {
    mp_cuda_ctx *c;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    *out = (void *)c->stream;
    return MP_OK;
}

// The stream_idle slot: cudaStreamQuery, which never waits (cudaErrorNotReady: work left).
// Not a host synchronisation: not counted, and allowed while nothing is captured only.
extern "C" mp_status mp_cuda_stream_idle(mp_device dev, int *idle) {
    mp_cuda_ctx *c;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    if (mp_cuda_capturing(c))
        return mp_cuda_capture_refuse(c, "a stream query");
    cudaError_t e = cudaStreamQuery(c->stream);
    if (e == cudaErrorNotReady) {
        *idle = 0;
        return MP_OK;
    }
    MP_CUDA_CHECK(e);
    *idle = 1;
    return MP_OK;
}

extern "C" mp_status mp_cuda_graph_capture_begin(mp_device dev) {
    mp_cuda_ctx *c;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    capture_state &s = states[c->index];
    {
        std::lock_guard<std::mutex> lock(s.mu);
        if (s.active)
            return MP_CUDA_FAIL(MP_ERR_VALUE, "GPU:%d is already capturing a CUDA graph", dev.index);
        s.active = true;
        s.owner = std::this_thread::get_id();
        s.allocs.clear();
        s.deferred.clear();
        s.refused = false;
    }
    capturing_count.fetch_add(1, std::memory_order_acq_rel);
    cudaError_t e = cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
        capturing_count.fetch_sub(1, std::memory_order_acq_rel);
        std::lock_guard<std::mutex> lock(s.mu);
        s.active = false;
        return mp_cuda_error(__FILE__, __LINE__, "cudaStreamBeginCapture", e);
    }
    return MP_OK;
}

static void free_now(mp_cuda_ctx *c, const std::vector<void *> &ptrs) {
    for (void *p : ptrs)
        if (cudaFreeAsync(p, c->stream) != cudaSuccess)
            cudaGetLastError();
}

extern "C" mp_status mp_cuda_graph_capture_end(mp_device dev, void **exec, int *relaunchable) {
    *exec = nullptr;
    *relaunchable = 0;
    mp_cuda_ctx *c;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    capture_state &s = states[c->index];
    cudaGraph_t graph = nullptr;
    cudaError_t e = cudaStreamEndCapture(c->stream, &graph);
    std::vector<void *> allocs, deferred;
    bool refused;
    {
        std::lock_guard<std::mutex> lock(s.mu);
        s.active = false;
        capturing_count.fetch_sub(1, std::memory_order_acq_rel);
        allocs.swap(s.allocs);
        deferred.swap(s.deferred);
        refused = s.refused;
    }
    if (refused && e == cudaSuccess) {
        if (graph)
            cudaGraphDestroy(graph);
        graph = nullptr;
        e = cudaErrorStreamCaptureUnsupported;
    }
    if (e != cudaSuccess || !graph) {
        // nothing of the capture ran: memory it freed can go now; its own allocations
        // were never backed, so freeing them later is skipped
        free_now(c, deferred);
        if (!allocs.empty()) {
            std::lock_guard<std::mutex> lock(live_mu);
            for (void *p : allocs) {
                live[c->index].push_back(p);
                phantom[c->index].push_back(p);
            }
            live_count.fetch_add((int)allocs.size(), std::memory_order_acq_rel);
        }
        if (graph)
            cudaGraphDestroy(graph);
        return mp_cuda_error(__FILE__, __LINE__, "cudaStreamEndCapture (the replay did something a CUDA graph "
                             "cannot hold, such as a host synchronisation)", e == cudaSuccess ? cudaErrorUnknown : e);
    }
    auto *h = new (std::nothrow) graph_handle();
    if (!h) {
        cudaGraphDestroy(graph);
        free_now(c, deferred);
        return MP_CUDA_FAIL(MP_ERR_MEMORY, "out of host memory keeping a CUDA graph");
    }
    // Allocations the graph makes and nobody frees (an optimizer flag read by a later copy)
    // are freed by the next launch, which makes them again at the same addresses.
    e = cudaGraphInstantiateWithFlags(&h->exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch);
    cudaGraphDestroy(graph); // the executable graph keeps what it needs
    if (e != cudaSuccess) {
        delete h;
        free_now(c, deferred);
        return mp_cuda_error(__FILE__, __LINE__, "cudaGraphInstantiateWithFlags", e);
    }
    h->device = c->index;
    h->escaped = std::move(allocs);
    h->deferred = std::move(deferred);
    h->relaunchable = h->deferred.empty();
    if (!h->escaped.empty()) {
        std::lock_guard<std::mutex> lock(live_mu);
        for (void *p : h->escaped)
            live[c->index].push_back(p);
        live_count.fetch_add((int)h->escaped.size(), std::memory_order_acq_rel);
    }
    *exec = h;
    *relaunchable = h->relaunchable ? 1 : 0;
    return MP_OK;
}

extern "C" mp_status mp_cuda_graph_launch(mp_device dev, void *exec) {
    auto *h = (graph_handle *)exec;
    mp_cuda_ctx *c;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    if (!h || h->device != c->index)
        return MP_CUDA_FAIL(MP_ERR_VALUE, "CUDA graph launched on GPU:%d, captured on GPU:%d", dev.index,
                            h ? h->device : -1);
    if (h->launched) {
        if (!h->relaunchable)
            return MP_CUDA_FAIL(MP_ERR_VALUE, "this CUDA graph freed memory from before its capture: it runs once");
    }
    MP_CUDA_CHECK(cudaGraphLaunch(h->exec, c->stream));
    if (h->launched && !h->escaped.empty()) {
        // the launch freed what the last one left (auto-free) and made it again: live once
        std::lock_guard<std::mutex> lock(live_mu);
        for (void *p : h->escaped)
            if (std::find(live[c->index].begin(), live[c->index].end(), p) == live[c->index].end()) {
                live[c->index].push_back(p);
                live_count.fetch_add(1, std::memory_order_acq_rel);
            }
    }
    if (!h->launched) {
        h->launched = true;
        free_now(c, h->deferred); // after the graph in stream order
        h->deferred.clear();
    }
    return MP_OK;
}

extern "C" mp_status mp_cuda_graph_destroy(mp_device dev, void *exec) {
    auto *h = (graph_handle *)exec;
    if (!h)
        return MP_OK;
    mp_cuda_ctx *c;
    mp_status st = mp_cuda_ctx_get(dev, &c);
    if (st == MP_OK && !h->launched) {
        free_now(c, h->deferred); // never ran: what it would have freed goes now
        std::lock_guard<std::mutex> lock(live_mu);
        for (void *p : h->escaped) // never backed: a later free of these is skipped
            phantom[h->device].push_back(p);
    } else if (st == MP_OK) {
        // what the last launch made and nobody freed goes with the graph
        std::lock_guard<std::mutex> lock(live_mu);
        for (void *p : h->escaped)
            if (remove_ptr(live[h->device], p)) {
                live_count.fetch_sub(1, std::memory_order_acq_rel);
                if (cudaFreeAsync(p, c->stream) != cudaSuccess)
                    cudaGetLastError();
            }
    }
    if (h->exec && cudaGraphExecDestroy(h->exec) != cudaSuccess)
        cudaGetLastError();
    delete h;
    return st;
}
