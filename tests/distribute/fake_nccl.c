/* fake_nccl.c — a TEST DOUBLE of libnccl.so.2 for the logic of mixprec's NCCL engine
 * (csrc/collective_nccl.c) on machines without a GPU: the NCCL functions the engine calls,
 * with NCCL's ABI, over host memory (the emulated GPU's "device" buffers) shared by the
 * ranks of a communicator — processes or threads — through a file every rank maps (the
 * unique id is its path). It is NOT NCCL: no GPU, no streams, no kernels, the reductions run
 * on the host in rank order; it proves nothing about a real NCCL on a real GPU (those checks
 * are in docs/cuda.md's first-GPU-run checklist). Compiled by the tests with the system cc.
 *
 * Like NCCL it never invents errors: a peer that died or never arrives leaves a blocking
 * call spinning forever and a non-blocking communicator in ncclInProgress forever. Only
 * with FAKE_NCCL_REMOTE_ERROR=1 does it report ncclRemoteError for a peer whose process is
 * gone, as NCCL's network transports report a closed connection. FAKE_NCCL_VERSION sets
 * what ncclGetVersion says (default 2.27.3). Stricter than NCCL where NCCL's documented
 * rules would otherwise go unchecked: a call on a non-blocking communicator whose last call
 * said ncclInProgress, before ncclCommGetAsyncError said it is done, fails with
 * ncclInvalidUsage (NCCL documents it as not allowed). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { OK = 0, SYSTEM_ERROR = 2, INVALID_ARGUMENT = 4, INVALID_USAGE = 5, REMOTE_ERROR = 6, IN_PROGRESS = 7 };
enum { T_F16 = 6, T_F32 = 7, T_F64 = 8, T_BF16 = 9 };
enum { OP_SUM = 0, OP_MAX = 2, OP_AVG = 4 };
enum { K_ALL_REDUCE, K_BROADCAST };

typedef struct { char internal[128]; } fake_id;

typedef struct {
    size_t size;
    unsigned int magic, version;
    int blocking;
} config_head; /* the start of ncclConfig_t (2.14 and later) */

#define MAX_RANKS 64
#define SLOT_BYTES ((size_t)1 << 20) /* one round moves at most this much per rank */

typedef struct {
    int64_t pid;
    uint64_t posted; /* last round whose data this rank put in its slot */
    uint64_t done;   /* last round this rank finished reading */
    char pad[40];
} rank_state;

typedef struct {
    int nranks;
    int joined;
    rank_state r[MAX_RANKS];
} shared_head;

typedef struct {
    int kind, type, arg;
    const char *in;
    char *out;
    size_t bytes, off;
    int posted;
} fake_op;

typedef struct {
    char path[128];
    shared_head *h;
    char *slots;
    size_t map_bytes;
    int nranks, rank, blocking, joining, unlinked;
    int must_poll; /* a call said ncclInProgress: only ncclCommGetAsyncError until it is done */
    uint64_t seq;
    fake_op *q;
    int nq, capq;
} fake_comm;

static __thread int group_depth;
static __thread fake_comm *group_comms[MAX_RANKS];
static __thread int group_n;

/* ------------------------------------------------------------------ numbers */

static float h2f(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, x;
    float f;
    if (exp == 0) {
        f = (float)mant * 5.9604644775390625e-8f; /* 2^-24 */
        return sign ? -f : f;
    }
    x = exp == 31 ? sign | 0x7f800000u | (mant << 13) : sign | ((exp - 15 + 127) << 23) | (mant << 13);
    memcpy(&f, &x, 4);
    return f;
}

static uint16_t f2h(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, mant = x & 0x7fffff;
    int exp = (int)((x >> 23) & 0xff);
    if (exp == 255)
        return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
    int e = exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00);
    if (e <= 0) {
        if (e < -10)
            return (uint16_t)sign;
        mant |= 0x800000;
        int shift = 14 - e;
        uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
        h++;
    return (uint16_t)(sign | h);
}

static float b2f(uint16_t b) {
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static uint16_t f2b(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000)
        return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

static size_t type_size(int t) {
    return t == T_F64 ? 8 : t == T_F32 ? 4 : 2;
}

/* out[0:n] = op over the ranks' slots, in rank order; 16-bit in float, rounded once. */
static void reduce_chunk(fake_comm *c, int type, int op, size_t off_bytes, size_t n, char *out) {
    for (size_t i = 0; i < n; i++) {
        double acc = 0;
        for (int r = 0; r < c->nranks; r++) {
            const char *p = c->slots + (size_t)r * SLOT_BYTES + i * type_size(type);
            double v;
            if (type == T_F64) {
                memcpy(&v, p, 8);
            } else if (type == T_F32) {
                float f;
                memcpy(&f, p, 4);
                v = f;
            } else {
                uint16_t u;
                memcpy(&u, p, 2);
                v = type == T_F16 ? h2f(u) : b2f(u);
            }
            if (r == 0)
                acc = v;
            else if (op == OP_MAX)
                acc = (v > acc || v != v) ? v : acc;
            else if (type == T_F64)
                acc += v;
            else
                acc = (float)((float)acc + (float)v);
        }
        if (op == OP_AVG)
            acc = type == T_F64 ? acc / c->nranks : (float)((float)acc / (float)c->nranks);
        char *q = out + i * type_size(type);
        if (type == T_F64) {
            memcpy(q, &acc, 8);
        } else if (type == T_F32) {
            float f = (float)acc;
            memcpy(q, &f, 4);
        } else {
            uint16_t u = type == T_F16 ? f2h((float)acc) : f2b((float)acc);
            memcpy(q, &u, 2);
        }
    }
    (void)off_bytes;
}

/* ------------------------------------------------------------------ progress */

/* Gone, or a zombie its launcher has not reaped yet (mpiexec -disable-auto-cleanup). */
static int pid_gone(int64_t pid) {
    if (pid <= 0)
        return 0;
    if (kill((pid_t)pid, 0) != 0)
        return errno == ESRCH;
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *close_paren = strrchr(buf, ')');
    return close_paren && close_paren[1] == ' ' && (close_paren[2] == 'Z' || close_paren[2] == 'X');
}

static int peers_error(fake_comm *c) {
    static int checked = -1;
    if (checked < 0) {
        const char *e = getenv("FAKE_NCCL_REMOTE_ERROR");
        checked = e && strcmp(e, "1") == 0;
    }
    if (!checked)
        return OK;
    for (int r = 0; r < c->nranks; r++)
        if (r != c->rank && pid_gone(__atomic_load_n(&c->h->r[r].pid, __ATOMIC_ACQUIRE)))
            return REMOTE_ERROR;
    return OK;
}

/* Moves the communicator's queued work as far as the peers allow: OK when none is left,
 * IN_PROGRESS while some waits for a peer (forever, if the peer is gone). */
static int progress(fake_comm *c) {
    shared_head *h = c->h;
    if (c->joining) {
        if (__atomic_load_n(&h->joined, __ATOMIC_ACQUIRE) < c->nranks)
            return peers_error(c) ? REMOTE_ERROR : IN_PROGRESS;
        c->joining = 0;
        if (c->rank == 0 && !c->unlinked) { /* everyone has it mapped: the name can go */
            unlink(c->path);
            c->unlinked = 1;
        }
    }
    while (c->nq > 0) {
        fake_op *op = &c->q[0];
        size_t es = type_size(op->type);
        size_t chunk = op->bytes - op->off < SLOT_BYTES / es * es ? op->bytes - op->off : SLOT_BYTES / es * es;
        uint64_t s = c->seq + 1;
        if (!op->posted) {
            for (int r = 0; r < c->nranks; r++)
                if (__atomic_load_n(&h->r[r].done, __ATOMIC_ACQUIRE) < s - 1)
                    return peers_error(c) ? REMOTE_ERROR : IN_PROGRESS;
            char *mine = c->slots + (size_t)c->rank * SLOT_BYTES;
            if (op->kind == K_ALL_REDUCE || c->rank == op->arg)
                memcpy(mine, op->in + op->off, chunk);
            __atomic_store_n(&h->r[c->rank].posted, s, __ATOMIC_RELEASE);
            op->posted = 1;
        }
        for (int r = 0; r < c->nranks; r++)
            if (__atomic_load_n(&h->r[r].posted, __ATOMIC_ACQUIRE) < s)
                return peers_error(c) ? REMOTE_ERROR : IN_PROGRESS;
        if (op->kind == K_ALL_REDUCE)
            reduce_chunk(c, op->type, op->arg, op->off, chunk / es, op->out + op->off);
        else
            memcpy(op->out + op->off, c->slots + (size_t)op->arg * SLOT_BYTES, chunk);
        __atomic_store_n(&h->r[c->rank].done, s, __ATOMIC_RELEASE);
        c->seq = s;
        op->posted = 0;
        op->off += chunk;
        if (op->off >= op->bytes) {
            memmove(c->q, c->q + 1, (size_t)(c->nq - 1) * sizeof *c->q);
            c->nq--;
        }
    }
    return OK;
}

/* A blocking communicator's call returns when its work is done (never, if a peer is gone:
 * as NCCL); a non-blocking one's says ncclInProgress until ncclCommGetAsyncError says done. */
static int finish(fake_comm *c) {
    int rc = progress(c);
    if (!c->blocking) {
        c->must_poll = rc == IN_PROGRESS;
        return rc;
    }
    struct timespec ts = {0, 100000};
    while (rc == IN_PROGRESS) {
        nanosleep(&ts, NULL);
        rc = progress(c);
    }
    return rc;
}

static void group_add(fake_comm *c) {
    for (int i = 0; i < group_n; i++)
        if (group_comms[i] == c)
            return;
    if (group_n < MAX_RANKS)
        group_comms[group_n++] = c;
}

/* ------------------------------------------------------------------ the ABI */

int ncclGetVersion(int *version) {
    const char *v = getenv("FAKE_NCCL_VERSION");
    *version = v ? atoi(v) : 22703;
    return OK;
}

const char *ncclGetErrorString(int rc) {
    switch (rc) {
    case OK: return "no error";
    case SYSTEM_ERROR: return "unhandled system error (fake NCCL)";
    case INVALID_ARGUMENT: return "invalid argument (fake NCCL)";
    case INVALID_USAGE: return "invalid usage (fake NCCL)";
    case REMOTE_ERROR: return "remote process exited or there was a network error (fake NCCL)";
    case IN_PROGRESS: return "NCCL operation in progress";
    default: return "unknown result code (fake NCCL)";
    }
}

int ncclGetUniqueId(fake_id *id) {
    static int counter;
    const char *dir = getenv("MIXPREC_FAKE_NCCL_DIR");
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    memset(id, 0, sizeof *id);
    int n = snprintf(id->internal, sizeof id->internal, "%s/fake-nccl-%d-%d-%lx", dir ? dir : "/tmp",
                     (int)getpid(), __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED),
                     (unsigned long)ts.tv_nsec);
    return n > 0 && n < (int)sizeof id->internal ? OK : SYSTEM_ERROR;
}

int ncclCommInitRankConfig(fake_comm **out, int nranks, fake_id id, int rank, const config_head *cfg) {
    *out = NULL;
    if (nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks || !id.internal[0])
        return INVALID_ARGUMENT;
    if (cfg && cfg->magic != 0xcafebeef)
        return INVALID_ARGUMENT;
    fake_comm *c = calloc(1, sizeof *c);
    if (!c)
        return SYSTEM_ERROR;
    memcpy(c->path, id.internal, sizeof c->path);
    c->path[sizeof c->path - 1] = 0;
    c->nranks = nranks;
    c->rank = rank;
    /* as NCCL: `blocking` is read from configs of version 2.14 and later only */
    c->blocking = !(cfg && cfg->size >= sizeof *cfg && cfg->version >= 21400 && cfg->blocking == 0);
    c->map_bytes = sizeof(shared_head) + (size_t)nranks * SLOT_BYTES;
    int fd = open(c->path, O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)c->map_bytes) != 0) {
        if (fd >= 0)
            close(fd);
        free(c);
        return SYSTEM_ERROR;
    }
    void *p = mmap(NULL, c->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        free(c);
        return SYSTEM_ERROR;
    }
    c->h = p;
    c->slots = (char *)p + sizeof(shared_head);
    int expected = 0;
    if (!__atomic_compare_exchange_n(&c->h->nranks, &expected, nranks, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE) && expected != nranks) {
        munmap(p, c->map_bytes);
        free(c);
        return INVALID_ARGUMENT;
    }
    __atomic_store_n(&c->h->r[rank].pid, (int64_t)getpid(), __ATOMIC_RELEASE);
    __atomic_add_fetch(&c->h->joined, 1, __ATOMIC_ACQ_REL);
    c->joining = 1;
    *out = c;
    if (group_depth > 0) {
        group_add(c);
        return OK;
    }
    return finish(c);
}

int ncclCommInitRank(fake_comm **out, int nranks, fake_id id, int rank) {
    return ncclCommInitRankConfig(out, nranks, id, rank, NULL);
}

static int enqueue(fake_comm *c, int kind, const void *in, void *out, size_t count, int type, int arg) {
    if (!c || (type != T_F16 && type != T_F32 && type != T_F64 && type != T_BF16))
        return INVALID_ARGUMENT;
    if (c->must_poll || c->joining)
        return INVALID_USAGE; /* the last call is still in progress (or the set-up) */
    if (kind == K_ALL_REDUCE && arg != OP_SUM && arg != OP_MAX && arg != OP_AVG)
        return INVALID_ARGUMENT;
    if (kind == K_BROADCAST && (arg < 0 || arg >= c->nranks))
        return INVALID_ARGUMENT;
    if (c->nq == c->capq) {
        int cap = c->capq ? 2 * c->capq : 16;
        fake_op *q = realloc(c->q, (size_t)cap * sizeof *q);
        if (!q)
            return SYSTEM_ERROR;
        c->q = q;
        c->capq = cap;
    }
    c->q[c->nq++] = (fake_op){kind, type, arg, in, out, count * type_size(type), 0, 0};
    if (group_depth > 0) {
        group_add(c);
        return OK;
    }
    return finish(c);
}

int ncclAllReduce(const void *in, void *out, size_t count, int type, int op, fake_comm *c, void *stream) {
    (void)stream;
    return enqueue(c, K_ALL_REDUCE, in, out, count, type, op);
}

int ncclBroadcast(const void *in, void *out, size_t count, int type, int root, fake_comm *c, void *stream) {
    (void)stream;
    return enqueue(c, K_BROADCAST, in, out, count, type, root);
}

int ncclGroupStart(void) {
    if (group_depth++ == 0)
        group_n = 0;
    return OK;
}

/* The group's work starts; blocking communicators wait for all of it (driven round-robin,
 * so one thread can drive several ranks), non-blocking ones report ncclInProgress. */
int ncclGroupEnd(void) {
    if (group_depth <= 0)
        return INVALID_USAGE;
    if (--group_depth > 0)
        return OK;
    int pending = 0, err = OK;
    struct timespec ts = {0, 100000};
    for (;;) {
        pending = 0;
        int any_blocking = 0;
        for (int i = 0; i < group_n; i++) {
            int rc = progress(group_comms[i]);
            group_comms[i]->must_poll = rc == IN_PROGRESS && !group_comms[i]->blocking;
            if (rc == IN_PROGRESS) {
                pending = 1;
                any_blocking |= group_comms[i]->blocking;
            } else if (rc != OK) {
                err = rc;
            }
        }
        if (err != OK || !pending || !any_blocking)
            break;
        nanosleep(&ts, NULL);
    }
    group_n = 0;
    return err != OK ? err : pending ? IN_PROGRESS : OK;
}

int ncclCommGetAsyncError(fake_comm *c, int *state) {
    if (!c)
        return INVALID_ARGUMENT;
    *state = progress(c);
    if (*state != IN_PROGRESS)
        c->must_poll = 0;
    return OK;
}

static void release(fake_comm *c) {
    if (c->rank == 0 && !c->unlinked)
        unlink(c->path);
    munmap(c->h, c->map_bytes);
    free(c->q);
    free(c);
}

int ncclCommAbort(fake_comm *c) {
    if (c)
        release(c);
    return OK;
}

int ncclCommDestroy(fake_comm *c) {
    if (c)
        release(c);
    return OK;
}
