/* cpu_optim.c — the CPU backend's training-step tail: the non-finite check, the fused
 * optimizer updates (SGD, RMSprop, Adam, Adagrad, Adadelta, Adamax, Nadam, Ftrl, Lion) on
 * float32 master weights and the step's end (the
 * dynamic loss-scale state machine, the iteration count).
 * One pass per variable reads the gradient (unscaling it on the fly), updates the slots
 * and the weight, and writes the 16-bit copy layers will read next, so nothing is read
 * twice. The rules are TensorFlow's (ResourceApply* kernels, Keras OptimizerV2).
 * The rules themselves are optim_rule.h, shared with cuda/optim_update.cu. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "loss_scale_rule.h"
#include "optim_rule.h"

/* ------------------------------------------------------------------ finite check */

typedef struct {
    mp_dtype dt;
    const void *x;
    int bad; /* set by any worker that sees inf/NaN */
} fin_ctx;

/* Wider loops for the two passes of a step (the finite check, the rules), picked at run time
 * where the CPU has AVX-512 (MIXPREC_NO_AVX512=1 keeps the baseline loops: the test of
 * equal bits uses it). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MP_OPTIM_AVX512 1
#endif

static int use_avx512(void) {
    static int use = -1; /* racing first callers compute the same answer */
    int u = __atomic_load_n(&use, __ATOMIC_RELAXED);
    if (u < 0) {
        u = 0;
#ifdef MP_OPTIM_AVX512
        __builtin_cpu_init();
        u = __builtin_cpu_supports("avx512f") && !getenv("MIXPREC_NO_AVX512");
#endif
        __atomic_store_n(&use, u, __ATOMIC_RELAXED);
    }
    return u;
}

static inline __attribute__((always_inline)) int finite_body(mp_dtype dt, const void *x, int64_t b, int64_t e) {
    int bad = 0;
    switch (dt) {
    case MP_F32: {
        const uint32_t *p = x;
        for (int64_t i = b; i < e; i++)
            bad |= (p[i] & 0x7f800000u) == 0x7f800000u;
        break;
    }
    case MP_F16: {
        const uint16_t *p = x;
        for (int64_t i = b; i < e; i++)
            bad |= (p[i] & 0x7c00u) == 0x7c00u;
        break;
    }
    case MP_BF16: {
        const uint16_t *p = x;
        for (int64_t i = b; i < e; i++)
            bad |= (p[i] & 0x7f80u) == 0x7f80u;
        break;
    }
    case MP_F64: {
        const uint64_t *p = x;
        for (int64_t i = b; i < e; i++)
            bad |= (p[i] & 0x7ff0000000000000ull) == 0x7ff0000000000000ull;
        break;
    }
    default: break;
    }
    return bad;
}

static int finite_any(mp_dtype dt, const void *x, int64_t b, int64_t e) {
    return finite_body(dt, x, b, e);
}

#ifdef MP_OPTIM_AVX512
__attribute__((target("avx512f,avx512bw"))) static int finite_avx512(mp_dtype dt, const void *x, int64_t b, int64_t e) {
    return finite_body(dt, x, b, e);
}
#endif

static void finite_range(void *vctx, int64_t b, int64_t e) {
    fin_ctx *c = vctx;
    int bad;
#ifdef MP_OPTIM_AVX512
    if (use_avx512())
        bad = finite_avx512(c->dt, c->x, b, e);
    else
#endif
        bad = finite_any(c->dt, c->x, b, e);
    if (bad)
        __atomic_store_n(&c->bad, 1, __ATOMIC_RELAXED);
}

mp_status mp_cpu_finite_check(mp_device dev, int n, const mp_span *xs, uint8_t *found_inf) {
    (void)dev;
    for (int i = 0; i < n && !*found_inf; i++) {
        fin_ctx c = {xs[i].dt, xs[i].p, 0};
        mp_parallel_for(xs[i].n, MP_GRAIN * 8, finite_range, &c);
        if (c.bad)
            *found_inf = 1;
    }
    return MP_OK;
}

/* ------------------------------------------------------------------ updates */

typedef struct {
    mp_optim_rule rule; /* the step's constants (optim_rule.h) */
    double grad_scale;  /* the gradient multiplier */
    mp_dtype wdt;
    void *w;
    const void *g;
    void *s0, *s1, *s2; /* float32 slots; float64 for float64 variables */
    mp_dtype cdt;
    void *cache;
} upd_ctx;

/* The rule on float32 blocks: w, g are f32 copies (g already unscaled).
 * NOTE: one loop per (rule, slots present) with the rule's kind a constant of the loop, so
 * the compiler drops the per-element dispatch and vectorises; a single generic loop over
 * mp_optim_rule_f32 ran 4x slower (RMSprop on 16.7M weights: 186 ms against 48 ms). */
#define RULE_LOOP(S0, S1, S2)                                                                                          \
    for (int64_t i = 0; i < n; i++)                                                                                    \
    mp_optim_rule_f32(&k, &w[i], g[i] * gs, S0, S1, S2)

static inline __attribute__((always_inline)) void rule_f32_kind(const upd_ctx *c, float *w, const float *g, float gs,
                                                                float *s0, float *s1, float *s2, int64_t n) {
    mp_optim_rule k = c->rule;
    switch (c->rule.kind) {
    case MP_OPTIM_SGD:
        k.kind = MP_OPTIM_SGD;
        if (!s0)
            RULE_LOOP(NULL, NULL, NULL);
        else if (k.nesterov) {
            k.nesterov = 1;
            RULE_LOOP(s0 + i, NULL, NULL);
        } else {
            k.nesterov = 0;
            RULE_LOOP(s0 + i, NULL, NULL);
        }
        break;
    case MP_OPTIM_RMSPROP:
        k.kind = MP_OPTIM_RMSPROP;
        if (s1 && s2)
            RULE_LOOP(s0 + i, s1 + i, s2 + i);
        else if (s1)
            RULE_LOOP(s0 + i, s1 + i, NULL);
        else if (s2)
            RULE_LOOP(s0 + i, NULL, s2 + i);
        else
            RULE_LOOP(s0 + i, NULL, NULL);
        break;
    case MP_OPTIM_ADAM:
        k.kind = MP_OPTIM_ADAM;
        if (s2)
            RULE_LOOP(s0 + i, s1 + i, s2 + i);
        else
            RULE_LOOP(s0 + i, s1 + i, NULL);
        break;
    case MP_OPTIM_ADAGRAD:
        k.kind = MP_OPTIM_ADAGRAD;
        if (k.eps_outside) {
            k.eps_outside = 1;
            RULE_LOOP(s0 + i, NULL, NULL);
        } else {
            k.eps_outside = 0;
            RULE_LOOP(s0 + i, NULL, NULL);
        }
        break;
    case MP_OPTIM_ADADELTA:
        k.kind = MP_OPTIM_ADADELTA;
        RULE_LOOP(s0 + i, s1 + i, NULL);
        break;
    case MP_OPTIM_ADAMAX:
        k.kind = MP_OPTIM_ADAMAX;
        RULE_LOOP(s0 + i, s1 + i, NULL);
        break;
    case MP_OPTIM_NADAM:
        k.kind = MP_OPTIM_NADAM;
        RULE_LOOP(s0 + i, s1 + i, NULL);
        break;
    case MP_OPTIM_FTRL:
        k.kind = MP_OPTIM_FTRL;
        RULE_LOOP(s0 + i, s1 + i, NULL);
        break;
    case MP_OPTIM_LION:
        k.kind = MP_OPTIM_LION;
        RULE_LOOP(s0 + i, NULL, NULL);
        break;
    default: break;
    }
}

/* The weight decay is a constant of the loop too (on or off for the whole variable). */
static inline __attribute__((always_inline)) void rule_f32_body(const upd_ctx *c, float *w, const float *g, float gs,
                                                                float *s0, float *s1, float *s2, int64_t n) {
    if (c->rule.decay) {
        upd_ctx d = *c;
        d.rule.decay = 1;
        rule_f32_kind(&d, w, g, gs, s0, s1, s2, n);
    } else {
        upd_ctx d = *c;
        d.rule.decay = 0;
        rule_f32_kind(&d, w, g, gs, s0, s1, s2, n);
    }
}
#undef RULE_LOOP

/* The same loops compiled for AVX-512 (16 lanes) and picked at run time: the rules divide
 * and take square roots per element, which the baseline x86-64 build does 4 lanes at a
 * time; on the 3x256 model's step (334k weights, RMSprop) that was a quarter of a traced
 * step. Division, square root, + and * are correctly rounded at every width, and this
 * file is compiled with -ffp-contract=off (no FMA contraction, as cuda/'s --fmad=false), so
 * every width gives the same bits as optim_rule.h's scalar rule. */
static void rule_f32_any(const upd_ctx *c, float *w, const float *g, float gs, float *s0, float *s1, float *s2,
                         int64_t n) {
    rule_f32_body(c, w, g, gs, s0, s1, s2, n);
}

#ifdef MP_OPTIM_AVX512
__attribute__((target("avx512f"))) static void rule_f32_avx512(const upd_ctx *c, float *w, const float *g, float gs,
                                                               float *s0, float *s1, float *s2, int64_t n) {
    rule_f32_body(c, w, g, gs, s0, s1, s2, n);
}
#endif

typedef void (*rule_f32_fn)(const upd_ctx *, float *, const float *, float, float *, float *, float *, int64_t);

static rule_f32_fn rule_f32_pick(void) {
#ifdef MP_OPTIM_AVX512
    if (use_avx512())
        return rule_f32_avx512;
#endif
    return rule_f32_any;
}

static void rule_f64(const upd_ctx *c, double *w, const double *g, double *s0, double *s1, double *s2, int64_t n) {
    const double gs = c->grad_scale;
    for (int64_t i = 0; i < n; i++)
        mp_optim_rule_f64(&c->rule, &w[i], g[i] * gs, s0 ? s0 + i : NULL, s1 ? s1 + i : NULL, s2 ? s2 + i : NULL);
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
    const rule_f32_fn rule = rule_f32_pick();
    for (int64_t i = b; i < e; i += MP_BLOCK) {
        int64_t m = e - i < MP_BLOCK ? e - i : MP_BLOCK;
        float *w = c->wdt == MP_F32 ? (float *)c->w + i : wb;
        if (c->wdt != MP_F32)
            mp_load_f32(c->wdt, (char *)c->w + i * (int64_t)es, wb, m);
        const float *g = (const float *)c->g + i; /* float32 gradients are read in place */
        if (c->wdt != MP_F32) {
            mp_load_f32(c->wdt, (const char *)c->g + i * (int64_t)es, gb, m);
            g = gb;
        }
        /* the gradient factor rides in the rule's loop (x * 1 is x, bit for bit) */
        rule(c, w, g, (float)c->grad_scale, s0 ? s0 + i : NULL, s1 ? s1 + i : NULL, s2 ? s2 + i : NULL, m);
        if (c->wdt != MP_F32)
            mp_store_f32(c->wdt, wb, (char *)c->w + i * (int64_t)es, m);
        if (c->cache)
            mp_store_f32(c->cdt, w, (char *)c->cache + i * (int64_t)mp_dtype_size(c->cdt), m);
    }
}

/* Every variable of a step as one range of elements (variable k owns [off[k], off[k+1])):
 * one parallel pass for the whole step instead of one per variable. */
typedef struct {
    const upd_ctx *c;
    const int64_t *off;
    int n;
} multi_ctx;

static void multi_range(void *vctx, int64_t b, int64_t e) {
    const multi_ctx *m = vctx;
    int k = 0;
    while (k < m->n && m->off[k + 1] <= b)
        k++;
    for (; k < m->n && m->off[k] < e; k++) {
        int64_t lo = b > m->off[k] ? b : m->off[k], hi = e < m->off[k + 1] ? e : m->off[k + 1];
        if (lo < hi)
            upd_range((void *)&m->c[k], lo - m->off[k], hi - m->off[k]);
    }
}

#define MULTI_MAX 256 /* variables of a step updated in one pass (more: one pass each) */

mp_status mp_cpu_optim_update(mp_device dev, mp_optim_kind kind, const mp_optim_step *step, int n,
                              const mp_optim_var *vars) {
    (void)dev;
    if (step->found_inf && *step->found_inf)
        return MP_OK; /* the step is skipped */
    const mp_optim_hparams *hp = &step->hp;
    double grad_scale = step->grad_scale;
    if (step->loss_scale)
        grad_scale = grad_scale / (double)*step->loss_scale;
    const int64_t t = step->iterations ? mp_next_iteration(*step->iterations) : 1;
    mp_optim_rule r32, r64;
    float uprod = 1.0f;
    mp_optim_rule_make(&r32, kind, hp, t, 0, step->state, &uprod);
    mp_optim_rule_make(&r64, kind, hp, t, 1, step->state, NULL);
    /* NOTE: one pass over all the step's elements (multi_range): the rules are elementwise,
     * so the bits are those of one pass per variable; a small-batch step's variables (the
     * 3x256 model: 8, three of them split across threads) then wake the pool once. */
    upd_ctx multi[MULTI_MAX];
    int64_t off[MULTI_MAX + 1];
    int one_pass = n > 1 && n <= MULTI_MAX;
    off[0] = 0;
    for (int i = 0; i < n; i++) {
        const mp_optim_var *v = &vars[i];
        if (v->cache && v->wdt != MP_F64 && v->cdt != MP_F16 && v->cdt != MP_BF16 && v->cdt != MP_F32)
            return mp_error_set(MP_ERR_INTERNAL, "optimizer: cannot refresh a %s copy", mp_dtype_name(v->cdt));
        upd_ctx c = {v->wdt == MP_F64 ? r64 : r32,
                     grad_scale,
                     v->wdt,
                     v->w,
                     v->g,
                     v->s[0],
                     v->s[1],
                     v->s[2],
                     v->cdt,
                     v->cache};
        c.rule.decay = v->decay && hp->use_weight_decay;
        if (one_pass) {
            multi[i] = c;
            off[i + 1] = off[i] + v->n;
        } else {
            mp_parallel_for(v->n, MP_GRAIN, upd_range, &c);
        }
    }
    if (one_pass) {
        multi_ctx m = {multi, off, n};
        mp_parallel_for(off[n], MP_GRAIN, multi_range, &m);
    }
    if (step->state) /* Nadam: the product advances once per applied step */
        *step->state = uprod;
    return MP_OK;
}

/* ------------------------------------------------------------------ end of a step */

/* The loss-scale state machine (loss_scale_rule.h), then the iteration count. */
mp_status mp_cpu_step_end(mp_device dev, const uint8_t *found_inf, float *scale, int64_t *good_steps,
                          const mp_loss_scale_params *p, int64_t *iterations) {
    (void)dev;
    if (scale)
        mp_loss_scale_step(scale, good_steps, found_inf && *found_inf, p->growth_interval, p->multiplier, p->min_scale);
    if (iterations)
        *iterations = mp_next_iteration(*iterations);
    return MP_OK;
}
