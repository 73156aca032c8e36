/* strings_regex.c — tf.strings.regex_full_match / regex_replace on host string tensors with
 * POSIX extended regular expressions (glibc regcomp, which adds \w \W \s \S \b \B); RE2's
 * \d and \D are translated. It must not pretend to be RE2: leftmost-longest alternation,
 * no (?:...) / lazy quantifiers / (?i) flags (docs/architecture.md). */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "strings.h"

static const mp_device host = {MP_DEV_CPU, 0};

/* RE2 pattern -> POSIX ERE: \d -> [0-9], \D -> [^0-9] (inside brackets \d -> 0-9). */
static char *translate(const char *pat) {
    size_t n = strlen(pat);
    char *o = malloc(n * 6 + 1);
    if (!o)
        return NULL;
    size_t k = 0;
    int in_br = 0;
    for (size_t i = 0; i < n; i++) {
        char c = pat[i];
        if (c == '\\' && i + 1 < n) {
            char d = pat[i + 1];
            if (d == 'd' || d == 'D') {
                const char *r = in_br ? (d == 'd' ? "0-9" : "") : (d == 'd' ? "[0-9]" : "[^0-9]");
                memcpy(o + k, r, strlen(r));
                k += strlen(r);
                i++;
                continue;
            }
            if (in_br && (d == 's' || d == 'w')) {
                const char *r = d == 's' ? " \t\n\r\f\v" : "A-Za-z0-9_";
                memcpy(o + k, r, strlen(r));
                k += strlen(r);
                i++;
                continue;
            }
            if (in_br && (d == '\\' || d == ']' || d == '-' || d == '[')) { /* a literal in brackets */
                if (d == ']' || d == '-') { /* POSIX: only literal at fixed places; approximate */
                    o[k++] = d == ']' ? ']' : '-';
                } else {
                    o[k++] = d;
                }
                i++;
                continue;
            }
            o[k++] = c;
            o[k++] = d;
            i++;
            continue;
        }
        if (c == '[' && !in_br) {
            in_br = 1;
            o[k++] = c;
            if (i + 1 < n && pat[i + 1] == '^')
                o[k++] = pat[++i];
            if (i + 1 < n && pat[i + 1] == ']')
                o[k++] = pat[++i];
            continue;
        }
        if (c == ']' && in_br)
            in_br = 0;
        o[k++] = c;
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
        for (int64_t i = 0; i < x->numel; i++) {
            int64_t n;
            const char *p = mp_str_at(x, i, &n);
            regmatch_t m[1];
            /* leftmost-longest: a full match, when there is one, is the match found */
            o[i] = (uint8_t)(match_at(&re, p, 0, (size_t)n, m, 1) && m[0].rm_so == 0 && m[0].rm_eo == n);
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
    for (int64_t i = 0; i < x->numel && st == MP_OK; i++) {
        int64_t n64;
        const char *s = mp_str_at(x, i, &n64);
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
    regfree(&re);
    if (st != MP_OK) {
        if (b.t)
            mp_strb_abort(&b);
        return st;
    }
    return mp_strb_finish(&b, out);
}
