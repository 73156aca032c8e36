/* convert.c — Python values to tensors and back, dtype/shape/axis argument parsing.
 * Owns TensorFlow's conversion rules (Python floats -> float32, Python ints -> int32 or
 * int64, values next to a tensor take its dtype, no lossy float -> int conversion).
 * Element work is delegated to NumPy (building arrays) or the core (casts). */
#define NO_IMPORT_ARRAY
#include "numpy_api.h"

#include <string.h>

#include "mp_py.h"

/* ------------------------------------------------------------------ dtypes */

PyObject *mp_py_dtype_obj(mp_dtype dt) {
    if (!mp_dtype_valid(dt) || !MpPy_DTypes[dt]) {
        PyErr_Format(PyExc_RuntimeError, "mixprec dtypes are not registered (dtype %d)", (int)dt);
        return NULL;
    }
    return MpPy_DTypes[dt];
}

static int dtype_from_name(const char *s) {
    static const struct {
        const char *name;
        mp_dtype dt;
    } names[] = {
        {"float32", MP_F32}, {"float", MP_F32},   {"float16", MP_F16}, {"half", MP_F16},
        {"bfloat16", MP_BF16}, {"float64", MP_F64}, {"double", MP_F64}, {"int32", MP_I32},
        {"int64", MP_I64},   {"uint8", MP_U8},    {"bool", MP_BOOL},   {"int8", MP_I8},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i].name) == 0)
            return names[i].dt;
    return -1;
}

int mp_py_dtype_from(PyObject *o) {
    for (int i = 0; i < MP_DTYPE_COUNT; i++)
        if (o == MpPy_DTypes[i])
            return i;
    if (PyUnicode_Check(o)) {
        const char *s = PyUnicode_AsUTF8(o);
        if (!s)
            return -1;
        int dt = dtype_from_name(s);
        if (dt >= 0)
            return dt;
    }
    if (!MpPy_AsDType) {
        PyErr_SetString(PyExc_RuntimeError, "mixprec dtypes are not registered");
        return -1;
    }
    PyObject *d = PyObject_CallOneArg(MpPy_AsDType, o); /* raises TypeError for unknown */
    if (!d)
        return -1;
    PyObject *e = PyObject_GetAttrString(d, "_enum");
    Py_DECREF(d);
    if (!e)
        return -1;
    long v = PyLong_AsLong(e);
    Py_DECREF(e);
    if (v < 0 || v >= MP_DTYPE_COUNT) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "%R has no mixprec tensor dtype", o);
        return -1;
    }
    return (int)v;
}

/* numpy descr -> mp_dtype, or -1 (no exception) when unsupported */
static int dtype_from_descr(PyArray_Descr *d) {
    switch (d->type_num) {
    case NPY_FLOAT32: return MP_F32;
    case NPY_FLOAT16: return MP_F16;
    case NPY_FLOAT64: return MP_F64;
    case NPY_INT32: return MP_I32;
    case NPY_INT64: return MP_I64;
    case NPY_UINT8: return MP_U8;
    case NPY_INT8: return MP_I8;
    case NPY_BOOL: return MP_BOOL;
    default: break;
    }
    if (MpPy_Bf16Descr && d->type_num == ((PyArray_Descr *)MpPy_Bf16Descr)->type_num)
        return MP_BF16;
    /* long / longlong alias int64 on LP64 but have their own type numbers on some builds */
    if (d->kind == 'i' && PyDataType_ELSIZE(d) == 8)
        return MP_I64;
    if (d->kind == 'i' && PyDataType_ELSIZE(d) == 4)
        return MP_I32;
    return -1;
}

static PyArray_Descr *descr_for(mp_dtype dt) {
    switch (dt) {
    case MP_F32: return PyArray_DescrFromType(NPY_FLOAT32);
    case MP_F16: return PyArray_DescrFromType(NPY_FLOAT16);
    case MP_F64: return PyArray_DescrFromType(NPY_FLOAT64);
    case MP_I32: return PyArray_DescrFromType(NPY_INT32);
    case MP_I64: return PyArray_DescrFromType(NPY_INT64);
    case MP_U8: return PyArray_DescrFromType(NPY_UINT8);
    case MP_I8: return PyArray_DescrFromType(NPY_INT8);
    case MP_BOOL: return PyArray_DescrFromType(NPY_BOOL);
    case MP_BF16:
        if (!MpPy_Bf16Descr) {
            PyErr_SetString(PyExc_RuntimeError, "ml_dtypes' bfloat16 is not available");
            return NULL;
        }
        Py_INCREF(MpPy_Bf16Descr);
        return (PyArray_Descr *)MpPy_Bf16Descr;
    default: PyErr_Format(PyExc_TypeError, "dtype %d has no numpy equivalent", (int)dt); return NULL;
    }
}

/* ------------------------------------------------------------------ devices */

static _Thread_local int cur_dev_set;
static _Thread_local mp_device cur_dev;

mp_device mp_py_current_device(void) {
    if (cur_dev_set)
        return cur_dev;
    mp_device d = {MP_DEV_CPU, 0};
    if (mp_device_count(MP_DEV_CUDA) > 0)
        d.type = MP_DEV_CUDA;
    return d;
}

int mp_py_device_scope(mp_device *dev) {
    if (cur_dev_set)
        *dev = cur_dev;
    return cur_dev_set;
}

/* _core.set_device(type, index) -> previous (type, index); (None) resets to default */
PyObject *mp_py_set_device(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *prev = cur_dev_set ? Py_BuildValue("(ii)", cur_dev.type, cur_dev.index) : Py_NewRef(Py_None);
    if (!prev)
        return NULL;
    PyObject *spec = NULL;
    if (!PyArg_ParseTuple(args, "O", &spec)) {
        Py_DECREF(prev);
        return NULL;
    }
    if (spec == Py_None) {
        cur_dev_set = 0;
        return prev;
    }
    int type, index;
    if (!PyTuple_Check(spec)) {
        Py_DECREF(prev);
        PyErr_Format(PyExc_TypeError, "set_device: expected None or a tuple (device_type, index), got %.100R", spec);
        return NULL;
    }
    if (!PyArg_ParseTuple(spec, "ii", &type, &index)) {
        Py_DECREF(prev);
        return NULL;
    }
    if (type < 0 || type >= MP_DEV_TYPE_COUNT || index < 0 || index >= mp_device_count(type)) {
        Py_DECREF(prev);
        PyErr_Format(MpExc_InvalidArgument, "device %s:%d is not available (this machine has %d GPU(s))",
                     type == MP_DEV_CUDA ? "GPU" : "CPU", index, mp_device_count(MP_DEV_CUDA));
        return NULL;
    }
    cur_dev.type = type;
    cur_dev.index = index;
    cur_dev_set = 1;
    return prev;
}

/* Move a fresh host tensor to the current device (steals *t on success and failure). */
static int to_current_device(mp_tensor **t) {
    mp_device dev = mp_py_current_device();
    if (dev.type == MP_DEV_CPU)
        return 0;
    mp_tensor *d;
    mp_status st = mp_copy_to_device(*t, dev, &d);
    mp_tensor_decref(*t);
    *t = NULL;
    if (st != MP_OK)
        return mp_py_raise_int(st);
    *t = d;
    return 0;
}

/* ------------------------------------------------------------------ scalars */

static int host_new(mp_dtype dt, int ndim, const int64_t *shape, mp_tensor **out) {
    mp_status st = mp_tensor_new(dt, ndim, shape, (mp_device){MP_DEV_CPU, 0}, out);
    return st == MP_OK ? 0 : mp_py_raise_int(st);
}

/* A 0-d tensor of dtype dt from one host value of dtype src (MP_F64 or MP_I64). */
static int scalar_from(const void *v, mp_dtype src, mp_dtype dt, mp_tensor **out) {
    if (host_new(dt, 0, NULL, out))
        return -1;
    mp_status st = mp_cast_host(v, src, mp_tensor_data(*out), dt, 1);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        return mp_py_raise_int(st);
    }
    return to_current_device(out);
}

static int scalar_float(double v, mp_dtype dt, mp_tensor **out) { return scalar_from(&v, MP_F64, dt, out); }

static int scalar_int(int64_t v, mp_dtype dt, mp_tensor **out) { return scalar_from(&v, MP_I64, dt, out); }

static int conv_error(PyObject *o, mp_dtype dt) {
    PyObject *r = PyObject_Repr(o);
    const char *s = r ? PyUnicode_AsUTF8(r) : "<value>";
    PyErr_Format(PyExc_TypeError, "Cannot convert %.200s to EagerTensor of dtype %s", s ? s : "<value>",
                 mp_dtype_name(dt));
    Py_XDECREF(r);
    return -1;
}

/* Booleans convert to these dtypes as 0/1 (TensorFlow 2.21: `x * True` with a float32 x,
 * tf.constant([True], tf.float32)); not to bfloat16, uint8 or int8, as there. */
static int bool_converts_to(int dt) {
    return dt == MP_F16 || dt == MP_F32 || dt == MP_F64 || dt == MP_I32 || dt == MP_I64;
}

/* Whether integer v is a value of integer dtype dt (any v for int64). */
int mp_py_int_fits(int64_t v, int dt) {
    switch (dt) {
    case MP_I32: return v >= INT32_MIN && v <= INT32_MAX;
    case MP_U8: return v >= 0 && v <= 255;
    case MP_I8: return v >= -128 && v <= 127;
    default: return 1;
    }
}

/* ------------------------------------------------------------------ arrays */

/* Copy a numpy array into a new host tensor of its own dtype. */
/* The storage deleter of a tensor that borrows an array's memory: drops the array. */
static void release_array(void *arr) {
    PyGILState_STATE g = PyGILState_Ensure();
    Py_DECREF((PyObject *)arr);
    PyGILState_Release(g);
}

/* 1 when arr's memory can never change while the tensor lives: the array and every array
 * it views are read-only, and whatever owns the memory refuses a writable buffer (bytes, a
 * read-only mmap) or is the array itself. NOTE: a tensor is immutable, so a writable
 * producer is always copied (it could change the tensor behind the user's back). */
static int memory_is_frozen(PyArrayObject *arr) {
    PyObject *o = (PyObject *)arr;
    while (PyArray_Check(o)) {
        if (PyArray_FLAGS((PyArrayObject *)o) & NPY_ARRAY_WRITEABLE)
            return 0;
        PyObject *base = PyArray_BASE((PyArrayObject *)o);
        if (!base)
            return 1;
        o = base;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(o, &view, PyBUF_WRITABLE) == 0) {
        PyBuffer_Release(&view);
        return 0;
    }
    PyErr_Clear();
    return 1;
}

/* Zero-copy import: a frozen, C-contiguous, aligned, native-order array of the tensor's
 * dtype becomes the tensor's storage (the tensor holds a reference to the array). */
static int borrow_ndarray(PyArrayObject *arr, mp_dtype dt, int nd, const int64_t *shape, mp_tensor **out) {
    size_t esize = mp_dtype_size(dt);
    if (!PyArray_IS_C_CONTIGUOUS(arr) || !PyArray_ISALIGNED(arr) || PyArray_ISBYTESWAPPED(arr) ||
        PyArray_NBYTES(arr) == 0 || (size_t)PyArray_ITEMSIZE(arr) != esize ||
        ((uintptr_t)PyArray_DATA(arr)) % esize != 0 || !memory_is_frozen(arr))
        return 0;
    Py_INCREF(arr);
    mp_status st = mp_tensor_wrap(PyArray_DATA(arr), dt, nd, shape, (mp_device){MP_DEV_CPU, 0}, release_array, arr,
                                  out);
    if (st != MP_OK) {
        Py_DECREF(arr);
        *out = NULL;
        return mp_py_raise_int(st);
    }
    return 1;
}

static int from_ndarray(PyArrayObject *arr, mp_dtype dt, mp_tensor **out) {
    int nd = PyArray_NDIM(arr);
    if (nd > MP_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "mixprec tensors have at most %d dimensions, got an array of rank %d",
                     MP_MAX_DIMS, nd);
        return -1;
    }
    int64_t shape[MP_MAX_DIMS];
    for (int d = 0; d < nd; d++)
        shape[d] = PyArray_DIM(arr, d);
    int borrowed = borrow_ndarray(arr, dt, nd, shape, out);
    if (borrowed)
        return borrowed < 0 ? -1 : 0;
    /* the copy below is raw bytes: byte-swapped arrays ('>f4' on x86) are converted first */
    PyArray_Descr *native = NULL;
    if (PyArray_ISBYTESWAPPED(arr)) {
        native = PyArray_DescrNewByteorder(PyArray_DESCR(arr), NPY_NATIVE);
        if (!native)
            return -1;
    }
    PyArrayObject *c = (PyArrayObject *)PyArray_FromArray(arr, native, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED);
    if (!c)
        return -1;
    if (host_new(dt, nd, shape, out)) {
        Py_DECREF(c);
        return -1;
    }
    size_t nb = mp_tensor_nbytes(*out);
    if (nb)
        memcpy(mp_tensor_data(*out), PyArray_DATA(c), nb);
    Py_DECREF(c);
    return 0;
}

static int array_is_integral(PyArrayObject *arr) {
    /* np.all(a == np.floor(a)), computed by NumPy (NaN and inf compare unequal or pass
     * through floor unchanged; NaN fails, inf passes and saturates in the cast) */
    PyObject *np = PyImport_ImportModule("numpy");
    if (!np)
        return -1;
    PyObject *fl = PyObject_CallMethod(np, "floor", "O", (PyObject *)arr);
    int res = -1;
    if (fl) {
        PyObject *eq = PyObject_RichCompare((PyObject *)arr, fl, Py_EQ);
        if (eq) {
            PyObject *all = PyObject_CallMethod(np, "all", "O", eq);
            if (all) {
                res = PyObject_IsTrue(all);
                Py_DECREF(all);
            }
            Py_DECREF(eq);
        }
        Py_DECREF(fl);
    }
    Py_DECREF(np);
    return res;
}

/* Whether every value of a float array lies within integer dtype dt's range (NaN does not). */
static int float_array_fits(PyArrayObject *arr, mp_dtype dt) {
    if (PyArray_SIZE(arr) == 0)
        return 1;
    double lo, hi_excl;
    switch (dt) {
    case MP_I32: lo = -2147483648.0, hi_excl = 2147483648.0; break;
    case MP_U8: lo = 0.0, hi_excl = 256.0; break;
    case MP_I8: lo = -128.0, hi_excl = 128.0; break;
    default: lo = -9223372036854775808.0, hi_excl = 9223372036854775808.0; break;
    }
    PyObject *mn = PyArray_Min(arr, NPY_RAVEL_AXIS, NULL), *mx = mn ? PyArray_Max(arr, NPY_RAVEL_AXIS, NULL) : NULL;
    int res = -1;
    if (mn && mx) {
        double a = PyFloat_AsDouble(mn), b = PyFloat_AsDouble(mx);
        if (!PyErr_Occurred())
            res = a >= lo && b < hi_excl; /* false for NaN */
    }
    Py_XDECREF(mn);
    Py_XDECREF(mx);
    return res;
}

static int int_range(PyArrayObject *arr, int64_t *lo, int64_t *hi) {
    if (PyArray_SIZE(arr) == 0) {
        *lo = *hi = 0;
        return 0;
    }
    PyObject *mn = PyObject_CallMethod((PyObject *)arr, "min", NULL);
    PyObject *mx = mn ? PyObject_CallMethod((PyObject *)arr, "max", NULL) : NULL;
    int rc = -1;
    if (mn && mx) {
        *lo = PyLong_AsLongLong(mn);
        *hi = PyLong_AsLongLong(mx);
        rc = PyErr_Occurred() ? -1 : 0;
    }
    Py_XDECREF(mn);
    Py_XDECREF(mx);
    return rc;
}

/* Convert a (host) array-like value; `from_python` marks lists/scalars built from Python
 * numbers, where float64 means "Python float" and becomes float32 by default. */
static int convert_array(PyObject *o, PyArrayObject *arr, int dtype, int from_python, mp_tensor **out) {
    int src = dtype_from_descr(PyArray_DESCR(arr));
    if (src < 0) {
        PyObject *r = PyObject_Repr((PyObject *)PyArray_DESCR(arr));
        PyErr_Format(PyExc_TypeError,
                     "Cannot convert a value of numpy dtype %s to a mixprec tensor: supported dtypes are float32, "
                     "float16, bfloat16, float64, int32, int64, int8, uint8 and bool%s",
                     r ? PyUnicode_AsUTF8(r) : "?",
                     PyArray_DESCR(arr)->type_num == NPY_OBJECT ? " (an object array usually means a ragged or "
                                                                  "mixed-type nested list)"
                                                                : "");
        Py_XDECREF(r);
        return -1;
    }
    int want = dtype;
    if (want == MP_NO_DTYPE) {
        want = src;
        if (from_python && src == MP_F64)
            want = MP_F32;
        if (from_python && src == MP_I64) {
            int64_t lo, hi;
            if (int_range(arr, &lo, &hi))
                return -1;
            want = (lo >= INT32_MIN && hi <= INT32_MAX) ? MP_I32 : MP_I64;
        }
    } else if (want != src) {
        int src_float = mp_dtype_is_floating((mp_dtype)src), want_float = mp_dtype_is_floating((mp_dtype)want);
        if ((want == MP_BOOL && src != MP_BOOL) || (src == MP_BOOL && !bool_converts_to(want)))
            return conv_error(o, (mp_dtype)want);
        if (src_float && !want_float) {
            int integral = array_is_integral(arr);
            if (integral < 0)
                return -1;
            if (!integral || !from_python)
                return conv_error(o, (mp_dtype)want);
            int fits = float_array_fits(arr, (mp_dtype)want); /* [300.0] as uint8, [1e20] as int32 */
            if (fits < 0)
                return -1;
            if (!fits)
                return conv_error(o, (mp_dtype)want);
        }
        if (!src_float && src != MP_BOOL && want != MP_BOOL && !want_float) {
            int64_t lo, hi;
            if (int_range(arr, &lo, &hi))
                return -1;
            if (!mp_py_int_fits(lo, (mp_dtype)want) || !mp_py_int_fits(hi, (mp_dtype)want))
                return conv_error(o, (mp_dtype)want);
        }
    }
    mp_tensor *t;
    if (from_ndarray(arr, (mp_dtype)src, &t))
        return -1;
    if (want != src) {
        mp_tensor *c;
        mp_status st = mp_cast(t, (mp_dtype)want, &c);
        mp_tensor_decref(t);
        if (st != MP_OK)
            return mp_py_raise_int(st);
        t = c;
    }
    *out = t;
    return to_current_device(out);
}

static int variable_value(PyObject *o, int dtype, int strict, mp_tensor **out) {
    PyObject *v = mp_py_variable_read(o);
    if (!v)
        return -1;
    if (!MpTensor_Check(v)) {
        Py_DECREF(v);
        PyErr_SetString(PyExc_TypeError, "Variable.value() did not return a mixprec.Tensor");
        return -1;
    }
    int rc = mp_py_to_tensor(v, dtype, strict, out);
    Py_DECREF(v);
    return rc;
}

/* TensorFlow raises ValueError for a value of a type no tensor can be made from; mixprec's
 * class is also a TypeError, which it raised before (callers catching either keep working). */
static PyObject *unsupported_type_error(void) {
    static PyObject *cls;
    if (!cls) {
        PyObject *bases = PyTuple_Pack(2, PyExc_ValueError, PyExc_TypeError);
        if (!bases)
            return NULL;
        cls = PyErr_NewExceptionWithDoc("mixprec.errors.UnsupportedTypeError",
                                        "A value of a Python type no tensor can be made from "
                                        "(a ValueError, as TensorFlow's, and a TypeError).",
                                        bases, NULL);
        Py_DECREF(bases);
    }
    return cls;
}

int mp_py_to_tensor(PyObject *o, int dtype, int strict, mp_tensor **out) {
    *out = NULL;
    if (MpTensor_Check(o)) {
        mp_tensor *t = MpTensor_T(o);
        if (strict && dtype != MP_NO_DTYPE && (int)t->dtype != dtype) {
            PyErr_Format(MpExc_DType, "Tensor conversion requested dtype %s for Tensor with dtype %s",
                         mp_dtype_name((mp_dtype)dtype), mp_dtype_name(t->dtype));
            return -1;
        }
        mp_tensor_incref(t);
        *out = t;
        return 0;
    }
    if (MpVariable_Check(o))
        return variable_value(o, dtype, strict, out);
    /* NumPy scalars keep their dtype. NOTE: before the Python float check, since
     * numpy.float64 is a subclass of float. */
    if (PyArray_IsScalar(o, Generic)) {
        PyArrayObject *arr = (PyArrayObject *)PyArray_FromScalar(o, NULL);
        if (!arr)
            return -1;
        int rc = convert_array(o, arr, dtype, 0, out);
        Py_DECREF(arr);
        return rc;
    }
    if (PyBool_Check(o)) {
        mp_dtype dt = dtype == MP_NO_DTYPE ? MP_BOOL : (mp_dtype)dtype;
        if (dt != MP_BOOL && !bool_converts_to(dt))
            return conv_error(o, dt);
        return scalar_int(o == Py_True, dt, out);
    }
    if (PyFloat_Check(o)) {
        mp_dtype dt = dtype == MP_NO_DTYPE ? MP_F32 : (mp_dtype)dtype;
        if (!mp_dtype_is_floating(dt))
            return conv_error(o, dt);
        return scalar_float(PyFloat_AS_DOUBLE(o), dt, out);
    }
    if (PyLong_Check(o)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow) {
            PyErr_SetString(PyExc_ValueError, "Can't convert Python int too large to fit in int64 to a tensor");
            return -1;
        }
        if (v == -1 && PyErr_Occurred())
            return -1;
        mp_dtype dt = dtype != MP_NO_DTYPE ? (mp_dtype)dtype : (v >= INT32_MIN && v <= INT32_MAX) ? MP_I32 : MP_I64;
        if (dt == MP_BOOL || !mp_py_int_fits(v, dt))
            return conv_error(o, dt);
        if (mp_dtype_is_floating(dt))
            return scalar_float((double)v, dt, out);
        return scalar_int(v, dt, out);
    }
    if (PyArray_Check(o))
        return convert_array(o, (PyArrayObject *)o, dtype, 0, out);
    if (PyUnicode_Check(o) || PyBytes_Check(o)) {
        PyErr_Format(PyExc_TypeError, "Cannot convert %R to a mixprec tensor: string tensors are not supported", o);
        return -1;
    }
    int from_python = PyList_Check(o) || PyTuple_Check(o);
    PyObject *arr = PyArray_FromAny(o, NULL, 0, 0, NPY_ARRAY_DEFAULT, NULL);
    if (!arr) {
        if (PyErr_ExceptionMatches(PyExc_ValueError) && from_python) {
            PyObject *et, *ev, *tb;
            PyErr_Fetch(&et, &ev, &tb);
            Py_XDECREF(et);
            Py_XDECREF(tb);
            PyErr_Format(PyExc_ValueError, "Can't convert non-rectangular Python sequence to Tensor. (%S)",
                         ev ? ev : Py_None);
            Py_XDECREF(ev);
        }
        return -1;
    }
    if (PyArray_NDIM((PyArrayObject *)arr) == 0 && PyArray_DESCR((PyArrayObject *)arr)->type_num == NPY_OBJECT) {
        Py_DECREF(arr);
        PyObject *cls = unsupported_type_error();
        if (cls)
            PyErr_Format(cls, "Attempt to convert a value (%.200R) with an unsupported type (%R) to a Tensor.", o,
                         (PyObject *)Py_TYPE(o));
        return -1;
    }
    int rc = convert_array(o, (PyArrayObject *)arr, dtype, from_python, out);
    Py_DECREF(arr);
    return rc;
}

/* ------------------------------------------------------------------ numpy out */

PyObject *mp_py_to_numpy(mp_tensor *t) {
    mp_py_note_host_read(t, "reading the value on the host (numpy(), float(), bool() ...)");
    mp_tensor *host = t;
    if (mp_tensor_device(t).type != MP_DEV_CPU) {
        mp_status st = mp_copy_to_device(t, (mp_device){MP_DEV_CPU, 0}, &host);
        if (st != MP_OK)
            return mp_py_raise(st);
    } else {
        mp_tensor_incref(host);
    }
    PyArray_Descr *d = descr_for(host->dtype);
    if (!d) {
        mp_tensor_decref(host);
        return NULL;
    }
    npy_intp dims[MP_MAX_DIMS];
    for (int i = 0; i < host->ndim; i++)
        dims[i] = (npy_intp)host->shape[i];
    PyObject *arr = PyArray_NewFromDescr(&PyArray_Type, d, host->ndim, dims, NULL, NULL, 0, NULL);
    if (arr) {
        size_t nb = mp_tensor_nbytes(host);
        if (nb)
            memcpy(PyArray_DATA((PyArrayObject *)arr), mp_tensor_data(host), nb);
    }
    mp_tensor_decref(host);
    return arr;
}

/* ------------------------------------------------------------------ ints & shapes */

int mp_py_parse_int(PyObject *o, int64_t *v, const char *what) {
    if (MpTensor_Check(o)) {
        mp_tensor *t = MpTensor_T(o);
        if (!mp_dtype_is_integer(t->dtype) || t->numel != 1) {
            PyErr_Format(PyExc_TypeError, "%s must be an integer, got a %s tensor with %lld elements", what,
                         mp_dtype_name(t->dtype), (long long)t->numel);
            return -1;
        }
        PyObject *n = mp_py_to_numpy(t);
        if (!n)
            return -1;
        PyObject *i = PyNumber_Index(n);
        Py_DECREF(n);
        if (!i)
            return -1;
        *v = PyLong_AsLongLong(i);
        Py_DECREF(i);
        return PyErr_Occurred() ? -1 : 0;
    }
    if (PyBool_Check(o) || PyFloat_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be an integer, got %R", what, o);
        return -1;
    }
    PyObject *i = PyNumber_Index(o);
    if (!i) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s must be an integer, got %.100R (of type %.100s)", what, o,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    int overflow = 0;
    *v = PyLong_AsLongLongAndOverflow(i, &overflow);
    Py_DECREF(i);
    if (overflow) {
        PyErr_Format(PyExc_ValueError, "%s is too large", what);
        return -1;
    }
    return PyErr_Occurred() ? -1 : 0;
}

int mp_py_parse_shape(PyObject *o, int64_t *shape, int *ndim, const char *what) {
    if (PyLong_Check(o) || PyArray_IsScalar(o, Integer)) {
        if (mp_py_parse_int(o, &shape[0], what))
            return -1;
        *ndim = 1;
        if (shape[0] < 0) {
            PyErr_Format(PyExc_ValueError, "%s has a negative dimension: %lld", what, (long long)shape[0]);
            return -1;
        }
        return 0;
    }
    PyObject *seq = NULL;
    if (MpTensor_Check(o) || PyArray_Check(o)) {
        PyObject *arr = MpTensor_Check(o) ? mp_py_to_numpy(MpTensor_T(o)) : Py_NewRef(o);
        if (!arr)
            return -1;
        seq = PyObject_CallMethod(arr, "tolist", NULL);
        Py_DECREF(arr);
        if (!seq)
            return -1;
        if (PyLong_Check(seq)) { /* 0-d */
            PyObject *t = PyTuple_Pack(1, seq);
            Py_DECREF(seq);
            seq = t;
            if (!seq)
                return -1;
        }
    } else {
        seq = PySequence_Fast(o, "");
        if (!seq) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s must be a list or tuple of integers, got %.100R", what, o);
            return -1;
        }
    }
    PyObject *fast = PySequence_Fast(seq, "shape");
    Py_DECREF(seq);
    if (!fast)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > MP_MAX_DIMS) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "%s has %zd dimensions; mixprec supports at most %d", what, n, MP_MAX_DIMS);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(fast, i);
        if (item == Py_None) {
            Py_DECREF(fast);
            PyErr_Format(PyExc_ValueError, "%s must be fully defined, but dimension %zd is None", what, i);
            return -1;
        }
        if (mp_py_parse_int(item, &shape[i], what)) {
            Py_DECREF(fast);
            return -1;
        }
        if (shape[i] < 0) {
            Py_DECREF(fast);
            PyErr_Format(PyExc_ValueError, "%s has a negative dimension %lld at position %zd", what,
                         (long long)shape[i], i);
            return -1;
        }
    }
    Py_DECREF(fast);
    *ndim = (int)n;
    return 0;
}

int mp_py_parse_axes(PyObject *o, int nd, int64_t *axes, int *naxes, const char *what) {
    if (o == NULL || o == Py_None) {
        for (int d = 0; d < nd; d++)
            axes[d] = d;
        *naxes = nd;
        return 0;
    }
    int64_t raw[MP_MAX_DIMS * 2];
    int n = 0;
    if (PyLong_Check(o) || PyArray_IsScalar(o, Integer) || (MpTensor_Check(o) && MpTensor_T(o)->ndim == 0)) {
        if (mp_py_parse_int(o, &raw[0], what))
            return -1;
        n = 1;
    } else {
        PyObject *seq;
        if (MpTensor_Check(o) || PyArray_Check(o)) {
            PyObject *arr = MpTensor_Check(o) ? mp_py_to_numpy(MpTensor_T(o)) : Py_NewRef(o);
            if (!arr)
                return -1;
            seq = PyObject_CallMethod(arr, "tolist", NULL);
            Py_DECREF(arr);
        } else {
            seq = PySequence_Fast(o, "");
            if (!seq) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError, "%s must be an int, a list of ints or None, got %.100R", what, o);
                return -1;
            }
        }
        if (!seq)
            return -1;
        PyObject *fast = PySequence_Fast(seq, "axes");
        Py_DECREF(seq);
        if (!fast)
            return -1;
        Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
        if (len > MP_MAX_DIMS * 2) {
            Py_DECREF(fast);
            PyErr_Format(PyExc_ValueError, "%s lists too many axes (%zd)", what, len);
            return -1;
        }
        for (Py_ssize_t i = 0; i < len; i++)
            if (mp_py_parse_int(PySequence_Fast_GET_ITEM(fast, i), &raw[n++], what)) {
                Py_DECREF(fast);
                return -1;
            }
        Py_DECREF(fast);
    }
    int seen[MP_MAX_DIMS] = {0};
    for (int i = 0; i < n; i++) {
        int64_t a = raw[i];
        if (a < -nd || a >= nd) {
            PyErr_Format(MpExc_InvalidArgument, "Invalid %s %lld for input with %d dimension(s); valid range is [%d, %d)",
                         what, (long long)a, nd, -nd, nd);
            return -1;
        }
        int d = (int)(a < 0 ? a + nd : a);
        if (seen[d]) { /* as TensorFlow (NumPy also refuses) */
            PyErr_Format(MpExc_InvalidArgument, "Invalid %s: axes contain duplicate dimension %d", what, d);
            return -1;
        }
        seen[d] = 1;
    }
    *naxes = 0;
    for (int d = 0; d < nd; d++)
        if (seen[d])
            axes[(*naxes)++] = d;
    return 0;
}
