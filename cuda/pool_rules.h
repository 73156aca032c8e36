// pool_rules.h — the element rules of GPU pooling (pool.cu), as functions that compile both as
// device code and as host C++ (MP_HD), so the same rules run in the kernels and, on any
// machine, in the host check mixprec._cuda._pool_on_host (host_check.cpp) that the tests compare
// with the CPU backend. The rules are the CPU backend's (TensorFlow 2.21's CPU kernels): the
// window's part inside the input, maxima in row-major order where NaN never beats a value
// (pool_fwd_at's three starts), averages over that part.
// Must not allocate, launch or know about streams; loads go through the caller's functor.
#ifndef MP_POOL_RULES_H
#define MP_POOL_RULES_H
#include <math.h>
#include <stdint.h>

#include "mp_hd.h"

struct pool_geom { // mp_window's fields that pooling reads
    int64_t n, c, h, w, oh, ow, kh, kw, sh, sw, pt, pl;
    int nchw;
};

// Flat index of (n, c, y, x) in a (n, C, H, W) tensor of the layout.
MP_HD int64_t pool_at(int nchw, int64_t n, int64_t c, int64_t y, int64_t x, int64_t C, int64_t H, int64_t W) {
    return nchw ? ((n * C + c) * H + y) * W + x : ((n * H + y) * W + x) * C + c;
}

// The inverse of pool_at.
MP_HD void pool_split(int nchw, int64_t i, int64_t C, int64_t H, int64_t W, int64_t *n, int64_t *c, int64_t *y,
                      int64_t *x) {
    if (nchw) {
        *x = i % W, i /= W, *y = i % H, i /= H, *c = i % C, *n = i / C;
    } else {
        *c = i % C, i /= C, *x = i % W, i /= W, *y = i % H, *n = i / H;
    }
}

// The part of output (oy, ox)'s window inside the input: rows [*ya, *yb), columns [*xa, *xb).
MP_HD void pool_window(const pool_geom &g, int64_t oy, int64_t ox, int64_t *ya, int64_t *yb, int64_t *xa, int64_t *xb) {
    int64_t y0 = oy * g.sh - g.pt, x0 = ox * g.sw - g.pl;
    *ya = y0 < 0 ? 0 : y0, *yb = y0 + g.kh > g.h ? g.h : y0 + g.kh;
    *xa = x0 < 0 ? 0 : x0, *xb = x0 + g.kw > g.w ? g.w : x0 + g.kw;
}

// Which maximum pool_fwd_at looks for (TensorFlow 2.21's CPU kernels, docs/architecture.md):
// MaxPool's value starts from the dtype's lowest (a window of NaNs gives it); MaxPoolGrad's
// position starts from the window's first element (a NaN there keeps it); MaxPoolGradGrad's
// from nothing (-1 when no element is above -inf). Then each element above the best wins.
enum { POOL_RULE_AVG = 0, POOL_RULE_MAX = 1, POOL_RULE_MAX_GRAD = 2, POOL_RULE_MAX_GRADGRAD = 3 };

// Output element i (in y's layout): the max or the average of its window of x (ld(j) loads
// x[j] in Acc) by `rule`; for max, *arg = the chosen position y * w + x in its plane (-1: none).
// lowest: the dtype's lowest value (POOL_RULE_MAX's start).
template <typename Acc, typename LD>
MP_HD Acc pool_fwd_at(const pool_geom &g, int rule, Acc lowest, const LD &ld, int64_t i, int64_t *arg) {
    int64_t n, c, oy, ox, ya, yb, xa, xb;
    pool_split(g.nchw, i, g.c, g.oh, g.ow, &n, &c, &oy, &ox);
    pool_window(g, oy, ox, &ya, &yb, &xa, &xb);
    if (rule != POOL_RULE_AVG) {
        Acc best = rule == POOL_RULE_MAX ? lowest : (Acc)-INFINITY;
        int64_t bi = -1;
        for (int64_t yy = ya; yy < yb; yy++)
            for (int64_t xx = xa; xx < xb; xx++) {
                Acc v = ld(pool_at(g.nchw, n, c, yy, xx, g.c, g.h, g.w));
                if (v > best || (rule == POOL_RULE_MAX_GRAD && bi < 0)) {
                    best = v;
                    bi = yy * g.w + xx;
                }
            }
        *arg = bi;
        return best;
    }
    int64_t cnt = (yb - ya) * (xb - xa);
    Acc s = 0;
    for (int64_t yy = ya; yy < yb; yy++)
        for (int64_t xx = xa; xx < xb; xx++)
            s += ld(pool_at(g.nchw, n, c, yy, xx, g.c, g.h, g.w));
    *arg = -1;
    return cnt > 0 ? s / (Acc)cnt : (Acc)0;
}

// Input element i (in x's layout): the sum over the windows that contain it of dy (ld_dy(j)
// loads dy[j]): for max only the windows whose chosen position (arg, per output element) it is;
// for average dy / the window's count. Gathered, so every element is written once, in a
// fixed order.
template <typename Acc, typename LD>
MP_HD Acc pool_bwd_at(const pool_geom &g, int is_max, const int64_t *arg, const LD &ld_dy, int64_t i) {
    int64_t n, c, yy, xx;
    pool_split(g.nchw, i, g.c, g.h, g.w, &n, &c, &yy, &xx);
    // the windows oy with oy * sh - pt <= yy < oy * sh - pt + kh (and the same for columns)
    int64_t lo_y = yy + g.pt - g.kh + 1, lo_x = xx + g.pl - g.kw + 1;
    int64_t oy0 = lo_y <= 0 ? 0 : (lo_y + g.sh - 1) / g.sh, ox0 = lo_x <= 0 ? 0 : (lo_x + g.sw - 1) / g.sw;
    int64_t oy1 = (yy + g.pt) / g.sh, ox1 = (xx + g.pl) / g.sw;
    if (oy1 > g.oh - 1)
        oy1 = g.oh - 1;
    if (ox1 > g.ow - 1)
        ox1 = g.ow - 1;
    const int64_t me = yy * g.w + xx;
    Acc acc = 0;
    for (int64_t oy = oy0; oy <= oy1; oy++)
        for (int64_t ox = ox0; ox <= ox1; ox++) {
            int64_t oi = pool_at(g.nchw, n, c, oy, ox, g.c, g.oh, g.ow);
            if (is_max) {
                if (arg[oi] == me)
                    acc += ld_dy(oi);
            } else {
                int64_t ya, yb, xa, xb;
                pool_window(g, oy, ox, &ya, &yb, &xa, &xb);
                acc += ld_dy(oi) / (Acc)((yb - ya) * (xb - xa));
            }
        }
    return acc;
}

// Output element i of the max-pool gradient's gradient: the index into gg (x's layout) of
// its window's maximum (arg by POOL_RULE_MAX_GRADGRAD), or -1 (the result is then 0).
MP_HD int64_t pool_gradgrad_src(const pool_geom &g, const int64_t *arg, int64_t i) {
    int64_t n, c, oy, ox;
    pool_split(g.nchw, i, g.c, g.oh, g.ow, &n, &c, &oy, &ox);
    int64_t bi = arg[i];
    return bi >= 0 ? pool_at(g.nchw, n, c, bi / g.w, bi % g.w, g.c, g.h, g.w) : -1;
}

#endif
