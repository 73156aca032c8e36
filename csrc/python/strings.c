/* python/strings.c — the glue of string tensors: Python str/bytes, lists and NumPy S/U/object
 * arrays to MP_STRING tensors and back (object arrays of bytes), and the _core.str_* bindings
 * of csrc/strings*.c. It parses and converts; element work happens in the core. Numeric
 * results go to the current device (string tensors themselves always stay on the host). */
#define NO_IMPORT_ARRAY
#include "numpy_api.h"

#include <string.h>

#include "mp_py.h"
#include "../graph.h"
#include "../strings.h"

static const mp_device host = {MP_DEV_CPU, 0};

/* ------------------------------------------------------------------ conversion */

static int is_strlike(PyObject *o) { return PyUnicode_Check(o) || PyBytes_Check(o); }

static int put_obj(mp_strb *b, int64_t i, PyObject *o) {
    const char *p;
    Py_ssize_t n;
    if (PyBytes_Check(o)) {
        p = PyBytes_AS_STRING(o);
        n = PyBytes_GET_SIZE(o);
    } else {
        p = PyUnicode_AsUTF8AndSize(o, &n);
        if (!p)
            return -1;
    }
    mp_status st = mp_strb_put(b, i, p, (size_t)n);
    return st == MP_OK ? 0 : mp_py_raise_int(st);
}

/* An object ndarray whose every element is str/bytes -> tensor; 0 ok, -1 error, 1 = an element
 * is not a string (no exception set). */
static int from_object_array(PyArrayObject *arr, mp_tensor **out) {
    int nd = PyArray_NDIM(arr);
    int64_t shape[MP_MAX_DIMS];
    if (nd > MP_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "rank %d is out of range: mixprec tensors have at most %d dimensions", nd,
                     MP_MAX_DIMS);
        return -1;
    }
    for (int d = 0; d < nd; d++)
        shape[d] = PyArray_DIM(arr, d);
    PyArrayObject *c = (PyArrayObject *)PyArray_FromAny((PyObject *)arr, PyArray_DescrFromType(NPY_OBJECT), 0, 0,
                                                        NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED, NULL);
    if (!c)
        return -1;
    PyObject **items = (PyObject **)PyArray_DATA(c);
    npy_intp n = PyArray_SIZE(c);
    for (npy_intp i = 0; i < n; i++)
        if (!items[i] || !is_strlike(items[i])) {
            Py_DECREF(c);
            return 1;
        }
    mp_strb b;
    mp_status st = mp_strb_init(&b, nd, shape, (size_t)n * 8);
    if (st != MP_OK) {
        Py_DECREF(c);
        return mp_py_raise_int(st);
    }
    for (npy_intp i = 0; i < n; i++)
        if (put_obj(&b, i, items[i])) {
            mp_strb_abort(&b);
            Py_DECREF(c);
            return -1;
        }
    Py_DECREF(c);
    st = mp_strb_finish(&b, out);
    return st == MP_OK ? 0 : mp_py_raise_int(st);
}

int mp_py_is_string_array(PyObject *o) {
    if (!PyArray_Check(o))
        return 0;
    int k = PyArray_DESCR((PyArrayObject *)o)->type_num;
    return k == NPY_STRING || k == NPY_UNICODE;
}

int mp_py_is_object_string_array(PyObject *o) {
    if (!PyArray_Check(o) || PyArray_DESCR((PyArrayObject *)o)->type_num != NPY_OBJECT)
        return 0;
    if (PyArray_SIZE((PyArrayObject *)o) == 0)
        return 1;
    PyObject *flat = PyArray_Ravel((PyArrayObject *)o, NPY_ANYORDER);
    if (!flat) {
        PyErr_Clear();
        return 0;
    }
    PyObject *first = PyArray_GETITEM((PyArrayObject *)flat, PyArray_DATA((PyArrayObject *)flat));
    Py_DECREF(flat);
    if (!first) {
        PyErr_Clear();
        return 0;
    }
    int r = is_strlike(first);
    Py_DECREF(first);
    return r;
}

/* NOTE: called by mp_py_to_tensor for str/bytes, S/U/object arrays, lists holding strings and
 * any value when the string dtype is requested. dtype: MP_STRING or MP_NO_DTYPE (inferred). */
int mp_py_str_convert(PyObject *o, int dtype, mp_tensor **out) {
    *out = NULL;
    if (is_strlike(o)) {
        mp_strb b;
        mp_status st = mp_strb_init(&b, 0, NULL, 0);
        if (st != MP_OK)
            return mp_py_raise_int(st);
        if (put_obj(&b, 0, o)) {
            mp_strb_abort(&b);
            return -1;
        }
        st = mp_strb_finish(&b, out);
        return st == MP_OK ? 0 : mp_py_raise_int(st);
    }
    int from_python = PyList_Check(o) || PyTuple_Check(o);
    PyObject *arr;
    if (PyArray_Check(o)) {
        arr = Py_NewRef(o);
    } else {
        /* object dtype keeps each Python value as it is (NumPy would turn 1 into '1') */
        arr = PyArray_FromAny(o, PyArray_DescrFromType(NPY_OBJECT), 0, 0, NPY_ARRAY_DEFAULT, NULL);
        if (!arr) {
            if (from_python && PyErr_ExceptionMatches(PyExc_ValueError)) {
                PyErr_Clear();
                PyErr_SetString(PyExc_ValueError, "Can't convert non-rectangular Python sequence to Tensor.");
            }
            return -1;
        }
    }
    int rc = from_object_array((PyArrayObject *)arr, out);
    Py_DECREF(arr);
    if (rc == 1) {
        if (from_python && dtype == MP_NO_DTYPE)
            PyErr_SetString(PyExc_ValueError, "Can't convert Python sequence with mixed types to Tensor.");
        else
            PyErr_Format(PyExc_TypeError, "Cannot convert %.200R to EagerTensor of dtype string", o);
        return -1;
    }
    return rc;
}

PyObject *mp_py_str_to_numpy(mp_tensor *t) {
    npy_intp dims[MP_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++)
        dims[i] = (npy_intp)t->shape[i];
    PyObject *arr = PyArray_SimpleNew(t->ndim, dims, NPY_OBJECT);
    if (!arr)
        return NULL;
    PyObject **items = (PyObject **)PyArray_DATA((PyArrayObject *)arr);
    for (int64_t i = 0; i < t->numel; i++) {
        int64_t n;
        const char *p = mp_str_at(t, i, &n);
        PyObject *b = PyBytes_FromStringAndSize(p, (Py_ssize_t)n);
        if (!b) {
            Py_DECREF(arr);
            return NULL;
        }
        Py_XSETREF(items[i], b);
    }
    if (t->ndim == 0) { /* TensorFlow: a scalar string's numpy() is the bytes object */
        PyObject *b = Py_NewRef(items[0]);
        Py_DECREF(arr);
        return b;
    }
    return arr;
}

/* ------------------------------------------------------------------ bindings */

/* String ops are host loops outside the op table: a function being traced runs eagerly. */
static void no_graph(void) {
    if (mp_graph_recording())
        mp_py_graph_break("tf.strings ops and string lookups run eagerly on the host (string tensors)");
}

static int arg_string(PyObject *o, mp_tensor **t) {
    no_graph();
    if (mp_py_to_tensor(o, MP_NO_DTYPE, 0, t))
        return -1;
    if ((*t)->dtype != MP_STRING) {
        PyErr_Format(MpExc_DType, "Input 'input' of the op has type %s that does not match expected type of string.",
                     mp_dtype_name((*t)->dtype));
        mp_tensor_decref(*t);
        *t = NULL;
        return -1;
    }
    return 0;
}

/* A numeric result of a string op on the current device. */
static PyObject *wrap_numeric(mp_status st, mp_tensor *t) {
    if (st != MP_OK)
        return mp_py_raise(st);
    mp_device dev = mp_py_current_device();
    if (dev.type != MP_DEV_CPU) {
        mp_tensor *d;
        st = mp_copy_to_device(t, dev, &d);
        mp_tensor_decref(t);
        if (st != MP_OK)
            return mp_py_raise(st);
        t = d;
    }
    return mp_py_wrap(t);
}

static PyObject *wrap_str(mp_status st, mp_tensor *t) { return st == MP_OK ? mp_py_wrap(t) : mp_py_raise(st); }

static PyObject *py_str_length(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo;
    int utf8;
    if (!PyArg_ParseTuple(args, "Op", &xo, &utf8))
        return NULL;
    mp_tensor *x, *o = NULL;
    if (arg_string(xo, &x))
        return NULL;
    mp_status st = mp_str_length(x, utf8, &o);
    mp_tensor_decref(x);
    return wrap_numeric(st, o);
}

static PyObject *py_str_case(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo;
    int upper, utf8 = 0;
    if (!PyArg_ParseTuple(args, "Op|p", &xo, &upper, &utf8))
        return NULL;
    mp_tensor *x, *o = NULL;
    if (arg_string(xo, &x))
        return NULL;
    mp_status st = mp_str_case(x, upper | (utf8 << 1), &o);
    mp_tensor_decref(x);
    return wrap_str(st, o);
}

static PyObject *py_str_strip(PyObject *m, PyObject *xo) {
    (void)m;
    mp_tensor *x, *o = NULL;
    if (arg_string(xo, &x))
        return NULL;
    mp_status st = mp_str_strip(x, &o);
    mp_tensor_decref(x);
    return wrap_str(st, o);
}

/* str_join(list of same-shape string tensors, sep bytes) */
static PyObject *py_str_join(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *lst;
    const char *sep;
    Py_ssize_t sep_len;
    if (!PyArg_ParseTuple(args, "Oy#", &lst, &sep, &sep_len))
        return NULL;
    PyObject *seq = PySequence_Fast(lst, "str_join expects a sequence");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    mp_tensor **in = calloc((size_t)(n ? n : 1), sizeof *in);
    PyObject *res = NULL;
    if (!in) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (arg_string(PySequence_Fast_GET_ITEM(seq, i), &in[i]))
            goto done;
    mp_tensor *o = NULL;
    mp_status st = mp_str_join((int)n, in, sep, (size_t)sep_len, &o);
    res = wrap_str(st, o);
done:
    if (in)
        for (Py_ssize_t i = 0; i < n; i++)
            mp_tensor_decref(in[i]);
    free(in);
    Py_DECREF(seq);
    return res;
}

/* str_join_rows(x, k, sep, shape) */
static PyObject *py_str_join_rows(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo, *shape_o;
    long long k;
    const char *sep;
    Py_ssize_t sep_len;
    if (!PyArg_ParseTuple(args, "OLy#O", &xo, &k, &sep, &sep_len, &shape_o))
        return NULL;
    int64_t shape[MP_MAX_DIMS];
    int nd;
    if (mp_py_parse_shape(shape_o, shape, &nd, "shape"))
        return NULL;
    mp_tensor *x, *o = NULL;
    if (arg_string(xo, &x))
        return NULL;
    mp_status st = mp_str_join_rows(x, k, sep, (size_t)sep_len, nd, shape, &o);
    mp_tensor_decref(x);
    return wrap_str(st, o);
}

static int host_i64(PyObject *o, mp_tensor **t) {
    mp_tensor *a;
    if (mp_py_to_tensor(o, MP_NO_DTYPE, 0, &a))
        return -1;
    mp_tensor *h = NULL;
    mp_status st = mp_copy_to_device(a, host, &h);
    mp_tensor_decref(a);
    if (st == MP_OK && h->dtype != MP_I64) {
        mp_tensor *c = NULL;
        st = mp_dtype_is_integer(h->dtype) ? mp_cast(h, MP_I64, &c)
                                           : mp_error_set(MP_ERR_DTYPE, "pos and len must be integers, got %s",
                                                          mp_dtype_name(h->dtype));
        mp_tensor_decref(h);
        h = c;
    }
    if (st != MP_OK)
        return mp_py_raise_int(st);
    *t = h;
    return 0;
}

static PyObject *py_str_substr(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo, *po, *lo;
    int utf8;
    if (!PyArg_ParseTuple(args, "OOOp", &xo, &po, &lo, &utf8))
        return NULL;
    mp_tensor *x = NULL, *p = NULL, *l = NULL, *o = NULL;
    PyObject *res = NULL;
    if (!arg_string(xo, &x) && !host_i64(po, &p) && !host_i64(lo, &l)) {
        mp_status st = mp_str_substr(x, p, l, utf8, &o);
        res = wrap_str(st, o);
    }
    mp_tensor_decref(x);
    mp_tensor_decref(p);
    mp_tensor_decref(l);
    return res;
}

static PyObject *py_str_to_number(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo, *dto;
    if (!PyArg_ParseTuple(args, "OO", &xo, &dto))
        return NULL;
    int dt = mp_py_dtype_from(dto);
    if (dt < 0)
        return NULL;
    mp_tensor *x, *o = NULL;
    if (arg_string(xo, &x))
        return NULL;
    mp_status st = mp_str_to_number(x, (mp_dtype)dt, &o);
    mp_tensor_decref(x);
    return wrap_numeric(st, o);
}

/* str_as_string(x, precision, conv, width, fill) */
static PyObject *py_str_as_string(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo;
    int precision, width;
    int conv, fill;
    if (!PyArg_ParseTuple(args, "OiCiC", &xo, &precision, &conv, &width, &fill))
        return NULL;
    mp_tensor *a, *x = NULL, *o = NULL;
    if (mp_py_to_tensor(xo, MP_NO_DTYPE, 0, &a))
        return NULL;
    mp_status st = mp_copy_to_device(a, host, &x);
    mp_tensor_decref(a);
    if (st == MP_OK)
        st = mp_str_as_string(x, precision, (char)conv, width, (char)fill, &o);
    mp_tensor_decref(x);
    return wrap_str(st, o);
}

static PyObject *pair(mp_status st, mp_tensor *a, mp_tensor *b, int numeric_a) {
    if (st != MP_OK)
        return mp_py_raise(st);
    PyObject *pa = numeric_a ? wrap_numeric(MP_OK, a) : mp_py_wrap(a);
    PyObject *pb = wrap_numeric(MP_OK, b);
    if (!pa || !pb) {
        Py_XDECREF(pa);
        Py_XDECREF(pb);
        return NULL;
    }
    return Py_BuildValue("(NN)", pa, pb);
}

/* str_split(x, sep bytes or None, maxsplit) -> (values, row_splits) */
static PyObject *py_str_split(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo, *sepo;
    long long maxsplit;
    if (!PyArg_ParseTuple(args, "OOL", &xo, &sepo, &maxsplit))
        return NULL;
    const char *sep = NULL;
    Py_ssize_t sep_len = 0;
    if (sepo != Py_None && PyBytes_AsStringAndSize(sepo, (char **)&sep, &sep_len) < 0)
        return NULL;
    mp_tensor *x, *v = NULL, *s = NULL;
    if (arg_string(xo, &x))
        return NULL;
    mp_status st = mp_str_split(x, sep, (size_t)sep_len, maxsplit, &v, &s);
    mp_tensor_decref(x);
    return pair(st, v, s, 0);
}

static PyObject *py_str_chars_split(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo;
    int mode; /* 0 bytes, 1 utf-8 characters, 2 code points */
    if (!PyArg_ParseTuple(args, "Oi", &xo, &mode))
        return NULL;
    mp_tensor *x, *v = NULL, *s = NULL;
    if (arg_string(xo, &x))
        return NULL;
    mp_status st = mode == 2 ? mp_str_unicode_decode(x, &v, &s) : mp_str_chars_split(x, mode, &v, &s);
    mp_tensor_decref(x);
    return pair(st, v, s, mode == 2);
}

static PyObject *py_str_regex_full_match(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo;
    const char *pat;
    if (!PyArg_ParseTuple(args, "Os", &xo, &pat))
        return NULL;
    mp_tensor *x, *o = NULL;
    if (arg_string(xo, &x))
        return NULL;
    mp_status st = mp_str_regex_full_match(x, pat, &o);
    mp_tensor_decref(x);
    return wrap_numeric(st, o);
}

static PyObject *py_str_regex_replace(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo;
    const char *pat, *rw;
    int global;
    if (!PyArg_ParseTuple(args, "Ossp", &xo, &pat, &rw, &global))
        return NULL;
    mp_tensor *x, *o = NULL;
    if (arg_string(xo, &x))
        return NULL;
    mp_status st = mp_str_regex_replace(x, pat, rw, global, &o);
    mp_tensor_decref(x);
    return wrap_str(st, o);
}

/* str_hash_bucket(x, buckets, strong, k0, k1) */
static PyObject *py_str_hash_bucket(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo;
    long long buckets;
    int strong;
    unsigned long long k0, k1;
    if (!PyArg_ParseTuple(args, "OLiKK", &xo, &buckets, &strong, &k0, &k1))
        return NULL;
    mp_tensor *x, *o = NULL;
    if (arg_string(xo, &x))
        return NULL;
    mp_status st = mp_str_hash_bucket(x, buckets, strong, k0, k1, &o);
    mp_tensor_decref(x);
    return wrap_numeric(st, o);
}

static PyObject *py_fingerprint64(PyObject *m, PyObject *arg) {
    (void)m;
    char *p;
    Py_ssize_t n;
    if (PyBytes_AsStringAndSize(arg, &p, &n) < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong(mp_fingerprint64(p, (size_t)n));
}

static int keys_arg(PyObject *o, mp_tensor **t) {
    no_graph();
    mp_tensor *a;
    if (mp_py_to_tensor(o, MP_NO_DTYPE, 0, &a))
        return -1;
    if (a->dtype == MP_STRING) {
        *t = a;
        return 0;
    }
    mp_tensor *h = NULL, *c = NULL;
    mp_status st = mp_copy_to_device(a, host, &h);
    mp_tensor_decref(a);
    if (st == MP_OK && !mp_dtype_is_integer(h->dtype))
        st = mp_error_set(MP_ERR_DTYPE, "lookup keys must be strings or integers, got %s", mp_dtype_name(h->dtype));
    if (st == MP_OK)
        st = mp_cast(h, MP_I64, &c);
    mp_tensor_decref(h);
    if (st != MP_OK)
        return mp_py_raise_int(st);
    *t = c;
    return 0;
}

static void table_capsule_free(PyObject *cap) {
    mp_str_table_free(PyCapsule_GetPointer(cap, "mixprec.str_table"));
}

static PyObject *py_str_table(PyObject *m, PyObject *keys_o) {
    (void)m;
    mp_tensor *k;
    if (keys_arg(keys_o, &k))
        return NULL;
    mp_str_table *t;
    mp_status st = mp_str_table_new(k, &t);
    mp_tensor_decref(k);
    if (st != MP_OK)
        return mp_py_raise(st);
    PyObject *cap = PyCapsule_New(t, "mixprec.str_table", table_capsule_free);
    if (!cap)
        mp_str_table_free(t);
    return cap;
}

/* str_table_lookup(table, x, offset, default_id) -> int64 ids */
static PyObject *py_str_table_lookup(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *cap, *xo;
    long long offset, dflt;
    if (!PyArg_ParseTuple(args, "OOLL", &cap, &xo, &offset, &dflt))
        return NULL;
    mp_str_table *t = PyCapsule_GetPointer(cap, "mixprec.str_table");
    if (!t)
        return NULL;
    mp_tensor *x, *o = NULL;
    if (keys_arg(xo, &x))
        return NULL;
    mp_status st = mp_str_table_lookup(t, x, offset, dflt, &o);
    mp_tensor_decref(x);
    return wrap_numeric(st, o);
}

static PyObject *py_str_unique_counts(PyObject *m, PyObject *xo) {
    (void)m;
    mp_tensor *x, *u = NULL, *c = NULL;
    if (keys_arg(xo, &x))
        return NULL;
    mp_status st = mp_str_unique_counts(x, &u, &c);
    int numeric = x->dtype != MP_STRING;
    mp_tensor_decref(x);
    return pair(st, u, c, numeric);
}

static PyMethodDef str_methods[] = {
    {"str_length", py_str_length, METH_VARARGS, "str_length(x, utf8) -> int32 lengths."},
    {"str_case", py_str_case, METH_VARARGS, "str_case(x, upper) -> ASCII upper/lower case."},
    {"str_strip", py_str_strip, METH_O, "str_strip(x) -> leading/trailing whitespace removed."},
    {"str_join", py_str_join, METH_VARARGS, "str_join(tensors, sep) -> element-wise join."},
    {"str_join_rows", py_str_join_rows, METH_VARARGS, "str_join_rows(x, k, sep, shape) -> rows of k joined."},
    {"str_substr", py_str_substr, METH_VARARGS, "str_substr(x, pos, len, utf8)."},
    {"str_to_number", py_str_to_number, METH_VARARGS, "str_to_number(x, dtype)."},
    {"str_as_string", py_str_as_string, METH_VARARGS, "str_as_string(x, precision, conv, width, fill)."},
    {"str_split", py_str_split, METH_VARARGS, "str_split(x, sep|None, maxsplit) -> (values, row_splits)."},
    {"str_chars_split", py_str_chars_split, METH_VARARGS,
     "str_chars_split(x, mode) -> (values, row_splits); mode 0 bytes, 1 UTF-8 chars, 2 code points."},
    {"str_regex_full_match", py_str_regex_full_match, METH_VARARGS, "str_regex_full_match(x, pattern)."},
    {"str_regex_replace", py_str_regex_replace, METH_VARARGS, "str_regex_replace(x, pattern, rewrite, global)."},
    {"str_hash_bucket", py_str_hash_bucket, METH_VARARGS, "str_hash_bucket(x, buckets, strong, k0, k1)."},
    {"fingerprint64", py_fingerprint64, METH_O, "fingerprint64(bytes) -> FarmHash Fingerprint64 (int)."},
    {"str_table", py_str_table, METH_O, "str_table(keys) -> a vocabulary table (capsule)."},
    {"str_table_lookup", py_str_table_lookup, METH_VARARGS, "str_table_lookup(table, x, offset, default)."},
    {"str_unique_counts", py_str_unique_counts, METH_O, "str_unique_counts(x) -> (unique, counts)."},
    {NULL, NULL, 0, NULL},
};

int mp_py_strings_init(PyObject *module) { return PyModule_AddFunctions(module, str_methods); }
