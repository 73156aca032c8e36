/* window_ref.h — float64 loop kernels for convolution and pooling (window_ref.c). */
#ifndef MP_WINDOW_REF_H
#define MP_WINDOW_REF_H
#include "mixprec.h"
/* Same operands as the backend's conv/pool slots, all float64. */
mp_status mp_ref_conv_f64(mp_conv_kind k, const mp_window *w, const double *a, const double *b, double *out);
/* Pooling; lowest: max pooling's start value (the dtype's lowest as TensorFlow: -FLT_MAX for
 * float32, -65504 for float16, -inf for bfloat16), the result of a window of NaNs. */
mp_status mp_ref_pool_f64(mp_pool_kind k, const mp_window *w, const double *a, const double *b, double *out,
                          double lowest);
/* 1 when the first element of some max-pooling window of x (dt) is NaN: MaxPoolGrad then
 * gives that element the window's gradient (TensorFlow), where oneDNN skips it. */
int mp_ref_pool_first_nan(mp_dtype dt, const mp_window *w, const void *x);
#endif
