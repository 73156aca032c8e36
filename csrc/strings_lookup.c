/* strings_lookup.c — vocabulary tables for Keras' StringLookup / IntegerLookup / TextVectorization:
 * an open-addressing hash table over string (bytes) or int64 keys, the lookup of a tensor's
 * elements, and unique-with-counts (adapt). It must not decide Keras' id layout (OOV/mask
 * offsets come in as arguments from the Python face). */
#include <stdlib.h>
#include <string.h>

#include "strings.h"

static const mp_device host = {MP_DEV_CPU, 0};

struct mp_str_table {
    mp_tensor *keys;  /* MP_STRING or MP_I64, 1-D, the vocabulary (a reference) */
    int64_t *slots;   /* key index + 1, 0 = empty */
    uint64_t mask;
};

static uint64_t mix64(uint64_t v) {
    v ^= v >> 33;
    v *= 0xff51afd7ed558ccdULL;
    v ^= v >> 33;
    v *= 0xc4ceb9fe1a85ec53ULL;
    return v ^ (v >> 33);
}

static uint64_t key_hash(const mp_tensor *t, int64_t i) {
    if (t->dtype == MP_STRING) {
        int64_t n;
        const char *p = mp_str_at(t, i, &n);
        return mp_fingerprint64(p, (size_t)n);
    }
    return mix64((uint64_t)((const int64_t *)mp_tensor_data(t))[i]);
}

static int key_eq(const mp_tensor *a, int64_t i, const mp_tensor *b, int64_t j) {
    if (a->dtype == MP_STRING) {
        int64_t la, lb;
        const char *pa = mp_str_at(a, i, &la), *pb = mp_str_at(b, j, &lb);
        return la == lb && (la == 0 || memcmp(pa, pb, (size_t)la) == 0);
    }
    return ((const int64_t *)mp_tensor_data(a))[i] == ((const int64_t *)mp_tensor_data(b))[j];
}

/* The slot of key j of `probe` in t: its key index + 1 when present, else 0; *slot_out the
 * slot to insert at. */
static int64_t find(const mp_str_table *t, const mp_tensor *probe, int64_t j, uint64_t *slot_out) {
    uint64_t s = key_hash(probe, j) & t->mask;
    while (t->slots[s]) {
        if (key_eq(t->keys, t->slots[s] - 1, probe, j)) {
            if (slot_out)
                *slot_out = s;
            return t->slots[s];
        }
        s = (s + 1) & t->mask;
    }
    if (slot_out)
        *slot_out = s;
    return 0;
}

static mp_status check_keys(const mp_tensor *k) {
    if (k->dtype != MP_STRING && k->dtype != MP_I64)
        return mp_error_set(MP_ERR_DTYPE, "vocabulary keys must be string or int64, got %s", mp_dtype_name(k->dtype));
    if (mp_tensor_device(k).type != MP_DEV_CPU)
        return mp_error_set(MP_ERR_DEVICE, "vocabulary keys must be on the host");
    return MP_OK;
}

static mp_status table_alloc(mp_tensor *keys, int64_t n, mp_str_table **out) {
    mp_str_table *t = calloc(1, sizeof *t);
    uint64_t cap = 16;
    while (cap < (uint64_t)n * 2 + 1)
        cap <<= 1;
    if (t)
        t->slots = calloc(cap, sizeof *t->slots);
    if (!t || !t->slots) {
        free(t);
        return mp_error_set(MP_ERR_MEMORY, "out of host memory for a vocabulary of %lld keys", (long long)n);
    }
    t->mask = cap - 1;
    t->keys = keys;
    mp_tensor_incref(keys);
    *out = t;
    return MP_OK;
}

mp_status mp_str_table_new(mp_tensor *keys, mp_str_table **out) {
    MP_TRY(check_keys(keys));
    mp_str_table *t;
    MP_TRY(table_alloc(keys, keys->numel, &t));
    for (int64_t i = 0; i < keys->numel; i++) {
        uint64_t s;
        if (find(t, keys, i, &s) == 0) /* a repeated key keeps its first index */
            t->slots[s] = i + 1;
    }
    *out = t;
    return MP_OK;
}

void mp_str_table_free(mp_str_table *t) {
    if (!t)
        return;
    mp_tensor_decref(t->keys);
    free(t->slots);
    free(t);
}

int64_t mp_str_table_size(const mp_str_table *t) { return t->keys->numel; }

mp_status mp_str_table_lookup(const mp_str_table *t, mp_tensor *x, int64_t offset, int64_t default_id,
                              mp_tensor **out) {
    if (x->dtype != t->keys->dtype)
        return mp_error_set(MP_ERR_DTYPE, "lookup of %s values in a table of %s keys", mp_dtype_name(x->dtype),
                            mp_dtype_name(t->keys->dtype));
    if (mp_tensor_device(x).type != MP_DEV_CPU)
        return mp_error_set(MP_ERR_DEVICE, "lookup values must be on the host");
    MP_TRY(mp_tensor_new(MP_I64, x->ndim, x->shape, host, out));
    int64_t *o = mp_tensor_data(*out);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t k = find(t, x, i, NULL);
        o[i] = k ? k - 1 + offset : default_id;
    }
    return MP_OK;
}

mp_status mp_str_unique_counts(mp_tensor *x, mp_tensor **uniq, mp_tensor **counts) {
    MP_TRY(check_keys(x));
    mp_str_table *t;
    MP_TRY(table_alloc(x, x->numel, &t));
    int64_t *first = malloc((size_t)(x->numel ? x->numel : 1) * sizeof *first);
    int64_t *cnt = calloc((size_t)(x->numel ? x->numel : 1), sizeof *cnt);
    int64_t nu = 0;
    mp_status st = MP_OK;
    if (!first || !cnt) {
        st = mp_error_set(MP_ERR_MEMORY, "out of host memory counting %lld values", (long long)x->numel);
    } else {
        /* slots hold x's element index + 1 of each key's first occurrence; cnt by that index */
        for (int64_t i = 0; i < x->numel; i++) {
            uint64_t s;
            int64_t k = find(t, x, i, &s);
            if (!k) {
                t->slots[s] = i + 1;
                first[nu++] = i;
                k = i + 1;
            }
            cnt[k - 1]++;
        }
    }
    if (st == MP_OK) {
        if (x->dtype == MP_STRING) {
            st = mp_str_take(x, first, nu, 1, &nu, uniq);
        } else {
            st = mp_tensor_new(MP_I64, 1, &nu, host, uniq);
            if (st == MP_OK)
                for (int64_t u = 0; u < nu; u++)
                    ((int64_t *)mp_tensor_data(*uniq))[u] = ((const int64_t *)mp_tensor_data(x))[first[u]];
        }
    }
    if (st == MP_OK) {
        st = mp_tensor_new(MP_I64, 1, &nu, host, counts);
        if (st == MP_OK)
            for (int64_t u = 0; u < nu; u++)
                ((int64_t *)mp_tensor_data(*counts))[u] = cnt[first[u]];
        else {
            mp_tensor_decref(*uniq);
            *uniq = NULL;
        }
    }
    free(first);
    free(cnt);
    mp_str_table_free(t);
    return st;
}
