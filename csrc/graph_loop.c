/* graph_loop.c — a traced loop replayed in C (graph.h: mp_gloop, MP_GNODE_LOOP).
 * Owns the iteration: the condition sub-graph's verdict, the elements from the source (a
 * tensor's rows or a host callback over a dataset), the body sub-graph's replay and the
 * loop-invariant checks on the loop variables. It must not trace (the Python face traces
 * the body once, src/mixprec/_loops.py) nor compute: the sub-graphs run through
 * mp_graph_run_with like any graph. */
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
    mp_graph_free(l->body);
    mp_graph_free(l->cond);
    if (l->free)
        l->free(l->ctx);
    free(l);
}

static mp_status read_pred(mp_tensor *p, int *out) {
    if (p->dtype != MP_BOOL || p->numel != 1)
        return mp_error_set(MP_ERR_TYPE, "a loop's condition must be a boolean scalar, got a %s tensor with %lld elements",
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
            return mp_error_set(MP_ERR_TYPE, "loop variable %d has dtype %s before the loop, but dtype %s after an iteration",
                                k, mp_dtype_name(a->dtype), mp_dtype_name(b->dtype));
        int same = a->ndim == b->ndim;
        for (int d = 0; same && d < a->ndim; d++)
            same = a->shape[d] == b->shape[d];
        if (!same)
            return mp_error_set(MP_ERR_VALUE, "loop variable %d changes its shape in an iteration (a rank-%d tensor becomes "
                                "rank %d); use shape invariants",
                                k, a->ndim, b->ndim);
    }
    return MP_OK;
}

mp_status mp_gloop_run(mp_gloop *l, mp_tensor *const *in, int64_t start, int restart, mp_tensor **out) {
    return mp_gloop_run_with(l, in, start, restart, 0, NULL, NULL, out);
}

mp_status mp_gloop_run_with(mp_gloop *l, mp_tensor *const *in, int64_t start, int restart, int n_sub,
                            mp_variable *const *from, mp_variable *const *to, mp_tensor **out) {
    const int nc = l->n_carried, ne = l->n_elems;
    const int nb = ne + nc + l->n_body_cap, ncd = nc + l->n_cond_cap;
    if (!l->body || (l->src == MP_GLOOP_SRC_ROWS && l->n_src < 1) || (l->src == MP_GLOOP_SRC_HOST && !l->next))
        return mp_error_set(MP_ERR_INTERNAL, "loop: incomplete (no body or no source)");
    mp_tensor **bin = calloc((size_t)nb + 1, sizeof *bin);
    mp_tensor **cin = calloc((size_t)ncd + 1, sizeof *cin);
    mp_tensor **cur = calloc((size_t)nc + 1, sizeof *cur);
    mp_tensor **nxt = calloc((size_t)nc + 1, sizeof *nxt);
    mp_tensor **elems = calloc((size_t)ne + 1, sizeof *elems);
    mp_status st = MP_OK;
    if (!bin || !cin || !cur || !nxt || !elems) {
        st = mp_error_set(MP_ERR_MEMORY, "out of host memory running a loop");
        goto done;
    }
    for (int k = 0; k < nc; k++) {
        cur[k] = in[k];
        mp_tensor_incref(cur[k]);
    }
    const int cap0 = nc + l->n_src;
    for (int j = 0; j < l->n_body_cap; j++)
        bin[ne + nc + j] = in[cap0 + j];
    for (int j = 0; j < l->n_cond_cap; j++)
        cin[nc + j] = in[cap0 + l->n_body_cap + j];
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
        memcpy(bin, elems, (size_t)ne * sizeof *bin);
        memcpy(bin + ne, cur, (size_t)nc * sizeof *bin);
        st = mp_graph_run_with(l->body, nb, bin, n_sub, from, to, nxt);
        for (int k = 0; k < ne; k++) {
            mp_tensor_decref(elems[k]);
            elems[k] = NULL;
        }
        if (st == MP_OK)
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
