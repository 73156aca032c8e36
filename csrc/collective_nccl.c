/* collective_nccl.c — the NCCL collectives engine: GPU buffers reduced by libnccl.so.2,
 * dlopen'ed at run time (never a build or import dependency). One process driving several
 * GPUs uses ncclCommInitAll (one replica thread per GPU); several processes use
 * ncclCommInitRank with the unique id broadcast over the MPI engine (as llm.c does).
 * Calls are asynchronous on the given stream, as NCCL's; errors are polled with
 * ncclCommGetAsyncError. Compiled everywhere, exercised only where GPUs exist. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collective.h"

typedef void *nccl_comm;
typedef struct { char internal[128]; } nccl_id;
enum { NCCL_F16 = 6, NCCL_F32 = 7, NCCL_F64 = 8, NCCL_BF16 = 9 };
enum { NCCL_SUM = 0, NCCL_MAX = 2, NCCL_AVG = 4 };

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

typedef struct {
    int ncomms;       /* local communicators: ndev (single process) or 1 */
    nccl_comm comms[64];
} nccl_impl;

static mp_status nccl_err(const char *what, int rc) {
    return mp_error_set(MP_ERR_UNAVAILABLE, "NCCL %s failed: %s (%d)", what,
                        nc.GetErrorString ? nc.GetErrorString(rc) : "?", rc);
}

static nccl_comm local_comm(mp_comm *c, int rank) {
    nccl_impl *m = c->impl;
    return m->ncomms > 1 ? m->comms[rank] : m->comms[0];
}

static int nccl_type(mp_dtype dt) {
    switch (dt) {
    case MP_F16: return NCCL_F16;
    case MP_BF16: return NCCL_BF16;
    case MP_F64: return NCCL_F64;
    default: return NCCL_F32;
    }
}

static mp_status check(mp_comm *c, int rank) {
    nccl_impl *m = c->impl;
    if (m->ncomms > 1 ? (rank < 0 || rank >= m->ncomms) : rank != c->rank)
        return mp_error_set(MP_ERR_VALUE, "NCCL collective: rank %d does not belong to this "
                            "process", rank);
    int async = 0;
    nccl_comm comm = local_comm(c, rank);
    if (nc.CommGetAsyncError(comm, &async) == 0 && async != 0)
        return nccl_err("(an earlier asynchronous collective)", async);
    return MP_OK;
}

/* NOTE: NCCL reduces 16-bit buffers in their own type (its kernels), not widened; the
 * host engines' float32 rule does not hold bit for bit here. */
static mp_status n_all_reduce(mp_comm *c, int rank, mp_dtype dt, mp_coll_op op, int n,
                              const void *const *in, void *const *out, const int64_t *counts) {
    MP_TRY(check(c, rank));
    int nop = op == MP_COLL_MEAN ? NCCL_AVG : op == MP_COLL_MAX ? NCCL_MAX : NCCL_SUM;
    nc.GroupStart();
    for (int i = 0; i < n; i++) {
        int rc = nc.AllReduce(in[i], out[i], (size_t)counts[i], nccl_type(dt), nop,
                              local_comm(c, rank), NULL);
        if (rc) {
            nc.GroupEnd();
            return nccl_err("all-reduce", rc);
        }
    }
    int rc = nc.GroupEnd();
    return rc ? nccl_err("all-reduce", rc) : MP_OK;
}

static mp_status n_broadcast(mp_comm *c, int rank, int root, mp_dtype dt, int n,
                             const void *const *in, void *const *out, const int64_t *counts) {
    MP_TRY(check(c, rank));
    nc.GroupStart();
    for (int i = 0; i < n; i++) {
        int rc = nc.Broadcast(in[i], out[i], (size_t)counts[i], nccl_type(dt), root,
                              local_comm(c, rank), NULL);
        if (rc) {
            nc.GroupEnd();
            return nccl_err("broadcast", rc);
        }
    }
    int rc = nc.GroupEnd();
    return rc ? nccl_err("broadcast", rc) : MP_OK;
}

static mp_status n_barrier(mp_comm *c, int rank) {
    (void)c;
    (void)rank;
    return mp_error_set(MP_ERR_NOT_IMPLEMENTED, "NCCL has no barrier: use the MPI engine's");
}

static void n_abort(mp_comm *c, int rank, const char *why) {
    (void)why;
    nccl_impl *m = c->impl;
    if (m->ncomms > 0)
        nc.CommAbort(local_comm(c, rank < 0 ? 0 : rank));
}

static void n_destroy(mp_comm *c) {
    nccl_impl *m = c->impl;
    if (m)
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
            return mp_error_set(MP_ERR_NOT_IMPLEMENTED, "NCCL: %s has no %s", library, sym); \
        }                                                                               \
    } while (0)

static mp_status load_nccl(const char *library) {
    if (nc.lib)
        return MP_OK;
    void *lib = dlopen(library, RTLD_NOW | RTLD_GLOBAL);
    if (!lib)
        return mp_error_set(MP_ERR_NOT_IMPLEMENTED, "NCCL: cannot load %s (%s). hint: install "
                            "NCCL (the nvidia-nccl-cu13 wheel or the CUDA toolkit's)", library,
                            dlerror());
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

mp_status mp_comm_nccl_new(const char *library, int ndev, mp_comm *mpi, double timeout_s,
                           mp_comm **out) {
    if (ndev < 1 || ndev > 64)
        return mp_error_set(MP_ERR_VALUE, "NCCL: %d local GPUs (1..64 supported)", ndev);
    MP_TRY(load_nccl(library));
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
    int rc;
    if (!mpi) { /* one process, ndev GPUs */
        int devs[64];
        for (int i = 0; i < ndev; i++)
            devs[i] = i;
        rc = nc.CommInitAll(m->comms, ndev, devs);
        c->size = ndev;
        c->rank = -1;
        m->ncomms = ndev;
    } else { /* one GPU per process; the id travels over MPI */
        nccl_id id;
        memset(&id, 0, sizeof id);
        if (mpi->rank == 0 && (rc = nc.GetUniqueId(&id)) != 0) {
            n_destroy(c);
            return nccl_err("ncclGetUniqueId", rc);
        }
        const void *in[1] = {&id};
        void *outp[1] = {&id};
        int64_t count[1] = {(int64_t)(sizeof id / sizeof(float))};
        mp_status st = MP_COLL_CALL(mpi, broadcast, mpi->rank, 0, MP_F32, 1, in, outp, count);
        if (st != MP_OK) {
            n_destroy(c);
            return st;
        }
        rc = nc.CommInitRank(&m->comms[0], mpi->size, id, mpi->rank);
        c->size = mpi->size;
        c->rank = mpi->rank;
        m->ncomms = 1;
    }
    if (rc) {
        m->ncomms = 0;
        n_destroy(c);
        return nccl_err("communicator set-up", rc);
    }
    *out = c;
    return MP_OK;
}
