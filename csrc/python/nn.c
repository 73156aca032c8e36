/* nn.c — bindings of the convolution and pooling ops (ops.def's window ops) and of the
 * oneDNN switches. Argument spelling (TensorFlow's strides/padding/data_format forms) is
 * resolved by src/mixprec/nn.py; this file only converts and runs. */
#define NO_IMPORT_ARRAY
#include "numpy_api.h"

#include "../dnnl_cpu.h"
#include "../ops_internal.h"
#include "../cpu_kernels.h"
#include "mp_py.h"

#include <string.h>

/* window_op(code, inputs, (sh, sw), (a, b), padding, (t, b, l, r), nchw, shape or None[, act])
 * runs op `code` (a window op of ops.def); (a, b) are dilations or the pooling window,
 * shape the produced shape of the backprop ops, act Conv2D+bias's activation (0 none,
 * 1 relu). Non-tensor inputs take input 0's dtype. */
static PyObject *py_window_op(PyObject *m, PyObject *args) {
    (void)m;
    int code, padding, nchw;
    PyObject *inputs, *shape;
    long long s0, s1, w0, w1, p0, p1, p2, p3, act = 0;
    if (!PyArg_ParseTuple(args, "iO(LL)(LL)i(LLLL)pO|L", &code, &inputs, &s0, &s1, &w0, &w1, &padding, &p0, &p1, &p2,
                          &p3, &nchw, &shape, &act))
        return NULL;
    static const mp_op window_ops[] = {MP_OP_CONV2D,       MP_OP_CONV2D_BACKPROP_INPUT, MP_OP_CONV2D_BACKPROP_FILTER,
                                       MP_OP_MAX_POOL,     MP_OP_MAX_POOL_GRAD,         MP_OP_AVG_POOL,
                                       MP_OP_AVG_POOL_GRAD, MP_OP_MAX_POOL_GRAD_GRAD, MP_OP_CONV2D_BIAS_ACT};
    int ok = 0;
    for (size_t i = 0; i < sizeof window_ops / sizeof window_ops[0]; i++)
        ok |= code == (int)window_ops[i];
    if (!ok)
        return PyErr_Format(PyExc_ValueError, "window_op: op code %d is not a convolution or pooling op", code);
    const mp_op_info *info = mp_op_get_info((mp_op)code);
    if (!PyTuple_Check(inputs) || PyTuple_GET_SIZE(inputs) != info->n_inputs)
        return PyErr_Format(PyExc_TypeError, "window_op: %s takes a tuple of %d inputs", info->name, info->n_inputs);
    mp_attrs at = {{0}};
    at.ints[0] = s0, at.ints[1] = s1, at.ints[2] = w0, at.ints[3] = w1;
    at.ints2[0] = p0, at.ints2[1] = p1, at.ints2[2] = p2, at.ints2[3] = p3;
    at.i0 = nchw, at.i1 = padding, at.i2 = act;
    if (shape != Py_None) {
        PyObject *seq = PySequence_Fast(shape, "window_op: shape must be a sequence");
        if (!seq)
            return NULL;
        if (PySequence_Fast_GET_SIZE(seq) != 4) {
            Py_DECREF(seq);
            return PyErr_Format(PyExc_ValueError, "%s: the shape it produces must have 4 dimensions", info->name);
        }
        for (int i = 0; i < 4; i++) {
            at.ints4[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
            if (at.ints4[i] == -1 && PyErr_Occurred()) {
                Py_DECREF(seq);
                return NULL;
            }
        }
        Py_DECREF(seq);
    }
    mp_tensor *t[3] = {NULL, NULL, NULL};
    int n = info->n_inputs;
    int anchor = -1; /* a tensor input fixes the dtype of the others */
    for (int i = 0; i < n && anchor < 0; i++)
        if (MpTensor_Check(PyTuple_GET_ITEM(inputs, i)) || MpVariable_Check(PyTuple_GET_ITEM(inputs, i)))
            anchor = i;
    if (anchor < 0)
        anchor = 0;
    PyObject *r = NULL;
    if (mp_py_to_tensor(PyTuple_GET_ITEM(inputs, anchor), MP_NO_DTYPE, 0, &t[anchor]))
        return NULL;
    for (int i = 0; i < n; i++)
        if (i != anchor && mp_py_to_tensor(PyTuple_GET_ITEM(inputs, i), t[anchor]->dtype, 0, &t[i]))
            goto out;
    r = mp_py_run_wrap((mp_op)code, n, t, &at);
out:
    for (int i = 0; i < 3; i++)
        mp_tensor_decref(t[i]);
    return r;
}

/* batch_norm(x, scale, offset, mean, variance, epsilon, channels_first): the BatchNorm op */
static PyObject *py_batch_norm(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *o[5];
    double eps;
    int cf;
    if (!PyArg_ParseTuple(args, "OOOOOdp:batch_norm", &o[0], &o[1], &o[2], &o[3], &o[4], &eps, &cf))
        return NULL;
    mp_tensor *t[5] = {NULL, NULL, NULL, NULL, NULL};
    PyObject *r = NULL;
    if (mp_py_to_tensor(o[0], MP_NO_DTYPE, 0, &t[0]))
        return NULL;
    int sdt = t[0]->dtype == MP_F64 ? MP_F64 : MP_F32;
    for (int i = 1; i < 5; i++)
        if (mp_py_to_tensor(o[i], sdt, 0, &t[i]))
            goto out;
    mp_attrs at = {{0}};
    at.i0 = cf;
    at.f0 = eps;
    r = mp_py_run_wrap(MP_OP_BATCH_NORM, 5, t, &at);
out:
    for (int i = 0; i < 5; i++)
        mp_tensor_decref(t[i]);
    return r;
}

/* batch_stats(code, inputs, channels_first): BatchMoments, BatchMomentsGrad or
 * BatchNormGradSums (ops.def) on a tuple of tensors */
static PyObject *py_batch_stats(PyObject *m, PyObject *args) {
    (void)m;
    int code, cf;
    PyObject *inputs;
    if (!PyArg_ParseTuple(args, "iOp:batch_stats", &code, &inputs, &cf))
        return NULL;
    if (code != MP_OP_BATCH_MOMENTS && code != MP_OP_BATCH_MOMENTS_GRAD && code != MP_OP_BATCH_NORM_GRAD_SUMS)
        return PyErr_Format(PyExc_ValueError, "batch_stats: op code %d is not a batch-statistics op", code);
    const mp_op_info *info = mp_op_get_info((mp_op)code);
    if (!PyTuple_Check(inputs) || PyTuple_GET_SIZE(inputs) != info->n_inputs)
        return PyErr_Format(PyExc_TypeError, "batch_stats: %s takes a tuple of %d inputs", info->name, info->n_inputs);
    mp_tensor *t[3] = {NULL, NULL, NULL};
    PyObject *r = NULL;
    for (int i = 0; i < info->n_inputs; i++)
        if (mp_py_to_tensor(PyTuple_GET_ITEM(inputs, i), MP_NO_DTYPE, 0, &t[i]))
            goto out;
    mp_attrs at = {{0}};
    at.i0 = cf;
    r = mp_py_run_wrap((mp_op)code, info->n_inputs, t, &at);
out:
    for (int i = 0; i < 3; i++)
        mp_tensor_decref(t[i]);
    return r;
}

/* matmul_bias_act(a, b, bias, transpose_a, transpose_b, act): the _FusedMatMul op; b and
 * bias take a's dtype (variables read in the layer's compute dtype) */
static PyObject *py_matmul_bias_act(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *o[3];
    int ta, tb, act;
    if (!PyArg_ParseTuple(args, "OOOppi:matmul_bias_act", &o[0], &o[1], &o[2], &ta, &tb, &act))
        return NULL;
    mp_tensor *t[3] = {NULL, NULL, NULL};
    PyObject *r = NULL;
    if (mp_py_to_tensor(o[0], MP_NO_DTYPE, 0, &t[0]))
        return NULL;
    for (int i = 1; i < 3; i++)
        if (mp_py_to_tensor(o[i], t[0]->dtype, 0, &t[i]))
            goto out;
    mp_attrs at = {{0}};
    at.i0 = ta, at.i1 = tb, at.i2 = act;
    r = mp_py_run_wrap(MP_OP_MATMUL_BIAS_ACT, 3, t, &at);
out:
    for (int i = 0; i < 3; i++)
        mp_tensor_decref(t[i]);
    return r;
}

static PyObject *py_dnnl_info(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    return PyUnicode_FromString(mp_dnnl_info());
}

static PyObject *py_dnnl_force_reference(PyObject *m, PyObject *arg) {
    (void)m;
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    return PyBool_FromLong(mp_dnnl_force_reference(on));
}

/* gemm_path(dtype, mode=None) -> the path now ("onednn" or "openblas"); mode "auto",
 * "widen"/"openblas" or "onednn" sets it first (tests run both paths on every machine). */
static PyObject *py_gemm_path(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *dto;
    const char *mode = NULL;
    if (!PyArg_ParseTuple(args, "O|z:gemm_path", &dto, &mode))
        return NULL;
    int dt = mp_py_dtype_from(dto);
    if (dt < 0)
        return NULL;
    if (dt != MP_F32 && dt != MP_F16 && dt != MP_BF16)
        return PyErr_Format(PyExc_ValueError, "gemm_path: float32, float16 or bfloat16, got %s",
                            mp_dtype_name((mp_dtype)dt));
    if (mode) {
        int md = strcmp(mode, "auto") == 0                                     ? MP_GEMM_AUTO
                 : strcmp(mode, "widen") == 0 || strcmp(mode, "openblas") == 0 ? MP_GEMM_WIDEN
                 : strcmp(mode, "onednn") == 0                                 ? MP_GEMM_ONEDNN
                                                                               : -1;
        if (md < 0)
            return PyErr_Format(PyExc_ValueError,
                                "gemm_path: mode must be 'auto', 'widen', 'openblas' or "
                                "'onednn', got '%s'",
                                mode);
        mp_gemm_set_mode((mp_dtype)dt, md);
    }
    return PyUnicode_FromString(mp_gemm_uses_onednn((mp_dtype)dt) ? "onednn" : "openblas");
}

/* gemm_small_f32(M, N, K) -> whether a float32 product of that shape takes the small-batch
 * oneDNN route (gemm_small.c; tests check both routes). */
static PyObject *py_gemm_small_f32(PyObject *m, PyObject *args) {
    (void)m;
    long long M, N, K;
    if (!PyArg_ParseTuple(args, "LLL:gemm_small_f32", &M, &N, &K))
        return NULL;
    return PyBool_FromLong(mp_gemm_small_f32(M, N, K));
}

static PyObject *py_pool_workspace_uses(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    return PyLong_FromLongLong((long long)mp_pool_workspace_uses());
}

static PyObject *py_pool_workspace_keep(PyObject *m, PyObject *arg) {
    (void)m;
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    return PyBool_FromLong(mp_pool_workspace_keep(on));
}

static PyObject *py_batch_moments_two_pass(PyObject *m, PyObject *arg) {
    (void)m;
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    return PyBool_FromLong(mp_cpu_moments_two_pass(on));
}

static PyMethodDef nn_methods[] = {
    {"gemm_path", py_gemm_path, METH_VARARGS,
     "gemm_path(dtype, mode=None): which library multiplies dtype on the CPU ('onednn' or 'openblas'); "
     "mode 'auto', 'widen' (= 'openblas') or 'onednn' sets it first. Env: MIXPREC_GEMM16=widen|onednn."},
    {"gemm_small_f32", py_gemm_small_f32, METH_VARARGS,
     "gemm_small_f32(M, N, K): whether a float32 product of that shape takes the small-batch oneDNN route "
     "(on one thread per column block; gemm_path('float32', 'openblas') turns it off)."},
    {"window_op", py_window_op, METH_VARARGS,
     "window_op(code, inputs, strides, dilations_or_window, padding, pads, nchw, shape): a convolution or "
     "pooling op of ops.def."},
    {"batch_norm", py_batch_norm, METH_VARARGS,
     "batch_norm(x, scale, offset, mean, variance, epsilon, channels_first): one pass of batch "
     "normalization with given (float32) statistics."},
    {"matmul_bias_act", py_matmul_bias_act, METH_VARARGS,
     "matmul_bias_act(a, b, bias, transpose_a, transpose_b, act): MatMul + bias (+ ReLU when act) as one op."},
    {"batch_stats", py_batch_stats, METH_VARARGS,
     "batch_stats(code, inputs, channels_first): BatchMoments, BatchMomentsGrad or BatchNormGradSums."},
    {"pool_workspace_uses", py_pool_workspace_uses, METH_NOARGS,
     "Debug counter: MaxPoolGrad calls that used the argmax workspace MaxPool kept (no second forward)."},
    {"pool_workspace_keep", py_pool_workspace_keep, METH_O,
     "pool_workspace_keep(on): whether MaxPool keeps its argmax workspace for MaxPoolGrad (default True; "
     "False for A/B measurements); returns the previous setting."},
    {"batch_moments_two_pass", py_batch_moments_two_pass, METH_O,
     "batch_moments_two_pass(on): the CPU's BatchMoments in two reads (mean, then deviations) instead of one "
     "(A/B measurements, tests); returns the previous setting."},
    {"dnnl_info", py_dnnl_info, METH_NOARGS, "oneDNN's version and the instruction set it dispatches to."},
    {"dnnl_force_reference", py_dnnl_force_reference, METH_O,
     "Route convolution and pooling through the float64 loop kernels (tests); returns the previous setting."},
    {NULL},
};

int mp_py_nn_init(PyObject *module) {
    return PyModule_AddFunctions(module, nn_methods);
}
