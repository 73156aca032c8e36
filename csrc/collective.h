/* collective.h — THE collectives table: all-reduce / broadcast / barrier of host (or, for
 * NCCL, device) buffers across replicas, one implementation per engine (in-process threads,
 * MPI between processes, NCCL between GPUs), chosen when a communicator is created.
 * It knows buffers, dtypes and ranks only: never tensors, variables or strategies. */
#ifndef MP_COLLECTIVE_H
#define MP_COLLECTIVE_H

#include "mixprec.h"

typedef enum mp_coll_op { MP_COLL_SUM = 0, MP_COLL_MEAN = 1, MP_COLL_MAX = 2 } mp_coll_op;

typedef struct mp_comm mp_comm;

/* One engine. `rank` names the caller: for the in-process engine each replica thread calls
 * with its own rank; for MPI/NCCL it must equal the communicator's rank.
 * A call works on a bucket of `n` buffers of one dtype (counts[i] elements each), reduced as
 * one fused buffer; in[i] and out[i] may be the same pointer. Every rank must issue the same
 * sequence of calls with the same dtypes and counts (checked where the engine can).
 * 16-bit buffers are summed in float32 and rounded once; float32 in float32, float64 in
 * double, always in rank order 0, 1, ... so every rank gets the same bits. */
typedef struct mp_coll_backend {
    const char *name;
    mp_status (*all_reduce)(mp_comm *c, int rank, mp_dtype dt, mp_coll_op op, int n,
                            const void *const *in, void *const *out, const int64_t *counts);
    mp_status (*broadcast)(mp_comm *c, int rank, int root, mp_dtype dt, int n,
                           const void *const *in, void *const *out, const int64_t *counts);
    mp_status (*barrier)(mp_comm *c, int rank);
    /* Makes every pending and later call on the communicator fail with `why` (a replica
     * that raised: the others must not wait for it). */
    void (*abort)(mp_comm *c, int rank, const char *why);
    void (*destroy)(mp_comm *c);
} mp_coll_backend;

struct mp_comm {
    const mp_coll_backend *be;
    int size;            /* replicas (threads) or processes */
    int rank;            /* this process's rank (MPI/NCCL); -1 for the in-process engine */
    double timeout_s;    /* a call that waits longer fails with MP_ERR_UNAVAILABLE */
    void *impl;
    mp_coll_backend *owned_be; /* a table this communicator owns (mp_comm_drop_slots), or NULL */
};

/* The one funnel for calling an engine's slot (all_reduce, broadcast, barrier):
 * MP_COLL_CALL(c, slot, rank, args...) calls c->be->slot(c, rank, args...), or, when the
 * engine lacks the slot, records MP_ERR_NOT_IMPLEMENTED ("the mpi collectives engine does
 * not implement barrier") and returns it. abort goes through mp_comm_abort, destroy
 * through mp_comm_free: nothing calls a slot directly. */
#define MP_COLL_CALL(c, slot, ...)                                                                \
    ((c)->be && (c)->be->slot ? (c)->be->slot((c), __VA_ARGS__) : mp_coll_missing_slot((c), #slot))
/* Records and returns MP_ERR_NOT_IMPLEMENTED for a slot c's engine lacks. */
mp_status mp_coll_missing_slot(const mp_comm *c, const char *slot);
/* The abort slot through the funnel: MP_ERR_NOT_IMPLEMENTED when the engine has none. */
mp_status mp_comm_abort(mp_comm *c, int rank, const char *why);
/* Test hook: c's engine table is replaced by a copy without the comma-separated slots
 * (all_reduce, broadcast, barrier, abort), owned and freed with c. */
mp_status mp_comm_drop_slots(mp_comm *c, const char *slots);

/* In-process engine: `size` replicas run as threads of this process. */
mp_status mp_comm_threads_new(int size, double timeout_s, mp_comm **out);
/* MPI engine over MPI_COMM_WORLD through the standard ABI library (libmpi_abi.so),
 * dlopen'ed from `library` (a path or soname); initialises MPI once per process. */
mp_status mp_comm_mpi_new(const char *library, double timeout_s, mp_comm **out);
/* Process-wide MPI state for the binding: whether this process started under mpiexec
 * (MPI initialised by mp_comm_mpi_new), and finalisation at exit. */
void mp_comm_mpi_finalize(void);
/* Writes "rank 1 (pid 4242 on host)" for each same-host peer of the MPI communicator `mpi`
 * whose process has ended (comma-separated) into buf; returns how many. 0 (and "") when
 * `mpi` is not an MPI communicator. The NCCL engine names its dead peers with it. */
int mp_comm_mpi_lost_peers(mp_comm *mpi, char *buf, size_t cap);
/* NCCL engine: one communicator per local GPU (`ndev` CUDA ordinals `devices`, one process,
 * one ncclGroup of ncclCommInitRankConfig; replica r calls with rank r), or one rank of a
 * multi-process job whose unique id is broadcast over the MPI communicator `mpi` (ndev ==
 * 1: this process's GPU; ncclCommInitRankConfig). libnccl.so.2 (`library`: a path or
 * soname, NCCL >= 2.14) is dlopen'ed. Communicators are non-blocking: set-up and every call
 * are polled under `timeout_s` (a peer that never arrives or died fails with
 * MP_ERR_UNAVAILABLE, the communicator is aborted). Buffers are device pointers; each call
 * is queued on the GPU's stream (the backend's `stream` slot) in groups of at most
 * `bucket_bytes` (<= 0: MP_COLL_BUCKET_BYTES), then waited for (the `stream_idle` slot). */
mp_status mp_comm_nccl_new(const char *library, int ndev, const int *devices, mp_comm *mpi,
                           double timeout_s, int64_t bucket_bytes, mp_comm **out);
/* Loads libnccl once per process (what mp_comm_nccl_new does first); the error names what
 * to install. */
mp_status mp_nccl_load(const char *library);
/* The CUDA ordinal rank `rank`'s buffers must live on (-1: not an NCCL communicator, or a
 * rank of another process). */
int mp_comm_nccl_device(const mp_comm *c, int rank);

/* Default size of one fused group of buffers (NCCL) — TensorFlow's MirroredStrategy packs
 * gradients into a few buckets too. */
#define MP_COLL_BUCKET_BYTES ((int64_t)32 << 20)
/* Splits buffers 0..n-1 (counts[i] elements of esize bytes) into consecutive buckets of at
 * most max_bytes (a larger buffer is a bucket of its own); bucket b is buffers
 * [starts[b], starts[b+1]). Returns the number of buckets (starts has n + 1 entries). */
int mp_coll_plan_buckets(int n, const int64_t *counts, size_t esize, int64_t max_bytes, int *starts);

/* Frees the communicator (engine state included). NULL is a no-op. */
void mp_comm_free(mp_comm *c);

/* Shared helper of the host engines: out[r-range] = op over ranks of in_k, accumulated in
 * rank order (see above); `ins[k]` is rank k's bucket. Elements [begin, end) of the fused
 * bucket only. */
void mp_coll_reduce_range(mp_dtype dt, mp_coll_op op, int nranks, int n,
                          const void *const *const *ins, void *const *const *outs, int nouts,
                          const int64_t *counts, int64_t begin, int64_t end);
int mp_coll_dtype_ok(mp_dtype dt);

#endif
