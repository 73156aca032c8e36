/* strings.c — string tensors in the generic op layer: the builder, take, and mp_str_op_exec
 * (layout ops through an int64 index proxy, Add as concatenation, Equal/NotEqual, refusals).
 * It must not hold string-specific text processing (strings_text.c) nor run on a GPU: the
 * records and the arena live on the host. */
#include <stdlib.h>
#include <string.h>

#include "strings.h"

static const mp_device host = {MP_DEV_CPU, 0};

/* ------------------------------------------------------------------ builder */

mp_status mp_strb_init(mp_strb *b, int ndim, const int64_t *shape, size_t reserve) {
    memset(b, 0, sizeof *b);
    MP_TRY(mp_tensor_new(MP_STRING, ndim, shape, host, &b->t));
    memset(mp_tensor_data(b->t), 0, mp_tensor_nbytes(b->t));
    b->cap = reserve < 64 ? 64 : reserve;
    b->buf = malloc(b->cap);
    if (!b->buf) {
        mp_tensor_decref(b->t);
        b->t = NULL;
        return mp_error_set(MP_ERR_MEMORY, "out of host memory for a string tensor of %zu bytes", reserve);
    }
    return MP_OK;
}

mp_status mp_strb_append(mp_strb *b, const char *p, size_t n) {
    if (b->len + n > b->cap) {
        size_t cap = b->cap * 2;
        while (cap < b->len + n)
            cap *= 2;
        char *nb = realloc(b->buf, cap);
        if (!nb)
            return mp_error_set(MP_ERR_MEMORY, "out of host memory growing a string tensor to %zu bytes", cap);
        b->buf = nb;
        b->cap = cap;
    }
    if (n)
        memcpy(b->buf + b->len, p, n);
    b->len += n;
    return MP_OK;
}

void mp_strb_set(mp_strb *b, int64_t i, size_t start) {
    mp_strrec *r = (mp_strrec *)mp_tensor_data(b->t) + i;
    r->off = (int64_t)start;
    r->len = (int64_t)(b->len - start);
}

mp_status mp_strb_put(mp_strb *b, int64_t i, const char *p, size_t n) {
    size_t start = b->len;
    MP_TRY(mp_strb_append(b, p, n));
    mp_strb_set(b, i, start);
    return MP_OK;
}

static void free_ctx(void *p) { free(p); }

mp_status mp_strb_finish(mp_strb *b, mp_tensor **out) {
    mp_storage *s = calloc(1, sizeof *s);
    if (!s) {
        mp_strb_abort(b);
        return mp_error_set(MP_ERR_MEMORY, "out of host memory for a string arena header");
    }
    s->refcount = 1;
    s->device = host;
    s->data = b->buf;
    s->nbytes = b->len;
    s->deleter = free_ctx;
    s->deleter_ctx = b->buf;
    b->t->arena = s;
    *out = b->t;
    b->t = NULL;
    b->buf = NULL;
    return MP_OK;
}

void mp_strb_abort(mp_strb *b) {
    mp_tensor_decref(b->t);
    free(b->buf);
    b->t = NULL;
    b->buf = NULL;
}

/* ------------------------------------------------------------------ take / concat */

mp_status mp_str_take(mp_tensor *src, const int64_t *idx, int64_t n, int ndim, const int64_t *shape,
                      mp_tensor **out) {
    mp_tensor *t;
    MP_TRY(mp_tensor_new(MP_STRING, ndim, shape, host, &t));
    if (t->numel != n) {
        mp_tensor_decref(t);
        return mp_error_set(MP_ERR_INTERNAL, "string take: %lld indices for %lld elements", (long long)n,
                            (long long)t->numel);
    }
    const mp_strrec *sr = mp_str_recs(src);
    mp_strrec *dr = (mp_strrec *)mp_tensor_data(t);
    for (int64_t i = 0; i < n; i++) {
        if (idx[i] < 0 || idx[i] >= src->numel) {
            mp_tensor_decref(t);
            return mp_error_set(MP_ERR_INDEX, "string element index %lld is not in [0, %lld)", (long long)idx[i],
                                (long long)src->numel);
        }
        dr[i] = sr[idx[i]];
    }
    t->arena = src->arena;
    mp_storage_incref(t->arena);
    *out = t;
    return MP_OK;
}

/* The elements of n string tensors one after another, 1-D, in a fresh arena. */
static mp_status concat_flat(int n, mp_tensor *const *in, mp_tensor **out) {
    int64_t total = 0;
    size_t bytes = 0;
    for (int k = 0; k < n; k++) {
        total += in[k]->numel;
        bytes += in[k]->arena ? in[k]->arena->nbytes : 0;
    }
    mp_strb b;
    MP_TRY(mp_strb_init(&b, 1, &total, bytes));
    int64_t o = 0;
    for (int k = 0; k < n; k++)
        for (int64_t i = 0; i < in[k]->numel; i++, o++) {
            int64_t len;
            const char *p = mp_str_at(in[k], i, &len);
            mp_status st = mp_strb_put(&b, o, p, (size_t)len);
            if (st != MP_OK) {
                mp_strb_abort(&b);
                return st;
            }
        }
    return mp_strb_finish(&b, out);
}

/* An int64 host tensor of t's shape holding base, base + 1, ... (t's flat indices). */
static mp_status index_proxy(const mp_tensor *t, int64_t base, mp_tensor **out) {
    MP_TRY(mp_tensor_new(MP_I64, t->ndim, t->shape, host, out));
    int64_t *p = mp_tensor_data(*out);
    for (int64_t i = 0; i < t->numel; i++)
        p[i] = base + i;
    return MP_OK;
}

static mp_status take_by(mp_tensor *src, mp_tensor *idx, mp_tensor **out) {
    return mp_str_take(src, mp_tensor_data(idx), idx->numel, idx->ndim, idx->shape, out);
}

mp_status mp_str_broadcast_index(mp_tensor *a, mp_tensor *b, mp_tensor **ia, mp_tensor **ib) {
    mp_tensor *pa = NULL, *pb = NULL, *za = NULL, *zb = NULL;
    *ia = *ib = NULL;
    mp_status st = index_proxy(a, 0, &pa);
    if (st == MP_OK)
        st = index_proxy(b, 0, &pb);
    if (st == MP_OK)
        st = mp_full(MP_I64, a->ndim, a->shape, 0.0, host, &za);
    if (st == MP_OK)
        st = mp_full(MP_I64, b->ndim, b->shape, 0.0, host, &zb);
    if (st == MP_OK) {
        mp_tensor *x[2] = {pa, zb};
        st = mp_op_exec(MP_OP_ADD, 2, x, NULL, ia);
    }
    if (st == MP_OK) {
        mp_tensor *x[2] = {za, pb};
        st = mp_op_exec(MP_OP_ADD, 2, x, NULL, ib);
    }
    mp_tensor_decref(pa);
    mp_tensor_decref(pb);
    mp_tensor_decref(za);
    mp_tensor_decref(zb);
    if (st != MP_OK) {
        mp_tensor_decref(*ia);
        mp_tensor_decref(*ib);
        *ia = *ib = NULL;
    }
    return st;
}

/* ------------------------------------------------------------------ generic ops */

int mp_str_involved(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at) {
    for (int i = 0; i < n_in; i++)
        if (in[i]->dtype == MP_STRING)
            return 1;
    (void)op;
    return at && at->dtype == MP_STRING; /* a string target dtype (cast, fill, one_hot ...) */
}

static int is_layout_op(mp_op op) {
    switch (op) {
    case MP_OP_IDENTITY: case MP_OP_STOP_GRADIENT: case MP_OP_RESHAPE: case MP_OP_TRANSPOSE:
    case MP_OP_CONCAT: case MP_OP_STACK: case MP_OP_STRIDED_SLICE: case MP_OP_BROADCAST_TO:
    case MP_OP_SHAPE: case MP_OP_INDEX_T: case MP_OP_GATHER: case MP_OP_STRIDED_SLICE_T:
    case MP_OP_SLICE_T: case MP_OP_GATHER_ND: case MP_OP_REVERSE: case MP_OP_ROLL: case MP_OP_WHERE:
        return 1;
    default:
        return 0;
    }
}

/* Which inputs carry the op's elements (the others are indices, shapes, conditions). */
static int is_element_input(mp_op op, int i) {
    if (op == MP_OP_CONCAT || op == MP_OP_STACK)
        return 1;
    if (op == MP_OP_WHERE)
        return i > 0;
    return i == 0;
}

static mp_status refuse(mp_op op) {
    return mp_error_set(MP_ERR_DTYPE, "Value for attr 'T' of string is not in the list of allowed values [Op:%s]",
                        mp_op_get_info(op)->name);
}

static mp_status run_layout(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at, mp_tensor **out) {
    mp_tensor *stack_x[8], **x = stack_x, *elems[8], **el = elems;
    if (n_in > 8) {
        x = calloc((size_t)n_in, sizeof *x);
        el = calloc((size_t)n_in, sizeof *el);
        if (!x || !el) {
            free(x == stack_x ? NULL : x);
            free(el == elems ? NULL : el);
            return mp_error_set(MP_ERR_MEMORY, "out of host memory for %d inputs", n_in);
        }
    }
    memset(x, 0, sizeof *x * (size_t)(n_in > 0 ? n_in : 1));
    int ne = 0;
    int64_t base = 0;
    mp_status st = MP_OK;
    for (int i = 0; i < n_in && st == MP_OK; i++) {
        int elem = is_element_input(op, i);
        if (elem != (in[i]->dtype == MP_STRING)) {
            st = elem ? mp_error_set(MP_ERR_DTYPE,
                                     "cannot compute %s as input #%d(zero-based) was expected to be a string tensor "
                                     "but is a %s tensor [Op:%s]",
                                     mp_op_get_info(op)->name, i, mp_dtype_name(in[i]->dtype), mp_op_get_info(op)->name)
                      : mp_error_set(MP_ERR_DTYPE, "%s: input #%d must not be a string tensor",
                                     mp_op_get_info(op)->name, i);
            break;
        }
        if (elem) {
            st = index_proxy(in[i], base, &x[i]);
            base += in[i]->numel;
            el[ne++] = in[i];
        } else if (mp_tensor_device(in[i]).type != MP_DEV_CPU) {
            st = mp_copy_to_device(in[i], host, &x[i]);
        } else {
            mp_tensor_incref(in[i]);
            x[i] = in[i];
        }
    }
    mp_tensor *res = NULL, *src = NULL;
    if (st == MP_OK)
        st = mp_op_exec(op, n_in, x, at, &res);
    if (st == MP_OK && res->dtype == MP_I64 && op != MP_OP_SHAPE) {
        if (ne == 1) {
            src = el[0];
            mp_tensor_incref(src);
        } else {
            st = concat_flat(ne, el, &src);
        }
        if (st == MP_OK)
            st = take_by(src, res, out);
        mp_tensor_decref(res);
        mp_tensor_decref(src);
    } else if (st == MP_OK) {
        *out = res;
    }
    for (int i = 0; i < n_in; i++)
        mp_tensor_decref(x[i]);
    if (x != stack_x)
        free(x);
    if (el != elems)
        free(el);
    return st;
}

static int bytes_eq(mp_tensor *a, int64_t i, mp_tensor *b, int64_t j) {
    int64_t la, lb;
    const char *pa = mp_str_at(a, i, &la), *pb = mp_str_at(b, j, &lb);
    return la == lb && (la == 0 || memcmp(pa, pb, (size_t)la) == 0);
}

static mp_status run_pairwise(mp_op op, mp_tensor *a, mp_tensor *b, mp_tensor **out) {
    if (a->dtype != MP_STRING || b->dtype != MP_STRING) {
        int bad = a->dtype == MP_STRING ? 1 : 0;
        return mp_error_set(MP_ERR_DTYPE,
                            "cannot compute %s as input #%d(zero-based) was expected to be a string tensor but is a "
                            "%s tensor [Op:%s]",
                            mp_op_get_info(op)->name, bad, mp_dtype_name((bad ? b : a)->dtype), mp_op_get_info(op)->name);
    }
    mp_tensor *ia, *ib;
    MP_TRY(mp_str_broadcast_index(a, b, &ia, &ib));
    const int64_t *xa = mp_tensor_data(ia), *xb = mp_tensor_data(ib);
    mp_status st = MP_OK;
    if (op == MP_OP_ADD) {
        mp_strb sb;
        st = mp_strb_init(&sb, ia->ndim, ia->shape, 0);
        for (int64_t i = 0; i < ia->numel && st == MP_OK; i++) {
            int64_t la, lb;
            const char *pa = mp_str_at(a, xa[i], &la), *pb = mp_str_at(b, xb[i], &lb);
            size_t start = mp_strb_mark(&sb);
            st = mp_strb_append(&sb, pa, (size_t)la);
            if (st == MP_OK)
                st = mp_strb_append(&sb, pb, (size_t)lb);
            if (st == MP_OK)
                mp_strb_set(&sb, i, start);
        }
        if (st == MP_OK)
            st = mp_strb_finish(&sb, out);
        else if (sb.t)
            mp_strb_abort(&sb);
    } else {
        st = mp_tensor_new(MP_BOOL, ia->ndim, ia->shape, host, out);
        if (st == MP_OK) {
            uint8_t *o = mp_tensor_data(*out);
            int want = op == MP_OP_EQUAL;
            for (int64_t i = 0; i < ia->numel; i++)
                o[i] = (uint8_t)(bytes_eq(a, xa[i], b, xb[i]) == want);
        }
    }
    mp_tensor_decref(ia);
    mp_tensor_decref(ib);
    return st;
}

/* Unique on a 1-D string tensor (ops.def UNIQUE's attrs): the vocabulary table of x itself
 * maps each element to its first occurrence. */
static mp_status run_unique(mp_tensor *x, const mp_attrs *at, mp_tensor **out) {
    if (x->ndim != 1)
        return mp_error_set(MP_ERR_SHAPE, "unique expects a 1D vector. [Op:Unique]");
    mp_str_table *t;
    MP_TRY(mp_str_table_new(x, &t));
    mp_tensor *first = NULL;
    mp_status st = mp_str_table_lookup(t, x, 0, -1, &first);
    mp_str_table_free(t);
    MP_TRY(st);
    const int64_t *f = mp_tensor_data(first);
    int64_t n = x->numel, nu = 0;
    int64_t *rank = malloc((size_t)(n ? n : 1) * sizeof *rank), *cnt = calloc((size_t)(n ? n : 1), sizeof *cnt);
    int64_t *pos = malloc((size_t)(n ? n : 1) * sizeof *pos);
    if (!rank || !cnt || !pos) {
        st = mp_error_set(MP_ERR_MEMORY, "out of host memory for unique of %lld strings", (long long)n);
    } else {
        for (int64_t i = 0; i < n; i++)
            if (f[i] == i) {
                pos[nu] = i;
                rank[i] = nu++;
            }
        for (int64_t i = 0; i < n; i++)
            cnt[rank[f[i]]]++;
        int mode = (int)at->i0;
        mp_dtype dt = mode == 1 ? MP_I64 : (mp_dtype)at->dtype;
        int64_t len = mode == 0 ? n : nu;
        st = dt == MP_I32 || dt == MP_I64 ? mp_tensor_new(dt, 1, &len, host, out)
                                          : mp_error_set(MP_ERR_DTYPE, "unique: index dtype must be int32 or int64");
        for (int64_t i = 0; st == MP_OK && i < len; i++) {
            int64_t v = mode == 0 ? rank[f[i]] : mode == 1 ? pos[i] : cnt[i];
            if (dt == MP_I32)
                ((int32_t *)mp_tensor_data(*out))[i] = (int32_t)v;
            else
                ((int64_t *)mp_tensor_data(*out))[i] = v;
        }
    }
    free(rank);
    free(cnt);
    free(pos);
    mp_tensor_decref(first);
    return st;
}

mp_status mp_str_op_exec(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at, mp_tensor **out) {
    static const mp_attrs none;
    if (!at)
        at = &none;
    *out = NULL;
    if (op == MP_OP_CAST) {
        mp_dtype from = in[0]->dtype, to = (mp_dtype)at->dtype;
        if (from == to) {
            mp_tensor_incref(in[0]);
            *out = in[0];
            return MP_OK;
        }
        return mp_error_set(MP_ERR_NOT_IMPLEMENTED,
                            "Cast %s to %s is not supported [Op:Cast]%s",
                            from == MP_F32 ? "float" : mp_dtype_name(from), to == MP_F32 ? "float" : mp_dtype_name(to),
                            from == MP_STRING ? " (use tf.strings.to_number to parse numbers)"
                                              : " (use tf.strings.as_string to format numbers)");
    }
    if (op == MP_OP_FILL) {
        if (at->f0 != 0.0)
            return mp_error_set(MP_ERR_TYPE, "Cannot convert %g to EagerTensor of dtype string", at->f0);
        mp_strb b;
        int64_t shape[MP_MAX_DIMS];
        for (int d = 0; d < at->n_ints; d++)
            shape[d] = at->ints[d];
        MP_TRY(mp_strb_init(&b, at->n_ints, shape, 0));
        return mp_strb_finish(&b, out);
    }
    if (op == MP_OP_ONE_HOT && at->dtype == MP_STRING) /* TensorFlow converts on_value first */
        return mp_error_set(MP_ERR_TYPE, "Cannot convert %g to EagerTensor of dtype string", at->f0);
    if (op == MP_OP_UNIQUE && in[0]->dtype == MP_STRING)
        return run_unique(in[0], at, out);
    if (op == MP_OP_ADD || op == MP_OP_EQUAL || op == MP_OP_NOT_EQUAL)
        return run_pairwise(op, in[0], in[1], out);
    if (is_layout_op(op)) {
        if (op == MP_OP_IDENTITY || op == MP_OP_STOP_GRADIENT) {
            mp_tensor_incref(in[0]);
            *out = in[0];
            return MP_OK;
        }
        return run_layout(op, n_in, in, at, out);
    }
    return refuse(op);
}
