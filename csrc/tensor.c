/* tensor.c — storage and tensor lifetime: new, view, wrap, refcounts, ids.
 * Owns allocation through the device's backend table; knows nothing of ops or Python.
 * NOTE: refcounts are atomic because replicas run on several threads. */
#include <stdlib.h>
#include <string.h>

#include "mixprec.h"

static int64_t id_counter;

int64_t mp_ids_issued(void) { return __atomic_load_n(&id_counter, __ATOMIC_RELAXED); }
int64_t mp_next_id(void) { return __atomic_add_fetch(&id_counter, 1, __ATOMIC_RELAXED); }

mp_status mp_shape_check(int ndim, const int64_t *shape, int64_t *numel_out) {
    if (ndim < 0 || ndim > MP_MAX_DIMS)
        return mp_error_set(MP_ERR_VALUE, "rank %d is out of range: mixprec tensors have at most %d dimensions",
                            ndim, MP_MAX_DIMS);
    int64_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0)
            return mp_error_set(MP_ERR_VALUE, "dimension %d has negative size %lld", d, (long long)shape[d]);
        if (shape[d] != 0 && numel > INT64_MAX / 8 / shape[d])
            return mp_error_set(MP_ERR_MEMORY, "a tensor of this shape is too large (dimension %d = %lld)", d,
                                (long long)shape[d]);
        numel *= shape[d];
    }
    if (numel_out)
        *numel_out = numel;
    return MP_OK;
}

static mp_status tensor_alloc_header(mp_dtype dt, int ndim, const int64_t *shape, mp_tensor **out) {
    if (!mp_dtype_valid(dt))
        return mp_error_set(MP_ERR_VALUE, "invalid dtype code %d", (int)dt);
    int64_t numel;
    MP_TRY(mp_shape_check(ndim, shape, &numel));
    mp_tensor *t = calloc(1, sizeof *t);
    if (!t)
        return mp_error_set(MP_ERR_MEMORY, "out of host memory allocating a tensor header");
    t->refcount = 1;
    t->dtype = dt;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++)
        t->shape[d] = shape[d];
    t->numel = numel;
    t->id = mp_next_id();
    *out = t;
    return MP_OK;
}

static _Thread_local mp_storage *reuse_offer;

void mp_storage_offer(mp_storage *s) { reuse_offer = s; }

/* The offered storage, when it fits exactly and nobody but the offerer holds it. */
static mp_storage *take_offer(mp_device dev, size_t nbytes) {
    mp_storage *s = reuse_offer;
    if (!s || s->deleter || !mp_device_eq(s->device, dev) || s->nbytes != nbytes ||
        __atomic_load_n(&s->refcount, __ATOMIC_ACQUIRE) != 1)
        return NULL;
    reuse_offer = NULL;
    __atomic_add_fetch(&s->refcount, 1, __ATOMIC_RELAXED);
    return s;
}

/* A storage header for t's bytes on dev (refcount 1, no data yet); frees t when out of
 * memory, so callers can MP_TRY it. */
static mp_status storage_header(mp_tensor *t, mp_device dev, mp_storage **out) {
    mp_storage *s = calloc(1, sizeof *s);
    if (!s) {
        free(t);
        return mp_error_set(MP_ERR_MEMORY, "out of host memory allocating a storage header");
    }
    s->refcount = 1;
    s->device = dev;
    s->nbytes = (size_t)t->numel * mp_dtype_size(t->dtype);
    *out = s;
    return MP_OK;
}
mp_status mp_tensor_new(mp_dtype dt, int ndim, const int64_t *shape, mp_device dev, mp_tensor **out) {
    const mp_backend *be = mp_backend_get(dev.type);
    if (!be || dev.index < 0 || dev.index >= mp_device_count(dev.type))
        return mp_error_set(MP_ERR_DEVICE, "device %s:%d is not available",
                            dev.type == MP_DEV_CUDA ? "GPU" : "CPU", dev.index);
    if (!be->alloc || !be->free)
        return mp_error_set(MP_ERR_NOT_IMPLEMENTED, "the %s backend cannot allocate memory", be->name);
    mp_tensor *t = NULL;
    MP_TRY(tensor_alloc_header(dt, ndim, shape, &t));
    mp_storage *reused = take_offer(dev, (size_t)t->numel * mp_dtype_size(dt));
    if (reused) { /* a replayed graph's buffer from its previous run (graph.c) */
        t->storage = reused;
        *out = t;
        return MP_OK;
    }
    mp_storage *s = NULL;
    MP_TRY(storage_header(t, dev, &s));
    mp_status st = MP_BACKEND_CALL(be, alloc, dev, s->nbytes, &s->data);
    if (st != MP_OK) {
        free(s);
        free(t);
        return st;
    }
    t->storage = s;
    *out = t;
    return MP_OK;
}

mp_status mp_tensor_view(mp_tensor *base, size_t offset, mp_dtype dt, int ndim, const int64_t *shape,
                         mp_tensor **out) {
    mp_tensor *t = NULL;
    MP_TRY(tensor_alloc_header(dt, ndim, shape, &t));
    size_t need = offset + (size_t)t->numel * mp_dtype_size(dt);
    if (need > base->storage->nbytes) {
        free(t);
        return mp_error_set(MP_ERR_INTERNAL, "view of %zu bytes at offset %zu exceeds its storage of %zu bytes",
                            need - offset, offset, base->storage->nbytes);
    }
    t->storage = base->storage;
    __atomic_add_fetch(&t->storage->refcount, 1, __ATOMIC_RELAXED);
    t->offset = offset;
    if (base->arena && dt == base->dtype) { /* a view of string records reads the same arena */
        t->arena = base->arena;
        __atomic_add_fetch(&t->arena->refcount, 1, __ATOMIC_RELAXED);
    }
    *out = t;
    return MP_OK;
}

mp_status mp_tensor_wrap(void *data, mp_dtype dt, int ndim, const int64_t *shape, mp_device dev,
                         void (*deleter)(void *), void *ctx, mp_tensor **out) {
    mp_tensor *t = NULL;
    MP_TRY(tensor_alloc_header(dt, ndim, shape, &t));
    mp_storage *s = NULL;
    MP_TRY(storage_header(t, dev, &s));
    s->data = data;
    s->deleter = deleter;
    s->deleter_ctx = ctx;
    t->storage = s;
    *out = t;
    return MP_OK;
}

void mp_tensor_incref(mp_tensor *t) {
    if (t)
        __atomic_add_fetch(&t->refcount, 1, __ATOMIC_RELAXED);
}

void mp_storage_incref(mp_storage *s) {
    if (s)
        __atomic_add_fetch(&s->refcount, 1, __ATOMIC_RELAXED);
}

void mp_storage_decref(mp_storage *s);

static void storage_decref(mp_storage *s) {
    if (__atomic_sub_fetch(&s->refcount, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    if (s->deleter) {
        s->deleter(s->deleter_ctx);
    } else if (s->data) {
        const mp_backend *be = mp_backend_get(s->device.type);
        if (be && be->free) /* a backend removed (tests) leaks its memory rather than crash */
            be->free(s->device, s->data, s->nbytes);
    }
    free(s);
}

void mp_storage_decref(mp_storage *s) {
    if (s)
        storage_decref(s);
}

void mp_tensor_decref(mp_tensor *t) {
    if (!t)
        return;
    if (__atomic_sub_fetch(&t->refcount, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    storage_decref(t->storage);
    if (t->arena)
        storage_decref(t->arena);
    free(t);
}

int mp_tensor_storage_shared(const mp_tensor *t) {
    /* NOTE: borrowed memory (a deleter: DLPack, a frozen NumPy array) counts as shared: it
     * belongs to its producer and may be read-only, so a variable never writes into it */
    return __atomic_load_n(&t->storage->refcount, __ATOMIC_ACQUIRE) > 1 ||
           __atomic_load_n(&t->refcount, __ATOMIC_ACQUIRE) > 1 || t->storage->deleter != NULL;
}

/* NOTE: host tensors only (the CPU backend's memory). */
double mp_tensor_get_f64(const mp_tensor *t, int64_t i) {
    const void *p = mp_tensor_data(t);
    switch (t->dtype) {
    case MP_F32: return ((const float *)p)[i];
    case MP_F16: return mp_f16_to_f32(((const uint16_t *)p)[i]);
    case MP_BF16: return mp_bf16_to_f32(((const uint16_t *)p)[i]);
    case MP_F64: return ((const double *)p)[i];
    case MP_I32: return ((const int32_t *)p)[i];
    case MP_I64: return (double)((const int64_t *)p)[i];
    case MP_U8: return ((const uint8_t *)p)[i];
    case MP_BOOL: return ((const uint8_t *)p)[i] != 0;
    case MP_I8: return ((const int8_t *)p)[i];
    default: return 0.0;
    }
}
