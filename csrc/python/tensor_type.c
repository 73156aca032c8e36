/* tensor_type.c — the mixprec.Tensor type: an immutable handle on an mp_tensor.
 * Owns the type's slots: lifetime, attributes, the number/sequence/mapping protocols
 * (mapped onto ops), rich comparison, the buffer protocol and NumPy interop.
 * It is a heap type, so src/mixprec/_tensor.py adds the printing methods in Python. */
#define NO_IMPORT_ARRAY
#include "numpy_api.h"

#include <string.h>
#include <structmember.h>

#include "mp_py.h"
#include "../graph.h"

PyTypeObject *MpTensor_Type;

PyObject *mp_py_wrap(mp_tensor *t) {
    if (!t)
        return NULL;
    PyMpTensor *self = (PyMpTensor *)MpTensor_Type->tp_alloc(MpTensor_Type, 0);
    if (!self) {
        mp_tensor_decref(t);
        return NULL;
    }
    self->t = t;
    return (PyObject *)self;
}

static void tensor_dealloc(PyObject *o) {
    PyMpTensor *self = (PyMpTensor *)o;
    PyTypeObject *tp = Py_TYPE(o);
    if (self->weakreflist)
        PyObject_ClearWeakRefs(o);
    Py_CLEAR(self->keras_mask);
    mp_tensor_decref(self->t);
    self->t = NULL;
    tp->tp_free(o);
    Py_DECREF(tp);
}

static PyObject *tensor_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
    (void)tp;
    (void)args;
    (void)kw;
    PyErr_SetString(PyExc_TypeError,
                    "mixprec.Tensor cannot be created directly. hint: use mixprec.constant(value, dtype=...) or "
                    "mixprec.convert_to_tensor(value)");
    return NULL;
}

static Py_hash_t tensor_hash(PyObject *o) {
    (void)o;
    PyErr_SetString(PyExc_TypeError, "Tensor is unhashable. Instead, use tensor.ref() as the key.");
    return -1;
}

/* ------------------------------------------------------------------ attributes */

/* Is the Python code reading a shape mixprec's own (a module under mixprec)? The library
 * is written against the traced values' real sizes (tf.function keeps a graph per shape
 * where it bakes one); user code sees TensorFlow's static shapes while tracing. */
int mp_py_caller_is_library(void) {
    PyFrameObject *f = PyEval_GetFrame(); /* borrowed */
    Py_XINCREF(f);
    int lib = 1;
    while (f) {
        PyObject *gl = PyFrame_GetGlobals(f);
        PyObject *name = gl && PyDict_Check(gl) ? PyDict_GetItemString(gl, "__name__") : NULL;
        const char *s = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : "";
        if (!s) {
            PyErr_Clear();
            s = "";
        }
        /* autograph's call wrapper (converted code calls through it) is transparent */
        int skip = strcmp(s, "mixprec._autograph") == 0;
        lib = strcmp(s, "mixprec") == 0 || strncmp(s, "mixprec.", 8) == 0;
        Py_XDECREF(gl);
        if (!skip)
            break;
        PyFrameObject *b = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = b;
    }
    Py_XDECREF(f);
    return lib;
}

/* The TensorShape of t with None for the dimensions the recording graph has unknown. */
PyObject *mp_py_static_shape(mp_tensor *t) {
    uint32_t unk = mp_graph_recording() ? mp_graph_static_unknown(t) : 0;
    PyObject *tup = PyTuple_New(t->ndim);
    if (!tup)
        return NULL;
    for (int i = 0; i < t->ndim; i++) {
        PyObject *v = (unk >> i) & 1u ? Py_NewRef(Py_None) : PyLong_FromLongLong(t->shape[i]);
        if (!v) {
            Py_DECREF(tup);
            return NULL;
        }
        PyTuple_SET_ITEM(tup, i, v);
    }
    if (!MpPy_TensorShape)
        return tup;
    PyObject *s = PyObject_CallOneArg(MpPy_TensorShape, tup);
    Py_DECREF(tup);
    return s;
}

static PyObject *real_shape(PyObject *o, int taint);

static PyObject *get_shape(PyObject *o, void *c) {
    (void)c;
    return real_shape(o, 1);
}

/* _core.real_shape(x): the real sizes for library code that declares its result's static
 * shape itself (zeros_like): counted as a shape read, without tainting the static shapes. */
PyObject *mp_py_real_shape(PyObject *o) {
    if (!MpTensor_Check(o)) {
        PyErr_Format(PyExc_TypeError, "real_shape: expected a Tensor, got %.100R", o);
        return NULL;
    }
    return real_shape(o, 0);
}

static PyObject *real_shape(PyObject *o, int taint) {
    mp_tensor *t = MpTensor_T(o);
    mp_graph *g = mp_graph_recording();
    /* tf.function: user code sees the static shape (None where the graph stands for any
     * size); reading it bakes nothing in */
    if (g && mp_graph_static_unknown(t)) {
        if (taint && !mp_py_caller_is_library())
            return mp_py_static_shape(t);
        if (taint)
            mp_graph_static_taint(); /* library code takes the real sizes */
    }
    if (g && mp_graph_is_dynamic(t)) /* tf.function: the graph may hold this size */
        g->shape_reads++;
    if (g && mp_graph_is_value_shaped(t)) /* ... a size a tensor-bound slice gave */
        g->value_baked |= MP_GRAPH_VALUE_READ;
    PyObject *tup = PyTuple_New(t->ndim);
    if (!tup)
        return NULL;
    for (int i = 0; i < t->ndim; i++) {
        PyObject *v = PyLong_FromLongLong(t->shape[i]);
        if (!v) {
            Py_DECREF(tup);
            return NULL;
        }
        PyTuple_SET_ITEM(tup, i, v);
    }
    if (!MpPy_TensorShape)
        return tup;
    PyObject *s = PyObject_CallOneArg(MpPy_TensorShape, tup);
    Py_DECREF(tup);
    return s;
}

static PyObject *get_dtype(PyObject *o, void *c) {
    (void)c;
    PyObject *d = mp_py_dtype_obj(MpTensor_T(o)->dtype);
    return d ? Py_NewRef(d) : NULL;
}

static PyObject *get_ndim(PyObject *o, void *c) {
    (void)c;
    return PyLong_FromLong(MpTensor_T(o)->ndim);
}

/* (dtype code, dim0, dim1, ...): a cheap hashable signature (mixprec.function's cache) */
static PyObject *get_sig(PyObject *o, void *c) {
    (void)c;
    mp_tensor *t = MpTensor_T(o);
    PyObject *r = PyTuple_New(t->ndim + 1);
    if (!r)
        return NULL;
    PyTuple_SET_ITEM(r, 0, PyLong_FromLong(t->dtype));
    for (int d = 0; d < t->ndim; d++)
        PyTuple_SET_ITEM(r, d + 1, PyLong_FromLongLong(t->shape[d]));
    return r;
}

static PyObject *get_device(PyObject *o, void *c) {
    (void)c;
    mp_device d = mp_tensor_device(MpTensor_T(o));
    return PyUnicode_FromFormat("/job:localhost/replica:0/task:0/device:%s:%d", d.type == MP_DEV_CUDA ? "GPU" : "CPU",
                                d.index);
}

static PyObject *get_id(PyObject *o, void *c) {
    (void)c;
    return PyLong_FromLongLong(MpTensor_T(o)->id);
}

static PyObject *get_size(PyObject *o, void *c) {
    (void)c;
    return PyLong_FromLongLong(MpTensor_T(o)->numel);
}

static PyObject *get_nbytes(PyObject *o, void *c) {
    (void)c;
    return PyLong_FromSize_t(mp_tensor_nbytes(MpTensor_T(o)));
}

/* `_keras_mask`: the mask Keras layers attach to their outputs (tf-keras sets it on eager
 * tensors); reading it unset raises AttributeError, as on a TensorFlow tensor. */
static PyObject *get_keras_mask(PyObject *o, void *c) {
    (void)c;
    PyObject *m = ((PyMpTensor *)o)->keras_mask;
    if (!m) {
        PyErr_SetString(PyExc_AttributeError, "'mixprec.Tensor' object has no attribute '_keras_mask'");
        return NULL;
    }
    return Py_NewRef(m);
}

static int set_keras_mask(PyObject *o, PyObject *v, void *c) {
    (void)c;
    PyMpTensor *self = (PyMpTensor *)o;
    if (v == o) { /* a tensor that masks itself would keep itself alive */
        PyErr_SetString(PyExc_ValueError, "a tensor cannot be its own _keras_mask");
        return -1;
    }
    Py_XINCREF(v);
    Py_XSETREF(self->keras_mask, v);
    return 0;
}

static PyGetSetDef tensor_getset[] = {
    {"shape", get_shape, NULL, "The TensorShape of this tensor.", NULL},
    {"dtype", get_dtype, NULL, "The DType of this tensor.", NULL},
    {"ndim", get_ndim, NULL, "The rank (number of dimensions).", NULL},
    {"_sig", get_sig, NULL, "(dtype code, *shape): a cheap hashable signature.", NULL},
    {"device", get_device, NULL, "The name of the device holding this tensor.", NULL},
    {"_id", get_id, NULL, "Unique id (the tape keys gradients by it).", NULL},
    {"_numel", get_size, NULL, "Number of elements.", NULL},
    {"_nbytes", get_nbytes, NULL, "Bytes of storage this tensor covers.", NULL},
    {"_keras_mask", get_keras_mask, set_keras_mask, "The Keras mask of this tensor (set by layers).", NULL},
    {NULL},
};

/* ------------------------------------------------------------------ methods */

static PyObject *m_numpy(PyObject *o, PyObject *unused) {
    (void)unused;
    PyObject *arr = mp_py_to_numpy(MpTensor_T(o));
    if (!arr)
        return NULL;
    return PyArray_Return((PyArrayObject *)arr); /* 0-d -> numpy scalar, as TensorFlow */
}

static PyObject *m_array(PyObject *o, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"dtype", "copy", NULL};
    PyObject *dtype = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO:__array__", kwlist, &dtype, &copy))
        return NULL;
    if (copy == Py_False) {
        PyErr_SetString(PyExc_ValueError,
                        "mixprec.Tensor cannot be viewed without a copy by numpy; use __dlpack__ for zero-copy");
        return NULL;
    }
    PyObject *arr = mp_py_to_numpy(MpTensor_T(o));
    if (!arr || dtype == Py_None)
        return arr;
    PyObject *r = PyObject_CallMethod(arr, "astype", "O", dtype);
    Py_DECREF(arr);
    return r;
}

static PyObject *m_copy(PyObject *o, PyObject *unused) {
    (void)unused;
    return Py_NewRef(o); /* immutable */
}

static PyObject *m_get_shape(PyObject *o, PyObject *unused) {
    (void)unused;
    return get_shape(o, NULL);
}

static PyMethodDef tensor_methods[] = {
    {"numpy", m_numpy, METH_NOARGS, "A NumPy copy of the value (a NumPy scalar for rank 0)."},
    {"__array__", (PyCFunction)(void (*)(void))m_array, METH_VARARGS | METH_KEYWORDS, "NumPy conversion (a copy)."},
    {"__dlpack__", (PyCFunction)(void (*)(void))mp_py_dlpack, METH_FASTCALL | METH_KEYWORDS,
     "Export as a DLPack capsule (zero-copy, read-only)."},
    {"__dlpack_device__", mp_py_dlpack_device, METH_NOARGS, "(device_type, device_id) for DLPack."},
    {"__copy__", m_copy, METH_NOARGS, NULL},
    {"__deepcopy__", m_copy, METH_O, NULL},
    {"get_shape", m_get_shape, METH_NOARGS, "Alias of .shape."},
    {NULL},
};

/* ------------------------------------------------------------------ number protocol */

static PyObject *nb_add(PyObject *a, PyObject *b) { return mp_py_binary_op(MP_OP_ADD, a, b); }
static PyObject *nb_sub(PyObject *a, PyObject *b) { return mp_py_binary_op(MP_OP_SUB, a, b); }
static PyObject *nb_mul(PyObject *a, PyObject *b) { return mp_py_binary_op(MP_OP_MUL, a, b); }
static PyObject *nb_truediv(PyObject *a, PyObject *b) { return mp_py_truediv(a, b); }
static PyObject *nb_floordiv(PyObject *a, PyObject *b) { return mp_py_binary_op(MP_OP_FLOORDIV, a, b); }
static PyObject *nb_mod(PyObject *a, PyObject *b) { return mp_py_binary_op(MP_OP_FLOORMOD, a, b); }
static PyObject *nb_matmul(PyObject *a, PyObject *b) { return mp_py_binary_op(MP_OP_MATMUL, a, b); }
static PyObject *nb_and(PyObject *a, PyObject *b) { return mp_py_binary_op(MP_OP_LOGICAL_AND, a, b); }
static PyObject *nb_or(PyObject *a, PyObject *b) { return mp_py_binary_op(MP_OP_LOGICAL_OR, a, b); }
/* ^ is logical xor (not_equal) on bool tensors only: on integers TensorFlow's ^ is a
 * bitwise xor, which not_equal is not. */
static PyObject *nb_xor(PyObject *a, PyObject *b) {
    PyObject *t = MpTensor_Check(a) ? a : b;
    if (MpTensor_T(t)->dtype != MP_BOOL) {
        PyErr_Format(MpExc_DType, "^ is only defined for bool tensors here (got %s); bitwise ops are not supported",
                     mp_dtype_name(MpTensor_T(t)->dtype));
        return NULL;
    }
    return mp_py_binary_op(MP_OP_NOT_EQUAL, a, b);
}

static PyObject *nb_pow(PyObject *a, PyObject *b, PyObject *m) {
    if (m != Py_None) {
        PyErr_SetString(PyExc_TypeError, "pow() with a modulus is not supported for tensors");
        return NULL;
    }
    return mp_py_binary_op(MP_OP_POW, a, b);
}

static PyObject *unary_on(mp_op op, PyObject *o) {
    mp_tensor *t = MpTensor_T(o);
    return mp_py_run_wrap(op, 1, &t, NULL);
}

static PyObject *nb_neg(PyObject *o) { return unary_on(MP_OP_NEG, o); }
static PyObject *nb_abs(PyObject *o) { return unary_on(MP_OP_ABS, o); }
static PyObject *nb_pos(PyObject *o) { return Py_NewRef(o); }
static PyObject *nb_invert(PyObject *o) {
    if (MpTensor_T(o)->dtype != MP_BOOL) {
        PyErr_Format(PyExc_TypeError, "~ is only defined for bool tensors here (got %s); bitwise ops are not supported",
                     mp_dtype_name(MpTensor_T(o)->dtype));
        return NULL;
    }
    return unary_on(MP_OP_LOGICAL_NOT, o);
}

/* The single element of a one-element tensor as a Python number. */
static PyObject *item(PyObject *o, const char *what) {
    mp_tensor *t = MpTensor_T(o);
    if (t->numel != 1) {
        PyErr_Format(PyExc_TypeError, "only tensors with one element can be converted to Python %s, got shape with %lld "
                     "elements", what, (long long)t->numel);
        return NULL;
    }
    PyObject *arr = mp_py_to_numpy(t);
    if (!arr)
        return NULL;
    PyObject *r = PyObject_CallMethod(arr, "item", NULL);
    Py_DECREF(arr);
    return r;
}

static PyObject *nb_float(PyObject *o) {
    PyObject *v = item(o, "scalars");
    if (!v)
        return NULL;
    PyObject *f = PyNumber_Float(v);
    Py_DECREF(v);
    return f;
}

static PyObject *nb_int(PyObject *o) {
    PyObject *v = item(o, "scalars");
    if (!v)
        return NULL;
    PyObject *i = PyNumber_Long(v);
    Py_DECREF(v);
    return i;
}

static PyObject *nb_index(PyObject *o) {
    mp_tensor *t = MpTensor_T(o);
    if (!mp_dtype_is_integer(t->dtype) || t->ndim != 0) {
        PyErr_Format(PyExc_TypeError, "only integer scalar tensors can be used as an index, got a %s tensor of rank %d",
                     mp_dtype_name(t->dtype), t->ndim);
        return NULL;
    }
    return nb_int(o);
}

static int nb_bool(PyObject *o) {
    mp_tensor *t = MpTensor_T(o);
    if (t->numel != 1) {
        PyErr_Format(PyExc_ValueError, "The truth value of a tensor with %lld elements is ambiguous. hint: use "
                     "mixprec.reduce_any or mixprec.reduce_all", (long long)t->numel);
        return -1;
    }
    PyObject *v = item(o, "bool");
    if (!v)
        return -1;
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* ------------------------------------------------------------------ sequence / mapping */

static Py_ssize_t sq_length(PyObject *o) {
    mp_tensor *t = MpTensor_T(o);
    if (t->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "Scalar tensor has no `len()`");
        return -1;
    }
    mp_graph *g = mp_graph_recording();
    if (g && mp_graph_is_dynamic(t)) /* a size read while tracing, as .shape */
        g->shape_reads++;
    if (g && (mp_graph_static_unknown(t) & 1u))
        mp_graph_static_taint();
    if (g && mp_graph_is_value_shaped(t))
        g->value_baked |= MP_GRAPH_VALUE_READ;
    return (Py_ssize_t)t->shape[0];
}

static PyObject *sq_item(PyObject *o, Py_ssize_t i) {
    PyObject *k = PyLong_FromSsize_t(i);
    if (!k)
        return NULL;
    PyObject *r = mp_py_getitem(o, k);
    Py_DECREF(k);
    return r;
}

static PyObject *tensor_iter(PyObject *o) {
    if (MpTensor_T(o)->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "Cannot iterate over a scalar tensor.");
        return NULL;
    }
    return PySeqIter_New(o);
}

/* ------------------------------------------------------------------ comparison */

static PyObject *tensor_richcompare(PyObject *a, PyObject *b, int opid) {
    mp_op op;
    switch (opid) {
    case Py_LT: op = MP_OP_LESS; break;
    case Py_LE: op = MP_OP_LESS_EQUAL; break;
    case Py_GT: op = MP_OP_GREATER; break;
    case Py_GE: op = MP_OP_GREATER_EQUAL; break;
    case Py_EQ: op = MP_OP_EQUAL; break;
    default: op = MP_OP_NOT_EQUAL; break;
    }
    if ((opid == Py_EQ || opid == Py_NE) && b == Py_None)
        return Py_NewRef(opid == Py_EQ ? Py_False : Py_True);
    PyObject *r = mp_py_binary_op(op, a, b);
    if (!r && (opid == Py_EQ || opid == Py_NE) &&
        (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(MpExc_InvalidArgument) ||
         PyErr_ExceptionMatches(PyExc_ValueError))) {
        /* As TensorFlow: incomparable values (other dtype kind, incompatible shapes)
         * are simply not equal. */
        PyErr_Clear();
        return Py_NewRef(opid == Py_EQ ? Py_False : Py_True);
    }
    return r;
}

/* ------------------------------------------------------------------ buffer protocol */

static int tensor_getbuffer(PyObject *o, Py_buffer *view, int flags) {
    mp_tensor *t = MpTensor_T(o);
    mp_py_note_host_read(t, "the buffer protocol (memoryview, np.asarray)");
    if (flags & PyBUF_WRITABLE) {
        PyErr_SetString(PyExc_BufferError, "mixprec tensors are immutable: the buffer is read-only");
        return -1;
    }
    if (mp_tensor_device(t).type != MP_DEV_CPU) {
        PyErr_SetString(PyExc_BufferError, "a GPU tensor has no host buffer; use .numpy() to copy it");
        return -1;
    }
    const char *fmt;
    switch (t->dtype) {
    case MP_F32: fmt = "f"; break;
    case MP_F16: fmt = "e"; break;
    case MP_F64: fmt = "d"; break;
    case MP_I32: fmt = "i"; break;
    case MP_I64: fmt = "q"; break;
    case MP_U8: fmt = "B"; break;
    case MP_I8: fmt = "b"; break;
    case MP_BOOL: fmt = "?"; break;
    default:
        PyErr_SetString(PyExc_BufferError,
                        "bfloat16 has no buffer-protocol format; use .numpy() (an ml_dtypes.bfloat16 array) or "
                        "__dlpack__");
        return -1;
    }
    Py_ssize_t *dims = PyMem_Malloc(sizeof(Py_ssize_t) * 2 * (size_t)(t->ndim ? t->ndim : 1));
    if (!dims) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t es = (Py_ssize_t)mp_dtype_size(t->dtype), acc = es;
    for (int d = t->ndim - 1; d >= 0; d--) {
        dims[d] = (Py_ssize_t)t->shape[d];
        dims[t->ndim + d] = acc;
        acc *= (Py_ssize_t)t->shape[d];
    }
    view->buf = mp_tensor_data(t);
    view->obj = Py_NewRef(o);
    view->len = (Py_ssize_t)mp_tensor_nbytes(t);
    view->readonly = 1;
    view->itemsize = es;
    view->format = (flags & PyBUF_FORMAT) ? (char *)fmt : NULL;
    view->ndim = t->ndim;
    view->shape = (flags & PyBUF_ND) ? dims : NULL;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? dims + t->ndim : NULL;
    view->suboffsets = NULL;
    view->internal = dims;
    return 0;
}

static void tensor_releasebuffer(PyObject *o, Py_buffer *view) {
    (void)o;
    PyMem_Free(view->internal);
    view->internal = NULL;
}

/* ------------------------------------------------------------------ type */

static PyMemberDef tensor_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(PyMpTensor, weakreflist), READONLY, NULL},
    {NULL},
};

static PyType_Slot tensor_slots[] = {
    {Py_tp_dealloc, tensor_dealloc},
    {Py_tp_new, tensor_new},
    {Py_tp_hash, tensor_hash},
    {Py_tp_getset, tensor_getset},
    {Py_tp_methods, tensor_methods},
    {Py_tp_members, tensor_members},
    {Py_tp_iter, tensor_iter},
    {Py_tp_richcompare, tensor_richcompare},
    {Py_tp_doc, "An immutable n-dimensional array on a device (mixprec's tf.Tensor)."},
    {Py_nb_add, nb_add},
    {Py_nb_subtract, nb_sub},
    {Py_nb_multiply, nb_mul},
    {Py_nb_true_divide, nb_truediv},
    {Py_nb_floor_divide, nb_floordiv},
    {Py_nb_remainder, nb_mod},
    {Py_nb_power, nb_pow},
    {Py_nb_matrix_multiply, nb_matmul},
    {Py_nb_negative, nb_neg},
    {Py_nb_positive, nb_pos},
    {Py_nb_absolute, nb_abs},
    {Py_nb_invert, nb_invert},
    {Py_nb_and, nb_and},
    {Py_nb_or, nb_or},
    {Py_nb_xor, nb_xor},
    {Py_nb_bool, nb_bool},
    {Py_nb_float, nb_float},
    {Py_nb_int, nb_int},
    {Py_nb_index, nb_index},
    {Py_sq_length, sq_length},
    {Py_sq_item, sq_item},
    {Py_mp_length, sq_length},
    {Py_mp_subscript, mp_py_getitem},
    {Py_bf_getbuffer, tensor_getbuffer},
    {Py_bf_releasebuffer, tensor_releasebuffer},
    {0, NULL},
};

static PyType_Spec tensor_spec = {
    .name = "mixprec.Tensor",
    .basicsize = sizeof(PyMpTensor),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = tensor_slots,
};

int mp_py_tensor_type_init(PyObject *module) {
    MpTensor_Type = (PyTypeObject *)PyType_FromSpec(&tensor_spec);
    if (!MpTensor_Type)
        return -1;
    Py_INCREF(MpTensor_Type);
    if (PyModule_AddObject(module, "Tensor", (PyObject *)MpTensor_Type) < 0) {
        Py_DECREF(MpTensor_Type);
        return -1;
    }
    return 0;
}
