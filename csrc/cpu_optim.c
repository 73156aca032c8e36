/* cpu_optim.c — the CPU backend's training-step kernels: the non-finite check and the
 * fused optimizer updates (SGD, RMSprop, Adam) on float32 master weights.
 * One pass per variable reads the gradient (unscaling it on the fly), updates the slots
 * and the weight, and writes the 16-bit copy layers will read next, so nothing is read
 * twice. The rules are TensorFlow's (ResourceApply* kernels, Keras OptimizerV2). */
#include <math.h>
#include <string.h>

#include "cpu_kernels.h"

/* ------------------------------------------------------------------ finite check */

typedef struct {
    mp_dtype dt;
    const void *x;
    int bad; /* set by any worker that sees inf/NaN */
} fin_ctx;

static void finite_range(void *vctx, int64_t b, int64_t e) {
    fin_ctx *c = vctx;
    int bad = 0;
    switch (c->dt) {
    case MP_F32: {
        const uint32_t *p = c->x;
        for (int64_t i = b; i < e; i++)
            bad |= (p[i] & 0x7f800000u) == 0x7f800000u;
        break;
    }
    case MP_F16: {
        const uint16_t *p = c->x;
        for (int64_t i = b; i < e; i++)
            bad |= (p[i] & 0x7c00u) == 0x7c00u;
        break;
    }
    case MP_BF16: {
        const uint16_t *p = c->x;
        for (int64_t i = b; i < e; i++)
            bad |= (p[i] & 0x7f80u) == 0x7f80u;
        break;
    }
    case MP_F64: {
        const uint64_t *p = c->x;
        for (int64_t i = b; i < e; i++)
            bad |= (p[i] & 0x7ff0000000000000ull) == 0x7ff0000000000000ull;
        break;
    }
    default: break;
    }
    if (bad)
        __atomic_store_n(&c->bad, 1, __ATOMIC_RELAXED);
}

mp_status mp_cpu_all_finite(mp_device dev, mp_dtype dt, const void *x, int64_t n, int *finite) {
    (void)dev;
    fin_ctx c = {dt, x, 0};
    mp_parallel_for(n, MP_GRAIN * 8, finite_range, &c);
    *finite = !c.bad;
    return MP_OK;
}

/* ------------------------------------------------------------------ updates */

typedef struct {
    mp_optim_kind kind;
    const mp_optim_step *st;
    mp_dtype wdt;
    void *w;
    const void *g;
    void *s0, *s1, *s2; /* float32 slots; float64 for float64 variables */
    mp_dtype cdt;
    void *cache;
} upd_ctx;

/* The rule on float32 blocks: w, g are f32 copies (g already unscaled). */
static void rule_f32(const upd_ctx *c, float *w, const float *g, float *s0, float *s1, float *s2, int64_t n) {
    const mp_optim_hparams *hp = &c->st->hp;
    const float lr = (float)c->st->lr_t;
    switch (c->kind) {
    case MP_OPTIM_SGD:
        if (!s0) {
            for (int64_t i = 0; i < n; i++)
                w[i] -= lr * g[i];
        } else {
            const float mom = (float)hp->momentum;
            for (int64_t i = 0; i < n; i++) {
                float v = mom * s0[i] - lr * g[i];
                s0[i] = v;
                w[i] = hp->nesterov ? w[i] + mom * v - lr * g[i] : w[i] + v;
            }
        }
        break;
    case MP_OPTIM_RMSPROP: {
        const float rho = (float)hp->rho, omr = 1.0f - rho, eps = (float)hp->epsilon, mom = (float)hp->momentum;
        /* s0 = ms, s1 = momentum (or NULL), s2 = mg (centered, or NULL) */
        for (int64_t i = 0; i < n; i++) {
            float gi = g[i];
            float ms = rho * s0[i] + omr * gi * gi;
            s0[i] = ms;
            float denom = ms;
            if (s2) {
                float mg = rho * s2[i] + omr * gi;
                s2[i] = mg;
                denom = ms - mg * mg;
            }
            if (s1) { /* ResourceApply(Centered)RMSProp: epsilon inside the root */
                float m = mom * s1[i] + lr * gi / sqrtf(denom + eps);
                s1[i] = m;
                w[i] -= m;
            } else { /* Keras' plain path: epsilon outside the root */
                w[i] -= lr * gi / (sqrtf(denom) + eps);
            }
        }
        break;
    }
    case MP_OPTIM_ADAM: {
        const float b1 = (float)hp->beta_1, b2 = (float)hp->beta_2, eps = (float)hp->epsilon;
        /* s0 = m, s1 = v, s2 = vhat (amsgrad) */
        for (int64_t i = 0; i < n; i++) {
            float gi = g[i];
            float m = s0[i] + (gi - s0[i]) * (1.0f - b1);
            float v = s1[i] + (gi * gi - s1[i]) * (1.0f - b2);
            s0[i] = m;
            s1[i] = v;
            float vv = v;
            if (s2) {
                vv = s2[i] > v ? s2[i] : v;
                s2[i] = vv;
            }
            w[i] -= lr * m / (sqrtf(vv) + eps);
        }
        break;
    }
    default: break;
    }
}

static void rule_f64(const upd_ctx *c, double *w, const double *g, double *s0, double *s1, double *s2, int64_t n) {
    /* float64 variables: the same rules in double, on float64 slots (as TensorFlow) */
    const mp_optim_hparams *hp = &c->st->hp;
    const double lr = c->st->lr_t, gs = c->st->grad_scale;
    for (int64_t i = 0; i < n; i++) {
        double gi = g[i] * gs;
        switch (c->kind) {
        case MP_OPTIM_SGD:
            if (!s0) {
                w[i] -= lr * gi;
            } else {
                double v = hp->momentum * s0[i] - lr * gi;
                s0[i] = v;
                w[i] = hp->nesterov ? w[i] + hp->momentum * v - lr * gi : w[i] + v;
            }
            break;
        case MP_OPTIM_RMSPROP: {
            double ms = hp->rho * s0[i] + (1 - hp->rho) * gi * gi, denom = ms;
            s0[i] = ms;
            if (s2) {
                double mg = hp->rho * s2[i] + (1 - hp->rho) * gi;
                s2[i] = mg;
                denom = ms - mg * mg;
            }
            if (s1) {
                double m = hp->momentum * s1[i] + lr * gi / sqrt(denom + hp->epsilon);
                s1[i] = m;
                w[i] -= m;
            } else {
                w[i] -= lr * gi / (sqrt(denom) + hp->epsilon);
            }
            break;
        }
        case MP_OPTIM_ADAM: {
            double m = s0[i] + (gi - s0[i]) * (1 - hp->beta_1);
            double v = s1[i] + (gi * gi - s1[i]) * (1 - hp->beta_2), vv = v;
            s0[i] = m;
            s1[i] = v;
            if (s2) {
                vv = s2[i] > v ? s2[i] : v;
                s2[i] = vv;
            }
            w[i] -= lr * m / (sqrt(vv) + hp->epsilon);
            break;
        }
        default: break;
        }
    }
}

static void upd_range(void *vctx, int64_t b, int64_t e) {
    const upd_ctx *c = vctx;
    if (c->wdt == MP_F64) {
        double *s0 = c->s0, *s1 = c->s1, *s2 = c->s2;
        rule_f64(c, (double *)c->w + b, (const double *)c->g + b, s0 ? s0 + b : NULL, s1 ? s1 + b : NULL,
                 s2 ? s2 + b : NULL, e - b);
        if (c->cache)
            mp_cpu_cast((mp_device){MP_DEV_CPU, 0}, (double *)c->w + b, MP_F64,
                        (char *)c->cache + b * (int64_t)mp_dtype_size(c->cdt), c->cdt, e - b);
        return;
    }
    size_t es = mp_dtype_size(c->wdt);
    float *s0 = c->s0, *s1 = c->s1, *s2 = c->s2;
    float wb[MP_BLOCK], gb[MP_BLOCK];
    for (int64_t i = b; i < e; i += MP_BLOCK) {
        int64_t m = e - i < MP_BLOCK ? e - i : MP_BLOCK;
        float *w = c->wdt == MP_F32 ? (float *)c->w + i : wb;
        if (c->wdt != MP_F32)
            mp_load_f32(c->wdt, (char *)c->w + i * (int64_t)es, wb, m);
        mp_load_f32(c->wdt, (const char *)c->g + i * (int64_t)es, gb, m);
        if (c->st->grad_scale != 1.0) {
            const float gs = (float)c->st->grad_scale;
            for (int64_t j = 0; j < m; j++)
                gb[j] *= gs;
        }
        rule_f32(c, w, gb, s0 ? s0 + i : NULL, s1 ? s1 + i : NULL, s2 ? s2 + i : NULL, m);
        if (c->wdt != MP_F32)
            mp_store_f32(c->wdt, wb, (char *)c->w + i * (int64_t)es, m);
        if (c->cache)
            mp_store_f32(c->cdt, w, (char *)c->cache + i * (int64_t)mp_dtype_size(c->cdt), m);
    }
}

mp_status mp_cpu_optim_update(mp_device dev, mp_optim_kind kind, const mp_optim_step *step, mp_dtype wdt, void *w,
                                  const void *g, void *s0, void *s1, void *s2, int64_t n, mp_dtype cdt,
                                  void *cache) {
    (void)dev;
    if (cache && wdt != MP_F64 && cdt != MP_F16 && cdt != MP_BF16 && cdt != MP_F32)
        return mp_error_set(MP_ERR_INTERNAL, "optimizer: cannot refresh a %s copy", mp_dtype_name(cdt));
    upd_ctx c = {kind, step, wdt, w, g, s0, s1, s2, cdt, cache};
    mp_parallel_for(n, MP_GRAIN, upd_range, &c);
    return MP_OK;
}

