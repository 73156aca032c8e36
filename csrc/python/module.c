/* module.c — mixprec._core: module creation, exception classes, registration of the
 * Python-side objects (DType, TensorShape) and small introspection functions.
 * NOTE: the only file that includes numpy_api.h without NO_IMPORT_ARRAY. */
#include "numpy_api.h"

#include "mp_py.h"
#include "../graph.h"

#include <pthread.h>
#include <time.h>

PyObject *MpExc_OpError, *MpExc_InvalidArgument, *MpExc_DType, *MpExc_OutOfRange, *MpExc_Internal, *MpExc_Cuda,
    *MpExc_ResourceExhausted;
PyObject *MpPy_DTypes[MP_DTYPE_COUNT];
PyObject *MpPy_TensorShape, *MpPy_AsDType, *MpPy_Bf16Descr;

const char *mp_blas_config(void);
void mp_blas_set_num_threads(int n);
void mp_cpu_cache_clear(void);
size_t mp_cpu_cache_bytes(void);

/* _register(dtypes: tuple of 9 DType objects in enum order, TensorShape, as_dtype) */
static PyObject *py_register(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *dtypes, *shape_cls, *as_dtype;
    if (!PyArg_ParseTuple(args, "O!OO", &PyTuple_Type, &dtypes, &shape_cls, &as_dtype))
        return NULL;
    if (PyTuple_GET_SIZE(dtypes) != MP_DTYPE_COUNT) {
        PyErr_Format(PyExc_ValueError, "_register: expected %d dtypes", MP_DTYPE_COUNT);
        return NULL;
    }
    for (int i = 0; i < MP_DTYPE_COUNT; i++)
        Py_XSETREF(MpPy_DTypes[i], Py_NewRef(PyTuple_GET_ITEM(dtypes, i)));
    Py_XSETREF(MpPy_TensorShape, Py_NewRef(shape_cls));
    Py_XSETREF(MpPy_AsDType, Py_NewRef(as_dtype));
    Py_RETURN_NONE;
}

/* crc32c(buffer, crc=0) -> int: CRC-32C of any contiguous buffer (bytes, memoryview,
 * NumPy array), continuing crc; the GIL is released for large buffers. */
static PyObject *py_crc32c(PyObject *m, PyObject *args) {
    (void)m;
    Py_buffer view;
    unsigned long crc = 0;
    if (!PyArg_ParseTuple(args, "y*|k", &view, &crc))
        return NULL;
    uint32_t out;
    if (view.len > (1 << 16)) {
        Py_BEGIN_ALLOW_THREADS out = mp_crc32c_extend((uint32_t)crc, view.buf, (size_t)view.len);
        Py_END_ALLOW_THREADS
    } else {
        out = mp_crc32c_extend((uint32_t)crc, view.buf, (size_t)view.len);
    }
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(out);
}

static PyObject *py_cast_isa(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    return PyUnicode_FromString(mp_cast_isa());
}

static PyObject *py_vecmath_isa(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    return PyUnicode_FromString(mp_vecmath_isa());
}

static PyObject *py_force_scalar_casts(PyObject *m, PyObject *arg) {
    (void)m;
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    return PyBool_FromLong(mp_cast_force_scalar(on));
}

static PyObject *py_get_num_threads(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    return PyLong_FromLong(mp_num_threads());
}

static PyObject *py_set_num_threads(PyObject *m, PyObject *arg) {
    (void)m;
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (n < 1) {
        PyErr_SetString(PyExc_ValueError, "the number of threads must be at least 1");
        return NULL;
    }
    if (n > 1024) /* the pool caps itself lower still (parallel.c); never truncate a huge n */
        n = 1024;
    mp_set_num_threads((int)n);
    mp_blas_set_num_threads((int)n);
    Py_RETURN_NONE;
}

/* pool_spin_us(us=-1) -> the previous setting; us >= 0 sets how long the thread pool polls
 * before sleeping (parallel.c; MIXPREC_POOL_SPIN_US sets it at start). */
static PyObject *py_pool_spin_us(PyObject *m, PyObject *args) {
    (void)m;
    int us = -1;
    if (!PyArg_ParseTuple(args, "|i:pool_spin_us", &us))
        return NULL;
    return PyLong_FromLong(mp_pool_spin_us(us));
}

static PyObject *py_device_count(PyObject *m, PyObject *arg) {
    (void)m;
    long t = PyLong_AsLong(arg);
    if (t == -1 && PyErr_Occurred())
        return NULL;
    return PyLong_FromLong(mp_device_count((int)t));
}

static PyObject *py_op_table(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    static const char *const amp_names[] = {"allow", "infer", "deny", "clear", "none"};
    PyObject *lst = PyList_New(0);
    if (!lst)
        return NULL;
#define MP_OP(NAME, tfname, pyname, nin, ampc, family, kind)                                                 \
    {                                                                                                         \
        const mp_op_info *inf = mp_op_get_info(MP_OP_##NAME);                                                 \
        PyObject *row = Py_BuildValue("(issis)", (int)MP_OP_##NAME, tfname, pyname, nin, amp_names[inf->amp]); \
        if (!row || PyList_Append(lst, row) < 0) {                                                            \
            Py_XDECREF(row);                                                                                  \
            Py_DECREF(lst);                                                                                   \
            return NULL;                                                                                      \
        }                                                                                                     \
        Py_DECREF(row);                                                                                       \
    }
#include "../ops.def"
#undef MP_OP
    return lst;
}

static PyObject *py_blas_config(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    return PyUnicode_FromString(mp_blas_config());
}

static PyObject *py_cpu_cache(PyObject *m, PyObject *arg) {
    (void)m;
    int clear = PyObject_IsTrue(arg);
    if (clear < 0)
        return NULL;
    if (clear)
        mp_cpu_cache_clear();
    return PyLong_FromSize_t(mp_cpu_cache_bytes());
}

/* memory_stats(device_type, index, reset_peak) -> (current, peak): the device's memory_stats
 * slot (backend.def): bytes held for tensors and the high-water mark since the last reset;
 * with reset_peak the mark restarts from the current value (after reading it). */
static PyObject *py_memory_stats(PyObject *m, PyObject *args) {
    (void)m;
    int type, index, reset;
    if (!PyArg_ParseTuple(args, "iip:memory_stats", &type, &index, &reset))
        return NULL;
    int64_t cur = 0, peak = 0;
    mp_status st;
    Py_BEGIN_ALLOW_THREADS
    st = mp_device_memory_stats((mp_device){type, index}, reset, &cur, &peak);
    Py_END_ALLOW_THREADS
    if (st != MP_OK)
        return mp_py_raise(st);
    return Py_BuildValue("(LL)", (long long)cur, (long long)peak);
}

/* synchronize(device_type, index): waits for the device's queued work (synchronize slot). */
static PyObject *py_synchronize(PyObject *m, PyObject *args) {
    (void)m;
    int type, index;
    if (!PyArg_ParseTuple(args, "ii:synchronize", &type, &index))
        return NULL;
    mp_status st;
    Py_BEGIN_ALLOW_THREADS
    st = mp_device_synchronize((mp_device){type, index});
    Py_END_ALLOW_THREADS
    if (st != MP_OK)
        return mp_py_raise(st);
    Py_RETURN_NONE;
}

/* cuda_graph_counts() -> {'captures', 'launches', 'failed'}: graph replays captured as
 * CUDA graphs in this process (csrc/graph_capture.c; all 0 on a CPU). */
static PyObject *py_cuda_graph_counts(PyObject *m, PyObject *noargs) {
    (void)m;
    (void)noargs;
    int64_t c, l, f;
    mp_graph_capture_counts(&c, &l, &f);
    return Py_BuildValue("{s:L,s:L,s:L}", "captures", (long long)c, "launches", (long long)l, "failed",
                         (long long)f);
}

/* _backend_slots(device_type) -> {slot: implemented} over backend.def's slots, or None when
 * no backend is registered for the type (tests: the CPU table is complete). */
static PyObject *py_backend_slots(PyObject *m, PyObject *arg) {
    (void)m;
    long t = PyLong_AsLong(arg);
    if (t == -1 && PyErr_Occurred())
        return NULL;
    const mp_backend *be = mp_backend_get((int)t);
    if (!be)
        Py_RETURN_NONE;
    PyObject *d = PyDict_New();
    for (int i = 0; d && i < mp_backend_slot_count(); i++)
        if (PyDict_SetItemString(d, mp_backend_slot_info(i, NULL), mp_backend_has_slot(be, i) ? Py_True : Py_False)) {
            Py_CLEAR(d);
        }
    return d;
}

/* _emulate_gpu(on, without=None): the test aid of backend.c (the CPU kernels as `on` "GPUs",
 * True is one,
 * optionally without the comma-separated slots `without`); returns the number of GPUs
 * registered afterwards. */
static PyObject *py_emulate_gpu(PyObject *m, PyObject *args) {
    (void)m;
    int on;
    const char *without = NULL;
    if (!PyArg_ParseTuple(args, "i|z:_emulate_gpu", &on, &without))
        return NULL;
    mp_status st = mp_backend_emulate_gpu(on, without);
    if (st != MP_OK)
        return mp_py_raise(st);
    return PyLong_FromLong(mp_device_count(MP_DEV_CUDA));
}

/* _emulate_graphs(on): the emulated GPU's CUDA-graph slots (test aid, backend.c). */
static PyObject *py_emulate_graphs(PyObject *m, PyObject *arg) {
    (void)m;
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    mp_status st = mp_backend_emulate_graphs(on);
    if (st != MP_OK)
        return mp_py_raise(st);
    Py_RETURN_NONE;
}

/* host_syncs(device_type, index) -> int: the backend's host_syncs slot (debug counter). */
static PyObject *py_host_syncs(PyObject *m, PyObject *args) {
    (void)m;
    int type, index;
    if (!PyArg_ParseTuple(args, "ii:host_syncs", &type, &index))
        return NULL;
    int64_t n = 0;
    mp_status st = mp_device_host_syncs((mp_device){type, index}, &n);
    if (st != MP_OK)
        return mp_py_raise(st);
    return PyLong_FromLongLong(n);
}

static PyObject *py_backend_name(PyObject *m, PyObject *arg) {
    (void)m;
    long t = PyLong_AsLong(arg);
    if (t == -1 && PyErr_Occurred())
        return NULL;
    const mp_backend *be = mp_backend_get((int)t);
    if (!be)
        Py_RETURN_NONE;
    return PyUnicode_FromString(be->name);
}

/* _threads_used(n): how many distinct threads ran the chunks of one parallel loop over n
 * items (tests of the pool's size after set_num_threads). */
#define PROBE_MAX 128
typedef struct {
    pthread_mutex_t mu;
    pthread_t seen[PROBE_MAX];
    int count;
} threads_probe;

static void probe_range(void *vctx, int64_t b, int64_t e) {
    threads_probe *p = vctx;
    (void)b;
    (void)e;
    pthread_t me = pthread_self();
    pthread_mutex_lock(&p->mu);
    int known = 0;
    for (int i = 0; i < p->count; i++)
        known |= pthread_equal(p->seen[i], me);
    if (!known && p->count < PROBE_MAX)
        p->seen[p->count++] = me;
    pthread_mutex_unlock(&p->mu);
    struct timespec ts = {0, 50000000}; /* 50 ms: long enough that every joined worker gets a chunk */
    nanosleep(&ts, NULL);
}

static PyObject *py_threads_used(PyObject *m, PyObject *arg) {
    (void)m;
    long long n = PyLong_AsLongLong(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (n < 0 || n > 64) { /* each item sleeps 50 ms */
        PyErr_Format(PyExc_ValueError, "_threads_used(n) takes 0 <= n <= 64, got %lld", n);
        return NULL;
    }
    threads_probe p = {.count = 0};
    pthread_mutex_init(&p.mu, NULL);
    Py_BEGIN_ALLOW_THREADS
    mp_parallel_for(n, 1, probe_range, &p);
    Py_END_ALLOW_THREADS
    pthread_mutex_destroy(&p.mu);
    return PyLong_FromLong(p.count);
}

static PyObject *py_check_numerics(PyObject *m, PyObject *arg) {
    (void)m;
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    return PyBool_FromLong(mp_check_numerics_set(on));
}

/* set_scope(name or None) -> previous name (or None) */
static PyObject *py_set_scope(PyObject *m, PyObject *arg) {
    (void)m;
    const char *prev = mp_scope_get();
    PyObject *r = prev[0] ? PyUnicode_FromString(prev) : Py_NewRef(Py_None);
    if (!r)
        return NULL;
    if (arg == Py_None) {
        mp_scope_set(NULL);
    } else {
        const char *s = PyUnicode_AsUTF8(arg);
        if (!s) {
            Py_DECREF(r);
            return NULL;
        }
        mp_scope_set(s);
    }
    return r;
}

static PyMethodDef module_methods[] = {
    {"check_numerics", py_check_numerics, METH_O, "check_numerics(on) -> previous: fail ops that produce inf/NaN"},
    {"set_scope", py_set_scope, METH_O, "set_scope(name or None) -> previous: name shown by check_numerics"},
    {"_register", py_register, METH_VARARGS, NULL},
    {"memory_stats", py_memory_stats, METH_VARARGS,
     "memory_stats(device_type, index, reset_peak) -> (current, peak) bytes of tensor memory."},
    {"synchronize", py_synchronize, METH_VARARGS, "synchronize(device_type, index): waits for queued work."},
    {"cuda_graph_counts", py_cuda_graph_counts, METH_NOARGS,
     "cuda_graph_counts() -> {'captures', 'launches', 'failed'} (debug counters)."},
    {"_backend_slots", py_backend_slots, METH_O, "_backend_slots(device_type) -> {slot: implemented} or None."},
    {"_threads_used", py_threads_used, METH_O, "_threads_used(n): distinct threads in one parallel loop (tests)."},
    {"crc32c", py_crc32c, METH_VARARGS, "crc32c(buffer, crc=0) -> CRC-32C of the bytes, continuing crc."},
    {"cast_isa", py_cast_isa, METH_NOARGS, "Which cast kernels run: 'avx2+f16c' or 'scalar'."},
    {"vecmath_isa", py_vecmath_isa, METH_NOARGS, "Which exp the CPU kernels use: 'libmvec-avx2' or 'scalar'."},
    {"force_scalar_casts", py_force_scalar_casts, METH_O, "Use the scalar cast path (tests); returns the old flag."},
    {"get_num_threads", py_get_num_threads, METH_NOARGS, NULL},
    {"set_num_threads", py_set_num_threads, METH_O, NULL},
    {"pool_spin_us", py_pool_spin_us, METH_VARARGS,
     "pool_spin_us(us=-1) -> the previous value; us >= 0 sets how many microseconds the thread pool's "
     "workers (and a caller waiting for them) poll before sleeping (MIXPREC_POOL_SPIN_US; 0 = off)."},
    {"device_count", py_device_count, METH_O, "device_count(type): 0 = CPU, 1 = CUDA"},
    {"op_table", py_op_table, METH_NOARGS, "[(code, tf_name, py_name, n_inputs, amp_class)] from ops.def"},
    {"blas_config", py_blas_config, METH_NOARGS, "OpenBLAS's build/config string."},
    {"cpu_cache", py_cpu_cache, METH_O, "cpu_cache(clear): bytes held by the host block cache (after clearing)."},
    {"backend_name", py_backend_name, METH_O, "backend_name(type): the registered backend's name, or None."},
    {"_emulate_graphs", py_emulate_graphs, METH_O,
     "_emulate_graphs(on): test aid, CUDA-graph slots on the emulated GPU (kernels run while capturing)."},
    {"_emulate_gpu", py_emulate_gpu, METH_VARARGS,
     "_emulate_gpu(on, without=None): test aid, the CPU kernels registered as one GPU (or removed)."},
    {"host_syncs", py_host_syncs, METH_VARARGS, "host_syncs(device_type, index) -> host synchronisations so far."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "mixprec._core", "mixprec's C core: tensors, ops, casts.", -1, NULL,
};

static PyObject *new_exc(PyObject *mod, const char *name, PyObject *bases, const char *doc) {
    char full[128];
    snprintf(full, sizeof full, "mixprec.errors.%s", name);
    PyObject *e = PyErr_NewExceptionWithDoc(full, doc, bases, NULL);
    if (!e)
        return NULL;
    if (PyModule_AddObject(mod, name, Py_NewRef(e)) < 0) {
        Py_DECREF(e);
        Py_DECREF(e);
        return NULL;
    }
    return e;
}

PyMODINIT_FUNC PyInit__core(void) {
    import_array();
    PyObject *m = PyModule_Create(&moduledef);
    if (!m)
        return NULL;
    if (PyModule_AddFunctions(m, module_methods) < 0 || PyModule_AddFunctions(m, mp_py_functions) < 0)
        goto fail;
    /* TensorFlow's base class first: every mixprec error derives from it (errors.py gives it
       TF's (node_def, op, message) constructor and error_code) */
    if (!(MpExc_OpError = new_exc(m, "OpError", PyExc_Exception, "The base of every tf.errors exception.")))
        goto fail;
    if (mp_py_tensor_type_init(m) < 0 || mp_py_variable_type_init(m) < 0 || mp_py_train_init(m) < 0 || mp_py_custom_grad_init(m) < 0 || mp_py_graph_call_init(m) < 0 ||
        mp_py_graph_init(m) < 0 || mp_py_graph_loop_init(m) < 0 || mp_py_amp_init(m) < 0 || mp_py_nn_init(m) < 0 ||
        mp_py_collective_init(m) < 0 || mp_py_replica_vars_init(m) < 0 || mp_py_slicing_init(m) < 0 ||
        mp_py_linalg_init(m) < 0 || mp_py_math_init(m) < 0)
        goto fail;
    PyObject *b = PyTuple_Pack(2, MpExc_OpError, PyExc_ValueError);
    MpExc_InvalidArgument =
        b ? new_exc(m, "InvalidArgumentError", b, "An op received an argument it cannot use (shapes, dtypes, devices).")
          : NULL;
    Py_XDECREF(b);
    if (!MpExc_InvalidArgument)
        goto fail;
    b = PyTuple_Pack(2, MpExc_InvalidArgument, PyExc_TypeError);
    MpExc_DType = b ? new_exc(m, "InvalidDTypeError", b, "Incompatible dtypes (an InvalidArgumentError).") : NULL;
    Py_XDECREF(b);
    if (!MpExc_DType)
        goto fail;
    b = PyTuple_Pack(2, MpExc_InvalidArgument, PyExc_IndexError);
    MpExc_OutOfRange = b ? new_exc(m, "OutOfRangeError", b, "An index or slice out of range.") : NULL;
    Py_XDECREF(b);
    if (!MpExc_OutOfRange)
        goto fail;
    b = PyTuple_Pack(2, MpExc_OpError, PyExc_RuntimeError);
    MpExc_Internal = b ? new_exc(m, "InternalError", b, "A broken invariant inside mixprec.") : NULL;
    Py_XDECREF(b);
    if (!MpExc_Internal)
        goto fail;
    if (!(MpExc_Cuda = new_exc(m, "CudaError", MpExc_Internal, "A CUDA, cuBLAS or cuDNN call failed.")))
        goto fail;
    b = PyTuple_Pack(2, MpExc_OpError, PyExc_MemoryError);
    MpExc_ResourceExhausted = b ? new_exc(m, "ResourceExhaustedError", b, "Out of host or device memory.") : NULL;
    Py_XDECREF(b);
    if (!MpExc_ResourceExhausted)
        goto fail;
    /* ml_dtypes' bfloat16 numpy dtype */
    PyObject *mld = PyImport_ImportModule("ml_dtypes");
    if (!mld)
        goto fail;
    PyObject *bf = PyObject_GetAttrString(mld, "bfloat16");
    Py_DECREF(mld);
    if (!bf)
        goto fail;
    PyArray_Descr *descr = NULL;
    int ok = PyArray_DescrConverter(bf, &descr);
    Py_DECREF(bf);
    if (!ok)
        goto fail;
    MpPy_Bf16Descr = (PyObject *)descr;
    if (PyModule_AddIntConstant(m, "MAX_DIMS", MP_MAX_DIMS) < 0)
        goto fail;
    /* the C API backend plugins (mixprec._cuda) register through */
    PyObject *capi = PyCapsule_New((void *)&mp_c_api_table, MP_C_API_CAPSULE, NULL);
    if (!capi || PyModule_AddObject(m, "_C_API", capi) < 0) {
        Py_XDECREF(capi);
        goto fail;
    }
    if (PyModule_AddIntConstant(m, "C_API_VERSION", MP_C_API_VERSION) < 0)
        goto fail;
#ifdef MIXPREC_WITH_CUDA
    if (PyModule_AddIntConstant(m, "CUDA_COMPILED", 1) < 0)
        goto fail;
#else
    if (PyModule_AddIntConstant(m, "CUDA_COMPILED", 0) < 0)
        goto fail;
#endif
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
