/* graph_profile.c — opt-in timings of traced-graph replays, two views: per node of one
 * graph (Graph.profile / profile_stats: each node's fastest and summed wall time and whole
 * replays, to see where one step's time goes) and per op across every replay (env
 * MIXPREC_PROFILE=1 or _core.graph_profile(True): wall and process-CPU time summed per
 * (op, dtype, output shape), to compare with another framework's op breakdown). Both must
 * not change what a replay runs; off, a replay reads no clock. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph.h"

/* ------------------------------------------------------------ per op, across replays */
#define PROF_MAX 1024

typedef struct {
    char name[48];
    int dtype, ndim;
    int64_t shape[MP_MAX_DIMS];
    int64_t count;
    double wall, cpu;
} prof_row;

static prof_row rows[PROF_MAX];
static int n_rows;
static int prof_on = -1; /* -1: not read from the environment yet */
static pthread_mutex_t prof_lock = PTHREAD_MUTEX_INITIALIZER;

int mp_graph_opprof_on(void) {
    int on = __atomic_load_n(&prof_on, __ATOMIC_RELAXED);
    if (on < 0) {
        const char *e = getenv("MIXPREC_PROFILE");
        on = e && *e && strcmp(e, "0") != 0;
        __atomic_store_n(&prof_on, on, __ATOMIC_RELAXED);
    }
    return on;
}

int mp_graph_opprof_set(int on) {
    int prev = mp_graph_opprof_on();
    __atomic_store_n(&prof_on, on != 0, __ATOMIC_RELAXED);
    return prev;
}

static double now(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void mp_graph_opprof_start(mp_graph_opprof_mark *m) {
    m->wall = now(CLOCK_MONOTONIC);
    m->cpu = now(CLOCK_PROCESS_CPUTIME_ID);
}

void mp_graph_opprof_stop(const mp_graph_opprof_mark *m, const char *name, const mp_tensor *out) {
    double cpu = now(CLOCK_PROCESS_CPUTIME_ID) - m->cpu, wall = now(CLOCK_MONOTONIC) - m->wall;
    int dt = out ? (int)out->dtype : -1, nd = out ? out->ndim : 0;
    pthread_mutex_lock(&prof_lock);
    prof_row *r = NULL;
    for (int i = 0; i < n_rows && !r; i++)
        if (rows[i].dtype == dt && rows[i].ndim == nd && strncmp(rows[i].name, name, sizeof rows[i].name - 1) == 0 &&
            (nd == 0 || memcmp(rows[i].shape, out->shape, (size_t)nd * sizeof(int64_t)) == 0))
            r = &rows[i];
    if (!r && n_rows < PROF_MAX) {
        r = &rows[n_rows++];
        memset(r, 0, sizeof *r);
        snprintf(r->name, sizeof r->name, "%s", name);
        r->dtype = dt;
        r->ndim = nd;
        if (nd)
            memcpy(r->shape, out->shape, (size_t)nd * sizeof(int64_t));
    }
    if (r) {
        r->count++;
        r->wall += wall;
        r->cpu += cpu;
    }
    pthread_mutex_unlock(&prof_lock);
}

int mp_graph_opprof_rows(void) { return n_rows; }

int mp_graph_opprof_row(int i, const char **name, int *dtype, int *ndim, const int64_t **shape, int64_t *count,
                         double *wall, double *cpu) {
    if (i < 0 || i >= n_rows)
        return 0;
    *name = rows[i].name;
    *dtype = rows[i].dtype;
    *ndim = rows[i].ndim;
    *shape = rows[i].shape;
    *count = rows[i].count;
    *wall = rows[i].wall;
    *cpu = rows[i].cpu;
    return 1;
}

void mp_graph_opprof_reset(void) {
    pthread_mutex_lock(&prof_lock);
    n_rows = 0;
    pthread_mutex_unlock(&prof_lock);
}

/* ------------------------------------------------------------ per node, one graph */

uint64_t mp_gprof_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void prof_free(mp_gprof *p) {
    if (p) {
        free(p->node);
        free(p);
    }
}

mp_status mp_graph_profile_set(mp_graph *g, int on) {
    prof_free(g->prof);
    g->prof = NULL;
    if (!on)
        return MP_OK;
    mp_gprof *p = calloc(1, sizeof *p);
    int n = g->n_nodes ? g->n_nodes : 1;
    if (p)
        p->node = calloc((size_t)n, sizeof *p->node);
    if (!p || !p->node) {
        prof_free(p);
        return mp_error_set(MP_ERR_MEMORY, "out of host memory for a graph profile of %d nodes", n);
    }
    p->n = g->n_nodes;
    p->replay_min_ns = UINT64_MAX;
    for (int i = 0; i < n; i++)
        p->node[i].min_ns = UINT64_MAX;
    g->prof = p;
    return MP_OK;
}

void mp_graph_profile_free(mp_graph *g) {
    prof_free(g->prof);
    g->prof = NULL;
}

void mp_gprof_tick(mp_gprof *p, int i, uint64_t t0, uint64_t t1) {
    if (i < 0 || i >= p->n)
        return;
    uint64_t d = t1 - t0;
    p->node[i].sum_ns += d;
    p->node[i].count++;
    if (d < p->node[i].min_ns)
        p->node[i].min_ns = d;
}

void mp_gprof_replay(mp_gprof *p, uint64_t t0, uint64_t t1) {
    uint64_t d = t1 - t0;
    p->replays++;
    p->replay_sum_ns += d;
    if (d < p->replay_min_ns)
        p->replay_min_ns = d;
}
