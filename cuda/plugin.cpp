// plugin.cpp — the Python module mixprec._cuda: finds the GPUs and, when there is one,
// registers the CUDA backend table with the core through the core's C API capsule
// (_core._C_API). Also the GPU facts and debug knobs src/mixprec/_gpu_info.py reads.
// Must import on machines without a driver or a GPU, and then register nothing.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "mp_cuda.h"
#ifdef MP_WITH_CUDNN
#include "cudnn_load.h"
#endif

const mp_c_api *mp_cuda_api = nullptr;

static mp_backend table;

// The memory_stats slot: bytes in use in the device's pool and the pool's high-water mark
// (cudaMemPoolAttrUsedMemHigh); reset_peak restarts the mark.
static mp_status cuda_memory_stats(mp_device dev, int reset_peak, int64_t *current, int64_t *peak) {
    mp_cuda_ctx *c;
    mp_status st = mp_cuda_ctx_get(dev, &c);
    if (st != MP_OK)
        return st;
    uint64_t used = 0, high = 0, zero = 0;
    MP_CUDA_CHECK(cudaMemPoolGetAttribute(c->pool, cudaMemPoolAttrUsedMemCurrent, &used));
    MP_CUDA_CHECK(cudaMemPoolGetAttribute(c->pool, cudaMemPoolAttrUsedMemHigh, &high));
    if (reset_peak)
        MP_CUDA_CHECK(cudaMemPoolSetAttribute(c->pool, cudaMemPoolAttrUsedMemHigh, &zero));
    *current = (int64_t)used;
    *peak = (int64_t)high;
    return MP_OK;
}

// The synchronize slot: waits for the device's stream (counted as a host synchronisation).
static mp_status cuda_synchronize(mp_device dev) {
    mp_cuda_ctx *c;
    mp_status st = mp_cuda_ctx_get(dev, &c);
    return st == MP_OK ? mp_cuda_stream_sync(c) : st;
}

// The host_syncs slot: the plugin's counter (every GPU's waits together).
static mp_status cuda_host_syncs(mp_device, int64_t *count) {
    *count = mp_cuda_sync_count();
    return MP_OK;
}

// Explicit (not generated from backend.def): which function fills which slot is read here.
// A slot left out stays NULL, "not supported on the GPU" (MP_BACKEND_CALL reports it).
static void fill_table(void) {
    table.name = "cuda";
    table.alloc = mp_cuda_alloc;
    table.free = mp_cuda_free;
    table.copy_h2d = mp_cuda_copy_h2d;
    table.copy_d2h = mp_cuda_copy_d2h;
    table.copy_d2d = mp_cuda_copy_d2d;
    table.cast = mp_cuda_cast;
    table.fill = mp_cuda_fill;
    table.iota = mp_cuda_iota;
    table.unary = mp_cuda_unary;
    table.binary = mp_cuda_binary;
    table.where = mp_cuda_where;
    table.reduce = mp_cuda_reduce;
    table.argreduce = mp_cuda_argreduce;
    table.strided_copy = mp_cuda_strided_copy;
    table.gemm = mp_cuda_gemm;
    table.softmax = mp_cuda_softmax;
    table.one_hot = mp_cuda_one_hot;
    table.gather = mp_cuda_gather;
    table.scatter_add = mp_cuda_scatter_add;
    table.cumsum = mp_cuda_cumsum;
    table.scan = mp_cuda_scan;
    table.segment_reduce = mp_cuda_segment_reduce;
    table.scatter_nd = mp_cuda_scatter_nd;
    table.sort = mp_cuda_sort;
    table.linalg = mp_cuda_linalg;
    table.random = mp_cuda_random;
    table.softmax_xent = mp_cuda_softmax_xent;
    table.finite_check = mp_cuda_finite_check;
    table.optim_update = mp_cuda_optim_update;
    table.step_end = mp_cuda_step_end;
#ifdef MP_WITH_CUDNN
    table.conv = mp_cuda_conv; // cuDNN, opened on first use (a clear error when it is missing)
#endif
    table.pool = mp_cuda_pool;
    table.batch_norm = mp_cuda_batch_norm;
#ifdef MP_WITH_CUDNN
    table.conv_bias_act = mp_cuda_conv_bias_act; // one cuDNN graph (conv_cudnn.cpp)
#endif
    table.batch_stats = mp_cuda_batch_stats;
    table.gemm_bias_act = mp_cuda_gemm_bias_act; // cuBLASLt bias / ReLU+bias epilogue (gemm.cu)
    table.memory_stats = cuda_memory_stats;
    table.synchronize = cuda_synchronize;
    table.host_syncs = cuda_host_syncs;
    table.stream = mp_cuda_stream;
    table.stream_idle = mp_cuda_stream_idle;
    table.graph_capture_begin = mp_cuda_graph_capture_begin;
    table.graph_capture_end = mp_cuda_graph_capture_end;
    table.graph_launch = mp_cuda_graph_launch;
    table.graph_destroy = mp_cuda_graph_destroy;
}

static int device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) { // no driver, no device: none, not an error
        cudaGetLastError();
        return 0;
    }
    return n > MP_CUDA_MAX_DEVICES ? MP_CUDA_MAX_DEVICES : n;
}

// register(capsule) -> number of GPUs registered (0: none here, nothing changed)
static PyObject *py_register(PyObject *, PyObject *capsule) {
    const mp_c_api *api = (const mp_c_api *)PyCapsule_GetPointer(capsule, MP_C_API_CAPSULE);
    if (!api)
        return NULL;
    if (api->version != MP_C_API_VERSION || api->backend_size != sizeof(mp_backend)) {
        PyErr_Format(PyExc_ImportError,
                     "mixprec._cuda was built for the core's C API %d (backend table of %zu bytes) but "
                     "mixprec._core has %d (%zu bytes). hint: rebuild mixprec so both come from one source tree",
                     MP_C_API_VERSION, sizeof(mp_backend), api->version, api->backend_size);
        return NULL;
    }
    int n = device_count();
    if (n == 0)
        return PyLong_FromLong(0);
    mp_cuda_api = api;
    mp_cuda_set_device_count(n);
    fill_table();
    if (api->backend_register(MP_DEV_CUDA, &table, n) != MP_OK) {
        PyErr_Format(PyExc_RuntimeError, "mixprec: registering the CUDA backend failed: %s", api->error_message());
        return NULL;
    }
    return PyLong_FromLong(n);
}

// devices() -> [{"name", "compute_capability": (major, minor), "memory_bytes"}]
static PyObject *py_devices(PyObject *, PyObject *) {
    int n = device_count();
    PyObject *lst = PyList_New(0);
    if (!lst)
        return NULL;
    for (int i = 0; i < n; i++) {
        cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess) {
            cudaGetLastError();
            continue;
        }
        PyObject *d = Py_BuildValue("{s:s,s:(ii),s:K,s:i}", "name", p.name, "compute_capability", p.major, p.minor,
                                    "memory_bytes", (unsigned long long)p.totalGlobalMem, "multiprocessors",
                                    p.multiProcessorCount);
        if (!d || PyList_Append(lst, d) < 0) {
            Py_XDECREF(d);
            Py_DECREF(lst);
            return NULL;
        }
        Py_DECREF(d);
    }
    return lst;
}

static PyObject *py_runtime_version(PyObject *, PyObject *) {
    int v = 0;
    if (cudaRuntimeGetVersion(&v) != cudaSuccess)
        cudaGetLastError();
    return PyLong_FromLong(v);
}

static PyObject *py_driver_version(PyObject *, PyObject *) {
    int v = 0;
    if (cudaDriverGetVersion(&v) != cudaSuccess)
        cudaGetLastError();
    return PyLong_FromLong(v);
}

static PyObject *py_set_tf32(PyObject *, PyObject *arg) {
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    return PyBool_FromLong(mp_cuda_tf32.exchange(on));
}

static PyObject *py_sync_count(PyObject *, PyObject *) { return PyLong_FromLongLong(mp_cuda_sync_count()); }

static PyObject *raise_status(mp_status st) {
    PyErr_Format(st == MP_ERR_MEMORY ? PyExc_MemoryError : PyExc_RuntimeError, "%s", mp_cuda_api->error_message());
    return NULL;
}

// memory_info(index) -> {"free", "total", "pool_reserved", "pool_used"} in bytes
static PyObject *py_memory_info(PyObject *, PyObject *arg) {
    long i = PyLong_AsLong(arg);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (!mp_cuda_api || i < 0 || i >= device_count()) {
        PyErr_Format(PyExc_ValueError, "no GPU %ld is registered", i);
        return NULL;
    }
    mp_cuda_ctx *c;
    mp_status st = mp_cuda_ctx_get(mp_device{MP_DEV_CUDA, (int)i}, &c);
    if (st != MP_OK)
        return raise_status(st);
    size_t free_b = 0, total = 0;
    uint64_t reserved = 0, used = 0;
    if (cudaMemGetInfo(&free_b, &total) != cudaSuccess ||
        cudaMemPoolGetAttribute(c->pool, cudaMemPoolAttrReservedMemCurrent, &reserved) != cudaSuccess ||
        cudaMemPoolGetAttribute(c->pool, cudaMemPoolAttrUsedMemCurrent, &used) != cudaSuccess) {
        cudaError_t e = cudaGetLastError();
        PyErr_Format(PyExc_RuntimeError, "CUDA error reading memory information: %s", cudaGetErrorString(e));
        return NULL;
    }
    return Py_BuildValue("{s:K,s:K,s:K,s:K}", "free", (unsigned long long)free_b, "total", (unsigned long long)total,
                         "pool_reserved", (unsigned long long)reserved, "pool_used", (unsigned long long)used);
}

// cudnn_probe(path=None) -> (version, where): opens cuDNN as a convolution would (or the file
// at path) without keeping it: (91900, "/.../libcudnn.so.9"), or (0, the message a user sees).
static PyObject *py_cudnn_probe(PyObject *, PyObject *args) {
    const char *path = NULL;
    if (!PyArg_ParseTuple(args, "|z:cudnn_probe", &path))
        return NULL;
#ifdef MP_WITH_CUDNN
    char msg[4096];
    size_t version = 0;
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = mp_cudnn_probe(path, &version, msg, sizeof msg);
    Py_END_ALLOW_THREADS
    return Py_BuildValue("(ns)", ok ? (Py_ssize_t)version : (Py_ssize_t)0, msg);
#else
    (void)path;
    return Py_BuildValue("(is)", 0,
                         "mixprec's GPU plugin was built without cuDNN's headers (cudnn_graph.h), so convolutions do "
                         "not run on the GPU. hint: install cuDNN 9 (e.g. pip install nvidia-cudnn-cu13) and rebuild");
#endif
}

// _cudnn_describe_conv(capsule, kind, dtype, window) -> None: builds and finalizes the cuDNN
// descriptions (tensors, convolution, operation) of a conv slot call, with no GPU needed;
// raises RuntimeError with cuDNN's message when one is refused. kind 0/1/2 = forward,
// backward-data, backward-filter, 3/4 = forward + bias / + bias + ReLU fused; window = mp_window's fields in order (n, c, h, w, oc, oh, ow,
// kh, kw, sh, sw, dh, dw, pt, pb, pl, pr, groups, nchw). A test aid.
static PyObject *py_cudnn_describe_conv(PyObject *, PyObject *args) {
    PyObject *capsule;
    int kind;
    const char *dtn;
    mp_window w;
    memset(&w, 0, sizeof w);
    if (!PyArg_ParseTuple(args, "Ois(LLLLLLLLLLLLLLLLLLi):_cudnn_describe_conv", &capsule, &kind, &dtn, &w.n, &w.c,
                          &w.h, &w.w, &w.oc, &w.oh, &w.ow, &w.kh, &w.kw, &w.sh, &w.sw, &w.dh, &w.dw, &w.pt, &w.pb,
                          &w.pl, &w.pr, &w.groups, &w.nchw))
        return NULL;
    const mp_c_api *api = (const mp_c_api *)PyCapsule_GetPointer(capsule, MP_C_API_CAPSULE);
    if (!api)
        return NULL;
    if (kind < 0 || kind > 4 || w.groups < 1 || w.c % w.groups != 0) {
        PyErr_SetString(PyExc_ValueError, "_cudnn_describe_conv: bad kind or groups");
        return NULL;
    }
    mp_dtype dt = strcmp(dtn, "float32") == 0   ? MP_F32
                  : strcmp(dtn, "float16") == 0 ? MP_F16
                  : strcmp(dtn, "bfloat16") == 0 ? MP_BF16
                  : strcmp(dtn, "float64") == 0 ? MP_F64
                                                : MP_I32;
    if (dt == MP_I32) {
        PyErr_Format(PyExc_ValueError, "_cudnn_describe_conv: no convolution of %s", dtn);
        return NULL;
    }
#ifdef MP_WITH_CUDNN
    if (!mp_cuda_api)
        mp_cuda_api = api; // the error record (register() sets the same pointer)
    if (mp_cudnn_conv_describe(kind, dt, &w) != MP_OK) {
        PyErr_SetString(PyExc_RuntimeError, mp_cuda_api->error_message());
        return NULL;
    }
    Py_RETURN_NONE;
#else
    PyErr_SetString(PyExc_NotImplementedError, "mixprec's GPU plugin was built without cuDNN's headers");
    return NULL;
#endif
}

PyObject *mp_cuda_py_pool_on_host(PyObject *, PyObject *args); // host_check.cpp (a test aid)

static PyMethodDef methods[] = {
    {"_pool_on_host", mp_cuda_py_pool_on_host, METH_VARARGS,
     "_pool_on_host(kind, dtype, window, x, b) -> bytes: pool.cu's element rules run on the host (test aid)."},
    {"_cudnn_describe_conv", py_cudnn_describe_conv, METH_VARARGS,
     "_cudnn_describe_conv(_core._C_API, kind, dtype, window): the cuDNN descriptions of a convolution (test aid)."},
    {"cudnn_probe", py_cudnn_probe, METH_VARARGS,
     "cudnn_probe(path=None) -> (version, where or why not): can cuDNN 9 be opened here?"},
    {"register", py_register, METH_O, "register(_core._C_API) -> GPUs registered (0 when there is none)."},
    {"devices", py_devices, METH_NOARGS, "The CUDA devices this process can see."},
    {"runtime_version", py_runtime_version, METH_NOARGS, "CUDA runtime version (e.g. 13000)."},
    {"driver_version", py_driver_version, METH_NOARGS, "CUDA driver version (0 without a driver)."},
    {"set_tf32", py_set_tf32, METH_O, "TF32 for float32 matmuls on or off; returns the previous setting."},
    {"sync_count", py_sync_count, METH_NOARGS, "Host synchronisations so far (debug counter)."},
    {"memory_info", py_memory_info, METH_O, "memory_info(index) -> free/total/pool bytes of a GPU."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "mixprec._cuda", "mixprec's CUDA backend plugin.", -1,
                                       methods};

PyMODINIT_FUNC PyInit__cuda(void) {
    PyObject *m = PyModule_Create(&moduledef);
    if (!m)
        return NULL;
    if (PyModule_AddIntConstant(m, "C_API_VERSION", MP_C_API_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
