/* ops_collective.c — the AllReduce op: one tensor summed over the replicas of a
 * communicator through the collectives table (collective.h), so that the sum is recorded
 * on tapes and differentiated (grad.c: the gradient is the same sum). It owns validation
 * and the call; it must not know strategies, replicas' threads or Python. */
#include <string.h>

#include "collective.h"
#include "ops_internal.h"

static int device_memory(mp_device dev) {
    if (dev.type != MP_DEV_CUDA)
        return 0;
    const mp_backend *be = mp_backend_get(MP_DEV_CUDA);
    return !(be && be->name && strcmp(be->name, "emulated-gpu") == 0);
}

mp_status mp_run_all_reduce(mp_tensor *x, const mp_attrs *at, mp_tensor **out) {
    mp_comm *c = (mp_comm *)(intptr_t)at->i0;
    int rank = (int)at->i1;
    if (!c || !c->be || !c->be->all_reduce)
        return mp_error_set(MP_ERR_VALUE, "CollectiveReduceV2: no communicator");
    if (rank < 0 || (c->rank >= 0 ? rank != c->rank : rank >= c->size))
        return mp_error_set(MP_ERR_VALUE,
                            "CollectiveReduceV2: rank %d is not a rank of this %d-replica "
                            "communicator",
                            rank, c->size);
    if (!mp_coll_dtype_ok(x->dtype))
        return mp_error_set(MP_ERR_DTYPE, "CollectiveReduceV2: sums floating-point tensors, got %s",
                            mp_dtype_name(x->dtype));
    int nccl = strcmp(c->be->name, "nccl") == 0;
    /* NCCL takes GPU tensors (the emulated GPU's too: host memory, read by the tests' fake
     * libnccl); the host engines take host memory (the CPU's or the emulated GPU's) */
    if (nccl ? mp_tensor_device(x).type != MP_DEV_CUDA : device_memory(mp_tensor_device(x)))
        return mp_error_set(MP_ERR_DEVICE, "CollectiveReduceV2: the %s collectives engine takes %s tensors",
                            c->be->name, nccl ? "GPU" : "host");
    MP_TRY(mp_tensor_new(x->dtype, x->ndim, x->shape, mp_tensor_device(x), out));
    if (mp_ops_skip_kernels)
        return MP_OK;
    const void *in = mp_tensor_data(x);
    void *o = mp_tensor_data(*out);
    int64_t count = x->numel;
    mp_status st = c->be->all_reduce(c, rank, x->dtype, MP_COLL_SUM, 1, &in, &o, &count);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
