/* grad.c — the backward rule of every op in ops.def, side by side.
 * Each rule turns dy = dL/d(output) into dx[k] = dL/d(input k) for the inputs the tape
 * needs, using ops (so gradients of gradients work and every backend runs them).
 * Gradients keep the dtype of the tensor they belong to: float16 activations get float16
 * gradients, so underflow is real, exactly as in TensorFlow.
 * NOTE: every op must appear in the GRAD_* table below (the build fails otherwise). */
#include <math.h>
#include <string.h>

#include "grad.h"

#include "grad_arena.h"
#include "grad_math.h"

/* ------------------------------------------------------------------ elementwise */

static mp_status g_cast(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    if (!mp_dtype_is_floating(IN(0)->dtype))
        return MP_OK;
    return mp_cast(dy, IN(0)->dtype, &dx[0]);
}

static mp_status g_identity(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    if (dy->dtype != IN(0)->dtype)
        return mp_cast(dy, IN(0)->dtype, &dx[0]);
    dx[0] = out(dy);
    return MP_OK;
}

/* The replicas' sum: the gradient of each replica's input is the sum of the replicas' output
 * gradients (the same collective, so every replica must reach this rule in the same order,
 * as it reached the forward) */
static mp_status g_all_reduce(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    return mp_op_run(MP_OP_ALL_REDUCE, 1, &dy, &n->attrs, &dx[0]);
}

/* TensorFlow's Sign gradient: zeros (not "no gradient") */
static mp_status g_zeros(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)dy;
    (void)need;
    return mp_full(IN(0)->dtype, IN(0)->ndim, IN(0)->shape, 0.0, mp_tensor_device(IN(0)), &dx[0]);
}

static mp_status g_neg(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)n;
    (void)need;
    return mp_unary(MP_OP_NEG, dy, &dx[0]);
}

/* dx = dy * f(...) for the common one-input rules */
static mp_status g_mul_by(mp_tensor *dy, mp_tensor *f, arena *a, mp_tensor **dx) {
    dx[0] = bin(a, MP_OP_MUL, dy, f);
    if (dx[0])
        out(dx[0]);
    return finish(a);
}

static mp_status g_abs(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0};
    return g_mul_by(dy, un(&a, MP_OP_SIGN, IN(0)), &a, dx);
}
static mp_status g_exp(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    return mp_binary(MP_OP_MUL, dy, Y, &dx[0]);
}
static mp_status g_log(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    return mp_binary(MP_OP_DIV, dy, IN(0), &dx[0]);
}
static mp_status g_square(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0};
    return g_mul_by(dy, bin(&a, MP_OP_MUL, IN(0), scalar(&a, IN(0), 2.0)), &a, dx);
}
static mp_status g_reciprocal(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0}; /* -dy * y^2 */
    return g_mul_by(un(&a, MP_OP_NEG, dy), bin(&a, MP_OP_MUL, Y, Y), &a, dx);
}
static mp_status g_log1p(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0};
    dx[0] = bin(&a, MP_OP_DIV, dy, bin(&a, MP_OP_ADD, IN(0), scalar(&a, IN(0), 1.0)));
    if (dx[0])
        out(dx[0]);
    return finish(&a);
}
static mp_status g_expm1(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0};
    return g_mul_by(dy, bin(&a, MP_OP_ADD, Y, scalar(&a, Y, 1.0)), &a, dx);
}
static mp_status g_sin(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0};
    return g_mul_by(dy, un(&a, MP_OP_COS, IN(0)), &a, dx);
}
static mp_status g_cos(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0};
    return g_mul_by(dy, un(&a, MP_OP_NEG, un(&a, MP_OP_SIN, IN(0))), &a, dx);
}

/* activations: a fused *_GRAD kernel of (x or y, dy) */
static mp_status fused(mp_op gop, mp_tensor *first, mp_tensor *dy, double alpha, mp_tensor **dx) {
    mp_tensor *in[2] = {first, dy};
    mp_attrs at = {.f0 = alpha};
    return mp_op_run(gop, 2, in, &at, &dx[0]);
}
static mp_status g_sqrt(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    return fused(MP_OP_SQRT_GRAD, Y, dy, 0, dx);
}
static mp_status g_rsqrt(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    return fused(MP_OP_RSQRT_GRAD, Y, dy, 0, dx);
}
static mp_status g_relu(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    return fused(MP_OP_RELU_GRAD, IN(0), dy, 0, dx);
}
static mp_status g_sigmoid(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    return fused(MP_OP_SIGMOID_GRAD, Y, dy, 0, dx);
}
static mp_status g_tanh(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    return fused(MP_OP_TANH_GRAD, Y, dy, 0, dx);
}
static mp_status g_elu(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    return fused(MP_OP_ELU_GRAD, Y, dy, n->attrs.f0, dx);
}
static mp_status g_softplus(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    return fused(MP_OP_SOFTPLUS_GRAD, IN(0), dy, 0, dx);
}
static mp_status g_gelu(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    return fused(n->attrs.i0 ? MP_OP_GELU_TANH_GRAD : MP_OP_GELU_GRAD, IN(0), dy, 0, dx);
}
static mp_status g_leaky_relu(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    return fused(MP_OP_LEAKY_RELU_GRAD, IN(0), dy, n->attrs.f0, dx);
}

/* second order: rules of the fused *_GRAD ops, inputs (first, g) */
/* piecewise constant in x: zeros for x, as TensorFlow's _ReluGradGrad (not None) */
static mp_status g_relu_grad(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    if (need[1])
        MP_TRY(fused(MP_OP_RELU_GRAD, IN(0), dy, 0, &dx[1]));
    if (need[0])
        return g_zeros(n, dy, need, dx);
    return MP_OK;
}
static mp_status g_leaky_relu_grad(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    if (need[1])
        MP_TRY(fused(MP_OP_LEAKY_RELU_GRAD, IN(0), dy, n->attrs.f0, &dx[1]));
    if (need[0])
        return g_zeros(n, dy, need, dx);
    return MP_OK;
}
static mp_status g_sigmoid_grad(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0}; /* out = g*y*(1-y): d/dg = dy*y*(1-y); d/dy = dy*g*(1-2y) */
    if (need[1] && (dx[1] = bin(&a, MP_OP_SIGMOID_GRAD, IN(0), dy)))
        out(dx[1]);
    if (need[0]) {
        mp_tensor *one_m_2y = bin(&a, MP_OP_SUB, scalar(&a, IN(0), 1.0), bin(&a, MP_OP_MUL, IN(0), scalar(&a, IN(0), 2.0)));
        if ((dx[0] = bin(&a, MP_OP_MUL, bin(&a, MP_OP_MUL, dy, IN(1)), one_m_2y)))
            out(dx[0]);
    }
    return finish(&a);
}
static mp_status g_tanh_grad(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0}; /* out = g*(1-y^2): d/dg = dy*(1-y^2); d/dy = -2*dy*g*y */
    if (need[1] && (dx[1] = bin(&a, MP_OP_TANH_GRAD, IN(0), dy)))
        out(dx[1]);
    if (need[0] && (dx[0] = bin(&a, MP_OP_MUL, bin(&a, MP_OP_MUL, dy, IN(1)),
                                bin(&a, MP_OP_MUL, IN(0), scalar(&a, IN(0), -2.0)))))
        out(dx[0]);
    return finish(&a);
}
static mp_status g_elu_grad(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0}; /* out = y>0 ? g : g*(y+alpha): d/dg likewise; d/dy = y>0 ? 0 : dy*g */
    if (need[1] && (dx[1] = bin_a(&a, MP_OP_ELU_GRAD, IN(0), dy, n->attrs.f0)))
        out(dx[1]);
    if (need[0]) {
        mp_tensor *pos = bin(&a, MP_OP_GREATER, IN(0), scalar(&a, IN(0), 0.0));
        if ((dx[0] = where(&a, pos, scalar(&a, IN(0), 0.0), bin(&a, MP_OP_MUL, dy, IN(1)))))
            out(dx[0]);
    }
    return finish(&a);
}
static mp_status g_softplus_grad(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0}; /* out = g*s(x): d/dg = dy*s(x); d/dx = dy*g*s(x)(1-s(x)) */
    if (need[1] && (dx[1] = bin(&a, MP_OP_SOFTPLUS_GRAD, IN(0), dy)))
        out(dx[1]);
    if (need[0] && (dx[0] = bin(&a, MP_OP_SIGMOID_GRAD, un(&a, MP_OP_SIGMOID, IN(0)), bin(&a, MP_OP_MUL, dy, IN(1)))))
        out(dx[0]);
    return finish(&a);
}
static mp_status g_gelu_grad(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0}; /* out = g*f'(x): d/dx = dy*g*phi(x)*(2-x^2) */
    if (need[1] && (dx[1] = bin(&a, MP_OP_GELU_GRAD, IN(0), dy)))
        out(dx[1]);
    if (need[0]) {
        mp_tensor *x = IN(0), *x2 = bin(&a, MP_OP_MUL, x, x);
        mp_tensor *phi = bin(&a, MP_OP_MUL, un(&a, MP_OP_EXP, bin(&a, MP_OP_MUL, x2, scalar(&a, x, -0.5))),
                             scalar(&a, x, 0.39894228040143267794));
        mp_tensor *f2 = bin(&a, MP_OP_MUL, phi, bin(&a, MP_OP_SUB, scalar(&a, x, 2.0), x2));
        if ((dx[0] = bin(&a, MP_OP_MUL, bin(&a, MP_OP_MUL, dy, IN(1)), f2)))
            out(dx[0]);
    }
    return finish(&a);
}
static mp_status g_gelu_tanh_grad(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0}; /* out = g*f'(x), f = 0.5x(1+tanh(u)), u = c(x + k x^3):
                    * f''(x) = (1-t^2) (u' + 0.5 x (u'' - 2 t u'^2)), t = tanh(u) */
    if (need[1] && (dx[1] = bin(&a, MP_OP_GELU_TANH_GRAD, IN(0), dy)))
        out(dx[1]);
    if (need[0]) {
        const double c = 0.79788456080286535588, k = 0.044715;
        mp_tensor *x = IN(0), *x2 = bin(&a, MP_OP_MUL, x, x);
        mp_tensor *u = bin(&a, MP_OP_MUL, bin(&a, MP_OP_ADD, x, bin(&a, MP_OP_MUL, bin(&a, MP_OP_MUL, x2, x),
                                                                    scalar(&a, x, k))),
                           scalar(&a, x, c));
        mp_tensor *t = un(&a, MP_OP_TANH, u);
        mp_tensor *sech2 = bin(&a, MP_OP_SUB, scalar(&a, x, 1.0), bin(&a, MP_OP_MUL, t, t));
        mp_tensor *du = bin(&a, MP_OP_ADD, scalar(&a, x, c), bin(&a, MP_OP_MUL, x2, scalar(&a, x, 3.0 * c * k)));
        mp_tensor *d2u = bin(&a, MP_OP_MUL, x, scalar(&a, x, 6.0 * c * k));
        mp_tensor *inner = bin(&a, MP_OP_SUB, d2u, bin(&a, MP_OP_MUL, bin(&a, MP_OP_MUL, t, bin(&a, MP_OP_MUL, du, du)),
                                                      scalar(&a, x, 2.0)));
        mp_tensor *f2 = bin(&a, MP_OP_MUL, sech2,
                            bin(&a, MP_OP_ADD, du, bin(&a, MP_OP_MUL, bin(&a, MP_OP_MUL, x, scalar(&a, x, 0.5)), inner)));
        if ((dx[0] = bin(&a, MP_OP_MUL, bin(&a, MP_OP_MUL, dy, IN(1)), f2)))
            out(dx[0]);
    }
    return finish(&a);
}
static mp_status g_rsqrt_grad(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0}; /* out = -0.5*g*y^3: d/dg likewise; d/dy = -1.5*dy*g*y^2 */
    if (need[1] && (dx[1] = bin(&a, MP_OP_RSQRT_GRAD, IN(0), dy)))
        out(dx[1]);
    if (need[0] && (dx[0] = bin(&a, MP_OP_MUL, bin(&a, MP_OP_MUL, dy, IN(1)),
                                bin(&a, MP_OP_MUL, bin(&a, MP_OP_MUL, IN(0), IN(0)), scalar(&a, IN(0), -1.5)))))
        out(dx[0]);
    return finish(&a);
}
static mp_status g_sqrt_grad(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0}; /* out = 0.5*g/y: d/dg likewise; d/dy = -dy*out/y */
    if (need[1] && (dx[1] = bin(&a, MP_OP_SQRT_GRAD, IN(0), dy)))
        out(dx[1]);
    if (need[0] && (dx[0] = un(&a, MP_OP_NEG, bin(&a, MP_OP_DIV, bin(&a, MP_OP_MUL, dy, Y), IN(0)))))
        out(dx[0]);
    return finish(&a);
}

/* ------------------------------------------------------------------ binary */

static mp_status g_add(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0};
    if (need[0] && (dx[0] = unbroadcast(&a, dy, IN(0))))
        out(dx[0]);
    if (need[1] && (dx[1] = unbroadcast(&a, dy, IN(1))))
        out(dx[1]);
    return finish(&a);
}
static mp_status g_sub(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0};
    if (need[0] && (dx[0] = unbroadcast(&a, dy, IN(0))))
        out(dx[0]);
    if (need[1] && (dx[1] = unbroadcast(&a, un(&a, MP_OP_NEG, dy), IN(1))))
        out(dx[1]);
    return finish(&a);
}
static mp_status g_mul(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0};
    if (need[0] && (dx[0] = unbroadcast(&a, bin(&a, MP_OP_MUL, dy, IN(1)), IN(0))))
        out(dx[0]);
    if (need[1] && (dx[1] = unbroadcast(&a, bin(&a, MP_OP_MUL, dy, IN(0)), IN(1))))
        out(dx[1]);
    return finish(&a);
}
static mp_status g_div(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0}; /* y = a/b: da = dy/b, db = -dy*y/b */
    if (need[0] && (dx[0] = unbroadcast(&a, bin(&a, MP_OP_DIV, dy, IN(1)), IN(0))))
        out(dx[0]);
    if (need[1] && (dx[1] = unbroadcast(&a, un(&a, MP_OP_NEG, bin(&a, MP_OP_DIV, bin(&a, MP_OP_MUL, dy, Y), IN(1))),
                                        IN(1))))
        out(dx[1]);
    return finish(&a);
}
static mp_status g_floormod(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0}; /* x mod y = x - floor(x/y)*y */
    if (need[0] && (dx[0] = unbroadcast(&a, dy, IN(0))))
        out(dx[0]);
    if (need[1] && (dx[1] = unbroadcast(&a, un(&a, MP_OP_NEG, bin(&a, MP_OP_MUL, dy, bin(&a, MP_OP_FLOORDIV, IN(0), IN(1)))),
                                        IN(1))))
        out(dx[1]);
    return finish(&a);
}
static mp_status g_pow(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0}; /* da = dy*b*a^(b-1); db = dy*y*log(a) where a > 0, else 0 (TensorFlow's rule) */
    mp_tensor *x = IN(0), *e = IN(1);
    if (need[0]) {
        mp_tensor *p = bin(&a, MP_OP_POW, x, bin(&a, MP_OP_SUB, e, scalar(&a, e, 1.0)));
        if ((dx[0] = unbroadcast(&a, bin(&a, MP_OP_MUL, dy, bin(&a, MP_OP_MUL, e, p)), x)))
            out(dx[0]);
    }
    if (need[1]) {
        mp_tensor *zero = scalar(&a, x, 0.0);
        mp_tensor *pos = bin(&a, MP_OP_GREATER, x, zero);
        mp_tensor *safe = where(&a, pos, x, scalar(&a, x, 1.0));
        mp_tensor *lg = where(&a, pos, un(&a, MP_OP_LOG, safe), zero);
        if ((dx[1] = unbroadcast(&a, bin(&a, MP_OP_MUL, dy, bin(&a, MP_OP_MUL, Y, lg)), e)))
            out(dx[1]);
    }
    return finish(&a);
}
static mp_status minmax(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx, mp_op cmp) {
    arena a = {0};
    mp_tensor *mask = bin(&a, cmp, IN(0), IN(1));
    mp_tensor *zero = scalar(&a, dy, 0.0);
    if (need[0] && (dx[0] = unbroadcast(&a, where(&a, mask, dy, zero), IN(0))))
        out(dx[0]);
    if (need[1] && (dx[1] = unbroadcast(&a, where(&a, mask, zero, dy), IN(1))))
        out(dx[1]);
    return finish(&a);
}
static mp_status g_maximum(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    return minmax(n, dy, need, dx, MP_OP_GREATER_EQUAL);
}
static mp_status g_minimum(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    return minmax(n, dy, need, dx, MP_OP_LESS_EQUAL);
}
static mp_status g_squared_difference(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0};
    mp_tensor *d = bin(&a, MP_OP_MUL, bin(&a, MP_OP_MUL, dy, bin(&a, MP_OP_SUB, IN(0), IN(1))), scalar(&a, dy, 2.0));
    if (need[0] && (dx[0] = unbroadcast(&a, d, IN(0))))
        out(dx[0]);
    if (need[1] && (dx[1] = unbroadcast(&a, un(&a, MP_OP_NEG, d), IN(1))))
        out(dx[1]);
    return finish(&a);
}
static mp_status g_where(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0};
    mp_tensor *zero = scalar(&a, dy, 0.0);
    if (need[1] && (dx[1] = unbroadcast(&a, where(&a, IN(0), dy, zero), IN(1))))
        out(dx[1]);
    if (need[2] && (dx[2] = unbroadcast(&a, where(&a, IN(0), zero, dy), IN(2))))
        out(dx[2]);
    return finish(&a);
}

/* ------------------------------------------------------------------ reductions */

/* dy reshaped to the input's rank with 1s on the reduced axes */
static mp_tensor *keepdims_shape(arena *a, const mp_node *n, mp_tensor *t) {
    const mp_tensor *x = IN(0);
    int64_t ks[MP_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++)
        ks[d] = x->shape[d];
    for (int i = 0; i < n->attrs.n_ints; i++)
        ks[n->attrs.ints[i]] = 1;
    return reshape(a, t, x->ndim, ks);
}

static mp_tensor *bcast_to(arena *a, mp_tensor *t, const mp_tensor *like) {
    if (a->st != MP_OK || !t)
        return NULL;
    mp_attrs at = {.n_ints = like->ndim};
    memcpy(at.ints, like->shape, sizeof(int64_t) * (size_t)like->ndim);
    return run(a, MP_OP_BROADCAST_TO, 1, &t, &at);
}

static double reduced_count(const mp_node *n) {
    double c = 1;
    for (int i = 0; i < n->attrs.n_ints; i++)
        c *= (double)IN(0)->shape[n->attrs.ints[i]];
    return c;
}

static mp_status g_sum(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0};
    if ((dx[0] = bcast_to(&a, keepdims_shape(&a, n, dy), IN(0))))
        out(dx[0]);
    return finish(&a);
}
static mp_status g_mean(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0};
    double c = reduced_count(n);
    mp_tensor *scaled = bin(&a, MP_OP_DIV, dy, scalar(&a, dy, c > 0 ? c : 1.0));
    if ((dx[0] = bcast_to(&a, keepdims_shape(&a, n, scaled), IN(0))))
        out(dx[0]);
    return finish(&a);
}
static mp_status g_maxmin(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0}; /* gradient split evenly between the tied extreme elements (TensorFlow's rule) */
    mp_tensor *x = IN(0);
    mp_tensor *yk = keepdims_shape(&a, n, Y);
    mp_tensor *eq = bin(&a, MP_OP_EQUAL, x, yk);
    mp_tensor *mask = NULL;
    if (eq) {
        mp_tensor *m = NULL;
        mp_status st_m = mp_cast(eq, x->dtype, &m);
        mask = keep(&a, st_m, m);
    }
    mp_tensor *count = mask ? sum_axes(&a, mask, n->attrs.n_ints, n->attrs.ints, 1) : NULL;
    mp_tensor *g = bin(&a, MP_OP_DIV, keepdims_shape(&a, n, dy), count);
    if ((dx[0] = bin(&a, MP_OP_MUL, mask, g)))
        out(dx[0]);
    return finish(&a);
}
static mp_status g_prod(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    /* d prod / dx_i = product of the others, exact with zeros: with no zero in the group it
     * is y / x_i; with one zero it is the product of the non-zeros at the zero, 0 elsewhere;
     * with two or more zeros it is 0. */
    arena a = {0};
    mp_tensor *x = IN(0);
    mp_tensor *zero = scalar(&a, x, 0.0), *one = scalar(&a, x, 1.0);
    mp_tensor *isz = bin(&a, MP_OP_EQUAL, x, zero);
    mp_tensor *nz = where(&a, isz, one, x);
    mp_attrs at = n->attrs;
    at.i0 = 1;
    mp_tensor *pnz = run(&a, MP_OP_PROD, 1, &nz, &at);
    mp_tensor *zc = NULL;
    if (isz) {
        mp_tensor *f = NULL;
        mp_status st_f = mp_cast(isz, x->dtype, &f);
        mp_tensor *iszf = keep(&a, st_f, f);
        zc = sum_axes(&a, iszf, at.n_ints, at.ints, 1);
    }
    mp_tensor *no_zero = bin(&a, MP_OP_EQUAL, zc, zero);
    mp_tensor *one_zero = bin(&a, MP_OP_EQUAL, zc, one);
    mp_tensor *others_nz = bin(&a, MP_OP_DIV, pnz, nz);                   /* case 0 */
    mp_tensor *at_zero = where(&a, isz, bcast_to(&a, pnz, x), zero);      /* case 1 */
    mp_tensor *others = where(&a, no_zero, others_nz, where(&a, one_zero, at_zero, zero));
    if ((dx[0] = bin(&a, MP_OP_MUL, bcast_to(&a, keepdims_shape(&a, n, dy), x), others)))
        out(dx[0]);
    return finish(&a);
}

/* ------------------------------------------------------------------ matmul, softmax */

static mp_tensor *mm(arena *a, mp_tensor *x, mp_tensor *y, int ta, int tb) {
    mp_tensor *in[2] = {x, y};
    mp_attrs at = {.i0 = ta, .i1 = tb};
    return run(a, MP_OP_MATMUL, 2, in, &at);
}

static mp_status g_matmul(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0};
    mp_tensor *A = IN(0), *B = IN(1);
    int ta = (int)n->attrs.i0, tb = (int)n->attrs.i1;
    if (need[0]) {
        mp_tensor *g = !ta ? (!tb ? mm(&a, dy, B, 0, 1) : mm(&a, dy, B, 0, 0))
                           : (!tb ? mm(&a, B, dy, 0, 1) : mm(&a, B, dy, 1, 1));
        if ((dx[0] = unbroadcast(&a, g, A)))
            out(dx[0]);
    }
    if (need[1]) {
        mp_tensor *g = !ta ? (!tb ? mm(&a, A, dy, 1, 0) : mm(&a, dy, A, 1, 0))
                           : (!tb ? mm(&a, A, dy, 0, 0) : mm(&a, dy, A, 1, 1));
        if ((dx[1] = unbroadcast(&a, g, B)))
            out(dx[1]);
    }
    return finish(&a);
}

/* MatMul + bias (+ ReLU): dz = ReluGrad(y, dy), then MatMul's rule on dz, the bias a column
 * sum of dz (TensorFlow's _FusedMatMul gradient) */
static mp_status g_matmul_bias_act(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0};
    mp_tensor *dz = n->attrs.i2 ? bin(&a, MP_OP_RELU_GRAD, Y, dy) : dy;
    if (dz && (need[0] || need[1]))
        a.st = g_matmul(n, dz, need, dx);
    if (need[2]) {
        static const int64_t rows[1] = {0};
        mp_tensor *r = sum_axes(&a, dz, 1, rows, 0);
        if (r)
            dx[2] = out(r);
    }
    mp_status st = finish(&a);
    if (st != MP_OK)
        for (int i = 0; i < 2; i++)
            if (dx[i]) {
                mp_tensor_decref(dx[i]);
                dx[i] = NULL;
            }
    return st;
}

static mp_status g_softmax(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0}; /* (dy - sum(dy*y, -1)) * y */
    int64_t last = Y->ndim - 1;
    mp_tensor *s = sum_axes(&a, bin(&a, MP_OP_MUL, dy, Y), 1, &last, 1);
    if ((dx[0] = bin(&a, MP_OP_MUL, bin(&a, MP_OP_SUB, dy, s), Y)))
        out(dx[0]);
    return finish(&a);
}
static mp_status g_log_softmax(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0}; /* dy - exp(y) * sum(dy, -1) */
    int64_t last = Y->ndim - 1;
    mp_tensor *s = sum_axes(&a, dy, 1, &last, 1);
    if ((dx[0] = bin(&a, MP_OP_SUB, dy, bin(&a, MP_OP_MUL, un(&a, MP_OP_EXP, Y), s))))
        out(dx[0]);
    return finish(&a);
}

/* d(loss)/d(logits) = (softmax(logits) - labels) * dloss; for dense labels also
 * d(loss)/d(labels) = -log_softmax(logits) * dloss (TensorFlow differentiates both). */
static mp_status g_xent(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0};
    mp_tensor *logits = IN(0);
    int64_t ks[MP_MAX_DIMS];
    for (int d = 0; d < dy->ndim; d++)
        ks[d] = dy->shape[d];
    ks[dy->ndim] = 1;
    mp_tensor *dyk = reshape(&a, dy, dy->ndim + 1, ks);
    if (need[0]) {
        mp_tensor *p = un(&a, MP_OP_SOFTMAX, logits), *target = IN(1);
        if (n->op == MP_OP_SPARSE_SOFTMAX_XENT && a.st == MP_OK) {
            mp_attrs oh = {.i0 = logits->shape[logits->ndim - 1], .f0 = 1.0, .f1 = 0.0, .dtype = logits->dtype};
            target = run(&a, MP_OP_ONE_HOT, 1, &IN(1), &oh);
        }
        if ((dx[0] = bin(&a, MP_OP_MUL, bin(&a, MP_OP_SUB, p, target), dyk)))
            out(dx[0]);
    }
    if (n->op == MP_OP_SOFTMAX_XENT && need[1] &&
        (dx[1] = bin(&a, MP_OP_MUL, un(&a, MP_OP_NEG, un(&a, MP_OP_LOG_SOFTMAX, logits)), dyk)))
        out(dx[1]);
    return finish(&a);
}

/* ------------------------------------------------------------------ layout */

static mp_status g_reshape(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    return mp_reshape(dy, IN(0)->ndim, IN(0)->shape, &dx[0]);
}
static mp_status g_transpose(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    mp_attrs at = {.n_ints = n->attrs.n_ints};
    for (int d = 0; d < n->attrs.n_ints; d++)
        at.ints[n->attrs.ints[d]] = d;
    return mp_op_run(MP_OP_TRANSPOSE, 1, &dy, &at, &dx[0]);
}
static mp_status g_broadcast_to(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0};
    if ((dx[0] = unbroadcast(&a, dy, IN(0))))
        out(dx[0]);
    return finish(&a);
}

/* the slice of dy that input k of a concat/stack came from */
static mp_status slice_of(mp_tensor *dy, int axis, int64_t begin, int64_t count, int shrink, mp_tensor **out_t) {
    mp_attrs at = {.n_ints = dy->ndim};
    for (int d = 0; d < dy->ndim; d++) {
        at.ints[d] = d == axis ? begin : 0;
        at.ints2[d] = d == axis ? count : dy->shape[d];
        at.ints3[d] = 1;
    }
    if (shrink)
        at.i0 = (int64_t)1 << axis;
    return mp_op_run(MP_OP_STRIDED_SLICE, 1, &dy, &at, out_t);
}
static mp_status g_concat(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    int axis = (int)n->attrs.i0;
    int64_t off = 0;
    for (int k = 0; k < n->n_in; k++) {
        int64_t c = IN(k)->shape[axis];
        if (need[k])
            MP_TRY(slice_of(dy, axis, off, c, 0, &dx[k]));
        off += c;
    }
    return MP_OK;
}
static mp_status g_stack(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    int axis = (int)n->attrs.i0;
    for (int k = 0; k < n->n_in; k++)
        if (need[k])
            MP_TRY(slice_of(dy, axis, k, 1, 1, &dx[k]));
    return MP_OK;
}
static mp_status g_strided_slice(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    mp_attrs at = n->attrs;
    memcpy(at.ints4, IN(0)->shape, sizeof(int64_t) * (size_t)IN(0)->ndim);
    return mp_op_run(MP_OP_STRIDED_SLICE_GRAD, 1, &dy, &at, &dx[0]);
}
static mp_status g_strided_slice_grad(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    return mp_op_run(MP_OP_STRIDED_SLICE, 1, &dy, &n->attrs, &dx[0]);
}

/* x[i] with a tensor i: dy into row i of zeros, from ops (the index is not read here, so
 * a traced backward replays for another i): where(range(n) == i mod n, dy, 0). */
static mp_status g_index_t(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    if (!need[0])
        return MP_OK;
    arena a = {0};
    mp_tensor *x = IN(0), *i = IN(1);
    int64_t rows = x->shape[0];
    mp_attrs ra = {.dtype = i->dtype, .device = mp_tensor_device(i), .i0 = rows, .f0 = 0.0, .f1 = 1.0};
    mp_tensor *r = run(&a, MP_OP_RANGE, 0, NULL, &ra);
    int64_t col[MP_MAX_DIMS], lead[MP_MAX_DIMS];
    col[0] = rows;
    lead[0] = 1;
    for (int d = 1; d < x->ndim; d++) {
        col[d] = 1;
        lead[d] = x->shape[d];
    }
    mp_tensor *zero_i = scalar(&a, i, 0.0);
    mp_tensor *wrapped = where(&a, bin(&a, MP_OP_LESS, i, zero_i), bin(&a, MP_OP_ADD, i, scalar(&a, i, (double)rows)), i);
    mp_tensor *mask = bin(&a, MP_OP_EQUAL, reshape(&a, r, x->ndim, col), wrapped);
    if ((dx[0] = where(&a, mask, reshape(&a, dy, x->ndim, lead), scalar(&a, dy, 0.0))))
        out(dx[0]);
    return finish(&a);
}

/* tensor-bound slices: dy into zeros of x's shape at the slice its spec tensors give at
 * run time (the spec is an input of the gradient op, not read here, so a traced backward
 * replays for other bounds); the gradient's adjoint is the slice again. */
static mp_status g_strided_slice_t(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    if (!need[0])
        return MP_OK;
    mp_tensor *in[5] = {dy, IN(0), IN(1), IN(2), IN(3)};
    mp_attrs at = n->attrs;
    at.ints[5] = 0;
    return mp_op_run(MP_OP_STRIDED_SLICE_T_GRAD, 5, in, &at, &dx[0]);
}
static mp_status g_slice_t(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    if (!need[0])
        return MP_OK;
    mp_tensor *in[4] = {dy, IN(0), IN(1), IN(2)};
    mp_attrs at = {.n_ints = 6};
    at.ints[5] = 1;
    return mp_op_run(MP_OP_STRIDED_SLICE_T_GRAD, 4, in, &at, &dx[0]);
}
static mp_status g_strided_slice_t_grad(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    if (!need[0])
        return MP_OK;
    if (n->attrs.ints[5] == 1) {
        mp_tensor *in[3] = {dy, IN(2), IN(3)};
        return mp_op_run(MP_OP_SLICE_T, 3, in, NULL, &dx[0]);
    }
    mp_tensor *in[4] = {dy, IN(2), IN(3), IN(4)};
    return mp_op_run(MP_OP_STRIDED_SLICE_T, 4, in, &n->attrs, &dx[0]);
}

/* tf.gather: dy's slices summed into zeros of params' shape (dense; TensorFlow's
 * IndexedSlices made dense), an op that reads the indices at every run. */
static mp_status g_gather(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    if (!need[0])
        return MP_OK;
    mp_tensor *in[2] = {dy, IN(1)};
    int64_t axis = n->attrs.i0 < 0 ? n->attrs.i0 + IN(0)->ndim : n->attrs.i0;
    mp_attrs at = {.i0 = axis, .i1 = IN(0)->shape[axis]};
    return mp_op_run(MP_OP_GATHER_GRAD, 2, in, &at, &dx[0]);
}
/* the scatter-add's adjoint is the gather of the same indices */
static mp_status g_gather_grad(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    if (!need[0])
        return MP_OK;
    mp_tensor *in[2] = {dy, IN(1)};
    mp_attrs at = {.i0 = n->attrs.i0};
    return mp_op_run(MP_OP_GATHER, 2, in, &at, &dx[0]);
}

/* cumsum: the running sums of dy taken the other way (same exclusive) */
static mp_status g_cumsum(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    if (!need[0])
        return MP_OK;
    mp_attrs at = n->attrs;
    at.i2 = !n->attrs.i2;
    return mp_op_run(MP_OP_CUMSUM, 1, &dy, &at, &dx[0]);
}

/* ------------------------------------------------------------------ table */

typedef mp_status (*grad_fn)(const mp_node *, mp_tensor *, const int *, mp_tensor **);

/* One entry per op; NULL = not differentiable (never recorded). */

/* MatrixInverse (TensorFlow's rule): y = x^-1: dx = -y^T dy y^T; adjoint (y = x^-H):
 * dx = -y dy^T y. Built from MatMul, so it differentiates again. */
static mp_status g_matrix_inverse(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0};
    int adj = (int)n->attrs.i0;
    mp_tensor *g = adj ? mm(&a, Y, mm(&a, dy, Y, 1, 0), 0, 0) : mm(&a, Y, mm(&a, dy, Y, 0, 1), 1, 0);
    if ((dx[0] = un(&a, MP_OP_NEG, g)))
        out(dx[0]);
    return finish(&a);
}

/* MatrixDeterminant (TensorFlow's rule): dx = (dy det(x))[..., None, None] x^-T. */
static mp_status g_matrix_determinant(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0};
    mp_tensor *x = IN(0);
    int64_t shape[MP_MAX_DIMS];
    for (int i = 0; i < x->ndim - 2; i++)
        shape[i] = x->shape[i];
    shape[x->ndim - 2] = shape[x->ndim - 1] = 1;
    mp_attrs adj = {.i0 = 1};
    mp_tensor *s = reshape(&a, bin(&a, MP_OP_MUL, dy, Y), x->ndim, shape);
    if ((dx[0] = bin(&a, MP_OP_MUL, s, run(&a, MP_OP_MATRIX_INVERSE, 1, &x, &adj))))
        out(dx[0]);
    return finish(&a);
}


#define GRAD_CAST g_cast
#define GRAD_IDENTITY g_identity
#define GRAD_STOP_GRADIENT NULL
#define GRAD_NEG g_neg
#define GRAD_ABS g_abs
#define GRAD_EXP g_exp
#define GRAD_LOG g_log
#define GRAD_SQRT g_sqrt
#define GRAD_SQUARE g_square
#define GRAD_RELU g_relu
#define GRAD_SIGMOID g_sigmoid
#define GRAD_TANH g_tanh
#define GRAD_RSQRT g_rsqrt
#define GRAD_RECIPROCAL g_reciprocal
#define GRAD_FLOOR NULL
#define GRAD_CEIL NULL
#define GRAD_ROUND NULL
#define GRAD_SIGN g_zeros
#define GRAD_LOG1P g_log1p
#define GRAD_EXPM1 g_expm1
#define GRAD_ELU g_elu
#define GRAD_SOFTPLUS g_softplus
#define GRAD_GELU g_gelu
#define GRAD_SIN g_sin
#define GRAD_COS g_cos
#define GRAD_IS_FINITE NULL
#define GRAD_IS_NAN NULL
#define GRAD_IS_INF NULL
#define GRAD_LOGICAL_NOT NULL
#define GRAD_LEAKY_RELU g_leaky_relu
#define GRAD_ADD g_add
#define GRAD_SUB g_sub
#define GRAD_MUL g_mul
#define GRAD_DIV g_div
#define GRAD_FLOORDIV NULL
#define GRAD_FLOORMOD g_floormod
#define GRAD_POW g_pow
#define GRAD_MAXIMUM g_maximum
#define GRAD_MINIMUM g_minimum
#define GRAD_SQUARED_DIFFERENCE g_squared_difference
#define GRAD_EQUAL NULL
#define GRAD_NOT_EQUAL NULL
#define GRAD_LESS NULL
#define GRAD_LESS_EQUAL NULL
#define GRAD_GREATER NULL
#define GRAD_GREATER_EQUAL NULL
#define GRAD_LOGICAL_AND NULL
#define GRAD_LOGICAL_OR NULL
#define GRAD_RELU_GRAD g_relu_grad
#define GRAD_SIGMOID_GRAD g_sigmoid_grad
#define GRAD_TANH_GRAD g_tanh_grad
#define GRAD_ELU_GRAD g_elu_grad
#define GRAD_SOFTPLUS_GRAD g_softplus_grad
#define GRAD_GELU_GRAD g_gelu_grad
#define GRAD_GELU_TANH_GRAD g_gelu_tanh_grad
#define GRAD_RSQRT_GRAD g_rsqrt_grad
#define GRAD_SQRT_GRAD g_sqrt_grad
#define GRAD_LEAKY_RELU_GRAD g_leaky_relu_grad
#define GRAD_WHERE g_where
#define GRAD_SUM g_sum
#define GRAD_MEAN g_mean
#define GRAD_MAX g_maxmin
#define GRAD_MIN g_maxmin
#define GRAD_PROD g_prod
#define GRAD_ALL NULL
#define GRAD_ANY NULL
#define GRAD_ARGMAX NULL
#define GRAD_ARGMIN NULL
/* ------------------------------------------------------------------ windows */

/* the same window attrs with ints4 = the shape the backprop op produces */
static mp_tensor *window(arena *a, mp_op op, mp_tensor *x, mp_tensor *y, const mp_node *n, const mp_tensor *shape_of) {
    mp_attrs at = n->attrs;
    if (shape_of)
        memcpy(at.ints4, shape_of->shape, 4 * sizeof(int64_t));
    mp_tensor *in[2] = {x, y};
    return run(a, op, mp_op_get_info(op)->n_inputs, in, &at);
}

/* Conv2D(x, f): dx = BackpropInput(f, dy), df = BackpropFilter(x, dy) */
static mp_status g_conv2d(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0};
    mp_tensor *x = n->inputs[0], *f = n->inputs[1];
    if (need[0]) {
        mp_tensor *r = window(&a, MP_OP_CONV2D_BACKPROP_INPUT, f, dy, n, x);
        if (r)
            dx[0] = out(r);
    }
    if (need[1]) {
        mp_tensor *r = window(&a, MP_OP_CONV2D_BACKPROP_FILTER, x, dy, n, f);
        if (r)
            dx[1] = out(r);
    }
    return finish(&a);
}

/* Conv2D + bias (+ ReLU), y = act(conv(x, f) + b): dz = ReluGrad(y, dy) (y > 0 exactly where
 * the pre-activation was), db = dz summed over all but the channel axis, dx and df as
 * Conv2D's from dz (TensorFlow's _FusedConv2D gradient). */
static mp_status g_conv2d_bias_act(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0};
    mp_tensor *x = n->inputs[0], *f = n->inputs[1];
    mp_tensor *dz = n->attrs.i2 ? bin(&a, MP_OP_RELU_GRAD, Y, dy) : dy;
    if (need[0]) {
        mp_tensor *r = window(&a, MP_OP_CONV2D_BACKPROP_INPUT, f, dz, n, x);
        if (r)
            dx[0] = out(r);
    }
    if (need[1]) {
        mp_tensor *r = window(&a, MP_OP_CONV2D_BACKPROP_FILTER, x, dz, n, f);
        if (r)
            dx[1] = out(r);
    }
    if (need[2]) {
        static const int64_t nhwc[3] = {0, 1, 2}, nchw[3] = {0, 2, 3};
        mp_tensor *r = sum_axes(&a, dz, 3, n->attrs.i0 ? nchw : nhwc, 0);
        if (r)
            dx[2] = out(r);
    }
    return finish(&a);
}

/* BackpropInput(f, g) is linear in each: df = BackpropFilter(dx, g), dg = Conv2D(dx, f) */
static mp_status g_conv2d_backprop_input(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0};
    mp_tensor *f = n->inputs[0], *g = n->inputs[1];
    if (need[0]) {
        mp_tensor *r = window(&a, MP_OP_CONV2D_BACKPROP_FILTER, dy, g, n, f);
        if (r)
            dx[0] = out(r);
    }
    if (need[1]) {
        mp_tensor *r = window(&a, MP_OP_CONV2D, dy, f, n, NULL);
        if (r)
            dx[1] = out(r);
    }
    return finish(&a);
}

/* BackpropFilter(x, g): dx = BackpropInput(df, g), dg = Conv2D(x, df) */
static mp_status g_conv2d_backprop_filter(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0};
    mp_tensor *x = n->inputs[0], *g = n->inputs[1];
    if (need[0]) {
        mp_tensor *r = window(&a, MP_OP_CONV2D_BACKPROP_INPUT, dy, g, n, x);
        if (r)
            dx[0] = out(r);
    }
    if (need[1]) {
        mp_tensor *r = window(&a, MP_OP_CONV2D, x, dy, n, NULL);
        if (r)
            dx[1] = out(r);
    }
    return finish(&a);
}

/* MaxPoolGrad(x, y, dy) with y this node's output: the argmax workspace MaxPool kept behind
 * y (ops_window.c) spares MaxPoolGrad finding the maxima again */
static mp_status g_max_pool(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0};
    (void)need;
    mp_attrs at = n->attrs;
    at.i2 = 0;
    mp_tensor *in[3] = {n->inputs[0], n->output, dy};
    mp_tensor *r = run(&a, MP_OP_MAX_POOL_GRAD, 3, in, &at);
    if (r)
        dx[0] = out(r);
    return finish(&a);
}

/* zeros shaped as t (the max positions do not move under small changes of x) */
static mp_tensor *zeros_as(arena *a, const mp_tensor *t) {
    if (a->st != MP_OK)
        return NULL;
    mp_tensor *r = NULL;
    mp_status st_ = mp_full(t->dtype, t->ndim, t->shape, 0.0, mp_tensor_device(t), &r);
    return keep(a, st_, r);
}

/* MaxPoolGrad(x, y, dy): linear in dy, adjoint MaxPoolGradGrad(x, g); x and y get zeros
 * (as TF). With ReLU's gradient fused (attr i2 = 1: ReluGrad(x, MaxPoolGrad(...))) the
 * adjoint masks g first: MaxPoolGradGrad(x, ReluGrad(x, g)). */
static mp_status g_max_pool_grad(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0};
    mp_tensor *r;
    if (need[0] && (r = zeros_as(&a, n->inputs[0])))
        dx[0] = out(r);
    if (need[1] && (r = zeros_as(&a, n->inputs[1])))
        dx[1] = out(r);
    mp_tensor *g = need[2] && n->attrs.i2 == 1 ? bin(&a, MP_OP_RELU_GRAD, n->inputs[0], dy) : dy;
    if (need[2] && g && (r = window(&a, MP_OP_MAX_POOL_GRAD_GRAD, n->inputs[0], g, n, NULL)))
        dx[2] = out(r);
    return finish(&a);
}

/* MaxPoolGradGrad(x, g): linear in g, adjoint MaxPoolGrad(x, MaxPool(x), dy); x gets zeros */
static mp_status g_max_pool_grad_grad(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0};
    mp_tensor *r;
    if (need[0] && (r = zeros_as(&a, n->inputs[0])))
        dx[0] = out(r);
    if (need[1]) {
        mp_attrs at = n->attrs;
        at.i2 = 0;
        mp_tensor *y = run(&a, MP_OP_MAX_POOL, 1, &n->inputs[0], &at);
        mp_tensor *in[3] = {n->inputs[0], y, dy};
        if (y && (r = run(&a, MP_OP_MAX_POOL_GRAD, 3, in, &at)))
            dx[1] = out(r);
    }
    return finish(&a);
}

static mp_status g_avg_pool(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0};
    mp_tensor *r = window(&a, MP_OP_AVG_POOL_GRAD, dy, NULL, n, n->inputs[0]);
    if (r)
        dx[0] = out(r);
    return finish(&a);
}

/* AvgPoolGrad is linear: its adjoint is AvgPool */
static mp_status g_avg_pool_grad(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0};
    mp_tensor *r = window(&a, MP_OP_AVG_POOL, dy, NULL, n, NULL);
    if (r)
        dx[0] = out(r);
    return finish(&a);
}

/* BatchNorm(x, scale, offset, mean, var) = x * A + offset - mean * A with A = scale * inv,
 * inv = rsqrt(var + eps): every input gets its gradient (training's batch statistics carry
 * theirs back into moments). Sums over the non-channel axes are in the statistics' dtype. */
static mp_tensor *cast_to(arena *a, mp_tensor *x, mp_dtype dt) {
    if (!x || x->dtype == dt)
        return x;
    mp_attrs at = {.dtype = (int)dt};
    return run(a, MP_OP_CAST, 1, &x, &at);
}

/* v (C) shaped to broadcast along x's channel axis (axis 1 when cf, else the last) */
static mp_tensor *chan(arena *a, mp_tensor *v, const mp_tensor *x, int cf) {
    int64_t bshape[MP_MAX_DIMS];
    int caxis = cf ? 1 : x->ndim - 1;
    for (int d = 0; d < x->ndim; d++)
        bshape[d] = d == caxis ? x->shape[d] : 1;
    return reshape(a, v, x->ndim, bshape);
}

/* row i (C) of a statistics tensor s holding 2 * C values */
static mp_tensor *row(arena *a, mp_tensor *s, int i) {
    if (a->st != MP_OK || !s)
        return NULL;
    int64_t C = s->numel / 2, two_c[2] = {2, C};
    mp_tensor *s2 = reshape(a, s, 2, two_c);
    mp_attrs at = {{0}};
    at.ints[0] = i, at.ints2[0] = 1, at.ints3[0] = 1;
    at.ints[1] = 0, at.ints2[1] = C, at.ints3[1] = 1;
    at.n_ints = 2;
    at.i0 = 1; /* drop the row axis */
    return run(a, MP_OP_STRIDED_SLICE, 1, &s2, &at);
}

/* [r0; r1] as a (2, C) tensor shaped like `like` */
static mp_tensor *rows2(arena *a, mp_tensor *r0, mp_tensor *r1, const mp_tensor *like) {
    mp_tensor *in[2] = {r0, r1};
    mp_attrs at = {.i0 = 0};
    return reshape(a, run(a, MP_OP_STACK, 2, in, &at), like->ndim, like->shape);
}

static mp_tensor *stats_op(arena *a, mp_op op, mp_tensor *x, mp_tensor *y, mp_tensor *z, int cf) {
    mp_tensor *in[3] = {x, y, z};
    mp_attrs at = {.i0 = cf};
    return run(a, op, mp_op_get_info(op)->n_inputs, in, &at);
}

/* BatchNorm(x, scale, offset, mean, var) = x * A + offset - mean * A with A = scale * inv,
 * inv = rsqrt(var + eps): every input gets its gradient (training's batch statistics carry
 * theirs back into moments). dx = dy * A is one pass; the four per-channel gradients come
 * from one more (BatchNormGradSums: sum dy and sum dy (x - mean), in float64). */
static mp_status g_batch_norm(const mp_node *n, mp_tensor *dy_in, const int *need, mp_tensor **dx) {
    arena a = {0};
    mp_tensor *x = IN(0), *scale = IN(1), *mean = IN(3), *var = IN(4);
    /* BatchNorm + ReLU (attr i2): ReluGrad from the output first, as Relu's rule */
    mp_tensor *dy = n->attrs.i2 ? bin(&a, MP_OP_RELU_GRAD, Y, dy_in) : dy_in;
    int cf = n->attrs.i0 != 0;
    mp_tensor *inv = un(&a, MP_OP_RSQRT, bin(&a, MP_OP_ADD, var, scalar(&a, var, n->attrs.f0)));
    mp_tensor *A = bin(&a, MP_OP_MUL, scale, inv);
    if (need[0]) {
        mp_tensor *r = bin(&a, MP_OP_MUL, dy, cast_to(&a, chan(&a, A, x, cf), x->dtype));
        if (r)
            dx[0] = out(r);
    }
    if (need[1] || need[2] || need[3] || need[4]) {
        mp_tensor *sums = stats_op(&a, MP_OP_BATCH_NORM_GRAD_SUMS, x, dy, mean, cf);
        mp_tensor *sdy = row(&a, sums, 0), *sxy = row(&a, sums, 1), *r;
        if (need[1] && (r = bin(&a, MP_OP_MUL, sxy, inv)))
            dx[1] = out(r);
        if (need[2] && sdy)
            dx[2] = out(sdy);
        if (need[3] && (r = un(&a, MP_OP_NEG, bin(&a, MP_OP_MUL, sdy, A))))
            dx[3] = out(r);
        if (need[4] && (r = bin(&a, MP_OP_MUL, bin(&a, MP_OP_MUL, sxy, A),
                                bin(&a, MP_OP_MUL, bin(&a, MP_OP_MUL, inv, inv), scalar(&a, var, -0.5)))))
            dx[4] = out(r);
    }
    return finish(&a);
}

/* BatchMoments(x) = [mean, var]: dx = (g[0] + 2 g[1] (x - mean)) / N in one pass */
static mp_status g_batch_moments(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0};
    mp_tensor *r = stats_op(&a, MP_OP_BATCH_MOMENTS_GRAD, IN(0), Y, dy, n->attrs.i0 != 0);
    if (r)
        dx[0] = out(r);
    return finish(&a);
}

/* BatchMomentsGrad(x, stats, g) = (g0 + 2 g1 (x - m)) / N (m = stats[0]), incoming h:
 * dx = 2 g1 h / N, dstats = [-2 g1 sum(h) / N, 0], dg = [sum h, 2 sum h (x - m)] / N */
static mp_status g_batch_moments_grad(const mp_node *n, mp_tensor *h, const int *need, mp_tensor **dx) {
    arena a = {0};
    mp_tensor *x = IN(0), *stats = IN(1), *g = IN(2);
    int cf = n->attrs.i0 != 0;
    int64_t C = stats->numel / 2;
    double N = C ? (double)x->numel / (double)C : 1.0;
    mp_tensor *g1 = row(&a, g, 1);
    mp_tensor *sums = (need[1] || need[2]) ? stats_op(&a, MP_OP_BATCH_NORM_GRAD_SUMS, x, h, row(&a, stats, 0), cf)
                                           : NULL;
    mp_tensor *r;
    if (need[0] && (r = bin(&a, MP_OP_MUL, h,
                            cast_to(&a, chan(&a, bin(&a, MP_OP_MUL, g1, scalar(&a, g1, 2.0 / N)), x, cf), x->dtype))))
        dx[0] = out(r);
    if (need[1]) {
        mp_tensor *d0 = bin(&a, MP_OP_MUL, bin(&a, MP_OP_MUL, g1, row(&a, sums, 0)), scalar(&a, g1, -2.0 / N));
        if ((r = rows2(&a, d0, bin(&a, MP_OP_MUL, d0, scalar(&a, g1, 0.0)), stats)))
            dx[1] = out(r);
    }
    if (need[2] && (r = rows2(&a, bin(&a, MP_OP_MUL, row(&a, sums, 0), scalar(&a, g1, 1.0 / N)),
                              bin(&a, MP_OP_MUL, row(&a, sums, 1), scalar(&a, g1, 2.0 / N)), g)))
        dx[2] = out(r);
    return finish(&a);
}

/* BatchNormGradSums(x, dy, m) = [sum dy, sum dy (x - m)], incoming G = [g0, g1]:
 * dx = g1 dy, ddy = g0 + g1 (x - m), dm = -g1 sum(dy) */
static mp_status g_batch_norm_grad_sums(const mp_node *n, mp_tensor *G, const int *need, mp_tensor **dx) {
    arena a = {0};
    mp_tensor *x = IN(0), *dyi = IN(1), *m = IN(2);
    int cf = n->attrs.i0 != 0;
    mp_dtype sdt = m->dtype;
    mp_tensor *g0 = row(&a, G, 0), *g1 = row(&a, G, 1), *r;
    if (need[0] && (r = bin(&a, MP_OP_MUL, dyi, cast_to(&a, chan(&a, g1, x, cf), x->dtype))))
        dx[0] = out(r);
    if (need[1]) {
        mp_tensor *xc = bin(&a, MP_OP_SUB, cast_to(&a, x, sdt), chan(&a, m, x, cf));
        r = cast_to(&a, bin(&a, MP_OP_ADD, chan(&a, g0, x, cf), bin(&a, MP_OP_MUL, xc, chan(&a, g1, x, cf))),
                    x->dtype);
        if (r)
            dx[1] = out(r);
    }
    if (need[2] && (r = un(&a, MP_OP_NEG, bin(&a, MP_OP_MUL, g1, row(&a, Y, 0)))))
        dx[2] = out(r);
    return finish(&a);
}

#define GRAD_BATCH_NORM g_batch_norm
#define GRAD_CONV2D g_conv2d
#define GRAD_CONV2D_BACKPROP_INPUT g_conv2d_backprop_input
#define GRAD_CONV2D_BACKPROP_FILTER g_conv2d_backprop_filter
#define GRAD_MAX_POOL g_max_pool
#define GRAD_MAX_POOL_GRAD g_max_pool_grad
#define GRAD_MAX_POOL_GRAD_GRAD g_max_pool_grad_grad
#define GRAD_AVG_POOL g_avg_pool
#define GRAD_AVG_POOL_GRAD g_avg_pool_grad
#define GRAD_MATMUL g_matmul
#define GRAD_SOFTMAX g_softmax
#define GRAD_LOG_SOFTMAX g_log_softmax
#define GRAD_RESHAPE g_reshape
#define GRAD_TRANSPOSE g_transpose
#define GRAD_CONCAT g_concat
#define GRAD_STACK g_stack
#define GRAD_STRIDED_SLICE g_strided_slice
#define GRAD_BROADCAST_TO g_broadcast_to
#define GRAD_STRIDED_SLICE_GRAD g_strided_slice_grad
#define GRAD_FILL NULL
#define GRAD_RANGE NULL
#define GRAD_SHAPE NULL
#define GRAD_RANGE_T NULL
#define GRAD_INDEX_T g_index_t
#define GRAD_GATHER g_gather
#define GRAD_GATHER_GRAD g_gather_grad
#define GRAD_CUMSUM g_cumsum
#define GRAD_STRIDED_SLICE_T g_strided_slice_t
#define GRAD_SLICE_T g_slice_t
#define GRAD_STRIDED_SLICE_T_GRAD g_strided_slice_t_grad
#define GRAD_MATRIX_INVERSE g_matrix_inverse
#define GRAD_MATRIX_DETERMINANT g_matrix_determinant
#define GRAD_ONE_HOT NULL
#define GRAD_RANDOM_UNIFORM NULL
#define GRAD_RANDOM_NORMAL NULL
#define GRAD_TRUNCATED_NORMAL NULL
#define GRAD_SPARSE_SOFTMAX_XENT g_xent
#define GRAD_SOFTMAX_XENT g_xent
#define GRAD_CONV2D_BIAS_ACT g_conv2d_bias_act
#define GRAD_BATCH_MOMENTS g_batch_moments
#define GRAD_MATMUL_BIAS_ACT g_matmul_bias_act
#define GRAD_BATCH_MOMENTS_GRAD g_batch_moments_grad
#define GRAD_BATCH_NORM_GRAD_SUMS g_batch_norm_grad_sums
#define GRAD_ALL_REDUCE g_all_reduce
/* tf.math (grad_math.c) */
#define GRAD_TAN mp_g_tan
#define GRAD_ASIN mp_g_asin
#define GRAD_ACOS mp_g_acos
#define GRAD_ATAN mp_g_atan
#define GRAD_SINH mp_g_sinh
#define GRAD_COSH mp_g_cosh
#define GRAD_ASINH mp_g_asinh
#define GRAD_ACOSH mp_g_acosh
#define GRAD_ATANH mp_g_atanh
#define GRAD_ERF mp_g_erf
#define GRAD_ERFC mp_g_erfc
#define GRAD_ERFINV mp_g_erfinv
#define GRAD_NDTRI mp_g_ndtri
#define GRAD_LGAMMA mp_g_lgamma
#define GRAD_DIGAMMA mp_g_digamma
#define GRAD_SOFTSIGN mp_g_softsign
#define GRAD_SELU mp_g_selu
#define GRAD_ATAN2 mp_g_atan2
#define GRAD_TRUNCATEDIV NULL
#define GRAD_TRUNCATEMOD NULL
#define GRAD_XLOGY mp_g_xlogy
#define GRAD_XDIVY mp_g_xdivy
#define GRAD_XLOG1PY mp_g_xlog1py
#define GRAD_DIV_NO_NAN mp_g_div_no_nan
#define GRAD_MUL_NO_NAN mp_g_mul_no_nan
#define GRAD_NEXTAFTER mp_g_nextafter
#define GRAD_IGAMMA mp_g_igamma
#define GRAD_IGAMMAC mp_g_igammac
#define GRAD_ZETA mp_g_zeta
#define GRAD_POLYGAMMA mp_g_polygamma
#define GRAD_CUMPROD mp_g_cumprod
#define GRAD_CUMULATIVE_LOGSUMEXP mp_g_cumulative_logsumexp
#define GRAD_SEGMENT_REDUCE mp_g_segment_reduce
#define GRAD_BESSEL_I0 mp_g_bessel_i0
#define GRAD_BESSEL_I0E mp_g_bessel_i0e
#define GRAD_BESSEL_I1 mp_g_bessel_i1
#define GRAD_BESSEL_I1E mp_g_bessel_i1e
#define GRAD_IGAMMA_GRAD_A NULL
#define GRAD_GATHER_ND mp_grad_gather_nd
#define GRAD_TENSOR_SCATTER_UPDATE mp_grad_tensor_scatter
#define GRAD_TENSOR_SCATTER_ADD mp_grad_tensor_scatter
#define GRAD_TENSOR_SCATTER_SUB mp_grad_tensor_scatter
#define GRAD_TENSOR_SCATTER_MIN mp_grad_tensor_scatter
#define GRAD_TENSOR_SCATTER_MAX mp_grad_tensor_scatter
#define GRAD_TOP_K NULL
#define GRAD_UNIQUE NULL
#define GRAD_WHERE_INDICES NULL
#define GRAD_IMAGE_PROJECTIVE_TRANSFORM mp_grad_image_transform
#define GRAD_REVERSE mp_grad_permute
#define GRAD_ROLL mp_grad_permute
#define GRAD_CHOLESKY mp_grad_cholesky
#define GRAD_MATRIX_TRIANGULAR_SOLVE mp_grad_matrix_triangular_solve
#define GRAD_MATRIX_SOLVE mp_grad_matrix_solve
#define GRAD_QR mp_grad_qr
#define GRAD_SELF_ADJOINT_EIG mp_grad_self_adjoint_eig
#define GRAD_SVD mp_grad_svd
#define GRAD_LOG_MATRIX_DETERMINANT mp_grad_log_matrix_determinant
#define GRAD_MATRIX_BAND_PART mp_grad_matrix_band_part
#define GRAD_LU NULL

static const grad_fn rules[MP_OP_COUNT] = {
#define MP_OP(NAME, tfname, pyname, nin, amp, family, kind) [MP_OP_##NAME] = GRAD_##NAME,
#include "ops.def"
#undef MP_OP
};

int mp_grad_is_differentiable(mp_op op) { return (int)op >= 0 && op < MP_OP_COUNT && rules[op] != NULL; }

mp_status mp_grad_apply(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    if (!mp_grad_is_differentiable(n->op))
        return MP_OK;
    if (dy->dtype != n->output->dtype) { /* should not happen: accumulate keeps dtypes */
        mp_tensor *c;
        MP_TRY(mp_cast(dy, n->output->dtype, &c));
        mp_status st = rules[n->op](n, c, need, dx);
        mp_tensor_decref(c);
        return st;
    }
    return rules[n->op](n, dy, need, dx);
}
