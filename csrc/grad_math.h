/* grad_math.h — the backward rules of grad_math.c (tf.math's functions, scans and segment
 * reductions), named in grad.c's GRAD_* table. */
#ifndef MP_GRAD_MATH_H
#define MP_GRAD_MATH_H
#include "grad.h"

#define MP_GRAD_RULE(fn) mp_status fn(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx);
MP_GRAD_RULE(mp_g_tan)
MP_GRAD_RULE(mp_g_asin)
MP_GRAD_RULE(mp_g_acos)
MP_GRAD_RULE(mp_g_atan)
MP_GRAD_RULE(mp_g_sinh)
MP_GRAD_RULE(mp_g_cosh)
MP_GRAD_RULE(mp_g_asinh)
MP_GRAD_RULE(mp_g_acosh)
MP_GRAD_RULE(mp_g_atanh)
MP_GRAD_RULE(mp_g_erf)
MP_GRAD_RULE(mp_g_erfc)
MP_GRAD_RULE(mp_g_erfinv)
MP_GRAD_RULE(mp_g_ndtri)
MP_GRAD_RULE(mp_g_lgamma)
MP_GRAD_RULE(mp_g_digamma)
MP_GRAD_RULE(mp_g_softsign)
MP_GRAD_RULE(mp_g_selu)
MP_GRAD_RULE(mp_g_atan2)
MP_GRAD_RULE(mp_g_xlogy)
MP_GRAD_RULE(mp_g_xdivy)
MP_GRAD_RULE(mp_g_xlog1py)
MP_GRAD_RULE(mp_g_div_no_nan)
MP_GRAD_RULE(mp_g_mul_no_nan)
MP_GRAD_RULE(mp_g_nextafter)
MP_GRAD_RULE(mp_g_igamma)
MP_GRAD_RULE(mp_g_igammac)
MP_GRAD_RULE(mp_g_zeta)
MP_GRAD_RULE(mp_g_polygamma)
MP_GRAD_RULE(mp_g_cumprod)
MP_GRAD_RULE(mp_g_cumulative_logsumexp)
MP_GRAD_RULE(mp_g_segment_reduce)
MP_GRAD_RULE(mp_g_bessel_i0)
MP_GRAD_RULE(mp_g_bessel_i0e)
MP_GRAD_RULE(mp_g_bessel_i1)
MP_GRAD_RULE(mp_g_bessel_i1e)
#undef MP_GRAD_RULE
#endif
