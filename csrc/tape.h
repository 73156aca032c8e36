/* tape.h — the autodiff tape's hooks into the op layer (implementation: tape.c). */
#ifndef MP_TAPE_H
#define MP_TAPE_H
#include "mixprec.h"

/* Nonzero while any tape on this thread is recording (cheap: a thread-local count). */
int mp_tape_recording(void);
/* Record one op call on every recording tape that watches one of its inputs. */
mp_status mp_tape_record(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at, mp_tensor *out);
/* Would mp_tape_record record a call on these inputs (a recording tape watches one of the
 * floating inputs)? An op that can keep something for its gradient asks before it runs. */
int mp_tape_would_record(int n_in, mp_tensor *const *in);
#endif
