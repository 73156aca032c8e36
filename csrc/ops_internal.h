/* ops_internal.h — what the op layer's files (ops.c, ops_window.c) share; not public. */
#ifndef MP_OPS_INTERNAL_H
#define MP_OPS_INTERNAL_H
#include "mixprec.h"

/* Calls a slot of the backend table: the one funnel for slot calls in the op layer. A NULL
 * slot (not supported on this backend) becomes MP_ERR_NOT_IMPLEMENTED, never a crash. */
#define BE_CALL(be, slot, ...)                                                                               \
    (mp_ops_skip_kernels ? MP_OK : (be)->slot ? (be)->slot(__VA_ARGS__) : mp_backend_missing_slot((be), #slot))
/* Nonzero while a dry trace runs an op nobody may read (graph.h): kernels are skipped. */
extern _Thread_local int mp_ops_skip_kernels;
mp_status mp_backend_missing_slot(const mp_backend *be, const char *slot);

/* Convolution and pooling ops (ops_window.c): validation, shapes, the conv/pool slots. */
mp_status mp_run_window(mp_op op, mp_tensor *const *in, const mp_attrs *at, const mp_backend *be, mp_tensor **out);
/* Batch normalization with given statistics (ops_window.c). */
mp_status mp_run_batch_norm(mp_tensor *const *in, const mp_attrs *at, const mp_backend *be, mp_tensor **out);
#endif
