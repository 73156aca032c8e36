/* getitem.c — Tensor.__getitem__: NumPy/TensorFlow basic indexing (ints, slices, `...`,
 * None) turned into one StridedSlice (a zero-copy view when it takes whole rows) plus a
 * reshape for new axes. Advanced indexing is rejected with TensorFlow's message. */
#include "mp_py.h"
#include "../graph.h"

typedef enum { IT_INT, IT_SLICE, IT_NEWAXIS, IT_ELLIPSIS } item_kind;

static int bad_index(PyObject *key) {
    PyErr_Format(PyExc_TypeError,
                 "Only integers, slices (`:`), ellipsis (`...`), mixprec.newaxis (`None`) and scalar int32/int64 "
                 "tensors are valid indices, got %.100R",
                 key);
    return -1;
}

static int classify(PyObject *it, item_kind *k) {
    if (it == Py_None)
        *k = IT_NEWAXIS;
    else if (it == Py_Ellipsis)
        *k = IT_ELLIPSIS;
    else if (PySlice_Check(it))
        *k = IT_SLICE;
    else if (PyBool_Check(it))
        return bad_index(it);
    else if (PyLong_Check(it) || PyIndex_Check(it))
        *k = IT_INT;
    else
        return bad_index(it);
    return 0;
}

/* Dimension d of x taken whole (what `...` and the missing trailing items do): the slice
 * [0, n) step 1, and one output dimension; nonzero when the output has too many. */
static int whole_dim(mp_attrs *at, const mp_tensor *x, int d, int64_t *out_shape, int *on) {
    at->ints[d] = 0;
    at->ints2[d] = x->shape[d];
    at->ints3[d] = 1;
    if (*on >= MP_MAX_DIMS)
        return -1;
    out_shape[(*on)++] = x->shape[d];
    return 0;
}

/* a tensor the trace computes, or a variable (read at every replay) */
static int is_dynamic(PyObject *o) {
    return o && ((MpTensor_Check(o) && mp_graph_is_dynamic(MpTensor_T(o))) || MpVariable_Check(o));
}

/* Does the key hold a tensor a trace computes (an item, or a slice's start/stop/step)? */
static int has_dynamic_bound(PyObject *key) {
    Py_ssize_t n = PyTuple_Check(key) ? PyTuple_GET_SIZE(key) : 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PyTuple_Check(key) ? PyTuple_GET_ITEM(key, i) : key;
        if (is_dynamic(it))
            return 1;
        if (PySlice_Check(it)) {
            PySliceObject *sl = (PySliceObject *)it;
            if (is_dynamic(sl->start) || is_dynamic(sl->stop) || is_dynamic(sl->step))
                return 1;
        }
    }
    return 0;
}

/* x[key] with traced bounds: TensorFlow's slice spec packed into tensors and one
 * STRIDED_SLICE_T op that reads them at every run (src/mixprec/_slicing.py builds it). */
static PyObject *getitem_t(PyObject *self, PyObject *key) {
    static PyObject *fn;
    if (!fn) {
        PyObject *mod = PyImport_ImportModule("mixprec._slicing");
        if (!mod)
            return NULL;
        fn = PyObject_GetAttrString(mod, "getitem_t");
        Py_DECREF(mod);
        if (!fn)
            return NULL;
    }
    return PyObject_CallFunctionObjArgs(fn, self, key, NULL);
}

PyObject *mp_py_getitem(PyObject *self, PyObject *key) {
    mp_tensor *x = MpTensor_T(self);
    int nd = x->ndim;
    /* x[i] with a scalar integer tensor a trace computes (a loop counter): an op that reads
     * the index at every run (as TensorFlow's strided slice of a tensor index) */
    if (nd >= 1 && MpTensor_Check(key) && mp_graph_recording() && mp_graph_is_dynamic(MpTensor_T(key)) &&
        MpTensor_T(key)->ndim == 0 && (MpTensor_T(key)->dtype == MP_I32 || MpTensor_T(key)->dtype == MP_I64)) {
        mp_tensor *in[2] = {x, MpTensor_T(key)};
        return mp_py_run_wrap(MP_OP_INDEX_T, 2, in, NULL);
    }
    if (mp_graph_recording() && has_dynamic_bound(key))
        return getitem_t(self, key);
    PyObject *items = PyTuple_Check(key) ? Py_NewRef(key) : PyTuple_Pack(1, key);
    if (!items)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    item_kind kinds[64];
    if (n > 64) {
        Py_DECREF(items);
        PyErr_SetString(PyExc_IndexError, "too many indices");
        return NULL;
    }
    int consuming = 0, ellipses = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (classify(PyTuple_GET_ITEM(items, i), &kinds[i])) {
            Py_DECREF(items);
            return NULL;
        }
        consuming += kinds[i] == IT_INT || kinds[i] == IT_SLICE;
        ellipses += kinds[i] == IT_ELLIPSIS;
    }
    if (ellipses > 1) {
        Py_DECREF(items);
        PyErr_SetString(PyExc_IndexError, "an index can only have a single ellipsis ('...')");
        return NULL;
    }
    if (consuming > nd) {
        Py_DECREF(items);
        PyErr_Format(MpExc_OutOfRange, "too many indices for a tensor of rank %d: %d were given", nd, consuming);
        return NULL;
    }
    mp_attrs at = {.n_ints = nd};
    int64_t out_shape[MP_MAX_DIMS];
    int on = 0, d = 0, has_newaxis = 0, remaining = consuming;
    for (Py_ssize_t i = 0; i < n; i++) {
        switch (kinds[i]) {
        case IT_NEWAXIS:
            has_newaxis = 1;
            if (on >= MP_MAX_DIMS)
                goto too_many_dims;
            out_shape[on++] = 1;
            break;
        case IT_ELLIPSIS: /* whole dims for everything later items do not claim */
            while (d < nd - remaining) {
                if (whole_dim(&at, x, d, out_shape, &on))
                    goto too_many_dims;
                d++;
            }
            break;
        case IT_INT: {
            int64_t v;
            if (mp_py_parse_int(PyTuple_GET_ITEM(items, i), &v, "index"))
                goto fail;
            int64_t dim = x->shape[d];
            if (v < -dim || v >= dim) {
                PyErr_Format(MpExc_OutOfRange, "slice index %lld of dimension %d out of bounds (size %lld)",
                             (long long)v, d, (long long)dim);
                goto fail;
            }
            at.ints[d] = v < 0 ? v + dim : v;
            at.ints2[d] = 1;
            at.ints3[d] = 1;
            at.i0 |= (int64_t)1 << d;
            d++;
            remaining--;
            break;
        }
        case IT_SLICE: {
            Py_ssize_t start, stop, step;
            PyObject *pstep = ((PySliceObject *)PyTuple_GET_ITEM(items, i))->step;
            if (pstep != Py_None && PyIndex_Check(pstep)) { /* TensorFlow's error, not Python's */
                Py_ssize_t sv = PyNumber_AsSsize_t(pstep, NULL); /* (clipped: only 0 matters) */
                if (sv == -1 && PyErr_Occurred())
                    goto fail;
                if (sv == 0) {
                    PyErr_Format(MpExc_InvalidArgument, "strides[%zd] must be non-zero", i);
                    goto fail;
                }
            }
            if (PySlice_Unpack(PyTuple_GET_ITEM(items, i), &start, &stop, &step) < 0)
                goto fail;
            Py_ssize_t len = PySlice_AdjustIndices((Py_ssize_t)x->shape[d], &start, &stop, step);
            at.ints[d] = len > 0 ? start : 0;
            at.ints2[d] = len;
            at.ints3[d] = step;
            if (on >= MP_MAX_DIMS)
                goto too_many_dims;
            out_shape[on++] = len;
            d++;
            remaining--;
            break;
        }
        }
    }
    for (; d < nd; d++) /* an implicit trailing `...` */
        if (whole_dim(&at, x, d, out_shape, &on))
            goto too_many_dims;
    Py_DECREF(items);
    mp_tensor *r;
    mp_status st = mp_py_run(MP_OP_STRIDED_SLICE, 1, &x, &at, &r);
    if (st != MP_OK)
        return mp_py_raise(st);
    if (has_newaxis) {
        mp_tensor *r2;
        st = mp_reshape(r, on, out_shape, &r2);
        mp_tensor_decref(r);
        if (st != MP_OK)
            return mp_py_raise(st);
        r = r2;
    }
    return mp_py_wrap(r);
too_many_dims:
    PyErr_Format(PyExc_ValueError, "indexing would give more than %d dimensions", MP_MAX_DIMS);
fail:
    Py_DECREF(items);
    return NULL;
}
