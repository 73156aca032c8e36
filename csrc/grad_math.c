/* grad_math.c — the backward rules of tf.math's functions (the trigonometric, hyperbolic and
 * special functions, the Xlogy / *NoNan family, the scans and the segment reductions), as
 * TensorFlow's math_grad.py writes them, built from ops (so they run on every backend and are
 * differentiable again). grad.c's table points at them (grad_math.h). It must not compute
 * elements itself. */
#include <math.h>
#include <string.h>

#include "grad_arena.h"
#include "grad_math.h"
#include "special_math.h"

#define MP_TWO_OVER_SQRT_PI 1.12837916709551257390
#define MP_SQRT_PI_OVER_2 0.88622692545275801365
#define MP_SQRT_2PI 2.50662827463100050242

static mp_status dx0(arena *a, mp_tensor *t, mp_tensor **dx) {
    if (t)
        dx[0] = out(t);
    return finish(a);
}

/* dy * f */
static mp_status times(arena *a, mp_tensor *dy, mp_tensor *f, mp_tensor **dx) { return dx0(a, bin(a, MP_OP_MUL, dy, f), dx); }

/* 1 - x^2 */
static mp_tensor *one_minus_sq(arena *a, mp_tensor *x) {
    return bin(a, MP_OP_SUB, scalar(a, x, 1.0), bin(a, MP_OP_MUL, x, x));
}

static mp_tensor *cast_to(arena *a, mp_tensor *x, mp_dtype dt) {
    if (!x || x->dtype == dt)
        return x;
    mp_attrs at = {.dtype = dt};
    return run(a, MP_OP_CAST, 1, &x, &at);
}

/* ------------------------------------------------------------------ unary */

mp_status mp_g_tan(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0}; /* dy sec^2 x */
    mp_tensor *sec = un(&a, MP_OP_RECIPROCAL, un(&a, MP_OP_COS, IN(0)));
    return times(&a, dy, bin(&a, MP_OP_MUL, sec, sec), dx);
}
mp_status mp_g_asin(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0}; /* dy / sqrt(1 - x^2) */
    return dx0(&a, bin(&a, MP_OP_DIV, dy, un(&a, MP_OP_SQRT, one_minus_sq(&a, IN(0)))), dx);
}
mp_status mp_g_acos(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0}; /* -dy / sqrt(1 - x^2) */
    return dx0(&a, un(&a, MP_OP_NEG, bin(&a, MP_OP_DIV, dy, un(&a, MP_OP_SQRT, one_minus_sq(&a, IN(0))))), dx);
}
mp_status mp_g_atan(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0}; /* dy / (1 + x^2) */
    mp_tensor *x = IN(0);
    return dx0(&a, bin(&a, MP_OP_DIV, dy, bin(&a, MP_OP_ADD, scalar(&a, x, 1.0), bin(&a, MP_OP_MUL, x, x))), dx);
}
mp_status mp_g_sinh(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0};
    return times(&a, dy, un(&a, MP_OP_COSH, IN(0)), dx);
}
mp_status mp_g_cosh(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0};
    return times(&a, dy, un(&a, MP_OP_SINH, IN(0)), dx);
}
mp_status mp_g_asinh(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0}; /* dy / cosh(y) */
    return dx0(&a, bin(&a, MP_OP_DIV, dy, un(&a, MP_OP_COSH, Y)), dx);
}
mp_status mp_g_acosh(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0}; /* dy / sinh(y) */
    return dx0(&a, bin(&a, MP_OP_DIV, dy, un(&a, MP_OP_SINH, Y)), dx);
}
mp_status mp_g_atanh(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0}; /* dy / (1 - x^2) */
    return dx0(&a, bin(&a, MP_OP_DIV, dy, one_minus_sq(&a, IN(0))), dx);
}
static mp_status erf_like(const mp_node *n, mp_tensor *dy, mp_tensor **dx, double sign) {
    arena a = {0}; /* +-2/sqrt(pi) exp(-x^2) dy */
    mp_tensor *x = IN(0);
    mp_tensor *e = un(&a, MP_OP_EXP, un(&a, MP_OP_NEG, bin(&a, MP_OP_MUL, x, x)));
    return times(&a, dy, bin(&a, MP_OP_MUL, e, scalar(&a, x, sign * MP_TWO_OVER_SQRT_PI)), dx);
}
mp_status mp_g_erf(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    return erf_like(n, dy, dx, 1.0);
}
mp_status mp_g_erfc(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    return erf_like(n, dy, dx, -1.0);
}
mp_status mp_g_erfinv(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0}; /* sqrt(pi)/2 exp(y^2) dy */
    mp_tensor *e = un(&a, MP_OP_EXP, bin(&a, MP_OP_MUL, Y, Y));
    return times(&a, dy, bin(&a, MP_OP_MUL, e, scalar(&a, Y, MP_SQRT_PI_OVER_2)), dx);
}
mp_status mp_g_ndtri(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0}; /* sqrt(2 pi) exp(y^2 / 2) dy */
    mp_tensor *e = un(&a, MP_OP_EXP, bin(&a, MP_OP_MUL, bin(&a, MP_OP_MUL, Y, Y), scalar(&a, Y, 0.5)));
    return times(&a, dy, bin(&a, MP_OP_MUL, e, scalar(&a, Y, MP_SQRT_2PI)), dx);
}
mp_status mp_g_lgamma(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0};
    return times(&a, dy, un(&a, MP_OP_DIGAMMA, IN(0)), dx);
}
mp_status mp_g_digamma(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0}; /* dy polygamma(1, x); Polygamma takes float32/float64: 16-bit through float32 */
    mp_tensor *x = IN(0);
    mp_dtype w = x->dtype == MP_F64 ? MP_F64 : MP_F32;
    mp_tensor *xw = cast_to(&a, x, w);
    mp_tensor *t = bin(&a, MP_OP_POLYGAMMA, scalar(&a, xw, 1.0), xw);
    return times(&a, dy, cast_to(&a, t, x->dtype), dx);
}
mp_status mp_g_softsign(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0}; /* dy / (1 + |x|)^2 */
    mp_tensor *d = bin(&a, MP_OP_ADD, scalar(&a, IN(0), 1.0), un(&a, MP_OP_ABS, IN(0)));
    return dx0(&a, bin(&a, MP_OP_DIV, dy, bin(&a, MP_OP_MUL, d, d)), dx);
}
mp_status mp_g_selu(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0}; /* y < 0 ? dy (y + scale alpha) : dy scale (TensorFlow's SeluGrad) */
    mp_tensor *neg = bin(&a, MP_OP_LESS, Y, scalar(&a, Y, 0.0));
    mp_tensor *lo = bin(&a, MP_OP_MUL, dy, bin(&a, MP_OP_ADD, Y, scalar(&a, Y, MP_SELU_SCALE * MP_SELU_ALPHA)));
    mp_tensor *hi = bin(&a, MP_OP_MUL, dy, scalar(&a, dy, MP_SELU_SCALE));
    return dx0(&a, where(&a, neg, lo, hi), dx);
}

/* TensorFlow's Bessel rules: i0' = i1; i0e' = i1e - sign(x) i0e; i1' = i0 - i1 / x (1 at
 * x = 0, TensorFlow's value); i1e' = i0e - i1e (sign(x) + 1 / x) (0.5 at x = 0) */
mp_status mp_g_bessel_i0(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0};
    return times(&a, dy, un(&a, MP_OP_BESSEL_I1, IN(0)), dx);
}
mp_status mp_g_bessel_i0e(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0};
    mp_tensor *x = IN(0);
    return times(&a, dy, bin(&a, MP_OP_SUB, un(&a, MP_OP_BESSEL_I1E, x), bin(&a, MP_OP_MUL, un(&a, MP_OP_SIGN, x), Y)),
                 dx);
}
static mp_status bessel_i1_like(const mp_node *n, mp_tensor *dy, mp_tensor **dx, int scaled) {
    arena a = {0};
    mp_tensor *x = IN(0), *zero = scalar(&a, x, 0.0);
    mp_tensor *is0 = bin(&a, MP_OP_EQUAL, x, zero);
    mp_tensor *safe = where(&a, is0, scalar(&a, x, 1.0), x);
    mp_tensor *f;
    if (scaled)
        f = bin(&a, MP_OP_SUB, un(&a, MP_OP_BESSEL_I0E, x),
                bin(&a, MP_OP_MUL, Y, bin(&a, MP_OP_ADD, un(&a, MP_OP_SIGN, x), un(&a, MP_OP_RECIPROCAL, safe))));
    else
        f = bin(&a, MP_OP_SUB, un(&a, MP_OP_BESSEL_I0, x), bin(&a, MP_OP_DIV, Y, safe));
    return times(&a, dy, where(&a, is0, scalar(&a, x, scaled ? 0.5 : 1.0), f), dx);
}
mp_status mp_g_bessel_i1(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    return bessel_i1_like(n, dy, dx, 0);
}
mp_status mp_g_bessel_i1e(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    return bessel_i1_like(n, dy, dx, 1);
}

/* ------------------------------------------------------------------ binary */

static mp_status two(arena *a, const mp_node *n, const int *need, mp_tensor *g0, mp_tensor *g1, mp_tensor **dx) {
    if (need[0] && g0 && (dx[0] = unbroadcast(a, g0, IN(0))))
        out(dx[0]);
    if (need[1] && g1 && (dx[1] = unbroadcast(a, g1, IN(1))))
        out(dx[1]);
    return finish(a);
}

mp_status mp_g_atan2(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0}; /* atan2(y, x): (x, -y) dy / (x^2 + y^2) */
    mp_tensor *y = IN(0), *x = IN(1);
    mp_tensor *inv = bin(&a, MP_OP_DIV, dy, bin(&a, MP_OP_ADD, bin(&a, MP_OP_MUL, x, x), bin(&a, MP_OP_MUL, y, y)));
    return two(&a, n, need, need[0] ? bin(&a, MP_OP_MUL, x, inv) : NULL,
               need[1] ? un(&a, MP_OP_NEG, bin(&a, MP_OP_MUL, y, inv)) : NULL, dx);
}

/* 1 where x != 0, else 0, in x's dtype */
static mp_tensor *not_zero(arena *a, mp_tensor *x) {
    return cast_to(a, bin(a, MP_OP_NOT_EQUAL, x, scalar(a, x, 0.0)), x->dtype);
}

mp_status mp_g_xlogy(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0};
    mp_tensor *x = IN(0), *y = IN(1);
    mp_tensor *px = need[0] ? bin(&a, MP_OP_MUL, dy, bin(&a, MP_OP_XLOGY, not_zero(&a, x), y)) : NULL;
    mp_tensor *py = need[1] ? bin(&a, MP_OP_MUL, dy, bin(&a, MP_OP_XDIVY, x, y)) : NULL;
    return two(&a, n, need, px, py, dx);
}
mp_status mp_g_xdivy(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0};
    mp_tensor *x = IN(0), *y = IN(1);
    mp_tensor *px = need[0] ? bin(&a, MP_OP_MUL, dy, bin(&a, MP_OP_XDIVY, not_zero(&a, x), y)) : NULL;
    mp_tensor *py =
        need[1] ? bin(&a, MP_OP_MUL, dy, bin(&a, MP_OP_XDIVY, un(&a, MP_OP_NEG, x), bin(&a, MP_OP_MUL, y, y))) : NULL;
    return two(&a, n, need, px, py, dx);
}
mp_status mp_g_xlog1py(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0};
    mp_tensor *x = IN(0), *y = IN(1);
    mp_tensor *px = need[0] ? bin(&a, MP_OP_MUL, dy, bin(&a, MP_OP_XLOG1PY, not_zero(&a, x), y)) : NULL;
    mp_tensor *py =
        need[1] ? bin(&a, MP_OP_MUL, dy, bin(&a, MP_OP_XDIVY, x, bin(&a, MP_OP_ADD, y, scalar(&a, y, 1.0)))) : NULL;
    return two(&a, n, need, px, py, dx);
}
mp_status mp_g_div_no_nan(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0};
    mp_tensor *x = IN(0), *y = IN(1);
    mp_tensor *px = need[0] ? bin(&a, MP_OP_DIV_NO_NAN, dy, y) : NULL;
    mp_tensor *py = need[1] ? bin(&a, MP_OP_MUL, dy,
                                  bin(&a, MP_OP_DIV_NO_NAN, bin(&a, MP_OP_DIV_NO_NAN, un(&a, MP_OP_NEG, x), y), y))
                            : NULL;
    return two(&a, n, need, px, py, dx);
}
mp_status mp_g_mul_no_nan(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0};
    mp_tensor *x = IN(0), *y = IN(1);
    mp_tensor *px = need[0] ? bin(&a, MP_OP_MUL_NO_NAN, dy, y) : NULL;
    mp_tensor *py = need[1] ? bin(&a, MP_OP_MUL_NO_NAN, x, dy) : NULL;
    return two(&a, n, need, px, py, dx);
}
mp_status mp_g_nextafter(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0}; /* TensorFlow's: (dy, 0) */
    return two(&a, n, need, need[0] ? dy : NULL, need[1] ? bin(&a, MP_OP_MUL, dy, scalar(&a, dy, 0.0)) : NULL, dx);
}
/* d/dx P(a, x) = exp(-x + (a - 1) log x - lgamma(a)); d/da = IgammaGradA (Q: both negated) */
static mp_status igamma_like(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx, double sign) {
    arena a = {0};
    mp_tensor *av = IN(0), *x = IN(1);
    mp_tensor *logd = bin(&a, MP_OP_SUB,
                          bin(&a, MP_OP_SUB, bin(&a, MP_OP_XLOGY, bin(&a, MP_OP_SUB, av, scalar(&a, av, 1.0)), x), x),
                          un(&a, MP_OP_LGAMMA, av));
    mp_tensor *d = bin(&a, MP_OP_MUL, un(&a, MP_OP_EXP, logd), scalar(&a, x, sign));
    mp_tensor *da = need[0] ? bin(&a, MP_OP_MUL, dy, bin(&a, MP_OP_MUL, bin(&a, MP_OP_IGAMMA_GRAD_A, av, x),
                                                         scalar(&a, x, sign)))
                            : NULL;
    return two(&a, n, need, da, need[1] ? bin(&a, MP_OP_MUL, dy, d) : NULL, dx);
}
mp_status mp_g_igamma(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    return igamma_like(n, dy, need, dx, 1.0);
}
mp_status mp_g_igammac(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    return igamma_like(n, dy, need, dx, -1.0);
}
mp_status mp_g_zeta(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0}; /* d/dq zeta(s, q) = -s zeta(s + 1, q); none for s (TensorFlow's) */
    mp_tensor *s = IN(0), *q = IN(1);
    mp_tensor *pq = need[1] ? bin(&a, MP_OP_MUL, dy,
                                  un(&a, MP_OP_NEG, bin(&a, MP_OP_MUL, s,
                                                        bin(&a, MP_OP_ZETA, bin(&a, MP_OP_ADD, s, scalar(&a, s, 1.0)), q))))
                            : NULL;
    return two(&a, n, need, NULL, pq, dx);
}
mp_status mp_g_polygamma(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0}; /* d/dx polygamma(n, x) = polygamma(n + 1, x); none for n */
    mp_tensor *nn = IN(0), *x = IN(1);
    mp_tensor *px = need[1] ? bin(&a, MP_OP_MUL, dy,
                                  bin(&a, MP_OP_POLYGAMMA, bin(&a, MP_OP_ADD, nn, scalar(&a, nn, 1.0)), x))
                            : NULL;
    return two(&a, n, need, NULL, px, dx);
}

/* ------------------------------------------------------------------ scans */

static mp_tensor *scan(arena *a, mp_op op, mp_tensor *x, int64_t axis, int ex, int rev) {
    mp_attrs at = {.i0 = axis, .i1 = ex, .i2 = rev};
    return run(a, op, 1, &x, &at);
}

mp_status mp_g_cumprod(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0}; /* div_no_nan(cumsum(cumprod(x) dy, the other way), x): TensorFlow's rule */
    const mp_attrs *at = &n->attrs;
    mp_tensor *p = scan(&a, MP_OP_CUMPROD, IN(0), at->i0, (int)at->i1, (int)at->i2);
    mp_tensor *s = scan(&a, MP_OP_CUMSUM, bin(&a, MP_OP_MUL, p, dy), at->i0, (int)at->i1, !at->i2);
    return dx0(&a, bin(&a, MP_OP_DIV_NO_NAN, s, IN(0)), dx);
}
mp_status mp_g_cumulative_logsumexp(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0}; /* the positive and negative parts of dy in log space (TensorFlow's rule) */
    const mp_attrs *at = &n->attrs;
    mp_tensor *x = IN(0), *zero = scalar(&a, dy, 0.0), *ninf = scalar(&a, dy, -INFINITY);
    mp_tensor *pos = bin(&a, MP_OP_GREATER, dy, zero), *neg = bin(&a, MP_OP_LESS, dy, zero);
    mp_tensor *one = scalar(&a, dy, 1.0);
    mp_tensor *lp = where(&a, pos, un(&a, MP_OP_LOG, where(&a, pos, dy, one)), ninf);
    mp_tensor *ln = where(&a, neg, un(&a, MP_OP_LOG, where(&a, neg, un(&a, MP_OP_NEG, dy), one)), ninf);
    mp_tensor *op = un(&a, MP_OP_EXP, bin(&a, MP_OP_ADD,
                                          scan(&a, MP_OP_CUMULATIVE_LOGSUMEXP, bin(&a, MP_OP_SUB, lp, Y), at->i0,
                                               (int)at->i1, !at->i2),
                                          x));
    mp_tensor *on = un(&a, MP_OP_EXP, bin(&a, MP_OP_ADD,
                                          scan(&a, MP_OP_CUMULATIVE_LOGSUMEXP, bin(&a, MP_OP_SUB, ln, Y), at->i0,
                                               (int)at->i1, !at->i2),
                                          x));
    return dx0(&a, bin(&a, MP_OP_SUB, op, on), dx);
}

/* ------------------------------------------------------------------ segments */

static mp_tensor *seg(arena *a, const mp_node *n, int kind, mp_tensor *data) {
    mp_tensor *in[2] = {data, IN(1)};
    mp_attrs at = n->attrs;
    at.i0 = kind;
    return run(a, MP_OP_SEGMENT_REDUCE, 2, in, &at);
}

/* t (num_segments, ...) gathered back to the rows of data (data's shape); rows whose id is
 * negative (dropped by the unsorted ops) get zeros */
static mp_tensor *back(arena *a, const mp_node *n, mp_tensor *t) {
    mp_tensor *ids = IN(1), *data = IN(0);
    mp_tensor *safe = bin(a, MP_OP_MAXIMUM, ids, scalar(a, ids, 0.0));
    mp_tensor *in[2] = {t, safe};
    mp_attrs at = {.i0 = 0};
    mp_tensor *g = run(a, MP_OP_GATHER, 2, in, &at);
    if (n->attrs.i2 || !g) /* sorted: every id is valid */
        return g;
    int64_t shape[MP_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < data->ndim; d++)
        shape[nd++] = d < ids->ndim ? ids->shape[d] : 1;
    mp_tensor *valid = reshape(a, bin(a, MP_OP_GREATER_EQUAL, ids, scalar(a, ids, 0.0)), nd, shape);
    return where(a, valid, g, scalar(a, g, 0.0));
}

/* (num_segments, 1, ...) counts of rows per segment, in dtype dt */
static mp_tensor *counts(arena *a, const mp_node *n, mp_dtype dt) {
    if (a->st != MP_OK)
        return NULL;
    mp_tensor *ids = IN(1), *ones = NULL;
    mp_status st = mp_full(dt, ids->ndim, ids->shape, 1.0, mp_tensor_device(ids), &ones);
    ones = keep(a, st, ones);
    mp_tensor *c = seg(a, n, 0, ones);
    if (!c)
        return NULL;
    int64_t shape[MP_MAX_DIMS];
    int nd = 0;
    shape[nd++] = c->shape[0];
    for (int d = IN(1)->ndim; d < IN(0)->ndim; d++)
        shape[nd++] = 1;
    return reshape(a, c, nd, shape);
}

mp_status mp_g_segment_reduce(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    if (!need[0])
        return MP_OK;
    arena a = {0};
    mp_tensor *x = IN(0), *zero = scalar(&a, dy, 0.0);
    switch ((int)n->attrs.i0) {
    case 0: return dx0(&a, back(&a, n, dy), dx);
    case 1: /* mean: dy / count */
    case 5: {
        mp_tensor *c = bin(&a, MP_OP_MAXIMUM, counts(&a, n, dy->dtype), scalar(&a, dy, 1.0));
        if (n->attrs.i0 == 5)
            c = un(&a, MP_OP_SQRT, c);
        return dx0(&a, back(&a, n, bin(&a, MP_OP_DIV, dy, c)), dx);
    }
    case 2:
    case 3: { /* dy shared by the rows equal to the segment's max/min (TensorFlow's rule) */
        mp_tensor *sel = bin(&a, MP_OP_EQUAL, x, back(&a, n, Y));
        mp_tensor *nsel = seg(&a, n, 0, cast_to(&a, sel, dy->dtype));
        mp_tensor *w = bin(&a, MP_OP_DIV, dy, bin(&a, MP_OP_MAXIMUM, nsel, scalar(&a, dy, 1.0)));
        return dx0(&a, where(&a, sel, back(&a, n, w), zero), dx);
    }
    case 4: { /* prod: y / x, or the product of the others at a segment's only zero */
        mp_tensor *is0 = bin(&a, MP_OP_EQUAL, x, zero);
        mp_tensor *nz = seg(&a, n, 0, cast_to(&a, is0, dy->dtype));
        mp_tensor *g = where(&a, bin(&a, MP_OP_GREATER, nz, scalar(&a, dy, 1.0)), zero, dy);
        mp_tensor *nonzero = where(&a, is0, scalar(&a, x, 1.0), x);
        mp_tensor *nzprod = seg(&a, n, 4, nonzero);
        mp_tensor *part = where(&a, is0, back(&a, n, nzprod), bin(&a, MP_OP_DIV, back(&a, n, Y), nonzero));
        return dx0(&a, bin(&a, MP_OP_MUL, part, back(&a, n, g)), dx);
    }
    default: return mp_error_set(MP_ERR_INTERNAL, "segment_reduce gradient: unknown kind %lld", (long long)n->attrs.i0);
    }
}
