/* window_ref.h — float64 loop kernels for convolution and pooling (window_ref.c). */
#ifndef MP_WINDOW_REF_H
#define MP_WINDOW_REF_H
#include "mixprec.h"
/* Same operands as the backend's conv/pool slots, all float64. */
mp_status mp_ref_conv_f64(mp_conv_kind k, const mp_window *w, const double *a, const double *b, double *out);
mp_status mp_ref_pool_f64(mp_pool_kind k, const mp_window *w, const double *a, const double *b, double *out);
#endif
