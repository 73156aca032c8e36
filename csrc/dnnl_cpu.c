/* dnnl_cpu.c — the CPU backend's convolution and pooling slots, through oneDNN's C API.
 * Owns the oneDNN engine, the primitive cache (one entry per kind, dtype and window) and
 * the dtype routes: float32 and bfloat16 native, float16 native where oneDNN implements
 * it on this CPU and widened to float32 otherwise, float64 (and shapes oneDNN refuses)
 * through the loop kernels of window_ref.c. Scratchpads come from our allocator.
 * It must not validate shapes (ops.c did) nor allocate tensors. */
#include <pthread.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "cpu_kernels.h"
#include "dnnl_cpu.h"
#include "window_ref.h"

/* ------------------------------------------------------------------ engine */

static dnnl_engine_t engine;
static dnnl_status_t engine_status = dnnl_success;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static _Thread_local dnnl_stream_t tls_stream;

static void engine_init(void) {
    engine_status = dnnl_engine_create(&engine, dnnl_cpu, 0);
}

static mp_status dnnl_err(const char *what, dnnl_status_t s) {
    return mp_error_set(s == dnnl_out_of_memory ? MP_ERR_MEMORY : MP_ERR_INTERNAL, "oneDNN: %s failed (status %d)",
                        what, (int)s);
}

static mp_status get_stream(dnnl_stream_t *out) {
    pthread_once(&engine_once, engine_init);
    if (engine_status != dnnl_success)
        return dnnl_err("engine creation", engine_status);
    if (!tls_stream) {
        dnnl_status_t s = dnnl_stream_create(&tls_stream, engine, dnnl_stream_default_flags);
        if (s != dnnl_success) {
            tls_stream = NULL;
            return dnnl_err("stream creation", s);
        }
    }
    *out = tls_stream;
    return MP_OK;
}

/* ------------------------------------------------------------------ cache */

enum { FAM_CONV = 0, FAM_POOL = 1, FAM_MATMUL = 2 };

typedef struct {
    int fam, kind;
    int dt;
    int post; /* convolution forward: 0 plain, 1 + bias, 2 + bias and ReLU (post-ops) */
    mp_window win;
} key_t_;

typedef struct entry {
    key_t_ key;
    int refs;                              /* users + 1 while in the cache */
    dnnl_primitive_desc_t pd, aux_pd, rpd; /* aux: the forward pass max-pool backward re-runs */
    dnnl_primitive_t prim, aux, reorder;
    dnnl_memory_desc_t user_w;     /* weights as TensorFlow stores them (conv), owned */
    const_dnnl_memory_desc_t pd_w; /* weights as the primitive wants them (in pd) */
    size_t scratch, aux_scratch, reorder_scratch, wbuf, ws, aux_dst;
} entry;

#define CACHE_SIZE 64
static entry *cache[CACHE_SIZE];
static int cache_next;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static void entry_free(entry *e) {
    if (!e)
        return;
    if (e->reorder)
        dnnl_primitive_destroy(e->reorder);
    if (e->aux)
        dnnl_primitive_destroy(e->aux);
    if (e->prim)
        dnnl_primitive_destroy(e->prim);
    if (e->aux_pd)
        dnnl_primitive_desc_destroy(e->aux_pd);
    if (e->rpd)
        dnnl_primitive_desc_destroy(e->rpd);
    if (e->pd)
        dnnl_primitive_desc_destroy(e->pd);
    if (e->user_w)
        dnnl_memory_desc_destroy(e->user_w);
    free(e);
}

static void entry_release(entry *e) {
    if (__atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) == 0)
        entry_free(e);
}

static entry *cache_find(const key_t_ *k) {
    entry *hit = NULL;
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; i < CACHE_SIZE; i++)
        if (cache[i] && memcmp(&cache[i]->key, k, sizeof *k) == 0) {
            hit = cache[i];
            __atomic_add_fetch(&hit->refs, 1, __ATOMIC_ACQ_REL);
            break;
        }
    pthread_mutex_unlock(&cache_lock);
    return hit;
}

/* Adds e (refs: the caller's 1) to the cache, evicting round robin. */
static void cache_add(entry *e) {
    __atomic_add_fetch(&e->refs, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_lock(&cache_lock);
    entry *old = cache[cache_next];
    cache[cache_next] = e;
    cache_next = (cache_next + 1) % CACHE_SIZE;
    pthread_mutex_unlock(&cache_lock);
    if (old)
        entry_release(old);
}

/* ------------------------------------------------------------------ descriptors */

static dnnl_data_type_t dnnl_dt(mp_dtype dt) {
    return dt == MP_BF16 ? dnnl_bf16 : dt == MP_F16 ? dnnl_f16 : dnnl_f32;
}

static dnnl_status_t act_md(dnnl_memory_desc_t *md, mp_dtype dt, int nchw, int64_t n, int64_t c, int64_t h, int64_t w) {
    dnnl_dims_t d = {n, c, h, w};
    return dnnl_memory_desc_create_with_tag(md, 4, d, dnnl_dt(dt), nchw ? dnnl_nchw : dnnl_nhwc);
}

/* HWIO filter (kh, kw, c/g, oc) as oneDNN's (g,) oc/g, ic/g, kh, kw; `any` lets oneDNN pick. */
static dnnl_status_t weights_md(dnnl_memory_desc_t *md, mp_dtype dt, const mp_window *w, int any) {
    int64_t g = w->groups, icg = w->c / g, ocg = w->oc / g;
    if (g == 1) {
        dnnl_dims_t d = {w->oc, icg, w->kh, w->kw};
        if (any)
            return dnnl_memory_desc_create_with_tag(md, 4, d, dnnl_dt(dt), dnnl_format_tag_any);
        dnnl_dims_t s = {1, w->oc, w->kw * icg * w->oc, icg * w->oc};
        return dnnl_memory_desc_create_with_strides(md, 4, d, dnnl_dt(dt), s);
    }
    dnnl_dims_t d = {g, ocg, icg, w->kh, w->kw};
    if (any)
        return dnnl_memory_desc_create_with_tag(md, 5, d, dnnl_dt(dt), dnnl_format_tag_any);
    dnnl_dims_t s = {ocg, 1, w->oc, w->kw * icg * w->oc, icg * w->oc};
    return dnnl_memory_desc_create_with_strides(md, 5, d, dnnl_dt(dt), s);
}

static size_t scratch_of(const_dnnl_primitive_desc_t pd) {
    const_dnnl_memory_desc_t md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    return md ? dnnl_memory_desc_get_size(md) : 0;
}

/* ------------------------------------------------------------------ building */

#define CHK(call)                                                                                                      \
    do {                                                                                                               \
        s = (call);                                                                                                    \
        if (s != dnnl_success)                                                                                         \
            goto done;                                                                                                 \
    } while (0)

static dnnl_status_t build_conv(entry *e, dnnl_primitive_attr_t attr) {
    const mp_window *w = &e->key.win;
    mp_dtype dt = (mp_dtype)e->key.dt;
    dnnl_status_t s;
    dnnl_memory_desc_t src = NULL, dst = NULL, wany = NULL, bias = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_attr_t rattr = NULL;
    dnnl_primitive_desc_t fwd = NULL;
    dnnl_dims_t strides = {w->sh, w->sw}, dil = {w->dh - 1, w->dw - 1}, pl = {w->pt, w->pl}, pr = {w->pb, w->pr};
    CHK(act_md(&src, dt, w->nchw, w->n, w->c, w->h, w->w));
    CHK(act_md(&dst, dt, w->nchw, w->n, w->oc, w->oh, w->ow));
    CHK(weights_md(&wany, dt, w, 1));
    CHK(weights_md(&e->user_w, dt, w, 0));
    if (e->key.post) { /* bias (oc) of the data's dtype; ReLU as an eltwise post-op */
        dnnl_dims_t bd = {w->oc};
        CHK(dnnl_memory_desc_create_with_tag(&bias, 1, bd, dnnl_dt(dt), dnnl_a));
        if (e->key.post == 2) {
            CHK(dnnl_post_ops_create(&po));
            CHK(dnnl_post_ops_append_eltwise(po, dnnl_eltwise_relu, 0.0f, 0.0f));
            CHK(dnnl_primitive_attr_set_post_ops(attr, po));
        }
    }
    CHK(dnnl_convolution_forward_primitive_desc_create(&fwd, engine, dnnl_forward_training, dnnl_convolution_direct,
                                                       src, wany, bias, dst, strides, dil, pl, pr, attr));
    if (e->key.kind == MP_CONV_FWD) {
        e->pd = fwd;
        fwd = NULL;
        e->pd_w = dnnl_primitive_desc_query_md(e->pd, dnnl_query_weights_md, 0);
    } else if (e->key.kind == MP_CONV_BWD_DATA) {
        CHK(dnnl_convolution_backward_data_primitive_desc_create(&e->pd, engine, dnnl_convolution_direct, src, wany,
                                                                 dst, strides, dil, pl, pr, fwd, attr));
        e->pd_w = dnnl_primitive_desc_query_md(e->pd, dnnl_query_weights_md, 0);
    } else {
        CHK(dnnl_convolution_backward_weights_primitive_desc_create(&e->pd, engine, dnnl_convolution_direct, src, wany,
                                                                    NULL, dst, strides, dil, pl, pr, fwd, attr));
        e->pd_w = dnnl_primitive_desc_query_md(e->pd, dnnl_query_diff_weights_md, 0);
    }
    CHK(dnnl_primitive_create(&e->prim, e->pd));
    e->scratch = scratch_of(e->pd);
    if (!dnnl_memory_desc_equal(e->pd_w, e->user_w)) {
        /* the reorder takes the scratchpad mode, not the convolution's post-ops */
        CHK(dnnl_primitive_attr_create(&rattr));
        CHK(dnnl_primitive_attr_set_scratchpad_mode(rattr, dnnl_scratchpad_mode_user));
        if (e->key.kind == MP_CONV_BWD_FILTER)
            CHK(dnnl_reorder_primitive_desc_create(&e->rpd, e->pd_w, engine, e->user_w, engine, rattr));
        else
            CHK(dnnl_reorder_primitive_desc_create(&e->rpd, e->user_w, engine, e->pd_w, engine, rattr));
        CHK(dnnl_primitive_create(&e->reorder, e->rpd));
        e->reorder_scratch = scratch_of(e->rpd);
        e->wbuf = dnnl_memory_desc_get_size(e->pd_w);
    }
done:
    if (fwd)
        dnnl_primitive_desc_destroy(fwd);
    if (src)
        dnnl_memory_desc_destroy(src);
    if (dst)
        dnnl_memory_desc_destroy(dst);
    if (wany)
        dnnl_memory_desc_destroy(wany);
    if (bias)
        dnnl_memory_desc_destroy(bias);
    if (po)
        dnnl_post_ops_destroy(po);
    if (rattr)
        dnnl_primitive_attr_destroy(rattr);
    return s;
}

static dnnl_status_t build_pool(entry *e, dnnl_primitive_attr_t attr) {
    const mp_window *w = &e->key.win;
    mp_dtype dt = (mp_dtype)e->key.dt;
    dnnl_status_t s;
    dnnl_memory_desc_t src = NULL, dst = NULL;
    dnnl_dims_t strides = {w->sh, w->sw}, ker = {w->kh, w->kw}, dil = {0, 0}, pl = {w->pt, w->pl}, pr = {w->pb, w->pr};
    int is_max = e->key.kind == MP_POOL_MAX || e->key.kind == MP_POOL_MAX_BWD;
    dnnl_alg_kind_t alg = is_max ? dnnl_pooling_max : dnnl_pooling_avg_exclude_padding;
    CHK(act_md(&src, dt, w->nchw, w->n, w->c, w->h, w->w));
    CHK(act_md(&dst, dt, w->nchw, w->n, w->oc, w->oh, w->ow));
    if (e->key.kind == MP_POOL_MAX || e->key.kind == MP_POOL_AVG) {
        /* post = 1: max pooling for a gradient (forward_training: the argmax workspace too) */
        CHK(dnnl_pooling_forward_primitive_desc_create(&e->pd, engine,
                                                       e->key.post ? dnnl_forward_training : dnnl_forward_inference,
                                                       alg, src, dst, strides, ker, dil, pl, pr, attr));
        if (e->key.post) {
            const_dnnl_memory_desc_t ws = dnnl_primitive_desc_query_md(e->pd, dnnl_query_workspace_md, 0);
            e->ws = ws ? dnnl_memory_desc_get_size(ws) : 0;
        }
    } else {
        CHK(dnnl_pooling_forward_primitive_desc_create(&e->aux_pd, engine, dnnl_forward_training, alg, src, dst,
                                                       strides, ker, dil, pl, pr, attr));
        CHK(dnnl_pooling_backward_primitive_desc_create(&e->pd, engine, alg, src, dst, strides, ker, dil, pl, pr,
                                                        e->aux_pd, attr));
        if (is_max) {
            CHK(dnnl_primitive_create(&e->aux, e->aux_pd));
            e->aux_scratch = scratch_of(e->aux_pd);
            const_dnnl_memory_desc_t ws = dnnl_primitive_desc_query_md(e->aux_pd, dnnl_query_workspace_md, 0);
            e->ws = ws ? dnnl_memory_desc_get_size(ws) : 0;
            e->aux_dst = dnnl_memory_desc_get_size(dst);
        }
    }
    CHK(dnnl_primitive_create(&e->prim, e->pd));
    e->scratch = scratch_of(e->pd);
done:
    if (src)
        dnnl_memory_desc_destroy(src);
    if (dst)
        dnnl_memory_desc_destroy(dst);
    return s;
}

/* matmul keys: win.n, c, h = M, N, K; win.w, oc = transpose A, B; kind bit 0 = alpha != 1,
 * bit 1 = a bias row (1, N) of the data's dtype;
 * win.pt holds beta's bits (beta != 0: a sum post-op, C = alpha A B + beta C); post = 1:
 * B is reordered into the layout oneDNN picks (pack_b) before every product. */
static dnnl_status_t build_matmul(entry *e, dnnl_primitive_attr_t attr) {
    const mp_window *w = &e->key.win;
    int64_t M = w->n, N = w->c, K = w->h;
    dnnl_data_type_t t = dnnl_dt((mp_dtype)e->key.dt);
    dnnl_status_t s;
    dnnl_memory_desc_t a = NULL, b = NULL, c = NULL, bias = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_attr_t rattr = NULL;
    dnnl_dims_t da = {M, K}, db = {K, N}, dc = {M, N};
    /* win.kh / win.kw: B's / C's row stride when not dense (a column block, mp_dnnl_mm_get) */
    int64_t ldb = w->kh ? w->kh : N, ldc = w->kw ? w->kw : N;
    dnnl_dims_t sa = {w->w ? 1 : K, w->w ? M : 1}, sb = {w->oc ? 1 : ldb, w->oc ? K : 1}, sc = {ldc, 1};
    double beta;
    memcpy(&beta, &w->pt, sizeof beta);
    CHK(dnnl_memory_desc_create_with_strides(&a, 2, da, t, sa));
    CHK(dnnl_memory_desc_create_with_strides(&e->user_w, 2, db, t, sb));
    if (e->key.post) /* packed B: oneDNN picks the layout */
        CHK(dnnl_memory_desc_create_with_tag(&b, 2, db, t, dnnl_format_tag_any));
    else
        CHK(dnnl_memory_desc_create_with_strides(&b, 2, db, t, sb));
    CHK(dnnl_memory_desc_create_with_strides(&c, 2, dc, t, sc));
    if (e->key.kind & 2) {
        dnnl_dims_t dbias = {1, N};
        CHK(dnnl_memory_desc_create_with_tag(&bias, 2, dbias, t, dnnl_ab));
    }
    if (e->key.kind & 1)
        CHK(dnnl_primitive_attr_set_scales_mask(attr, DNNL_ARG_SRC, 0));
    if (beta != 0.0) {
        CHK(dnnl_post_ops_create(&po));
        CHK(dnnl_post_ops_append_sum(po, (float)beta, 0, dnnl_data_type_undef));
        CHK(dnnl_primitive_attr_set_post_ops(attr, po));
    }
    CHK(dnnl_matmul_primitive_desc_create(&e->pd, engine, a, b, bias, c, attr));
    CHK(dnnl_primitive_create(&e->prim, e->pd));
    e->scratch = scratch_of(e->pd);
    e->pd_w = dnnl_primitive_desc_query_md(e->pd, dnnl_query_weights_md, 0);
    if (!dnnl_memory_desc_equal(e->pd_w, e->user_w)) {
        CHK(dnnl_primitive_attr_create(&rattr));
        CHK(dnnl_primitive_attr_set_scratchpad_mode(rattr, dnnl_scratchpad_mode_user));
        CHK(dnnl_reorder_primitive_desc_create(&e->rpd, e->user_w, engine, e->pd_w, engine, rattr));
        CHK(dnnl_primitive_create(&e->reorder, e->rpd));
        e->reorder_scratch = scratch_of(e->rpd);
        e->wbuf = dnnl_memory_desc_get_size(e->pd_w);
    }
done:
    if (rattr)
        dnnl_primitive_attr_destroy(rattr);
    if (po)
        dnnl_post_ops_destroy(po);
    if (a)
        dnnl_memory_desc_destroy(a);
    if (b)
        dnnl_memory_desc_destroy(b);
    if (c)
        dnnl_memory_desc_destroy(c);
    if (bias)
        dnnl_memory_desc_destroy(bias);
    return s;
}

static mp_status build_entry(const key_t_ *k, entry **out, int *unimpl);

/* The cached entry for k (a new reference), built on a miss. *unimpl is set when oneDNN
 * has no implementation for it (the caller takes another route). */
static mp_status get_entry(const key_t_ *k, entry **out, int *unimpl) {
    *out = NULL;
    *unimpl = 0;
    dnnl_stream_t st_;
    MP_TRY(get_stream(&st_));
    entry *e = cache_find(k);
    if (e) {
        *out = e;
        return MP_OK;
    }
    MP_TRY(build_entry(k, &e, unimpl));
    if (e) {
        cache_add(e);
        *out = e;
    }
    return MP_OK;
}

/* A new entry for k (refs 1, not cached), or NULL and *unimpl. */
static mp_status build_entry(const key_t_ *k, entry **out, int *unimpl) {
    *out = NULL;
    *unimpl = 0;
    entry *e = calloc(1, sizeof *e);
    if (!e)
        return mp_error_set(MP_ERR_MEMORY, "out of memory for a oneDNN primitive");
    e->key = *k;
    e->refs = 1;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_status_t s = dnnl_primitive_attr_create(&attr);
    if (s == dnnl_success)
        s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (s == dnnl_success)
        s = k->fam == FAM_CONV ? build_conv(e, attr) : k->fam == FAM_POOL ? build_pool(e, attr) : build_matmul(e, attr);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    if (s != dnnl_success) {
        entry_free(e);
        if (s == dnnl_unimplemented || s == dnnl_invalid_arguments) {
            *unimpl = 1;
            return MP_OK;
        }
        return dnnl_err("primitive creation", s);
    }
    *out = e;
    return MP_OK;
}

/* ------------------------------------------------------------------ execution */

typedef struct {
    dnnl_memory_t m[8];
    int n;
    void *buf[4];
    size_t len[4];
    int nb;
} exec_ctx;

static void *ctx_alloc(exec_ctx *c, size_t n) {
    if (n == 0)
        return NULL;
    void *p = mp_cpu_scratch_alloc(n);
    if (p) {
        c->buf[c->nb] = p;
        c->len[c->nb++] = n;
    }
    return p;
}

static void ctx_free(exec_ctx *c) {
    for (int i = 0; i < c->n; i++)
        dnnl_memory_destroy(c->m[i]);
    for (int i = 0; i < c->nb; i++)
        mp_cpu_scratch_free(c->buf[i], c->len[i]);
}

/* arg (a memory over p described by md) for execution; NULL on failure */
static int add_arg(exec_ctx *c, dnnl_exec_arg_t *args, int *na, int arg, const_dnnl_memory_desc_t md, const void *p) {
    dnnl_memory_t m;
    if (dnnl_memory_create(&m, md, engine, (void *)p) != dnnl_success)
        return -1;
    c->m[c->n++] = m;
    args[*na].arg = arg;
    args[*na].memory = m;
    (*na)++;
    return 0;
}

static const_dnnl_memory_desc_t qmd(const_dnnl_primitive_desc_t pd, dnnl_query_t q) {
    return dnnl_primitive_desc_query_md(pd, q, 0);
}

static mp_status exec(dnnl_primitive_t p, int na, const dnnl_exec_arg_t *args) {
    dnnl_stream_t s = NULL;
    MP_TRY(get_stream(&s));
    dnnl_status_t r = dnnl_primitive_execute(p, s, na, args);
    if (r == dnnl_success)
        r = dnnl_stream_wait(s);
    return r == dnnl_success ? MP_OK : dnnl_err("execution", r);
}

#define ARG(arg, md, p)                                                                                                \
    do {                                                                                                               \
        if (add_arg(&c, args, &na, (arg), (md), (p))) {                                                                \
            st = mp_error_set(MP_ERR_MEMORY, "oneDNN: memory object creation failed");                                 \
            goto out;                                                                                                  \
        }                                                                                                              \
    } while (0)

/* The entry's weight reorder (user layout -> the primitive's), from -> to, its memory
 * objects kept in c for the caller's cleanup; the conv and matmul runs share it. */
static mp_status reorder_weights(exec_ctx *c, const entry *e, const void *from, void *to, void *rscratch) {
    dnnl_exec_arg_t args[3];
    int na = 0;
    if (add_arg(c, args, &na, DNNL_ARG_FROM, e->user_w, from) || add_arg(c, args, &na, DNNL_ARG_TO, e->pd_w, to) ||
        (rscratch && add_arg(c, args, &na, DNNL_ARG_SCRATCHPAD, qmd(e->rpd, dnnl_query_scratchpad_md), rscratch)))
        return mp_error_set(MP_ERR_MEMORY, "oneDNN: memory object creation failed");
    return exec(e->reorder, na, args);
}

static mp_status run_conv(entry *e, const void *a, const void *b, const void *bias, void *out) {
    exec_ctx c = {0};
    dnnl_exec_arg_t args[8];
    int na = 0;
    mp_status st = MP_OK;
    const_dnnl_primitive_desc_t pd = e->pd;
    void *scratch = ctx_alloc(&c, e->scratch);
    void *wbuf = ctx_alloc(&c, e->wbuf);
    void *rscratch = ctx_alloc(&c, e->reorder_scratch);
    if ((e->scratch && !scratch) || (e->wbuf && !wbuf) || (e->reorder_scratch && !rscratch)) {
        st = mp_error_set(MP_ERR_MEMORY, "out of memory for a convolution's scratchpad");
        goto out;
    }
    const void *user_w = e->key.kind == MP_CONV_FWD ? b : e->key.kind == MP_CONV_BWD_DATA ? a : out;
    const void *prim_w = e->reorder ? wbuf : user_w;
    if (e->reorder && e->key.kind != MP_CONV_BWD_FILTER && (st = reorder_weights(&c, e, user_w, wbuf, rscratch)) != MP_OK)
        goto out;
    if (e->key.kind == MP_CONV_FWD) {
        ARG(DNNL_ARG_SRC, qmd(pd, dnnl_query_src_md), a);
        ARG(DNNL_ARG_WEIGHTS, e->pd_w, prim_w);
        ARG(DNNL_ARG_DST, qmd(pd, dnnl_query_dst_md), out);
        if (e->key.post)
            ARG(DNNL_ARG_BIAS, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1), bias);
    } else if (e->key.kind == MP_CONV_BWD_DATA) {
        ARG(DNNL_ARG_WEIGHTS, e->pd_w, prim_w);
        ARG(DNNL_ARG_DIFF_DST, qmd(pd, dnnl_query_diff_dst_md), b);
        ARG(DNNL_ARG_DIFF_SRC, qmd(pd, dnnl_query_diff_src_md), out);
    } else {
        ARG(DNNL_ARG_SRC, qmd(pd, dnnl_query_src_md), a);
        ARG(DNNL_ARG_DIFF_DST, qmd(pd, dnnl_query_diff_dst_md), b);
        ARG(DNNL_ARG_DIFF_WEIGHTS, e->pd_w, prim_w);
    }
    if (scratch)
        ARG(DNNL_ARG_SCRATCHPAD, qmd(pd, dnnl_query_scratchpad_md), scratch);
    if ((st = exec(e->prim, na, args)) != MP_OK)
        goto out;
    if (e->reorder && e->key.kind == MP_CONV_BWD_FILTER) {
        na = 0;
        ARG(DNNL_ARG_FROM, e->pd_w, wbuf);
        ARG(DNNL_ARG_TO, e->user_w, out);
        if (rscratch)
            ARG(DNNL_ARG_SCRATCHPAD, qmd(e->rpd, dnnl_query_scratchpad_md), rscratch);
        st = exec(e->reorder, na, args);
    }
out:
    ctx_free(&c);
    return st;
}

/* kept: a max-pool workspace the caller holds (the forward training entry writes it, the
 * backward reads it instead of running the forward again); NULL: scratch of our own. */
static mp_status run_pool(entry *e, const void *a, const void *b, void *out, void *kept) {
    exec_ctx c = {0};
    dnnl_exec_arg_t args[8];
    int na = 0;
    mp_status st = MP_OK;
    const_dnnl_primitive_desc_t pd = e->pd;
    int fwd = e->key.kind == MP_POOL_MAX || e->key.kind == MP_POOL_AVG;
    void *scratch = ctx_alloc(&c, e->scratch);
    void *ascratch = kept ? NULL : ctx_alloc(&c, e->aux_scratch);
    void *ws = kept ? kept : ctx_alloc(&c, e->ws);
    void *adst = kept ? NULL : ctx_alloc(&c, e->aux_dst);
    if ((e->scratch && !scratch) || (!kept && e->aux_scratch && !ascratch) || (e->ws && !ws) ||
        (!kept && e->aux_dst && !adst)) {
        st = mp_error_set(MP_ERR_MEMORY, "out of memory for a pooling scratchpad");
        goto out;
    }
    if (fwd) {
        ARG(DNNL_ARG_SRC, qmd(pd, dnnl_query_src_md), a);
        ARG(DNNL_ARG_DST, qmd(pd, dnnl_query_dst_md), out);
        if (e->ws)
            ARG(DNNL_ARG_WORKSPACE, qmd(pd, dnnl_query_workspace_md), ws);
    } else if (kept) {
        ARG(DNNL_ARG_WORKSPACE, qmd(e->aux_pd, dnnl_query_workspace_md), ws);
        ARG(DNNL_ARG_DIFF_DST, qmd(pd, dnnl_query_diff_dst_md), b);
        ARG(DNNL_ARG_DIFF_SRC, qmd(pd, dnnl_query_diff_src_md), out);
    } else {
        if (e->aux) { /* max: the forward again, for the workspace of argmax positions */
            ARG(DNNL_ARG_SRC, qmd(e->aux_pd, dnnl_query_src_md), a);
            ARG(DNNL_ARG_DST, qmd(e->aux_pd, dnnl_query_dst_md), adst);
            if (ws)
                ARG(DNNL_ARG_WORKSPACE, qmd(e->aux_pd, dnnl_query_workspace_md), ws);
            if (ascratch)
                ARG(DNNL_ARG_SCRATCHPAD, qmd(e->aux_pd, dnnl_query_scratchpad_md), ascratch);
            if ((st = exec(e->aux, na, args)) != MP_OK)
                goto out;
            na = 0;
            if (ws)
                ARG(DNNL_ARG_WORKSPACE, qmd(e->aux_pd, dnnl_query_workspace_md), ws);
        }
        ARG(DNNL_ARG_DIFF_DST, qmd(pd, dnnl_query_diff_dst_md), b);
        ARG(DNNL_ARG_DIFF_SRC, qmd(pd, dnnl_query_diff_src_md), out);
    }
    if (scratch)
        ARG(DNNL_ARG_SCRATCHPAD, qmd(pd, dnnl_query_scratchpad_md), scratch);
    st = exec(e->prim, na, args);
out:
    ctx_free(&c);
    return st;
}

static mp_status run_matmul(entry *e, float alpha, const void *A, const void *B, const void *bias, void *C) {
    exec_ctx c = {0};
    dnnl_exec_arg_t args[8];
    int na = 0;
    mp_status st = MP_OK;
    const_dnnl_primitive_desc_t pd = e->pd;
    void *scratch = ctx_alloc(&c, e->scratch);
    void *wbuf = ctx_alloc(&c, e->wbuf);
    void *rscratch = ctx_alloc(&c, e->reorder_scratch);
    if ((e->scratch && !scratch) || (e->wbuf && !wbuf) || (e->reorder_scratch && !rscratch)) {
        st = mp_error_set(MP_ERR_MEMORY, "out of memory for a matmul scratchpad");
        goto out;
    }
    if (e->reorder) {
        if ((st = reorder_weights(&c, e, B, wbuf, rscratch)) != MP_OK)
            goto out;
        B = wbuf;
    }
    ARG(DNNL_ARG_SRC, qmd(pd, dnnl_query_src_md), A);
    ARG(DNNL_ARG_WEIGHTS, e->pd_w, B);
    ARG(DNNL_ARG_DST, qmd(pd, dnnl_query_dst_md), C);
    if (e->key.kind & 2)
        ARG(DNNL_ARG_BIAS, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1), bias);
    if (scratch)
        ARG(DNNL_ARG_SCRATCHPAD, qmd(pd, dnnl_query_scratchpad_md), scratch);
    if (e->key.kind & 1) {
        dnnl_memory_desc_t smd;
        dnnl_dims_t one = {1};
        if (dnnl_memory_desc_create_with_tag(&smd, 1, one, dnnl_f32, dnnl_a) != dnnl_success) {
            st = mp_error_set(MP_ERR_MEMORY, "oneDNN: memory descriptor creation failed");
            goto out;
        }
        int bad = add_arg(&c, args, &na, DNNL_ARG_ATTR_SCALES | DNNL_ARG_SRC, smd, &alpha);
        dnnl_memory_desc_destroy(smd);
        if (bad) {
            st = mp_error_set(MP_ERR_MEMORY, "oneDNN: memory object creation failed");
            goto out;
        }
    }
    st = exec(e->prim, na, args);
out:
    ctx_free(&c);
    return st;
}

/* ------------------------------------------------------------------ 16-bit GEMM */

static int gemm_mode[MP_DTYPE_COUNT]; /* MP_GEMM_AUTO / WIDEN / ONEDNN */
static pthread_once_t gemm_env_once = PTHREAD_ONCE_INIT;

static void gemm_env(void) {
    /* MIXPREC_GEMM16=widen: every 16-bit product through the widen-and-sgemm path */
    const char *v = getenv("MIXPREC_GEMM16");
    if (v && strcmp(v, "widen") == 0)
        gemm_mode[MP_F16] = gemm_mode[MP_BF16] = MP_GEMM_WIDEN;
    else if (v && strcmp(v, "onednn") == 0)
        gemm_mode[MP_F16] = gemm_mode[MP_BF16] = MP_GEMM_ONEDNN;
}

static int has_isa(dnnl_cpu_isa_t want) {
    return ((unsigned)dnnl_get_effective_cpu_isa() & (unsigned)want) == (unsigned)want;
}

int mp_gemm_set_mode(mp_dtype dt, int mode) {
    pthread_once(&gemm_env_once, gemm_env);
    if ((int)dt < 0 || dt >= MP_DTYPE_COUNT)
        return -1;
    return __atomic_exchange_n(&gemm_mode[dt], mode, __ATOMIC_RELAXED);
}

int mp_gemm_get_mode(mp_dtype dt) {
    pthread_once(&gemm_env_once, gemm_env);
    return (int)dt < 0 || dt >= MP_DTYPE_COUNT ? MP_GEMM_AUTO : __atomic_load_n(&gemm_mode[dt], __ATOMIC_RELAXED);
}

int mp_gemm_uses_onednn(mp_dtype dt) {
    pthread_once(&gemm_env_once, gemm_env);
    if ((int)dt < 0 || dt >= MP_DTYPE_COUNT)
        return 0;
    int mode = __atomic_load_n(&gemm_mode[dt], __ATOMIC_RELAXED);
    if (mode != MP_GEMM_AUTO)
        return mode == MP_GEMM_ONEDNN;
    /* automatic: only where the CPU multiplies the type natively (float32 stays OpenBLAS's:
     * docs/architecture.md) */
    if (dt == MP_BF16)
        return has_isa(dnnl_cpu_isa_avx512_core_bf16);
    if (dt == MP_F16)
        return has_isa(dnnl_cpu_isa_avx512_core_fp16);
    return 0;
}

/* Whether B goes to oneDNN's blocked layout by one reorder before the product (key.post = 1)
 * instead of as it is stored. NOTE: measured (bfloat16, 2 cores of the Zen 5 EPYC, CPU time,
 * results bit for bit the same): given B as stored, oneDNN's matmul copies its panels again
 * for every block of A's rows, 7% of an 8192x4096x4096 product's time (perf); one reorder
 * first took that product from 1479 to 1283 ms and the guide's 4096-unit bfloat16 step 4-5%
 * faster. It pays from about 512 rows of A (1024x4096x4096: 0.94x; 784x8192x4096, the guide's
 * first-layer weight gradient: 0.89-0.92x; 512 rows: 0.96-1.01x; 256 rows: 1.02x; 32 rows:
 * 1.13x). A transposed B is left to oneDNN here (1.09x at 1024 rows with its reorder);
 * dnnl_gemm_ transposes a large one itself first. */
static int pack_b(int64_t M, int64_t N, int64_t K, int tb) {
    return !tb && M >= 512 && K * N >= ((int64_t)1 << 18);
}

/* B^T (rows, cols) -> (cols, rows) for 2- or 4-byte elements, by 64x64 tiles through a
 * local buffer: every source row segment and every destination row segment is one
 * contiguous run (a direct strided transpose of a 4096-wide matrix keeps hitting the same
 * cache sets). A parallel range is a range of 64-column bands of the source. */
typedef struct {
    const char *src;
    char *dst;
    int64_t rows, cols;
    size_t es;
} transpose_ctx;

#define TT 64
static void transpose_bands(void *vctx, int64_t b, int64_t e) {
    const transpose_ctx *t = vctx;
    uint32_t tile[TT * TT];
    for (int64_t band = b; band < e; band++) {
        int64_t c0 = band * TT, nc = t->cols - c0 < TT ? t->cols - c0 : TT;
        for (int64_t r0 = 0; r0 < t->rows; r0 += TT) {
            int64_t nr = t->rows - r0 < TT ? t->rows - r0 : TT;
            if (t->es == 2) {
                uint16_t *tl = (uint16_t *)tile;
                for (int64_t r = 0; r < nr; r++)
                    memcpy(tl + r * TT, (const uint16_t *)t->src + (r0 + r) * t->cols + c0, (size_t)nc * 2);
#ifdef __SSE2__
                if (nr == TT && nc == TT) { /* 8x8 blocks: three rounds of unpacks */
                    for (int cb = 0; cb < TT; cb += 8)
                        for (int rb = 0; rb < TT; rb += 8) {
                            __m128i x[8], y[8];
                            for (int i = 0; i < 8; i++)
                                x[i] = _mm_loadu_si128((const __m128i *)(tl + (rb + i) * TT + cb));
                            for (int i = 0; i < 4; i++) {
                                y[2 * i] = _mm_unpacklo_epi16(x[2 * i], x[2 * i + 1]);
                                y[2 * i + 1] = _mm_unpackhi_epi16(x[2 * i], x[2 * i + 1]);
                            }
                            x[0] = _mm_unpacklo_epi32(y[0], y[2]), x[1] = _mm_unpackhi_epi32(y[0], y[2]);
                            x[2] = _mm_unpacklo_epi32(y[1], y[3]), x[3] = _mm_unpackhi_epi32(y[1], y[3]);
                            x[4] = _mm_unpacklo_epi32(y[4], y[6]), x[5] = _mm_unpackhi_epi32(y[4], y[6]);
                            x[6] = _mm_unpacklo_epi32(y[5], y[7]), x[7] = _mm_unpackhi_epi32(y[5], y[7]);
                            y[0] = _mm_unpacklo_epi64(x[0], x[4]), y[1] = _mm_unpackhi_epi64(x[0], x[4]);
                            y[2] = _mm_unpacklo_epi64(x[1], x[5]), y[3] = _mm_unpackhi_epi64(x[1], x[5]);
                            y[4] = _mm_unpacklo_epi64(x[2], x[6]), y[5] = _mm_unpackhi_epi64(x[2], x[6]);
                            y[6] = _mm_unpacklo_epi64(x[3], x[7]), y[7] = _mm_unpackhi_epi64(x[3], x[7]);
                            for (int i = 0; i < 8; i++)
                                _mm_storeu_si128((__m128i *)((uint16_t *)t->dst + (c0 + cb + i) * t->rows + r0 + rb),
                                                 y[i]);
                        }
                    continue;
                }
#endif
                for (int64_t c = 0; c < nc; c++) {
                    uint16_t *d = (uint16_t *)t->dst + (c0 + c) * t->rows + r0;
                    for (int64_t r = 0; r < nr; r++)
                        d[r] = tl[r * TT + c];
                }
            } else {
                for (int64_t r = 0; r < nr; r++)
                    memcpy(tile + r * TT, (const uint32_t *)t->src + (r0 + r) * t->cols + c0, (size_t)nc * 4);
                for (int64_t c = 0; c < nc; c++) {
                    uint32_t *d = (uint32_t *)t->dst + (c0 + c) * t->rows + r0;
                    for (int64_t r = 0; r < nr; r++)
                        d[r] = tile[r * TT + c];
                }
            }
        }
    }
}
#undef TT

static mp_status dnnl_gemm_(mp_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha, const void *A,
                             const void *B, const void *bias, double beta, void *C, int *unimpl) {
    if (tb && M >= 2048 && pack_b(M, N, K, 0)) {
        /* NOTE: a transposed B (the weights in dX = dY W^T) is transposed here, then packed:
         * oneDNN's own transposing reorder took 20 ms for 4096x4096 bfloat16, and left as
         * stored B is copied per block of rows. Measured (CPU time, bit for bit the same):
         * 8192x4096x4096 0.97x; 1024 rows 1.05x, 512 rows 1.16x (the transpose and the
         * reorder cost ~10 ms there), so only from 2048 rows. */
        size_t es = mp_dtype_size(dt), bytes = (size_t)N * (size_t)K * es;
        char *bt = mp_cpu_scratch_alloc(bytes);
        if (!bt)
            return mp_error_set(MP_ERR_MEMORY, "out of host memory: a transposed matmul operand (%lld x %lld)",
                                (long long)K, (long long)N);
        transpose_ctx t = {(const char *)B, bt, N, K, es};
        mp_parallel_for((K + 63) / 64, 1, transpose_bands, &t);
        mp_status st = dnnl_gemm_(dt, ta, 0, M, N, K, alpha, A, bt, bias, beta, C, unimpl);
        mp_cpu_scratch_free(bt, bytes);
        return st;
    }
    key_t_ k;
    memset(&k, 0, sizeof k);
    k.fam = FAM_MATMUL;
    k.kind = (alpha != 1.0) | (bias ? 2 : 0);
    k.dt = (int)dt;
    k.win.n = M, k.win.c = N, k.win.h = K, k.win.w = ta != 0, k.win.oc = tb != 0;
    k.post = pack_b(M, N, K, tb);
    memcpy(&k.win.pt, &beta, sizeof beta);
    entry *e;
    MP_TRY(get_entry(&k, &e, unimpl));
    if (*unimpl)
        return MP_OK;
    mp_status st = run_matmul(e, (float)alpha, A, B, bias, C);
    entry_release(e);
    return st;
}

/* Products on the calling thread only (mp_dnnl_mm_*): oneDNN's OpenMP build reads the calling
 * thread's OpenMP thread count when it creates and runs a primitive; it is set to 1 around
 * both, then restored. libgomp is libdnnl's own dependency (weak: absent, no such route). */
extern void omp_set_num_threads(int) __attribute__((weak));
extern int omp_get_max_threads(void) __attribute__((weak));

int mp_dnnl_mm_available(void) { return omp_set_num_threads && omp_get_max_threads; }

static int one_thread_begin(void) {
    int prev = omp_get_max_threads();
    if (prev != 1)
        omp_set_num_threads(1);
    return prev;
}
static void one_thread_end(int prev) {
    if (prev != 1)
        omp_set_num_threads(prev);
}

struct mp_dnnl_mm {
    entry *e;
};

/* The one-thread products' own cache (gemm_small.c's route runs float32 products, the
 * default dtype's, so a model has many more such shapes than convolutions): 64 sets of 4
 * entries by a hash of the key, round robin within a set. NOTE: a primitive costs ~0.4 ms
 * to make against 4-60 us to run at these shapes: sharing the 64-entry cache above, a
 * model with more distinct product shapes than that (a deep MLP, its last partial batch)
 * would remake primitives every step and evict the convolutions'. */
#define MM_SETS 64
#define MM_WAYS 4
static entry *mm_cache[MM_SETS][MM_WAYS];
static int mm_next[MM_SETS];
static pthread_mutex_t mm_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned mm_set(const key_t_ *k) {
    const unsigned char *p = (const unsigned char *)k;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof *k; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return (unsigned)(h >> 32) % MM_SETS;
}

static entry *mm_find(const key_t_ *k) {
    unsigned s = mm_set(k);
    entry *hit = NULL;
    pthread_mutex_lock(&mm_lock);
    for (int w = 0; w < MM_WAYS; w++)
        if (mm_cache[s][w] && memcmp(&mm_cache[s][w]->key, k, sizeof *k) == 0) {
            hit = mm_cache[s][w];
            __atomic_add_fetch(&hit->refs, 1, __ATOMIC_ACQ_REL);
            break;
        }
    pthread_mutex_unlock(&mm_lock);
    return hit;
}

static void mm_add(entry *e) {
    unsigned s = mm_set(&e->key);
    __atomic_add_fetch(&e->refs, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_lock(&mm_lock);
    entry *old = mm_cache[s][mm_next[s]];
    mm_cache[s][mm_next[s]] = e;
    mm_next[s] = (mm_next[s] + 1) % MM_WAYS;
    pthread_mutex_unlock(&mm_lock);
    if (old)
        entry_release(old);
}

mp_status mp_dnnl_mm_get(mp_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, int64_t ldb, int64_t ldc,
                         int scaled, int bias, double beta, mp_dnnl_mm **out, int *unimpl) {
    *out = NULL;
    *unimpl = 1;
    if (!mp_dnnl_mm_available())
        return MP_OK;
    key_t_ k;
    memset(&k, 0, sizeof k);
    k.fam = FAM_MATMUL;
    k.kind = (scaled ? 1 : 0) | (bias ? 2 : 0) | 4; /* bit 2: made and run on one thread */
    k.dt = (int)dt;
    k.win.n = M, k.win.c = N, k.win.h = K, k.win.w = ta != 0, k.win.oc = tb != 0;
    k.win.kh = !tb && ldb != N ? ldb : 0;
    k.win.kw = ldc != N ? ldc : 0;
    memcpy(&k.win.pt, &beta, sizeof beta);
    dnnl_stream_t st_;
    MP_TRY(get_stream(&st_));
    *unimpl = 0;
    entry *e = mm_find(&k);
    if (!e) {
        int prev = one_thread_begin();
        mp_status st = build_entry(&k, &e, unimpl);
        one_thread_end(prev);
        if (st != MP_OK || *unimpl)
            return st;
        mm_add(e);
    }
    mp_dnnl_mm *h = malloc(sizeof *h);
    if (!h) {
        entry_release(e);
        return mp_error_set(MP_ERR_MEMORY, "out of host memory for a matmul handle");
    }
    h->e = e;
    *out = h;
    return MP_OK;
}

mp_status mp_dnnl_mm_run(mp_dnnl_mm *h, float alpha, const void *A, const void *B, const void *bias, void *C) {
    int prev = one_thread_begin();
    mp_status st = run_matmul(h->e, alpha, A, B, bias, C);
    one_thread_end(prev);
    return st;
}

void mp_dnnl_mm_release(mp_dnnl_mm *h) {
    if (h) {
        entry_release(h->e);
        free(h);
    }
}

mp_status mp_dnnl_gemm(mp_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha, const void *A,
                       const void *B, double beta, void *C, int *unimpl) {
    return dnnl_gemm_(dt, ta, tb, M, N, K, alpha, A, B, NULL, beta, C, unimpl);
}

mp_status mp_dnnl_gemm_bias(mp_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, const void *A, const void *B,
                            const void *bias, void *C, int *unimpl) {
    return dnnl_gemm_(dt, ta, tb, M, N, K, 1.0, A, B, bias, 0.0, C, unimpl);
}

/* ------------------------------------------------------------------ dtype routes */

static void operand_sizes(int fam, int kind, const mp_window *w, int64_t n[3]) {
    int64_t x = w->n * w->c * w->h * w->w, y = w->n * w->oc * w->oh * w->ow;
    if (fam == FAM_CONV) {
        int64_t f = w->kh * w->kw * (w->c / w->groups) * w->oc;
        if (kind == MP_CONV_FWD)
            n[0] = x, n[1] = f, n[2] = y;
        else if (kind == MP_CONV_BWD_DATA)
            n[0] = f, n[1] = y, n[2] = x;
        else
            n[0] = x, n[1] = y, n[2] = f;
    } else {
        n[0] = kind == MP_POOL_AVG_BWD ? 0 : x;
        n[1] = kind == MP_POOL_MAX_BWD || kind == MP_POOL_AVG_BWD ? y : kind == MP_POOL_MAX_GRADGRAD ? x : 0;
        n[2] = kind == MP_POOL_MAX || kind == MP_POOL_AVG || kind == MP_POOL_MAX_GRADGRAD ? y : x;
    }
}

static int force_fallback; /* mp_dnnl_force_reference: tests run the loop kernels */

/* max pooling's start value in dt (TensorFlow's lowest; bfloat16's measured -inf) */
static double pool_lowest(mp_dtype dt) {
    return dt == MP_F32 ? -FLT_MAX : dt == MP_F16 ? -65504.0 : dt == MP_BF16 ? -INFINITY : -DBL_MAX;
}

/* oneDNN in dtype dt; *unimpl when it has no implementation */
static mp_status native_post(int fam, int kind, int post, mp_dtype dt, const mp_window *w, const void *a,
                             const void *b, const void *bias, void *out, int *unimpl) {
    key_t_ k;
    memset(&k, 0, sizeof k);
    k.fam = fam;
    k.kind = kind;
    k.dt = (int)dt;
    k.post = post;
    k.win = *w;
    entry *e;
    MP_TRY(get_entry(&k, &e, unimpl));
    if (*unimpl)
        return MP_OK;
    mp_status st = fam == FAM_CONV ? run_conv(e, a, b, bias, out) : run_pool(e, a, b, out, NULL);
    entry_release(e);
    return st;
}

static mp_status native(int fam, int kind, mp_dtype dt, const mp_window *w, const void *a, const void *b, void *out,
                        int *unimpl) {
    return native_post(fam, kind, 0, dt, w, a, b, NULL, out, unimpl);
}

/* Widen the operands to wdt, compute there (oneDNN for float32, loops for float64), round
 * the result once into dt. */
static mp_status widened(int fam, int kind, mp_dtype dt, mp_dtype wdt, const mp_window *w, const void *a, const void *b,
                         void *out, int *unimpl) {
    int64_t n[3];
    operand_sizes(fam, kind, w, n);
    size_t es = mp_dtype_size(wdt);
    void *buf[3] = {NULL, NULL, NULL};
    const void *src[2] = {a, b};
    mp_status st = MP_OK;
    for (int i = 0; i < 3; i++) {
        if (n[i] == 0)
            continue;
        buf[i] = mp_cpu_scratch_alloc((size_t)n[i] * es);
        if (!buf[i]) {
            st = mp_error_set(MP_ERR_MEMORY, "out of memory widening a %s operand", mp_dtype_name(dt));
            goto out;
        }
        if (i < 2 && (st = mp_cast_host(src[i], dt, buf[i], wdt, n[i])) != MP_OK)
            goto out;
    }
    *unimpl = 0;
    if (wdt == MP_F64)
        st = fam == FAM_CONV ? mp_ref_conv_f64(kind, w, buf[0], buf[1], buf[2])
                             : mp_ref_pool_f64(kind, w, buf[0], buf[1], buf[2], pool_lowest(dt));
    else
        st = native(fam, kind, wdt, w, buf[0], buf[1], buf[2], unimpl);
    if (st == MP_OK && !*unimpl && fam == FAM_POOL && kind == MP_POOL_MAX && wdt == MP_F32 && dt == MP_F16) {
        /* a window of NaNs: float32's lowest would round to -inf; TensorFlow gives float16's */
        float *y = buf[2];
        for (int64_t i = 0; i < n[2]; i++)
            if (y[i] == -FLT_MAX)
                y[i] = -65504.0f;
    }
    if (st == MP_OK && !*unimpl)
        st = mp_cast_host(buf[2], wdt, out, dt, n[2]);
out:
    for (int i = 0; i < 3; i++)
        if (buf[i])
            mp_cpu_scratch_free(buf[i], (size_t)n[i] * es);
    return st;
}

static mp_status route(int fam, int kind, mp_dtype dt, const mp_window *w, const void *a, const void *b, void *out) {
    int unimpl = 1;
    if (dt == MP_F64)
        return fam == FAM_CONV ? mp_ref_conv_f64(kind, w, a, b, out)
                               : mp_ref_pool_f64(kind, w, a, b, out, pool_lowest(dt));
    if (dt != MP_F32 && dt != MP_F16 && dt != MP_BF16)
        return mp_error_set(MP_ERR_DTYPE, "no %s kernel for %s", fam == FAM_CONV ? "convolution" : "pooling",
                            mp_dtype_name(dt));
    /* oneDNN's 16-bit pooling backward sums overlapping windows in 16 bits: widened, so
     * that the gradient is accumulated in float32 and rounded once */
    int overlap = w->kh > w->sh || w->kw > w->sw;
    int widen_first =
        fam == FAM_POOL && dt != MP_F32 && overlap && (kind == MP_POOL_MAX_BWD || kind == MP_POOL_AVG_BWD);
    if (fam == FAM_POOL && kind == MP_POOL_MAX_GRADGRAD) /* no oneDNN primitive: a gather, exact in float64 */
        unimpl = 1;
    else if (fam == FAM_POOL && kind == MP_POOL_MAX_BWD && mp_ref_pool_first_nan(dt, w, a))
        unimpl = 1; /* TensorFlow's MaxPoolGrad gives a window's first NaN the gradient; oneDNN skips it */
    else if (!__atomic_load_n(&force_fallback, __ATOMIC_RELAXED)) {
        if (!widen_first)
            MP_TRY(native(fam, kind, dt, w, a, b, out, &unimpl));
        if (unimpl && dt != MP_F32) /* e.g. float16 on a CPU without AVX512-FP16 */
            MP_TRY(widened(fam, kind, dt, MP_F32, w, a, b, out, &unimpl));
    }
    if (unimpl) /* shapes oneDNN refuses: the loop kernels, rounded once */
        MP_TRY(widened(fam, kind, dt, MP_F64, w, a, b, out, &unimpl));
    return MP_OK;
}

mp_status mp_cpu_conv(mp_device dev, mp_conv_kind k, mp_dtype dt, const mp_window *win, const void *a, const void *b,
                      void *out) {
    (void)dev;
    return route(FAM_CONV, (int)k, dt, win, a, b, out);
}

mp_status mp_cpu_pool(mp_device dev, mp_pool_kind k, mp_dtype dt, const mp_window *win, const void *a, const void *b,
                      void *out) {
    (void)dev;
    return route(FAM_POOL, (int)k, dt, win, a, b, out);
}

/* The pool_workspace slot: max pooling run once for a gradient, its argmax workspace kept
 * by the caller (the op layer puts it behind MaxPool's output) and handed to MaxPoolGrad.
 * Only where the backward would run oneDNN natively on the same descriptors: float32,
 * bfloat16 (float16 where oneDNN implements it), not the 16-bit overlapping windows the
 * backward widens, not under dnnl_force_reference. Values are the pool slot's bit for bit:
 * the same forward (forward_training computes the same maxima, NaN rules included) and the
 * same backward primitive that pool's MAX_BWD runs after its own forward_training. */
static int ws_route(mp_dtype dt, const mp_window *w) {
    if (dt != MP_F32 && dt != MP_BF16 && dt != MP_F16)
        return 0;
    if (dt != MP_F32 && (w->kh > w->sh || w->kw > w->sw))
        return 0;
    return !__atomic_load_n(&force_fallback, __ATOMIC_RELAXED);
}

mp_status mp_cpu_pool_workspace(mp_device dev, mp_pool_kind kind, mp_dtype dt, const mp_window *w, const void *a,
                                const void *b, void *out, void *ws, size_t *ws_bytes) {
    (void)dev;
    key_t_ k;
    memset(&k, 0, sizeof k);
    k.fam = FAM_POOL;
    k.dt = (int)dt;
    k.win = *w;
    entry *e = NULL;
    int unimpl = 1;
    if (!ws) { /* the size query */
        *ws_bytes = 0;
        if (kind != MP_POOL_MAX || !ws_route(dt, w))
            return MP_OK;
        k.kind = MP_POOL_MAX, k.post = 1;
        MP_TRY(get_entry(&k, &e, &unimpl));
        if (unimpl)
            return MP_OK;
        *ws_bytes = e->ws;
        entry_release(e);
        return MP_OK;
    }
    if (kind != MP_POOL_MAX && kind != MP_POOL_MAX_BWD)
        return mp_error_set(MP_ERR_INTERNAL, "pool_workspace: pooling kind %d keeps no workspace", (int)kind);
    if (kind == MP_POOL_MAX_BWD && mp_ref_pool_first_nan(dt, w, a)) /* TensorFlow's leading-NaN rule */
        return widened(FAM_POOL, MP_POOL_MAX_BWD, dt, MP_F64, w, a, b, out, &unimpl);
    k.kind = (int)kind, k.post = kind == MP_POOL_MAX;
    MP_TRY(get_entry(&k, &e, &unimpl));
    if (unimpl || e->ws != *ws_bytes) {
        if (e)
            entry_release(e);
        return mp_error_set(MP_ERR_INTERNAL, "pool_workspace: no kept workspace of %zu bytes for this window",
                            *ws_bytes);
    }
    mp_status st = run_pool(e, a, b, out, ws);
    entry_release(e);
    return st;
}

/* y += bias per output channel, then ReLU when act; y (n, oc, oh, ow) in NCHW or NHWC of dt.
 * The loop route's tail: computed in float32 (float64 for float64) and rounded once more. */
typedef struct {
    mp_dtype dt;
    const mp_window *w;
    const void *bias;
    int act;
    void *y;
    int64_t hw;
} bias_ctx;

static void bias_rows(void *vctx, int64_t r0, int64_t r1) {
    const bias_ctx *c = vctx;
    const mp_window *w = c->w;
    /* a row: one pixel's oc channels (NHWC) or one channel's hw pixels (NCHW) */
    int64_t len = w->nchw ? c->hw : w->oc;
    size_t es = mp_dtype_size(c->dt);
    float buf[MP_BLOCK], bb[MP_BLOCK];
    for (int64_t r = r0; r < r1; r++) {
        char *y = (char *)c->y + r * len * (int64_t)es;
        if (c->dt == MP_F64) {
            const double *b = c->bias;
            double *yd = (double *)y;
            for (int64_t i = 0; i < len; i++) {
                double v = yd[i] + b[w->nchw ? r % w->oc : i];
                yd[i] = c->act && !(v > 0) && v == v ? 0.0 : v;
            }
            continue;
        }
        for (int64_t i0 = 0; i0 < len; i0 += MP_BLOCK) {
            int64_t m = len - i0 < MP_BLOCK ? len - i0 : MP_BLOCK;
            mp_load_f32(c->dt, y + i0 * (int64_t)es, buf, m);
            if (w->nchw) {
                mp_load_f32(c->dt, (const char *)c->bias + (r % w->oc) * (int64_t)es, bb, 1);
                for (int64_t i = 0; i < m; i++)
                    buf[i] += bb[0];
            } else {
                mp_load_f32(c->dt, (const char *)c->bias + i0 * (int64_t)es, bb, m);
                for (int64_t i = 0; i < m; i++)
                    buf[i] += bb[i];
            }
            if (c->act)
                for (int64_t i = 0; i < m; i++)
                    buf[i] = !(buf[i] > 0) && buf[i] == buf[i] ? 0.0f : buf[i];
            mp_store_f32(c->dt, buf, y + i0 * (int64_t)es, m);
        }
    }
}

/* Convolution forward with bias and ReLU as oneDNN post-ops: accumulated, biased and
 * activated in float32 and rounded once. float16 without units: widened to float32 and
 * fused there. float64 and shapes oneDNN refuses: the plain route, then one bias pass. */
mp_status mp_cpu_conv_bias_act(mp_device dev, mp_dtype dt, const mp_window *w, const void *x, const void *f,
                               const void *bias, int act, void *y) {
    (void)dev;
    int unimpl = 1, post = act ? 2 : 1;
    if ((dt == MP_F32 || dt == MP_BF16 || dt == MP_F16) && !__atomic_load_n(&force_fallback, __ATOMIC_RELAXED)) {
        MP_TRY(native_post(FAM_CONV, MP_CONV_FWD, post, dt, w, x, f, bias, y, &unimpl));
        if (unimpl && dt != MP_F32) { /* widened to float32, fused there, rounded once */
            int64_t n[3];
            operand_sizes(FAM_CONV, MP_CONV_FWD, w, n);
            int64_t nb = w->oc, all = n[0] + n[1] + n[2] + nb;
            float *buf = mp_cpu_scratch_alloc((size_t)all * sizeof(float));
            if (!buf)
                return mp_error_set(MP_ERR_MEMORY, "out of memory widening a %s convolution", mp_dtype_name(dt));
            float *wx = buf, *wf = wx + n[0], *wy = wf + n[1], *wb = wy + n[2];
            mp_status st = mp_cast_host(x, dt, wx, MP_F32, n[0]);
            if (st == MP_OK)
                st = mp_cast_host(f, dt, wf, MP_F32, n[1]);
            if (st == MP_OK)
                st = mp_cast_host(bias, dt, wb, MP_F32, nb);
            if (st == MP_OK)
                st = native_post(FAM_CONV, MP_CONV_FWD, post, MP_F32, w, wx, wf, wb, wy, &unimpl);
            if (st == MP_OK && !unimpl)
                st = mp_cast_host(wy, MP_F32, y, dt, n[2]);
            mp_cpu_scratch_free(buf, (size_t)all * sizeof(float));
            MP_TRY(st);
        }
        if (!unimpl)
            return MP_OK;
    }
    MP_TRY(route(FAM_CONV, MP_CONV_FWD, dt, w, x, f, y));
    bias_ctx c = {dt, w, bias, act, y, w->oh * w->ow};
    int64_t rows = w->nchw ? w->n * w->oc : w->n * w->oh * w->ow;
    int64_t len = w->nchw ? c.hw : w->oc;
    mp_parallel_for(rows, len >= MP_GRAIN ? 1 : MP_GRAIN / (len ? len : 1), bias_rows, &c);
    return MP_OK;
}

int mp_dnnl_force_reference(int on) {
    return __atomic_exchange_n(&force_fallback, on != 0, __ATOMIC_RELAXED);
}

const char *mp_dnnl_info(void) {
    static char buf[128];
    const dnnl_version_t *v = dnnl_version();
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    const char *name = isa == dnnl_cpu_isa_avx512_core_amx_fp16 ? "avx512_core_amx_fp16"
                       : isa == dnnl_cpu_isa_avx512_core_amx    ? "avx512_core_amx"
                       : isa == dnnl_cpu_isa_avx512_core_fp16   ? "avx512_core_fp16"
                       : isa == dnnl_cpu_isa_avx512_core_bf16   ? "avx512_core_bf16"
                       : isa == dnnl_cpu_isa_avx512_core        ? "avx512_core"
                       : isa == dnnl_cpu_isa_avx2_vnni_2        ? "avx2_vnni_2"
                       : isa == dnnl_cpu_isa_avx2               ? "avx2"
                                                                : "other";
    snprintf(buf, sizeof buf, "oneDNN %d.%d.%d (%s)", v->major, v->minor, v->patch, name);
    return buf;
}
