/* graph_profile.c — opt-in per-op timing of traced-graph replays (env MIXPREC_PROFILE=1 or
 * _core.graph_profile(True)): wall and process-CPU time summed per (op, dtype, output shape).
 * It only measures around the replay loop's calls; it must not change what runs, and costs
 * nothing but one flag test per node while off. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph.h"

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

int mp_graph_profile_on(void) {
    int on = __atomic_load_n(&prof_on, __ATOMIC_RELAXED);
    if (on < 0) {
        const char *e = getenv("MIXPREC_PROFILE");
        on = e && *e && strcmp(e, "0") != 0;
        __atomic_store_n(&prof_on, on, __ATOMIC_RELAXED);
    }
    return on;
}

int mp_graph_profile_set(int on) {
    int prev = mp_graph_profile_on();
    __atomic_store_n(&prof_on, on != 0, __ATOMIC_RELAXED);
    return prev;
}

static double now(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void mp_graph_profile_start(mp_graph_prof_mark *m) {
    m->wall = now(CLOCK_MONOTONIC);
    m->cpu = now(CLOCK_PROCESS_CPUTIME_ID);
}

void mp_graph_profile_stop(const mp_graph_prof_mark *m, const char *name, const mp_tensor *out) {
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

int mp_graph_profile_rows(void) { return n_rows; }

int mp_graph_profile_row(int i, const char **name, int *dtype, int *ndim, const int64_t **shape, int64_t *count,
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

void mp_graph_profile_reset(void) {
    pthread_mutex_lock(&prof_lock);
    n_rows = 0;
    pthread_mutex_unlock(&prof_lock);
}
