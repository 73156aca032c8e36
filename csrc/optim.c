/* optim.c — one training step's tail: non-finite check, optimizer update or skip, loss
 * scale update, iteration count — for every variable in one call.
 * Owns the loss-scale state machine (TensorFlow's DynamicLossScale, with an optional floor
 * below 1 as our extension) and the per-step scalars (Adam's bias correction). Element
 * work is the backend's (all_finite, optim_update).
 * NOTE: the loss-scale state lives in variables so checkpoints and devices see it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mixprec.h"

/* ------------------------------------------------------------------ loss scale */

static mp_status scalar_var(mp_dtype dt, double v, mp_variable **out) {
    mp_tensor *t;
    MP_TRY(mp_scalar(dt, v, (mp_device){MP_DEV_CPU, 0}, &t));
    mp_status st = mp_variable_new(t, 0, out);
    mp_tensor_decref(t);
    return st;
}

mp_status mp_loss_scale_new(int dynamic, double initial, int64_t growth_interval, double multiplier,
                            double min_scale, mp_loss_scale **out) {
    if (!(initial > 0) || !isfinite(initial))
        return mp_error_set(MP_ERR_VALUE, "the initial loss scale must be a positive finite number, got %g", initial);
    if (dynamic && growth_interval < 1)
        return mp_error_set(MP_ERR_VALUE, "the growth interval must be at least 1, got %lld", (long long)growth_interval);
    if (dynamic && !(multiplier > 1))
        return mp_error_set(MP_ERR_VALUE, "the loss-scale multiplier must be greater than 1, got %g", multiplier);
    if (dynamic && !(min_scale > 0))
        return mp_error_set(MP_ERR_VALUE, "min_loss_scale must be positive, got %g", min_scale);
    mp_loss_scale *ls = calloc(1, sizeof *ls);
    if (!ls)
        return mp_error_set(MP_ERR_MEMORY, "out of host memory allocating a loss scale");
    ls->refcount = 1;
    ls->dynamic = dynamic;
    ls->growth_interval = growth_interval;
    ls->multiplier = multiplier;
    ls->min_scale = min_scale;
    mp_status st = scalar_var(MP_F32, initial, &ls->scale);
    if (st == MP_OK)
        st = scalar_var(MP_I64, 0, &ls->good_steps);
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

/* Host copies of the two state scalars (a GPU backend keeps them on the device). */
static float read_scale(const mp_loss_scale *ls) {
    return (float)mp_tensor_get_f64(mp_variable_peek(ls->scale), 0);
}

double mp_loss_scale_value(const mp_loss_scale *ls) { return read_scale(ls); }

mp_status mp_loss_scale_update(mp_loss_scale *ls, int finite) {
    if (!ls->dynamic)
        return MP_OK;
    float s = read_scale(ls);
    int64_t good = ((const int64_t *)mp_tensor_data(mp_variable_peek(ls->good_steps)))[0];
    if (finite) {
        if (good + 1 >= ls->growth_interval) {
            float grown = s * (float)ls->multiplier; /* float32 arithmetic, as TensorFlow */
            if (isfinite(grown))
                s = grown;
            good = 0;
        } else {
            good++;
        }
    } else {
        float shrunk = s / (float)ls->multiplier;
        float floor_ = (float)ls->min_scale;
        s = shrunk > floor_ ? shrunk : floor_;
        good = 0;
    }
    void *p;
    MP_TRY(mp_variable_data_for_write(ls->scale, &p));
    *(float *)p = s;
    MP_TRY(mp_variable_data_for_write(ls->good_steps, &p));
    *(int64_t *)p = good;
    return MP_OK;
}

mp_status mp_all_finite(int n, mp_tensor *const *ts, int *finite) {
    *finite = 1;
    for (int i = 0; i < n && *finite; i++) {
        if (!ts[i] || !mp_dtype_is_floating(ts[i]->dtype))
            continue;
        mp_device dev = mp_tensor_device(ts[i]);
        const mp_backend *be = mp_backend_get(dev.type);
        if (!be || !be->all_finite)
            return mp_error_set(MP_ERR_NOT_IMPLEMENTED, "all_finite is not available on this device");
        MP_TRY(be->all_finite(dev, ts[i]->dtype, mp_tensor_data(ts[i]), ts[i]->numel, finite));
    }
    return MP_OK;
}

/* ------------------------------------------------------------------ optimizers */

int mp_optimizer_slots_per_var(mp_optim_kind kind, const mp_optim_hparams *hp) {
    switch (kind) {
    case MP_OPTIM_SGD: return hp->use_momentum ? 1 : 0;
    case MP_OPTIM_RMSPROP: return 1 + (hp->use_momentum != 0) + (hp->centered != 0);
    case MP_OPTIM_ADAM: return 2 + (hp->amsgrad != 0);
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

mp_status mp_optimizer_apply(mp_optim_kind kind, const mp_optim_hparams *hp, int n, mp_variable *const *vars,
                             mp_tensor *const *grads, mp_variable *const *slots, mp_variable *iterations,
                             mp_loss_scale *ls, int check_finite, double grad_scale, int *applied) {
    *applied = 0;
    if ((int)kind < 0 || kind >= MP_OPTIM_COUNT)
        return mp_error_set(MP_ERR_VALUE, "unknown optimizer kind %d", (int)kind);
    int nslots = mp_optimizer_slots_per_var(kind, hp);
    /* validate everything before touching anything */
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
    }
    int finite = 1;
    if (check_finite)
        MP_TRY(mp_all_finite(n, grads, &finite));
    int64_t t = iterations ? ((const int64_t *)mp_tensor_data(mp_variable_peek(iterations)))[0] + 1 : 1;
    if (finite) {
        mp_optim_step step = {.hp = *hp, .lr_t = hp->lr, .grad_scale = grad_scale};
        if (kind == MP_OPTIM_ADAM)
            step.lr_t = hp->lr * sqrt(1.0 - pow(hp->beta_2, (double)t)) / (1.0 - pow(hp->beta_1, (double)t));
        for (int i = 0; i < n; i++) {
            mp_variable *v = vars[i];
            if (!grads[i])
                continue;
            /* the 16-bit copy read this step is refreshed in the same pass */
            int refresh = v->cast_cache && v->cache_version == v->version && !mp_tensor_storage_shared(v->cast_cache);
            void *w;
            MP_TRY(mp_variable_data_for_write(v, &w));
            void *s[3] = {NULL, NULL, NULL};
            void *sd;
            int k = 0;
            switch (kind) {
            case MP_OPTIM_SGD:
                if (nslots) {
                    MP_TRY(mp_variable_data_for_write(slots[i * nslots], &sd));
                    s[0] = sd;
                }
                break;
            case MP_OPTIM_RMSPROP:
                MP_TRY(mp_variable_data_for_write(slots[i * nslots + k++], &sd));
                s[0] = sd;
                if (hp->use_momentum) {
                    MP_TRY(mp_variable_data_for_write(slots[i * nslots + k++], &sd));
                    s[1] = sd;
                }
                if (hp->centered) {
                    MP_TRY(mp_variable_data_for_write(slots[i * nslots + k++], &sd));
                    s[2] = sd;
                }
                break;
            case MP_OPTIM_ADAM:
                for (k = 0; k < nslots; k++) {
                    MP_TRY(mp_variable_data_for_write(slots[i * nslots + k], &sd));
                    s[k] = sd;
                }
                break;
            default: break;
            }
            mp_device dev = mp_tensor_device(v->value);
            const mp_backend *be = mp_backend_get(dev.type);
            if (!be || !be->optim_update)
                return mp_error_set(MP_ERR_NOT_IMPLEMENTED, "optimizer updates are not available on this device");
            MP_TRY(be->optim_update(dev, kind, &step, v->value->dtype, w, mp_tensor_data(grads[i]), s[0], s[1], s[2],
                                    v->value->numel, refresh ? v->cast_cache->dtype : MP_F32,
                                    refresh ? mp_tensor_data(v->cast_cache) : NULL));
            if (refresh)
                v->cache_version = v->version;
        }
        *applied = 1;
    }
    if (ls)
        MP_TRY(mp_loss_scale_update(ls, finite));
    if (iterations) {
        void *p;
        MP_TRY(mp_variable_data_for_write(iterations, &p));
        ((int64_t *)p)[0] = t;
    }
    return MP_OK;
}
