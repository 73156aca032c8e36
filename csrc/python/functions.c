/* functions.c — the module-level op functions of mixprec._core.
 * Unary, binary, comparison and reduction functions are generated from ops.def; the
 * others are written out here. Each parses and converts its arguments, runs one op
 * (mp_py_run, which releases the GIL for large work) and wraps the result. */
#define NO_IMPORT_ARRAY
#include "numpy_api.h"

#include <math.h>
#include <string.h>

#include "mp_py.h"

#include "../graph.h"

/* tf.debugging.set_log_device_placement: every op run eagerly from Python writes
 * TensorFlow's "Executing op <Name> in device ..." line to sys.stderr (GIL held). */
static int log_placement;

static void log_op_placement(mp_op op, const mp_tensor *out) {
    if (!log_placement || !out || mp_graph_recording())
        return;
    mp_device d = mp_tensor_device(out);
    PySys_FormatStderr("Executing op %s in device /job:localhost/replica:0/task:0/device:%s:%d\n",
                       mp_op_get_info(op)->name, d.type == MP_DEV_CUDA ? "GPU" : "CPU", d.index);
}

static PyObject *py_set_log_device_placement(PyObject *m, PyObject *arg) {
    (void)m;
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    log_placement = on;
    Py_RETURN_NONE;
}

/* Work (elements touched) above which the GIL is released around an op. */
#define GIL_RELEASE_ELEMENTS (1 << 16)

mp_status mp_py_run(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at, mp_tensor **out) {
    int64_t work = 0;
    for (int i = 0; i < n_in; i++)
        work += in[i]->numel;
    if (op == MP_OP_FILL || op == MP_OP_RANDOM_NORMAL || op == MP_OP_RANDOM_UNIFORM || op == MP_OP_TRUNCATED_NORMAL) {
        work = 1; /* saturating: the shape is validated later, by the op */
        for (int i = 0; i < at->n_ints; i++)
            work = at->ints[i] > 0 && work > INT64_MAX / at->ints[i] ? INT64_MAX : work * at->ints[i];
    }
    if (op == MP_OP_MATMUL)
        work *= 64;
    int strings = 0;
    for (int i = 0; i < n_in; i++)
        strings |= in[i]->dtype == MP_STRING;
    if (strings && mp_graph_recording()) /* host-only elements: csrc/strings.c */
        mp_py_graph_break("string tensors run eagerly on the host");
    mp_status st;
    if (work >= GIL_RELEASE_ELEMENTS) {
        Py_BEGIN_ALLOW_THREADS
        st = mp_op_run(op, n_in, in, at, out);
        Py_END_ALLOW_THREADS
    } else {
        st = mp_op_run(op, n_in, in, at, out);
    }
    if (st == MP_OK && strings && (*out)->dtype != MP_STRING) {
        /* a numeric result of a string op (Equal, Shape) goes where numbers live */
        mp_device dev = mp_py_current_device();
        if (!mp_device_eq(dev, mp_tensor_device(*out))) {
            mp_tensor *moved;
            st = mp_copy_to_device(*out, dev, &moved);
            mp_tensor_decref(*out);
            *out = st == MP_OK ? moved : NULL;
        }
    }
    if (st == MP_OK)
        log_op_placement(op, *out);
    return st;
}

PyObject *mp_py_run_wrap(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at) {
    mp_tensor *out;
    mp_status st = mp_py_run(op, n_in, in, at, &out);
    if (st != MP_OK)
        return mp_py_raise(st);
    return mp_py_wrap(out);
}

static int convert_pair_dtypes(PyObject *a, PyObject *b, mp_tensor **ta, mp_tensor **tb);

/* A Python value converted next to a tensor lives where that tensor lives (it was made on
 * the current device): values follow tensors, tensors never move implicitly. */
static int is_tensorish(PyObject *o) { return MpTensor_Check(o) || MpVariable_Check(o); }

static int follow_device(mp_tensor **value, const mp_tensor *anchor) {
    mp_device dev = mp_tensor_device(anchor);
    if (mp_device_eq(mp_tensor_device(*value), dev))
        return 0;
    mp_tensor *moved;
    mp_status st = mp_copy_to_device(*value, dev, &moved);
    if (st != MP_OK)
        return mp_py_raise_int(st);
    mp_tensor_decref(*value);
    *value = moved;
    return 0;
}

/* Convert a, b for a binary op: a value next to a tensor takes the tensor's dtype and
 * device. */
static int convert_pair(PyObject *a, PyObject *b, mp_tensor **ta, mp_tensor **tb) {
    if (convert_pair_dtypes(a, b, ta, tb))
        return -1;
    int rc = 0;
    if (!is_tensorish(a) && is_tensorish(b))
        rc = follow_device(ta, *tb);
    else if (!is_tensorish(b) && is_tensorish(a))
        rc = follow_device(tb, *ta);
    /* a Python value next to a value autocast lowered stands for a float32 one (amp.c) */
    if (!rc && !is_tensorish(a) && (*tb)->amp_lowered && (*ta)->dtype == (*tb)->dtype)
        (*ta)->amp_lowered = 1;
    if (!rc && !is_tensorish(b) && (*ta)->amp_lowered && (*tb)->dtype == (*ta)->dtype)
        (*tb)->amp_lowered = 1;
    if (rc) {
        mp_tensor_decref(*ta);
        mp_tensor_decref(*tb);
        *ta = *tb = NULL;
    }
    return rc;
}

static int convert_pair_dtypes(PyObject *a, PyObject *b, mp_tensor **ta, mp_tensor **tb) {
    *ta = *tb = NULL;
    if (MpTensor_Check(a)) {
        if (mp_py_to_tensor(a, MP_NO_DTYPE, 0, ta))
            return -1;
        if (mp_py_to_tensor(b, (*ta)->dtype, 0, tb))
            goto fail;
    } else if (MpTensor_Check(b)) {
        if (mp_py_to_tensor(b, MP_NO_DTYPE, 0, tb))
            return -1;
        if (mp_py_to_tensor(a, (*tb)->dtype, 0, ta))
            goto fail;
    } else {
        if (mp_py_to_tensor(a, MP_NO_DTYPE, 0, ta))
            return -1;
        if (mp_py_to_tensor(b, (*ta)->dtype, 0, tb))
            goto fail;
    }
    return 0;
fail:
    mp_tensor_decref(*ta);
    *ta = NULL;
    return -1;
}

static PyObject *binary_attrs(mp_op op, PyObject *a, PyObject *b, const mp_attrs *at) {
    mp_tensor *in[2];
    if (convert_pair(a, b, &in[0], &in[1]))
        return NULL;
    PyObject *r = mp_py_run_wrap(op, 2, in, at);
    mp_tensor_decref(in[0]);
    mp_tensor_decref(in[1]);
    return r;
}

PyObject *mp_py_binary_op(mp_op op, PyObject *a, PyObject *b) { return binary_attrs(op, a, b, NULL); }

/* x / y as TensorFlow's truediv: integers are divided as floats (int8/uint8 -> float32,
 * int32/int64 -> float64). */
PyObject *mp_py_truediv(PyObject *a, PyObject *b) {
    mp_tensor *in[2];
    if (convert_pair(a, b, &in[0], &in[1]))
        return NULL;
    PyObject *r = NULL;
    if (in[0]->dtype == in[1]->dtype && mp_dtype_is_integer(in[0]->dtype)) {
        mp_dtype f = (in[0]->dtype == MP_I32 || in[0]->dtype == MP_I64) ? MP_F64 : MP_F32;
        mp_tensor *c[2] = {NULL, NULL};
        mp_status st = mp_cast(in[0], f, &c[0]);
        if (st == MP_OK)
            st = mp_cast(in[1], f, &c[1]);
        if (st == MP_OK)
            r = mp_py_run_wrap(MP_OP_DIV, 2, c, NULL);
        else
            mp_py_raise(st);
        mp_tensor_decref(c[0]);
        mp_tensor_decref(c[1]);
    } else {
        r = mp_py_run_wrap(MP_OP_DIV, 2, in, NULL);
    }
    mp_tensor_decref(in[0]);
    mp_tensor_decref(in[1]);
    return r;
}

/* ------------------------------------------------------------------ fastcall argument parsing */

/* Positional-or-keyword parsing for METH_FASTCALL|METH_KEYWORDS: names[] lists every
 * parameter; out[] receives borrowed refs (NULL when absent); the first `required` are
 * mandatory. Unknown keywords and duplicates raise TypeError. */
static int parse_args(const char *fname, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                      const char *const *names, int nparams, int required, PyObject **out) {
    for (int i = 0; i < nparams; i++)
        out[i] = NULL;
    if (nargs > nparams) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %d arguments (%zd given)", fname, nparams, nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++)
        out[i] = args[i];
    if (kwnames) {
        Py_ssize_t nk = PyTuple_GET_SIZE(kwnames);
        for (Py_ssize_t k = 0; k < nk; k++) {
            const char *kn = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
            if (!kn)
                return -1;
            int found = -1;
            for (int i = 0; i < nparams; i++)
                if (strcmp(kn, names[i]) == 0)
                    found = i;
            if (found < 0) {
                PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%s'", fname, kn);
                return -1;
            }
            if (out[found]) {
                PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", fname, kn);
                return -1;
            }
            out[found] = args[nargs + k];
        }
    }
    for (int i = 0; i < required; i++)
        if (!out[i]) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", fname, names[i]);
            return -1;
        }
    return 0;
}

static int parse_double(PyObject *o, double *v, const char *what) {
    if (!o)
        return 0;
    if (MpTensor_Check(o) && MpTensor_T(o)->numel == 1) {
        PyObject *f = PyNumber_Float(o);
        if (!f)
            return -1;
        *v = PyFloat_AsDouble(f);
        Py_DECREF(f);
        return 0;
    }
    *v = PyFloat_AsDouble(o);
    if (*v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s must be a number, got %.100R", what, o);
        return -1;
    }
    return 0;
}

static int parse_bool(PyObject *o, int *v) {
    if (!o)
        return 0;
    int r = PyObject_IsTrue(o);
    if (r < 0)
        return -1;
    *v = r;
    return 0;
}

static int parse_dtype_opt(PyObject *o, int *dt) {
    if (!o || o == Py_None)
        return 0;
    int d = mp_py_dtype_from(o);
    if (d < 0)
        return -1;
    *dt = d;
    return 0;
}

/* ------------------------------------------------------------------ generated families */

/* The shape of most bindings: parse the arguments, convert the first to a tensor (any
 * dtype), read the attributes, run the op on that one input, drop the input. */
static int parse_first_tensor(const char *fname, PyObject *const *args, Py_ssize_t nargs, PyObject *kw,
                              const char *const *names, int nparams, int required, PyObject **a, mp_tensor **x) {
    if (parse_args(fname, args, nargs, kw, names, nparams, required, a))
        return -1;
    return mp_py_to_tensor(a[0], MP_NO_DTYPE, 0, x);
}

/* Run op on x unless reading its attributes failed (failed != 0, an exception set); x is
 * dropped either way. */
static PyObject *run_and_drop(mp_op op, mp_tensor *x, const mp_attrs *at, int failed) {
    PyObject *r = failed ? NULL : mp_py_run_wrap(op, 1, &x, at);
    mp_tensor_decref(x);
    return r;
}

static const char *const unary_names[] = {"x", "alpha", "approximate", "name"};

static PyObject *unary_impl(mp_op op, const char *fname, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *a[4];
    mp_tensor *x;
    if (parse_first_tensor(fname, args, nargs, kwnames, unary_names, 4, 1, a, &x))
        return NULL;
    mp_attrs at = {0};
    int approx = 0;
    int failed = parse_double(a[1], &at.f0, "alpha") || parse_bool(a[2], &approx);
    at.i0 = approx;
    return run_and_drop(op, x, &at, failed);
}

static const char *const binary_names[] = {"x", "y", "alpha", "name"};

static PyObject *binary_impl(mp_op op, const char *fname, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames) {
    PyObject *a[4];
    if (parse_args(fname, args, nargs, kwnames, binary_names, 4, 2, a))
        return NULL;
    mp_attrs at = {0};
    if (parse_double(a[2], &at.f0, "alpha"))
        return NULL;
    return binary_attrs(op, a[0], a[1], &at);
}

static const char *const reduce_names[] = {"input_tensor", "axis", "keepdims", "name"};

static PyObject *reduce_impl(mp_op op, const char *fname, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames) {
    PyObject *a[4];
    mp_tensor *x;
    if (parse_first_tensor(fname, args, nargs, kwnames, reduce_names, 4, 1, a, &x))
        return NULL;
    mp_attrs at = {0};
    int keep = 0;
    int failed = parse_bool(a[2], &keep) || mp_py_parse_axes(a[1], x->ndim, at.ints, &at.n_ints, "reduction axis");
    at.i0 = keep;
    return run_and_drop(op, x, &at, failed);
}

#define DEF_UNARY(NAME, pyname)                                                                              \
    static PyObject *py_##NAME(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {        \
        (void)m;                                                                                             \
        return unary_impl(MP_OP_##NAME, pyname, args, nargs, kw);                                            \
    }
#define DEF_BINARY(NAME, pyname)                                                                             \
    static PyObject *py_##NAME(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {        \
        (void)m;                                                                                             \
        return binary_impl(MP_OP_##NAME, pyname, args, nargs, kw);                                           \
    }
#define DEF_COMPARE DEF_BINARY
#define DEF_REDUCE(NAME, pyname)                                                                             \
    static PyObject *py_##NAME(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {        \
        (void)m;                                                                                             \
        return reduce_impl(MP_OP_##NAME, pyname, args, nargs, kw);                                           \
    }
#define DEF_OTHER(NAME, pyname)
#define MP_OP(NAME, tfname, pyname, nin, amp, family, kind) DEF_##family(NAME, pyname)
#include "../ops.def"
#undef MP_OP

/* ------------------------------------------------------------------ hand-written ops */

static const char *const cast_names[] = {"x", "dtype", "name"};
static PyObject *py_cast(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    PyObject *a[3];
    if (parse_args("cast", args, nargs, kw, cast_names, 3, 2, a))
        return NULL;
    int dt = mp_py_dtype_from(a[1]);
    if (dt < 0)
        return NULL;
    mp_tensor *x;
    if (mp_py_to_tensor(a[0], MP_NO_DTYPE, 0, &x))
        return NULL;
    mp_attrs at = {.dtype = dt};
    return run_and_drop(MP_OP_CAST, x, &at, 0);
}

static const char *const one_names[] = {"input", "name"};
static PyObject *one_input(mp_op op, const char *fname, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    PyObject *a[2];
    mp_tensor *x;
    if (parse_first_tensor(fname, args, nargs, kw, one_names, 2, 1, a, &x))
        return NULL;
    return run_and_drop(op, x, NULL, 0);
}
/* identity(x) under `with mixprec.device(d)` with x elsewhere is an explicit copy to d (as
 * TensorFlow's); the copy is not recorded on a tape. */
static PyObject *py_identity(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    mp_device scope;
    if (nargs >= 1 && MpTensor_Check(args[0]) && mp_py_device_scope(&scope) &&
        !mp_device_eq(mp_tensor_device(MpTensor_T(args[0])), scope)) {
        mp_tensor *moved;
        mp_status st;
        Py_BEGIN_ALLOW_THREADS
        st = mp_copy_to_device(MpTensor_T(args[0]), scope, &moved);
        Py_END_ALLOW_THREADS
        return st == MP_OK ? mp_py_wrap(moved) : mp_py_raise(st);
    }
    return one_input(MP_OP_IDENTITY, "identity", args, nargs, kw);
}
static PyObject *py_stop_gradient(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    return one_input(MP_OP_STOP_GRADIENT, "stop_gradient", args, nargs, kw);
}

static const char *const where_names[] = {"condition", "x", "y", "name"};
static PyObject *py_where(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    PyObject *a[4];
    if (parse_args("where", args, nargs, kw, where_names, 4, 3, a))
        return NULL;
    mp_tensor *in[3] = {NULL, NULL, NULL};
    PyObject *r = NULL;
    if (mp_py_to_tensor(a[0], MP_BOOL, 1, &in[0]) == 0 && convert_pair(a[1], a[2], &in[1], &in[2]) == 0)
        r = mp_py_run_wrap(MP_OP_WHERE, 3, in, NULL);
    for (int i = 0; i < 3; i++)
        mp_tensor_decref(in[i]);
    return r;
}

static const char *const arg_names[] = {"input", "axis", "output_type", "name"};
static PyObject *argreduce(mp_op op, const char *fname, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    PyObject *a[4];
    if (parse_args(fname, args, nargs, kw, arg_names, 4, 1, a))
        return NULL;
    int odt = MP_I64;
    if (parse_dtype_opt(a[2], &odt))
        return NULL;
    if (odt != MP_I32 && odt != MP_I64) {
        PyErr_Format(PyExc_TypeError, "%s: output_type must be int32 or int64, got %s", fname,
                     mp_dtype_name((mp_dtype)odt));
        return NULL;
    }
    mp_tensor *x;
    if (mp_py_to_tensor(a[0], MP_NO_DTYPE, 0, &x))
        return NULL;
    mp_attrs at = {.dtype = odt};
    PyObject *r = NULL;
    int64_t axes[MP_MAX_DIMS];
    int na = 0;
    if (x->ndim == 0) {
        PyErr_Format(MpExc_InvalidArgument, "%s: input must have rank >= 1, got a scalar", fname);
    } else if (mp_py_parse_axes(a[1] && a[1] != Py_None ? a[1] : NULL, x->ndim, axes, &na, "axis") == 0) {
        if (a[1] == NULL || a[1] == Py_None)
            na = 1, axes[0] = 0; /* TensorFlow's default axis is 0 */
        if (na != 1)
            PyErr_Format(PyExc_ValueError, "%s: axis must be a single integer", fname);
        else {
            at.i0 = axes[0];
            r = mp_py_run_wrap(op, 1, &x, &at);
        }
    }
    mp_tensor_decref(x);
    return r;
}
static PyObject *py_argmax(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    return argreduce(MP_OP_ARGMAX, "argmax", args, nargs, kw);
}
static PyObject *py_argmin(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    return argreduce(MP_OP_ARGMIN, "argmin", args, nargs, kw);
}

static const char *const matmul_names[] = {"a", "b", "transpose_a", "transpose_b", "adjoint_a", "adjoint_b", "name"};
static PyObject *py_matmul(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    PyObject *a[7];
    if (parse_args("matmul", args, nargs, kw, matmul_names, 7, 2, a))
        return NULL;
    int ta = 0, tb = 0, aa = 0, ab = 0;
    if (parse_bool(a[2], &ta) || parse_bool(a[3], &tb) || parse_bool(a[4], &aa) || parse_bool(a[5], &ab))
        return NULL;
    mp_attrs at = {.i0 = ta || aa, .i1 = tb || ab}; /* real dtypes: adjoint == transpose */
    return binary_attrs(MP_OP_MATMUL, a[0], a[1], &at);
}

static const char *const softmax_names[] = {"logits", "axis", "name"};
static PyObject *softmax_impl(mp_op op, const char *fname, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    PyObject *a[3];
    if (parse_args(fname, args, nargs, kw, softmax_names, 3, 1, a))
        return NULL;
    mp_tensor *x;
    if (mp_py_to_tensor(a[0], MP_NO_DTYPE, 0, &x))
        return NULL;
    PyObject *r = NULL;
    int64_t axis = -1;
    if (a[1] && a[1] != Py_None && mp_py_parse_int(a[1], &axis, "axis"))
        goto done;
    if (x->ndim == 0) {
        r = mp_py_run_wrap(op, 1, &x, NULL); /* reports the rank error */
        goto done;
    }
    if (axis < -x->ndim || axis >= x->ndim) {
        PyErr_Format(MpExc_InvalidArgument, "%s: axis %lld is out of range for rank %d", fname, (long long)axis,
                     x->ndim);
        goto done;
    }
    if (axis < 0)
        axis += x->ndim;
    if (axis == x->ndim - 1) {
        r = mp_py_run_wrap(op, 1, &x, NULL);
    } else { /* move the axis last, softmax, move it back */
        mp_attrs p = {.n_ints = x->ndim};
        for (int d = 0; d < x->ndim; d++)
            p.ints[d] = d;
        p.ints[axis] = x->ndim - 1;
        p.ints[x->ndim - 1] = axis;
        mp_tensor *t1 = NULL, *t2 = NULL, *t3 = NULL;
        mp_status st = mp_py_run(MP_OP_TRANSPOSE, 1, &x, &p, &t1);
        if (st == MP_OK)
            st = mp_py_run(op, 1, &t1, NULL, &t2);
        if (st == MP_OK)
            st = mp_py_run(MP_OP_TRANSPOSE, 1, &t2, &p, &t3);
        mp_tensor_decref(t1);
        mp_tensor_decref(t2);
        r = st == MP_OK ? mp_py_wrap(t3) : mp_py_raise(st);
    }
done:
    mp_tensor_decref(x);
    return r;
}
static PyObject *py_softmax(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    return softmax_impl(MP_OP_SOFTMAX, "softmax", args, nargs, kw);
}
static PyObject *py_log_softmax(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    return softmax_impl(MP_OP_LOG_SOFTMAX, "log_softmax", args, nargs, kw);
}

/* Resolve one -1 in a requested shape against numel. */
static int resolve_shape(int64_t numel, PyObject *shape_obj, mp_attrs *at, const int64_t *xshape, int xnd) {
    PyObject *fast = NULL;
    if (MpTensor_Check(shape_obj) || PyArray_Check(shape_obj)) {
        PyObject *arr = MpTensor_Check(shape_obj) ? mp_py_to_numpy(MpTensor_T(shape_obj)) : Py_NewRef(shape_obj);
        if (!arr)
            return -1;
        PyObject *lst = PyObject_CallMethod(arr, "tolist", NULL);
        Py_DECREF(arr);
        if (!lst)
            return -1;
        if (PyLong_Check(lst)) {
            PyObject *t = PyTuple_Pack(1, lst);
            Py_DECREF(lst);
            lst = t;
            if (!lst)
                return -1;
        }
        if (!PyList_Check(lst) && !PyTuple_Check(lst)) { /* a 0-d float tensor or array */
            PyErr_Format(PyExc_TypeError, "reshape: shape must be an integer or a list of integers, got %.100R",
                         shape_obj);
            Py_DECREF(lst);
            return -1;
        }
        fast = PySequence_Fast(lst, "shape");
        Py_DECREF(lst);
    } else if (PyLong_Check(shape_obj)) {
        fast = PyTuple_Pack(1, shape_obj);
    } else {
        fast = PySequence_Fast(shape_obj, "reshape: shape must be a list or tuple of integers");
    }
    if (!fast)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > MP_MAX_DIMS) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "reshape: %zd dimensions; mixprec supports at most %d", n, MP_MAX_DIMS);
        return -1;
    }
    int unknown = -1;
    int64_t known = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(fast, i);
        int64_t v;
        if (it == Py_None)
            v = -1;
        else if (mp_py_parse_int(it, &v, "shape")) {
            Py_DECREF(fast);
            return -1;
        }
        if (v == -1) {
            if (unknown >= 0) {
                Py_DECREF(fast);
                PyErr_SetString(MpExc_InvalidArgument, "reshape: only one input size may be -1");
                return -1;
            }
            unknown = (int)i;
        } else if (v < 0) {
            Py_DECREF(fast);
            PyErr_Format(MpExc_InvalidArgument, "reshape: size %zd must be non-negative, not %lld", i, (long long)v);
            return -1;
        } else if (v != 0 && known > INT64_MAX / 8 / v) {
            Py_DECREF(fast);
            PyErr_Format(MpExc_ResourceExhausted, "reshape: a tensor of this shape is too large (size %zd = %lld)", i,
                         (long long)v);
            return -1;
        } else {
            known *= v;
        }
        at->ints[i] = v;
    }
    Py_DECREF(fast);
    at->n_ints = (int)n;
    if (unknown >= 0) {
        if (known == 0 || numel % known != 0) {
            char buf[256] = "[";
            for (int d = 0; d < xnd; d++)
                snprintf(buf + strlen(buf), sizeof buf - strlen(buf), d ? ",%lld" : "%lld", (long long)xshape[d]);
            PyErr_Format(MpExc_InvalidArgument,
                         "Input to reshape is a tensor with %lld values (shape %s]), but the requested shape "
                         "cannot absorb them with -1 (the known sizes multiply to %lld)",
                         (long long)numel, buf, (long long)known);
            return -1;
        }
        at->ints[unknown] = numel / known;
    }
    return 0;
}

static const char *const reshape_names[] = {"tensor", "shape", "name"};
static PyObject *py_reshape(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    PyObject *a[3];
    mp_tensor *x;
    if (parse_first_tensor("reshape", args, nargs, kw, reshape_names, 3, 2, a, &x))
        return NULL;
    mp_attrs at = {0};
    int failed = resolve_shape(x->numel, a[1], &at, x->shape, x->ndim);
    if (!failed && (PyList_Check(a[1]) || PyTuple_Check(a[1]))) {
        /* the dimension given as -1: the op infers it at every run (a trace replayed at
         * another batch size reshapes [-1, 784] right) */
        Py_ssize_t n = PySequence_Fast_GET_SIZE(a[1]);
        for (Py_ssize_t k = 0; k < n && k < at.n_ints; k++) {
            PyObject *d = PySequence_Fast_GET_ITEM(a[1], k);
            if (PyLong_Check(d) && PyLong_AsLongLong(d) == -1)
                at.i1 = k + 1;
        }
        PyErr_Clear();
    }
    uint32_t x_unknown = mp_graph_recording() ? mp_graph_static_unknown(x) : 0;
    PyObject *r = failed ? NULL : mp_py_run_wrap(MP_OP_RESHAPE, 1, &x, &at);
    mp_tensor_decref(x);
    if (r && x_unknown && MpTensor_Check(r) && (PyList_Check(a[1]) || PyTuple_Check(a[1])) &&
        !mp_py_caller_is_library()) {
        /* a user's target (TensorFlow's static shape): its Python ints are known, the -1
         * is unknown when the input has an unknown dimension, a tensor entry unknown */
        uint32_t bits = 0;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(a[1]);
        for (Py_ssize_t k = 0; k < n && k < at.n_ints; k++) {
            PyObject *d = PySequence_Fast_GET_ITEM(a[1], k);
            if (!PyLong_Check(d) || at.i1 == k + 1)
                bits |= 1u << k;
        }
        if (n == at.n_ints && mp_graph_set_static_unknown(MpTensor_T(r), bits) != MP_OK)
            mp_error_clear();
    }
    return r;
}

static const char *const transpose_names[] = {"a", "perm", "conjugate", "name"};
static PyObject *py_transpose(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    PyObject *a[4];
    mp_tensor *x;
    if (parse_first_tensor("transpose", args, nargs, kw, transpose_names, 4, 1, a, &x))
        return NULL;
    mp_attrs at = {.n_ints = x->ndim};
    int failed = 0;
    if (!a[1] || a[1] == Py_None) {
        for (int d = 0; d < x->ndim; d++)
            at.ints[d] = x->ndim - 1 - d;
    } else { /* perm entries may be negative in NumPy; TensorFlow requires 0..rank-1 (the op checks) */
        failed = mp_py_parse_shape(a[1], at.ints, &at.n_ints, "perm");
    }
    return run_and_drop(MP_OP_TRANSPOSE, x, &at, failed);
}

/* Convert a sequence of values to tensors of a common dtype (the first tensor's). */
static int convert_list(PyObject *values, const char *fname, mp_tensor ***out, int *n) {
    PyObject *fast = PySequence_Fast(values, "");
    if (!fast) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: values must be a list or tuple of tensors, got %.100R", fname, values);
        return -1;
    }
    Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
    if (len == 0) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "%s: needs at least one input", fname);
        return -1;
    }
    if (len > 1 << 20) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "%s: too many inputs (%zd)", fname, len);
        return -1;
    }
    mp_tensor **ts = PyMem_Calloc((size_t)len, sizeof *ts);
    if (!ts) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return -1;
    }
    int hint = MP_NO_DTYPE;
    for (Py_ssize_t i = 0; i < len; i++)
        if (MpTensor_Check(PySequence_Fast_GET_ITEM(fast, i))) {
            hint = MpTensor_T(PySequence_Fast_GET_ITEM(fast, i))->dtype;
            break;
        }
    for (Py_ssize_t i = 0; i < len; i++) {
        if (mp_py_to_tensor(PySequence_Fast_GET_ITEM(fast, i), hint, 0, &ts[i])) {
            for (Py_ssize_t j = 0; j < i; j++)
                mp_tensor_decref(ts[j]);
            PyMem_Free(ts);
            Py_DECREF(fast);
            return -1;
        }
        if (hint == MP_NO_DTYPE)
            hint = ts[i]->dtype;
    }
    Py_DECREF(fast);
    *out = ts;
    *n = (int)len;
    return 0;
}

static void free_list(mp_tensor **ts, int n) {
    for (int i = 0; i < n; i++)
        mp_tensor_decref(ts[i]);
    PyMem_Free(ts);
}

static const char *const concat_names[] = {"values", "axis", "name"};
static PyObject *join_impl(mp_op op, const char *fname, PyObject *const *args, Py_ssize_t nargs, PyObject *kw,
                           int required) {
    PyObject *a[3];
    if (parse_args(fname, args, nargs, kw, concat_names, 3, required, a))
        return NULL;
    mp_tensor **ts;
    int n;
    /* concat of one value that is not a list or tuple (a tensor) is that value, as
     * TensorFlow wraps it in a list; iterating it would join its rows */
    PyObject *values = a[0], *wrapped = NULL;
    if (op == MP_OP_CONCAT && !PyList_Check(values) && !PyTuple_Check(values)) {
        if (!(wrapped = PyList_New(1)))
            return NULL;
        PyList_SET_ITEM(wrapped, 0, Py_NewRef(values));
        values = wrapped;
    }
    int bad = convert_list(values, fname, &ts, &n);
    Py_XDECREF(wrapped);
    if (bad)
        return NULL;
    PyObject *r = NULL;
    int64_t axis = 0;
    if (a[1] && mp_py_parse_int(a[1], &axis, "axis"))
        goto done;
    int rank = ts[0]->ndim + (op == MP_OP_STACK);
    if (rank == 0) { /* concat of scalars: the core explains (hint: stack) */
        mp_attrs at0 = {0};
        r = mp_py_run_wrap(op, n, ts, &at0);
        goto done;
    }
    if (axis < -rank || axis >= rank) {
        PyErr_Format(MpExc_InvalidArgument, "%s: axis %lld is out of range [%d, %d)", fname, (long long)axis, -rank,
                     rank);
        goto done;
    }
    mp_attrs at = {.i0 = axis < 0 ? axis + rank : axis};
    r = mp_py_run_wrap(op, n, ts, &at);
done:
    free_list(ts, n);
    return r;
}
static PyObject *py_concat(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    return join_impl(MP_OP_CONCAT, "concat", args, nargs, kw, 2);
}
static PyObject *py_stack(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    return join_impl(MP_OP_STACK, "stack", args, nargs, kw, 1);
}

static const char *const bto_names[] = {"input", "shape", "name"};
static PyObject *py_broadcast_to(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    PyObject *a[3];
    mp_tensor *x;
    if (parse_first_tensor("broadcast_to", args, nargs, kw, bto_names, 3, 2, a, &x))
        return NULL;
    mp_attrs at = {0};
    return run_and_drop(MP_OP_BROADCAST_TO, x, &at, mp_py_parse_shape(a[1], at.ints, &at.n_ints, "shape"));
}

static const char *const fill_names[] = {"dims", "value", "dtype", "name"};
static PyObject *py_fill(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    PyObject *a[4];
    if (parse_args("fill", args, nargs, kw, fill_names, 4, 2, a))
        return NULL;
    mp_attrs at = {.device = mp_py_current_device()};
    if (mp_py_parse_shape(a[0], at.ints, &at.n_ints, "dims"))
        return NULL;
    int dt = MP_NO_DTYPE;
    if (parse_dtype_opt(a[2], &dt))
        return NULL;
    /* the value decides the dtype when none is given (a 0-d conversion) */
    mp_tensor *v;
    if (mp_py_to_tensor(a[1], dt, 0, &v))
        return NULL;
    if (v->numel != 1) {
        PyErr_Format(MpExc_InvalidArgument, "fill: value must be a scalar, got %lld elements", (long long)v->numel);
        mp_tensor_decref(v);
        return NULL;
    }
    if (dt == MP_NO_DTYPE)
        dt = v->dtype;
    mp_tensor *one;
    mp_status st = mp_cast(v, (mp_dtype)dt, &one);
    mp_tensor_decref(v);
    if (st != MP_OK)
        return mp_py_raise(st);
    /* value via BroadcastTo keeps every dtype exact (int64 included) */
    mp_tensor *r1;
    int64_t ones[1] = {1};
    st = mp_reshape(one, 0, ones, &r1);
    mp_tensor_decref(one);
    if (st != MP_OK)
        return mp_py_raise(st);
    if (!mp_device_eq(mp_tensor_device(r1), at.device)) {
        mp_tensor *moved;
        st = mp_copy_to_device(r1, at.device, &moved);
        mp_tensor_decref(r1);
        if (st != MP_OK)
            return mp_py_raise(st);
        r1 = moved;
    }
    PyObject *r = mp_py_run_wrap(MP_OP_BROADCAST_TO, 1, &r1, &at);
    mp_tensor_decref(r1);
    return r;
}

/* One bound of range(): its value and the dtype it has on its own (TensorFlow converts each
 * bound with convert_to_tensor, then casts all three to the widest of int32 < int64 <
 * float16 < bfloat16 < float32 < float64, or to the dtype asked for). */
typedef struct {
    int is_int; /* the value is an exact integer in i (else a double in f) */
    int64_t i;
    double f;
    int dtype;
} range_arg;

static int range_parse(PyObject *o, const char *what, range_arg *r) {
    int tensor = MpTensor_Check(o) || MpVariable_Check(o);
    int dt = MP_NO_DTYPE;
    if (tensor) {
        PyObject *d = PyObject_GetAttrString(o, "dtype");
        if (!d)
            return -1;
        dt = mp_py_dtype_from(d);
        Py_DECREF(d);
        if (dt < 0)
            return -1;
    }
    if (PyLong_Check(o) || PyArray_IsScalar(o, Integer) || (tensor && mp_dtype_is_integer((mp_dtype)dt))) {
        PyObject *v = PyNumber_Index(o);
        if (!v)
            return -1;
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        Py_DECREF(v);
        if (overflow || (x == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "range: %s %.100R does not fit in int64", what, o);
            return -1;
        }
        r->is_int = 1;
        r->i = x;
        r->f = (double)x;
        r->dtype = tensor ? dt : (x >= INT32_MIN && x <= INT32_MAX ? MP_I32 : MP_I64);
        return 0;
    }
    if (!tensor && !PyFloat_Check(o) && !PyArray_IsScalar(o, Floating)) {
        PyErr_Format(PyExc_TypeError, "range: %s must be a number, got %.100R", what, o);
        return -1;
    }
    if (parse_double(o, &r->f, what))
        return -1;
    r->is_int = 0;
    r->dtype = tensor ? dt : PyArray_IsScalar(o, Double) ? MP_F64 : MP_F32;
    return 0;
}

static int range_rank(int dt) {
    switch (dt) {
    case MP_I32: return 0;
    case MP_I64: return 1;
    case MP_F16: return 2;
    case MP_BF16: return 3;
    case MP_F32: return 4;
    case MP_F64: return 5;
    default: return -1;
    }
}


/* Integer ranges go through the backends' iota in double: exact while every value stays
 * within +-2**53, which is checked instead of producing wrong numbers past it. */
#define RANGE_EXACT_INT ((int64_t)1 << 53)

static const char *const range_names[] = {"start", "limit", "delta", "dtype", "name"};
static PyObject *py_range(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    PyObject *a[5];
    if (parse_args("range", args, nargs, kw, range_names, 5, 1, a))
        return NULL;
    PyObject *vals[3] = {a[0], a[1], a[2]}; /* start, limit, delta */
    if (!vals[1] || vals[1] == Py_None) {   /* range(limit) */
        vals[1] = vals[0];
        vals[0] = NULL;
    }
    static const char *const what[3] = {"start", "limit", "delta"};
    range_arg r[3] = {{1, 0, 0.0, MP_I32}, {1, 0, 0.0, MP_I32}, {1, 1, 1.0, MP_I32}};
    for (int i = 0; i < 3; i++)
        if (vals[i] && vals[i] != Py_None && range_parse(vals[i], what[i], &r[i]))
            return NULL;
    int dt = MP_NO_DTYPE;
    if (parse_dtype_opt(a[3], &dt))
        return NULL;
    if (dt == MP_NO_DTYPE) {
        dt = MP_I32;
        for (int i = 0; i < 3; i++) {
            if (range_rank(r[i].dtype) < 0) {
                PyErr_Format(PyExc_TypeError, "range: %s has dtype %s; give dtype= explicitly", what[i],
                             mp_dtype_name((mp_dtype)r[i].dtype));
                return NULL;
            }
            if (range_rank(r[i].dtype) > range_rank(dt))
                dt = r[i].dtype;
        }
    }
    if (dt == MP_BOOL) {
        PyErr_SetString(PyExc_TypeError, "range: dtype bool is not supported");
        return NULL;
    }
    mp_attrs at = {.dtype = dt, .device = mp_py_current_device()};
    if (mp_dtype_is_integer((mp_dtype)dt)) {
        int64_t v[3];
        for (int i = 0; i < 3; i++) {
            if (r[i].is_int) {
                v[i] = r[i].i;
            } else if (vals[i] && (MpTensor_Check(vals[i]) || MpVariable_Check(vals[i]))) {
                /* a float tensor is cast, as TensorFlow casts it: toward zero */
                if (!(fabs(r[i].f) < 9.2e18)) {
                    PyErr_Format(PyExc_ValueError, "range: %s does not fit in %s", what[i],
                                 mp_dtype_name((mp_dtype)dt));
                    return NULL;
                }
                v[i] = (int64_t)r[i].f;
            } else {
                return PyErr_Format(PyExc_TypeError, "Cannot convert %.100R to EagerTensor of dtype %s", vals[i],
                                    mp_dtype_name((mp_dtype)dt));
            }
            if (!mp_py_int_fits(v[i], dt))
                return PyErr_Format(PyExc_TypeError, "Cannot convert %lld to EagerTensor of dtype %s (%s)",
                                    (long long)v[i], mp_dtype_name((mp_dtype)dt), what[i]);
            if (v[i] > RANGE_EXACT_INT || v[i] < -RANGE_EXACT_INT)
                return PyErr_Format(PyExc_ValueError,
                                    "range: integer %s %lld is beyond +-2**53, which mixprec's range does not "
                                    "support",
                                    what[i], (long long)v[i]);
        }
        if (v[2] == 0) {
            PyErr_SetString(MpExc_InvalidArgument, "Requires delta != 0");
            return NULL;
        }
        if ((v[2] > 0 && v[0] > v[1]) || (v[2] < 0 && v[0] < v[1]))
            return PyErr_Format(MpExc_InvalidArgument,
                                "Requires start <= limit when delta > 0: %lld/%lld (or >= when delta < 0)",
                                (long long)v[0], (long long)v[1]);
        int64_t span = v[1] > v[0] ? v[1] - v[0] : v[0] - v[1], step = v[2] > 0 ? v[2] : -v[2];
        at.i0 = (span + step - 1) / step;
        at.f0 = (double)v[0];
        at.f1 = (double)v[2];
    } else {
        double s = r[0].f, l = r[1].f, d = r[2].f;
        if (!isfinite(s) || !isfinite(l) || !isfinite(d)) {
            PyErr_SetString(MpExc_InvalidArgument, "range: start, limit and delta must be finite");
            return NULL;
        }
        if (d == 0) {
            PyErr_SetString(MpExc_InvalidArgument, "Requires delta != 0");
            return NULL;
        }
        if ((d > 0 && s > l) || (d < 0 && s < l)) {
            /* NOTE: PyErr_Format has no %g; format the numbers here */
            char msg[160];
            snprintf(msg, sizeof msg, "Requires start <= limit when delta > 0: %g/%g (or >= when delta < 0)", s, l);
            PyErr_SetString(MpExc_InvalidArgument, msg);
            return NULL;
        }
        double count = ceil(fabs((l - s) / d));
        if (!(count < 9.0e15)) {
            PyErr_SetString(PyExc_ValueError, "range: too many elements");
            return NULL;
        }
        at.i0 = (int64_t)count;
        at.f0 = s;
        at.f1 = d;
    }
    return mp_py_run_wrap(MP_OP_RANGE, 0, NULL, &at);
}

/* _core.shape_op(x, dtype): tf.shape as an op (a trace replays the shape it is given). */
static const char *const shape_names[] = {"input", "out_type"};
static PyObject *py_shape_op(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    PyObject *a[2];
    if (parse_args("shape_op", args, nargs, kw, shape_names, 2, 1, a))
        return NULL;
    int dt = MP_I32;
    if (parse_dtype_opt(a[1], &dt))
        return NULL;
    mp_tensor *x;
    if (mp_py_to_tensor(a[0], MP_NO_DTYPE, 0, &x))
        return NULL;
    mp_attrs at = {.dtype = dt};
    return run_and_drop(MP_OP_SHAPE, x, &at, 0);
}

/* _core.range_t(start, limit, delta): tf.range of scalar tensors of one dtype, the length
 * read from their values at every run (a traced tf.range(n) replays for another n). */
static const char *const range_t_names[] = {"start", "limit", "delta"};
static PyObject *py_range_t(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    PyObject *a[3];
    if (parse_args("range_t", args, nargs, kw, range_t_names, 3, 3, a))
        return NULL;
    mp_tensor *x[3] = {NULL, NULL, NULL};
    PyObject *r = NULL;
    for (int i = 0; i < 3; i++)
        if (mp_py_to_tensor(a[i], MP_NO_DTYPE, 0, &x[i]))
            goto done;
    mp_attrs at = {.dtype = x[0]->dtype, .device = mp_py_current_device()};
    r = mp_py_run_wrap(MP_OP_RANGE_T, 3, x, &at);
done:
    for (int i = 0; i < 3; i++)
        if (x[i])
            mp_tensor_decref(x[i]);
    return r;
}

/* _core.index_t(x, i): row i of x for a scalar integer tensor i, read at every run. */
static const char *const index_t_names[] = {"x", "index"};
static PyObject *py_index_t(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    PyObject *a[2];
    if (parse_args("index_t", args, nargs, kw, index_t_names, 2, 2, a))
        return NULL;
    mp_tensor *x[2] = {NULL, NULL};
    PyObject *r = NULL;
    if (!mp_py_to_tensor(a[0], MP_NO_DTYPE, 0, &x[0]) && !mp_py_to_tensor(a[1], MP_NO_DTYPE, 0, &x[1]))
        r = mp_py_run_wrap(MP_OP_INDEX_T, 2, x, NULL);
    for (int i = 0; i < 2; i++)
        if (x[i])
            mp_tensor_decref(x[i]);
    return r;
}

/* _core.gather(params, indices, axis=0) and _core.gather_grad(dy, indices, axis, rows): tf.gather
 * (batch_dims 0) and its dense gradient; the indices are checked at every run. */
static const char *const gather_names[] = {"params", "indices", "axis", "rows"};
static PyObject *gather_common(mp_op op, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    PyObject *a[4] = {NULL, NULL, NULL, NULL};
    int grad = op == MP_OP_GATHER_GRAD;
    if (parse_args(grad ? "gather_grad" : "gather", args, nargs, kw, gather_names, grad ? 4 : 3, grad ? 4 : 2, a))
        return NULL;
    long long axis = a[2] ? PyLong_AsLongLong(a[2]) : 0, rows = a[3] ? PyLong_AsLongLong(a[3]) : 0;
    if (PyErr_Occurred())
        return NULL;
    mp_tensor *x[2] = {NULL, NULL};
    PyObject *r = NULL;
    if (!mp_py_to_tensor(a[0], MP_NO_DTYPE, 0, &x[0]) && !mp_py_to_tensor(a[1], MP_NO_DTYPE, 0, &x[1])) {
        mp_attrs at = {.i0 = axis, .i1 = rows};
        r = mp_py_run_wrap(op, 2, x, &at);
    }
    for (int i = 0; i < 2; i++)
        if (x[i])
            mp_tensor_decref(x[i]);
    return r;
}
static PyObject *py_gather(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    return gather_common(MP_OP_GATHER, args, nargs, kw);
}
static PyObject *py_gather_grad(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    return gather_common(MP_OP_GATHER_GRAD, args, nargs, kw);
}

/* _core.matrix_inverse(x, adjoint=False) / _core.matrix_determinant(x): tf.linalg.inv / det. */
static const char *const matrix_inverse_names[] = {"x", "adjoint"};
static PyObject *py_matrix_inverse(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    PyObject *a[2];
    if (parse_args("matrix_inverse", args, nargs, kw, matrix_inverse_names, 2, 1, a))
        return NULL;
    int adj = a[1] ? PyObject_IsTrue(a[1]) : 0;
    if (adj < 0)
        return NULL;
    mp_tensor *x = NULL;
    if (mp_py_to_tensor(a[0], MP_NO_DTYPE, 0, &x))
        return NULL;
    mp_attrs at = {.i0 = adj};
    PyObject *r = mp_py_run_wrap(MP_OP_MATRIX_INVERSE, 1, &x, &at);
    mp_tensor_decref(x);
    return r;
}

static const char *const matrix_determinant_names[] = {"x"};
static PyObject *py_matrix_determinant(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    PyObject *a[1];
    if (parse_args("matrix_determinant", args, nargs, kw, matrix_determinant_names, 1, 1, a))
        return NULL;
    mp_tensor *x = NULL;
    if (mp_py_to_tensor(a[0], MP_NO_DTYPE, 0, &x))
        return NULL;
    mp_attrs at = {0};
    PyObject *r = mp_py_run_wrap(MP_OP_MATRIX_DETERMINANT, 1, &x, &at);
    mp_tensor_decref(x);
    return r;
}

/* _core.cumsum(x, axis=0, exclusive=False, reverse=False): tf.cumsum's running sums. */
static const char *const cumsum_names[] = {"x", "axis", "exclusive", "reverse"};
static PyObject *py_cumsum(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    PyObject *a[4];
    if (parse_args("cumsum", args, nargs, kw, cumsum_names, 4, 1, a))
        return NULL;
    long long axis = a[1] ? PyLong_AsLongLong(a[1]) : 0;
    int ex = a[2] ? PyObject_IsTrue(a[2]) : 0, rev = a[3] ? PyObject_IsTrue(a[3]) : 0;
    if (PyErr_Occurred() || ex < 0 || rev < 0)
        return NULL;
    mp_tensor *x = NULL;
    if (mp_py_to_tensor(a[0], MP_NO_DTYPE, 0, &x))
        return NULL;
    mp_attrs at = {.i0 = axis, .i1 = ex, .i2 = rev};
    PyObject *r = mp_py_run_wrap(MP_OP_CUMSUM, 1, &x, &at);
    mp_tensor_decref(x);
    return r;
}

static const char *const onehot_names[] = {"indices", "depth", "on_value", "off_value", "axis", "dtype", "name"};
static PyObject *py_one_hot(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    PyObject *a[7];
    if (parse_args("one_hot", args, nargs, kw, onehot_names, 7, 2, a))
        return NULL;
    int64_t depth;
    if (mp_py_parse_int(a[1], &depth, "depth"))
        return NULL;
    int dt = MP_F32;
    if (parse_dtype_opt(a[5], &dt))
        return NULL;
    mp_attrs at = {.i0 = depth, .f0 = 1.0, .f1 = 0.0, .dtype = dt};
    if (parse_double(a[2] != Py_None ? a[2] : NULL, &at.f0, "on_value") ||
        parse_double(a[3] != Py_None ? a[3] : NULL, &at.f1, "off_value"))
        return NULL;
    if (mp_dtype_is_integer((mp_dtype)dt)) { /* as convert_to_tensor(value, dtype) would */
        double v[2] = {at.f0, at.f1};
        for (int i = 0; i < 2; i++)
            if (v[i] != floor(v[i]) || !(fabs(v[i]) <= 9007199254740992.0) || !mp_py_int_fits((int64_t)v[i], dt)) {
                char msg[160];
                snprintf(msg, sizeof msg, "one_hot: %s %g does not convert exactly to %s", i ? "off_value" : "on_value",
                         v[i], mp_dtype_name((mp_dtype)dt));
                PyErr_SetString(PyExc_TypeError, msg);
                return NULL;
            }
    }
    int64_t axis = -1;
    if (a[4] && a[4] != Py_None && mp_py_parse_int(a[4], &axis, "axis"))
        return NULL;
    mp_tensor *x;
    if (mp_py_to_tensor(a[0], MP_NO_DTYPE, 0, &x))
        return NULL;
    int failed = axis != -1 && axis != x->ndim;
    if (failed)
        PyErr_SetString(PyExc_NotImplementedError, "one_hot: only axis=-1 is supported");
    return run_and_drop(MP_OP_ONE_HOT, x, &at, failed);
}

/* _core.random(kind, shape, a, b, dtype, seed, stream, tf=0): kind 0 uniform, 1 normal,
 * 2 truncated; tf 1: TensorFlow's stateless conversions (seed, stream: its key and the
 * counter's upper half, as signed 64-bit values), 2: the same for a Generator's draw */
static const char *const random_names[] = {"kind", "shape", "a", "b", "dtype", "seed", "stream", "tf"};
static PyObject *py_random(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    PyObject *a[8] = {NULL};
    if (parse_args("random", args, nargs, kw, random_names, 8, 7, a))
        return NULL;
    int64_t kind, seed, stream;
    int64_t tf = 0;
    if (a[7] && a[7] != Py_None && mp_py_parse_int(a[7], &tf, "tf"))
        return NULL;
    mp_attrs at = {.device = mp_py_current_device()};
    if (mp_py_parse_int(a[0], &kind, "kind") || mp_py_parse_shape(a[1], at.ints, &at.n_ints, "shape") ||
        parse_double(a[2], &at.f0, "a") || parse_double(a[3], &at.f1, "b") || mp_py_parse_int(a[5], &seed, "seed") ||
        mp_py_parse_int(a[6], &stream, "stream"))
        return NULL;
    int dt = mp_py_dtype_from(a[4]);
    if (dt < 0)
        return NULL;
    at.dtype = dt;
    at.i0 = seed;
    at.i1 = stream;
    at.i2 = tf;
    mp_op op = kind == 0 ? MP_OP_RANDOM_UNIFORM : kind == 1 ? MP_OP_RANDOM_NORMAL : MP_OP_TRUNCATED_NORMAL;
    return mp_py_run_wrap(op, 0, NULL, &at);
}

static const char *const ctt_names[] = {"value", "dtype", "dtype_hint", "name"};
static PyObject *py_convert_to_tensor(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    PyObject *a[4];
    if (parse_args("convert_to_tensor", args, nargs, kw, ctt_names, 4, 1, a))
        return NULL;
    int dt = MP_NO_DTYPE, hint = MP_NO_DTYPE;
    if (parse_dtype_opt(a[1], &dt) || parse_dtype_opt(a[2], &hint))
        return NULL;
    mp_tensor *t;
    if (MpTensor_Check(a[0]) && (dt == MP_NO_DTYPE || (int)MpTensor_T(a[0])->dtype == dt))
        return Py_NewRef(a[0]); /* the same object, as TensorFlow (identity matters to callers) */
    if (dt != MP_NO_DTYPE) {
        if (mp_py_to_tensor(a[0], dt, 1, &t))
            return NULL;
    } else if (hint != MP_NO_DTYPE) {
        /* a hint is tried, and silently dropped when the value does not fit it */
        if (mp_py_to_tensor(a[0], hint, 0, &t)) {
            PyErr_Clear();
            if (mp_py_to_tensor(a[0], MP_NO_DTYPE, 0, &t))
                return NULL;
        }
    } else if (mp_py_to_tensor(a[0], MP_NO_DTYPE, 0, &t)) {
        return NULL;
    }
    return mp_py_wrap(t);
}

/* _core.constant(value, dtype=None, shape=None) */
static const char *const const_names[] = {"value", "dtype", "shape", "name"};
static PyObject *py_constant(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    PyObject *a[4];
    if (parse_args("constant", args, nargs, kw, const_names, 4, 1, a))
        return NULL;
    int dt = MP_NO_DTYPE;
    if (parse_dtype_opt(a[1], &dt))
        return NULL;
    mp_tensor *t;
    if (MpTensor_Check(a[0]) && dt != MP_NO_DTYPE && (int)MpTensor_T(a[0])->dtype != dt) {
        mp_status st = mp_cast(MpTensor_T(a[0]), (mp_dtype)dt, &t);
        if (st != MP_OK)
            return mp_py_raise(st);
    } else if (mp_py_to_tensor(a[0], dt, 0, &t)) {
        return NULL;
    }
    if (!a[2] || a[2] == Py_None)
        return mp_py_wrap(t);
    mp_attrs at = {0};
    if (mp_py_parse_shape(a[2], at.ints, &at.n_ints, "shape")) {
        mp_tensor_decref(t);
        return NULL;
    }
    int64_t numel;
    mp_status st = mp_shape_check(at.n_ints, at.ints, &numel);
    if (st != MP_OK) {
        mp_tensor_decref(t);
        return mp_py_raise(st);
    }
    mp_tensor *r;
    if (t->numel == numel) {
        st = mp_py_run(MP_OP_RESHAPE, 1, &t, &at, &r);
    } else if (t->numel == 1) {
        mp_tensor *s;
        st = mp_reshape(t, 0, NULL, &s);
        if (st == MP_OK) {
            st = mp_py_run(MP_OP_BROADCAST_TO, 1, &s, &at, &r);
            mp_tensor_decref(s);
        }
    } else {
        PyErr_Format(PyExc_TypeError,
                     "Eager execution of constant with unsupported shape. Value has %lld elements, but the shape "
                     "requested has %lld elements.",
                     (long long)t->numel, (long long)numel);
        mp_tensor_decref(t);
        return NULL;
    }
    mp_tensor_decref(t);
    if (st != MP_OK)
        return mp_py_raise(st);
    return mp_py_wrap(r);
}

static const char *const xent_names[] = {"labels", "logits", "name"};
static PyObject *xent_impl(mp_op op, const char *fname, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    PyObject *a[3];
    if (parse_args(fname, args, nargs, kw, xent_names, 3, 2, a))
        return NULL;
    mp_tensor *in[2] = {NULL, NULL};
    PyObject *r = NULL;
    if (mp_py_to_tensor(a[1], MP_NO_DTYPE, 0, &in[0]) == 0 &&
        mp_py_to_tensor(a[0], op == MP_OP_SOFTMAX_XENT ? (int)in[0]->dtype : MP_NO_DTYPE, 0, &in[1]) == 0)
        r = mp_py_run_wrap(op, 2, in, NULL);
    mp_tensor_decref(in[0]);
    mp_tensor_decref(in[1]);
    return r;
}
static PyObject *py_sparse_xent(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    return xent_impl(MP_OP_SPARSE_SOFTMAX_XENT, "sparse_softmax_cross_entropy_with_logits", args, nargs, kw);
}
static PyObject *py_xent(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    return xent_impl(MP_OP_SOFTMAX_XENT, "softmax_cross_entropy_with_logits", args, nargs, kw);
}

static const char *const truediv_names[] = {"x", "y", "name"};
static PyObject *py_truediv(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    PyObject *a[3];
    if (parse_args("truediv", args, nargs, kw, truediv_names, 3, 2, a))
        return NULL;
    return mp_py_truediv(a[0], a[1]);
}

/* ------------------------------------------------------------------ method table */

#define FC(name, fn, doc) {name, (PyCFunction)(void (*)(void))fn, METH_FASTCALL | METH_KEYWORDS, doc}

PyObject *mp_py_set_device(PyObject *mod, PyObject *args);

PyMethodDef mp_py_functions[] = {
#define ENTRY_UNARY(NAME, pyname) FC(pyname, py_##NAME, NULL),
#define ENTRY_BINARY ENTRY_UNARY
#define ENTRY_COMPARE ENTRY_UNARY
#define ENTRY_REDUCE ENTRY_UNARY
#define ENTRY_OTHER(NAME, pyname)
#define MP_OP(NAME, tfname, pyname, nin, amp, family, kind) ENTRY_##family(NAME, pyname)
#include "../ops.def"
#undef MP_OP
    FC("cast", py_cast, "cast(x, dtype): a tensor of x's values in dtype (round-to-nearest-even)."),
    FC("identity", py_identity, NULL),
    FC("stop_gradient", py_stop_gradient, NULL),
    FC("where", py_where, NULL),
    FC("argmax", py_argmax, NULL),
    FC("argmin", py_argmin, NULL),
    FC("matmul", py_matmul, NULL),
    FC("softmax", py_softmax, NULL),
    FC("log_softmax", py_log_softmax, NULL),
    FC("reshape", py_reshape, NULL),
    FC("transpose", py_transpose, NULL),
    FC("concat", py_concat, NULL),
    FC("stack", py_stack, NULL),
    FC("broadcast_to", py_broadcast_to, NULL),
    FC("fill", py_fill, NULL),
    FC("range", py_range, NULL),
    FC("shape_op", py_shape_op, NULL),
    FC("range_t", py_range_t, NULL),
    FC("index_t", py_index_t, NULL),
    FC("gather", py_gather, NULL),
    FC("gather_grad", py_gather_grad, NULL),
    FC("cumsum", py_cumsum, NULL),
    FC("matrix_inverse", py_matrix_inverse, NULL),
    FC("matrix_determinant", py_matrix_determinant, NULL),
    FC("one_hot", py_one_hot, NULL),
    FC("random", py_random, NULL),
    {"set_log_device_placement", py_set_log_device_placement, METH_O,
     "tf.debugging.set_log_device_placement: log each eagerly run op's device."},
    FC("convert_to_tensor", py_convert_to_tensor, NULL),
    FC("constant", py_constant, NULL),
    FC("sparse_softmax_cross_entropy_with_logits", py_sparse_xent, "Per-row -log softmax(logits)[label]."),
    FC("softmax_cross_entropy_with_logits", py_xent, "Per-row -sum(labels * log_softmax(logits))."),
    FC("truediv", py_truediv, "x / y; integers are divided as floats (TensorFlow's truediv)."),
    {"array_op", (PyCFunction)(void (*)(void))mp_py_array_op, METH_FASTCALL,
     "array_op(name, inputs, i0, i1, dtype, ints): run an array op of ops.def by its Python name"},
    {"image_projective_transform", (PyCFunction)(void (*)(void))mp_py_image_projective_transform, METH_FASTCALL,
     "image_projective_transform(images, transforms, (h, w), interpolation, fill_mode, fill_value)"},
    {"set_device", mp_py_set_device, METH_VARARGS, "set_device((type, index) or None) -> previous"},
    {"from_dlpack", mp_py_from_dlpack, METH_O, "Wrap a DLPack-exporting object (zero-copy)."},
    {NULL, NULL, 0, NULL},
};
