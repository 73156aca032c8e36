/* collective_threads.c — the in-process collectives engine: N replicas are N threads of
 * this process sharing memory. A call is two timed barriers around a reduce-scatter that
 * writes straight into every replica's output (replica r reduces the r-th slice of the
 * fused bucket, in rank order): no copy into a staging buffer, no dependence on timing.
 * It must not know about tensors or Python; a replica that never arrives is an error
 * after the timeout, never a hang. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collective.h"

#define MAX_THREAD_RANKS 64

typedef struct {
    int kind; /* 0 all-reduce, 1 broadcast, 2 barrier */
    mp_dtype dt;
    mp_coll_op op;
    int root;
    int n;
    const void *const *in;
    void *const *out;
    const int64_t *counts;
} call_slot;

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t gen;
    int arrived;
    uint64_t arrived_mask;
    int aborted;
    char why[512];
    call_slot slots[MAX_THREAD_RANKS];
} threads_impl;

static void deadline_after(double s, struct timespec *ts) {
    clock_gettime(CLOCK_REALTIME, ts);
    double whole = (double)(time_t)s;
    ts->tv_sec += (time_t)s;
    ts->tv_nsec += (long)((s - whole) * 1e9);
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec += 1;
        ts->tv_nsec -= 1000000000L;
    }
}

/* Waits until every replica arrived (or the call is aborted / times out). */
static mp_status tbarrier(mp_comm *c, int rank, const char *what) {
    threads_impl *t = c->impl;
    pthread_mutex_lock(&t->mu);
    if (t->aborted) {
        mp_status st = mp_error_set(MP_ERR_UNAVAILABLE, "%s", t->why);
        pthread_mutex_unlock(&t->mu);
        return st;
    }
    uint64_t g = t->gen;
    t->arrived_mask |= (uint64_t)1 << rank;
    if (++t->arrived == c->size) {
        t->arrived = 0;
        t->arrived_mask = 0;
        t->gen++;
        pthread_cond_broadcast(&t->cv);
        pthread_mutex_unlock(&t->mu);
        return MP_OK;
    }
    struct timespec ts;
    deadline_after(c->timeout_s, &ts);
    while (t->gen == g && !t->aborted) {
        int rc = pthread_cond_timedwait(&t->cv, &t->mu, &ts);
        if (rc == ETIMEDOUT && t->gen == g && !t->aborted) {
            char missing[256];
            int len = 0;
            missing[0] = 0;
            for (int r = 0; r < c->size && len < (int)sizeof missing - 8; r++)
                if (!(t->arrived_mask & ((uint64_t)1 << r)))
                    len += snprintf(missing + len, sizeof missing - (size_t)len, "%s%d",
                                    len ? ", " : "", r);
            snprintf(t->why, sizeof t->why,
                     "%s across %d replicas timed out after %g s: replica(s) %s never joined "
                     "(lost peer); the communicator is aborted", what, c->size, c->timeout_s,
                     missing);
            t->aborted = 1;
            pthread_cond_broadcast(&t->cv);
        }
    }
    mp_status st = MP_OK;
    if (t->gen == g) /* aborted while waiting */
        st = mp_error_set(MP_ERR_UNAVAILABLE, "%s", t->why);
    pthread_mutex_unlock(&t->mu);
    return st;
}

static mp_status check_rank(mp_comm *c, int rank) {
    if (rank < 0 || rank >= c->size)
        return mp_error_set(MP_ERR_VALUE, "collective: rank %d is outside 0..%d", rank, c->size - 1);
    return MP_OK;
}

/* All replicas' slots against replica 0's: every replica finds the same mismatch. */
static mp_status check_slots(mp_comm *c, const char *what) {
    threads_impl *t = c->impl;
    const call_slot *a = &t->slots[0];
    for (int r = 1; r < c->size; r++) {
        const call_slot *b = &t->slots[r];
        if (b->kind != a->kind || b->dt != a->dt || b->n != a->n || b->op != a->op ||
            b->root != a->root)
            return mp_error_set(MP_ERR_VALUE, "%s: replica %d called a different collective "
                                "(kind/dtype/count/op) than replica 0", what, r);
        for (int i = 0; i < a->n; i++)
            if (a->counts[i] != b->counts[i])
                return mp_error_set(MP_ERR_SHAPE, "%s: buffer %d has %lld elements on replica 0 "
                                    "but %lld on replica %d", what, i, (long long)a->counts[i],
                                    (long long)b->counts[i], r);
    }
    return MP_OK;
}

static mp_status t_all_reduce(mp_comm *c, int rank, mp_dtype dt, mp_coll_op op, int n,
                              const void *const *in, void *const *out, const int64_t *counts) {
    MP_TRY(check_rank(c, rank));
    threads_impl *t = c->impl;
    t->slots[rank] = (call_slot){0, dt, op, 0, n, in, out, counts};
    MP_TRY(tbarrier(c, rank, "all-reduce"));
    mp_status st = check_slots(c, "all-reduce");
    if (st == MP_OK) {
        int64_t total = 0;
        for (int i = 0; i < n; i++)
            total += counts[i];
        int64_t begin = total * rank / c->size, end = total * (rank + 1) / c->size;
        const void *const *ins[MAX_THREAD_RANKS];
        void *const *outs[MAX_THREAD_RANKS];
        for (int r = 0; r < c->size; r++) {
            ins[r] = t->slots[r].in;
            outs[r] = t->slots[r].out;
        }
        mp_coll_reduce_range(dt, op, c->size, n, ins, outs, c->size, counts, begin, end);
    }
    /* second barrier: nobody returns (and frees its input) while others still read it */
    mp_status st2 = tbarrier(c, rank, "all-reduce");
    return st != MP_OK ? st : st2;
}

static mp_status t_broadcast(mp_comm *c, int rank, int root, mp_dtype dt, int n,
                             const void *const *in, void *const *out, const int64_t *counts) {
    MP_TRY(check_rank(c, rank));
    MP_TRY(check_rank(c, root));
    threads_impl *t = c->impl;
    t->slots[rank] = (call_slot){1, dt, MP_COLL_SUM, root, n, in, out, counts};
    MP_TRY(tbarrier(c, rank, "broadcast"));
    mp_status st = check_slots(c, "broadcast");
    if (st == MP_OK) {
        size_t es = mp_dtype_size(dt);
        const call_slot *src = &t->slots[root];
        for (int i = 0; i < n; i++)
            if (out[i] != src->in[i])
                memmove(out[i], src->in[i], (size_t)counts[i] * es);
    }
    mp_status st2 = tbarrier(c, rank, "broadcast");
    return st != MP_OK ? st : st2;
}

static mp_status t_barrier(mp_comm *c, int rank) {
    MP_TRY(check_rank(c, rank));
    return tbarrier(c, rank, "barrier");
}

static void t_abort(mp_comm *c, int rank, const char *why) {
    threads_impl *t = c->impl;
    pthread_mutex_lock(&t->mu);
    if (!t->aborted) {
        snprintf(t->why, sizeof t->why, "replica %d failed, so the collective was aborted: %s",
                 rank, why ? why : "(no reason given)");
        t->aborted = 1;
    }
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

static void t_destroy(mp_comm *c) {
    threads_impl *t = c->impl;
    if (t) {
        pthread_mutex_destroy(&t->mu);
        pthread_cond_destroy(&t->cv);
        free(t);
    }
    free(c);
}

static const mp_coll_backend threads_backend = {
    "threads", t_all_reduce, t_broadcast, t_barrier, t_abort, t_destroy,
};

mp_status mp_comm_threads_new(int size, double timeout_s, mp_comm **out) {
    if (size < 1 || size > MAX_THREAD_RANKS)
        return mp_error_set(MP_ERR_VALUE, "in-process collectives: %d replicas (1..%d supported)",
                            size, MAX_THREAD_RANKS);
    if (!(timeout_s > 0) || timeout_s > 1e9)
        return mp_error_set(MP_ERR_VALUE, "collective timeout must be a positive number of "
                            "seconds, got %g", timeout_s);
    mp_comm *c = calloc(1, sizeof *c);
    threads_impl *t = calloc(1, sizeof *t);
    if (!c || !t) {
        free(c);
        free(t);
        return mp_error_set(MP_ERR_MEMORY, "in-process collectives: out of memory");
    }
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    c->be = &threads_backend;
    c->size = size;
    c->rank = -1;
    c->timeout_s = timeout_s;
    c->impl = t;
    *out = c;
    return MP_OK;
}
