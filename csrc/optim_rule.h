/* optim_rule.h — the per-element update rules (TensorFlow's ResourceApply* kernels and Keras
 * OptimizerV2: SGD with (Nesterov) momentum, RMSprop plain/momentum/centered, Adam/AMSGrad),
 * shared by the CPU backend (cpu_optim.c) and the CUDA kernel (cuda/optim_update.cu): one
 * definition, the same operations in the same order, so with FMA contraction off on both
 * sides the float32 results are the same bits.
 * The gradient arrives already multiplied by the step's factor (1 / loss scale). Slots, by
 * rule: SGD s0 = momentum (NULL: plain SGD); RMSprop s0 = ms, s1 = momentum (or NULL),
 * s2 = mg (centered, or NULL); Adam s0 = m, s1 = v, s2 = vhat (amsgrad, or NULL). */
#ifndef MP_OPTIM_RULE_H
#define MP_OPTIM_RULE_H
#include <math.h>

#include "mixprec.h"
#include "mp_hd.h"

/* The step's constants; lr is the step's rate (Adam's bias-corrected lr_t). */
typedef struct mp_optim_rule {
    int kind, nesterov;
    double lr, momentum, rho, epsilon, beta_1, beta_2;
} mp_optim_rule;

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

/* float32 (and 16-bit, widened) variables, float32 slots, float32 arithmetic. Constants
 * such as 1 - beta_2 are formed in double and rounded once, as tf-keras (Python floats):
 * 1 - 0.999 is 0.001f, where 1.0f - 0.999f would be 0.00099998713 (1.3e-5 off). For
 * Adam, r->lr is already mp_adam_alpha_f32. */
MP_HD void mp_optim_rule_f32(const mp_optim_rule *r, float *w, float g, float *s0, float *s1, float *s2) {
    const float lr = (float)r->lr;
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
    default: break;
    }
}

/* float64 variables: the same rules in double, on float64 slots (as TensorFlow). */
MP_HD void mp_optim_rule_f64(const mp_optim_rule *r, double *w, double g, double *s0, double *s1, double *s2) {
    const double lr = r->lr;
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
    default: break;
    }
}

#endif
