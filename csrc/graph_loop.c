/* graph_loop.c — a traced loop replayed in C (graph.h: mp_gloop, MP_GNODE_LOOP).
 * Owns the iteration: the condition sub-graph's verdict, the elements from the source (a
 * tensor's rows or a host callback over a dataset), the body sub-graph's replay and the
 * loop-invariant checks on the loop variables. It must not trace (the Python face traces
 * the body once, src/mixprec/_loops.py) nor compute: the sub-graphs run through
 * mp_graph_run_with like any graph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"

mp_status mp_gloop_new(mp_gloop **out) {
    mp_gloop *l = calloc(1, sizeof *l);
    if (!l)
        return mp_error_set(MP_ERR_MEMORY, "out of host memory allocating a loop");
    l->max_iter = -1;
    *out = l;
    return MP_OK;
}

void mp_gloop_free(mp_gloop *l) {
    if (!l)
        return;
    if (l->results)
        for (int k = 0; k < l->n_carried; k++)
            mp_tensor_decref(l->results[k]);
    free(l->results);
    for (int j = 0; j < l->n_bodies; j++) {
        mp_graph_free(l->bodies[j]);
        if (l->capmaps)
            free(l->capmaps[j]);
    }
    free(l->bodies);
    free(l->capmaps);
    for (int k = 0; k < l->n_known; k++)
        mp_tensor_decref(l->known[k]);
    free(l->known);
    if (l->retrace_free)
        l->retrace_free(l->retrace_ctx);
    mp_graph_free(l->cond);
    if (l->free)
        l->free(l->ctx);
    free(l);
}

static mp_status add_body(mp_gloop *l, mp_graph *body, int32_t *capmap) {
    mp_graph **nb = realloc(l->bodies, (size_t)(l->n_bodies + 1) * sizeof *nb);
    int32_t **nm = nb ? realloc(l->capmaps, (size_t)(l->n_bodies + 1) * sizeof *nm) : NULL;
    if (nb)
        l->bodies = nb;
    if (!nb || !nm) {
        mp_graph_free(body);
        free(capmap);
        return mp_error_set(MP_ERR_MEMORY, "out of host memory adding a loop body");
    }
    l->capmaps = nm;
    l->capmaps[l->n_bodies] = capmap;
    l->bodies[l->n_bodies++] = body;
    return MP_OK;
}

mp_status mp_gloop_add_body(mp_gloop *l, mp_graph *body) {
    return add_body(l, body, NULL);
}

/* A body for an element shape first met at a replay: recorded by `retrace` against the
 * tensors the node's capture inputs stand for; each of its captures must be one of them. */
static mp_status replay_trace(mp_gloop *l, mp_tensor *const *bin, int *j) {
    const int ne = l->n_elems, nc = l->n_carried;
    mp_graph *g = NULL;
    MP_TRY(l->retrace(l->retrace_ctx, ne, bin, nc, bin + ne, l->n_known, l->known, &g));
    int32_t *map = calloc((size_t)g->n_captured + 1, sizeof *map);
    if (!map) {
        mp_graph_free(g);
        return mp_error_set(MP_ERR_MEMORY, "out of host memory adding a loop body");
    }
    for (int k = 0; k < g->n_captured; k++) {
        map[k] = -1;
        for (int i = 0; i < l->n_known && map[k] < 0; i++)
            if (l->known[i] == g->captured[k])
                map[k] = i;
        if (map[k] < 0) {
            free(map);
            mp_graph_free(g);
            return mp_error_set(MP_ERR_VALUE,
                                "a loop's body, traced for an element shape first seen at a call, reads "
                                "a value of the function that its first trace did not; call the function with a new "
                                "dataset object (a new trace)");
        }
    }
    for (int k = 0; k < l->n_bodies; k++)
        if (mp_graph_same_structure(g, l->bodies[k]))
            g->polymorphic = l->bodies[k]->polymorphic = 1;
    MP_TRY(add_body(l, g, map));
    *j = l->n_bodies - 1;
    return MP_OK;
}

int mp_gloop_n_inputs(const mp_gloop *l) {
    int n = l->n_carried + l->n_src + (l->cond ? l->cond->n_captured : 0);
    for (int j = 0; j < l->n_bodies; j++)
        n += l->capmaps && l->capmaps[j] ? 0 : l->bodies[j]->n_captured;
    return n;
}

/* The body traced for these elements' shapes (-1: none). */
static int body_for(const mp_gloop *l, mp_tensor *const *elems) {
    for (int j = 0; j < l->n_bodies; j++) {
        const mp_graph *b = l->bodies[j];
        int ok = b->n_inputs >= l->n_elems;
        for (int k = 0; ok && k < l->n_elems; k++) {
            const mp_gnode *n = &b->nodes[b->inputs[k]];
            ok = n->dtype == elems[k]->dtype && n->ndim == elems[k]->ndim;
            for (int d = 0; ok && d < n->ndim; d++)
                ok = n->shape[d] == elems[k]->shape[d];
        }
        if (ok)
            return j;
    }
    /* a shape not traced: a body that two element shapes traced alike takes any shape of
     * the same dtypes and ranks (mp_graph_same_structure: no shape baked in) */
    for (int j = 0; j < l->n_bodies; j++) {
        const mp_graph *b = l->bodies[j];
        int ok = b->polymorphic && b->n_inputs >= l->n_elems;
        for (int k = 0; ok && k < l->n_elems; k++) {
            const mp_gnode *n = &b->nodes[b->inputs[k]];
            ok = n->dtype == elems[k]->dtype && n->ndim == elems[k]->ndim;
        }
        if (ok)
            return j;
    }
    return -1;
}

static void shape_text(const mp_tensor *t, char *buf, size_t cap) {
    size_t used = (size_t)snprintf(buf, cap, "%s[", mp_dtype_name(t->dtype));
    for (int d = 0; d < t->ndim && used < cap; d++)
        used += (size_t)snprintf(buf + used, cap - used, d ? ",%lld" : "%lld", (long long)t->shape[d]);
    if (used < cap)
        snprintf(buf + used, cap - used, "]");
}

static mp_status read_pred(mp_tensor *p, int *out) {
    if (p->dtype != MP_BOOL || p->numel != 1)
        return mp_error_set(MP_ERR_TYPE,
                            "a loop's condition must be a boolean scalar, got a %s tensor with %lld elements",
                            mp_dtype_name(p->dtype), (long long)p->numel);
    mp_tensor *h = p;
    mp_device cpu = {MP_DEV_CPU, 0};
    if (mp_tensor_device(p).type != MP_DEV_CPU)
        MP_TRY(mp_copy_to_device(p, cpu, &h));
    *out = *(const unsigned char *)mp_tensor_data(h) != 0;
    if (h != p)
        mp_tensor_decref(h);
    return MP_OK;
}

/* Row `it` of x as a view (the element of iterating a tensor), or *done. */
static mp_status row(mp_tensor *x, int64_t it, mp_tensor **elem, int *done) {
    if (x->ndim == 0)
        return mp_error_set(MP_ERR_TYPE, "cannot iterate over a scalar tensor");
    if (it >= x->shape[0]) {
        *done = 1;
        return MP_OK;
    }
    size_t rowbytes = x->shape[0] ? mp_tensor_nbytes(x) / (size_t)x->shape[0] : 0;
    return mp_tensor_view(x, x->offset + (size_t)it * rowbytes, x->dtype, x->ndim - 1, x->shape + 1, elem);
}

/* TensorFlow's loop invariants: an iteration keeps every loop variable's dtype and shape. */
static mp_status check_carried(const mp_gloop *l, mp_tensor *const *before, mp_tensor *const *after) {
    for (int k = 0; k < l->n_carried; k++) {
        const mp_tensor *a = before[k], *b = after[k];
        if (!b)
            return mp_error_set(MP_ERR_INTERNAL, "loop: the body produced no value for loop variable %d", k);
        if (a->dtype != b->dtype)
            return mp_error_set(MP_ERR_TYPE,
                                "loop variable %d has dtype %s before the loop, but dtype %s after an iteration", k,
                                mp_dtype_name(a->dtype), mp_dtype_name(b->dtype));
        int same = a->ndim == b->ndim;
        for (int d = 0; same && d < a->ndim; d++)
            same = a->shape[d] == b->shape[d];
        if (!same)
            return mp_error_set(MP_ERR_VALUE,
                                "loop variable %d changes its shape in an iteration (a rank-%d tensor becomes "
                                "rank %d); use shape invariants",
                                k, a->ndim, b->ndim);
    }
    return MP_OK;
}

/* One iteration's body: the variant for the elements' shapes, or (while the tracing call
 * runs the loop) a new one traced by trace_body, which also runs the iteration. */
static mp_status run_body(mp_gloop *l, mp_tensor ***pbin, int *pnb, int own, mp_tensor *const *caps, int n_sub,
                          mp_variable *const *from, mp_variable *const *to, mp_tensor **nxt) {
    const int ne = l->n_elems, nc = l->n_carried;
    mp_tensor **bin = *pbin;
    int j = l->python_mode ? -1 : body_for(l, bin);
    if (j < 0 && l->trace_body) {
        mp_graph *g = NULL;
        MP_TRY(l->trace_body(l->trace_ctx, ne, bin, nc, bin + ne, &g, nxt));
        if (g) {
            for (int k = 0; k < l->n_bodies; k++)
                if (mp_graph_same_structure(g, l->bodies[k]))
                    g->polymorphic = l->bodies[k]->polymorphic = 1;
            return mp_gloop_add_body(l, g);
        }
        l->python_mode = 1;
        return MP_OK;
    }
    if (j < 0 && l->retrace && !own) {
        MP_TRY(replay_trace(l, bin, &j));
        int need = ne + nc + l->bodies[j]->n_captured;
        if (need > *pnb) { /* the new body captures more than the ones before it */
            mp_tensor **nb = realloc(bin, ((size_t)need + 1) * sizeof *nb);
            if (!nb)
                return mp_error_set(MP_ERR_MEMORY, "out of host memory running a loop");
            *pbin = bin = nb;
            *pnb = need;
        }
    }
    if (j < 0) {
        char a[96] = "";
        if (ne > 0)
            shape_text(bin[0], a, sizeof a);
        return mp_error_set(MP_ERR_VALUE,
                            "a loop over a dataset got an element (%s ...) of a shape its body was not "
                            "traced for (the shapes the tracing call saw); call the function with a new dataset "
                            "object (a new trace), or batch with drop_remainder=True",
                            a);
    }
    mp_graph *g = l->bodies[j];
    const int32_t *map = l->capmaps ? l->capmaps[j] : NULL;
    mp_tensor *const *gc = own ? g->captured : caps;
    if (!own && !map) { /* this body's captures follow the condition's and the earlier ones' */
        int off = l->cond ? l->cond->n_captured : 0;
        for (int k = 0; k < j; k++)
            off += l->capmaps && l->capmaps[k] ? 0 : l->bodies[k]->n_captured;
        gc = caps + off;
    }
    for (int k = 0; k < g->n_captured; k++)
        bin[ne + nc + k] = own || !map ? gc[k] : caps[map[k]];
    return mp_graph_run_with(g, ne + nc + g->n_captured, bin, n_sub, from, to, nxt);
}

mp_status mp_gloop_run(mp_gloop *l, mp_tensor *const *in, int own, int64_t start, int restart, int n_sub,
                       mp_variable *const *from, mp_variable *const *to, mp_tensor **out) {
    const int nc = l->n_carried, ne = l->n_elems;
    const int ncd = nc + (l->cond ? l->cond->n_captured : 0);
    if ((!l->n_bodies && !l->trace_body) || (l->src == MP_GLOOP_SRC_ROWS && l->n_src < 1) ||
        (l->src == MP_GLOOP_SRC_HOST && !l->next))
        return mp_error_set(MP_ERR_INTERNAL, "loop: incomplete (no body or no source)");
    int maxcap = 0;
    for (int j = 0; j < l->n_bodies; j++)
        if (l->bodies[j]->n_captured > maxcap)
            maxcap = l->bodies[j]->n_captured;
    mp_tensor *const *caps = own ? NULL : in + nc + l->n_src;
    mp_tensor **bin = NULL, **cin = calloc((size_t)ncd + 1, sizeof *cin);
    mp_tensor **cur = calloc((size_t)nc + 1, sizeof *cur);
    mp_tensor **nxt = calloc((size_t)nc + 1, sizeof *nxt);
    mp_tensor **elems = calloc((size_t)ne + 1, sizeof *elems);
    int nb = ne + nc + maxcap;
    mp_status st = MP_OK;
    if (!cin || !cur || !nxt || !elems) {
        st = mp_error_set(MP_ERR_MEMORY, "out of host memory running a loop");
        goto done;
    }
    for (int k = 0; k < nc; k++) {
        cur[k] = in[k];
        mp_tensor_incref(cur[k]);
    }
    for (int j = 0; l->cond && j < l->cond->n_captured; j++)
        cin[nc + j] = own ? l->cond->captured[j] : caps[j];
    for (int64_t it = start;; it++) {
        if (l->max_iter >= 0 && it >= l->max_iter)
            break;
        if (l->cond) {
            mp_tensor *p = NULL;
            int go = 0;
            memcpy(cin, cur, (size_t)nc * sizeof *cin);
            st = mp_graph_run_with(l->cond, ncd, cin, n_sub, from, to, &p);
            if (st == MP_OK)
                st = read_pred(p, &go);
            mp_tensor_decref(p);
            if (st != MP_OK || !go)
                break;
        }
        int done = 0;
        if (l->src == MP_GLOOP_SRC_ROWS) {
            st = row(in[nc], it, &elems[0], &done);
        } else if (l->src == MP_GLOOP_SRC_HOST) {
            st = l->next(l->ctx, restart, ne, elems, &done);
            restart = 0;
        }
        if (st != MP_OK || done)
            break;
        /* a body traced during this run may capture more than the ones before it */
        int need = ne + nc + maxcap;
        for (int j = 0; j < l->n_bodies; j++)
            if (ne + nc + l->bodies[j]->n_captured > need)
                need = ne + nc + l->bodies[j]->n_captured;
        if (!bin || need > nb) {
            free(bin);
            nb = need;
            bin = calloc((size_t)nb + 1, sizeof *bin);
            if (!bin) {
                st = mp_error_set(MP_ERR_MEMORY, "out of host memory running a loop");
                break;
            }
        }
        memcpy(bin, elems, (size_t)ne * sizeof *bin);
        memcpy(bin + ne, cur, (size_t)nc * sizeof *bin);
        st = run_body(l, &bin, &nb, own, caps, n_sub, from, to, nxt);
        for (int k = 0; k < ne; k++) {
            mp_tensor_decref(elems[k]);
            elems[k] = NULL;
        }
        if (st == MP_OK && !l->python_mode)
            st = check_carried(l, cur, nxt);
        for (int k = 0; k < nc; k++) {
            mp_tensor_decref(st == MP_OK ? cur[k] : nxt[k]);
            if (st == MP_OK)
                cur[k] = nxt[k];
            nxt[k] = NULL;
        }
        if (st != MP_OK)
            break;
    }
done:
    for (int k = 0; k < nc; k++) {
        if (st == MP_OK && cur)
            out[k] = cur[k];
        else if (cur)
            mp_tensor_decref(cur[k]);
    }
    for (int k = 0; elems && k < ne; k++)
        mp_tensor_decref(elems[k]);
    free(bin);
    free(cin);
    free(cur);
    free(nxt);
    free(elems);
    return st;
}
