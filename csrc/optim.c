/* optim.c — one training step's tail: non-finite check, optimizer update or skip, loss
 * scale update, iteration count — for every variable in one call, issued to the variables'
 * device without waiting for it.
 * Owns the order of the tail, the placement of its state and the validation; the element
 * work and the state machine's arithmetic are the backend's (finite_check, optim_update,
 * step_end), so that on a GPU the skip decision, the loss-scale update and Adam's bias
 * correction are computed on the device from device memory: a step never reads back.
 * NOTE: the loss-scale state lives in variables so checkpoints and devices see it; only
 * mp_loss_scale_value / _good_steps / mp_all_finite read it to the host. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "mixprec.h"

/* Checks a slot before the work that needs it starts (the step is not half done when the
 * backend lacks it); the calls themselves go through MP_BACKEND_CALL. */
#define SLOT_OR_FAIL(be, slot, dev)                              \
    do {                                                         \
        if (!(be)->slot)                                         \
            return mp_backend_missing_slot((be), #slot, (dev));  \
    } while (0)

static const char *dev_name(mp_device d, char *buf, size_t cap) {
    snprintf(buf, cap, "%s:%d", d.type == MP_DEV_CUDA ? "GPU" : "CPU", d.index);
    return buf;
}

static mp_status backend_of(mp_device dev, const mp_backend **be) {
    *be = mp_backend_get(dev.type);
    if (!*be || dev.index < 0 || dev.index >= mp_device_count(dev.type)) {
        char b[32];
        return mp_error_set(MP_ERR_DEVICE, "device %s is not available", dev_name(dev, b, sizeof b));
    }
    return MP_OK;
}

/* Copies a variable's (small) value to host memory: a host synchronisation on a GPU. */
static mp_status read_to_host(mp_variable *v, void *dst, size_t nbytes) {
    mp_tensor *t = mp_variable_peek(v);
    mp_device dev = mp_tensor_device(t);
    const mp_backend *be;
    MP_TRY(backend_of(dev, &be));
    SLOT_OR_FAIL(be, copy_d2h, dev);
    return MP_BACKEND_CALL(be, copy_d2h, dev, dst, mp_tensor_data(t), nbytes);
}

/* ------------------------------------------------------------------ loss scale */

static mp_status scalar_var(mp_dtype dt, double v, mp_device dev, mp_variable **out) {
    mp_tensor *t;
    MP_TRY(mp_scalar(dt, v, dev, &t));
    mp_status st = mp_variable_new(t, 0, out);
    mp_tensor_decref(t);
    return st;
}

#define F32_ROUNDS_FINITE 0x1.ffffffp127

mp_status mp_loss_scale_new(int dynamic, double initial, int64_t growth_interval, double multiplier,
                            double min_scale, mp_device dev, mp_loss_scale **out) {
    /* the state is float32: a value it cannot hold would become inf or 0 (and converting
     * an out-of-range double to float is undefined in C). F32_ROUNDS_FINITE: below the
     * midpoint between FLT_MAX and the next power of two, a double rounds to FLT_MAX. */
    if (!(initial > 0) || !(initial < F32_ROUNDS_FINITE) || (float)initial == 0.0f)
        return mp_error_set(MP_ERR_VALUE, "the initial loss scale must be a positive number float32 can hold, got %g",
                            initial);
    if (dynamic && growth_interval < 1)
        return mp_error_set(MP_ERR_VALUE, "the growth interval must be at least 1, got %lld", (long long)growth_interval);
    if (dynamic && !(multiplier > 1))
        return mp_error_set(MP_ERR_VALUE, "the loss-scale multiplier must be greater than 1, got %g", multiplier);
    if (dynamic && (!(min_scale > 0) || !(min_scale < F32_ROUNDS_FINITE) || (float)min_scale == 0.0f))
        return mp_error_set(MP_ERR_VALUE, "min_loss_scale must be a positive number float32 can hold, got %g",
                            min_scale);
    mp_loss_scale *ls = calloc(1, sizeof *ls);
    if (!ls)
        return mp_error_set(MP_ERR_MEMORY, "out of host memory allocating a loss scale");
    ls->refcount = 1;
    ls->dynamic = dynamic;
    ls->params.growth_interval = growth_interval;
    ls->params.multiplier = multiplier;
    ls->params.min_scale = min_scale;
    mp_status st = scalar_var(MP_F32, initial, dev, &ls->scale);
    if (st == MP_OK)
        st = scalar_var(MP_I64, 0, dev, &ls->good_steps);
    if (st != MP_OK) {
        mp_loss_scale_decref(ls);
        return st;
    }
    *out = ls;
    return MP_OK;
}

void mp_loss_scale_incref(mp_loss_scale *ls) {
    if (ls)
        __atomic_add_fetch(&ls->refcount, 1, __ATOMIC_RELAXED);
}

void mp_loss_scale_decref(mp_loss_scale *ls) {
    if (!ls || __atomic_sub_fetch(&ls->refcount, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    mp_variable_decref(ls->scale);
    mp_variable_decref(ls->good_steps);
    free(ls);
}

mp_status mp_loss_scale_value(const mp_loss_scale *ls, double *value) {
    float s;
    MP_TRY(read_to_host(ls->scale, &s, sizeof s));
    *value = s;
    return MP_OK;
}

mp_status mp_loss_scale_good_steps(const mp_loss_scale *ls, int64_t *good_steps) {
    return read_to_host(ls->good_steps, good_steps, sizeof *good_steps);
}

/* The state's writable pointers on `dev` (the good-step count follows the scale there). */
static mp_status ls_state_for_write(mp_loss_scale *ls, mp_device dev, float **scale, int64_t **good) {
    void *p;
    MP_TRY(mp_variable_move_to(ls->scale, dev));
    MP_TRY(mp_variable_move_to(ls->good_steps, dev));
    MP_TRY(mp_variable_data_for_write(ls->scale, &p));
    *scale = p;
    MP_TRY(mp_variable_data_for_write(ls->good_steps, &p));
    *good = p;
    return MP_OK;
}

mp_status mp_loss_scale_update(mp_loss_scale *ls, int finite) {
    if (!ls->dynamic)
        return MP_OK;
    mp_device dev = mp_tensor_device(mp_variable_peek(ls->scale));
    const mp_backend *be;
    MP_TRY(backend_of(dev, &be));
    SLOT_OR_FAIL(be, step_end, dev);
    float *scale;
    int64_t *good;
    MP_TRY(ls_state_for_write(ls, dev, &scale, &good));
    mp_tensor *flag;
    MP_TRY(mp_scalar(MP_BOOL, finite ? 0.0 : 1.0, dev, &flag));
    mp_status st = MP_BACKEND_CALL(be, step_end, dev, mp_tensor_data(flag), scale, good, &ls->params, NULL);
    mp_tensor_decref(flag);
    return st;
}

static int checkable(const mp_tensor *t) { return t && mp_dtype_is_floating(t->dtype) && t->numel > 0; }

/* Checks the spans of the tensors on `dev` into a new bool flag on dev (fresh reference). */
static mp_status check_on_device(mp_device dev, int n, mp_tensor *const *ts, mp_tensor **flag) {
    const mp_backend *be;
    *flag = NULL;
    MP_TRY(backend_of(dev, &be));
    SLOT_OR_FAIL(be, finite_check, dev);
    mp_span *spans = malloc(sizeof(mp_span) * (size_t)(n ? n : 1));
    if (!spans)
        return mp_error_set(MP_ERR_MEMORY, "out of host memory for a finite check over %d tensors", n);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (checkable(ts[i]) && mp_device_eq(mp_tensor_device(ts[i]), dev))
            spans[m++] = (mp_span){ts[i]->dtype, mp_tensor_data(ts[i]), ts[i]->numel};
    mp_status st = mp_scalar(MP_BOOL, 0.0, dev, flag);
    if (st == MP_OK && m > 0)
        st = MP_BACKEND_CALL(be, finite_check, dev, m, spans, mp_tensor_data(*flag));
    free(spans);
    if (st != MP_OK) {
        mp_tensor_decref(*flag);
        *flag = NULL;
    }
    return st;
}

mp_status mp_all_finite(int n, mp_tensor *const *ts, int *finite) {
    *finite = 1;
    for (int i = 0; i < n && *finite; i++) {
        if (!checkable(ts[i]))
            continue;
        mp_device dev = mp_tensor_device(ts[i]);
        int first = 1; /* one check per device, at its first tensor */
        for (int j = 0; j < i && first; j++)
            first = !(checkable(ts[j]) && mp_device_eq(mp_tensor_device(ts[j]), dev));
        if (!first)
            continue;
        mp_tensor *flag;
        MP_TRY(check_on_device(dev, n, ts, &flag));
        uint8_t bad = 0;
        mp_tensor *host;
        mp_status st = mp_copy_to_device(flag, (mp_device){MP_DEV_CPU, 0}, &host);
        mp_tensor_decref(flag);
        MP_TRY(st);
        bad = *(const uint8_t *)mp_tensor_data(host);
        mp_tensor_decref(host);
        if (bad)
            *finite = 0;
    }
    return MP_OK;
}

/* ------------------------------------------------------------------ optimizers */

int mp_optimizer_slots_per_var(mp_optim_kind kind, const mp_optim_hparams *hp) {
    switch (kind) {
    case MP_OPTIM_SGD: return hp->use_momentum ? 1 : 0;
    case MP_OPTIM_RMSPROP: return 1 + (hp->use_momentum != 0) + (hp->centered != 0);
    case MP_OPTIM_ADAM: return 2 + (hp->amsgrad != 0);
    case MP_OPTIM_ADAGRAD:
    case MP_OPTIM_LION: return 1;
    case MP_OPTIM_ADADELTA:
    case MP_OPTIM_ADAMAX:
    case MP_OPTIM_NADAM:
    case MP_OPTIM_FTRL: return 2;
    default: return 0;
    }
}

static mp_status check_slot(const mp_variable *s, const mp_tensor *w, int i) {
    if (!s)
        return mp_error_set(MP_ERR_INTERNAL, "optimizer: slot missing for variable %d", i);
    const mp_tensor *t = s->value;
    mp_dtype want = mp_optim_slot_dtype(w->dtype);
    if (t->dtype != want || t->numel != w->numel || !mp_device_eq(mp_tensor_device(t), mp_tensor_device(w)))
        return mp_error_set(MP_ERR_INTERNAL, "optimizer: slot of variable %d is not a %s tensor of its size", i,
                            mp_dtype_name(want));
    return MP_OK;
}

static mp_status optimizer_apply_exec(mp_optim_kind kind, const mp_optim_hparams *hp, int n,
                                      mp_variable *const *vars, mp_tensor *const *grads,
                                      mp_variable *const *slots, mp_variable *iterations, mp_variable *state,
                                      const uint8_t *no_decay, mp_loss_scale *ls, int check_finite,
                                      double grad_scale, int unscale, mp_tensor **found_inf);

/* The step as a graph node while a function traces (graph.h); in a dry trace it is only
 * recorded, with a placeholder flag (false) as its output. */
mp_status mp_optimizer_apply(mp_optim_kind kind, const mp_optim_hparams *hp, int n, mp_variable *const *vars,
                             mp_tensor *const *grads, mp_variable *const *slots, mp_variable *iterations,
                             mp_variable *state, const uint8_t *no_decay, mp_loss_scale *ls, int check_finite,
                             double grad_scale, int unscale, mp_tensor **found_inf) {
    if (!mp_graph_recording())
        return optimizer_apply_exec(kind, hp, n, vars, grads, slots, iterations, state, no_decay, ls, check_finite,
                                    grad_scale, unscale, found_inf);
    if ((int)kind < 0 || kind >= MP_OPTIM_COUNT)
        return mp_error_set(MP_ERR_VALUE, "unknown optimizer kind %d", (int)kind);
    mp_tensor *flag = NULL;
    if (found_inf)
        *found_inf = NULL;
    if (mp_graph_effects_dry()) {
        if (check_finite && found_inf) {
            mp_device dev = n > 0 ? mp_tensor_device(vars[0]->value) : (mp_device){MP_DEV_CPU, 0};
            MP_TRY(mp_full(MP_BOOL, 0, NULL, 0.0, dev, &flag));
        }
    } else {
        MP_TRY(optimizer_apply_exec(kind, hp, n, vars, grads, slots, iterations, state, no_decay, ls, check_finite,
                                    grad_scale, unscale, check_finite ? &flag : NULL));
    }
    mp_goptim o = {.kind = kind,
                   .hp = *hp,
                   .n_vars = n,
                   .vars = (mp_variable **)vars,
                   .n_slots = n * mp_optimizer_slots_per_var(kind, hp),
                   .slots = (mp_variable **)slots,
                   .iterations = iterations,
                   .state = state,
                   .no_decay = (uint8_t *)no_decay,
                   .ls = ls,
                   .check_finite = check_finite,
                   .grad_scale = grad_scale,
                   .unscale = unscale};
    /* the flag is the node's output only when the caller takes it */
    if (mp_graph_record_optim(&o, grads, found_inf ? flag : NULL) < -1) {
        mp_tensor_decref(flag);
        return MP_ERR_MEMORY;
    }
    if (found_inf)
        *found_inf = flag;
    else
        mp_tensor_decref(flag);
    return MP_OK;
}

static mp_status optimizer_apply_exec(mp_optim_kind kind, const mp_optim_hparams *hp, int n,
                                      mp_variable *const *vars, mp_tensor *const *grads,
                                      mp_variable *const *slots, mp_variable *iterations, mp_variable *state,
                                      const uint8_t *no_decay, mp_loss_scale *ls, int check_finite,
                                      double grad_scale, int unscale, mp_tensor **found_inf) {
    if (found_inf)
        *found_inf = NULL;
    if ((int)kind < 0 || kind >= MP_OPTIM_COUNT)
        return mp_error_set(MP_ERR_VALUE, "unknown optimizer kind %d", (int)kind);
    if (unscale && !ls)
        return mp_error_set(MP_ERR_VALUE, "optimizer: unscaling the gradients needs a loss scale");
    if (iterations) {
        const mp_tensor *it = mp_variable_peek(iterations);
        if (it->dtype != MP_I64 || it->numel != 1)
            return mp_error_set(MP_ERR_DTYPE, "optimizer: iterations must be an int64 scalar variable, got %s with "
                                "%lld element(s)", mp_dtype_name(it->dtype), (long long)it->numel);
    }
    if ((kind == MP_OPTIM_NADAM) != (state != NULL))
        return mp_error_set(MP_ERR_VALUE, "optimizer: %s", state ? "only Nadam keeps a state variable"
                                                                  : "Nadam needs its u_product state variable");
    if (state) {
        const mp_tensor *st = mp_variable_peek(state);
        if (st->dtype != MP_F32 || st->numel != 1)
            return mp_error_set(MP_ERR_DTYPE, "optimizer: Nadam's u_product must be a float32 scalar variable, got %s "
                                "with %lld element(s)", mp_dtype_name(st->dtype), (long long)st->numel);
    }
    int nslots = mp_optimizer_slots_per_var(kind, hp);
    /* validate everything before touching anything; the step runs on the variables' device */
    mp_device dev = iterations ? mp_tensor_device(mp_variable_peek(iterations))
                    : ls      ? mp_tensor_device(mp_variable_peek(ls->scale))
                              : (mp_device){MP_DEV_CPU, 0};
    int m = 0; /* variables with a gradient */
    for (int i = 0; i < n; i++) {
        mp_tensor *w = vars[i]->value, *g = grads[i];
        if (!g)
            continue;
        if (!mp_dtype_is_floating(w->dtype))
            return mp_error_set(MP_ERR_DTYPE, "optimizer: variable %d has dtype %s; only floating variables can be "
                                "trained", i, mp_dtype_name(w->dtype));
        if (g->dtype != w->dtype)
            return mp_error_set(MP_ERR_DTYPE, "optimizer: the gradient of variable %d is %s but the variable is %s. "
                                "hint: gradients must have their variable's dtype", i, mp_dtype_name(g->dtype),
                                mp_dtype_name(w->dtype));
        if (g->numel != w->numel || g->ndim != w->ndim)
            return mp_error_set(MP_ERR_SHAPE, "optimizer: the gradient of variable %d has %lld elements, the variable "
                                "%lld", i, (long long)g->numel, (long long)w->numel);
        if (!mp_device_eq(mp_tensor_device(g), mp_tensor_device(w)))
            return mp_error_set(MP_ERR_DEVICE, "optimizer: gradient %d is not on its variable's device", i);
        for (int k = 0; k < nslots; k++)
            MP_TRY(check_slot(slots[i * nslots + k], w, i));
        if (m == 0) {
            dev = mp_tensor_device(w);
        } else if (!mp_device_eq(mp_tensor_device(w), dev)) {
            char b1[32], b2[32];
            return mp_error_set(MP_ERR_DEVICE, "optimizer: variable %d is on %s but the earlier ones are on %s; one "
                                "fused step updates variables of one device", i,
                                dev_name(mp_tensor_device(w), b1, sizeof b1), dev_name(dev, b2, sizeof b2));
        }
        m++;
    }
    const mp_backend *be;
    MP_TRY(backend_of(dev, &be));
    if (check_finite)
        SLOT_OR_FAIL(be, finite_check, dev);
    if (m > 0)
        SLOT_OR_FAIL(be, optim_update, dev);
    if (iterations || (ls && ls->dynamic))
        SLOT_OR_FAIL(be, step_end, dev);

    /* The state follows the variables (an explicit copy, once); its pointers are taken
     * once: the updates read them, the step's end writes them, in stream order. */
    int64_t *it = NULL;
    float *nstate = NULL;
    float *scale = NULL;
    int64_t *good = NULL;
    const float *scale_read = NULL;
    void *p;
    if (iterations) {
        MP_TRY(mp_variable_move_to(iterations, dev));
        MP_TRY(mp_variable_data_for_write(iterations, &p));
        it = p;
    }
    if (state && m > 0) {
        MP_TRY(mp_variable_move_to(state, dev));
        MP_TRY(mp_variable_data_for_write(state, &p));
        nstate = p;
    }
    if (ls && ls->dynamic) {
        MP_TRY(ls_state_for_write(ls, dev, &scale, &good));
        scale_read = scale;
    } else if (ls && unscale) {
        MP_TRY(mp_variable_move_to(ls->scale, dev));
        scale_read = mp_tensor_data(mp_variable_peek(ls->scale));
    }

    mp_tensor *flag = NULL;
    if (check_finite)
        MP_TRY(check_on_device(dev, n, grads, &flag));
    mp_status st = MP_OK;
    mp_optim_var *ov = calloc((size_t)(m ? m : 1), sizeof *ov);
    int *refresh = calloc((size_t)(n ? n : 1), sizeof *refresh);
    if (!ov || !refresh) {
        st = mp_error_set(MP_ERR_MEMORY, "out of host memory for an optimizer step over %d variables", n);
        goto done;
    }
    int j = 0;
    for (int i = 0; i < n && st == MP_OK; i++) {
        mp_variable *v = vars[i];
        if (!grads[i])
            continue;
        /* the 16-bit copy read this step is refreshed in the same pass */
        refresh[i] = v->cast_cache && v->cache_version == v->version && !mp_tensor_storage_shared(v->cast_cache);
        mp_optim_var *o = &ov[j++];
        if ((st = mp_variable_data_for_write(v, &p)) != MP_OK)
            break;
        o->wdt = v->value->dtype;
        o->w = p;
        o->g = mp_tensor_data(grads[i]);
        o->n = v->value->numel;
        o->cdt = refresh[i] ? v->cast_cache->dtype : MP_F32;
        o->cache = refresh[i] ? mp_tensor_data(v->cast_cache) : NULL;
        o->decay = hp->use_weight_decay && !(no_decay && no_decay[i]);
        /* slot order per rule: SGD (momentum); RMSprop (ms, momentum?, mg?); Adam (m, v, vhat?);
         * the others their slots in order (optim_rule.h) */
        int k = 0;
        for (int s = 0; s < 3 && st == MP_OK; s++) {
            int used = kind == MP_OPTIM_SGD       ? s == 0 && nslots > 0
                       : kind == MP_OPTIM_RMSPROP ? s == 0 || (s == 1 && hp->use_momentum) || (s == 2 && hp->centered)
                                                  : s < nslots;
            if (!used)
                continue;
            if ((st = mp_variable_data_for_write(slots[i * nslots + k++], &p)) == MP_OK)
                o->s[s] = p;
        }
    }
    if (st == MP_OK && m > 0) {
        mp_optim_step step = {.hp = *hp,
                              .grad_scale = grad_scale,
                              .loss_scale = unscale ? scale_read : NULL,
                              .iterations = it,
                              .found_inf = flag ? mp_tensor_data(flag) : NULL,
                              .state = nstate};
        st = MP_BACKEND_CALL(be, optim_update, dev, kind, &step, m, ov);
    }
    if (st == MP_OK) {
        for (int i = 0; i < n; i++)
            if (refresh[i])
                vars[i]->cache_version = vars[i]->version;
        if (it || scale)
            st = MP_BACKEND_CALL(be, step_end, dev, flag ? mp_tensor_data(flag) : NULL, scale, good, ls ? &ls->params : NULL, it);
    }
done:
    free(ov);
    free(refresh);
    if (st == MP_OK && found_inf && flag)
        *found_inf = flag;
    else
        mp_tensor_decref(flag);
    return st;
}
