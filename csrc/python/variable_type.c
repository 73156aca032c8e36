/* variable_type.c — mixprec.Variable: a handle on an mp_variable (tf.Variable).
 * Owns the C slots: reads (autocast + tape, done by the core), assignment, the number
 * protocol through reads, and the per-thread autocast scope functions. A heap type with a
 * __dict__: src/mixprec/_variable.py supplies __init__'s TensorFlow signature, names, repr. */
#include "mp_py.h"

#include <stddef.h>
#include <stdint.h>

#include <structmember.h>

typedef struct {
    PyObject_HEAD mp_variable *v;
    PyObject *dict;
    PyObject *weakreflist;
} PyMpVariable;

PyTypeObject *MpVariable_Type;

int MpVariable_Check(PyObject *o) {
    return MpVariable_Type && PyObject_TypeCheck(o, MpVariable_Type);
}

mp_variable *MpVariable_Raw(PyObject *o) {
    return ((PyMpVariable *)o)->v;
}

mp_variable *MpVariable_V(PyObject *o) {
    return mp_py_replica_resolve(((PyMpVariable *)o)->v);
}

static int need_init(PyObject *o) {
    if (!MpVariable_V(o)) {
        PyErr_SetString(PyExc_RuntimeError, "this Variable was not initialised (Variable.__init__ was not called)");
        return -1;
    }
    return 0;
}

PyObject *mp_py_wrap_variable(mp_variable *v) {
    PyMpVariable *self = (PyMpVariable *)MpVariable_Type->tp_alloc(MpVariable_Type, 0);
    if (!self) {
        mp_variable_decref(v);
        return NULL;
    }
    self->v = v;
    return (PyObject *)self;
}

static PyObject *var_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
    (void)args;
    (void)kw;
    return tp->tp_alloc(tp, 0);
}

static int var_traverse(PyObject *o, visitproc visit, void *arg) {
    Py_VISIT(((PyMpVariable *)o)->dict);
    Py_VISIT(Py_TYPE(o));
    return 0;
}

static int var_clear(PyObject *o) {
    Py_CLEAR(((PyMpVariable *)o)->dict);
    return 0;
}

static void var_dealloc(PyObject *o) {
    PyMpVariable *self = (PyMpVariable *)o;
    PyTypeObject *tp = Py_TYPE(o);
    PyObject_GC_UnTrack(o);
    if (self->weakreflist)
        PyObject_ClearWeakRefs(o);
    var_clear(o);
    mp_variable_decref(self->v);
    self->v = NULL;
    tp->tp_free(o);
    Py_DECREF(tp);
}

/* _initialize(value: Tensor, trainable: bool) — called once by Variable.__init__ */
static PyObject *m_initialize(PyObject *o, PyObject *args) {
    PyObject *val;
    int trainable = 1;
    if (!PyArg_ParseTuple(args, "O|p:_initialize", &val, &trainable))
        return NULL;
    if (MpVariable_Raw(o)) {
        PyErr_SetString(PyExc_RuntimeError, "Variable is already initialised");
        return NULL;
    }
    mp_tensor *t;
    if (mp_py_to_tensor(val, MP_NO_DTYPE, 0, &t))
        return NULL;
    mp_variable *v;
    mp_status st = mp_variable_new(t, trainable, &v);
    mp_tensor_decref(t);
    if (st != MP_OK)
        return mp_py_raise(st);
    ((PyMpVariable *)o)->v = v;
    Py_RETURN_NONE;
}

PyObject *mp_py_variable_read(PyObject *o) {
    if (need_init(o))
        return NULL;
    mp_tensor *t;
    mp_status st = mp_variable_read(MpVariable_V(o), &t);
    if (st != MP_OK)
        return mp_py_raise(st);
    return mp_py_wrap(t);
}

static PyObject *m_value(PyObject *o, PyObject *unused) {
    (void)unused;
    return mp_py_variable_read(o);
}

static PyObject *m_peek(PyObject *o, PyObject *unused) {
    (void)unused;
    if (need_init(o))
        return NULL;
    mp_tensor *v;
    mp_status st = mp_variable_read_raw(MpVariable_V(o), &v);
    if (st != MP_OK)
        return mp_py_raise(st);
    return mp_py_wrap(v);
}

/* _move_to((device_type, index)): the variable's own value moves to that device (a mirrored
 * variable's primary going to the first replica's GPU, distribute/_gpu_mirror.py). */
static PyObject *m_move_to(PyObject *o, PyObject *arg) {
    int type, index;
    if (need_init(o) || !PyArg_ParseTuple(arg, "ii:_move_to", &type, &index))
        return NULL;
    if (type < 0 || type >= MP_DEV_TYPE_COUNT || index < 0 || index >= mp_device_count(type))
        return PyErr_Format(PyExc_ValueError, "_move_to: no device (%d, %d)", type, index);
    mp_status st = mp_variable_move_to(MpVariable_Raw(o), (mp_device){type, index});
    if (st != MP_OK)
        return mp_py_raise(st);
    Py_RETURN_NONE;
}

static PyObject *m_numpy(PyObject *o, PyObject *unused) {
    (void)unused;
    PyObject *t = m_peek(o, NULL);
    if (!t)
        return NULL;
    PyObject *r = PyObject_CallMethod(t, "numpy", NULL);
    Py_DECREF(t);
    return r;
}

/* _assign(value) — the value is converted to the variable's dtype (autocast variables
 * also accept other float dtypes, as tf-keras >= 2.18's AutoCastVariable). */
static PyObject *m_assign(PyObject *o, PyObject *val) {
    if (need_init(o))
        return NULL;
    mp_variable *v = MpVariable_V(o);
    mp_tensor *t;
    /* non-strict conversion keeps a tensor's dtype; mp_variable_assign decides */
    if (mp_py_to_tensor(val, v->value->dtype, 0, &t))
        return NULL;
    mp_status st = mp_variable_assign(v, t);
    mp_tensor_decref(t);
    if (st != MP_OK)
        return mp_py_raise(st);
    Py_RETURN_NONE;
}

static PyObject *assign_op(PyObject *o, PyObject *delta, mp_op op) {
    if (need_init(o))
        return NULL;
    mp_variable *v = MpVariable_V(o);
    mp_tensor *cur, *d;
    /* a recorded read when a function traces (the replay adds to the value then current) */
    mp_status st0 = mp_variable_read_raw(v, &cur);
    if (st0 != MP_OK)
        return mp_py_raise(st0);
    if (mp_py_to_tensor(delta, cur->dtype, 0, &d)) {
        mp_tensor_decref(cur);
        return NULL;
    }
    if (!mp_variable_accepts(v, d->dtype)) {
        PyErr_Format(MpExc_DType, "Tensor conversion requested dtype %s for Tensor with dtype %s",
                     mp_dtype_name(cur->dtype), mp_dtype_name(d->dtype));
        mp_tensor_decref(d);
        mp_tensor_decref(cur);
        return NULL;
    }
    mp_tensor *cd = d;
    mp_status st = MP_OK;
    if (d->dtype != cur->dtype) /* autocast variable given a 16-bit delta: add in the true dtype */
        st = mp_cast(d, cur->dtype, &cd);
    mp_tensor *r = NULL;
    if (st == MP_OK) {
        mp_tensor *in[2] = {cur, cd};
        st = mp_op_run(op, 2, in, NULL, &r);
    }
    /* dropped before the assignment: an unshared value is then updated in place */
    mp_tensor_decref(cur);
    cur = NULL;
    if (st == MP_OK)
        st = mp_variable_assign(v, r);
    mp_tensor_decref(r);
    if (cd != d)
        mp_tensor_decref(cd);
    mp_tensor_decref(d);
    mp_tensor_decref(cur);
    if (st != MP_OK)
        return mp_py_raise(st);
    Py_RETURN_NONE;
}

static PyObject *m_assign_add(PyObject *o, PyObject *d) {
    return assign_op(o, d, MP_OP_ADD);
}
static PyObject *m_assign_sub(PyObject *o, PyObject *d) {
    return assign_op(o, d, MP_OP_SUB);
}

static PyMethodDef var_methods[] = {
    {"_initialize", m_initialize, METH_VARARGS, NULL},
    {"value", m_value, METH_NOARGS, "The current value (cast to the autocast dtype inside a mixed layer)."},
    {"read_value", m_value, METH_NOARGS, "Alias of value()."},
    {"_move_to", m_move_to, METH_O, "_move_to((device_type, index)): move the value to that device."},
    {"_peek", m_peek, METH_NOARGS, "The true-dtype value, unrecorded (for saving and printing)."},
    {"numpy", m_numpy, METH_NOARGS, "A NumPy copy of the true-dtype value."},
    {"_assign", m_assign, METH_O, NULL},
    {"_assign_add", m_assign_add, METH_O, NULL},
    {"_assign_sub", m_assign_sub, METH_O, NULL},
    {NULL},
};

/* ------------------------------------------------------------------ attributes */

static PyObject *g_dtype(PyObject *o, void *c) {
    (void)c;
    if (need_init(o))
        return NULL;
    mp_variable *v = MpVariable_V(o);
    mp_dtype dt = v->value->dtype;
    int ac = mp_autocast_get();
    if (v->autocast && ac >= 0 && mp_dtype_is_floating(dt) && mp_dtype_is_floating((mp_dtype)ac))
        dt = (mp_dtype)ac; /* tf-keras >= 2.18: the cast dtype inside the autocast scope */
    return Py_NewRef(mp_py_dtype_obj(dt));
}
static PyObject *g_true_dtype(PyObject *o, void *c) {
    (void)c;
    if (need_init(o))
        return NULL;
    return Py_NewRef(mp_py_dtype_obj(MpVariable_V(o)->value->dtype));
}
static PyObject *g_shape(PyObject *o, void *c) {
    (void)c;
    PyObject *t = m_peek(o, NULL);
    if (!t)
        return NULL;
    PyObject *s = PyObject_GetAttrString(t, "shape");
    Py_DECREF(t);
    return s;
}
/* An int flag of mp_variable as a Python bool; the closure is the field's offset. */
static int *flag_of(PyObject *o, void *field) {
    return (int *)((char *)MpVariable_V(o) + (size_t)(uintptr_t)field);
}
static PyObject *g_flag(PyObject *o, void *field) {
    if (need_init(o))
        return NULL;
    return PyBool_FromLong(*flag_of(o, field));
}
static int s_flag(PyObject *o, PyObject *val, void *field) {
    if (need_init(o))
        return -1;
    int b = PyObject_IsTrue(val);
    if (b < 0)
        return -1;
    *flag_of(o, field) = b;
    return 0;
}
static PyObject *g_id(PyObject *o, void *c) {
    (void)c;
    if (need_init(o))
        return NULL;
    return PyLong_FromLongLong(MpVariable_Raw(o)->id); /* identity: the primary's, in any replica */
}
static PyObject *g_version(PyObject *o, void *c) {
    (void)c;
    if (need_init(o))
        return NULL;
    return PyLong_FromLongLong(MpVariable_V(o)->version);
}
static PyObject *g_device(PyObject *o, void *c) {
    (void)c;
    PyObject *t = m_peek(o, NULL);
    if (!t)
        return NULL;
    PyObject *s = PyObject_GetAttrString(t, "device");
    Py_DECREF(t);
    return s;
}

static PyGetSetDef var_getset[] = {
    {"dtype", g_dtype, NULL, "The dtype reads return (the cast dtype inside an autocast scope).", NULL},
    {"true_dtype", g_true_dtype, NULL, "The dtype the variable stores.", NULL},
    {"shape", g_shape, NULL, NULL, NULL},
    {"trainable", g_flag, s_flag, NULL, (void *)offsetof(mp_variable, trainable)},
    {"_autocast", g_flag, s_flag, "Reads follow the autocast scope (layer variables).",
     (void *)offsetof(mp_variable, autocast)},
    {"_id", g_id, NULL, NULL, NULL},
    {"_version", g_version, NULL, "Bumped by every assignment.", NULL},
    {"device", g_device, NULL, NULL, NULL},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL},
};

/* ------------------------------------------------------------------ protocols (through reads) */

static PyObject *read_or_null(PyObject *o) {
    return MpVariable_Check(o) ? mp_py_variable_read(o) : Py_NewRef(o);
}

#define BIN_SLOT(fname, pyop)                                                                                          \
    static PyObject *fname(PyObject *a, PyObject *b) {                                                                 \
        PyObject *x = read_or_null(a);                                                                                 \
        if (!x)                                                                                                        \
            return NULL;                                                                                               \
        PyObject *y = read_or_null(b);                                                                                 \
        if (!y) {                                                                                                      \
            Py_DECREF(x);                                                                                              \
            return NULL;                                                                                               \
        }                                                                                                              \
        PyObject *r = pyop(x, y);                                                                                      \
        Py_DECREF(x);                                                                                                  \
        Py_DECREF(y);                                                                                                  \
        return r;                                                                                                      \
    }
BIN_SLOT(v_add, PyNumber_Add)
BIN_SLOT(v_sub, PyNumber_Subtract)
BIN_SLOT(v_mul, PyNumber_Multiply)
BIN_SLOT(v_truediv, PyNumber_TrueDivide)
BIN_SLOT(v_floordiv, PyNumber_FloorDivide)
BIN_SLOT(v_mod, PyNumber_Remainder)
BIN_SLOT(v_matmul, PyNumber_MatrixMultiply)
BIN_SLOT(v_and, PyNumber_And)
BIN_SLOT(v_or, PyNumber_Or)

static PyObject *v_pow(PyObject *a, PyObject *b, PyObject *m) {
    PyObject *x = read_or_null(a), *y = x ? read_or_null(b) : NULL;
    PyObject *r = (x && y) ? PyNumber_Power(x, y, m) : NULL;
    Py_XDECREF(x);
    Py_XDECREF(y);
    return r;
}

#define UN_SLOT(fname, pyop)                                                                                           \
    static PyObject *fname(PyObject *a) {                                                                              \
        PyObject *x = mp_py_variable_read(a);                                                                          \
        if (!x)                                                                                                        \
            return NULL;                                                                                               \
        PyObject *r = pyop(x);                                                                                         \
        Py_DECREF(x);                                                                                                  \
        return r;                                                                                                      \
    }
UN_SLOT(v_neg, PyNumber_Negative)
UN_SLOT(v_abs, PyNumber_Absolute)
UN_SLOT(v_pos, PyNumber_Positive)
UN_SLOT(v_float, PyNumber_Float)
UN_SLOT(v_int, PyNumber_Long)
UN_SLOT(v_index, PyNumber_Index)

static int v_bool(PyObject *a) {
    PyObject *x = mp_py_variable_read(a);
    if (!x)
        return -1;
    int r = PyObject_IsTrue(x);
    Py_DECREF(x);
    return r;
}

static PyObject *v_getitem(PyObject *a, PyObject *key) {
    PyObject *x = mp_py_variable_read(a);
    if (!x)
        return NULL;
    PyObject *r = PyObject_GetItem(x, key);
    Py_DECREF(x);
    return r;
}

static Py_ssize_t v_len(PyObject *a) {
    if (need_init(a))
        return -1;
    mp_tensor *t = mp_variable_peek(MpVariable_V(a));
    if (t->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "Scalar variable has no `len()`");
        return -1;
    }
    return (Py_ssize_t)t->shape[0];
}

static PyObject *v_iter(PyObject *a) {
    PyObject *x = mp_py_variable_read(a);
    if (!x)
        return NULL;
    PyObject *r = PyObject_GetIter(x);
    Py_DECREF(x);
    return r;
}

static PyObject *v_richcompare(PyObject *a, PyObject *b, int op) {
    PyObject *x = read_or_null(a), *y = x ? read_or_null(b) : NULL;
    PyObject *r = (x && y) ? PyObject_RichCompare(x, y, op) : NULL;
    Py_XDECREF(x);
    Py_XDECREF(y);
    return r;
}

static Py_hash_t v_hash(PyObject *o) {
    (void)o;
    PyErr_SetString(PyExc_TypeError, "Variable is unhashable. Instead, use variable.ref() as the key.");
    return -1;
}

static PyMemberDef var_members[] = {
    {"__dictoffset__", T_PYSSIZET, offsetof(PyMpVariable, dict), READONLY, NULL},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(PyMpVariable, weakreflist), READONLY, NULL},
    {NULL},
};

static PyType_Slot var_slots[] = {
    {Py_tp_new, var_new},
    {Py_tp_dealloc, var_dealloc},
    {Py_tp_traverse, var_traverse},
    {Py_tp_clear, var_clear},
    {Py_tp_methods, var_methods},
    {Py_tp_getset, var_getset},
    {Py_tp_members, var_members},
    {Py_tp_hash, v_hash},
    {Py_tp_richcompare, v_richcompare},
    {Py_tp_iter, v_iter},
    {Py_tp_doc, "A mutable tensor (mixprec's tf.Variable)."},
    {Py_nb_add, v_add},
    {Py_nb_subtract, v_sub},
    {Py_nb_multiply, v_mul},
    {Py_nb_true_divide, v_truediv},
    {Py_nb_floor_divide, v_floordiv},
    {Py_nb_remainder, v_mod},
    {Py_nb_power, v_pow},
    {Py_nb_matrix_multiply, v_matmul},
    {Py_nb_and, v_and},
    {Py_nb_or, v_or},
    {Py_nb_negative, v_neg},
    {Py_nb_absolute, v_abs},
    {Py_nb_positive, v_pos},
    {Py_nb_bool, v_bool},
    {Py_nb_float, v_float},
    {Py_nb_int, v_int},
    {Py_nb_index, v_index},
    {Py_mp_subscript, v_getitem},
    {Py_mp_length, v_len},
    {Py_sq_length, v_len},
    {0, NULL},
};

static PyType_Spec var_spec = {
    .name = "mixprec.Variable",
    .basicsize = sizeof(PyMpVariable),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .slots = var_slots,
};

/* _core.autocast(dtype or None) -> previous dtype (or None): the thread's autocast scope */
static PyObject *py_autocast(PyObject *m, PyObject *arg) {
    (void)m;
    int dt = -1;
    if (arg != Py_None && (dt = mp_py_dtype_from(arg)) < 0)
        return NULL;
    int prev = mp_autocast_set(dt);
    if (prev < 0)
        Py_RETURN_NONE;
    return Py_NewRef(mp_py_dtype_obj((mp_dtype)prev));
}

static PyMethodDef var_module_methods[] = {
    {"autocast", py_autocast, METH_O, "autocast(dtype or None) -> previous: this thread's variable-read dtype"},
    {NULL},
};

int mp_py_variable_type_init(PyObject *module) {
    MpVariable_Type = (PyTypeObject *)PyType_FromSpec(&var_spec);
    if (!MpVariable_Type)
        return -1;
    Py_INCREF(MpVariable_Type);
    if (PyModule_AddObject(module, "Variable", (PyObject *)MpVariable_Type) < 0) {
        Py_DECREF(MpVariable_Type);
        return -1;
    }
    return PyModule_AddFunctions(module, var_module_methods);
}
