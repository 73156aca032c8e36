/* cpu_kernels.h — the CPU backend's kernels, shared between its files (not public). */
#ifndef MP_CPU_KERNELS_H
#define MP_CPU_KERNELS_H
#include "mixprec.h"

/* Elements per block when 16-bit data is widened to f32 on the stack. */
#define MP_BLOCK 512
/* Smallest amount of work worth handing to another thread (elements). */
#define MP_GRAIN (1 << 15)

mp_status mp_cpu_unary(mp_device dev, mp_unary_kind k, mp_dtype dt, const void *x, void *y, int64_t n,
                       double alpha);
mp_status mp_cpu_binary(mp_device dev, mp_binary_kind k, mp_dtype dt, const mp_bcast *bc, const void *a,
                        const void *b, void *y, double alpha);
mp_status mp_cpu_reduce(mp_device dev, mp_reduce_kind k, mp_dtype dt, const void *x, void *y, int64_t outer,
                        int64_t red, int64_t inner);
mp_status mp_cpu_argreduce(mp_device dev, int is_min, mp_dtype dt, const void *x, int64_t *y, int64_t outer,
                           int64_t red, int64_t inner);
mp_status mp_cpu_softmax(mp_device dev, int is_log, mp_dtype dt, const void *x, void *y, int64_t rows,
                         int64_t cols);
/* C = act(op(A) op(B) [+ bias]): the gemm_bias_act slot (backend.def) */
mp_status mp_cpu_gemm_bias_act(mp_device dev, mp_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K,
                               const void *A, const void *B, const void *bias, int act, void *C);
mp_status mp_cpu_gemm(mp_device dev, mp_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha,
                      const void *A, const void *B, double beta, void *C, int64_t batch, int64_t sa, int64_t sb,
                      int64_t sc);
mp_status mp_cpu_softmax_xent(mp_device dev, int sparse, mp_dtype dt, const void *logits, const void *labels,
                              void *loss, int64_t rows, int64_t cols);
mp_status mp_cpu_finite_check(mp_device dev, int n, const mp_span *xs, uint8_t *found_inf);
mp_status mp_cpu_optim_update(mp_device dev, mp_optim_kind kind, const mp_optim_step *step, int n,
                              const mp_optim_var *vars);
mp_status mp_cpu_step_end(mp_device dev, const uint8_t *found_inf, float *scale, int64_t *good_steps,
                          const mp_loss_scale_params *p, int64_t *iterations);
/* max_pool_grad_relu slot (cpu_pool_relu.c): float32 NHWC, non-overlapping windows; else *done = 0 */
mp_status mp_cpu_max_pool_grad_relu(mp_device dev, mp_dtype dt, const mp_window *w, const void *x, const void *dy,
                                    void *dx, int *done);
mp_status mp_cpu_batch_norm(mp_device dev, mp_dtype dt, mp_dtype sdt, const void *x, const void *scale,
                             const void *offset, const void *mean, const void *var, double eps, void *y,
                             int64_t outer, int64_t C, int64_t inner, int act);
mp_status mp_cpu_batch_stats(mp_device dev, mp_stats_kind k, mp_dtype dt, mp_dtype sdt, const void *x, const void *y,
                             const void *mean, const void *g, void *out, int64_t outer, int64_t C, int64_t inner);
/* BatchMoments of float32/float16 in two reads (mean, then squared deviations) instead of
 * one (A/B measurements, tests); returns the previous setting. */
int mp_cpu_moments_two_pass(int on);
mp_status mp_cpu_cast(mp_device dev, const void *src, mp_dtype sdt, void *dst, mp_dtype ddt, int64_t n);

/* Widen n elements of a float dtype (f32/f16/bf16) at src to f32; f32 is copied. */
void mp_load_f32(mp_dtype dt, const void *src, float *dst, int64_t n);
/* y[i] = exp(x[i]) through libmvec where the CPU has AVX2 (vecmath.c); x == y allowed */
void mp_vexpf(const float *x, float *y, int64_t n);
void mp_vexp(const double *x, double *y, int64_t n);
/* Narrow n f32 values into dtype dt (f32/f16/bf16) at dst. */
void mp_store_f32(mp_dtype dt, const float *src, void *dst, int64_t n);
/* gather / scatter_add slots (cpu_gather.c): indices already checked in [0, n). */
mp_status mp_cpu_gather(mp_device dev, mp_dtype dt, const int64_t *idx, const void *x, void *y, int64_t outer,
                        int64_t n, int64_t nidx, int64_t inner);
mp_status mp_cpu_scatter_add(mp_device dev, mp_dtype dt, const int64_t *idx, const void *x, void *y, int64_t outer,
                             int64_t n, int64_t nidx, int64_t inner);
mp_status mp_cpu_cumsum(mp_device dev, mp_dtype dt, const void *x, void *y, int64_t outer, int64_t n, int64_t inner,
                        int exclusive, int reverse);
/* scan / segment_reduce slots (cpu_math.c): tf.math.cumprod, cumulative_logsumexp, segments */
mp_status mp_cpu_scan(mp_device dev, int kind, mp_dtype dt, const void *x, void *y, int64_t outer, int64_t n,
                      int64_t inner, int exclusive, int reverse);
mp_status mp_cpu_segment_reduce(mp_device dev, int kind, mp_dtype dt, const int64_t *perm, const int64_t *offsets,
                                const void *x, void *y, int64_t nseg, int64_t inner, int sorted);
/* scatter_nd / sort slots (cpu_scatter.c): row indices already checked by the op layer. */
mp_status mp_cpu_scatter_nd(mp_device dev, int mode, mp_dtype dt, const int64_t *rows, const void *upd, void *y,
                            int64_t nidx, int64_t inner);
mp_status mp_cpu_sort(mp_device dev, mp_dtype dt, int descending, const void *x, int64_t rows, int64_t n, int64_t k,
                      int64_t *work, mp_dtype idt, void *idx);
mp_status mp_cpu_linalg(mp_device dev, const mp_linalg_call *c);
mp_status mp_cpu_projective_transform(mp_device dev, mp_dtype dt, const void *x, const float *t, void *y, int64_t b,
                                      int64_t h, int64_t w, int64_t c, int64_t oh, int64_t ow, int64_t tb, int interp,
                                      int fill_mode, double fill_value);
/* Temporary host buffers for kernels (64-byte aligned); NULL on failure. */
void *mp_cpu_scratch_alloc(size_t nbytes);
void mp_cpu_scratch_free(void *p, size_t nbytes);
#endif
