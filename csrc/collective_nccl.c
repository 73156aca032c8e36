/* collective_nccl.c — the NCCL collectives engine: GPU buffers reduced by libnccl.so.2,
 * dlopen'ed at run time (never a build or import dependency). One process driving several
 * GPUs uses ncclCommInitAll over the given device ordinals (one replica thread per GPU,
 * each calling with its rank); several processes use ncclCommInitRank with the unique id
 * broadcast over the MPI engine (as llm.c does). Work is queued on each device's own
 * stream (the backend's `stream` slot), after the kernels that made the buffers: no host
 * wait. Errors are polled with ncclCommGetAsyncError. Must not touch the CUDA runtime
 * itself (the core never links it). Compiled everywhere; not yet run on a GPU. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collective.h"

typedef void *nccl_comm;
typedef struct { char internal[128]; } nccl_id; /* NCCL_UNIQUE_ID_BYTES */
/* ncclDataType_t and ncclRedOp_t values of nccl.h (stable since NCCL 2.0 / 2.10) */
enum { NCCL_F16 = 6, NCCL_F32 = 7, NCCL_F64 = 8, NCCL_BF16 = 9 };
enum { NCCL_SUM = 0, NCCL_MAX = 2, NCCL_AVG = 4 };
enum { NCCL_IN_PROGRESS = 7 }; /* ncclInProgress: not an error */

static struct {
    void *lib;
    int (*GetUniqueId)(nccl_id *);
    int (*CommInitRank)(nccl_comm *, int, nccl_id, int);
    int (*CommInitAll)(nccl_comm *, int, const int *);
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

typedef struct {
    int ncomms;                     /* local communicators: ndev (one process) or 1 */
    nccl_comm comms[NCCL_MAX_LOCAL];
    int devs[NCCL_MAX_LOCAL];       /* CUDA ordinal of each local communicator */
    int aborted;
    int64_t bucket_bytes;           /* a group call covers at most this many bytes */
} nccl_impl;

static mp_status nccl_err(const char *what, int rc) {
    return mp_error_set(MP_ERR_UNAVAILABLE, "NCCL %s failed: %s (%d)", what,
                        nc.GetErrorString ? nc.GetErrorString(rc) : "?", rc);
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

static mp_status check(mp_comm *c, int rank) {
    nccl_impl *m = c->impl;
    /* one process driving its GPUs (c->rank < 0): ranks 0..ncomms-1, one GPU included */
    if (c->rank < 0 ? (rank < 0 || rank >= m->ncomms) : rank != c->rank)
        return mp_error_set(MP_ERR_VALUE, "NCCL collective: rank %d does not belong to this "
                            "process", rank);
    if (__atomic_load_n(&m->aborted, __ATOMIC_ACQUIRE))
        return mp_error_set(MP_ERR_UNAVAILABLE, "NCCL collective: the communicator was aborted "
                            "(a replica failed); a new one is made for the next run");
    int async = 0;
    int rc = nc.CommGetAsyncError(m->comms[local_index(c, rank)], &async);
    if (rc == 0 && async != 0 && async != NCCL_IN_PROGRESS)
        return nccl_err("(an earlier asynchronous collective)", async);
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
 * per bucket: NCCL fuses a group's operations into one launch. */
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
    mp_status st = MP_OK;
    for (int b = 0; b < nb && st == MP_OK; b++) {
        int rc = nc.GroupStart();
        for (int i = starts[b]; rc == 0 && i < starts[b + 1]; i++)
            if (counts[i] > 0)
                rc = fn(in[i], out[i], (size_t)counts[i], nccl_type(dt), arg, m->comms[k], stream);
        int rc2 = nc.GroupEnd();
        if (rc == 0 && rc2 != NCCL_IN_PROGRESS)
            rc = rc2;
        if (rc)
            st = nccl_err(what, rc);
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
    (void)why;
    (void)rank;
    nccl_impl *m = c->impl;
    if (__atomic_exchange_n(&m->aborted, 1, __ATOMIC_ACQ_REL))
        return;
    for (int k = 0; k < m->ncomms; k++)
        nc.CommAbort(m->comms[k]);
}

static void n_destroy(mp_comm *c) {
    nccl_impl *m = c->impl;
    if (m && !m->aborted)
        for (int i = 0; i < m->ncomms; i++)
            nc.CommDestroy(m->comms[i]);
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
            return mp_error_set(MP_ERR_NOT_IMPLEMENTED, "NCCL: %s has no %s (NCCL >= 2.10 "  \
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
    NLOAD(GetUniqueId, "ncclGetUniqueId");
    NLOAD(CommInitRank, "ncclCommInitRank");
    NLOAD(CommInitAll, "ncclCommInitAll");
    NLOAD(AllReduce, "ncclAllReduce");
    NLOAD(Broadcast, "ncclBroadcast");
    NLOAD(GroupStart, "ncclGroupStart");
    NLOAD(GroupEnd, "ncclGroupEnd");
    NLOAD(CommDestroy, "ncclCommDestroy");
    NLOAD(CommAbort, "ncclCommAbort");
    NLOAD(CommGetAsyncError, "ncclCommGetAsyncError");
    NLOAD(GetErrorString, "ncclGetErrorString");
    nc.lib = lib;
    return MP_OK;
}

mp_status mp_nccl_load(const char *library) {
    pthread_mutex_lock(&load_mu);
    mp_status st = load_locked(library);
    pthread_mutex_unlock(&load_mu);
    return st;
}

mp_status mp_comm_nccl_new(const char *library, int ndev, const int *devices, mp_comm *mpi,
                           double timeout_s, int64_t bucket_bytes, mp_comm **out) {
    if (mpi ? ndev != 1 : (ndev < 1 || ndev > NCCL_MAX_LOCAL))
        return mp_error_set(MP_ERR_VALUE, "NCCL: %d local GPUs (%s supported)", ndev,
                            mpi ? "one per process with MPI: 1" : "1..64");
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
    c->be = &nccl_backend;
    c->impl = m;
    c->timeout_s = timeout_s;
    m->bucket_bytes = bucket_bytes > 0 ? bucket_bytes : MP_COLL_BUCKET_BYTES;
    memcpy(m->devs, devices, (size_t)ndev * sizeof *devices);
    int rc;
    if (!mpi) { /* one process, ndev GPUs: replica r drives communicator r on devices[r] */
        rc = nc.CommInitAll(m->comms, ndev, devices);
        c->size = ndev;
        c->rank = -1;
        m->ncomms = rc ? 0 : ndev;
    } else { /* one GPU per process; the id travels over MPI */
        void *stream = NULL;
        m->ncomms = 0;
        mp_status st = device_stream(m, 0, &stream); /* makes devices[0] current for the init */
        if (st != MP_OK) {
            n_destroy(c);
            return st;
        }
        nccl_id id;
        memset(&id, 0, sizeof id);
        if (mpi->rank == 0 && (rc = nc.GetUniqueId(&id)) != 0) {
            n_destroy(c);
            return nccl_err("ncclGetUniqueId", rc);
        }
        const void *in[1] = {&id};
        void *outp[1] = {&id};
        int64_t count[1] = {(int64_t)(sizeof id / sizeof(float))}; /* moved as bytes by MPI */
        st = MP_COLL_CALL(mpi, broadcast, mpi->rank, 0, MP_F32, 1, in, outp, count);
        if (st != MP_OK) {
            n_destroy(c);
            return st;
        }
        rc = nc.CommInitRank(&m->comms[0], mpi->size, id, mpi->rank);
        c->size = mpi->size;
        c->rank = mpi->rank;
        m->ncomms = rc ? 0 : 1;
    }
    if (rc) {
        n_destroy(c);
        return nccl_err("communicator set-up", rc);
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
