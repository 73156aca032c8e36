/* collective.c (binding) — communicators as capsules and the calls on them: all-reduce,
 * broadcast, barrier and abort of lists of tensors, grouped by dtype into one fused bucket
 * per dtype; the engine runs with the GIL released. Parses, converts and raises only:
 * the numbers are reduced in csrc/collective*.c. */
#include <stdlib.h>
#include <string.h>

#include "mp_py.h"
#include "../collective.h"

static const char *CAPSULE = "mixprec.comm";
PyObject *MpExc_Unavailable;

static void comm_capsule_free(PyObject *cap) {
    mp_comm *c = PyCapsule_GetPointer(cap, CAPSULE);
    if (c)
        mp_comm_free(c);
}

static mp_comm *get_comm(PyObject *o) {
    if (!PyCapsule_IsValid(o, CAPSULE)) {
        PyErr_Format(PyExc_TypeError, "expected a communicator (from comm_threads/comm_mpi), "
                     "got %.80s", Py_TYPE(o)->tp_name);
        return NULL;
    }
    return PyCapsule_GetPointer(o, CAPSULE);
}

static PyObject *wrap_comm(mp_comm *c) {
    PyObject *cap = PyCapsule_New(c, CAPSULE, comm_capsule_free);
    if (!cap)
        mp_comm_free(c);
    return cap;
}

/* A communicator that borrows `other` (the NCCL engine names dead peers through the MPI
 * one): the capsule holds a reference to other's capsule, dropped after c is freed. */
static void comm_capsule_free_ref(PyObject *cap) {
    PyObject *ref = PyCapsule_GetContext(cap);
    comm_capsule_free(cap);
    Py_XDECREF(ref);
}

static PyObject *wrap_comm_holding(mp_comm *c, PyObject *other) {
    PyObject *cap = wrap_comm(c);
    if (cap && other != Py_None) {
        Py_INCREF(other);
        PyCapsule_SetContext(cap, other);
        PyCapsule_SetDestructor(cap, comm_capsule_free_ref);
    }
    return cap;
}

static PyObject *py_comm_threads(PyObject *self, PyObject *args) {
    int size;
    double timeout;
    if (!PyArg_ParseTuple(args, "id", &size, &timeout))
        return NULL;
    mp_comm *c = NULL;
    mp_status st = mp_comm_threads_new(size, timeout, &c);
    return st != MP_OK ? mp_py_raise(st) : wrap_comm(c);
}

static PyObject *py_comm_mpi(PyObject *self, PyObject *args) {
    const char *lib;
    double timeout;
    if (!PyArg_ParseTuple(args, "sd", &lib, &timeout))
        return NULL;
    mp_comm *c = NULL;
    mp_status st;
    Py_BEGIN_ALLOW_THREADS
    st = mp_comm_mpi_new(lib, timeout, &c);
    Py_END_ALLOW_THREADS
    return st != MP_OK ? mp_py_raise(st) : wrap_comm(c);
}

/* comm_nccl(library, devices, mpi_comm_or_None, timeout_s, bucket_bytes=0) */
static PyObject *py_comm_nccl(PyObject *self, PyObject *args) {
    const char *lib;
    PyObject *devs_o, *mpi_o;
    double timeout;
    long long bucket = 0;
    if (!PyArg_ParseTuple(args, "sOOd|L", &lib, &devs_o, &mpi_o, &timeout, &bucket))
        return NULL;
    mp_comm *mpi = NULL;
    if (mpi_o != Py_None && !(mpi = get_comm(mpi_o)))
        return NULL;
    PyObject *seq = PySequence_Fast(devs_o, "comm_nccl: devices must be a list of GPU ordinals");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int devs[64];
    if (n < 1 || n > 64) {
        Py_DECREF(seq);
        return PyErr_Format(PyExc_ValueError, "comm_nccl: %zd GPUs (1..64 supported)", n);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long d = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (d == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return NULL;
        }
        devs[i] = (int)d;
    }
    Py_DECREF(seq);
    mp_comm *c = NULL;
    mp_status st;
    Py_BEGIN_ALLOW_THREADS
    st = mp_comm_nccl_new(lib, (int)n, devs, mpi, timeout, (int64_t)bucket, &c);
    Py_END_ALLOW_THREADS
    return st != MP_OK ? mp_py_raise(st) : wrap_comm_holding(c, mpi_o);
}

/* nccl_load(library): loads libnccl (the error says what to install) */
static PyObject *py_nccl_load(PyObject *self, PyObject *arg) {
    const char *lib = PyUnicode_AsUTF8(arg);
    if (!lib)
        return NULL;
    mp_status st;
    Py_BEGIN_ALLOW_THREADS
    st = mp_nccl_load(lib);
    Py_END_ALLOW_THREADS
    if (st != MP_OK)
        return mp_py_raise(st);
    Py_RETURN_NONE;
}

/* coll_plan_buckets(counts, esize, max_bytes) -> the first buffer of each bucket, then n */
static PyObject *py_coll_plan_buckets(PyObject *self, PyObject *args) {
    PyObject *counts_o;
    Py_ssize_t esize;
    long long max_bytes;
    if (!PyArg_ParseTuple(args, "OnL", &counts_o, &esize, &max_bytes))
        return NULL;
    if (esize <= 0 || max_bytes <= 0)
        return PyErr_Format(PyExc_ValueError, "coll_plan_buckets: esize and max_bytes must be positive");
    PyObject *seq = PySequence_Fast(counts_o, "coll_plan_buckets: counts must be a list");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int64_t *counts = calloc((size_t)n + 1, sizeof *counts);
    int *starts = calloc((size_t)n + 2, sizeof *starts);
    PyObject *res = NULL;
    if (!counts || !starts) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        counts[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        if (counts[i] == -1 && PyErr_Occurred())
            goto done;
        if (counts[i] < 0) {
            PyErr_Format(PyExc_ValueError, "coll_plan_buckets: negative count at %zd", i);
            goto done;
        }
    }
    int nb = mp_coll_plan_buckets((int)n, counts, (size_t)esize, (int64_t)max_bytes, starts);
    res = PyList_New(nb + 1);
    for (int b = 0; res && b <= nb; b++) {
        PyObject *v = PyLong_FromLong(starts[b]);
        if (!v) {
            Py_CLEAR(res);
            break;
        }
        PyList_SET_ITEM(res, b, v);
    }
done:
    free(counts);
    free(starts);
    Py_DECREF(seq);
    return res;
}

static PyObject *py_comm_info(PyObject *self, PyObject *o) {
    mp_comm *c = get_comm(o);
    if (!c)
        return NULL;
    return Py_BuildValue("(siid)", c->be->name, c->size, c->rank, c->timeout_s);
}

/* Whether a tensor on `dev` lives in device memory (the emulated GPU of the tests keeps
 * its tensors in host memory, so the host engines take them). */
static int device_memory(mp_device dev) {
    if (dev.type != MP_DEV_CUDA)
        return 0;
    const mp_backend *be = mp_backend_get(MP_DEV_CUDA);
    return !(be && be->name && strcmp(be->name, "emulated-gpu") == 0);
}

/* tensors (a list) -> new reference to a fast sequence of Tensor objects */
static PyObject *tensor_list(PyObject *o) {
    PyObject *seq = PySequence_Fast(o, "collectives take a list of tensors");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; i++)
        if (!MpTensor_Check(PySequence_Fast_GET_ITEM(seq, i))) {
            PyErr_Format(PyExc_TypeError, "collectives take tensors, got %.80s at position %zd",
                         Py_TYPE(PySequence_Fast_GET_ITEM(seq, i))->tp_name, i);
            Py_DECREF(seq);
            return NULL;
        }
    return seq;
}

/* Host outputs of one collective call: one allocation per dtype (on the device of that
 * dtype's first tensor; a tensor on another device gets its own), every output a view at a
 * 64-byte aligned offset of it (many small gradients cost one allocation, not one each; the
 * views' shared storage makes in-place updates of them copy first, as for any view).
 * On failure the Python error is set and the outputs made so far are in `outs`. */
#define FUSED_ALIGN 64
static int same_device(mp_device a, mp_device b) { return a.type == b.type && a.index == b.index; }
static mp_status fused_outputs(PyObject *seq, mp_tensor **outs) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (int dt = 0; dt < MP_DTYPE_COUNT; dt++) {
        size_t es = mp_dtype_size((mp_dtype)dt), bytes = 0;
        mp_device dev = {MP_DEV_CPU, 0};
        int any = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            mp_tensor *t = MpTensor_T(PySequence_Fast_GET_ITEM(seq, i));
            if ((int)t->dtype != dt)
                continue;
            if (!any)
                dev = mp_tensor_device(t);
            any = 1;
            if (!same_device(mp_tensor_device(t), dev))
                continue; /* another device: its own allocation, below */
            bytes = (bytes + FUSED_ALIGN - 1) / FUSED_ALIGN * FUSED_ALIGN + mp_tensor_nbytes(t);
        }
        if (!any)
            continue;
        int64_t total = (int64_t)((bytes + es - 1) / es);
        mp_tensor *base = NULL;
        mp_status st = mp_tensor_new((mp_dtype)dt, 1, &total, dev, &base);
        if (st != MP_OK) {
            mp_py_raise(st);
            return st;
        }
        size_t off = 0;
        for (Py_ssize_t i = 0; i < n && st == MP_OK; i++) {
            mp_tensor *t = MpTensor_T(PySequence_Fast_GET_ITEM(seq, i));
            if ((int)t->dtype != dt)
                continue;
            if (!same_device(mp_tensor_device(t), dev)) {
                st = mp_tensor_new((mp_dtype)dt, t->ndim, t->shape, mp_tensor_device(t), &outs[i]);
                continue;
            }
            off = (off + FUSED_ALIGN - 1) / FUSED_ALIGN * FUSED_ALIGN;
            st = mp_tensor_view(base, off, (mp_dtype)dt, t->ndim, t->shape, &outs[i]);
            off += mp_tensor_nbytes(t);
        }
        mp_tensor_decref(base); /* the views hold the storage */
        if (st != MP_OK) {
            mp_py_raise(st);
            return st;
        }
    }
    return MP_OK;
}

/* kind 0: all-reduce (arg = op), 1: broadcast (arg = root) */
static PyObject *collective_call(PyObject *args, int kind) {
    PyObject *cap, *lst;
    int rank, arg;
    if (!PyArg_ParseTuple(args, "OiOi", &cap, &rank, &lst, &arg))
        return NULL;
    mp_comm *c = get_comm(cap);
    if (!c)
        return NULL;
    if (kind == 0 && (arg < 0 || arg > MP_COLL_MAX))
        return PyErr_Format(PyExc_ValueError, "all_reduce: unknown reduction %d", arg);
    PyObject *seq = tensor_list(lst);
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *result = PyList_New(n);
    const void **in = calloc((size_t)n + 1, sizeof *in);
    void **out = calloc((size_t)n + 1, sizeof *out);
    int64_t *counts = calloc((size_t)n + 1, sizeof *counts);
    mp_tensor **outs = calloc((size_t)n + 1, sizeof *outs);
    int is_nccl = strcmp(c->be->name, "nccl") == 0;
    if (!result || !in || !out || !counts || !outs) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        mp_tensor *t = MpTensor_T(PySequence_Fast_GET_ITEM(seq, i));
        if (!mp_coll_dtype_ok(t->dtype)) {
            PyErr_Format(MpExc_DType, "collectives reduce float32, float16, bfloat16 and float64 "
                         "tensors, got %s at position %zd", mp_dtype_name(t->dtype), i);
            goto fail;
        }
        if (is_nccl && mp_comm_nccl_device(c, rank) >= 0 &&
            mp_tensor_device(t).index != mp_comm_nccl_device(c, rank)) {
            PyErr_Format(MpExc_InvalidArgument, "the NCCL engine's rank %d reduces tensors on GPU:%d; "
                         "position %zd is on GPU:%d", rank, mp_comm_nccl_device(c, rank), i,
                         mp_tensor_device(t).index);
            goto fail;
        }
        /* NCCL: GPU tensors (the emulated GPU's included, for the tests' fake libnccl);
         * the host engines: host memory (the CPU's or the emulated GPU's) */
        if (is_nccl ? mp_tensor_device(t).type != MP_DEV_CUDA : device_memory(mp_tensor_device(t))) {
            PyErr_Format(MpExc_InvalidArgument, "the %s collectives engine takes %s tensors; "
                         "position %zd is on %s:%d", c->be->name, is_nccl ? "GPU" : "host",
                         i, mp_tensor_device(t).type == MP_DEV_CUDA ? "GPU" : "CPU",
                         mp_tensor_device(t).index);
            goto fail;
        }
        if (is_nccl) { /* device buffers: one allocation each (the GPU allocator's pool) */
            mp_status st = mp_tensor_new(t->dtype, t->ndim, t->shape, mp_tensor_device(t),
                                         &outs[i]);
            if (st != MP_OK) {
                mp_py_raise(st);
                goto fail;
            }
        }
    }
    if (!is_nccl && fused_outputs(seq, outs) != MP_OK)
        goto fail;
    mp_status st = MP_OK;
    /* one fused bucket per dtype, in dtype order: every replica makes the same calls */
    for (int dt = 0; dt < MP_DTYPE_COUNT && st == MP_OK; dt++) {
        int m = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            mp_tensor *t = MpTensor_T(PySequence_Fast_GET_ITEM(seq, i));
            if ((int)t->dtype != dt)
                continue;
            in[m] = mp_tensor_data(t);
            out[m] = mp_tensor_data(outs[i]);
            counts[m] = t->numel;
            m++;
        }
        if (!m)
            continue;
        Py_BEGIN_ALLOW_THREADS
        if (kind == 0)
            st = MP_COLL_CALL(c, all_reduce, rank, (mp_dtype)dt, (mp_coll_op)arg, m, in, out, counts);
        else
            st = MP_COLL_CALL(c, broadcast, rank, arg, (mp_dtype)dt, m, in, out, counts);
        Py_END_ALLOW_THREADS
    }
    if (st != MP_OK) {
        mp_py_raise(st);
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *w = mp_py_wrap(outs[i]);
        outs[i] = NULL;
        if (!w)
            goto fail;
        PyList_SET_ITEM(result, i, w);
    }
    free(in);
    free(out);
    free(counts);
    free(outs);
    Py_DECREF(seq);
    return result;
fail:
    if (outs)
        for (Py_ssize_t i = 0; i < n; i++)
            if (outs[i])
                mp_tensor_decref(outs[i]);
    free(in);
    free(out);
    free(counts);
    free(outs);
    Py_XDECREF(result);
    Py_DECREF(seq);
    return NULL;
}

static PyObject *py_comm_all_reduce(PyObject *self, PyObject *args) {
    return collective_call(args, 0);
}

static PyObject *py_comm_broadcast(PyObject *self, PyObject *args) {
    return collective_call(args, 1);
}

/* all_reduce(c, rank, tensor): the AllReduce op (ops.def), recorded on the tapes so that the
 * gradient is summed over the replicas too. The GIL is released: the other replicas' threads
 * must run to reach the same sum. */
static PyObject *py_all_reduce(PyObject *self, PyObject *args) {
    PyObject *cap, *x;
    int rank;
    if (!PyArg_ParseTuple(args, "OiO", &cap, &rank, &x))
        return NULL;
    mp_comm *c = get_comm(cap);
    if (!c)
        return NULL;
    if (!MpTensor_Check(x))
        return PyErr_Format(PyExc_TypeError, "all_reduce takes a mixprec.Tensor, got %.80s",
                            Py_TYPE(x)->tp_name);
    mp_attrs at = {.i0 = (int64_t)(intptr_t)c, .i1 = rank};
    mp_tensor *in = MpTensor_T(x), *out = NULL;
    mp_status st;
    Py_BEGIN_ALLOW_THREADS
    st = mp_op_run(MP_OP_ALL_REDUCE, 1, &in, &at, &out);
    Py_END_ALLOW_THREADS
    return st == MP_OK ? mp_py_wrap(out) : mp_py_raise(st);
}

static PyObject *py_comm_barrier(PyObject *self, PyObject *args) {
    PyObject *cap;
    int rank;
    if (!PyArg_ParseTuple(args, "Oi", &cap, &rank))
        return NULL;
    mp_comm *c = get_comm(cap);
    if (!c)
        return NULL;
    mp_status st;
    Py_BEGIN_ALLOW_THREADS
    st = MP_COLL_CALL(c, barrier, rank);
    Py_END_ALLOW_THREADS
    if (st != MP_OK)
        return mp_py_raise(st);
    Py_RETURN_NONE;
}

static PyObject *py_comm_abort(PyObject *self, PyObject *args) {
    PyObject *cap;
    int rank;
    const char *why;
    if (!PyArg_ParseTuple(args, "Ois", &cap, &rank, &why))
        return NULL;
    mp_comm *c = get_comm(cap);
    if (!c)
        return NULL;
    mp_status st = mp_comm_abort(c, rank, why);
    if (st != MP_OK)
        return mp_py_raise(st);
    Py_RETURN_NONE;
}

/* Test hook (tests/distribute/test_collective.py): the communicator's engine loses slots. */
static PyObject *py_comm_drop_slots(PyObject *self, PyObject *args) {
    PyObject *cap;
    const char *slots;
    if (!PyArg_ParseTuple(args, "Os", &cap, &slots))
        return NULL;
    mp_comm *c = get_comm(cap);
    if (!c)
        return NULL;
    mp_status st = mp_comm_drop_slots(c, slots);
    if (st != MP_OK)
        return mp_py_raise(st);
    Py_RETURN_NONE;
}

static PyObject *py_mpi_finalize(PyObject *self, PyObject *noargs) {
    Py_BEGIN_ALLOW_THREADS
    mp_comm_mpi_finalize();
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *py_ids_issued(PyObject *self, PyObject *noargs) {
    return PyLong_FromLongLong((long long)mp_ids_issued());
}

static PyMethodDef collective_methods[] = {
    {"comm_threads", py_comm_threads, METH_VARARGS,
     "comm_threads(size, timeout_s): in-process communicator for `size` replica threads."},
    {"comm_mpi", py_comm_mpi, METH_VARARGS,
     "comm_mpi(library, timeout_s): MPI_COMM_WORLD through the standard-ABI library."},
    {"comm_nccl", py_comm_nccl, METH_VARARGS,
     "comm_nccl(library, devices, mpi_comm_or_None, timeout_s, bucket_bytes=0): NCCL "
     "communicator(s) over the GPU ordinals `devices` (one with MPI)."},
    {"nccl_load", py_nccl_load, METH_O, "nccl_load(library): load libnccl (clear error if absent)."},
    {"coll_plan_buckets", py_coll_plan_buckets, METH_VARARGS,
     "coll_plan_buckets(counts, esize, max_bytes) -> bucket starts + [n] (the NCCL engine's plan)."},
    {"comm_info", py_comm_info, METH_O, "comm_info(c) -> (engine, size, rank, timeout_s)"},
    {"all_reduce", py_all_reduce, METH_VARARGS,
     "all_reduce(c, rank, tensor) -> the replicas' sum, differentiable (the AllReduce op)"},
    {"comm_all_reduce", py_comm_all_reduce, METH_VARARGS,
     "comm_all_reduce(c, rank, tensors, op) -> new tensors (op: 0 sum, 1 mean, 2 max)"},
    {"comm_broadcast", py_comm_broadcast, METH_VARARGS,
     "comm_broadcast(c, rank, tensors, root) -> root's tensors"},
    {"_comm_drop_slots", py_comm_drop_slots, METH_VARARGS,
     "_comm_drop_slots(c, 'barrier,broadcast'): test hook, the engine loses those slots"},
    {"comm_barrier", py_comm_barrier, METH_VARARGS, "comm_barrier(c, rank)"},
    {"comm_abort", py_comm_abort, METH_VARARGS, "comm_abort(c, rank, why): fail the others' calls"},
    {"mpi_finalize", py_mpi_finalize, METH_NOARGS, "MPI_Finalize unless a peer was lost."},
    {"ids_issued", py_ids_issued, METH_NOARGS, "How many tensor ids were issued (devices used)."},
    {NULL},
};

int mp_py_collective_init(PyObject *module) {
    PyObject *bases = PyTuple_Pack(2, MpExc_OpError, PyExc_RuntimeError);
    MpExc_Unavailable = bases ? PyErr_NewExceptionWithDoc(
        "mixprec.errors.UnavailableError",
        "A collective's peer is lost or did not answer in time (tf.errors.UnavailableError).",
        bases, NULL) : NULL;
    Py_XDECREF(bases);
    if (!MpExc_Unavailable)
        return -1;
    Py_INCREF(MpExc_Unavailable);
    if (PyModule_AddObject(module, "UnavailableError", MpExc_Unavailable) < 0)
        return -1;
    PyModule_AddIntConstant(module, "COLL_SUM", MP_COLL_SUM);
    PyModule_AddIntConstant(module, "COLL_MEAN", MP_COLL_MEAN);
    PyModule_AddIntConstant(module, "COLL_MAX", MP_COLL_MAX);
    PyModule_AddIntConstant(module, "COLL_BUCKET_BYTES", (long)MP_COLL_BUCKET_BYTES);
    return PyModule_AddFunctions(module, collective_methods);
}
