// linalg_host.cpp — the CUDA backend's linalg slot as a host round trip: the call's buffers are
// copied to the host (their element counts are in the mp_linalg_call), the CPU backend's LAPACK
// kernel runs there, the result is copied back (cuSOLVER is not one of mixprec's libraries;
// docs/cuda.md). It must not hold device memory between calls, nor run inside a CUDA graph
// capture (the copies refuse it).
#include <cstdlib>

#include "mp_cuda.h"

extern "C" mp_status mp_cuda_linalg(mp_device dev, const mp_linalg_call *c) {
    if (c->dtype != MP_F32 && c->dtype != MP_F64)
        return MP_CUDA_FAIL(MP_ERR_INTERNAL, "linalg: unsupported dtype %s", mp_cuda_api->dtype_name(c->dtype));
    size_t es = c->dtype == MP_F32 ? 4 : 8;
    size_t a_bytes = es * (size_t)c->a_count, b_bytes = c->b ? es * (size_t)c->b_count : 0;
    size_t out_bytes = es * (size_t)c->out_count;
    void *ha = std::malloc(a_bytes + 1), *hb = std::malloc(b_bytes + 1), *ho = std::malloc(out_bytes + 1);
    mp_status st = MP_OK;
    mp_device cpu = {MP_DEV_CPU, 0};
    if (!ha || !hb || !ho)
        st = MP_CUDA_FAIL(MP_ERR_MEMORY, "linalg: out of host memory for %zu bytes (a GPU linalg op's host copy)",
                          a_bytes + b_bytes + out_bytes);
    if (st == MP_OK && a_bytes)
        st = mp_cuda_copy_d2h(dev, ha, c->a, a_bytes); // synchronises the stream
    if (st == MP_OK && b_bytes)
        st = mp_cuda_copy_d2h(dev, hb, c->b, b_bytes);
    if (st == MP_OK) {
        mp_linalg_call h = *c;
        h.a = ha;
        h.b = c->b ? hb : NULL;
        h.out = ho;
        st = mp_cuda_api->backend_cpu->linalg(cpu, &h);
    }
    if (st == MP_OK && out_bytes)
        st = mp_cuda_copy_h2d(dev, c->out, ho, out_bytes); // staged: ho may be freed on return
    std::free(ha);
    std::free(hb);
    std::free(ho);
    return st;
}
