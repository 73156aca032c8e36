/* strings.h — the string dtype's storage and the string ops (tf.string, tf.strings.*).
 * Owns: how an MP_STRING tensor holds its elements (16-byte (offset, length) records in its
 * storage, bytes in a shared host arena), a builder for new string tensors, and the entry
 * points of csrc/strings*.c. It must not include Python.h; string tensors never leave the host.
 *
 * Layout: element i of t is the bytes arena[rec[i].off .. rec[i].off + rec[i].len). Records
 * are plain data, so views and gathers share the arena without copying bytes. */
#ifndef MP_STRINGS_H
#define MP_STRINGS_H
#include "mixprec.h"

typedef struct mp_strrec {
    int64_t off, len;
} mp_strrec;

static inline const mp_strrec *mp_str_recs(const mp_tensor *t) { return (const mp_strrec *)mp_tensor_data(t); }
/* Bytes of element i (not NUL-terminated) and their count. */
static inline const char *mp_str_at(const mp_tensor *t, int64_t i, int64_t *len) {
    const mp_strrec *r = mp_str_recs(t) + i;
    *len = r->len;
    return (const char *)t->arena->data + r->off;
}

/* Builds a new string tensor: mp_strb_init, then per element mp_strb_append* and
 * mp_strb_set(i, start) (start = mp_strb_mark() before the appends), then mp_strb_finish
 * (or mp_strb_abort on an error path). Elements never set are empty. */
typedef struct mp_strb {
    mp_tensor *t;
    char *buf;
    size_t len, cap;
} mp_strb;
mp_status mp_strb_init(mp_strb *b, int ndim, const int64_t *shape, size_t reserve);
mp_status mp_strb_append(mp_strb *b, const char *p, size_t n);
static inline size_t mp_strb_mark(const mp_strb *b) { return b->len; }
void mp_strb_set(mp_strb *b, int64_t i, size_t start);
mp_status mp_strb_put(mp_strb *b, int64_t i, const char *p, size_t n); /* append + set */
mp_status mp_strb_finish(mp_strb *b, mp_tensor **out);
void mp_strb_abort(mp_strb *b);

/* strings.c: elements of src at the flat indices idx (checked), in a tensor of `shape`
 * sharing src's arena. */
mp_status mp_str_take(mp_tensor *src, const int64_t *idx, int64_t n, int ndim, const int64_t *shape,
                      mp_tensor **out);
/* Does this op call involve the string dtype (an input, or a string target dtype)? */
int mp_str_involved(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at);
/* The generic ops on string tensors (called by mp_op_exec): layout ops run on an int64 index
 * proxy of each string input, then the elements are taken at the resulting indices; Add
 * concatenates, Equal/NotEqual compare bytes; everything else is TensorFlow's refusal. */
mp_status mp_str_op_exec(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at, mp_tensor **out);
/* Broadcast a and b against each other: the flat element indices (int64 host tensors of the
 * broadcast shape) of each side. */
mp_status mp_str_broadcast_index(mp_tensor *a, mp_tensor *b, mp_tensor **ia, mp_tensor **ib);

/* strings_text.c: tf.strings element-wise ops (host loops over elements). */
mp_status mp_str_length(mp_tensor *x, int utf8, mp_tensor **out);
/* mode bit 0: upper (else lower); bit 1: all of Unicode in UTF-8 (else ASCII letters only). */
mp_status mp_str_case(mp_tensor *x, int mode, mp_tensor **out);
mp_status mp_str_strip(mp_tensor *x, mp_tensor **out);
/* Element-wise join of n same-shape string tensors with sep. */
mp_status mp_str_join(int n, mp_tensor *const *in, const char *sep, size_t sep_len, mp_tensor **out);
/* x viewed as [rows, k] (x->numel == rows * k): row r joined with sep -> tensor of `shape`. */
mp_status mp_str_join_rows(mp_tensor *x, int64_t k, const char *sep, size_t sep_len, int ndim,
                           const int64_t *shape, mp_tensor **out);
/* pos/len: int64 host tensors with x->numel elements or one; unit 1: UTF-8 characters. */
mp_status mp_str_substr(mp_tensor *x, mp_tensor *pos, mp_tensor *len, int utf8, mp_tensor **out);
mp_status mp_str_to_number(mp_tensor *x, mp_dtype dt, mp_tensor **out);
/* printf formatting of a numeric tensor: conv is 'f', 'e', 'g' or 'd'; precision < 0 default;
 * width <= 0 none; fill ' ' or '0'. bool prints true/false. */
mp_status mp_str_as_string(mp_tensor *x, int precision, char conv, int width, char fill, mp_tensor **out);
/* Split each element of a 1-D (or flat) tensor: sep NULL = runs of ASCII whitespace; maxsplit
 * < 0 = unlimited. values: 1-D strings; splits: int64 row_splits (numel + 1). */
mp_status mp_str_split(mp_tensor *x, const char *sep, size_t sep_len, int64_t maxsplit, mp_tensor **values,
                       mp_tensor **splits);
/* unit 0: bytes, 1: UTF-8 characters (invalid bytes become U+FFFD as TensorFlow's replace). */
mp_status mp_str_chars_split(mp_tensor *x, int utf8, mp_tensor **values, mp_tensor **splits);
/* UTF-8 code points of each element: values int32, splits int64. */
mp_status mp_str_unicode_decode(mp_tensor *x, mp_tensor **values, mp_tensor **splits);

/* strings_regex.c: POSIX extended regular expressions (RE2's \d \D translated). */
mp_status mp_str_regex_full_match(mp_tensor *x, const char *pattern, mp_tensor **out);
mp_status mp_str_regex_replace(mp_tensor *x, const char *pattern, const char *rewrite, int global,
                               mp_tensor **out);

/* strings_hash.c: FarmHash Fingerprint64 and SipHash-2-4 (TensorFlow's fast/strong buckets). */
uint64_t mp_fingerprint64(const char *s, size_t len);
uint64_t mp_siphash24(const char *s, size_t len, uint64_t k0, uint64_t k1);
/* TensorFlow's legacy Hash64 (a MurmurHash64A variant, seed 0xDECAFCAFFE; tf.strings.to_hash_bucket). */
uint64_t mp_tf_hash64(const char *s, size_t len);
/* strong: 0 Fingerprint64, 1 SipHash with key (k0, k1), 2 legacy Hash64.
 * Bucket = hash % buckets (int64 out). */
mp_status mp_str_hash_bucket(mp_tensor *x, int64_t buckets, int strong, uint64_t k0, uint64_t k1,
                             mp_tensor **out);

/* strings_lookup.c: vocabulary lookup of strings or int64 keys (StringLookup/IntegerLookup):
 * a hash table of the vocab's keys; out[i] = the key's index + offset, or default_id. */
typedef struct mp_str_table mp_str_table;
mp_status mp_str_table_new(mp_tensor *keys, mp_str_table **out);
void mp_str_table_free(mp_str_table *t);
int64_t mp_str_table_size(const mp_str_table *t);
mp_status mp_str_table_lookup(const mp_str_table *t, mp_tensor *x, int64_t offset, int64_t default_id,
                              mp_tensor **out);
/* The distinct elements of x (strings or int64) in first-seen order and their counts
 * (int64), 1-D: what Keras' lookup layers' adapt() accumulates. */
mp_status mp_str_unique_counts(mp_tensor *x, mp_tensor **uniq, mp_tensor **counts);
#endif
