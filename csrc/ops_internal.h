/* ops_internal.h — what the op layer's files (ops.c, ops_window.c, ops_collective.c) share;
 * not public. */
#ifndef MP_OPS_INTERNAL_H
#define MP_OPS_INTERNAL_H
#include "mixprec.h"

/* The op layer's spelling of MP_BACKEND_CALL (mixprec.h), the one funnel for slot calls: a
 * NULL slot becomes MP_ERR_NOT_IMPLEMENTED, never a crash; a dry trace skips the kernel. */
#define BE_CALL(be, slot, ...) (mp_ops_skip_kernels ? MP_OK : MP_BACKEND_CALL(be, slot, __VA_ARGS__))
/* Nonzero while a dry trace runs an op nobody may read (graph.h): kernels are skipped. */
extern _Thread_local int mp_ops_skip_kernels;

/* Convolution and pooling ops (ops_window.c): validation, shapes, the conv/pool slots. */
mp_status mp_run_window(mp_op op, mp_tensor *const *in, const mp_attrs *at, const mp_backend *be, mp_tensor **out);
/* Batch normalization with given statistics (ops_window.c). */
mp_status mp_run_batch_stats(mp_op op, mp_tensor *const *in, const mp_attrs *at, const mp_backend *be,
                             mp_tensor **out);
mp_status mp_run_batch_norm(mp_tensor *const *in, const mp_attrs *at, const mp_backend *be, mp_tensor **out);
/* The replicas' sum of one tensor (ops_collective.c): attrs i0 = mp_comm *, i1 = rank. */
mp_status mp_run_all_reduce(mp_tensor *x, const mp_attrs *at, mp_tensor **out);
/* tf.gather and its dense gradient (ops_gather.c): attrs i0 = axis, i1 = rows (the gradient). */
mp_status mp_run_gather(mp_op op, mp_tensor *const *in, const mp_attrs *at, const mp_backend *be, mp_tensor **out);
/* tf.cumsum (ops_gather.c): attrs i0 = axis, i1 = exclusive, i2 = reverse. */
mp_status mp_run_cumsum(mp_tensor *x, const mp_attrs *at, const mp_backend *be, mp_tensor **out);
/* tf.strided_slice / tf.slice with tensor bounds and their gradient (ops_slice_t.c). */
mp_status mp_run_slice_t(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at, mp_tensor **out);
/* MatrixInverse, MatrixDeterminant, Cholesky, the solves, Qr, SelfAdjointEigV2, Svd,
 * LogMatrixDeterminant, MatrixBandPart (ops_linalg.c): the linalg slot on the innermost matrices. */
mp_status mp_run_linalg(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at, const mp_backend *be,
                        mp_tensor **out);
/* ImageProjectiveTransformV3 (ops_image.c): the projective_transform slot. */
mp_status mp_run_image_transform(mp_tensor *const *in, const mp_attrs *at, const mp_backend *be, mp_tensor **out);
/* Debug counter: MaxPoolGrad calls served from the workspace MaxPool kept (ops_window.c). */
int64_t mp_pool_workspace_uses(void);
/* Whether MaxPool keeps it (default on; off: MaxPoolGrad runs the forward again, for A/B
 * measurements); returns the previous setting. */
int mp_pool_workspace_keep(int on);
/* tf.math.cumprod / cumulative_logsumexp and the segment reductions (ops_math.c). */
mp_status mp_run_scan(mp_op op, mp_tensor *x, const mp_attrs *at, const mp_backend *be, mp_tensor **out);
mp_status mp_run_segment_reduce(mp_tensor *const *in, const mp_attrs *at, const mp_backend *be, mp_tensor **out);
/* GatherNd, TensorScatter*, ReverseV2, Roll (ops_array.c). */
mp_status mp_run_array(mp_op op, mp_tensor *const *in, const mp_attrs *at, const mp_backend *be, mp_tensor **out);
/* TopKV2's indices, Unique, Where(condition) (ops_sort.c). */
mp_status mp_run_sort_op(mp_op op, mp_tensor *const *in, const mp_attrs *at, const mp_backend *be, mp_tensor **out);
/* t as int64 on the host (a new reference); v (n int64 on the host) as a tensor on dev. */
mp_status mp_array_host_i64(mp_tensor *t, mp_tensor **h);
mp_status mp_array_upload_i64(const int64_t *v, int64_t n, mp_device dev, mp_tensor **out);
#endif
