/* collective_nccl.c — the NCCL collectives engine: GPU buffers reduced by libnccl.so.2,
 * dlopen'ed at run time (never a build or import dependency). One process driving several
 * GPUs makes one communicator per GPU in one NCCL group (one replica thread per GPU, each
 * calling with its rank); several processes use one GPU each, the unique id broadcast over
 * the MPI engine (as llm.c does). Its watchdog: communicators are non-blocking (NCCL >=
 * 2.14), and set-up and every call are polled (ncclCommGetAsyncError, then the stream's
 * `stream_idle` slot) under the communicator's timeout, naming a dead peer through the MPI
 * engine; on failure every local communicator is aborted (ncclCommAbort) and later calls
 * fail cleanly. Must not touch the CUDA runtime itself (the core never links it).
 * Compiled everywhere; its logic runs in CI against a fake libnccl (tests/distribute/
 * fake_nccl.c), not yet against a real NCCL on a GPU. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collective.h"

typedef void *nccl_comm;
typedef struct { char internal[128]; } nccl_id; /* NCCL_UNIQUE_ID_BYTES */
/* ncclDataType_t and ncclRedOp_t values of nccl.h (stable since NCCL 2.0 / 2.10) */
enum { NCCL_F16 = 6, NCCL_F32 = 7, NCCL_F64 = 8, NCCL_BF16 = 9 };
enum { NCCL_SUM = 0, NCCL_MAX = 2, NCCL_AVG = 4 };
enum { NCCL_IN_PROGRESS = 7 }; /* ncclInProgress: not an error */
#define NCCL_MIN_VERSION 21400  /* 2.14: ncclCommInitRankConfig, non-blocking communicators */

/* ncclConfig_t as NCCL 2.14 laid it out (NCCL_CONFIG_INITIALIZER's magic and version): NCCL
 * reads `size` bytes of it and keeps its defaults for fields added since. */
typedef struct {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int blocking;
    int cgaClusterSize;
    int minCTAs;
    int maxCTAs;
    const char *netName;
} nccl_config;

static struct {
    void *lib;
    int version;
    int (*GetVersion)(int *);
    int (*GetUniqueId)(nccl_id *);
    int (*CommInitRankConfig)(nccl_comm *, int, nccl_id, int, nccl_config *);
    int (*AllReduce)(const void *, void *, size_t, int, int, nccl_comm, void *);
    int (*Broadcast)(const void *, void *, size_t, int, int, nccl_comm, void *);
    int (*GroupStart)(void);
    int (*GroupEnd)(void);
    int (*CommDestroy)(nccl_comm);
    int (*CommAbort)(nccl_comm);
    int (*CommGetAsyncError)(nccl_comm, int *);
    const char *(*GetErrorString)(int);
} nc;
static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;

#define NCCL_MAX_LOCAL 64

/* Every NCCL call on local communicator k is made under mu[k] (they never block: the
 * communicators are non-blocking), so an abort from another replica's thread never frees
 * a communicator while a call on it runs; an aborted one is NULL. */
typedef struct {
    int ncomms;                     /* local communicators: ndev (one process) or 1 */
    nccl_comm comms[NCCL_MAX_LOCAL];
    pthread_mutex_t mu[NCCL_MAX_LOCAL];
    int devs[NCCL_MAX_LOCAL];       /* CUDA ordinal of each local communicator */
    int aborted;                    /* under abort_mu */
    char why[768];                  /* why it was aborted (under abort_mu) */
    pthread_mutex_t abort_mu;
    int64_t bucket_bytes;           /* a group call covers at most this many bytes */
    mp_comm *mpi;                   /* names dead peers (borrowed: the binding keeps it), or NULL */
} nccl_impl;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *nccl_str(int rc) {
    const char *s = nc.GetErrorString ? nc.GetErrorString(rc) : NULL;
    return s ? s : "?";
}

static int local_index(mp_comm *c, int rank) {
    nccl_impl *m = c->impl;
    return m->ncomms > 1 ? rank : 0;
}

static int nccl_type(mp_dtype dt) {
    switch (dt) {
    case MP_F16: return NCCL_F16;
    case MP_BF16: return NCCL_BF16;
    case MP_F64: return NCCL_F64;
    default: return NCCL_F32;
    }
}

/* The stream of local communicator k's GPU (also makes that GPU the thread's current
 * device: the CUDA backend's slot does). */
static mp_status device_stream(nccl_impl *m, int k, void **stream) {
    const mp_backend *be = mp_backend_get(MP_DEV_CUDA);
    if (!be)
        return mp_error_set(MP_ERR_DEVICE, "NCCL collective: no CUDA backend is registered");
    return MP_BACKEND_CALL(be, stream, ((mp_device){MP_DEV_CUDA, m->devs[k]}), stream);
}

static mp_status stream_idle(nccl_impl *m, int k, int *idle) {
    const mp_backend *be = mp_backend_get(MP_DEV_CUDA);
    if (!be)
        return mp_error_set(MP_ERR_DEVICE, "NCCL collective: no CUDA backend is registered");
    return MP_BACKEND_CALL(be, stream_idle, ((mp_device){MP_DEV_CUDA, m->devs[k]}), idle);
}

/* Aborts every local communicator once (ncclCommAbort releases GPU kernels waiting for a
 * peer), remembering why; later calls fail with that reason. */
static void abort_all(mp_comm *c, const char *why) {
    nccl_impl *m = c->impl;
    pthread_mutex_lock(&m->abort_mu);
    if (!m->aborted) {
        m->aborted = 1;
        snprintf(m->why, sizeof m->why, "%s", why);
        for (int k = 0; k < m->ncomms; k++) {
            pthread_mutex_lock(&m->mu[k]);
            if (m->comms[k])
                nc.CommAbort(m->comms[k]);
            m->comms[k] = NULL;
            pthread_mutex_unlock(&m->mu[k]);
        }
    }
    pthread_mutex_unlock(&m->abort_mu);
}

static mp_status aborted_error(mp_comm *c) {
    nccl_impl *m = c->impl;
    pthread_mutex_lock(&m->abort_mu);
    mp_status st = mp_error_set(MP_ERR_UNAVAILABLE, "NCCL collective: this communicator was aborted "
                                "earlier and cannot be used any more (%s)", m->why);
    pthread_mutex_unlock(&m->abort_mu);
    return st;
}

/* The failure of `what` on local communicator k: the message names the dead peers the MPI
 * engine can see (same host), every local communicator is aborted, MP_ERR_UNAVAILABLE. */
static mp_status give_up(mp_comm *c, int k, const char *what, const char *detail) {
    nccl_impl *m = c->impl;
    char lost[512], msg[1024];
    int nlost = mp_comm_mpi_lost_peers(m->mpi, lost, sizeof lost);
    if (nlost)
        snprintf(msg, sizeof msg, "NCCL %s on rank %d of %d failed: lost peer %s (the process is "
                 "gone%s%s); the communicator was aborted (ncclCommAbort)", what,
                 c->rank >= 0 ? c->rank : k, c->size, lost, *detail ? "; " : "", detail);
    else
        snprintf(msg, sizeof msg, "NCCL %s on rank %d of %d failed: %s; the communicator was "
                 "aborted (ncclCommAbort)", what, c->rank >= 0 ? c->rank : k, c->size, detail);
    abort_all(c, msg);
    return mp_error_set(MP_ERR_UNAVAILABLE, "%s", msg);
}

static mp_status nccl_failed(mp_comm *c, int k, const char *what, const char *call, int rc) {
    char detail[256];
    snprintf(detail, sizeof detail, "%s: %s (%d)", call, nccl_str(rc), rc);
    return give_up(c, k, what, detail);
}

/* Polls local communicator k until its work is done — NCCL's state leaves ncclInProgress
 * (a non-blocking call or set-up finished its host side) and, with `stream`, the GPU's
 * stream is idle (the queued kernels ran) — or fails: an error NCCL reports, a dead peer
 * (checked every 50 ms through the MPI engine), or `deadline` passed. Never waits inside
 * NCCL or CUDA: a collective whose peer died never finishes. */
static mp_status wait_done(mp_comm *c, int k, const char *what, double deadline, int stream) {
    nccl_impl *m = c->impl;
    double next_check = now_s() + 0.05;
    for (long spins = 0;; spins++) {
        int async = 0, rc;
        pthread_mutex_lock(&m->mu[k]);
        if (!m->comms[k]) {
            pthread_mutex_unlock(&m->mu[k]);
            return aborted_error(c);
        }
        rc = nc.CommGetAsyncError(m->comms[k], &async);
        pthread_mutex_unlock(&m->mu[k]);
        if (rc != 0)
            return nccl_failed(c, k, what, "ncclCommGetAsyncError", rc);
        if (async != 0 && async != NCCL_IN_PROGRESS)
            return nccl_failed(c, k, what, "an asynchronous error", async);
        if (async == 0) {
            int idle = 1;
            if (stream) {
                mp_status st = stream_idle(m, k, &idle);
                if (st != MP_OK) {
                    char detail[300];
                    snprintf(detail, sizeof detail, "the GPU stream cannot be queried: %s", mp_error_message());
                    return give_up(c, k, what, detail);
                }
            }
            if (idle)
                return MP_OK;
        }
        if (spins < 256) {
            sched_yield();
            continue;
        }
        struct timespec ts = {0, 50000}; /* 50 us between polls once it takes a while */
        nanosleep(&ts, NULL);
        double t = now_s();
        if (t >= next_check) {
            char lost[512];
            if (mp_comm_mpi_lost_peers(m->mpi, lost, sizeof lost))
                return give_up(c, k, what, "");
            next_check = t + 0.05;
        }
        if (t > deadline) {
            char detail[300];
            snprintf(detail, sizeof detail, "no answer from the other ranks within %g s (a peer is "
                     "lost or stalled; MIXPREC_COLLECTIVE_TIMEOUT sets the limit)", c->timeout_s);
            return give_up(c, k, what, detail);
        }
    }
}

static mp_status check(mp_comm *c, int rank) {
    nccl_impl *m = c->impl;
    /* one process driving its GPUs (c->rank < 0): ranks 0..ncomms-1, one GPU included */
    if (c->rank < 0 ? (rank < 0 || rank >= m->ncomms) : rank != c->rank)
        return mp_error_set(MP_ERR_VALUE, "NCCL collective: rank %d does not belong to this "
                            "process", rank);
    int k = local_index(c, rank), async = 0, rc;
    pthread_mutex_lock(&m->mu[k]);
    if (!m->comms[k]) {
        pthread_mutex_unlock(&m->mu[k]);
        return aborted_error(c);
    }
    rc = nc.CommGetAsyncError(m->comms[k], &async);
    pthread_mutex_unlock(&m->mu[k]);
    if (rc != 0)
        return nccl_failed(c, k, "collective", "ncclCommGetAsyncError", rc);
    if (async != 0 && async != NCCL_IN_PROGRESS)
        return nccl_failed(c, k, "collective", "an earlier asynchronous error", async);
    return MP_OK;
}

typedef int (*issue_fn)(const void *in, void *out, size_t count, int type, int arg, nccl_comm comm,
                        void *stream);

static int issue_all_reduce(const void *in, void *out, size_t count, int type, int op, nccl_comm comm,
                            void *stream) {
    return nc.AllReduce(in, out, count, type, op, comm, stream);
}

static int issue_broadcast(const void *in, void *out, size_t count, int type, int root, nccl_comm comm,
                           void *stream) {
    return nc.Broadcast(in, out, count, type, root, comm, stream);
}

/* The buffers in buckets of at most m->bucket_bytes (mp_coll_plan_buckets), one NCCL group
 * per bucket: NCCL fuses a group's operations into one launch. A group's host side is
 * waited for before the next (NCCL's rule for non-blocking communicators: nothing else on
 * the communicator while it reports ncclInProgress); the last, for the stream too, so the
 * call returns with the results there or fails within the timeout. */
static mp_status run_buckets(mp_comm *c, int rank, const char *what, issue_fn fn, int arg, mp_dtype dt, int n,
                             const void *const *in, void *const *out, const int64_t *counts) {
    MP_TRY(check(c, rank));
    nccl_impl *m = c->impl;
    int k = local_index(c, rank);
    void *stream = NULL;
    MP_TRY(device_stream(m, k, &stream));
    int *starts = malloc((size_t)(n + 1) * sizeof *starts);
    if (!starts)
        return mp_error_set(MP_ERR_MEMORY, "NCCL %s: out of host memory", what);
    int nb = mp_coll_plan_buckets(n, counts, mp_dtype_size(dt), m->bucket_bytes, starts);
    double deadline = now_s() + c->timeout_s;
    mp_status st = MP_OK;
    for (int b = 0; b < nb && st == MP_OK; b++) {
        pthread_mutex_lock(&m->mu[k]);
        if (!m->comms[k]) {
            pthread_mutex_unlock(&m->mu[k]);
            st = aborted_error(c);
            break;
        }
        const char *call = "ncclGroupStart";
        int rc = nc.GroupStart();
        for (int i = starts[b]; (rc == 0 || rc == NCCL_IN_PROGRESS) && i < starts[b + 1]; i++)
            if (counts[i] > 0) {
                call = fn == issue_all_reduce ? "ncclAllReduce" : "ncclBroadcast";
                rc = fn(in[i], out[i], (size_t)counts[i], nccl_type(dt), arg, m->comms[k], stream);
            }
        int rc2 = nc.GroupEnd();
        pthread_mutex_unlock(&m->mu[k]);
        if ((rc == 0 || rc == NCCL_IN_PROGRESS) && rc2 != 0 && rc2 != NCCL_IN_PROGRESS) {
            rc = rc2;
            call = "ncclGroupEnd";
        }
        if (rc != 0 && rc != NCCL_IN_PROGRESS)
            st = nccl_failed(c, k, what, call, rc);
        else
            st = wait_done(c, k, what, deadline, b == nb - 1);
    }
    free(starts);
    return st;
}

/* NOTE: NCCL reduces 16-bit buffers in their own type inside its kernels (not widened to
 * float32, not in rank order): the host engines' bit-for-bit rule does not hold here, and
 * MEAN is ncclAvg. Every replica still gets the same bits (one all-reduce result). */
static mp_status n_all_reduce(mp_comm *c, int rank, mp_dtype dt, mp_coll_op op, int n,
                              const void *const *in, void *const *out, const int64_t *counts) {
    int nop = op == MP_COLL_MEAN ? NCCL_AVG : op == MP_COLL_MAX ? NCCL_MAX : NCCL_SUM;
    return run_buckets(c, rank, "all-reduce", issue_all_reduce, nop, dt, n, in, out, counts);
}

static mp_status n_broadcast(mp_comm *c, int rank, int root, mp_dtype dt, int n,
                             const void *const *in, void *const *out, const int64_t *counts) {
    if (root < 0 || root >= c->size)
        return mp_error_set(MP_ERR_VALUE, "NCCL broadcast: root %d is outside 0..%d", root, c->size - 1);
    return run_buckets(c, rank, "broadcast", issue_broadcast, root, dt, n, in, out, counts);
}

static mp_status n_barrier(mp_comm *c, int rank) {
    (void)c;
    (void)rank;
    return mp_error_set(MP_ERR_NOT_IMPLEMENTED, "NCCL has no barrier: use the MPI engine's");
}

/* A replica failed: every local communicator is aborted, so the GPU kernels of the others
 * (waiting for the failed one's data) are released rather than left hanging. */
static void n_abort(mp_comm *c, int rank, const char *why) {
    (void)rank;
    char msg[600];
    snprintf(msg, sizeof msg, "aborted by the program: %s", why && *why ? why : "a replica failed");
    abort_all(c, msg);
}

/* Every call waited for its work, so a communicator that was not aborted has nothing
 * queued: ncclCommDestroy cannot wait for a dead peer. */
static void n_destroy(mp_comm *c) {
    nccl_impl *m = c->impl;
    if (m) {
        for (int k = 0; k < m->ncomms; k++)
            if (m->comms[k])
                nc.CommDestroy(m->comms[k]);
        for (int k = 0; k < NCCL_MAX_LOCAL; k++)
            pthread_mutex_destroy(&m->mu[k]);
        pthread_mutex_destroy(&m->abort_mu);
    }
    free(m);
    free(c);
}

static const mp_coll_backend nccl_backend = {
    "nccl", n_all_reduce, n_broadcast, n_barrier, n_abort, n_destroy,
};

#define NLOAD(field, sym)                                                               \
    do {                                                                                \
        *(void **)&nc.field = dlsym(lib, sym);                                          \
        if (!nc.field) {                                                                \
            dlclose(lib);                                                               \
            memset(&nc, 0, sizeof nc);                                                  \
            return mp_error_set(MP_ERR_NOT_IMPLEMENTED, "NCCL: %s has no %s (NCCL >= 2.14 "  \
                                "is needed)", library, sym);                            \
        }                                                                               \
    } while (0)

static mp_status load_locked(const char *library) {
    if (nc.lib)
        return MP_OK;
    void *lib = dlopen(library, RTLD_NOW | RTLD_GLOBAL);
    if (!lib)
        return mp_error_set(MP_ERR_NOT_IMPLEMENTED, "NCCL: cannot load %s (%s). hint: NCCL is needed "
                            "to reduce across GPUs: `pip install nvidia-nccl-cu13` (or your "
                            "distribution's libnccl2 package), or name the library with "
                            "MIXPREC_NCCL_LIBRARY", library, dlerror());
    NLOAD(GetVersion, "ncclGetVersion");
    NLOAD(GetUniqueId, "ncclGetUniqueId");
    NLOAD(CommInitRankConfig, "ncclCommInitRankConfig");
    NLOAD(AllReduce, "ncclAllReduce");
    NLOAD(Broadcast, "ncclBroadcast");
    NLOAD(GroupStart, "ncclGroupStart");
    NLOAD(GroupEnd, "ncclGroupEnd");
    NLOAD(CommDestroy, "ncclCommDestroy");
    NLOAD(CommAbort, "ncclCommAbort");
    NLOAD(CommGetAsyncError, "ncclCommGetAsyncError");
    NLOAD(GetErrorString, "ncclGetErrorString");
    int v = 0;
    if (nc.GetVersion(&v) != 0 || v < NCCL_MIN_VERSION) {
        dlclose(lib);
        memset(&nc, 0, sizeof nc);
        return mp_error_set(MP_ERR_NOT_IMPLEMENTED, "NCCL: %s is NCCL %d.%d.%d; mixprec needs 2.14 or "
                            "newer (non-blocking communicators, for its timeouts). hint: pip install "
                            "nvidia-nccl-cu13", library, v / 10000, v / 100 % 100, v % 100);
    }
    nc.version = v;
    nc.lib = lib;
    return MP_OK;
}

mp_status mp_nccl_load(const char *library) {
    pthread_mutex_lock(&load_mu);
    mp_status st = load_locked(library);
    pthread_mutex_unlock(&load_mu);
    return st;
}

/* Starts the set-up of local communicator k as rank `rank` of `nranks` (non-blocking). */
static int init_rank(nccl_impl *m, int k, int nranks, nccl_id id, int rank) {
    nccl_config cfg = {sizeof cfg, 0xcafebeef, NCCL_MIN_VERSION, 0, INT_MIN, INT_MIN, INT_MIN, NULL};
    return nc.CommInitRankConfig(&m->comms[k], nranks, id, rank, &cfg);
}

mp_status mp_comm_nccl_new(const char *library, int ndev, const int *devices, mp_comm *mpi,
                           double timeout_s, int64_t bucket_bytes, mp_comm **out) {
    if (mpi ? ndev != 1 : (ndev < 1 || ndev > NCCL_MAX_LOCAL))
        return mp_error_set(MP_ERR_VALUE, "NCCL: %d local GPUs (%s supported)", ndev,
                            mpi ? "one per process with MPI: 1" : "1..64");
    if (!(timeout_s > 0) || timeout_s > 1e9)
        return mp_error_set(MP_ERR_VALUE, "collective timeout must be a positive number of "
                            "seconds, got %g", timeout_s);
    for (int i = 0; i < ndev; i++)
        for (int j = 0; j < i; j++)
            if (devices[i] == devices[j] || devices[i] < 0)
                return mp_error_set(MP_ERR_VALUE, "NCCL: GPU %d is named twice (or negative)", devices[i]);
    if (!mp_backend_get(MP_DEV_CUDA) || mp_device_count(MP_DEV_CUDA) <= 0)
        return mp_error_set(MP_ERR_DEVICE, "NCCL needs GPUs, and no CUDA backend is registered");
    for (int i = 0; i < ndev; i++)
        if (devices[i] >= mp_device_count(MP_DEV_CUDA))
            return mp_error_set(MP_ERR_DEVICE, "NCCL: GPU:%d is not available (this process sees %d GPU(s))",
                                devices[i], mp_device_count(MP_DEV_CUDA));
    MP_TRY(mp_nccl_load(library));
    mp_comm *c = calloc(1, sizeof *c);
    nccl_impl *m = calloc(1, sizeof *m);
    if (!c || !m) {
        free(c);
        free(m);
        return mp_error_set(MP_ERR_MEMORY, "NCCL: out of memory");
    }
    for (int k = 0; k < NCCL_MAX_LOCAL; k++)
        pthread_mutex_init(&m->mu[k], NULL);
    pthread_mutex_init(&m->abort_mu, NULL);
    c->be = &nccl_backend;
    c->impl = m;
    c->timeout_s = timeout_s;
    m->mpi = mpi;
    m->bucket_bytes = bucket_bytes > 0 ? bucket_bytes : MP_COLL_BUCKET_BYTES;
    memcpy(m->devs, devices, (size_t)ndev * sizeof *devices);
    nccl_id id;
    memset(&id, 0, sizeof id);
    int rc = 0;
    mp_status st = MP_OK;
    void *stream = NULL;
    if (!mpi) { /* one process, ndev GPUs: replica r drives communicator r on devices[r] */
        c->size = ndev;
        c->rank = -1;
        if ((rc = nc.GetUniqueId(&id)) != 0) {
            n_destroy(c);
            return mp_error_set(MP_ERR_UNAVAILABLE, "NCCL: ncclGetUniqueId failed: %s (%d)", nccl_str(rc), rc);
        }
        rc = nc.GroupStart();
        for (int k = 0; k < ndev && (rc == 0 || rc == NCCL_IN_PROGRESS) && st == MP_OK; k++) {
            st = device_stream(m, k, &stream); /* makes devices[k] current for its init */
            if (st == MP_OK)
                rc = init_rank(m, k, ndev, id, k);
            m->ncomms = k + 1;
        }
        int rc2 = nc.GroupEnd();
        if (rc == 0 || rc == NCCL_IN_PROGRESS)
            rc = rc2;
    } else { /* one GPU per process; the id travels over MPI */
        c->size = mpi->size;
        c->rank = mpi->rank;
        st = device_stream(m, 0, &stream); /* makes devices[0] current for the init */
        if (st == MP_OK && mpi->rank == 0 && (rc = nc.GetUniqueId(&id)) != 0) {
            n_destroy(c);
            return mp_error_set(MP_ERR_UNAVAILABLE, "NCCL: ncclGetUniqueId failed: %s (%d)", nccl_str(rc), rc);
        }
        if (st == MP_OK) {
            const void *in[1] = {&id};
            void *outp[1] = {&id};
            int64_t count[1] = {(int64_t)(sizeof id / sizeof(float))}; /* moved as bytes by MPI */
            st = MP_COLL_CALL(mpi, broadcast, mpi->rank, 0, MP_F32, 1, in, outp, count);
        }
        if (st == MP_OK) {
            rc = init_rank(m, 0, mpi->size, id, mpi->rank);
            m->ncomms = 1;
        }
    }
    if (st != MP_OK) {
        abort_all(c, "set-up failed");
        n_destroy(c);
        return st;
    }
    if (rc != 0 && rc != NCCL_IN_PROGRESS)
        st = nccl_failed(c, 0, "communicator set-up", "ncclCommInitRankConfig", rc);
    /* the set-up finishes when every rank has joined: bounded like any call */
    double deadline = now_s() + timeout_s;
    for (int k = 0; k < m->ncomms && st == MP_OK; k++)
        st = wait_done(c, k, "communicator set-up", deadline, 0);
    if (st != MP_OK) {
        n_destroy(c); /* aborted by the failure: nothing left to destroy */
        return st;
    }
    *out = c;
    return MP_OK;
}

int mp_comm_nccl_device(const mp_comm *c, int rank) {
    if (!c || c->be != &nccl_backend)
        return -1;
    const nccl_impl *m = c->impl;
    int k = m->ncomms > 1 ? rank : 0;
    return k >= 0 && k < m->ncomms ? m->devs[k] : -1;
}
