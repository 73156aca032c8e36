/* variable.c — mutable slots of tensors (tf.Variable) and the autocast read rule.
 * Owns copy-on-write assignment (earlier reads and the initial value never change), the per-thread autocast
 * dtype set by layers under a mixed policy, and the cast cache that makes a second read
 * in the same step free. Knows nothing of layers or optimizers. */
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "mixprec.h"

static _Thread_local int autocast_dtype = -1;

int mp_autocast_set(int dtype) {
    int prev = autocast_dtype;
    autocast_dtype = dtype;
    return prev;
}
int mp_autocast_get(void) { return autocast_dtype; }

/* A copy (or cast) of x on x's device through the backend's copy_d2d / cast slots. */
static mp_status copy_or_cast(mp_device dev, const mp_tensor *src, mp_tensor *dst) {
    const mp_backend *be = mp_backend_get(dev.type);
    if (!be)
        return mp_error_set(MP_ERR_DEVICE, "variable: the backend of its device is gone");
    if (src->dtype == dst->dtype) {
        return MP_BACKEND_CALL(be, copy_d2d, dev, mp_tensor_data(dst), mp_tensor_data(src), mp_tensor_nbytes(dst));
    }
    return MP_BACKEND_CALL(be, cast, dev, mp_tensor_data(src), src->dtype, mp_tensor_data(dst), dst->dtype, dst->numel);
}

static mp_status clone(mp_tensor *x, mp_dtype dt, mp_tensor **out) {
    mp_device dev = mp_tensor_device(x);
    MP_TRY(mp_tensor_new(dt, x->ndim, x->shape, dev, out));
    mp_status st = x->numel ? copy_or_cast(dev, x, *out) : MP_OK;
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

mp_status mp_variable_new(mp_tensor *init, int trainable, mp_variable **out) {
    mp_variable *v = calloc(1, sizeof *v);
    if (!v)
        return mp_error_set(MP_ERR_MEMORY, "out of host memory allocating a variable");
    /* NOTE: the variable shares its initial value's storage under a header of its own (a
     * new id, so the tape never mistakes the initial tensor for a read of the variable):
     * every write goes through assign/data_for_write, which clone first while the storage
     * is shared or borrowed, so the initial tensor never changes and a fresh initializer
     * output (a 4 GB kernel) is not held twice */
    mp_status st = mp_tensor_view(init, init->offset, init->dtype, init->ndim, init->shape, &v->value);
    if (st != MP_OK) {
        free(v);
        return st;
    }
    v->refcount = 1;
    v->id = mp_next_id();
    v->trainable = trainable;
    v->cache_version = -1;
    mp_graph_note_variable_created();
    *out = v;
    return MP_OK;
}

void mp_variable_incref(mp_variable *v) {
    if (v)
        __atomic_add_fetch(&v->refcount, 1, __ATOMIC_RELAXED);
}

void mp_variable_decref(mp_variable *v) {
    if (!v || __atomic_sub_fetch(&v->refcount, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    mp_tensor_decref(v->value);
    mp_tensor_decref(v->cast_cache);
    free(v);
}

mp_tensor *mp_variable_peek(mp_variable *v) { return v->value; }

static mp_status view_of(mp_tensor *x, mp_tensor **out) {
    return mp_tensor_view(x, x->offset, x->dtype, x->ndim, x->shape, out);
}

mp_status mp_variable_read(mp_variable *v, mp_tensor **out) {
    mp_tensor *val = v->value;
    int want = -1;
    if (v->autocast && autocast_dtype >= 0 && mp_dtype_is_floating(val->dtype) &&
        mp_dtype_is_floating((mp_dtype)autocast_dtype) && (mp_dtype)autocast_dtype != val->dtype)
        want = autocast_dtype;
    if (want < 0) {
        MP_TRY(view_of(val, out));
    } else {
        if (!v->cast_cache || v->cache_version != v->version || (int)v->cast_cache->dtype != want) {
            mp_tensor *c;
            MP_TRY(clone(val, (mp_dtype)want, &c));
            mp_tensor_decref(v->cast_cache);
            v->cast_cache = c;
            v->cache_version = v->version;
        }
        MP_TRY(view_of(v->cast_cache, out));
    }
    mp_status st = mp_tape_record_read(v, val, *out);
    if (st == MP_OK && mp_graph_recording())
        st = mp_graph_record_read(v, want, *out);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

mp_status mp_variable_read_raw(mp_variable *v, mp_tensor **out) {
    MP_TRY(view_of(v->value, out));
    mp_status st = mp_graph_recording() ? mp_graph_record_read(v, MP_GNODE_READ_RAW, *out) : MP_OK;
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

/* tf-keras >= 2.18: inside the autocast scope an autocast variable also accepts values of
 * the scope's dtype (cast to its true dtype); outside it only its own dtype. */
int mp_variable_accepts(const mp_variable *v, mp_dtype dt) {
    mp_dtype own = v->value->dtype;
    return dt == own || (v->autocast && mp_dtype_is_floating(own) && (int)dt == autocast_dtype);
}

mp_status mp_variable_assign(mp_variable *v, mp_tensor *x) {
    mp_tensor *val = v->value;
    int same = x->ndim == val->ndim;
    for (int d = 0; same && d < x->ndim; d++)
        same = x->shape[d] == val->shape[d];
    if (!same)
        return mp_error_set(MP_ERR_SHAPE, "Cannot assign a value of %d dimension(s) and %lld element(s) to a variable "
                            "of %d dimension(s) and %lld element(s): shapes are incompatible",
                            x->ndim, (long long)x->numel, val->ndim, (long long)val->numel);
    if (x->dtype != val->dtype) {
        if (!mp_variable_accepts(v, x->dtype))
            return mp_error_set(MP_ERR_DTYPE, "conversion requested dtype %s for Tensor with dtype %s: a variable keeps "
                                "its dtype. hint: cast the value first",
                                mp_dtype_name(val->dtype), mp_dtype_name(x->dtype));
    }
    if (mp_graph_recording()) {
        MP_TRY(mp_graph_record_assign(v, x));
        if (mp_graph_effects_dry()) /* a trace without side effects: the replay assigns */
            return MP_OK;
    }
    mp_tensor *src = x;
    if (!mp_device_eq(mp_tensor_device(x), mp_tensor_device(val)))
        MP_TRY(mp_copy_to_device(x, mp_tensor_device(val), &src));
    else
        mp_tensor_incref(src);
    mp_status st;
    if (!mp_tensor_storage_shared(val)) {
        st = val->numel ? copy_or_cast(mp_tensor_device(val), src, val) : MP_OK;
    } else {
        mp_tensor *n;
        st = clone(src, val->dtype, &n);
        if (st == MP_OK) {
            mp_tensor_decref(v->value);
            v->value = n;
        }
    }
    mp_tensor_decref(src);
    if (st == MP_OK)
        v->version++;
    return st;
}

mp_status mp_variable_data_for_write(mp_variable *v, void **data) {
    if (mp_tensor_storage_shared(v->value)) {
        mp_tensor *n;
        MP_TRY(clone(v->value, v->value->dtype, &n));
        mp_tensor_decref(v->value);
        v->value = n;
    }
    v->version++;
    *data = mp_tensor_data(v->value);
    return MP_OK;
}

mp_status mp_variable_move_to(mp_variable *v, mp_device dev) {
    if (mp_device_eq(mp_tensor_device(v->value), dev))
        return MP_OK;
    mp_tensor *moved;
    MP_TRY(mp_copy_to_device(v->value, dev, &moved));
    mp_tensor_decref(v->value);
    v->value = moved;
    mp_tensor_decref(v->cast_cache); /* it was on the old device */
    v->cast_cache = NULL;
    v->version++;
    return MP_OK;
}
