// host_check.cpp — a test aid: mixprec._cuda._pool_on_host runs the GPU pooling's element
// rules (pool_rules.h, the very functions pool.cu's kernels call) on the host, in the kernels'
// order and types, so tests compare them with the CPU backend on machines without a GPU.
// What it cannot check: the launches and the grid-stride loops around the rules. Must not be
// used for computing results (it is single-threaded and slow).
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include <vector>

#include "mixprec.h"
#include "pool_rules.h"
#include "scalar_cast.h"

namespace {

template <typename T> struct host_ld;
template <> struct host_ld<float> {
    const float *p;
    float operator()(int64_t j) const { return p[j]; }
};
template <> struct host_ld<double> {
    const double *p;
    double operator()(int64_t j) const { return p[j]; }
};
struct host_ld_f16 {
    const uint16_t *p;
    float operator()(int64_t j) const { return mp_cvt_f16_f32(p[j]); }
};
struct host_ld_bf16 {
    const uint16_t *p;
    float operator()(int64_t j) const { return mp_cvt_bf16_f32(p[j]); }
};

// pool.cu's pool_launch, element by element: out (n_out elements, or n_in for gradients).
template <typename Acc, typename LD, typename ST>
void run(const pool_geom &g, int kind, double lowest, const LD &a, const LD &b, ST store) {
    const int64_t n_out = g.n * g.c * g.oh * g.ow, n_in = g.n * g.c * g.h * g.w;
    int64_t bi;
    if (kind == MP_POOL_MAX || kind == MP_POOL_AVG) {
        for (int64_t i = 0; i < n_out; i++)
            store(i, pool_fwd_at<Acc>(g, kind == MP_POOL_MAX ? POOL_RULE_MAX : POOL_RULE_AVG, (Acc)lowest, a, i, &bi));
        return;
    }
    if (kind == MP_POOL_AVG_BWD) {
        for (int64_t i = 0; i < n_in; i++)
            store(i, pool_bwd_at<Acc>(g, 0, nullptr, b, i));
        return;
    }
    std::vector<int64_t> arg((size_t)n_out);
    for (int64_t i = 0; i < n_out; i++)
        pool_fwd_at<Acc>(g, kind == MP_POOL_MAX_BWD ? POOL_RULE_MAX_GRAD : POOL_RULE_MAX_GRADGRAD, (Acc)0, a, i,
                         &arg[(size_t)i]);
    if (kind == MP_POOL_MAX_BWD) {
        for (int64_t i = 0; i < n_in; i++)
            store(i, pool_bwd_at<Acc>(g, 1, arg.data(), b, i));
    } else {
        for (int64_t i = 0; i < n_out; i++) {
            int64_t j = pool_gradgrad_src(g, arg.data(), i);
            store(i, j >= 0 ? b(j) : (Acc)0);
        }
    }
}

} // namespace

// _pool_on_host(kind, dtype, window, a, b) -> bytes: kind as mp_pool_kind (0 max, 1 avg,
// 2 max gradient, 3 avg gradient, 4 max gradient's gradient); window as _cudnn_describe_conv's
// (n, c, h, w, oc, oh, ow, kh, kw, sh, sw, dh, dw, pt, pb, pl, pr, groups, nchw); a (x) and b
// (dy, or gg) as bytes of the dtype in the window's layout (b may be empty where unused).
PyObject *mp_cuda_py_pool_on_host(PyObject *, PyObject *args) {
    int kind;
    const char *dtn;
    int64_t f[18];
    int nchw;
    Py_buffer a, b;
    if (!PyArg_ParseTuple(args, "is(LLLLLLLLLLLLLLLLLLi)y*y*:_pool_on_host", &kind, &dtn, &f[0], &f[1], &f[2], &f[3],
                          &f[4], &f[5], &f[6], &f[7], &f[8], &f[9], &f[10], &f[11], &f[12], &f[13], &f[14], &f[15],
                          &f[16], &f[17], &nchw, &a, &b))
        return NULL;
    pool_geom g = {f[0], f[1], f[2], f[3], f[5], f[6], f[7], f[8], f[9], f[10], f[13], f[15], nchw};
    const int64_t n_out = g.n * g.c * g.oh * g.ow, n_in = g.n * g.c * g.h * g.w;
    const int grad_shaped = kind == MP_POOL_MAX_BWD || kind == MP_POOL_AVG_BWD;
    const int64_t n_res = grad_shaped ? n_in : n_out;
    size_t es = strcmp(dtn, "float64") == 0 ? 8 : strcmp(dtn, "float32") == 0 ? 4 : 2;
    // which operand has which size: a is x (absent for the avg gradient); b is dy (n_out) or gg (n_in)
    const int64_t want_a = kind == MP_POOL_AVG_BWD ? 0 : n_in;
    const int64_t want_b = kind == MP_POOL_MAX_BWD || kind == MP_POOL_AVG_BWD ? n_out
                           : kind == MP_POOL_MAX_GRADGRAD                     ? n_in
                                                                              : 0;
    PyObject *res = NULL;
    if (kind < 0 || kind > 4 || g.n < 0 || g.c < 0 || g.h < 1 || g.w < 1 || g.kh < 1 || g.kw < 1 || g.sh < 1 ||
        g.sw < 1 ||
        (strcmp(dtn, "float32") && strcmp(dtn, "float64") && strcmp(dtn, "float16") && strcmp(dtn, "bfloat16"))) {
        PyErr_SetString(PyExc_ValueError, "_pool_on_host: bad kind, dtype or window");
    } else if ((want_a && a.len != (Py_ssize_t)(want_a * (int64_t)es)) ||
               (want_b && b.len != (Py_ssize_t)(want_b * (int64_t)es))) {
        PyErr_SetString(PyExc_ValueError, "_pool_on_host: operand sizes do not match the window");
    } else if ((res = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n_res * (int64_t)es)))) {
        char *out = PyBytes_AS_STRING(res);
        // max pooling's start value (pool.cu's pool_lowest)
        const double lowest = es == 8 ? -1.7976931348623157e308 : es == 4 ? -3.4028234663852886e38
                              : strcmp(dtn, "float16") == 0 ? -65504.0 : -INFINITY;
        if (es == 8) {
            run<double>(g, kind, lowest, host_ld<double>{(const double *)a.buf}, host_ld<double>{(const double *)b.buf},
                        [&](int64_t i, double v) { ((double *)out)[i] = v; });
        } else if (es == 4) {
            run<float>(g, kind, lowest, host_ld<float>{(const float *)a.buf}, host_ld<float>{(const float *)b.buf},
                       [&](int64_t i, float v) { ((float *)out)[i] = v; });
        } else if (strcmp(dtn, "float16") == 0) {
            run<float>(g, kind, lowest, host_ld_f16{(const uint16_t *)a.buf}, host_ld_f16{(const uint16_t *)b.buf},
                       [&](int64_t i, float v) { ((uint16_t *)out)[i] = mp_cvt_f32_f16(v); });
        } else {
            run<float>(g, kind, lowest, host_ld_bf16{(const uint16_t *)a.buf}, host_ld_bf16{(const uint16_t *)b.buf},
                       [&](int64_t i, float v) { ((uint16_t *)out)[i] = mp_cvt_f32_bf16(v); });
        }
    }
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    return res;
}
