/* strings_text.c — tf.strings' element-wise text ops on host string tensors: length, case,
 * strip, join, substr, to_number, as_string, split and the UTF-8 splits/decoding.
 * Each op is one loop over the elements building a new tensor; it must not know about
 * Python or about shapes beyond "same element count" (the Python face arranges layouts). */
#define _GNU_SOURCE
#include <ctype.h>
#include <locale.h>
#include <wctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strings.h"

static const mp_device host = {MP_DEV_CPU, 0};

static mp_status need_string(const mp_tensor *x, const char *op) {
    if (x->dtype != MP_STRING)
        return mp_error_set(MP_ERR_DTYPE, "cannot compute %s as input #0(zero-based) was expected to be a string "
                            "tensor but is a %s tensor [Op:%s]", op, mp_dtype_name(x->dtype), op);
    return MP_OK;
}

static int is_cont(unsigned char c) { return (c & 0xC0) == 0x80; }

/* Printable form of an element for error messages: b'...' with Python's escapes (short). */
static void quote(const char *p, int64_t n, char *buf, size_t cap) {
    size_t o = 0;
    buf[o++] = 'b';
    buf[o++] = '\'';
    for (int64_t i = 0; i < n && o + 6 < cap; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '\\' || c == '\'')
            o += (size_t)snprintf(buf + o, cap - o, "\\%c", c);
        else if (c >= 32 && c < 127)
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
    }
    buf[o++] = '\'';
    buf[o] = 0;
}

mp_status mp_str_length(mp_tensor *x, int utf8, mp_tensor **out) {
    MP_TRY(need_string(x, "StringLength"));
    MP_TRY(mp_tensor_new(MP_I32, x->ndim, x->shape, host, out));
    int32_t *o = mp_tensor_data(*out);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t n;
        const char *p = mp_str_at(x, i, &n);
        if (utf8) {
            int64_t c = 0;
            for (int64_t k = 0; k < n; k++)
                c += !is_cont((unsigned char)p[k]);
            n = c;
        }
        o[i] = (int32_t)n;
    }
    return MP_OK;
}

/* Apply f to every element; f appends the new bytes of element i. */
typedef mp_status (*elem_fn)(mp_strb *b, const char *p, int64_t n, const void *ctx);

static mp_status map_elems(mp_tensor *x, elem_fn f, const void *ctx, mp_tensor **out) {
    mp_strb b;
    MP_TRY(mp_strb_init(&b, x->ndim, x->shape, x->arena ? x->arena->nbytes : 0));
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t n;
        const char *p = mp_str_at(x, i, &n);
        size_t start = mp_strb_mark(&b);
        mp_status st = f(&b, p, n, ctx);
        if (st != MP_OK) {
            mp_strb_abort(&b);
            return st;
        }
        mp_strb_set(&b, i, start);
    }
    return mp_strb_finish(&b, out);
}

static locale_t utf8_locale(void) {
    static locale_t loc;
    static int tried;
    if (!__atomic_load_n(&tried, __ATOMIC_ACQUIRE)) {
        locale_t l = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
        loc = l;
        __atomic_store_n(&tried, 1, __ATOMIC_RELEASE);
    }
    return loc;
}

static int utf8_len(const unsigned char *p, const unsigned char *e, uint32_t *cp);

static mp_status put_utf8(mp_strb *b, uint32_t v) {
    char o[4];
    size_t n;
    if (v < 0x80) {
        o[0] = (char)v, n = 1;
    } else if (v < 0x800) {
        o[0] = (char)(0xC0 | (v >> 6)), o[1] = (char)(0x80 | (v & 0x3F)), n = 2;
    } else if (v < 0x10000) {
        o[0] = (char)(0xE0 | (v >> 12)), o[1] = (char)(0x80 | ((v >> 6) & 0x3F)), o[2] = (char)(0x80 | (v & 0x3F));
        n = 3;
    } else {
        o[0] = (char)(0xF0 | (v >> 18)), o[1] = (char)(0x80 | ((v >> 12) & 0x3F));
        o[2] = (char)(0x80 | ((v >> 6) & 0x3F)), o[3] = (char)(0x80 | (v & 0x3F)), n = 4;
    }
    return mp_strb_append(b, o, n);
}

static mp_status case_fn(mp_strb *b, const char *p, int64_t n, const void *ctx) {
    int upper = *(const int *)ctx & 1, uni = *(const int *)ctx & 2;
    locale_t loc = uni ? utf8_locale() : (locale_t)0;
    if (loc) { /* code point by code point; malformed bytes are kept as they are */
        const unsigned char *q = (const unsigned char *)p, *e = q + n;
        while (q < e) {
            uint32_t cp;
            int m = utf8_len(q, e, &cp);
            if (!m) {
                MP_TRY(mp_strb_append(b, (const char *)q, 1));
                q++;
                continue;
            }
            wint_t w = upper ? towupper_l((wint_t)cp, loc) : towlower_l((wint_t)cp, loc);
            MP_TRY(put_utf8(b, (uint32_t)w));
            q += m;
        }
        return MP_OK;
    }
    size_t start = b->len;
    MP_TRY(mp_strb_append(b, p, (size_t)n));
    for (size_t k = start; k < b->len; k++) {
        unsigned char c = (unsigned char)b->buf[k];
        if (c < 128)
            b->buf[k] = (char)(upper ? toupper(c) : tolower(c));
    }
    return MP_OK;
}

mp_status mp_str_case(mp_tensor *x, int mode, mp_tensor **out) {
    MP_TRY(need_string(x, mode & 1 ? "StringUpper" : "StringLower"));
    return map_elems(x, case_fn, &mode, out);
}

static int is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

static mp_status strip_fn(mp_strb *b, const char *p, int64_t n, const void *ctx) {
    (void)ctx;
    int64_t s = 0, e = n;
    while (s < e && is_space((unsigned char)p[s]))
        s++;
    while (e > s && is_space((unsigned char)p[e - 1]))
        e--;
    return mp_strb_append(b, p + s, (size_t)(e - s));
}

mp_status mp_str_strip(mp_tensor *x, mp_tensor **out) {
    MP_TRY(need_string(x, "StringStrip"));
    return map_elems(x, strip_fn, NULL, out);
}

mp_status mp_str_join(int n, mp_tensor *const *in, const char *sep, size_t sep_len, mp_tensor **out) {
    if (n < 1)
        return mp_error_set(MP_ERR_VALUE, "StringJoin needs at least one input");
    for (int k = 0; k < n; k++) {
        MP_TRY(need_string(in[k], "StringJoin"));
        if (in[k]->numel != in[0]->numel)
            return mp_error_set(MP_ERR_INTERNAL, "StringJoin: inputs of %lld and %lld elements",
                                (long long)in[0]->numel, (long long)in[k]->numel);
    }
    mp_strb b;
    MP_TRY(mp_strb_init(&b, in[0]->ndim, in[0]->shape, 0));
    for (int64_t i = 0; i < in[0]->numel; i++) {
        size_t start = mp_strb_mark(&b);
        for (int k = 0; k < n; k++) {
            int64_t len;
            const char *p = mp_str_at(in[k], i, &len);
            mp_status st = k ? mp_strb_append(&b, sep, sep_len) : MP_OK;
            if (st == MP_OK)
                st = mp_strb_append(&b, p, (size_t)len);
            if (st != MP_OK) {
                mp_strb_abort(&b);
                return st;
            }
        }
        mp_strb_set(&b, i, start);
    }
    return mp_strb_finish(&b, out);
}

mp_status mp_str_join_rows(mp_tensor *x, int64_t k, const char *sep, size_t sep_len, int ndim,
                           const int64_t *shape, mp_tensor **out) {
    MP_TRY(need_string(x, "ReduceJoin"));
    mp_strb b;
    MP_TRY(mp_strb_init(&b, ndim, shape, x->arena ? x->arena->nbytes : 0));
    int64_t rows = b.t->numel;
    if (rows * k != x->numel) {
        mp_strb_abort(&b);
        return mp_error_set(MP_ERR_INTERNAL, "ReduceJoin: %lld rows of %lld for %lld elements", (long long)rows,
                            (long long)k, (long long)x->numel);
    }
    for (int64_t r = 0; r < rows; r++) {
        size_t start = mp_strb_mark(&b);
        for (int64_t j = 0; j < k; j++) {
            int64_t len;
            const char *p = mp_str_at(x, r * k + j, &len);
            mp_status st = j ? mp_strb_append(&b, sep, sep_len) : MP_OK;
            if (st == MP_OK)
                st = mp_strb_append(&b, p, (size_t)len);
            if (st != MP_OK) {
                mp_strb_abort(&b);
                return st;
            }
        }
        mp_strb_set(&b, r, start);
    }
    return mp_strb_finish(&b, out);
}

/* Byte offset of UTF-8 character c in p[0..n) (n when past the end); *count = characters. */
static int64_t char_offset(const char *p, int64_t n, int64_t c) {
    int64_t seen = -1;
    for (int64_t k = 0; k < n; k++)
        if (!is_cont((unsigned char)p[k]) && ++seen == c)
            return k;
    return n;
}

static int64_t char_count(const char *p, int64_t n) {
    int64_t c = 0;
    for (int64_t k = 0; k < n; k++)
        c += !is_cont((unsigned char)p[k]);
    return c;
}

mp_status mp_str_substr(mp_tensor *x, mp_tensor *pos, mp_tensor *len, int utf8, mp_tensor **out) {
    MP_TRY(need_string(x, "Substr"));
    if (pos->dtype != MP_I64 || len->dtype != MP_I64 || (pos->numel != 1 && pos->numel != x->numel) ||
        (len->numel != 1 && len->numel != x->numel))
        return mp_error_set(MP_ERR_INTERNAL, "Substr: pos/len must be int64 of one or %lld elements",
                            (long long)x->numel);
    const int64_t *pp = mp_tensor_data(pos), *lp = mp_tensor_data(len);
    mp_strb b;
    MP_TRY(mp_strb_init(&b, x->ndim, x->shape, 0));
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t n;
        const char *p = mp_str_at(x, i, &n);
        int64_t size = utf8 ? char_count(p, n) : n;
        int64_t ps = pp[pos->numel == 1 ? 0 : i], ln = lp[len->numel == 1 ? 0 : i];
        if (ps > size || ps < -size) {
            char q[160];
            quote(p, n, q, sizeof q);
            mp_strb_abort(&b);
            return mp_error_set(MP_ERR_SHAPE, "pos %lld out of range for string %s at index %lld [Op:Substr]",
                                (long long)ps, q, (long long)i);
        }
        if (ps < 0)
            ps += size;
        int64_t end = ln < 0 || ln > size - ps ? size : ps + ln;
        int64_t s = ps, e = end;
        if (utf8) {
            s = char_offset(p, n, ps);
            e = char_offset(p, n, end);
        }
        mp_status st = mp_strb_put(&b, i, p + s, (size_t)(e - s));
        if (st != MP_OK) {
            mp_strb_abort(&b);
            return st;
        }
    }
    return mp_strb_finish(&b, out);
}

/* TensorFlow's SafeStringToNumeric: surrounding whitespace allowed, the whole rest consumed. */
static int parse_number(const char *p, int64_t n, mp_dtype dt, double *dv, int64_t *iv) {
    char buf[128];
    while (n > 0 && is_space((unsigned char)*p))
        p++, n--;
    while (n > 0 && is_space((unsigned char)p[n - 1]))
        n--;
    if (n <= 0 || n >= (int64_t)sizeof buf)
        return 0;
    memcpy(buf, p, (size_t)n);
    buf[n] = 0;
    if (memchr(buf, 0, (size_t)n))
        return 0;
    char *end;
    errno = 0;
    if (dt == MP_I32 || dt == MP_I64) {
        long long v = strtoll(buf, &end, 10);
        if (*end || errno == ERANGE || (dt == MP_I32 && (v < INT32_MIN || v > INT32_MAX)))
            return 0;
        *iv = v;
        return 1;
    }
    if (dt == MP_F32) {
        float f = strtof(buf, &end);
        if (*end)
            return 0;
        *dv = f;
        return 1;
    }
    *dv = strtod(buf, &end);
    return *end == 0;
}

mp_status mp_str_to_number(mp_tensor *x, mp_dtype dt, mp_tensor **out) {
    MP_TRY(need_string(x, "StringToNumber"));
    if (dt != MP_F32 && dt != MP_F64 && dt != MP_I32 && dt != MP_I64)
        return mp_error_set(MP_ERR_DTYPE,
                            "Value for attr 'out_type' of %s is not in the list of allowed values: float, double, "
                            "int32, int64 [Op:StringToNumber]", mp_dtype_name(dt));
    MP_TRY(mp_tensor_new(dt, x->ndim, x->shape, host, out));
    void *o = mp_tensor_data(*out);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t n, iv = 0;
        double dv = 0;
        const char *p = mp_str_at(x, i, &n);
        if (!parse_number(p, n, dt, &dv, &iv)) {
            mp_tensor_decref(*out);
            *out = NULL;
            return mp_error_set(MP_ERR_SHAPE, "StringToNumberOp could not correctly convert string: %.*s "
                                "[Op:StringToNumber]", (int)(n > 200 ? 200 : n), p);
        }
        switch (dt) {
        case MP_F32: ((float *)o)[i] = (float)dv; break;
        case MP_F64: ((double *)o)[i] = dv; break;
        case MP_I32: ((int32_t *)o)[i] = (int32_t)iv; break;
        default: ((int64_t *)o)[i] = iv; break;
        }
    }
    return MP_OK;
}

double mp_tensor_get_f64(const mp_tensor *t, int64_t i);

mp_status mp_str_as_string(mp_tensor *x, int precision, char conv, int width, char fill, mp_tensor **out) {
    if (x->dtype == MP_STRING) {
        mp_tensor_incref(x);
        *out = x;
        return MP_OK;
    }
    if (mp_tensor_device(x).type != MP_DEV_CPU)
        return mp_error_set(MP_ERR_DEVICE, "AsString reads its input on the host");
    char fmt[32];
    int isf = mp_dtype_is_floating(x->dtype);
    size_t o = 0;
    fmt[o++] = '%';
    if (fill == '0' || fill == '-' || fill == '+' || fill == '#')
        fmt[o++] = fill;
    if (width > 0)
        o += (size_t)snprintf(fmt + o, sizeof fmt - o, "%d", width);
    if (isf) {
        if (precision >= 0)
            o += (size_t)snprintf(fmt + o, sizeof fmt - o, ".%d", precision);
        fmt[o++] = conv;
    } else {
        fmt[o++] = 'l';
        fmt[o++] = 'l';
        fmt[o++] = 'd';
    }
    fmt[o] = 0;
    mp_strb b;
    MP_TRY(mp_strb_init(&b, x->ndim, x->shape, (size_t)x->numel * 8));
    for (int64_t i = 0; i < x->numel; i++) {
        char buf[512];
        int len;
        if (x->dtype == MP_BOOL) {
            len = snprintf(buf, sizeof buf, "%s", ((const uint8_t *)mp_tensor_data(x))[i] ? "true" : "false");
        } else if (isf) {
            len = snprintf(buf, sizeof buf, fmt, mp_tensor_get_f64(x, i));
        } else {
            long long v = x->dtype == MP_I64 ? ((const int64_t *)mp_tensor_data(x))[i]
                                              : (long long)mp_tensor_get_f64(x, i);
            len = snprintf(buf, sizeof buf, fmt, v);
        }
        if (len < 0 || len >= (int)sizeof buf)
            len = len < 0 ? 0 : (int)sizeof buf - 1;
        mp_status st = mp_strb_put(&b, i, buf, (size_t)len);
        if (st != MP_OK) {
            mp_strb_abort(&b);
            return st;
        }
    }
    return mp_strb_finish(&b, out);
}

/* ------------------------------------------------------------------ splits */

/* Growable int64 list for row splits. */
typedef struct {
    int64_t *v;
    int64_t n, cap;
} i64list;

static mp_status push(i64list *l, int64_t x) {
    if (l->n == l->cap) {
        int64_t cap = l->cap ? l->cap * 2 : 64;
        int64_t *nv = realloc(l->v, (size_t)cap * sizeof *nv);
        if (!nv)
            return mp_error_set(MP_ERR_MEMORY, "out of host memory splitting strings");
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = x;
    return MP_OK;
}

/* Pieces (offsets into element i) gathered as records into x's arena, then a tensor. */
typedef struct {
    mp_tensor *x;
    i64list off, len, splits;
} piece_acc;

static mp_status add_piece(piece_acc *a, const char *base, const char *p, int64_t n) {
    MP_TRY(push(&a->off, (int64_t)(p - base)));
    return push(&a->len, n);
}

static mp_status finish_pieces(piece_acc *a, mp_tensor **values, mp_tensor **splits) {
    mp_status st = mp_tensor_new(MP_STRING, 1, &a->off.n, host, values);
    if (st == MP_OK) {
        mp_strrec *r = mp_tensor_data(*values);
        for (int64_t i = 0; i < a->off.n; i++) {
            r[i].off = a->off.v[i];
            r[i].len = a->len.v[i];
        }
        (*values)->arena = a->x->arena;
        mp_storage_incref(a->x->arena);
        st = mp_tensor_new(MP_I64, 1, &a->splits.n, host, splits);
        if (st == MP_OK)
            memcpy(mp_tensor_data(*splits), a->splits.v, (size_t)a->splits.n * sizeof(int64_t));
        else {
            mp_tensor_decref(*values);
            *values = NULL;
        }
    }
    free(a->off.v);
    free(a->len.v);
    free(a->splits.v);
    return st;
}

mp_status mp_str_split(mp_tensor *x, const char *sep, size_t sep_len, int64_t maxsplit, mp_tensor **values,
                       mp_tensor **splits) {
    MP_TRY(need_string(x, "StringSplitV2"));
    piece_acc a = {x, {0}, {0}, {0}};
    const char *base = (const char *)x->arena->data;
    mp_status st = push(&a.splits, 0);
    for (int64_t i = 0; i < x->numel && st == MP_OK; i++) {
        int64_t n;
        const char *p = mp_str_at(x, i, &n), *e = p + n;
        int64_t made = 0;
        if (!sep || sep_len == 0) {
            const char *q = p;
            while (st == MP_OK) {
                while (q < e && is_space((unsigned char)*q))
                    q++;
                if (q == e)
                    break;
                const char *s = q;
                if (maxsplit >= 0 && made == maxsplit) {
                    const char *t = e; /* the rest, without trailing whitespace */
                    while (t > s && is_space((unsigned char)t[-1]))
                        t--;
                    st = add_piece(&a, base, s, t - s);
                    break;
                }
                while (q < e && !is_space((unsigned char)*q))
                    q++;
                st = add_piece(&a, base, s, q - s);
                made++;
            }
        } else {
            const char *s = p;
            while (st == MP_OK) {
                const char *hit = NULL;
                if (maxsplit < 0 || made < maxsplit)
                    for (const char *q = s; q + sep_len <= e; q++)
                        if (memcmp(q, sep, sep_len) == 0) {
                            hit = q;
                            break;
                        }
                if (!hit) {
                    st = add_piece(&a, base, s, e - s);
                    break;
                }
                st = add_piece(&a, base, s, hit - s);
                s = hit + sep_len;
                made++;
            }
        }
        if (st == MP_OK)
            st = push(&a.splits, a.off.n);
    }
    if (st != MP_OK) {
        free(a.off.v);
        free(a.len.v);
        free(a.splits.v);
        return st;
    }
    return finish_pieces(&a, values, splits);
}

/* Length of the UTF-8 sequence at p (1..4) when well formed, else 0. */
static int utf8_len(const unsigned char *p, const unsigned char *e, uint32_t *cp) {
    unsigned char c = p[0];
    int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!n || p + n > e)
        return 0;
    uint32_t v = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < n; k++) {
        if (!is_cont(p[k]))
            return 0;
        v = (v << 6) | (p[k] & 0x3F);
    }
    if ((n == 2 && v < 0x80) || (n == 3 && v < 0x800) || (n == 4 && (v < 0x10000 || v > 0x10FFFF)) ||
        (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return n;
}

mp_status mp_str_chars_split(mp_tensor *x, int utf8, mp_tensor **values, mp_tensor **splits) {
    MP_TRY(need_string(x, utf8 ? "UnicodeSplit" : "BytesSplit"));
    /* every piece is a slice of its element except replacement characters (U+FFFD): build a
     * fresh arena so both kinds fit */
    i64list sp = {0};
    mp_status st = push(&sp, 0);
    int64_t total = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t n;
        const char *p = mp_str_at(x, i, &n);
        total += utf8 ? char_count(p, n) + n : n; /* an upper bound for utf8 */
    }
    mp_strb b;
    if (st == MP_OK)
        st = mp_strb_init(&b, 1, &total, x->arena ? x->arena->nbytes : 0);
    int64_t k = 0;
    for (int64_t i = 0; i < x->numel && st == MP_OK; i++) {
        int64_t n;
        const unsigned char *p = (const unsigned char *)mp_str_at(x, i, &n), *e = p + n;
        while (p < e && st == MP_OK) {
            uint32_t cp;
            int m = utf8 ? utf8_len(p, e, &cp) : 1;
            if (m == 0) {
                st = mp_strb_put(&b, k++, "\xEF\xBF\xBD", 3);
                p++;
            } else {
                st = mp_strb_put(&b, k++, (const char *)p, (size_t)m);
                p += m;
            }
        }
        if (st == MP_OK)
            st = push(&sp, k);
    }
    if (st != MP_OK) {
        if (b.t)
            mp_strb_abort(&b);
        free(sp.v);
        return st;
    }
    b.t->shape[0] = k; /* fewer than the bound: a shorter view of the same records */
    b.t->numel = k;
    st = mp_strb_finish(&b, values);
    if (st == MP_OK)
        st = mp_tensor_new(MP_I64, 1, &sp.n, host, splits);
    if (st == MP_OK)
        memcpy(mp_tensor_data(*splits), sp.v, (size_t)sp.n * sizeof(int64_t));
    else {
        mp_tensor_decref(*values);
        *values = NULL;
    }
    free(sp.v);
    return st;
}

mp_status mp_str_unicode_decode(mp_tensor *x, mp_tensor **values, mp_tensor **splits) {
    MP_TRY(need_string(x, "UnicodeDecode"));
    int64_t total = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t n;
        (void)mp_str_at(x, i, &n);
        total += n;
    }
    int32_t *cps = malloc((size_t)(total ? total : 1) * sizeof *cps);
    int64_t *sp = malloc((size_t)(x->numel + 1) * sizeof *sp);
    if (!cps || !sp) {
        free(cps);
        free(sp);
        return mp_error_set(MP_ERR_MEMORY, "out of host memory decoding strings");
    }
    int64_t k = 0;
    sp[0] = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t n;
        const unsigned char *p = (const unsigned char *)mp_str_at(x, i, &n), *e = p + n;
        while (p < e) {
            uint32_t cp;
            int m = utf8_len(p, e, &cp);
            cps[k++] = m ? (int32_t)cp : 0xFFFD;
            p += m ? m : 1;
        }
        sp[i + 1] = k;
    }
    int64_t nsp = x->numel + 1;
    mp_status st = mp_tensor_new(MP_I32, 1, &k, host, values);
    if (st == MP_OK) {
        memcpy(mp_tensor_data(*values), cps, (size_t)k * sizeof *cps);
        st = mp_tensor_new(MP_I64, 1, &nsp, host, splits);
        if (st == MP_OK)
            memcpy(mp_tensor_data(*splits), sp, (size_t)nsp * sizeof *sp);
        else {
            mp_tensor_decref(*values);
            *values = NULL;
        }
    }
    free(cps);
    free(sp);
    return st;
}
