/* optim_rule.h — the per-element update rules (tf-keras 2.21's optimizers: SGD with (Nesterov)
 * momentum, RMSprop plain/momentum/centered, Adam/AMSGrad, Adagrad, Adadelta, Adamax, Nadam,
 * Ftrl, Lion, and the decoupled weight decay any of them may apply first),
 * shared by the CPU backend (cpu_optim.c) and the CUDA kernel (cuda/optim_update.cu): one
 * definition, the same operations in the same order, so with FMA contraction off on both
 * sides the float32 results are the same bits.
 * The gradient arrives already multiplied by the step's factor (1 / loss scale). Slots, by
 * rule: SGD s0 = momentum (NULL: plain SGD); RMSprop s0 = ms, s1 = momentum (or NULL),
 * s2 = mg (centered, or NULL); Adam s0 = m, s1 = v, s2 = vhat (amsgrad, or NULL);
 * Adagrad s0 = accumulator; Adadelta s0 = accumulated_grad, s1 = accumulated_delta_var;
 * Adamax s0 = m, s1 = u; Nadam s0 = m, s1 = v; Ftrl s0 = accumulator, s1 = linear;
 * Lion s0 = m.
 * The new rules follow tf-keras 2.21's float32 graphs op for op: a Python float meeting a
 * float32 tensor is a float32 constant (1 - beta formed in double and rounded once), a
 * tf.cast(beta) tensor meeting 1.0 is a float32 subtraction (Nadam, Lion). */
#ifndef MP_OPTIM_RULE_H
#define MP_OPTIM_RULE_H
#include <math.h>

#include "mixprec.h"
#include "mp_hd.h"

/* The step's constants; lr is the step's rate (Adam's bias-corrected lr_t). */
typedef struct mp_optim_rule {
    int kind, nesterov;
    double lr, momentum, rho, epsilon, beta_1, beta_2;
    /* weight decay (decay: applied to this variable): w -= w * wd * wd_lr, first */
    int decay, eps_outside;
    double wd, wd_lr;
    /* per-step constants: Adamax 1 - beta_1^t (c0); Nadam u_t (c0), u_{t+1} (c1),
     * 1 - u_product_t (c2), 1 - u_product_{t+1} (c3), 1 - beta_2^t (c4); Ftrl -lr_power
     * (c0), l1 (c1), l2 + beta / (2 lr) (c2), 2 * l2_shrinkage (c3) */
    double c0, c1, c2, c3, c4;
} mp_optim_rule;

/* x^y for float32 operands, rounded once from double (powf differs between libm and CUDA). */
MP_HD float mp_optim_powf(float x, float y) { return (float)pow((double)x, (double)y); }

/* Nadam's per-step constants at step t (float32, as tf-keras forms them from float32
 * tensors): u_t, u_{t+1}, and u_product_t = u_product_{t-1} * u_t from the running
 * product `uprod` (NULL: u_product_{t-1} = 1). Fills c0..c4 of `r`. */
MP_HD float mp_nadam_consts(mp_optim_rule *r, double beta_1, double beta_2, double sd, int64_t t,
                            const float *uprod) {
    const float b1 = (float)beta_1, ft = (float)sd * (float)t, ft1 = (float)sd * (float)(t + 1);
    const float ut = b1 * (1.0f - 0.5f * mp_optim_powf(0.96f, ft));
    const float ut1 = b1 * (1.0f - 0.5f * mp_optim_powf(0.96f, ft1));
    const float upt = (uprod ? *uprod : 1.0f) * ut;
    const float upt1 = upt * ut1;
    r->c0 = ut;
    r->c1 = ut1;
    r->c2 = 1.0f - upt;
    r->c3 = 1.0f - upt1;
    r->c4 = 1.0f - mp_optim_powf((float)beta_2, (float)t);
    return upt;
}

/* The same in double for float64 variables. */
MP_HD double mp_nadam_consts_f64(mp_optim_rule *r, double beta_1, double beta_2, double sd, int64_t t,
                                 double uprod) {
    const double ut = beta_1 * (1.0 - 0.5 * pow(0.96, sd * (double)t));
    const double ut1 = beta_1 * (1.0 - 0.5 * pow(0.96, sd * (double)(t + 1)));
    const double upt = uprod * ut;
    r->c0 = ut;
    r->c1 = ut1;
    r->c2 = 1.0 - upt;
    r->c3 = 1.0 - upt * ut1;
    r->c4 = 1.0 - pow(beta_2, (double)t);
    return upt;
}

MP_HD float mp_signf(float x) { return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x; /* 0 and NaN pass */ }
MP_HD double mp_sign(double x) { return x > 0.0 ? 1.0 : x < 0.0 ? -1.0 : x; }

/* The iteration count after `it` steps' end: int64 wraps past its maximum (as
 * TensorFlow's kernels do in practice) instead of overflowing, which C leaves undefined. */
MP_HD int64_t mp_next_iteration(int64_t it) { return (int64_t)((uint64_t)it + 1u); }

/* Adam's step size alpha = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t) for float32 variables,
 * formed as tf-keras 2.21's Adam forms it: in float32 (lr, beta powers of float32 betas at
 * the float32 step t). The powers are double pow rounded once (powf differs between libm
 * and CUDA; this is the correctly rounded value on both). float64 variables use the
 * double formula. */
MP_HD float mp_adam_alpha_f32(double lr, double beta_1, double beta_2, int64_t t) {
    const double ft = (double)(float)t;
    const float b1p = (float)pow((double)(float)beta_1, ft);
    const float b2p = (float)pow((double)(float)beta_2, ft);
    return (float)lr * sqrtf(1.0f - b2p) / (1.0f - b1p);
}

/* The step's rule for one variable dtype (f64: float64 variables, double constants; else
 * the float32 constants tf-keras forms): t = the step (iterations + 1); uprod: Nadam's running
 * product before this step (NULL: 1), its product after this step goes to *uprod_next.
 * `decay` is the variable's own and is set by the caller. */
MP_HD void mp_optim_rule_make(mp_optim_rule *r, int kind, const mp_optim_hparams *hp, int64_t t, int f64,
                              const float *uprod, float *uprod_next) {
    r->kind = kind;
    r->nesterov = hp->nesterov;
    r->lr = hp->lr;
    r->momentum = hp->momentum;
    r->rho = hp->rho;
    r->epsilon = hp->epsilon;
    r->beta_1 = hp->beta_1;
    r->beta_2 = hp->beta_2;
    r->decay = 0;
    r->eps_outside = hp->eps_outside;
    r->wd = hp->weight_decay;
    r->wd_lr = hp->lr;
    r->c0 = r->c1 = r->c2 = r->c3 = r->c4 = 0.0;
    switch (kind) {
    case MP_OPTIM_ADAM:
        r->lr = f64 ? hp->lr * sqrt(1.0 - pow(hp->beta_2, (double)t)) / (1.0 - pow(hp->beta_1, (double)t))
                    : (double)mp_adam_alpha_f32(hp->lr, hp->beta_1, hp->beta_2, t);
        break;
    case MP_OPTIM_ADAMAX:
        r->c0 = f64 ? 1.0 - pow(hp->beta_1, (double)t) : (double)(1.0f - mp_optim_powf((float)hp->beta_1, (float)t));
        break;
    case MP_OPTIM_NADAM:
        if (f64) {
            double up = mp_nadam_consts_f64(r, hp->beta_1, hp->beta_2, hp->schedule_decay, t, uprod ? (double)*uprod : 1.0);
            if (uprod_next)
                *uprod_next = (float)up;
        } else {
            float up = mp_nadam_consts(r, hp->beta_1, hp->beta_2, hp->schedule_decay, t, uprod);
            if (uprod_next)
                *uprod_next = up;
        }
        break;
    case MP_OPTIM_FTRL:
        if (f64) {
            r->c0 = -hp->lr_power;
            r->c1 = hp->l1;
            r->c2 = hp->l2 + hp->beta / (2.0 * hp->lr);
            r->c3 = 2.0 * hp->l2_shrinkage;
        } else { /* l2 + beta / (2.0 * lr): Python floats meeting the float32 rate */
            r->c0 = (float)-hp->lr_power;
            r->c1 = (float)hp->l1;
            r->c2 = (float)hp->l2 + (float)hp->beta / (2.0f * (float)hp->lr);
            r->c3 = (float)(2.0 * hp->l2_shrinkage);
        }
        break;
    default: break;
    }
}

/* float32 (and 16-bit, widened) variables, float32 slots, float32 arithmetic. Constants
 * such as 1 - beta_2 are formed in double and rounded once, as tf-keras (Python floats):
 * 1 - 0.999 is 0.001f, where 1.0f - 0.999f would be 0.00099998713 (1.3e-5 off). For
 * Adam, r->lr is already mp_adam_alpha_f32. */
MP_HD void mp_optim_rule_f32(const mp_optim_rule *r, float *w, float g, float *s0, float *s1, float *s2) {
    const float lr = (float)r->lr;
    if (r->decay) /* tf-keras: variable.assign_sub(variable * wd * lr), before the update */
        *w -= *w * (float)r->wd * (float)r->wd_lr;
    switch (r->kind) {
    case MP_OPTIM_SGD:
        if (!s0) {
            *w -= lr * g;
        } else {
            const float mom = (float)r->momentum;
            float v = mom * *s0 - lr * g;
            *s0 = v;
            *w = r->nesterov ? *w + (mom * v - lr * g) : *w + v; /* var += (m*mom - g*lr), as TF */
        }
        break;
    case MP_OPTIM_RMSPROP: {
        const float rho = (float)r->rho, omr = (float)(1.0 - r->rho), eps = (float)r->epsilon, mom = (float)r->momentum;
        float ms = rho * *s0 + omr * g * g;
        *s0 = ms;
        float denom = ms;
        if (s2) {
            float mg = rho * *s2 + omr * g;
            *s2 = mg;
            denom = ms - mg * mg;
        }
        /* tf-keras 2.21's RMSprop: epsilon inside the root on every path (OptimizerV2's
         * plain path put it outside) */
        if (s1) {
            float m = mom * *s1 + lr * g / sqrtf(denom + eps);
            *s1 = m;
            *w -= m;
        } else {
            *w -= lr * g / sqrtf(denom + eps);
        }
        break;
    }
    case MP_OPTIM_ADAM: {
        const float omb1 = (float)(1.0 - r->beta_1), omb2 = (float)(1.0 - r->beta_2);
        const float eps = (float)r->epsilon;
        float m = *s0 + (g - *s0) * omb1;
        float v = *s1 + (g * g - *s1) * omb2;
        *s0 = m;
        *s1 = v;
        float vv = v;
        if (s2) {
            vv = *s2 > v ? *s2 : v;
            *s2 = vv;
        }
        *w -= lr * m / (sqrtf(vv) + eps);
        break;
    }
    case MP_OPTIM_ADAGRAD: {
        float acc = *s0 + g * g;
        *s0 = acc;
        if (r->eps_outside) /* legacy: ResourceApplyAdagradV2 */
            *w -= lr * g / (sqrtf(acc) + (float)r->epsilon);
        else
            *w -= lr * g / sqrtf(acc + (float)r->epsilon);
        break;
    }
    case MP_OPTIM_ADADELTA: {
        const float rho = (float)r->rho, omr = (float)(1.0 - r->rho), eps = (float)r->epsilon;
        float ag = rho * *s0 + omr * g * g;
        *s0 = ag;
        float delta = -sqrtf(*s1 + eps) * g / sqrtf(ag + eps);
        *s1 = rho * *s1 + omr * delta * delta;
        *w += lr * delta;
        break;
    }
    case MP_OPTIM_ADAMAX: {
        const float omb1 = (float)(1.0 - r->beta_1), b2 = (float)r->beta_2;
        float m = *s0 + (g - *s0) * omb1;
        float u = b2 * *s1, ag = fabsf(g);
        u = (u > ag || u != u) ? u : ag; /* tf.maximum: a NaN on either side propagates */
        *s0 = m;
        *s1 = u;
        *w -= (lr * m) / ((float)r->c0 * (u + (float)r->epsilon));
        break;
    }
    case MP_OPTIM_NADAM: {
        const float b1 = (float)r->beta_1, b2 = (float)r->beta_2;
        float m = *s0 + (g - *s0) * (1.0f - b1);
        float v = *s1 + (g * g - *s1) * (1.0f - b2);
        *s0 = m;
        *s1 = v;
        float m_hat = (float)r->c1 * m / (float)r->c3 + (1.0f - (float)r->c0) * g / (float)r->c2;
        float v_hat = v / (float)r->c4;
        *w -= (m_hat * lr) / (sqrtf(v_hat) + (float)r->epsilon);
        break;
    }
    case MP_OPTIM_FTRL: {
        const float p = (float)r->c0, l1 = (float)r->c1;
        float gs = g + (float)r->c3 * *w;
        float acc = *s0, nacc = acc + g * g;
        float pn = mp_optim_powf(nacc, p);
        float lin = *s1 + (gs - (pn - mp_optim_powf(acc, p)) / lr * *w);
        *s1 = lin;
        float quad = pn / lr + 2.0f * (float)r->c2;
        float clipped = lin < -l1 ? -l1 : lin > l1 ? l1 : lin;
        *w = (clipped - lin) / quad;
        *s0 = nacc;
        break;
    }
    case MP_OPTIM_LION: {
        const float b1 = (float)r->beta_1, b2 = (float)r->beta_2;
        *w -= lr * mp_signf(*s0 * b1 + g * (1.0f - b1));
        *s0 = *s0 * b2 + g * (1.0f - b2);
        break;
    }
    default: break;
    }
}

/* float64 variables: the same rules in double, on float64 slots (as TensorFlow). */
MP_HD void mp_optim_rule_f64(const mp_optim_rule *r, double *w, double g, double *s0, double *s1, double *s2) {
    const double lr = r->lr;
    if (r->decay)
        *w -= *w * r->wd * r->wd_lr;
    switch (r->kind) {
    case MP_OPTIM_SGD:
        if (!s0) {
            *w -= lr * g;
        } else {
            double v = r->momentum * *s0 - lr * g;
            *s0 = v;
            *w = r->nesterov ? *w + (r->momentum * v - lr * g) : *w + v;
        }
        break;
    case MP_OPTIM_RMSPROP: {
        double ms = r->rho * *s0 + (1 - r->rho) * g * g, denom = ms;
        *s0 = ms;
        if (s2) {
            double mg = r->rho * *s2 + (1 - r->rho) * g;
            *s2 = mg;
            denom = ms - mg * mg;
        }
        if (s1) {
            double m = r->momentum * *s1 + lr * g / sqrt(denom + r->epsilon);
            *s1 = m;
            *w -= m;
        } else {
            *w -= lr * g / sqrt(denom + r->epsilon);
        }
        break;
    }
    case MP_OPTIM_ADAM: {
        double m = *s0 + (g - *s0) * (1 - r->beta_1);
        double v = *s1 + (g * g - *s1) * (1 - r->beta_2), vv = v;
        *s0 = m;
        *s1 = v;
        if (s2) {
            vv = *s2 > v ? *s2 : v;
            *s2 = vv;
        }
        *w -= lr * m / (sqrt(vv) + r->epsilon);
        break;
    }
    case MP_OPTIM_ADAGRAD: {
        double acc = *s0 + g * g;
        *s0 = acc;
        *w -= r->eps_outside ? lr * g / (sqrt(acc) + r->epsilon) : lr * g / sqrt(acc + r->epsilon);
        break;
    }
    case MP_OPTIM_ADADELTA: {
        double ag = r->rho * *s0 + (1 - r->rho) * g * g;
        *s0 = ag;
        double delta = -sqrt(*s1 + r->epsilon) * g / sqrt(ag + r->epsilon);
        *s1 = r->rho * *s1 + (1 - r->rho) * delta * delta;
        *w += lr * delta;
        break;
    }
    case MP_OPTIM_ADAMAX: {
        double m = *s0 + (g - *s0) * (1 - r->beta_1);
        double u = r->beta_2 * *s1, ag = fabs(g);
        u = (u > ag || u != u) ? u : ag;
        *s0 = m;
        *s1 = u;
        *w -= (lr * m) / (r->c0 * (u + r->epsilon));
        break;
    }
    case MP_OPTIM_NADAM: {
        double m = *s0 + (g - *s0) * (1 - r->beta_1);
        double v = *s1 + (g * g - *s1) * (1 - r->beta_2);
        *s0 = m;
        *s1 = v;
        double m_hat = r->c1 * m / r->c3 + (1 - r->c0) * g / r->c2;
        *w -= (m_hat * lr) / (sqrt(v / r->c4) + r->epsilon);
        break;
    }
    case MP_OPTIM_FTRL: {
        double gs = g + r->c3 * *w, acc = *s0, nacc = acc + g * g, pn = pow(nacc, r->c0);
        double lin = *s1 + (gs - (pn - pow(acc, r->c0)) / lr * *w);
        *s1 = lin;
        double quad = pn / lr + 2 * r->c2;
        double clipped = lin < -r->c1 ? -r->c1 : lin > r->c1 ? r->c1 : lin;
        *w = (clipped - lin) / quad;
        *s0 = nacc;
        break;
    }
    case MP_OPTIM_LION:
        *w -= lr * mp_sign(*s0 * r->beta_1 + g * (1 - r->beta_1));
        *s0 = *s0 * r->beta_2 + g * (1 - r->beta_2);
        break;
    default: break;
    }
}

#endif
