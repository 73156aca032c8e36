/* errors.c — the one mapping from mp_status to a Python exception class.
 * The message is the core's, which names the offending shapes/dtypes and gives a hint. */
#include "mp_py.h"

PyObject *mp_py_raise(mp_status st) {
    if (mp_py_graph_call_reraise()) { /* a host call's Python exception (graph_call.c), as itself */
        mp_error_clear();
        return NULL;
    }
    const char *msg = mp_error_message();
    if (!msg || !*msg)
        msg = "mixprec: operation failed";
    if (mp_py_restore_host_error(msg)) { /* a traced assertion's own error */
        mp_error_clear();
        return NULL;
    }
    PyObject *exc;
    switch (st) {
    case MP_ERR_VALUE: exc = PyExc_ValueError; break;
    case MP_ERR_TYPE: exc = PyExc_TypeError; break;
    case MP_ERR_SHAPE:
    case MP_ERR_DEVICE:
    case MP_ERR_NONFINITE: exc = MpExc_InvalidArgument; break;
    case MP_ERR_DTYPE: exc = MpExc_DType; break;
    case MP_ERR_MEMORY: exc = MpExc_ResourceExhausted; break;
    case MP_ERR_INDEX: exc = MpExc_OutOfRange; break;
    case MP_ERR_CUDA: exc = MpExc_Cuda; break;
    case MP_ERR_NOT_IMPLEMENTED: exc = PyExc_NotImplementedError; break;
    case MP_ERR_UNAVAILABLE: exc = MpExc_Unavailable; break;
    default: exc = MpExc_Internal; break;
    }
    if (st == MP_ERR_INTERNAL || st == MP_OK || st >= MP_STATUS_COUNT)
        PyErr_Format(exc, "%s (at %s; this is a bug in mixprec, please report it)", msg, mp_error_where());
    else
        PyErr_SetString(exc, msg);
    mp_error_clear();
    return NULL;
}

int mp_py_raise_int(mp_status st) {
    mp_py_raise(st);
    return -1;
}
