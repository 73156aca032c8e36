/* dlpack.c — zero-copy exchange with other array libraries through DLPack.
 * Owns the DLPack ABI declarations (written from the DLPack 1.0 specification), export
 * (__dlpack__, read-only) and import (from_dlpack: zero-copy for contiguous, element-aligned CPU
 * memory, else a copy). Imported memory is released by the producer's deleter, always called
 * with the GIL held. */
#define NO_IMPORT_ARRAY
#include "numpy_api.h"

#include <stdlib.h>
#include <string.h>

#include "mp_py.h"

/* ------------------------------------------------------------------ ABI (DLPack 1.0) */

enum { kDLCPU = 1, kDLCUDA = 2 };
enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLBool = 6 };

typedef struct {
    int32_t device_type;
    int32_t device_id;
} DLDevice;

typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

#define DLPACK_FLAG_BITMASK_READ_ONLY (1ULL << 0)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1ULL << 1)

/* ------------------------------------------------------------------ export */

typedef struct {
    DLManagedTensor legacy;
    DLManagedTensorVersioned versioned;
    mp_tensor *t;
    int64_t shape[MP_MAX_DIMS];
} export_ctx;

static void export_free(export_ctx *c) {
    mp_tensor_decref(c->t);
    free(c);
}
static void legacy_deleter(DLManagedTensor *m) { export_free(m->manager_ctx); }
static void versioned_deleter(DLManagedTensorVersioned *m) { export_free(m->manager_ctx); }

static void capsule_legacy_dtor(PyObject *cap) {
    if (PyCapsule_IsValid(cap, "dltensor")) { /* never consumed */
        DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
        if (m && m->deleter)
            m->deleter(m);
    }
}
static void capsule_versioned_dtor(PyObject *cap) {
    if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        DLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
        if (m && m->deleter)
            m->deleter(m);
    }
}

static int dl_dtype(mp_dtype dt, DLDataType *out) {
    out->lanes = 1;
    out->bits = (uint8_t)(mp_dtype_size(dt) * 8);
    switch (dt) {
    case MP_F32:
    case MP_F16:
    case MP_F64: out->code = kDLFloat; return 0;
    case MP_BF16: out->code = kDLBfloat; return 0;
    case MP_I32:
    case MP_I64:
    case MP_I8: out->code = kDLInt; return 0;
    case MP_U8: out->code = kDLUInt; return 0;
    case MP_BOOL: out->code = kDLBool; return 0;
    default: return -1;
    }
}

static int dtype_from_dl(DLDataType d) {
    if (d.lanes != 1)
        return -1;
    switch (d.code) {
    case kDLFloat: return d.bits == 32 ? MP_F32 : d.bits == 16 ? MP_F16 : d.bits == 64 ? MP_F64 : -1;
    case kDLBfloat: return d.bits == 16 ? MP_BF16 : -1;
    case kDLInt: return d.bits == 32 ? MP_I32 : d.bits == 64 ? MP_I64 : d.bits == 8 ? MP_I8 : -1;
    case kDLUInt: return d.bits == 8 ? MP_U8 : -1;
    case kDLBool: return d.bits == 8 ? MP_BOOL : -1;
    default: return -1;
    }
}

static const char *const dlpack_names[] = {"stream", "max_version", "dl_device", "copy"};

PyObject *mp_py_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    mp_py_note_host_read(MpTensor_T(self), "exporting through DLPack");
    if (nargs > 0) {
        PyErr_SetString(PyExc_TypeError, "__dlpack__() takes keyword arguments only");
        return NULL;
    }
    PyObject *kv[4] = {NULL, NULL, NULL, NULL};
    if (kwnames) {
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); k++) {
            const char *kn = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
            int found = -1;
            for (int i = 0; kn && i < 4; i++)
                if (strcmp(kn, dlpack_names[i]) == 0)
                    found = i;
            if (found < 0) {
                PyErr_Format(PyExc_TypeError, "__dlpack__() got an unexpected keyword argument '%s'", kn ? kn : "?");
                return NULL;
            }
            kv[found] = args[k];
        }
    }
    mp_tensor *t = MpTensor_T(self);
    mp_device dev = mp_tensor_device(t);
    int versioned = 0;
    if (kv[1] && kv[1] != Py_None) {
        PyObject *major = PySequence_GetItem(kv[1], 0);
        if (!major)
            return NULL;
        long mj = PyLong_AsLong(major);
        Py_DECREF(major);
        if (mj == -1 && PyErr_Occurred())
            return NULL;
        versioned = mj >= 1;
    }
    if (kv[2] && kv[2] != Py_None) {
        int dtype_code, dev_id;
        if (!PyTuple_Check(kv[2])) {
            PyErr_Format(PyExc_TypeError, "__dlpack__: dl_device must be a tuple (device_type, device_id), got %.100R",
                         kv[2]);
            return NULL;
        }
        if (!PyArg_ParseTuple(kv[2], "ii", &dtype_code, &dev_id))
            return NULL;
        int ours = dev.type == MP_DEV_CUDA ? kDLCUDA : kDLCPU;
        if (dtype_code != ours || dev_id != dev.index) {
            PyErr_SetString(PyExc_BufferError, "__dlpack__: exporting to another device is not supported");
            return NULL;
        }
    }
    int copy = kv[3] && kv[3] != Py_None && PyObject_IsTrue(kv[3]) == 1;
    export_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return PyErr_NoMemory();
    if (copy) {
        mp_status st = mp_tensor_new(t->dtype, t->ndim, t->shape, dev, &c->t);
        if (st == MP_OK)
            st = MP_BACKEND_CALL(mp_backend_get(dev.type), copy_d2d, dev, mp_tensor_data(c->t), mp_tensor_data(t),
                                 mp_tensor_nbytes(t));
        if (st != MP_OK) {
            mp_tensor_decref(c->t);
            free(c);
            return mp_py_raise(st);
        }
    } else {
        mp_tensor_incref(t);
        c->t = t;
    }
    DLTensor dl = {0};
    dl.data = mp_tensor_data(c->t);
    dl.device.device_type = dev.type == MP_DEV_CUDA ? kDLCUDA : kDLCPU;
    dl.device.device_id = dev.index;
    dl.ndim = t->ndim;
    if (dl_dtype(t->dtype, &dl.dtype)) {
        export_free(c);
        PyErr_SetString(PyExc_BufferError, "this dtype has no DLPack code");
        return NULL;
    }
    memcpy(c->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    dl.shape = c->shape;
    dl.strides = NULL; /* compact row-major */
    if (versioned) {
        c->versioned.version.major = 1;
        c->versioned.version.minor = 0;
        c->versioned.manager_ctx = c;
        c->versioned.deleter = versioned_deleter;
        c->versioned.flags = copy ? DLPACK_FLAG_BITMASK_IS_COPIED : DLPACK_FLAG_BITMASK_READ_ONLY;
        c->versioned.dl_tensor = dl;
        PyObject *cap = PyCapsule_New(&c->versioned, "dltensor_versioned", capsule_versioned_dtor);
        if (!cap)
            export_free(c);
        return cap;
    }
    c->legacy.dl_tensor = dl;
    c->legacy.manager_ctx = c;
    c->legacy.deleter = legacy_deleter;
    PyObject *cap = PyCapsule_New(&c->legacy, "dltensor", capsule_legacy_dtor);
    if (!cap)
        export_free(c);
    return cap;
}

PyObject *mp_py_dlpack_device(PyObject *self, PyObject *unused) {
    (void)unused;
    mp_device d = mp_tensor_device(MpTensor_T(self));
    return Py_BuildValue("(ii)", d.type == MP_DEV_CUDA ? kDLCUDA : kDLCPU, d.index);
}

/* ------------------------------------------------------------------ import */

typedef struct {
    DLManagedTensor *legacy;
    DLManagedTensorVersioned *versioned;
} import_ctx;

static void import_release(void *vctx) {
    import_ctx *c = vctx;
    PyGILState_STATE g = PyGILState_Ensure();
    if (c->versioned && c->versioned->deleter)
        c->versioned->deleter(c->versioned);
    if (c->legacy && c->legacy->deleter)
        c->legacy->deleter(c->legacy);
    PyGILState_Release(g);
    free(c);
}

static PyObject *fallback_copy(PyObject *obj) {
    /* Strided or otherwise unusual exports: let NumPy import it, then copy. */
    PyObject *np = PyImport_ImportModule("numpy");
    if (!np)
        return NULL;
    PyObject *arr = PyObject_CallMethod(np, "from_dlpack", "O", obj);
    Py_DECREF(np);
    if (!arr)
        return NULL;
    mp_tensor *t;
    int rc = mp_py_to_tensor(arr, MP_NO_DTYPE, 0, &t);
    Py_DECREF(arr);
    return rc ? NULL : mp_py_wrap(t);
}

PyObject *mp_py_from_dlpack(PyObject *mod, PyObject *obj) {
    (void)mod;
    if (MpTensor_Check(obj))
        return Py_NewRef(obj);
    PyObject *meth = PyObject_GetAttrString(obj, "__dlpack__");
    if (!meth) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "from_dlpack: %.100s does not implement __dlpack__", Py_TYPE(obj)->tp_name);
        return NULL;
    }
    PyObject *kw = Py_BuildValue("{s(ii)}", "max_version", 1, 0);
    PyObject *empty = PyTuple_New(0);
    PyObject *cap = (kw && empty) ? PyObject_Call(meth, empty, kw) : NULL;
    if (!cap && PyErr_ExceptionMatches(PyExc_TypeError)) { /* pre-1.0 producer */
        PyErr_Clear();
        cap = PyObject_CallNoArgs(meth);
    }
    Py_XDECREF(kw);
    Py_XDECREF(empty);
    Py_DECREF(meth);
    if (!cap)
        return NULL;
    import_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        Py_DECREF(cap);
        return PyErr_NoMemory();
    }
    DLTensor *dl;
    if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        c->versioned = PyCapsule_GetPointer(cap, "dltensor_versioned");
        if (c->versioned->version.major != 1) {
            unsigned major = c->versioned->version.major;
            free(c);
            Py_DECREF(cap);
            PyErr_Format(PyExc_BufferError, "from_dlpack: unsupported DLPack major version %u", major);
            return NULL;
        }
        dl = &c->versioned->dl_tensor;
    } else if (PyCapsule_IsValid(cap, "dltensor")) {
        c->legacy = PyCapsule_GetPointer(cap, "dltensor");
        dl = &c->legacy->dl_tensor;
    } else {
        free(c);
        Py_DECREF(cap);
        PyErr_SetString(PyExc_BufferError, "from_dlpack: __dlpack__ did not return an unused DLPack capsule (a capsule may be consumed at most once)");
        return NULL;
    }
    int dt = dtype_from_dl(dl->dtype);
    int contiguous = 1;
    if (dl->strides) {
        int64_t acc = 1;
        for (int d = dl->ndim - 1; d >= 0; d--) {
            if (dl->shape[d] != 1 && dl->strides[d] != acc)
                contiguous = 0;
            acc *= dl->shape[d];
        }
    }
    /* GPU memory is imported (never copied) when its device is one of ours */
    int gpu = dl->device.device_type == kDLCUDA && dl->device.device_id >= 0 &&
              dl->device.device_id < mp_device_count(MP_DEV_CUDA);
    if (gpu && (dt < 0 || !contiguous || dl->ndim > MP_MAX_DIMS || dl->ndim < 0 ||
                ((uintptr_t)dl->data + dl->byte_offset) % mp_dtype_size((mp_dtype)dt) != 0)) {
        int code = dl->dtype.code, bits = dl->dtype.bits;
        free(c);
        Py_DECREF(cap);
        if (dt < 0)
            PyErr_Format(PyExc_TypeError, "from_dlpack: unsupported DLPack dtype (code %d, %d bits)", code, bits);
        else
            PyErr_SetString(PyExc_BufferError, "from_dlpack: GPU memory must be contiguous and element-aligned");
        return NULL;
    }
    if (!gpu && (dt < 0 || !contiguous || dl->device.device_type != kDLCPU || dl->ndim > MP_MAX_DIMS || dl->ndim < 0)) {
        /* NOTE: read everything the message needs before the capsule goes: its destructor
         * calls the producer's deleter, which frees *dl */
        int cpu = dl->device.device_type == kDLCPU;
        int code = dl->dtype.code, bits = dl->dtype.bits;
        free(c); /* capsule still owns the tensor: its destructor releases it */
        Py_DECREF(cap);
        if (!cpu) {
            PyErr_SetString(PyExc_BufferError, "from_dlpack: only CPU memory and the GPUs mixprec runs on can be imported");
            return NULL;
        }
        if (dt < 0) {
            PyErr_Format(PyExc_TypeError, "from_dlpack: unsupported DLPack dtype (code %d, %d bits)", code, bits);
            return NULL;
        }
        return fallback_copy(obj);
    }
    char *data = (char *)dl->data + dl->byte_offset;
    mp_device where = gpu ? (mp_device){MP_DEV_CUDA, dl->device.device_id} : (mp_device){MP_DEV_CPU, 0};
    if (!gpu && (uintptr_t)data % mp_dtype_size((mp_dtype)dt) != 0) {
        /* NOTE: kernels assume element-aligned memory: a misaligned producer is copied,
         * then released by the capsule's destructor */
        mp_tensor *t;
        mp_status st = mp_tensor_new((mp_dtype)dt, dl->ndim, dl->shape, (mp_device){MP_DEV_CPU, 0}, &t);
        if (st == MP_OK && mp_tensor_nbytes(t))
            memcpy(mp_tensor_data(t), data, mp_tensor_nbytes(t));
        free(c);
        Py_DECREF(cap);
        return st == MP_OK ? mp_py_wrap(t) : mp_py_raise(st);
    }
    /* take ownership: rename so the capsule's destructor leaves it alone */
    if (PyCapsule_SetName(cap, c->versioned ? "used_dltensor_versioned" : "used_dltensor")) {
        free(c);
        Py_DECREF(cap);
        return NULL;
    }
    Py_DECREF(cap);
    mp_tensor *t;
    mp_status st = mp_tensor_wrap(data, (mp_dtype)dt, dl->ndim, dl->shape, where, import_release, c, &t);
    if (st != MP_OK) {
        import_release(c);
        return mp_py_raise(st);
    }
    return mp_py_wrap(t);
}
