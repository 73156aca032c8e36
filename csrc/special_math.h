/* special_math.h — the special functions of tf.math that libm lacks (erfinv, ndtri, digamma,
 * Hurwitz zeta, polygamma, the regularized incomplete gamma functions) and the small formulas
 * of the newer elementwise kinds (selu, softsign, the *_no_nan / x*log(y) family, truncated
 * division), shared by the CPU backend and the CUDA kernels (MP_HD, as elementwise_math.h).
 * All evaluate in double; callers round once to the tensor's dtype. It must not allocate or
 * keep state. */
#ifndef MP_SPECIAL_MATH_H
#define MP_SPECIAL_MATH_H
#include <math.h>
#include <stdint.h>

#include "mp_hd.h"

#define MP_PI 3.14159265358979323846
#define MP_SQRT_PI 1.77245385090551602730
#define MP_SQRT2 1.41421356237309504880

/* SELU's constants (Klambauer et al.), as tf.nn.selu */
#define MP_SELU_SCALE 1.0507009873554804934193349852946
#define MP_SELU_ALPHA 1.6732632423543772848170429916717

/* log|gamma(x)|: glibc's lgamma writes the global signgam (a race between the CPU backend's
 * threads); lgamma_r does not. */
#if !defined(__CUDA_ARCH__)
extern double lgamma_r(double, int *);
#endif
MP_HD double mp_lgamma_f64(double x) {
#if defined(__CUDA_ARCH__)
    return lgamma(x);
#else
    int sign;
    return lgamma_r(x, &sign);
#endif
}

/* erfc^-1(q) for q in (0, 1]: Newton on log(erfc(y)) = log(q) (well scaled down to the
 * smallest q), from the asymptotic start y^2 + log(y sqrt(pi)) = -log(q). */
MP_HD double mp_erfcinv_small_f64(double q) {
    if (q == 1.)
        return 0.;
    double L = -log(q);
    double y = L > 1. ? sqrt(L - log(MP_SQRT_PI * sqrt(L))) : 0.8862269254527580 * (1. - q);
    for (int it = 0; it < 60; it++) {
        double e = erfc(y);
        double h = log(e) - log(q);
        double d = -2. / MP_SQRT_PI * exp(-y * y) / e; /* d log(erfc) / dy */
        double step = h / d;
        y -= step;
        if (y < 0.)
            y = 0.;
        if (fabs(step) <= 1e-16 * fabs(y))
            break;
    }
    return y;
}

/* erf^-1(x): Halley steps on erf(y) = x near 0 (relative precision for tiny x), the erfc
 * form beyond |x| = 0.5 (1 - |x| is exact there). */
MP_HD double mp_erfinv_f64(double x) {
    if (x != x || x < -1. || x > 1.)
        return NAN;
    if (x == 1.)
        return INFINITY;
    if (x == -1.)
        return -INFINITY;
    double a = fabs(x), y;
    if (a <= 0.5) {
        y = 0.8862269254527580 * a; /* sqrt(pi)/2 x */
        for (int it = 0; it < 8; it++) {
            double r = erf(y) - a;
            double d = 2. / MP_SQRT_PI * exp(-y * y);
            double step = r / (d + y * r);
            y -= step;
            if (fabs(step) <= 1e-17 * fabs(y))
                break;
        }
    } else {
        y = mp_erfcinv_small_f64(1. - a);
    }
    return x < 0. ? -y : y;
}

/* The inverse of the standard normal CDF: -sqrt(2) erfc^-1(2p). */
MP_HD double mp_ndtri_f64(double p) {
    if (p != p || p < 0. || p > 1.)
        return NAN;
    if (p == 0.)
        return -INFINITY;
    if (p == 1.)
        return INFINITY;
    if (p == 0.5)
        return 0.;
    if (p < 0.5)
        return -MP_SQRT2 * mp_erfcinv_small_f64(2. * p);
    return MP_SQRT2 * mp_erfcinv_small_f64(2. * (1. - p));
}

/* digamma: reflection for x < 0, recurrence up to x >= 10, then the asymptotic series.
 * NaN at the poles (0, -1, -2 ...) and at -inf, as TensorFlow. */
MP_HD double mp_digamma_f64(double x) {
    if (x != x || x == -INFINITY)
        return NAN;
    if (x == INFINITY)
        return INFINITY;
    double acc = 0.;
    if (x <= 0.) {
        if (x == floor(x))
            return NAN;
        /* psi(x) = psi(1 - x) - pi / tan(pi x); tan from the fractional part keeps precision */
        double r = x - floor(x);
        acc = -MP_PI / tan(MP_PI * r);
        x = 1. - x;
    }
    while (x < 10.) {
        acc -= 1. / x;
        x += 1.;
    }
    double z = 1. / (x * x);
    /* B_2k / (2k) for k = 1..7 */
    double s = z * (1. / 12 - z * (1. / 120 - z * (1. / 252 - z * (1. / 240 - z * (1. / 132 - z * (691. / 32760 - z / 12.))))));
    return acc + log(x) - 0.5 / x - s;
}

/* Hurwitz zeta(s, q) = sum_k (q + k)^-s by Euler-Maclaurin: ten terms summed, then the
 * integral, the half term and twelve Bernoulli corrections. s < 1 is NaN, s == 1 infinity,
 * a pole q = 0, -1, ... infinity (TensorFlow's domain). */
MP_HD double mp_zeta_f64(double s, double q) {
    if (s != s || q != q)
        return NAN;
    if (s == 1.)
        return INFINITY;
    if (s < 1.)
        return NAN;
    if (q == INFINITY)
        return 0.;
    if (q <= 0.) {
        if (q == floor(q))
            return INFINITY;
        if (s != floor(s))
            return NAN; /* a negative base to a non-integer power */
    }
    /* B_2j / (2j)! for j = 1..12 */
    const double b[12] = {8.3333333333333333e-02,  -1.3888888888888889e-03, 3.3068783068783069e-05,
                          -8.2671957671957672e-07, 2.0876756987868099e-08,  -5.2841901386874932e-10,
                          1.3382536530684679e-11,  -3.3896802963225829e-13, 8.5860620562778446e-15,
                          -2.1748686985580619e-16, 5.5090028283602295e-18,  -1.3954464685812523e-19};
    const int N = 10;
    double sum = 0.;
    for (int k = 0; k < N; k++) {
        double t = pow(q + k, -s);
        sum += t;
        if (fabs(t) < 1e-17 * fabs(sum) && q + k > 0.)
            return sum;
    }
    double a = q + N;
    double apow = pow(a, -s); /* a^-s */
    sum += a * apow / (s - 1.) + 0.5 * apow;
    double fac = s * apow / a; /* s (s+1) ... (s+2j-2) a^(-s-2j+1), j = 1 */
    for (int j = 0; j < 12; j++) {
        double t = b[j] * fac;
        sum += t;
        if (fabs(t) < 1e-17 * fabs(sum))
            break;
        fac *= (s + 2 * j + 1) * (s + 2 * j + 2) / (a * a);
    }
    return sum;
}

/* polygamma(n, x): digamma for n = 0, (-1)^(n+1) n! zeta(n + 1, x) for integers n >= 1;
 * NaN for a negative or non-integer n. */
MP_HD double mp_polygamma_f64(double n, double x) {
    if (n != n || x != x || n < 0. || n != floor(n))
        return NAN;
    if (n == 0.)
        return mp_digamma_f64(x);
    double f = exp(mp_lgamma_f64(n + 1.)); /* n! */
    double z = mp_zeta_f64(n + 1., x);
    return (fmod(n, 2.) == 0. ? -f : f) * z;
}

/* The regularized lower incomplete gamma P(a, x): the power series for x < a + 1, else
 * 1 - Q from the continued fraction. Domain as TensorFlow: a <= 0 or x < 0 is NaN. */
MP_HD double mp_igamma_cf_f64(double a, double x) { /* Q(a, x) by the modified Lentz method */
    double tiny = 1e-300;
    double b = x + 1. - a, c = 1. / tiny, d = 1. / b, h = d;
    for (int i = 1; i < 2000; i++) {
        double an = -i * (i - a);
        b += 2.;
        d = an * d + b;
        if (fabs(d) < tiny)
            d = tiny;
        c = b + an / c;
        if (fabs(c) < tiny)
            c = tiny;
        d = 1. / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1.) < 1e-16)
            break;
    }
    return exp(-x + a * log(x) - mp_lgamma_f64(a)) * h;
}
MP_HD double mp_igamma_series_f64(double a, double x) { /* P(a, x) */
    double ap = a, del = 1. / a, sum = del;
    for (int i = 0; i < 2000; i++) {
        ap += 1.;
        del *= x / ap;
        sum += del;
        if (fabs(del) < fabs(sum) * 1e-17)
            break;
    }
    return sum * exp(-x + a * log(x) - mp_lgamma_f64(a));
}
MP_HD double mp_igamma_f64(double a, double x) {
    if (a != a || x != x || a < 0. || x < 0.)
        return NAN;
    if (x == 0.)
        return 0.; /* TensorFlow's P(0, 0) */
    if (a == 0.)
        return NAN;
    if (x == INFINITY)
        return 1.;
    if (a == INFINITY)
        return 0.;
    return x < a + 1. ? mp_igamma_series_f64(a, x) : 1. - mp_igamma_cf_f64(a, x);
}
MP_HD double mp_igammac_f64(double a, double x) {
    if (a != a || x != x || a <= 0. || x < 0.)
        return NAN;
    if (x == 0.)
        return 1.;
    if (x == INFINITY)
        return 0.;
    if (a == INFINITY)
        return 1.;
    return x < a + 1. ? 1. - mp_igamma_series_f64(a, x) : mp_igamma_cf_f64(a, x);
}

/* dP(a, x)/da (TensorFlow's IgammaGradA) from P = sum_n t_n, t_n = x^(a+n) e^-x / gamma(a+n+1):
 * dP/da = sum_n t_n (log x - digamma(a+n+1)); the terms in log space (no underflow of the
 * first ones for large x), digamma by its recurrence. */
MP_HD double mp_igamma_grad_a_f64(double a, double x) {
    if (a != a || x != x || a <= 0. || x < 0.)
        return NAN;
    if (x == 0. || x == INFINITY || a == INFINITY)
        return 0.;
    if (x > a + 1. && mp_igamma_cf_f64(a, x) < 1e-3) {
        /* P near 1: the series' terms cancel to ~1e-16 absolute; -dQ/da by Richardson-extrapolated
         * central differences of the continued fraction keeps ~1e-11 relative */
        double h = 1e-3 * (a > 1. ? a : 1.);
        if (h > 0.5 * a)
            h = 0.5 * a;
        double d1 = (mp_igamma_cf_f64(a + h, x) - mp_igamma_cf_f64(a - h, x)) / (2. * h);
        double d2 = (mp_igamma_cf_f64(a + 0.5 * h, x) - mp_igamma_cf_f64(a - 0.5 * h, x)) / h;
        return -(4. * d2 - d1) / 3.;
    }
    double lx = log(x), lt = a * lx - x - mp_lgamma_f64(a + 1.), psi = mp_digamma_f64(a + 1.);
    double sum = 0., tsum = 0.;
    for (int n = 0; n < 100000; n++) {
        if (n > 0) {
            lt += lx - log(a + n);
            psi += 1. / (a + n);
        }
        double t = exp(lt);
        sum += t * (lx - psi);
        tsum += t;
        if (n > x && t < 1e-17 * tsum)
            break;
    }
    return sum;
}

/* exp(-|x|) I_nu(x) for nu = 0, 1 (bessel_i0e / bessel_i1e): the power series up to |x| = 30,
 * the asymptotic series beyond (mu = 4 nu^2); 0 at +-inf (odd for nu = 1). TensorFlow's
 * bessel_i0 / i1 are these times exp(|x|) (NaN at +-inf, as TF). */
MP_HD double mp_bessel_ie_f64(int nu, double x) {
    if (x != x)
        return x;
    double ax = fabs(x), r;
    if (ax == INFINITY)
        return nu ? copysign(0., x) : 0.;
    if (ax <= 30.) {
        double q = 0.25 * ax * ax, t = 1., sum = 1.;
        for (int k = 1; k < 500; k++) {
            t *= q / ((double)k * (double)(k + nu));
            sum += t;
            if (t < 1e-17 * sum)
                break;
        }
        r = (nu ? 0.5 * ax : 1.) * sum * exp(-ax);
    } else {
        double mu = 4. * nu * nu, t = 1., sum = 1.;
        for (int k = 1; k < 200; k++) {
            double next = t * -(mu - (2. * k - 1.) * (2. * k - 1.)) / (8. * k * ax);
            if (fabs(next) >= fabs(t))
                break;
            t = next;
            sum += t;
            if (fabs(t) < 1e-17 * fabs(sum))
                break;
        }
        r = sum / sqrt(2. * MP_PI * ax);
    }
    return nu && x < 0. ? -r : r;
}
MP_HD double mp_bessel_i_f64(int nu, double x) { return mp_bessel_ie_f64(nu, x) * exp(fabs(x)); }

/* x * log(y), x / y, x * log1p(y) that are 0 wherever x is 0 (TensorFlow's Xlogy family,
 * whatever y is); a / b and a * b that are 0 wherever b is 0 (DivNoNan, MulNoNan). */
#define MP_XLOGY(x, z, LOG) ((x) == 0 ? 0 : (x) * LOG(z))
#define MP_XDIVY(x, z) ((x) == 0 ? 0 : (x) / (z))
#define MP_NO_NAN(z, EXPR) ((z) == 0 ? 0 : (EXPR))

/* Truncated (C) integer division and remainder with two's-complement wrap; the callers
 * have refused a zero divisor. */
MP_HD int64_t mp_itruncdiv(int64_t x, int64_t z) { return z == -1 ? (int64_t)(0 - (uint64_t)x) : x / z; }
MP_HD int64_t mp_itruncmod(int64_t x, int64_t z) { return z == -1 ? 0 : x % z; }
#endif
