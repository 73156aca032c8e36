// linalg_host.cpp — the CUDA backend's linalg slot as a host round trip: the matrices are
// copied to the host, the CPU backend's LAPACK kernel runs there, the results are copied back
// (cuSOLVER is not one of mixprec's libraries; docs/cuda.md). It must not hold device memory
// between calls, nor run inside a CUDA graph capture (the copies refuse it).
#include <cstdlib>

#include "mp_cuda.h"

extern "C" mp_status mp_cuda_linalg(mp_device dev, mp_linalg_kind k, mp_dtype dt, int64_t batch, int64_t n,
                                    const void *a, void *out, int adjoint) {
    if (dt != MP_F32 && dt != MP_F64)
        return MP_CUDA_FAIL(MP_ERR_INTERNAL, "linalg: unsupported dtype %s", mp_cuda_api->dtype_name(dt));
    size_t es = dt == MP_F32 ? 4 : 8;
    size_t in_bytes = es * (size_t)batch * (size_t)n * (size_t)n;
    size_t out_bytes = k == MP_LINALG_INV ? in_bytes : es * (size_t)batch;
    void *ha = std::malloc(in_bytes + 1), *ho = std::malloc(out_bytes + 1);
    mp_status st = MP_OK;
    mp_device cpu = {MP_DEV_CPU, 0};
    if (!ha || !ho)
        st = MP_CUDA_FAIL(MP_ERR_MEMORY, "linalg: out of host memory for %zu bytes (a GPU linalg op's host copy)",
                          in_bytes + out_bytes);
    if (st == MP_OK)
        st = mp_cuda_copy_d2h(dev, ha, a, in_bytes); // synchronises the stream
    if (st == MP_OK)
        st = mp_cuda_api->backend_cpu->linalg(cpu, k, dt, batch, n, ha, ho, adjoint);
    if (st == MP_OK)
        st = mp_cuda_copy_h2d(dev, out, ho, out_bytes); // staged: ho may be freed on return
    std::free(ha);
    std::free(ho);
    return st;
}
