/* ops_window.c — the op layer of convolution, pooling and batch normalization.
 * Owns their validation with TensorFlow's messages, output-size and padding arithmetic
 * (VALID, SAME with the odd pixel after, explicit), and the calls into the backend's
 * conv/pool slots. It must not touch elements nor test which device it runs on. */
#include <stdio.h>
#include <string.h>

#include "ops_internal.h"
#include "tape.h"

#define NAME(op) (mp_op_get_info(op)->name)

static const char *shp(const int64_t *s, int n, char *buf, size_t cap) {
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, i ? ",%lld" : "%lld", (long long)s[i]);
    if (used < cap)
        snprintf(buf + used, cap - used, "]");
    return buf;
}

static int is_conv(mp_op op) {
    return op == MP_OP_CONV2D || op == MP_OP_CONV2D_BACKPROP_INPUT || op == MP_OP_CONV2D_BACKPROP_FILTER ||
           op == MP_OP_CONV2D_BIAS_ACT;
}

/* One spatial dimension: output size and padding (before, after). */
static mp_status dim_out(mp_op op, const char *which, int64_t in, int64_t k, int64_t s, int64_t d, int mode, int64_t pa,
                         int64_t pb, int64_t *out, int64_t *before, int64_t *after) {
    int64_t eff = (k - 1) * d + 1;
    if (mode == 1) { /* SAME */
        int64_t o = (in + s - 1) / s;
        int64_t total = (o - 1) * s + eff - in;
        if (total < 0)
            total = 0;
        *out = o, *before = total / 2, *after = total - total / 2;
        return MP_OK;
    }
    if (mode == 2) {
        if (pa < 0 || pb < 0)
            return mp_error_set(MP_ERR_VALUE, "%s: explicit paddings must be non-negative, got %lld and %lld (%s)",
                                NAME(op), (long long)pa, (long long)pb, which);
    } else {
        pa = pb = 0;
    }
    /* TensorFlow's GetWindowedOutputSize: (in + pads - eff + s) / s, truncated; an input
     * short of the window by less than a stride gives an empty output, not an error */
    int64_t o = (in + pa + pb - eff + s) / s;
    if (o < 0)
        return mp_error_set(MP_ERR_SHAPE,
                            "%s: Computed output size would be negative: %lld [input_size: %lld, "
                            "effective_filter_size: %lld, stride: %lld] (%s). hint: the %s is larger than the "
                            "input; use padding='SAME' or a smaller one",
                            NAME(op), (long long)o, (long long)in, (long long)eff, (long long)s, which,
                            is_conv(op) ? "kernel" : "pooling window");
    *out = o, *before = pa, *after = pb;
    return MP_OK;
}

/* Conv2D + bias (+ ReLU): the backend's fused slot, or conv, add and relu through the backend
 * where it has none (or the convolution sums over nothing: then only the bias remains). */
static mp_status conv_bias_act(const mp_backend *be, mp_device dev, mp_dtype dt, const mp_window *w,
                               mp_tensor *const *in, int act, int empty_in, mp_tensor *r) {
    void *y = mp_tensor_data(r);
    const void *bias = mp_tensor_data(in[2]);
    if (!empty_in && be->conv_bias_act)
        return BE_CALL(be, conv_bias_act, dev, dt, w, mp_tensor_data(in[0]), mp_tensor_data(in[1]), bias, act, y);
    if (empty_in)
        MP_TRY(BE_CALL(be, fill, dev, y, dt, r->numel, 0.0));
    else
        MP_TRY(BE_CALL(be, conv, dev, MP_CONV_FWD, dt, w, mp_tensor_data(in[0]), mp_tensor_data(in[1]), y));
    mp_bcast bc;
    memset(&bc, 0, sizeof bc);
    int64_t hw = w->oh * w->ow;
    if (w->nchw) { /* (n, oc, hw) + (oc, 1) */
        bc.ndim = 3;
        bc.shape[0] = w->n, bc.shape[1] = w->oc, bc.shape[2] = hw;
        bc.stride[0][0] = w->oc * hw, bc.stride[0][1] = hw, bc.stride[0][2] = 1;
        bc.stride[1][1] = 1;
    } else { /* (n * oh * ow, oc) + (oc) */
        bc.ndim = 2;
        bc.shape[0] = w->n * hw, bc.shape[1] = w->oc;
        bc.stride[0][0] = w->oc;
        bc.stride[0][1] = bc.stride[1][1] = 1;
    }
    bc.numel = r->numel;
    MP_TRY(BE_CALL(be, binary, dev, MP_BINARY_ADD, dt, &bc, y, bias, y, 0.0));
    if (act)
        MP_TRY(BE_CALL(be, unary, dev, MP_UNARY_RELU, dt, y, y, r->numel, 0.0));
    return MP_OK;
}

/* ------------------------------------------------ max pooling's kept workspace
 * MaxPool run where a gradient will be taken (a tape watches x, or a traced graph's
 * MaxPoolGrad reads the node: attr i2 = 1, graph.c) asks the backend's pool_workspace slot
 * for its argmax workspace and keeps it behind y in y's own storage (freed with y):
 * [y, padded to 64 bytes][header, 64-padded][workspace]. MaxPoolGrad(x, y, dy) uses it
 * only when the header names this x and this y (tensor ids are unique and tensors
 * immutable, so the positions are x's), the dtype and the window; otherwise the pool slot
 * finds the maxima again. The header is written and read through the copy slots. */
typedef struct {
    uint64_t magic;
    int64_t x_id, y_id, dtype;
    uint64_t ws_bytes;
    mp_window win;
} ws_header;

static int64_t ws_uses;
static int ws_keep = 1;
int64_t mp_pool_workspace_uses(void) { return __atomic_load_n(&ws_uses, __ATOMIC_RELAXED); }
int mp_pool_workspace_keep(int on) { return __atomic_exchange_n(&ws_keep, on != 0, __ATOMIC_RELAXED); }

#define WS_MAGIC 0x6d7030776b737031ull
#define WS_ROUND(n) (((size_t)(n) + 63) / 64 * 64)

static mp_status pool_ws_bytes(const mp_backend *be, mp_device dev, mp_dtype dt, const mp_window *w, size_t *n) {
    *n = 0;
    if (mp_ops_skip_kernels || !be->pool_workspace)
        return MP_OK;
    return MP_BACKEND_CALL(be, pool_workspace, dev, MP_POOL_MAX, dt, w, NULL, NULL, NULL, NULL, n);
}

static mp_status max_pool_kept(const mp_backend *be, mp_device dev, mp_dtype dt, const mp_window *w, mp_tensor *x,
                               const int64_t *ys, size_t ws_bytes, mp_tensor **out) {
    size_t yb = WS_ROUND((size_t)(ys[0] * ys[1] * ys[2] * ys[3]) * mp_dtype_size(dt)), hb = WS_ROUND(sizeof(ws_header));
    int64_t total = (int64_t)(yb + hb + ws_bytes);
    mp_tensor *base, *y;
    MP_TRY(mp_tensor_new(MP_U8, 1, &total, dev, &base));
    mp_status st = mp_tensor_view(base, 0, dt, 4, ys, &y);
    mp_tensor_decref(base);
    MP_TRY(st);
    char *p = mp_tensor_data(y);
    st = MP_BACKEND_CALL(be, pool_workspace, dev, MP_POOL_MAX, dt, w, mp_tensor_data(x), NULL, p, p + yb + hb,
                         &ws_bytes);
    ws_header h;
    memset(&h, 0, sizeof h);
    h.magic = WS_MAGIC, h.x_id = x->id, h.y_id = y->id, h.dtype = (int64_t)dt, h.ws_bytes = ws_bytes, h.win = *w;
    if (st == MP_OK)
        st = MP_BACKEND_CALL(be, copy_h2d, dev, p + yb, &h, sizeof h);
    if (st != MP_OK) {
        mp_tensor_decref(y);
        return st;
    }
    *out = y;
    return MP_OK;
}

/* *ws: the workspace behind y when MaxPool kept one for this x, window and dtype, else NULL */
static mp_status kept_ws(const mp_backend *be, mp_device dev, mp_dtype dt, const mp_window *w, const mp_tensor *x,
                         const mp_tensor *y, size_t *ws_bytes, void **ws) {
    *ws = NULL;
    MP_TRY(pool_ws_bytes(be, dev, dt, w, ws_bytes));
    size_t yb = WS_ROUND(mp_tensor_nbytes(y)), hb = WS_ROUND(sizeof(ws_header));
    if (!*ws_bytes || y->offset != 0 || y->storage->deleter || y->storage->nbytes != yb + hb + *ws_bytes)
        return MP_OK;
    ws_header h;
    char *p = mp_tensor_data(y);
    MP_TRY(MP_BACKEND_CALL(be, copy_d2h, dev, &h, p + yb, sizeof h));
    if (h.magic == WS_MAGIC && h.x_id == x->id && h.y_id == y->id && h.dtype == (int64_t)dt &&
        h.ws_bytes == *ws_bytes && memcmp(&h.win, w, sizeof *w) == 0)
        *ws = p + yb + hb;
    return MP_OK;
}

/* The input, filter and output shapes of op, from its tensors and attrs, as NHWC/NCHW dims. */
mp_status mp_run_window(mp_op op, mp_tensor *const *in, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    char b0[128], b1[128];
    int nchw = at->i0 != 0, mode = (int)at->i1;
    if (mode < 0 || mode > 2)
        return mp_error_set(MP_ERR_VALUE, "%s: unknown padding code %d", NAME(op), mode);
    /* which tensors are given */
    const int64_t *xs = NULL, *fs = NULL;
    mp_tensor *dy = NULL, *first = in[0];
    int64_t given_x[4], given_f[4];
    switch (op) {
    case MP_OP_CONV2D:
    case MP_OP_CONV2D_BIAS_ACT: xs = in[0]->shape, fs = in[1]->shape; break;
    case MP_OP_CONV2D_BACKPROP_INPUT:
        memcpy(given_x, at->ints4, sizeof given_x), xs = given_x, fs = in[0]->shape, dy = in[1];
        break;
    case MP_OP_CONV2D_BACKPROP_FILTER:
        xs = in[0]->shape, memcpy(given_f, at->ints4, sizeof given_f), fs = given_f, dy = in[1];
        break;
    case MP_OP_MAX_POOL:
    case MP_OP_AVG_POOL: xs = in[0]->shape; break;
    case MP_OP_MAX_POOL_GRAD: xs = in[0]->shape, dy = in[2]; break;
    case MP_OP_MAX_POOL_GRAD_GRAD:
        xs = in[0]->shape;
        if (in[1]->ndim != 4 || memcmp(in[1]->shape, in[0]->shape, 4 * sizeof(int64_t)) != 0)
            return mp_error_set(MP_ERR_SHAPE, "MaxPoolGradGrad: the gradient %s must have the input's shape %s",
                                shp(in[1]->shape, in[1]->ndim, b0, sizeof b0),
                                shp(in[0]->shape, in[0]->ndim, b1, sizeof b1));
        break;
    case MP_OP_AVG_POOL_GRAD: memcpy(given_x, at->ints4, sizeof given_x), xs = given_x, dy = in[0]; break;
    default: return mp_error_set(MP_ERR_INTERNAL, "%s is not a window op", NAME(op));
    }
    int n_in = mp_op_get_info(op)->n_inputs;
    mp_dtype dt = first->dtype;
    for (int i = 0; i < n_in; i++) {
        if (!mp_dtype_is_floating(in[i]->dtype))
            return mp_error_set(MP_ERR_DTYPE,
                                "%s does not support %s tensors; it needs float16, bfloat16, float32 or float64. "
                                "hint: cast first, e.g. mixprec.cast(x, 'float32')",
                                NAME(op), mp_dtype_name(in[i]->dtype));
        if (in[i]->dtype != dt)
            return mp_error_set(MP_ERR_DTYPE,
                                "cannot compute %s as input #%d (zero-based) was expected to be a %s tensor but is "
                                "a %s tensor. hint: cast one side, e.g. mixprec.cast(filters, x.dtype)",
                                NAME(op), i, mp_dtype_name(dt), mp_dtype_name(in[i]->dtype));
    }
    int fwd = op == MP_OP_CONV2D || op == MP_OP_CONV2D_BIAS_ACT;
    if ((fwd || op == MP_OP_CONV2D_BACKPROP_FILTER || op == MP_OP_MAX_POOL || op == MP_OP_AVG_POOL ||
         op == MP_OP_MAX_POOL_GRAD || op == MP_OP_MAX_POOL_GRAD_GRAD) &&
        in[0]->ndim != 4)
        return mp_error_set(MP_ERR_VALUE, "%s: input must be 4-dimensional%s (batch, %s), got rank %d", NAME(op),
                            shp(in[0]->shape, in[0]->ndim, b0, sizeof b0),
                            nchw ? "channels, height, width" : "height, width, channels", in[0]->ndim);
    if ((fwd && in[1]->ndim != 4) || (op == MP_OP_CONV2D_BACKPROP_INPUT && in[0]->ndim != 4))
        return mp_error_set(MP_ERR_VALUE,
                            "%s: filter must be 4-dimensional (height, width, in_channels, out_channels), got %s",
                            NAME(op),
                            fwd ? shp(in[1]->shape, in[1]->ndim, b0, sizeof b0)
                                               : shp(in[0]->shape, in[0]->ndim, b0, sizeof b0));
    if (dy && dy->ndim != 4)
        return mp_error_set(MP_ERR_VALUE, "%s: the output gradient must be 4-dimensional, got %s", NAME(op),
                            shp(dy->shape, dy->ndim, b0, sizeof b0));
    for (int i = 0; i < 4; i++)
        if (xs[i] < 0 || (fs && fs[i] < 0))
            return mp_error_set(MP_ERR_VALUE, "%s: negative dimension in a shape", NAME(op));
    mp_window w;
    memset(&w, 0, sizeof w);
    w.nchw = nchw;
    w.n = xs[0];
    w.c = nchw ? xs[1] : xs[3];
    w.h = nchw ? xs[2] : xs[1];
    w.w = nchw ? xs[3] : xs[2];
    w.sh = at->ints[0], w.sw = at->ints[1];
    if (w.sh < 1 || w.sw < 1)
        return mp_error_set(MP_ERR_VALUE, "%s: strides must be positive, got [%lld, %lld]", NAME(op), (long long)w.sh,
                            (long long)w.sw);
    if (fs) {
        w.kh = fs[0], w.kw = fs[1], w.oc = fs[3];
        w.dh = at->ints[2], w.dw = at->ints[3];
        if (w.dh < 1 || w.dw < 1)
            return mp_error_set(MP_ERR_VALUE, "%s: dilations must be positive, got [%lld, %lld]", NAME(op),
                                (long long)w.dh, (long long)w.dw);
        if (fs[2] < 1 || w.kh < 1 || w.kw < 1)
            return mp_error_set(MP_ERR_VALUE, "%s: the filter %s has a zero dimension", NAME(op),
                                shp(fs, 4, b0, sizeof b0));
        if (w.c % fs[2] != 0)
            return mp_error_set(MP_ERR_SHAPE,
                                "%s: Depth of input (%lld) is not a multiple of input depth of filter (%lld). "
                                "hint: the filter's third dimension is the input's channels (divided by the "
                                "groups); is data_format right?",
                                NAME(op), (long long)w.c, (long long)fs[2]);
        w.groups = w.c / fs[2];
        if (w.groups < 1 || w.oc % w.groups != 0)
            return mp_error_set(MP_ERR_SHAPE,
                                "%s: Depth of output (%lld) is not a multiple of the number of groups (%lld)", NAME(op),
                                (long long)w.oc, (long long)w.groups);
    } else {
        w.kh = at->ints[2], w.kw = at->ints[3], w.oc = w.c, w.dh = w.dw = 1, w.groups = 1;
        if (w.kh < 1 || w.kw < 1)
            return mp_error_set(MP_ERR_VALUE, "%s: the pooling window must be positive, got [%lld, %lld]", NAME(op),
                                (long long)w.kh, (long long)w.kw);
    }
    MP_TRY(dim_out(op, "height", w.h, w.kh, w.sh, w.dh, mode, at->ints2[0], at->ints2[1], &w.oh, &w.pt, &w.pb));
    MP_TRY(dim_out(op, "width", w.w, w.kw, w.sw, w.dw, mode, at->ints2[2], at->ints2[3], &w.ow, &w.pl, &w.pr));
    if (op == MP_OP_CONV2D_BIAS_ACT) {
        if (in[2]->ndim != 1 || in[2]->shape[0] != w.oc)
            return mp_error_set(MP_ERR_SHAPE,
                                "%s: the bias must have shape [%lld] (the filter's output channels), got %s",
                                NAME(op), (long long)w.oc, shp(in[2]->shape, in[2]->ndim, b0, sizeof b0));
        if (at->i2 != 0 && at->i2 != 1)
            return mp_error_set(MP_ERR_VALUE, "%s: unknown activation code %lld (0 none, 1 relu)", NAME(op),
                                (long long)at->i2);
    }
    int64_t ys[4] = {w.n, nchw ? w.oc : w.oh, nchw ? w.oh : w.ow, nchw ? w.ow : w.oc};
    if (dy && memcmp(dy->shape, ys, sizeof ys) != 0)
        return mp_error_set(MP_ERR_SHAPE, "%s: the output gradient has shape %s but the forward's output is %s",
                            NAME(op), shp(dy->shape, 4, b0, sizeof b0), shp(ys, 4, b1, sizeof b1));
    if (op == MP_OP_MAX_POOL_GRAD && at->i2 != 0 && at->i2 != 1)
        return mp_error_set(MP_ERR_VALUE, "%s: unknown activation code %lld (0 none, 1 relu)", NAME(op),
                            (long long)at->i2);
    if (op == MP_OP_MAX_POOL_GRAD && (in[1]->ndim != 4 || memcmp(in[1]->shape, ys, sizeof ys) != 0))
        return mp_error_set(MP_ERR_SHAPE, "%s: orig_output has shape %s but the forward's output is %s", NAME(op),
                            shp(in[1]->shape, in[1]->ndim, b0, sizeof b0), shp(ys, 4, b1, sizeof b1));
    const int64_t *os =
        fwd || op == MP_OP_MAX_POOL || op == MP_OP_AVG_POOL || op == MP_OP_MAX_POOL_GRAD_GRAD ? ys
        : op == MP_OP_CONV2D_BACKPROP_FILTER                                                                 ? fs
                                                                                                             : xs;
    mp_tensor *r;
    mp_device dev = mp_tensor_device(first);
    mp_status st = MP_OK;
    int empty_in = 0;
    for (int i = 0; i < n_in; i++)
        empty_in |= in[i]->numel == 0;
    int64_t y_numel = ys[0] * ys[1] * ys[2] * ys[3];
    size_t ws_bytes = 0;
    void *ws = NULL;
    /* attr i2 = 2 (graph.c's plan): the only gradient is a MaxPoolGrad with ReLU's, which needs
     * no workspace where the backend's max_pool_grad_relu takes these arguments (its query) */
    int fused_grad_only = 0;
    if (op == MP_OP_MAX_POOL && at->i2 == 2 && be->max_pool_grad_relu && !mp_tape_would_record(1, in))
        MP_TRY(BE_CALL(be, max_pool_grad_relu, dev, dt, &w, NULL, NULL, NULL, &fused_grad_only));
    if (op == MP_OP_MAX_POOL && !empty_in && y_numel > 0 && __atomic_load_n(&ws_keep, __ATOMIC_RELAXED) &&
        !fused_grad_only && (at->i2 == 1 || at->i2 == 2 || mp_tape_would_record(1, in))) {
        MP_TRY(pool_ws_bytes(be, dev, dt, &w, &ws_bytes));
        if (ws_bytes)
            return max_pool_kept(be, dev, dt, &w, in[0], ys, ws_bytes, out);
    }
    /* MaxPoolGrad with ReLU's gradient (attr i2 = 1, the remapper's fusion, graph_fuse.c):
     * the backend's one pass when it has one for these arguments, else the two ops below */
    int relu_grad = op == MP_OP_MAX_POOL_GRAD && at->i2 == 1, done = 0;
    if (relu_grad && !empty_in && dy->numel > 0 && be->max_pool_grad_relu) {
        MP_TRY(mp_tensor_new(dt, 4, os, dev, &r));
        st = BE_CALL(be, max_pool_grad_relu, dev, dt, &w, mp_tensor_data(in[0]), mp_tensor_data(dy),
                     mp_tensor_data(r), &done);
        if (st != MP_OK || done) {
            if (st != MP_OK)
                mp_tensor_decref(r);
            else
                *out = r;
            return st;
        }
        mp_tensor_decref(r);
    }
    if (op == MP_OP_MAX_POOL_GRAD && !empty_in && dy->numel > 0)
        MP_TRY(kept_ws(be, dev, dt, &w, in[0], in[1], &ws_bytes, &ws));
    MP_TRY(mp_tensor_new(dt, 4, os, dev, &r));
    if (r->numel == 0) {
        /* nothing to write */
    } else if (ws) { /* MaxPoolGrad from the workspace MaxPool kept behind y */
        __atomic_add_fetch(&ws_uses, 1, __ATOMIC_RELAXED);
        st = BE_CALL(be, pool_workspace, dev, MP_POOL_MAX_BWD, dt, &w, mp_tensor_data(in[0]), mp_tensor_data(dy),
                     mp_tensor_data(r), ws, &ws_bytes);
    } else if (op == MP_OP_CONV2D_BIAS_ACT) {
        st = conv_bias_act(be, dev, dt, &w, in, (int)at->i2, empty_in, r);
    } else if (empty_in || (dy && dy->numel == 0)) { /* sums over nothing */
        st = BE_CALL(be, fill, dev, mp_tensor_data(r), dt, r->numel, 0.0);
    } else if (is_conv(op)) {
        mp_conv_kind k = op == MP_OP_CONV2D                  ? MP_CONV_FWD
                         : op == MP_OP_CONV2D_BACKPROP_INPUT ? MP_CONV_BWD_DATA
                                                             : MP_CONV_BWD_FILTER;
        st = BE_CALL(be, conv, dev, k, dt, &w, mp_tensor_data(in[0]), mp_tensor_data(in[1]), mp_tensor_data(r));
    } else {
        mp_pool_kind k = op == MP_OP_MAX_POOL        ? MP_POOL_MAX
                         : op == MP_OP_AVG_POOL      ? MP_POOL_AVG
                         : op == MP_OP_MAX_POOL_GRAD ? MP_POOL_MAX_BWD
                         : op == MP_OP_AVG_POOL_GRAD ? MP_POOL_AVG_BWD
                                                     : MP_POOL_MAX_GRADGRAD;
        const void *a = op == MP_OP_AVG_POOL_GRAD ? NULL : mp_tensor_data(in[0]);
        const void *b = dy ? mp_tensor_data(dy) : op == MP_OP_MAX_POOL_GRAD_GRAD ? mp_tensor_data(in[1]) : NULL;
        st = BE_CALL(be, pool, dev, k, dt, &w, a, b, mp_tensor_data(r));
    }
    if (st == MP_OK && relu_grad && r->numel > 0) { /* ReluGrad(x, dx) in place */
        mp_bcast bc;
        memset(&bc, 0, sizeof bc);
        bc.ndim = 1, bc.shape[0] = bc.numel = r->numel;
        bc.stride[0][0] = bc.stride[1][0] = bc.stride[2][0] = 1;
        st = BE_CALL(be, binary, dev, MP_BINARY_RELU_GRAD, dt, &bc, mp_tensor_data(in[0]), mp_tensor_data(r),
                     mp_tensor_data(r), 0.0);
    }
    if (st != MP_OK) {
        mp_tensor_decref(r);
        return st;
    }
    *out = r;
    return MP_OK;
}

/* BatchNorm(x, scale, offset, mean, variance): the statistics are (C) float32 (float64 for
 * float64 x); C is axis 1 (i0 = 1) or the last axis. */
mp_status mp_run_batch_norm(mp_tensor *const *in, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    static const char *const names[] = {"x", "scale", "offset", "mean", "variance"};
    mp_tensor *x = in[0];
    char b0[128];
    if (!mp_dtype_is_floating(x->dtype))
        return mp_error_set(MP_ERR_DTYPE, "FusedBatchNormV3: x must be a floating tensor, got %s",
                            mp_dtype_name(x->dtype));
    int cf = at->i0 != 0;
    if (x->ndim < (cf ? 2 : 1))
        return mp_error_set(MP_ERR_VALUE, "FusedBatchNormV3: x of shape %s has no channel axis",
                            shp(x->shape, x->ndim, b0, sizeof b0));
    int caxis = cf ? 1 : x->ndim - 1;
    int64_t C = x->shape[caxis];
    mp_dtype sdt = x->dtype == MP_F64 ? MP_F64 : MP_F32;
    for (int i = 1; i < 5; i++) {
        if (in[i]->dtype != sdt)
            return mp_error_set(MP_ERR_DTYPE, "FusedBatchNormV3: %s must be %s for %s x, got %s", names[i],
                                mp_dtype_name(sdt), mp_dtype_name(x->dtype), mp_dtype_name(in[i]->dtype));
        if (in[i]->ndim != 1 || in[i]->shape[0] != C)
            return mp_error_set(MP_ERR_SHAPE, "FusedBatchNormV3: %s must have shape [%lld] (x's channels), got %s",
                                names[i], (long long)C, shp(in[i]->shape, in[i]->ndim, b0, sizeof b0));
    }
    if (!(at->f0 >= 0))
        return mp_error_set(MP_ERR_VALUE, "FusedBatchNormV3: epsilon must be >= 0, got %g", at->f0);
    if (at->i2 != 0 && at->i2 != 1)
        return mp_error_set(MP_ERR_VALUE, "FusedBatchNormV3: unknown activation code %lld (0 none, 1 relu)",
                            (long long)at->i2);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < caxis; d++)
        outer *= x->shape[d];
    for (int d = caxis + 1; d < x->ndim; d++)
        inner *= x->shape[d];
    mp_tensor *r;
    MP_TRY(mp_tensor_new(x->dtype, x->ndim, x->shape, mp_tensor_device(x), &r));
    mp_status st = MP_OK;
    if (r->numel > 0)
        st = BE_CALL(be, batch_norm, mp_tensor_device(x), x->dtype, sdt, mp_tensor_data(x), mp_tensor_data(in[1]),
                     mp_tensor_data(in[2]), mp_tensor_data(in[3]), mp_tensor_data(in[4]), at->f0, mp_tensor_data(r),
                     outer, C, inner, (int)at->i2);
    if (st != MP_OK) {
        mp_tensor_decref(r);
        return st;
    }
    *out = r;
    return MP_OK;
}

/* BatchMoments(x), BatchMomentsGrad(x, stats, g), BatchNormGradSums(x, dy, mean): x floating
 * with a channel axis (axis 1 when i0, else the last); statistics (2, C) / mean (C) of
 * float32 (float64 for float64 x); dy of x's shape and dtype. */
mp_status mp_run_batch_stats(mp_op op, mp_tensor *const *in, const mp_attrs *at, const mp_backend *be,
                             mp_tensor **out) {
    mp_tensor *x = in[0];
    char b0[128];
    if (!mp_dtype_is_floating(x->dtype))
        return mp_error_set(MP_ERR_DTYPE, "%s: x must be a floating tensor, got %s", NAME(op), mp_dtype_name(x->dtype));
    int cf = at->i0 != 0;
    if (x->ndim < (cf ? 2 : 1))
        return mp_error_set(MP_ERR_VALUE, "%s: x of shape %s has no channel axis", NAME(op),
                            shp(x->shape, x->ndim, b0, sizeof b0));
    int caxis = cf ? 1 : x->ndim - 1;
    int64_t C = x->shape[caxis], outer = 1, inner = 1;
    for (int d = 0; d < caxis; d++)
        outer *= x->shape[d];
    for (int d = caxis + 1; d < x->ndim; d++)
        inner *= x->shape[d];
    mp_dtype sdt = x->dtype == MP_F64 ? MP_F64 : MP_F32;
    const void *y = NULL, *mean = NULL, *g = NULL;
    if (op == MP_OP_BATCH_NORM_GRAD_SUMS) {
        mp_tensor *dy = in[1];
        if (dy->dtype != x->dtype || dy->ndim != x->ndim || memcmp(dy->shape, x->shape, x->ndim * sizeof(int64_t)))
            return mp_error_set(MP_ERR_SHAPE, "%s: dy must have x's shape %s and dtype %s, got %s %s", NAME(op),
                                shp(x->shape, x->ndim, b0, sizeof b0), mp_dtype_name(x->dtype),
                                mp_dtype_name(dy->dtype), shp(dy->shape, dy->ndim, b0, sizeof b0));
        y = mp_tensor_data(dy);
    }
    /* the statistics inputs: mean (C) of BatchNormGradSums, stats and g (2, C) of BatchMomentsGrad */
    int first = op == MP_OP_BATCH_NORM_GRAD_SUMS ? 2 : 1, last = op == MP_OP_BATCH_MOMENTS ? 0 : 2;
    for (int i = first; i <= last; i++) {
        mp_tensor *t = in[i];
        int64_t want = op == MP_OP_BATCH_NORM_GRAD_SUMS ? C : 2 * C;
        if (t->dtype != sdt || t->numel != want)
            return mp_error_set(MP_ERR_SHAPE, "%s: input #%d must hold %lld %s values for x of shape %s, got %s %s",
                                NAME(op), i, (long long)want, mp_dtype_name(sdt),
                                shp(x->shape, x->ndim, b0, sizeof b0), mp_dtype_name(t->dtype),
                                shp(t->shape, t->ndim, b0, sizeof b0));
    }
    if (op != MP_OP_BATCH_MOMENTS)
        mean = mp_tensor_data(op == MP_OP_BATCH_NORM_GRAD_SUMS ? in[2] : in[1]);
    if (op == MP_OP_BATCH_MOMENTS_GRAD)
        g = mp_tensor_data(in[2]);
    int64_t two_c[2] = {2, C};
    mp_tensor *r;
    if (op == MP_OP_BATCH_MOMENTS_GRAD)
        MP_TRY(mp_tensor_new(x->dtype, x->ndim, x->shape, mp_tensor_device(x), &r));
    else
        MP_TRY(mp_tensor_new(sdt, 2, two_c, mp_tensor_device(x), &r));
    mp_stats_kind k = op == MP_OP_BATCH_MOMENTS ? MP_STATS_MOMENTS
                      : op == MP_OP_BATCH_NORM_GRAD_SUMS ? MP_STATS_GRAD_SUMS
                                                         : MP_STATS_MOMENTS_GRAD;
    mp_status st = MP_OK;
    if (r->numel > 0)
        st = BE_CALL(be, batch_stats, mp_tensor_device(x), k, x->dtype, sdt, mp_tensor_data(x), y, mean, g,
                     mp_tensor_data(r), outer, C, inner);
    if (st != MP_OK) {
        mp_tensor_decref(r);
        return st;
    }
    *out = r;
    return MP_OK;
}
