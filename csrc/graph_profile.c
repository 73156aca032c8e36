/* graph_profile.c — opt-in timings of a graph's replays, per node (wall clock: each node's
 * fastest and summed time, and whole replays), to find where a traced step's time goes.
 * Off by default: a replay then reads no clock. It must not change what a replay runs,
 * nor allocate inside the replay loop (the table is made when profiling is switched on). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph.h"

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
