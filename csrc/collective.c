/* collective.c — what every collectives engine shares: the rank-ordered reduction of a
 * fused bucket (16-bit widened to float32, rounded once) and freeing a communicator.
 * No engine-specific code here (threads: collective_threads.c, MPI: collective_mpi.c,
 * NCCL: collective_nccl.c). */
#include <stdlib.h>
#include <string.h>

#include "collective.h"

int mp_coll_dtype_ok(mp_dtype dt) {
    return dt == MP_F32 || dt == MP_F16 || dt == MP_BF16 || dt == MP_F64;
}

void mp_comm_free(mp_comm *c) {
    if (!c)
        return;
    mp_coll_backend *owned = c->owned_be;
    if (c->be && c->be->destroy)
        c->be->destroy(c);
    else
        free(c);
    free(owned);
}

mp_status mp_coll_missing_slot(const mp_comm *c, const char *slot) {
    return mp_error_set(MP_ERR_NOT_IMPLEMENTED, "the %s collectives engine does not implement %s",
                        c->be && c->be->name ? c->be->name : "(unnamed)", slot);
}

mp_status mp_comm_abort(mp_comm *c, int rank, const char *why) {
    if (!c->be || !c->be->abort)
        return mp_coll_missing_slot(c, "abort");
    c->be->abort(c, rank, why);
    return MP_OK;
}

mp_status mp_comm_drop_slots(mp_comm *c, const char *slots) {
    mp_coll_backend *t = malloc(sizeof *t);
    if (!t)
        return mp_error_set(MP_ERR_MEMORY, "out of memory");
    *t = *c->be;
    for (const char *p = slots; *p;) {
        size_t len = strcspn(p, ",");
#define DROP(slot)                                                                           \
    if (len == sizeof #slot - 1 && strncmp(p, #slot, len) == 0)                              \
        t->slot = NULL;                                                                      \
    else
        DROP(all_reduce) DROP(broadcast) DROP(barrier) DROP(abort) {
            free(t);
            return mp_error_set(MP_ERR_VALUE, "no collectives slot named '%.*s' can be dropped",
                                (int)len, p);
        }
#undef DROP
        p += len + (p[len] == ',');
    }
    free(c->owned_be);
    c->owned_be = t;
    c->be = t;
    return MP_OK;
}

int mp_coll_plan_buckets(int n, const int64_t *counts, size_t esize, int64_t max_bytes, int *starts) {
    int nb = 0;
    int64_t used = 0;
    for (int i = 0; i < n; i++) {
        int64_t bytes = counts[i] * (int64_t)esize;
        if (i == 0 || (used > 0 && used + bytes > max_bytes)) {
            starts[nb++] = i;
            used = 0;
        }
        used += bytes;
    }
    starts[nb] = n;
    return nb;
}

#define CHUNK 256 /* 64 ranks x 256 floats of widened 16-bit input stay on the stack */

/* acc = in_0 (op) in_1 (op) ... in rank order; MEAN divides once at the end. One body for
 * float32 and float64 (16-bit inputs are widened to float32 before they get here). */
#define DEFINE_REDUCE(NAME, T)                                                               \
    static void NAME(mp_coll_op op, int nranks, const T *const *in, T *acc, int64_t m) {     \
        memcpy(acc, in[0], (size_t)m * sizeof(T));                                           \
        for (int k = 1; k < nranks; k++) {                                                   \
            const T *x = in[k];                                                              \
            if (op == MP_COLL_MAX)                                                           \
                for (int64_t i = 0; i < m; i++)                                              \
                    acc[i] = (x[i] > acc[i] || x[i] != x[i]) ? x[i] : acc[i];                \
            else                                                                             \
                for (int64_t i = 0; i < m; i++)                                              \
                    acc[i] += x[i];                                                          \
        }                                                                                    \
        if (op == MP_COLL_MEAN) {                                                            \
            T d = (T)nranks;                                                                 \
            for (int64_t i = 0; i < m; i++)                                                  \
                acc[i] /= d;                                                                 \
        }                                                                                    \
    }
DEFINE_REDUCE(reduce_f32, float)
DEFINE_REDUCE(reduce_f64, double)
#undef DEFINE_REDUCE

void mp_coll_reduce_range(mp_dtype dt, mp_coll_op op, int nranks, int n,
                          const void *const *const *ins, void *const *const *outs, int nouts,
                          const int64_t *counts, int64_t begin, int64_t end) {
    size_t es = mp_dtype_size(dt);
    int64_t base = 0;
    const void *src[64];
    float wide[64][CHUNK];
    float accf[CHUNK];
    double accd[CHUNK];
    for (int b = 0; b < n && base < end; base += counts[b], b++) {
        int64_t lo = begin > base ? begin - base : 0;
        int64_t hi = end < base + counts[b] ? end - base : counts[b];
        for (int64_t i = lo; i < hi; i += CHUNK) {
            int64_t m = hi - i < CHUNK ? hi - i : CHUNK;
            size_t off = (size_t)i * es;
            if (dt == MP_F64) {
                for (int k = 0; k < nranks; k++)
                    src[k] = (const char *)ins[k][b] + off;
                reduce_f64(op, nranks, (const double *const *)src, accd, m);
                for (int k = 0; k < nouts; k++)
                    memcpy((char *)outs[k][b] + off, accd, (size_t)m * es);
            } else if (dt == MP_F32) {
                for (int k = 0; k < nranks; k++)
                    src[k] = (const char *)ins[k][b] + off;
                reduce_f32(op, nranks, (const float *const *)src, accf, m);
                for (int k = 0; k < nouts; k++)
                    memcpy((char *)outs[k][b] + off, accf, (size_t)m * es);
            } else { /* 16-bit: widen each rank's chunk, sum in float32, round once */
                for (int k = 0; k < nranks; k++) {
                    mp_cast_host((const char *)ins[k][b] + off, dt, wide[k], MP_F32, m);
                    src[k] = wide[k];
                }
                reduce_f32(op, nranks, (const float *const *)src, accf, m);
                mp_cast_host(accf, MP_F32, (char *)outs[0][b] + off, dt, m);
                for (int k = 1; k < nouts; k++)
                    memcpy((char *)outs[k][b] + off, (char *)outs[0][b] + off, (size_t)m * es);
            }
        }
    }
}
