/* strings_regex.c — tf.strings.regex_full_match / regex_replace on host string tensors with
 * POSIX extended regular expressions (glibc regcomp, which adds \w \W \s \S \b \B); RE2's
 * \d and \D are translated. It must not pretend to be RE2: leftmost-longest alternation,
 * no (?:...) / lazy quantifiers / (?i) flags (docs/architecture.md). */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "strings.h"

static const mp_device host = {MP_DEV_CPU, 0};

/* One RE2 bracket expression [...] starting at pat[i] == '[' -> a POSIX one appended at o+k:
 * ']' first, ranges and plain characters, then '[', '^', '-' last, as POSIX requires; RE2's
 * escapes (\d \s \w, \] \\ \- ...) become members. Returns the index after the closing ']'. */
static size_t bracket(const char *pat, size_t n, size_t i, char *o, size_t *k) {
    char set[256] = {0};
    char ranges[512];
    size_t nr = 0;
    int neg = 0;
    size_t j = i + 1;
    if (j < n && pat[j] == '^')
        neg = 1, j++;
    int first = 1;
    while (j < n && (pat[j] != ']' || first)) {
        first = 0;
        unsigned char c = (unsigned char)pat[j];
        if (c == '[' && j + 1 < n && pat[j + 1] == ':') { /* [:alpha:] kept as it is */
            const char *e = strstr(pat + j + 2, ":]");
            if (e) {
                size_t len = (size_t)(e + 2 - (pat + j));
                if (nr + len < sizeof ranges) {
                    memcpy(ranges + nr, pat + j, len);
                    nr += len;
                }
                j += len;
                continue;
            }
        }
        if (c == '\\' && j + 1 < n) {
            char d = pat[j + 1];
            j += 2;
            if (d == 'd')
                for (int x = '0'; x <= '9'; x++) set[x] = 1;
            else if (d == 's')
                set[' '] = set['\t'] = set['\n'] = set['\r'] = set['\f'] = set['\v'] = 1;
            else if (d == 'w') {
                for (int x = '0'; x <= '9'; x++) set[x] = 1;
                for (int x = 'a'; x <= 'z'; x++) set[x] = set[x - 32] = 1;
                set['_'] = 1;
            } else if (d == 'n') set['\n'] = 1;
            else if (d == 't') set['\t'] = 1;
            else if (d == 'r') set['\r'] = 1;
            else set[(unsigned char)d] = 1;
            continue;
        }
        if (j + 2 < n && pat[j + 1] == '-' && pat[j + 2] != ']') { /* a range lo-hi */
            unsigned char lo = c, hi = (unsigned char)pat[j + 2];
            size_t adv = 3;
            if (hi == '\\' && j + 3 < n)
                hi = (unsigned char)pat[j + 3], adv = 4;
            for (int x = lo; x <= hi; x++)
                set[x] = 1;
            j += adv;
            continue;
        }
        set[c] = 1;
        j++;
    }
    int only_caret = set['^'] && nr == 0;
    for (int x = 1; x < 256 && only_caret; x++)
        if (x != '^' && set[x])
            only_caret = 0;
    if (only_caret && !neg) { /* "[^]" would be a negation: a lone caret is an escaped literal */
        o[(*k)++] = '\\';
        o[(*k)++] = '^';
        return j < n ? j + 1 : j;
    }
    o[(*k)++] = '[';
    if (neg)
        o[(*k)++] = '^';
    if (set[']'])
        o[(*k)++] = ']';
    memcpy(o + *k, ranges, nr);
    *k += nr;
    for (int x = 1; x < 256; x++)
        if (set[x] && x != ']' && x != '[' && x != '^' && x != '-')
            o[(*k)++] = (char)x;
    if (set['['])
        o[(*k)++] = '[';
    if (set['^'])
        o[(*k)++] = '^';
    if (set['-'])
        o[(*k)++] = '-';
    o[(*k)++] = ']';
    return j < n ? j + 1 : j;
}

/* RE2 pattern -> POSIX ERE: \d -> [0-9], \D -> [^0-9]; bracket expressions rewritten. */
static char *translate(const char *pat) {
    size_t n = strlen(pat);
    char *o = malloc(n * 72 + 300); /* a bracket may list up to 256 members */
    if (!o)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        char c = pat[i];
        if (c == '\\' && i + 1 < n) {
            char d = pat[i + 1];
            const char *r = d == 'd' ? "[0-9]" : d == 'D' ? "[^0-9]" : NULL;
            if (r) {
                memcpy(o + k, r, strlen(r));
                k += strlen(r);
            } else {
                o[k++] = c;
                o[k++] = d;
            }
            i += 2;
            continue;
        }
        if (c == '[') {
            i = bracket(pat, n, i, o, &k);
            continue;
        }
        o[k++] = c;
        i++;
    }
    o[k] = 0;
    return o;
}

static mp_status compile(const char *pattern, const char *op, regex_t *re) {
    char *p = translate(pattern);
    if (!p)
        return mp_error_set(MP_ERR_MEMORY, "out of host memory compiling a pattern");
    int rc = regcomp(re, p, REG_EXTENDED);
    free(p);
    if (rc != 0) {
        char msg[256];
        regerror(rc, re, msg, sizeof msg);
        return mp_error_set(MP_ERR_SHAPE, "Invalid pattern: %s, error: %s [Op:%s]", pattern, msg, op);
    }
    return MP_OK;
}

/* An element's bytes with a NUL after them: regexec is handed a terminated string even with
 * REG_STARTEND (an arena's strings are not terminated, and sanitizers' regexec interceptor
 * reads the subject up to its NUL). *buf is grown as needed; NULL when out of memory. */
static const char *terminated(const char *p, size_t n, char **buf, size_t *cap) {
    if (n + 1 > *cap) {
        char *nb = realloc(*buf, n + 1);
        if (!nb)
            return NULL;
        *buf = nb;
        *cap = n + 1;
    }
    memcpy(*buf, p, n);
    (*buf)[n] = 0;
    return *buf;
}

/* Match in s[from..n) (s may hold NULs); 1 with m[0..] filled, 0 none. */
static int match_at(const regex_t *re, const char *s, size_t from, size_t n, regmatch_t *m, size_t nm) {
    m[0].rm_so = (regoff_t)from;
    m[0].rm_eo = (regoff_t)n;
    return regexec(re, s, nm, m, REG_STARTEND | (from > 0 ? REG_NOTBOL : 0)) == 0;
}

mp_status mp_str_regex_full_match(mp_tensor *x, const char *pattern, mp_tensor **out) {
    if (x->dtype != MP_STRING)
        return mp_error_set(MP_ERR_DTYPE, "RegexFullMatch expects a string tensor, got %s", mp_dtype_name(x->dtype));
    regex_t re;
    MP_TRY(compile(pattern, "RegexFullMatch", &re));
    mp_status st = mp_tensor_new(MP_BOOL, x->ndim, x->shape, host, out);
    if (st == MP_OK) {
        uint8_t *o = mp_tensor_data(*out);
        char *buf = NULL;
        size_t cap = 0;
        for (int64_t i = 0; i < x->numel && st == MP_OK; i++) {
            int64_t n;
            const char *raw = mp_str_at(x, i, &n);
            const char *p = terminated(raw, (size_t)n, &buf, &cap);
            if (!p) {
                st = mp_error_set(MP_ERR_MEMORY, "out of host memory matching a pattern");
                break;
            }
            regmatch_t m[1];
            /* leftmost-longest: a full match, when there is one, is the match found */
            o[i] = (uint8_t)(match_at(&re, p, 0, (size_t)n, m, 1) && m[0].rm_so == 0 && m[0].rm_eo == n);
        }
        free(buf);
        if (st != MP_OK) {
            mp_tensor_decref(*out);
            *out = NULL;
        }
    }
    regfree(&re);
    return st;
}

/* RE2's Rewrite: \0..\9 the groups, \\ a backslash. */
static mp_status rewrite(mp_strb *b, const char *rw, const char *s, const regmatch_t *m, size_t ngroups) {
    for (const char *c = rw; *c; c++) {
        if (*c == '\\' && c[1] >= '0' && c[1] <= '9') {
            size_t g = (size_t)(c[1] - '0');
            if (g <= ngroups && m[g].rm_so >= 0)
                MP_TRY(mp_strb_append(b, s + m[g].rm_so, (size_t)(m[g].rm_eo - m[g].rm_so)));
            c++;
        } else if (*c == '\\' && c[1] == '\\') {
            MP_TRY(mp_strb_append(b, "\\", 1));
            c++;
        } else {
            MP_TRY(mp_strb_append(b, c, 1));
        }
    }
    return MP_OK;
}

static size_t utf8_step(const char *p, size_t left) {
    unsigned char c = (unsigned char)*p;
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    return n > left ? 1 : n;
}

static mp_status check_rewrite(const char *rw, size_t ngroups, const char *pattern) {
    for (const char *c = rw; *c; c++)
        if (*c == '\\') {
            if (c[1] >= '0' && c[1] <= '9' && (size_t)(c[1] - '0') > ngroups)
                return mp_error_set(MP_ERR_SHAPE, "Invalid rewrite pattern: \\%c: the pattern %s has %zu groups "
                                    "[Op:RegexReplace]", c[1], pattern, ngroups);
            if (c[1])
                c++;
        }
    return MP_OK;
}

mp_status mp_str_regex_replace(mp_tensor *x, const char *pattern, const char *rw, int global, mp_tensor **out) {
    if (x->dtype != MP_STRING)
        return mp_error_set(MP_ERR_DTYPE, "RegexReplace expects a string tensor, got %s", mp_dtype_name(x->dtype));
    regex_t re;
    MP_TRY(compile(pattern, "RegexReplace", &re));
    size_t ng = re.re_nsub;
    mp_status st = check_rewrite(rw, ng, pattern);
    if (st != MP_OK) {
        regfree(&re);
        return st;
    }
    regmatch_t m[10];
    size_t nm = ng + 1 > 10 ? 10 : ng + 1;
    mp_strb b;
    st = mp_strb_init(&b, x->ndim, x->shape, x->arena ? x->arena->nbytes : 0);
    char *buf = NULL;
    size_t cap = 0;
    for (int64_t i = 0; i < x->numel && st == MP_OK; i++) {
        int64_t n64;
        const char *raw = mp_str_at(x, i, &n64);
        const char *s = terminated(raw, (size_t)n64, &buf, &cap);
        if (!s) {
            st = mp_error_set(MP_ERR_MEMORY, "out of host memory replacing a pattern");
            break;
        }
        size_t n = (size_t)n64, p = 0, start = mp_strb_mark(&b);
        long lastend = -1;
        int count = 0;
        while (p <= n && st == MP_OK) {
            if (!global && count >= 1)
                break;
            if (!match_at(&re, s, p, n, m, nm))
                break;
            size_t so = (size_t)m[0].rm_so, eo = (size_t)m[0].rm_eo;
            if (p < so)
                st = mp_strb_append(&b, s + p, so - p);
            if (st != MP_OK)
                break;
            if ((long)so == lastend && so == eo) { /* no empty match where the last one ended */
                if (p < n) {
                    size_t k = utf8_step(s + p, n - p);
                    st = mp_strb_append(&b, s + p, k);
                    p += k;
                } else {
                    p++;
                }
                continue;
            }
            st = rewrite(&b, rw, s, m, nm - 1);
            p = eo;
            lastend = (long)eo;
            count++;
        }
        if (st == MP_OK && p < n)
            st = mp_strb_append(&b, s + p, n - p);
        if (st == MP_OK)
            mp_strb_set(&b, i, start);
    }
    free(buf);
    regfree(&re);
    if (st != MP_OK) {
        if (b.t)
            mp_strb_abort(&b);
        return st;
    }
    return mp_strb_finish(&b, out);
}
