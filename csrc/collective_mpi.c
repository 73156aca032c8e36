/* collective_mpi.c — the MPI collectives engine: one rank per process over MPI_COMM_WORLD,
 * through the MPI standard ABI library (libmpi_abi.so, MPI 5) dlopen'ed at run time, so
 * importing mixprec never needs MPI. A float32/float64 buffer that is large or alone is
 * reduced straight into its output (reduce-scatter + all-gather); the rest of a bucket is
 * packed into one float32/float64 buffer. Non-blocking calls are polled under a deadline,
 * and a peer process that is gone is named in the error; no call waits forever. Host
 * buffers only. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "collective.h"

/* Handles of the MPI standard ABI (MPI 5, mpi_abi.h): fixed integer values cast to
 * pointers, the same in every ABI-conforming library. */
typedef void *abi_handle;
#define ABI_COMM_WORLD ((abi_handle)0x101)
#define ABI_ERRORS_RETURN ((abi_handle)0x143)
#define ABI_SUM ((abi_handle)0x21)
#define ABI_MAX ((abi_handle)0x23)
#define ABI_FLOAT ((abi_handle)0x210)
#define ABI_DOUBLE ((abi_handle)0x214)
#define ABI_BYTE ((abi_handle)0x247)
#define ABI_IN_PLACE ((void *)1)
#define ABI_THREAD_SERIALIZED 2048
#define ABI_MAX_ERROR_STRING 512

typedef struct {
    void *lib;
    int (*Initialized)(int *);
    int (*Finalized)(int *);
    int (*Init_thread)(int *, char ***, int, int *);
    int (*Finalize)(void);
    int (*Comm_rank)(abi_handle, int *);
    int (*Comm_size)(abi_handle, int *);
    int (*Comm_set_errhandler)(abi_handle, abi_handle);
    int (*Iallreduce)(const void *, void *, int, abi_handle, abi_handle, abi_handle, abi_handle *);
    int (*Ireduce)(const void *, void *, int, abi_handle, abi_handle, int, abi_handle, abi_handle *);
    int (*Ibcast)(void *, int, abi_handle, int, abi_handle, abi_handle *);
    int (*Ibarrier)(abi_handle, abi_handle *);
    int (*Iallgather)(const void *, int, abi_handle, void *, int, abi_handle, abi_handle, abi_handle *);
    int (*Ireduce_scatter)(const void *, void *, const int *, abi_handle, abi_handle, abi_handle,
                           abi_handle *);
    int (*Iallgatherv)(const void *, int, abi_handle, void *, const int *, const int *, abi_handle,
                       abi_handle, abi_handle *);
    int (*Test)(abi_handle *, int *, void *);
    int (*Error_string)(int, char *, int *);
} mpi_api;

typedef struct {
    pid_t pid;
    char host[64];
} peer_info;

typedef struct {
    pthread_mutex_t mu;
    peer_info *peers;
    char host[64];
    char *stage;          /* packed bucket, reused between calls (under mu) */
    size_t stage_cap;
    int *blocks, *displs; /* per-rank block counts and offsets of one chunk (under mu) */
} mpi_impl;

/* The staging buffer, grown to at least `nbytes` (kept: a fresh 64 MiB block per step
 * costs its page faults every time). */
static char *stage_get(mpi_impl *m, size_t nbytes) {
    if (nbytes == 0)
        nbytes = 1;
    if (m->stage_cap < nbytes) {
        free(m->stage);
        m->stage = malloc(nbytes);
        m->stage_cap = m->stage ? nbytes : 0;
    }
    return m->stage;
}

static mpi_api api;
static int mpi_started;  /* MPI_Init_thread was called by us */
static int mpi_broken;   /* a call failed: never MPI_Finalize (it would wait for the dead) */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Whether a process of this host has ended: gone, or a zombie its launcher has not
 * reaped yet (mpiexec -disable-auto-cleanup leaves them). */
static int process_gone(pid_t pid) {
    if (kill(pid, 0) != 0)
        return errno == ESRCH;
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *close = strrchr(buf, ')'); /* "pid (comm) S ..." */
    return close && close[1] == ' ' && (close[2] == 'Z' || close[2] == 'X');
}

/* "rank 1 (pid 4242 on host) exited" for every same-host peer that no longer exists. */
static int lost_peers(mp_comm *c, char *buf, size_t cap) {
    mpi_impl *m = c->impl;
    int found = 0;
    size_t len = 0;
    buf[0] = 0;
    if (!m->peers)
        return 0;
    for (int r = 0; r < c->size && len + 80 < cap; r++) {
        if (r == c->rank || strcmp(m->peers[r].host, m->host) != 0)
            continue;
        if (process_gone(m->peers[r].pid)) {
            len += (size_t)snprintf(buf + len, cap - len, "%srank %d (pid %d on %s)",
                                    found ? ", " : "", r, (int)m->peers[r].pid, m->peers[r].host);
            found++;
        }
    }
    return found;
}

int mp_comm_mpi_lost_peers(mp_comm *mpi, char *buf, size_t cap) {
    if (cap)
        buf[0] = 0;
    if (!mpi || !mpi->be || !mpi->be->name || strcmp(mpi->be->name, "mpi") != 0 || cap < 100)
        return 0;
    return lost_peers(mpi, buf, cap);
}

static mp_status fail(mp_comm *c, const char *what, const char *detail) {
    char lost[512];
    mpi_broken = 1;
    if (lost_peers(c, lost, sizeof lost))
        return mp_error_set(MP_ERR_UNAVAILABLE, "MPI %s on rank %d of %d failed: lost peer %s "
                            "(the process is gone). %s", what, c->rank, c->size, lost, detail);
    return mp_error_set(MP_ERR_UNAVAILABLE, "MPI %s on rank %d of %d failed: %s", what, c->rank,
                        c->size, detail);
}

static mp_status mpi_err(mp_comm *c, const char *what, int rc) {
    char s[ABI_MAX_ERROR_STRING + 1];
    int len = 0;
    s[0] = 0;
    if (api.Error_string && api.Error_string(rc, s, &len) == 0 && len >= 0 && len <= ABI_MAX_ERROR_STRING)
        s[len] = 0;
    char detail[700];
    snprintf(detail, sizeof detail, "MPI error %d: %s", rc, s);
    return fail(c, what, detail);
}

/* Polls the request until done (MPI progresses a large message only while it is tested,
 * so the loop never sleeps: it yields the core between tests, as MPI's blocking calls
 * busy-poll); checks same-host peers every 50 ms and gives up after the timeout. */
static mp_status wait_req(mp_comm *c, abi_handle *req, const char *what) {
    double t0 = now_s(), next_check = t0 + 0.05;
    for (long spins = 1;; spins++) {
        int flag = 0;
        int rc = api.Test(req, &flag, NULL);
        if (rc != 0)
            return mpi_err(c, what, rc);
        if (flag)
            return MP_OK;
        if (spins % 64)
            continue;
        sched_yield();
        double t = now_s();
        if (t >= next_check) {
            char lost[512];
            if (lost_peers(c, lost, sizeof lost))
                return fail(c, what, "the collective cannot complete");
            next_check = t + 0.05;
        }
        if (t - t0 > c->timeout_s) {
            char detail[200];
            snprintf(detail, sizeof detail, "no answer from the other ranks within %g s "
                     "(a peer is lost or stalled; MIXPREC_COLLECTIVE_TIMEOUT sets the limit)",
                     c->timeout_s);
            return fail(c, what, detail);
        }
    }
}

/* A large bucket is reduced in chunks of CHUNK_BYTES, one after the other: MPICH's
 * non-blocking algorithms malloc a temporary of about half a chunk per call, and glibc
 * serves a temporary above its mmap threshold (at most 32 MiB) with fresh pages every
 * time (8193 page faults per 64 MiB call, a third of its time); 16 MiB chunks keep the
 * temporaries in the heap, reused. Below SMALL_BYTES one MPI_Iallreduce (one round). */
#define CHUNK_BYTES ((size_t)16 << 20)
#define SMALL_BYTES ((size_t)1 << 20)
#define MAX_COUNT (1 << 30) /* bytes per MPI_Ibcast of a broadcast */

/* out = op over ranks of `send`, out of place, as MPI_Ireduce_scatter straight into this
 * rank's block of `out` then MPI_Iallgatherv in place: `send` is read once and never
 * copied, and every element is reduced on one rank only, so all ranks get its bits. */
static mp_status reduce_scatter_gather(mp_comm *c, const void *send, void *out, int m,
                                       abi_handle dt, size_t es, abi_handle op) {
    mpi_impl *mi = c->impl;
    int per = m / c->size, extra = m % c->size, off = 0;
    for (int r = 0; r < c->size; r++) {
        mi->blocks[r] = per + (r < extra);
        mi->displs[r] = off;
        off += mi->blocks[r];
    }
    abi_handle req = NULL;
    int rc = api.Ireduce_scatter(send, (char *)out + (size_t)mi->displs[c->rank] * es, mi->blocks,
                                 dt, op, ABI_COMM_WORLD, &req);
    if (rc)
        return mpi_err(c, "all-reduce", rc);
    MP_TRY(wait_req(c, &req, "all-reduce"));
    rc = api.Iallgatherv(ABI_IN_PLACE, 0, dt, out, mi->blocks, mi->displs, dt, ABI_COMM_WORLD, &req);
    if (rc)
        return mpi_err(c, "all-reduce", rc);
    return wait_req(c, &req, "all-reduce");
}

/* buf = op over ranks of (send, or buf itself when send is NULL). */
static mp_status reduce_buffer(mp_comm *c, const void *send, void *buf, int64_t count,
                               abi_handle dt, size_t es, abi_handle op) {
    int64_t chunk = (int64_t)(CHUNK_BYTES / es);
    for (int64_t off = 0; off < count; off += chunk) {
        int m = (int)(count - off < chunk ? count - off : chunk);
        char *p = (char *)buf + (size_t)off * es;
        const void *sp = send ? (const char *)send + (size_t)off * es : ABI_IN_PLACE;
        abi_handle req = NULL;
        int rc;
        if (send && (c->size > 2 || (size_t)m * es >= SMALL_BYTES)) {
            MP_TRY(reduce_scatter_gather(c, sp, p, m, dt, es, op));
        } else if (c->size <= 2) { /* a+b == b+a: every rank gets the same bits */
            rc = api.Iallreduce(sp, p, m, dt, op, ABI_COMM_WORLD, &req);
            if (rc)
                return mpi_err(c, "all-reduce", rc);
            MP_TRY(wait_req(c, &req, "all-reduce"));
        } else { /* in place: reduce to rank 0, then broadcast: one summation for everyone */
            if (c->rank == 0)
                rc = api.Ireduce(ABI_IN_PLACE, p, m, dt, op, 0, ABI_COMM_WORLD, &req);
            else
                rc = api.Ireduce(p, NULL, m, dt, op, 0, ABI_COMM_WORLD, &req);
            if (rc)
                return mpi_err(c, "all-reduce", rc);
            MP_TRY(wait_req(c, &req, "all-reduce"));
            rc = api.Ibcast(p, m, dt, 0, ABI_COMM_WORLD, &req);
            if (rc)
                return mpi_err(c, "all-reduce", rc);
            MP_TRY(wait_req(c, &req, "all-reduce"));
        }
    }
    return MP_OK;
}

static mp_status check_call(mp_comm *c, int rank) {
    if (rank != c->rank)
        return mp_error_set(MP_ERR_VALUE, "MPI collective called with rank %d in process of rank %d",
                            rank, c->rank);
    if (mpi_broken)
        return mp_error_set(MP_ERR_UNAVAILABLE, "MPI: an earlier collective failed (a peer was "
                            "lost); the communicator cannot be used any more");
    return MP_OK;
}

/* out = op over ranks of one float32/float64 buffer, straight from `in` (not `out`). */
static mp_status reduce_direct(mp_comm *c, mp_dtype dt, mp_coll_op op, const void *in, void *out,
                               int64_t count) {
    size_t es = mp_dtype_size(dt);
    mp_status st = reduce_buffer(c, in, out, count, dt == MP_F32 ? ABI_FLOAT : ABI_DOUBLE, es,
                                 op == MP_COLL_MAX ? ABI_MAX : ABI_SUM);
    if (st == MP_OK && op == MP_COLL_MEAN) {
        if (dt == MP_F32)
            for (int64_t i = 0; i < count; i++)
                ((float *)out)[i] /= (float)c->size;
        else
            for (int64_t i = 0; i < count; i++)
                ((double *)out)[i] /= (double)c->size;
    }
    return st;
}

/* A float32/float64 buffer that is the bucket's only one, or at least SMALL_BYTES, is
 * reduced straight into its output (no staging copy either way); the others are packed
 * into one wire-type buffer (16-bit widened to float32), reduced in place and unpacked,
 * rounded once. Every rank decides alike: the counts are the same everywhere. */
static int goes_direct(mp_dtype dt, int n, const void *in, const void *out, int64_t count) {
    return (dt == MP_F32 || dt == MP_F64) && in != out &&
           (n == 1 || (size_t)count * mp_dtype_size(dt) >= SMALL_BYTES);
}

static mp_status m_all_reduce_locked(mp_comm *c, mp_dtype dt, mp_coll_op op, int n,
                                     const void *const *in, void *const *out, const int64_t *counts) {
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        if (goes_direct(dt, n, in[i], out[i], counts[i]))
            MP_TRY(reduce_direct(c, dt, op, in[i], out[i], counts[i]));
        else
            total += counts[i];
    }
    if (total == 0)
        return MP_OK; /* everything went direct (or is empty) */
    int wide = dt == MP_F64 ? 0 : 1; /* the wire type: float32 for f32/f16/bf16 */
    size_t wes = wide ? sizeof(float) : sizeof(double);
    char *buf = stage_get(c->impl, (size_t)total * wes);
    if (!buf)
        return mp_error_set(MP_ERR_MEMORY, "MPI all-reduce: cannot allocate %lld bytes",
                            (long long)(total * (int64_t)wes));
    int64_t off = 0;
    for (int i = 0; i < n; i++) /* pack (16-bit widened) */
        if (!goes_direct(dt, n, in[i], out[i], counts[i])) {
            mp_cast_host(in[i], dt, buf + (size_t)off * wes, wide ? MP_F32 : MP_F64, counts[i]);
            off += counts[i];
        }
    mp_status st = reduce_buffer(c, NULL, buf, total, wide ? ABI_FLOAT : ABI_DOUBLE, wes,
                                 op == MP_COLL_MAX ? ABI_MAX : ABI_SUM);
    if (st == MP_OK && op == MP_COLL_MEAN) {
        if (wide)
            for (int64_t i = 0; i < total; i++)
                ((float *)buf)[i] /= (float)c->size;
        else
            for (int64_t i = 0; i < total; i++)
                ((double *)buf)[i] /= (double)c->size;
    }
    off = 0;
    for (int i = 0; st == MP_OK && i < n; i++) /* unpack, rounded once */
        if (!goes_direct(dt, n, in[i], out[i], counts[i])) {
            mp_cast_host(buf + (size_t)off * wes, wide ? MP_F32 : MP_F64, out[i], dt, counts[i]);
            off += counts[i];
        }
    return st;
}

static mp_status m_all_reduce(mp_comm *c, int rank, mp_dtype dt, mp_coll_op op, int n,
                              const void *const *in, void *const *out, const int64_t *counts) {
    MP_TRY(check_call(c, rank));
    mpi_impl *m = c->impl;
    pthread_mutex_lock(&m->mu);
    mp_status st = m_all_reduce_locked(c, dt, op, n, in, out, counts);
    pthread_mutex_unlock(&m->mu);
    return st;
}

static mp_status m_broadcast(mp_comm *c, int rank, int root, mp_dtype dt, int n,
                             const void *const *in, void *const *out, const int64_t *counts) {
    MP_TRY(check_call(c, rank));
    if (root < 0 || root >= c->size)
        return mp_error_set(MP_ERR_VALUE, "broadcast: root %d is outside 0..%d", root, c->size - 1);
    mpi_impl *m = c->impl;
    size_t es = mp_dtype_size(dt);
    int64_t total = 0;
    for (int i = 0; i < n; i++)
        total += counts[i];
    char *buf = malloc((size_t)(total ? total : 1) * es);
    if (!buf)
        return mp_error_set(MP_ERR_MEMORY, "MPI broadcast: out of memory");
    int64_t off = 0;
    for (int i = 0; i < n; off += counts[i], i++)
        memcpy(buf + (size_t)off * es, in[i], (size_t)counts[i] * es);
    pthread_mutex_lock(&m->mu);
    mp_status st = MP_OK;
    int64_t nbytes = total * (int64_t)es;
    for (int64_t o = 0; st == MP_OK && o < nbytes; o += MAX_COUNT) {
        int cnt = (int)(nbytes - o < MAX_COUNT ? nbytes - o : MAX_COUNT);
        abi_handle req = NULL;
        int rc = api.Ibcast(buf + o, cnt, ABI_BYTE, root, ABI_COMM_WORLD, &req);
        st = rc ? mpi_err(c, "broadcast", rc) : wait_req(c, &req, "broadcast");
    }
    pthread_mutex_unlock(&m->mu);
    off = 0;
    for (int i = 0; st == MP_OK && i < n; off += counts[i], i++)
        memcpy(out[i], buf + (size_t)off * es, (size_t)counts[i] * es);
    free(buf);
    return st;
}

static mp_status m_barrier(mp_comm *c, int rank) {
    MP_TRY(check_call(c, rank));
    mpi_impl *m = c->impl;
    pthread_mutex_lock(&m->mu);
    abi_handle req = NULL;
    int rc = api.Ibarrier(ABI_COMM_WORLD, &req);
    mp_status st = rc ? mpi_err(c, "barrier", rc) : wait_req(c, &req, "barrier");
    pthread_mutex_unlock(&m->mu);
    return st;
}

static void m_abort(mp_comm *c, int rank, const char *why) {
    (void)c;
    (void)rank;
    (void)why;
    mpi_broken = 1;
}

static void m_destroy(mp_comm *c) {
    mpi_impl *m = c->impl;
    if (m) {
        pthread_mutex_destroy(&m->mu);
        free(m->peers);
        free(m->stage);
        free(m->blocks);
        free(m->displs);
        free(m);
    }
    free(c);
}

static const mp_coll_backend mpi_backend = {
    "mpi", m_all_reduce, m_broadcast, m_barrier, m_abort, m_destroy,
};

#define LOAD(name)                                                                      \
    do {                                                                                \
        *(void **)&api.name = dlsym(lib, "MPI_" #name);                                 \
        if (!api.name) {                                                                \
            dlclose(lib);                                                               \
            memset(&api, 0, sizeof api);                                                \
            return mp_error_set(MP_ERR_NOT_IMPLEMENTED, "MPI: %s has no MPI_%s (not an MPI " \
                                "standard ABI library?)", library, #name);              \
        }                                                                               \
    } while (0)

static mp_status load_api(const char *library) {
    if (api.lib)
        return MP_OK;
    void *lib = dlopen(library, RTLD_NOW | RTLD_GLOBAL);
    if (!lib)
        return mp_error_set(MP_ERR_NOT_IMPLEMENTED, "MPI: cannot load %s (%s). hint: pip install "
                            "mpich (or mixprec[mpi]) and start with mpiexec -n N python ...",
                            library, dlerror());
    LOAD(Initialized);
    LOAD(Finalized);
    LOAD(Init_thread);
    LOAD(Finalize);
    LOAD(Comm_rank);
    LOAD(Comm_size);
    LOAD(Comm_set_errhandler);
    LOAD(Iallreduce);
    LOAD(Ireduce);
    LOAD(Ibcast);
    LOAD(Ibarrier);
    LOAD(Iallgather);
    LOAD(Ireduce_scatter);
    LOAD(Iallgatherv);
    LOAD(Test);
    LOAD(Error_string);
    api.lib = lib;
    return MP_OK;
}

void mp_comm_mpi_finalize(void) {
    int fin = 0;
    if (api.lib && mpi_started && !mpi_broken && api.Finalized(&fin) == 0 && !fin)
        api.Finalize();
    mpi_started = 0;
}

mp_status mp_comm_mpi_new(const char *library, double timeout_s, mp_comm **out) {
    if (!(timeout_s > 0) || timeout_s > 1e9)
        return mp_error_set(MP_ERR_VALUE, "collective timeout must be a positive number of "
                            "seconds, got %g", timeout_s);
    MP_TRY(load_api(library));
    int init = 0;
    api.Initialized(&init);
    if (!init) {
        int provided = 0;
        int rc = api.Init_thread(NULL, NULL, ABI_THREAD_SERIALIZED, &provided);
        if (rc)
            return mp_error_set(MP_ERR_UNAVAILABLE, "MPI_Init_thread failed (MPI error %d)", rc);
        mpi_started = 1;
    }
    api.Comm_set_errhandler(ABI_COMM_WORLD, ABI_ERRORS_RETURN);
    mp_comm *c = calloc(1, sizeof *c);
    mpi_impl *m = calloc(1, sizeof *m);
    if (!c || !m) {
        free(c);
        free(m);
        return mp_error_set(MP_ERR_MEMORY, "MPI: out of memory");
    }
    pthread_mutex_init(&m->mu, NULL);
    c->be = &mpi_backend;
    c->impl = m;
    c->timeout_s = timeout_s;
    api.Comm_rank(ABI_COMM_WORLD, &c->rank);
    api.Comm_size(ABI_COMM_WORLD, &c->size);
    /* who is who: pid and host of every rank, to name a lost peer later */
    peer_info me;
    memset(&me, 0, sizeof me);
    me.pid = getpid();
    gethostname(me.host, sizeof me.host - 1);
    memcpy(m->host, me.host, sizeof m->host);
    m->peers = calloc((size_t)c->size, sizeof *m->peers);
    m->blocks = calloc((size_t)c->size, sizeof *m->blocks);
    m->displs = calloc((size_t)c->size, sizeof *m->displs);
    if (!m->peers || !m->blocks || !m->displs) {
        m_destroy(c);
        return mp_error_set(MP_ERR_MEMORY, "MPI: out of memory");
    }
    abi_handle req = NULL;
    int rc = api.Iallgather(&me, (int)sizeof me, ABI_BYTE, m->peers, (int)sizeof me, ABI_BYTE,
                            ABI_COMM_WORLD, &req);
    mp_status st = rc ? mpi_err(c, "start-up exchange", rc) : wait_req(c, &req, "start-up exchange");
    if (st != MP_OK) {
        m_destroy(c);
        return st;
    }
    *out = c;
    return MP_OK;
}
