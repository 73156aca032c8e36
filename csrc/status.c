/* status.c — the error funnel: a thread-local record of the last failure.
 * Owns the message text and call site; must not print, exit or abort (we live inside
 * the Python interpreter; the binding raises the exception). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mixprec.h"

#define MP_ERR_MSG_MAX 1024

static _Thread_local char err_msg[MP_ERR_MSG_MAX];
static _Thread_local char err_where[256];

mp_status mp_error_set_at(const char *file, int line, mp_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_msg, sizeof err_msg, fmt, ap);
    va_end(ap);
    const char *base = strrchr(file, '/');
    snprintf(err_where, sizeof err_where, "%s:%d", base ? base + 1 : file, line);
    return st;
}

const char *mp_error_message(void) { return err_msg; }
const char *mp_error_where(void) { return err_where; }

void mp_error_clear(void) {
    err_msg[0] = '\0';
    err_where[0] = '\0';
}
