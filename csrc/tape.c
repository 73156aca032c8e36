/* tape.c — reverse-mode autodiff tape (placeholder until the training-core issue lands:
 * nothing records yet). */
#include "tape.h"

int mp_tape_recording(void) { return 0; }

mp_status mp_tape_record(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at, mp_tensor *out) {
    (void)op;
    (void)n_in;
    (void)in;
    (void)at;
    (void)out;
    return MP_OK;
}
