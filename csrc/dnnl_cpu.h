/* dnnl_cpu.h — the CPU backend's oneDNN slots (dnnl_cpu.c, dnnl_gemm.c). */
#ifndef MP_DNNL_CPU_H
#define MP_DNNL_CPU_H
#include "mixprec.h"
mp_status mp_cpu_conv(mp_device dev, mp_conv_kind k, mp_dtype dt, const mp_window *win, const void *a, const void *b,
                      void *out);
mp_status mp_cpu_pool(mp_device dev, mp_pool_kind k, mp_dtype dt, const mp_window *win, const void *a, const void *b,
                      void *out);
/* The pool_workspace slot (backend.def): max pooling's argmax workspace kept between the
 * forward and its gradient. */
mp_status mp_cpu_pool_workspace(mp_device dev, mp_pool_kind k, mp_dtype dt, const mp_window *win, const void *a,
                                const void *b, void *out, void *ws, size_t *ws_bytes);
/* y = act(conv(x, f) + bias) (the conv_bias_act slot): act 0 none, 1 ReLU. */
mp_status mp_cpu_conv_bias_act(mp_device dev, mp_dtype dt, const mp_window *win, const void *x, const void *f,
                               const void *bias, int act, void *y);
/* Route every conv/pool call through the float64 loop kernels (tests); returns the previous setting. */
int mp_dnnl_force_reference(int on);
/* "oneDNN 3.2.0 (avx512_core_bf16)": the library and the instruction set it dispatches to. */
const char *mp_dnnl_info(void);
/* Matrix products through oneDNN (row-major, as the backend's gemm slot): C = alpha op(A)
 * op(B) + beta C with float32 accumulation, rounded once. *unimpl when oneDNN has no
 * implementation for dt on this CPU (the caller takes its own path). */
mp_status mp_dnnl_gemm(mp_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha, const void *A,
                       const void *B, double beta, void *C, int *unimpl);
/* C = op(A) op(B) + bias (a (N) row of dtype dt, oneDNN's bias argument), rounded once. */
mp_status mp_dnnl_gemm_bias(mp_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, const void *A, const void *B,
                            const void *bias, void *C, int *unimpl);
/* One product on the calling thread only (gemm_small.c): a primitive for C = alpha op(A)
 * op(B) (+ bias) + beta C whose B (not transposed) and C have row strides ldb, ldc (a column
 * block of a wider product), made by _get (*unimpl: oneDNN has none; also when libgomp's
 * thread controls are missing), run by _run on any thread, dropped by _release. */
typedef struct mp_dnnl_mm mp_dnnl_mm;
int mp_dnnl_mm_available(void);
mp_status mp_dnnl_mm_get(mp_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, int64_t ldb, int64_t ldc,
                         int scaled, int bias, double beta, mp_dnnl_mm **out, int *unimpl);
mp_status mp_dnnl_mm_run(mp_dnnl_mm *h, float alpha, const void *A, const void *B, const void *bias, void *C);
void mp_dnnl_mm_release(mp_dnnl_mm *h);
/* float32 products of a small batch side through oneDNN (gemm_small.c); NULL bias: none. */
int mp_gemm_small_f32(int64_t M, int64_t N, int64_t K);
mp_status mp_gemm_small_run(int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha, const void *A,
                            const void *B, const void *bias, double beta, void *C, int *unimpl);
enum { MP_GEMM_AUTO = 0, MP_GEMM_WIDEN = 1, MP_GEMM_ONEDNN = 2 };
/* Which library multiplies dt: AUTO picks oneDNN for bfloat16/float16 where the CPU has
 * units for them (AVX512-BF16 / AVX512-FP16, AMX), WIDEN forces OpenBLAS (16-bit widened to
 * float32), ONEDNN forces oneDNN (also for float32: for measurements). The environment
 * variable MIXPREC_GEMM16=widen|onednn sets the 16-bit types' mode at start. Returns the
 * previous mode. */
int mp_gemm_set_mode(mp_dtype dt, int mode);
int mp_gemm_uses_onednn(mp_dtype dt);
int mp_gemm_get_mode(mp_dtype dt);
#endif
