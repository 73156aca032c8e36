// conv_cudnn.cpp — the conv slot on the GPU: forward, backward-data and backward-filter
// convolutions through cuDNN's graph (backend) API: one operation per graph (the forward with
// bias and ReLU fused for the conv_bias_act slot: three), engine configs from
// the heuristics (mode A, then the fallback list), the first that finalizes is kept as the
// execution plan, cached per shape, dtype, layout, TF32 mode and pointer alignment. float32
// accumulation for 16-bit data (float64 in double); the workspace comes from the device's
// stream-ordered pool; everything runs on the context's stream. TensorFlow's HWIO filters are
// transposed to cuDNN's KCRS (NCHW data) or KRSC (NHWC data) and back; TensorFlow's asymmetric
// SAME padding becomes an explicit zero border plus symmetric padding (as TensorFlow does).
// Must not call cuDNN except through cudnn_load.h, nor validate shapes (ops_window.c did).
#ifdef MP_WITH_CUDNN // (CMakeLists.txt: only when cuDNN's headers were found)
#include <stdio.h>
#include <string.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "cudnn_load.h"

#define MAX_PLANS 512
#define WORKSPACE_CAP ((int64_t)1 << 30) // plans needing more are tried last

namespace {

const mp_cudnn_api *L; // the opened library: set by run() (or the describe check) before use

// kind: mp_conv_kind, or a forward with the bias added (FUSED_BIAS) and then ReLU (FUSED_RELU)
enum { FUSED_BIAS = 3, FUSED_RELU = 4 };

struct conv_key {
    int64_t kind, al_b, dt, n, c, h, w, oc, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw, groups, nchw, tf32, al_x, al_w,
        al_y;
};

// A built plan and every descriptor it was built from (kept alive with it).
struct conv_plan {
    std::vector<cudnnBackendDescriptor_t> owned;
    cudnnBackendDescriptor_t plan = nullptr;
    int64_t workspace = 0;
    ~conv_plan() {
        if (plan)
            L->cudnnBackendDestroyDescriptor(plan);
        for (size_t i = owned.size(); i-- > 0;)
            L->cudnnBackendDestroyDescriptor(owned[i]);
    }
    mp_status make(cudnnBackendDescriptorType_t t, cudnnBackendDescriptor_t *out) {
        *out = nullptr;
        MP_CUDNN_CHECK(L, cudnnBackendCreateDescriptor(t, out));
        owned.push_back(*out);
        return MP_OK;
    }
};

struct dev_state {
    std::mutex mu; // guards the handle (cuDNN handles are not for concurrent use) and the cache
    cudnnHandle_t handle = nullptr;
    std::unordered_map<std::string, conv_plan *> plans;
};
dev_state states[MP_CUDA_MAX_DEVICES];

#define SET(d, name, type, count, ptr) MP_CUDNN_CHECK(L, cudnnBackendSetAttribute((d), (name), (type), (count), (ptr)))

// The element strides of a (n, c, h, w) activation in the window's layout.
void act_strides(int nchw, int64_t c, int64_t h, int64_t w, int64_t s[4]) {
    if (nchw) {
        s[0] = c * h * w, s[1] = h * w, s[2] = w, s[3] = 1;
    } else {
        s[0] = h * w * c, s[1] = 1, s[2] = w * c, s[3] = c;
    }
}

// The element strides of a filter (oc, cg, kh, kw): cuDNN's KCRS (nchw) or KRSC layout, or
// TensorFlow's HWIO.
void filter_strides(int layout, int64_t oc, int64_t cg, int64_t kh, int64_t kw, int64_t s[4]) {
    if (layout == 0) { // HWIO
        s[0] = 1, s[1] = oc, s[2] = kw * cg * oc, s[3] = cg * oc;
    } else if (layout == 1) { // KCRS
        s[0] = cg * kh * kw, s[1] = kh * kw, s[2] = kw, s[3] = 1;
    } else { // KRSC
        s[0] = kh * kw * cg, s[1] = 1, s[2] = kw * cg, s[3] = cg;
    }
}

int64_t align_of(const void *p, size_t es) {
    int64_t a = 16;
    while (a > (int64_t)es && ((uintptr_t)p % (uintptr_t)a) != 0)
        a /= 2;
    return a;
}

mp_status tensor(conv_plan *p, int64_t uid, cudnnDataType_t dt, const int64_t dims[4], const int64_t strides[4],
                 int64_t align, cudnnBackendDescriptor_t *out, bool is_virtual = false) {
    cudnnBackendDescriptor_t t;
    MP_TRY(p->make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &t));
    if (is_virtual)
        SET(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
    SET(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
    SET(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
    SET(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
    SET(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    SET(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    MP_CUDNN_CHECK(L, cudnnBackendFinalize(t));
    *out = t;
    return MP_OK;
}

// Whether an engine config's numerics are allowed: float32 accumulation always (no inputs
// converted down, no reduced-precision reduction); tensor cores for float32 data (TF32) only
// when TF32 is on. *rtc: the engine compiles kernels at run time (first use costs seconds).
bool acceptable(cudnnBackendDescriptor_t cfg, const conv_key &k, bool *rtc) {
    cudnnBackendDescriptor_t eng = nullptr;
    *rtc = false;
    if (L->cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) != CUDNN_STATUS_SUCCESS)
        return false;
    int64_t n = 0;
    bool ok = L->cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                          &eng) == CUDNN_STATUS_SUCCESS;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    int64_t nn = 0;
    if (ok && L->cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                          CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &nn, notes) == CUDNN_STATUS_SUCCESS) {
        for (int64_t i = 0; i < nn && i < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; i++) {
            if (notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS ||
                notes[i] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION)
                ok = false;
            if (notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE && k.dt == MP_F32 && !k.tf32)
                ok = false;
        }
    }
    cudnnBackendBehaviorNote_t beh[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
    int64_t nb = 0;
    if (ok && L->cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                          CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &nb, beh) == CUDNN_STATUS_SUCCESS)
        for (int64_t i = 0; i < nb && i < CUDNN_BEHAVIOR_NOTE_TYPE_COUNT; i++)
            if (beh[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION)
                *rtc = true;
    L->cudnnBackendDestroyDescriptor(eng);
    return ok;
}

// The engine configs of one heuristics mode, in the order to try: the heuristic's, engines
// that compile at run time and plans over WORKSPACE_CAP after the others. Returns a plan in
// p->plan, or leaves it NULL when none finalizes.
mp_status try_mode(conv_plan *p, cudnnHandle_t h, cudnnBackendDescriptor_t graph, cudnnBackendHeurMode_t mode,
                   const conv_key &k) {
    cudnnBackendDescriptor_t heur;
    MP_TRY(p->make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur));
    SET(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
    SET(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    if (L->cudnnBackendFinalize(heur) != CUDNN_STATUS_SUCCESS)
        return MP_OK; // this mode has nothing for the graph
    int64_t count = 0;
    MP_CUDNN_CHECK(L, cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                               &count, nullptr));
    if (count <= 0)
        return MP_OK;
    std::vector<cudnnBackendDescriptor_t> cfgs((size_t)count);
    for (auto &cfg : cfgs)
        MP_TRY(p->make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg));
    int64_t got = 0;
    MP_CUDNN_CHECK(L, cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                               count, &got, cfgs.data()));
    std::vector<cudnnBackendDescriptor_t> first, later;
    for (int64_t i = 0; i < got && i < count; i++) {
        bool rtc;
        if (acceptable(cfgs[(size_t)i], k, &rtc))
            (rtc ? later : first).push_back(cfgs[(size_t)i]);
    }
    first.insert(first.end(), later.begin(), later.end());
    std::vector<cudnnBackendDescriptor_t> big; // finalized, but over WORKSPACE_CAP: tried last
    for (int pass = 0; pass < 2; pass++) {
        for (cudnnBackendDescriptor_t cfg : pass == 0 ? first : big) {
            cudnnBackendDescriptor_t plan = nullptr;
            if (L->cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan) != CUDNN_STATUS_SUCCESS)
                continue;
            int64_t ws = 0, n = 0;
            bool ok = L->cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h) ==
                          CUDNN_STATUS_SUCCESS &&
                      L->cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg) == CUDNN_STATUS_SUCCESS &&
                      L->cudnnBackendFinalize(plan) == CUDNN_STATUS_SUCCESS &&
                      L->cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                                                  &n, &ws) == CUDNN_STATUS_SUCCESS &&
                      ws >= 0;
            if (ok && pass == 0 && ws > WORKSPACE_CAP) {
                big.push_back(cfg);
                ok = false;
            }
            if (!ok) {
                L->cudnnBackendDestroyDescriptor(plan);
                continue;
            }
            p->plan = plan;
            p->workspace = ws;
            return MP_OK;
        }
    }
    return MP_OK;
}

const char *kind_name(int64_t k) {
    return k == MP_CONV_FWD          ? "Conv2D"
           : k == MP_CONV_BWD_DATA   ? "Conv2DBackpropInput"
           : k == MP_CONV_BWD_FILTER ? "Conv2DBackpropFilter"
                                     : "_FusedConv2D";
}

// A pointwise operation y = mode(x[, b]) in float32 (ReLU's lower clip 0).
mp_status pointwise(conv_plan *p, cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                    cudnnBackendDescriptor_t y, cudnnBackendDescriptor_t *out) {
    cudnnBackendDescriptor_t pw, op;
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    MP_TRY(p->make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &pw));
    SET(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    SET(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    MP_CUDNN_CHECK(L, cudnnBackendFinalize(pw));
    MP_TRY(p->make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, &op));
    SET(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw);
    SET(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    if (b)
        SET(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
    SET(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    MP_CUDNN_CHECK(L, cudnnBackendFinalize(op));
    *out = op;
    return MP_OK;
}

// The tensors and operations of k, finalized (uids: 1 x/dx, 2 w/dw, 3 y/dy, 4 bias; 101 and
// 102 the fused forward's float32 intermediates, never in memory). Needs no handle and no GPU
// (mixprec._cuda._cudnn_describe_conv checks it anywhere).
mp_status describe(const conv_key &k, conv_plan *p, cudnnBackendDescriptor_t *ops, int *n_ops) {
    const bool fused = k.kind == FUSED_BIAS || k.kind == FUSED_RELU;
    cudnnDataType_t dt = k.dt == MP_F32    ? CUDNN_DATA_FLOAT
                         : k.dt == MP_F16  ? CUDNN_DATA_HALF
                         : k.dt == MP_BF16 ? CUDNN_DATA_BFLOAT16
                                           : CUDNN_DATA_DOUBLE;
    cudnnDataType_t comp = k.dt == MP_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    int64_t cg = k.c / k.groups;
    int64_t xd[4] = {k.n, k.c, k.h, k.w}, yd[4] = {k.n, k.oc, k.oh, k.ow}, wd[4] = {k.oc, cg, k.kh, k.kw};
    int64_t xs[4], ys[4], ws[4];
    act_strides((int)k.nchw, k.c, k.h, k.w, xs);
    act_strides((int)k.nchw, k.oc, k.oh, k.ow, ys);
    filter_strides(k.nchw ? 1 : 2, k.oc, cg, k.kh, k.kw, ws);
    cudnnBackendDescriptor_t X, W, Y, conv, op;
    MP_TRY(tensor(p, 1, dt, xd, xs, k.al_x, &X));
    MP_TRY(tensor(p, 2, dt, wd, ws, k.al_w, &W));
    MP_TRY(tensor(p, 3, dt, yd, ys, k.al_y, &Y));
    cudnnBackendDescriptor_t conv_y = Y, B = nullptr, C1 = nullptr, C2 = nullptr;
    if (fused) { // conv -> (float32) + bias -> (float32) ReLU -> y, rounded once
        int64_t bd[4] = {1, k.oc, 1, 1}, bs[4] = {k.oc, 1, k.oc, k.oc};
        MP_TRY(tensor(p, 4, dt, bd, bs, k.al_b, &B));
        MP_TRY(tensor(p, 101, CUDNN_DATA_FLOAT, yd, ys, 16, &C1, true));
        if (k.kind == FUSED_RELU)
            MP_TRY(tensor(p, 102, CUDNN_DATA_FLOAT, yd, ys, 16, &C2, true));
        conv_y = C1;
    }

    MP_TRY(p->make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &conv));
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    int64_t dims = 2, dil[2] = {k.dh, k.dw}, str[2] = {k.sh, k.sw}, pad[2] = {k.ph, k.pw};
    SET(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
    SET(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
    SET(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims);
    SET(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil);
    SET(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, str);
    SET(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
    SET(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
    MP_CUDNN_CHECK(L, cudnnBackendFinalize(conv));

    float af = 1.0f, bf = 0.0f;
    double ad = 1.0, bd = 0.0;
    cudnnBackendAttributeType_t st = k.dt == MP_F64 ? CUDNN_TYPE_DOUBLE : CUDNN_TYPE_FLOAT;
    const void *alpha = k.dt == MP_F64 ? (const void *)&ad : (const void *)&af;
    const void *beta = k.dt == MP_F64 ? (const void *)&bd : (const void *)&bf;
    if (k.kind == MP_CONV_FWD || fused) {
        MP_TRY(p->make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &op));
        SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &X);
        SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &W);
        SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv_y);
        SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv);
        SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, st, 1, alpha);
        SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, st, 1, beta);
    } else if (k.kind == MP_CONV_BWD_DATA) {
        MP_TRY(p->make(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, &op));
        SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &X);
        SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &W);
        SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &Y);
        SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv);
        SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, st, 1, alpha);
        SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, st, 1, beta);
    } else {
        MP_TRY(p->make(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, &op));
        SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &X);
        SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &W);
        SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &Y);
        SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv);
        SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, st, 1, alpha);
        SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, st, 1, beta);
    }
    MP_CUDNN_CHECK(L, cudnnBackendFinalize(op));
    ops[0] = op;
    *n_ops = 1;
    if (fused) {
        MP_TRY(pointwise(p, CUDNN_POINTWISE_ADD, C1, B, k.kind == FUSED_RELU ? C2 : Y, &ops[1]));
        *n_ops = 2;
        if (k.kind == FUSED_RELU) {
            MP_TRY(pointwise(p, CUDNN_POINTWISE_RELU_FWD, C2, nullptr, Y, &ops[2]));
            *n_ops = 3;
        }
    }
    return MP_OK;
}

// The error of a graph cuDNN has no engine for (on its first call and every later one).
mp_status no_engine(const conv_key &k) {
    const int64_t cg = k.c / k.groups;
    return MP_CUDA_FAIL(MP_ERR_NOT_IMPLEMENTED,
                        "%s on the GPU: cuDNN %zu has no engine for %s data of shape [%lld, %lld, %lld, %lld] "
                        "(%s), filter [%lld, %lld, %lld, %lld], strides [%lld, %lld], dilations [%lld, %lld], "
                        "%lld group(s)%s. hint: run it on the CPU (with mixprec.device('/CPU:0'): ...)",
                        kind_name(k.kind), L->version, mp_cuda_api->dtype_name((mp_dtype)k.dt), (long long)k.n,
                        (long long)k.c, (long long)k.h, (long long)k.w, k.nchw ? "NCHW" : "NHWC", (long long)k.kh,
                        (long long)k.kw, (long long)cg, (long long)k.oc, (long long)k.sh, (long long)k.sw,
                        (long long)k.dh, (long long)k.dw, (long long)k.groups,
                        k.dt == MP_F32 && !k.tf32 ? " with TF32 off" : "");
}

// Builds the graph of one convolution and its plan.
mp_status build(const conv_key &k, cudnnHandle_t h, conv_plan *p) {
    cudnnBackendDescriptor_t ops[3], graph;
    int n_ops = 0;
    MP_TRY(describe(k, p, ops, &n_ops));
    MP_TRY(p->make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph));
    SET(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
    SET(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n_ops, ops);
    MP_CUDNN_CHECK(L, cudnnBackendFinalize(graph));

    MP_TRY(try_mode(p, h, graph, CUDNN_HEUR_MODE_A, k));
    if (!p->plan)
        MP_TRY(try_mode(p, h, graph, CUDNN_HEUR_MODE_FALLBACK, k));
    if (!p->plan)
        return no_engine(k);
    return MP_OK;
}

// The cached plan of k (built on first use); state->mu is held.
mp_status get_plan(dev_state *s, const conv_key &k, conv_plan **out) {
    std::string key((const char *)&k, sizeof k);
    auto it = s->plans.find(key);
    if (it != s->plans.end()) {
        if (!it->second) // known to have no engine (a fused graph: the caller falls back)
            return no_engine(k);
        *out = it->second;
        return MP_OK;
    }
    if (s->plans.size() >= MAX_PLANS) {
        for (auto &kv : s->plans)
            delete kv.second; // (NULL for shapes without an engine: a no-op)
        s->plans.clear();
    }
    conv_plan *p = new conv_plan();
    mp_status st = build(k, s->handle, p);
    if (st != MP_OK) {
        delete p;
        if (st == MP_ERR_NOT_IMPLEMENTED)
            s->plans.emplace(key, nullptr); // not asked again for this shape
        return st;
    }
    s->plans.emplace(key, p);
    *out = p;
    return MP_OK;
}

// dst[...] = src[...] over the logical (n, c, h, w) or (oc, cg, kh, kw) index space.
mp_status copy4(mp_device dev, mp_dtype dt, const int64_t shape[4], const int64_t ss[4], const int64_t ds[4],
                const void *src, void *dst) {
    mp_strided s;
    memset(&s, 0, sizeof s);
    s.ndim = 4;
    for (int i = 0; i < 4; i++)
        s.shape[i] = shape[i], s.sstride[i] = ss[i], s.dstride[i] = ds[i];
    return mp_cuda_strided_copy(dev, dt, &s, src, dst);
}

// Temporary device buffers of one call, freed in stream order when it returns.
struct scratch {
    mp_device dev;
    void *p[4] = {nullptr, nullptr, nullptr, nullptr};
    size_t n[4] = {0, 0, 0, 0};
    int used = 0;
    explicit scratch(mp_device d) : dev(d) {}
    ~scratch() {
        for (int i = 0; i < used; i++)
            mp_cuda_free(dev, p[i], n[i]);
    }
    mp_status get(size_t bytes, void **out) {
        MP_TRY(mp_cuda_alloc(dev, bytes, out));
        p[used] = *out, n[used] = bytes, used++;
        return MP_OK;
    }
};

// TensorFlow's SAME padding puts the odd pixel after: the symmetric part is cuDNN's, the rest
// an explicit zero border of a copy of x (of dx for the backward-data pass).
struct geom {
    int64_t ph, pw, et, eb, el, er, h2, w2, cg;
    bool bordered;
};
geom geometry(const mp_window &w) {
    geom g;
    g.ph = w.pt < w.pb ? w.pt : w.pb, g.pw = w.pl < w.pr ? w.pl : w.pr;
    g.et = w.pt - g.ph, g.eb = w.pb - g.ph, g.el = w.pl - g.pw, g.er = w.pr - g.pw;
    g.bordered = g.et || g.eb || g.el || g.er;
    g.h2 = w.h + g.et + g.eb, g.w2 = w.w + g.el + g.er;
    g.cg = w.c / w.groups;
    return g;
}

conv_key key_of(int kind, mp_dtype dt, const mp_window &w, const geom &g, int64_t al_x, int64_t al_w, int64_t al_y,
                int64_t al_b) {
    conv_key k;
    memset(&k, 0, sizeof k);
    k.kind = kind, k.dt = dt, k.n = w.n, k.c = w.c, k.h = g.h2, k.w = g.w2, k.oc = w.oc, k.oh = w.oh, k.ow = w.ow;
    k.kh = w.kh, k.kw = w.kw, k.sh = w.sh, k.sw = w.sw, k.dh = w.dh, k.dw = w.dw, k.ph = g.ph, k.pw = g.pw;
    k.groups = w.groups, k.nchw = w.nchw, k.tf32 = dt == MP_F32 ? mp_cuda_tf32.load() : 0;
    k.al_x = al_x, k.al_w = al_w, k.al_y = al_y, k.al_b = al_b;
    return k;
}

} // namespace

mp_status mp_cudnn_conv_describe(int kind, mp_dtype dt, const mp_window *win) {
    const mp_cudnn_api *api = mp_cudnn("a convolution's description");
    if (!api)
        return MP_ERR_NOT_IMPLEMENTED;
    L = api;
    conv_plan p;
    cudnnBackendDescriptor_t ops[3];
    int n_ops;
    return describe(key_of(kind, dt, *win, geometry(*win), 16, 16, 16, kind >= FUSED_BIAS ? 16 : 0), &p, ops, &n_ops);
}

// One convolution through its cached plan: kind is mp_conv_kind or FUSED_BIAS / FUSED_RELU (a
// forward with `bias` (oc) added and the ReLU applied in float32). A fused graph without an
// engine returns MP_ERR_NOT_IMPLEMENTED having run nothing (the caller falls back).
static mp_status run(mp_device dev, int kind, mp_dtype dt, const mp_window *win, const void *a, const void *b,
                     const void *bias, void *out) {
    mp_cuda_ctx *c;
    MP_TRY(mp_cuda_ctx_get(dev, &c));
    if (dt != MP_F32 && dt != MP_F16 && dt != MP_BF16 && dt != MP_F64)
        return MP_CUDA_FAIL(MP_ERR_DTYPE, "convolution on the GPU: no kernel for %s", mp_cuda_api->dtype_name(dt));
    char what[64];
    snprintf(what, sizeof what, "%s on GPU:%d", kind_name(kind), dev.index);
    const mp_cudnn_api *api = mp_cudnn(what);
    if (!api)
        return MP_ERR_NOT_IMPLEMENTED;
    L = api;
    const bool fwd = kind == MP_CONV_FWD || kind == FUSED_BIAS || kind == FUSED_RELU;
    const mp_window &w = *win;
    const size_t es = mp_cuda_dtype_size(dt);
    const geom g = geometry(w);
    const int64_t cg = g.cg, h2 = g.h2, w2 = g.w2, et = g.et, el = g.el;
    const bool bordered = g.bordered;
    const int64_t xshape[4] = {w.n, w.c, w.h, w.w}, fshape[4] = {w.oc, cg, w.kh, w.kw};
    int64_t xs[4], x2s[4], hwio[4], cud[4];
    act_strides(w.nchw, w.c, w.h, w.w, xs);
    act_strides(w.nchw, w.c, h2, w2, x2s);
    filter_strides(0, w.oc, cg, w.kh, w.kw, hwio);
    filter_strides(w.nchw ? 1 : 2, w.oc, cg, w.kh, w.kw, cud);
    const int64_t interior = et * x2s[2] + el * x2s[3]; // elements from the bordered copy's start to x's
    const size_t xbytes = (size_t)(w.n * w.c * h2 * w2) * es, fbytes = (size_t)(w.oc * cg * w.kh * w.kw) * es;

    // the plan first: a fused graph without an engine must leave before any work is queued
    const void *xptr, *yptr; // the operands' addresses decide the plan (alignment): the
    // bordered copies and the transposed filter are fresh pool blocks (256-byte aligned)
    if (kind == MP_CONV_BWD_DATA)
        xptr = bordered ? nullptr : out, yptr = b;
    else
        xptr = bordered ? nullptr : a, yptr = fwd ? out : b;
    const int64_t pool_align = 16;
    const conv_key k = key_of(kind, dt, w, g, xptr ? align_of(xptr, es) : pool_align, pool_align, align_of(yptr, es),
                              bias ? align_of(bias, es) : 0);
    dev_state *s = &states[dev.index];
    std::lock_guard<std::mutex> lock(s->mu);
    if (!s->handle) {
        cudnnHandle_t h = nullptr;
        MP_CUDNN_CHECK(api, cudnnCreate(&h));
        if (api->cudnnSetStream(h, c->stream) != CUDNN_STATUS_SUCCESS) {
            api->cudnnDestroy(h);
            return MP_CUDA_FAIL(MP_ERR_CUDA, "cuDNN: could not set the stream of GPU:%d", dev.index);
        }
        s->handle = h;
    }
    conv_plan *p = nullptr;
    MP_TRY(get_plan(s, k, &p));

    scratch tmp(dev);
    void *fbuf, *xbuf = nullptr, *ws = nullptr;
    MP_TRY(tmp.get(fbytes, &fbuf));
    if (bordered)
        MP_TRY(tmp.get(xbytes, &xbuf));
    if (p->workspace > 0)
        MP_TRY(tmp.get((size_t)p->workspace, &ws));
    if (kind != MP_CONV_BWD_DATA && bordered) { // x inside a zero border
        MP_CUDA_CHECK(cudaMemsetAsync(xbuf, 0, xbytes, c->stream));
        MP_TRY(copy4(dev, dt, xshape, xs, x2s, a, (char *)xbuf + interior * (int64_t)es));
    }
    if (kind != MP_CONV_BWD_FILTER) // TensorFlow's HWIO filter in cuDNN's layout
        MP_TRY(copy4(dev, dt, fshape, hwio, cud, kind == MP_CONV_BWD_DATA ? a : b, fbuf));
    if (bordered)
        xptr = xbuf;

    int64_t uids[4] = {1, 2, 3, 4};
    void *ptrs[4] = {(void *)xptr, fbuf, (void *)yptr, (void *)bias};
    const int64_t n_ptrs = bias ? 4 : 3;
    cudnnBackendDescriptor_t pack = nullptr;
    MP_CUDNN_CHECK(api, cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack));
    cudnnStatus_t r =
        api->cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n_ptrs, uids);
    if (r == CUDNN_STATUS_SUCCESS)
        r = api->cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n_ptrs,
                                          ptrs);
    if (r == CUDNN_STATUS_SUCCESS)
        r = api->cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
    if (r == CUDNN_STATUS_SUCCESS)
        r = api->cudnnBackendFinalize(pack);
    if (r == CUDNN_STATUS_SUCCESS)
        r = api->cudnnBackendExecute(s->handle, p->plan, pack);
    api->cudnnBackendDestroyDescriptor(pack);
    if (r != CUDNN_STATUS_SUCCESS)
        return mp_cudnn_error(__FILE__, __LINE__, kind_name(kind), r);
    if (kind == MP_CONV_BWD_DATA && bordered) // dx is the bordered gradient's interior
        MP_TRY(copy4(dev, dt, xshape, x2s, xs, (const char *)xbuf + interior * (int64_t)es, out));
    if (kind == MP_CONV_BWD_FILTER) // cuDNN's layout back to HWIO
        MP_TRY(copy4(dev, dt, fshape, cud, hwio, fbuf, out));
    return MP_OK;
}

extern "C" mp_status mp_cuda_conv(mp_device dev, mp_conv_kind kind, mp_dtype dt, const mp_window *win, const void *a,
                                  const void *b, void *out) {
    return run(dev, (int)kind, dt, win, a, b, nullptr, out);
}

// y = act(conv(x, f) + bias): one cuDNN graph (convolution, add, ReLU; float32 between them,
// rounded once) where cuDNN has an engine for it, else the convolution and bias_act.cu's pass.
extern "C" mp_status mp_cuda_conv_bias_act(mp_device dev, mp_dtype dt, const mp_window *win, const void *x,
                                           const void *f, const void *bias, int act, void *y) {
    if (dt != MP_F64) { // (float64: no fused engines; its intermediates would be float32)
        mp_status st = run(dev, act ? FUSED_RELU : FUSED_BIAS, dt, win, x, f, bias, y);
        if (st != MP_ERR_NOT_IMPLEMENTED || !L) // done, a real failure, or no cuDNN at all
            return st;
    }
    MP_TRY(run(dev, MP_CONV_FWD, dt, win, x, f, nullptr, y));
    const int64_t inner = win->nchw ? win->oh * win->ow : 1;
    return mp_cuda_bias_act(dev, dt, y, bias, win->n * win->oc * win->oh * win->ow, win->oc, inner, act);
}
#endif
