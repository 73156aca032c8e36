/* parallel.c — a small persistent thread pool for host kernels (mp_parallel_for).
 * Workers sleep on a condition variable between jobs (no spinning, so they do not fight
 * OpenBLAS's own threads). One job at a time: a caller that finds the pool busy runs its
 * range serially. After fork() the child starts with no workers and re-creates them.
 * NOTE: the caller waits only for workers that joined its job before it finished its own
 * share: chunks are claimed from a shared counter, so a caller whose workers were not
 * scheduled in time (other processes on the cores) runs the whole range itself and
 * returns, instead of sleeping until every worker has woken (docs/architecture.md). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

#include "mixprec.h"

#define MP_MAX_THREADS 64

static struct {
    pthread_mutex_t mu;
    pthread_cond_t work_cv, done_cv;
    pthread_t threads[MP_MAX_THREADS];
    int nworkers;         /* running workers (threads - 1) */
    int want_threads;     /* desired total including the caller; 0 = unset */
    int busy;             /* a job is in flight */
    uint64_t generation;  /* bumped per job */
    int joined;           /* workers inside the current job (it waits for them) */
    int closed;           /* the caller finished its share: no worker joins any more */
    int slots;            /* workers that may still join the current job */
    /* current job */
    mp_range_fn fn;
    void *ctx;
    int64_t n, chunk;
    int64_t next;         /* atomic: next chunk start */
    int stop;
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER};

/* MIXPREC_POOL_SPIN_US (default 0: off): how long a worker that finished a job polls for
 * the next before sleeping, and how long a caller polls for the workers that joined its job
 * before sleeping until they finish. Back-to-back small jobs (a traced small-batch step's
 * products and optimizer pass, 4-60 us each) then skip the futex wake-ups; each costs at
 * most that much CPU per job when no job follows. */
static int64_t spin_ns = -1;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t spin_limit(void) {
    int64_t v = __atomic_load_n(&spin_ns, __ATOMIC_RELAXED);
    if (v < 0) {
        const char *env = getenv("MIXPREC_POOL_SPIN_US");
        long us = env ? atol(env) : 0;
        v = us > 0 ? (int64_t)(us < 100000 ? us : 100000) * 1000 : 0;
        __atomic_store_n(&spin_ns, v, __ATOMIC_RELAXED);
    }
    return v;
}

int mp_pool_spin_us(int us) {
    int prev = (int)(spin_limit() / 1000);
    if (us >= 0)
        __atomic_store_n(&spin_ns, (int64_t)(us < 100000 ? us : 100000) * 1000, __ATOMIC_RELAXED);
    return prev;
}

static void run_chunks(void) {
    for (;;) {
        int64_t b = __atomic_fetch_add(&pool.next, pool.chunk, __ATOMIC_RELAXED);
        if (b >= pool.n)
            return;
        int64_t e = b + pool.chunk < pool.n ? b + pool.chunk : pool.n;
        pool.fn(pool.ctx, b, e);
    }
}

static void *worker_main(void *arg) {
    /* NOTE: `seen` starts at the generation current when the worker was created (passed
     * in by ensure_workers under the lock), not the one it finds once it runs: the job
     * that created it has bumped the generation by then, and reading it here would make
     * the worker skip that job while the caller waits for it forever. */
    uint64_t seen = (uint64_t)(uintptr_t)arg;
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        int64_t spin = spin_limit();
        if (spin > 0 && !pool.stop && pool.generation == seen) { /* poll before sleeping */
            pthread_mutex_unlock(&pool.mu);
            int64_t t0 = now_ns();
            for (int k = 1; __atomic_load_n(&pool.generation, __ATOMIC_ACQUIRE) == seen &&
                            !__atomic_load_n(&pool.stop, __ATOMIC_RELAXED);
                 k++) {
                CPU_RELAX();
                if ((k & 63) == 0 && now_ns() - t0 > spin)
                    break;
            }
            pthread_mutex_lock(&pool.mu);
        }
        while (!pool.stop && pool.generation == seen)
            pthread_cond_wait(&pool.work_cv, &pool.mu);
        if (pool.stop)
            break;
        seen = pool.generation;
        /* a job whose caller already finished is not touched (its context may be gone);
         * after set_num_threads shrank the pool, the surplus workers sit the job out */
        if (pool.closed || pool.slots <= 0)
            continue;
        pool.slots--;
        pool.joined++;
        pthread_mutex_unlock(&pool.mu);
        run_chunks();
        pthread_mutex_lock(&pool.mu);
        if (--pool.joined == 0 && pool.closed)
            pthread_cond_signal(&pool.done_cv);
    }
    pthread_mutex_unlock(&pool.mu);
    return NULL;
}

static void after_fork_child(void) {
    /* The workers did not survive the fork; forget them and reset the locks. */
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.work_cv, NULL);
    pthread_cond_init(&pool.done_cv, NULL);
    pool.nworkers = 0;
    pool.busy = 0;
    pool.joined = 0;
    pool.closed = 0;
}

static int default_threads(void) {
    const char *env = getenv("MIXPREC_NUM_THREADS");
    if (env && atoi(env) > 0)
        return atoi(env);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

int mp_num_threads(void) {
    if (pool.want_threads <= 0)
        pool.want_threads = default_threads();
    return pool.want_threads;
}

void mp_set_num_threads(int n) {
    if (n < 1)
        n = 1;
    if (n > MP_MAX_THREADS)
        n = MP_MAX_THREADS;
    pool.want_threads = n;
}

/* Called with the lock held: start workers up to want-1. */
static void ensure_workers(void) {
    static int atfork_done;
    if (!atfork_done) {
        pthread_atfork(NULL, NULL, after_fork_child);
        atfork_done = 1;
    }
    int want = mp_num_threads() - 1;
    while (pool.nworkers < want) {
        if (pthread_create(&pool.threads[pool.nworkers], NULL, worker_main, (void *)(uintptr_t)pool.generation) != 0)
            break; /* run with fewer threads */
        pthread_detach(pool.threads[pool.nworkers]);
        pool.nworkers++;
    }
}

void mp_parallel_for(int64_t n, int64_t grain, mp_range_fn fn, void *ctx) {
    if (n <= 0)
        return;
    if (grain < 1)
        grain = 1;
    int threads = mp_num_threads();
    if (threads <= 1 || n < 2 * grain) {
        fn(ctx, 0, n);
        return;
    }
    pthread_mutex_lock(&pool.mu);
    if (pool.busy) {
        pthread_mutex_unlock(&pool.mu);
        fn(ctx, 0, n);
        return;
    }
    ensure_workers();
    int workers = pool.nworkers < threads - 1 ? pool.nworkers : threads - 1;
    if (workers == 0) {
        pthread_mutex_unlock(&pool.mu);
        fn(ctx, 0, n);
        return;
    }
    int parts = workers + 1;
    int64_t chunk = (n + parts - 1) / parts;
    if (chunk < grain)
        chunk = grain;
    pool.busy = 1;
    pool.fn = fn;
    pool.ctx = ctx;
    pool.n = n;
    pool.chunk = chunk;
    pool.next = 0;
    pool.slots = workers; /* every worker wakes; at most `workers` of them join */
    pool.joined = 0;
    pool.closed = 0;
    pool.generation++;
    pthread_cond_broadcast(&pool.work_cv);
    pthread_mutex_unlock(&pool.mu);

    run_chunks();

    pthread_mutex_lock(&pool.mu);
    pool.closed = 1;
    int64_t spin = spin_limit();
    if (spin > 0 && pool.joined > 0) { /* the joined workers are running: poll first */
        pthread_mutex_unlock(&pool.mu);
        int64_t t0 = now_ns();
        for (int k = 1; __atomic_load_n(&pool.joined, __ATOMIC_ACQUIRE) > 0; k++) {
            CPU_RELAX();
            if ((k & 63) == 0 && now_ns() - t0 > spin)
                break;
        }
        pthread_mutex_lock(&pool.mu);
    }
    while (pool.joined > 0)
        pthread_cond_wait(&pool.done_cv, &pool.mu);
    pool.busy = 0;
    pthread_mutex_unlock(&pool.mu);
}
