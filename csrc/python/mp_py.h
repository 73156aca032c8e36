/* mp_py.h — shared declarations of the CPython glue (csrc/python/).
 * The glue parses, converts and raises; it never loops over tensor elements.
 * NOTE: every function returning PyObject* returns NULL with an exception set on failure;
 * every int-returning one returns -1 likewise. */
#ifndef MP_PY_H
#define MP_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../mixprec.h"

typedef struct {
    PyObject_HEAD
    mp_tensor *t;
    PyObject *weakreflist;
    PyObject *keras_mask; /* tf-keras' `_keras_mask` (a bool Tensor or None); NULL when unset */
} PyMpTensor;

/* module-wide objects, set once at import (see module.c) */
extern PyTypeObject *MpTensor_Type;
extern PyObject *MpExc_OpError;          /* OpError(Exception): the base of all below */
extern PyObject *MpExc_InvalidArgument;  /* InvalidArgumentError(OpError, ValueError) */
extern PyObject *MpExc_DType;            /* InvalidDTypeError(InvalidArgumentError, TypeError) */
extern PyObject *MpExc_OutOfRange;       /* OutOfRangeError(InvalidArgumentError, IndexError) */
extern PyObject *MpExc_Internal;         /* InternalError(OpError, RuntimeError) */
extern PyObject *MpExc_Cuda;             /* CudaError(InternalError) */
extern PyObject *MpExc_ResourceExhausted;/* ResourceExhaustedError(OpError, MemoryError) */
extern PyObject *MpPy_DTypes[MP_DTYPE_COUNT]; /* Python DType objects, registered by mixprec */
extern PyObject *MpPy_TensorShape;       /* mixprec._shape.TensorShape, registered */
extern PyObject *MpPy_AsDType;           /* mixprec._dtypes.as_dtype, registered */
extern PyObject *MpPy_Bf16Descr;         /* numpy dtype of ml_dtypes.bfloat16 */

/* errors.c: turn the core's last error into a Python exception; returns NULL. */
PyObject *mp_py_raise(mp_status st);
/* Is the Python code running now mixprec's own (a module under mixprec; autograph's call
 * wrapper is skipped)? tensor_type.c: library code sees traced values' real sizes. */
int mp_py_caller_is_library(void);
int mp_py_raise_int(mp_status st);

/* tensor_type.c */
PyObject *mp_py_wrap(mp_tensor *t); /* steals the reference; NULL-safe on failure paths */
static inline int MpTensor_Check(PyObject *o) { return PyObject_TypeCheck(o, MpTensor_Type); }
static inline mp_tensor *MpTensor_T(PyObject *o) { return ((PyMpTensor *)o)->t; }
int mp_py_tensor_type_init(PyObject *module);

/* convert.c */
#define MP_NO_DTYPE (-1)
/* Convert o to a tensor (new reference in *out). dtype: MP_NO_DTYPE to infer, else the
 * dtype non-tensor values are converted to; tensors of another dtype are an error when
 * strict, else returned as they are (ops then report the mismatch with both names). */
int mp_py_to_tensor(PyObject *o, int dtype, int strict, mp_tensor **out);
/* DType object, name string, numpy dtype or type -> mp_dtype; -1 with exception. */
int mp_py_dtype_from(PyObject *o);
PyObject *mp_py_dtype_obj(mp_dtype dt); /* borrowed */
/* sequence of ints (or an int tensor / array) -> shape; -1 with exception */
int mp_py_parse_shape(PyObject *o, int64_t *shape, int *ndim, const char *what);
/* whether integer v is a value of integer dtype dt (convert.c) */
int mp_py_int_fits(int64_t v, int dt);
/* Python int-like -> int64 (accepts int tensors of one element); -1 with exception */
int mp_py_parse_int(PyObject *o, int64_t *v, const char *what);
/* normalise axis (int, sequence or None=all) for rank nd into sorted unique axes */
int mp_py_parse_axes(PyObject *o, int nd, int64_t *axes, int *naxes, const char *what);
mp_device mp_py_current_device(void);
/* 1 and *dev when a `with mixprec.device(...)` scope is active on this thread, else 0. */
int mp_py_device_scope(mp_device *dev);
/* host tensor -> numpy array (copy) */
PyObject *mp_py_to_numpy(mp_tensor *t);

/* run an op, releasing the GIL when the work is large */
mp_status mp_py_run(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at, mp_tensor **out);
PyObject *mp_py_run_wrap(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at);

/* array_ops.c: _core.array_op(name, inputs, i0, i1, dtype, ints) */
PyObject *mp_py_array_op(PyObject *m, PyObject *const *args, Py_ssize_t nargs);

/* image_ops.c: _core.image_projective_transform(images, transforms, output_shape,
 * interpolation, fill_mode, fill_value) */
PyObject *mp_py_image_projective_transform(PyObject *m, PyObject *const *args, Py_ssize_t nargs);

/* functions.c */
extern PyMethodDef mp_py_functions[];
/* Binary op with Python-operator conversion rules (used by the number protocol). */
PyObject *mp_py_binary_op(mp_op op, PyObject *a, PyObject *b);
PyObject *mp_py_truediv(PyObject *a, PyObject *b);

/* strings.c: string tensors from Python values and to NumPy object arrays, _core.str_* */
int mp_py_str_convert(PyObject *o, int dtype, mp_tensor **out);
int mp_py_is_string_array(PyObject *o);
/* an object ndarray that is empty or whose first element is str/bytes */
int mp_py_is_object_string_array(PyObject *o);
PyObject *mp_py_str_to_numpy(mp_tensor *t);
int mp_py_strings_init(PyObject *module);
/* linalg.c: host linear-algebra helpers (qr_q) */
int mp_py_linalg_init(PyObject *module);

/* amp.c: the automatic-mixed-precision functions */
int mp_py_amp_init(PyObject *module);

/* variable_type.c */
extern PyTypeObject *MpVariable_Type;
int MpVariable_Check(PyObject *o);
/* The variable o stands for on this thread: its replica's copy in a replica of a strategy
 * over several GPUs (replica_vars.c), else its own. MpVariable_Raw: always its own. */
mp_variable *MpVariable_V(PyObject *o);
mp_variable *MpVariable_Raw(PyObject *o);
mp_variable *mp_py_replica_resolve(mp_variable *v);
int mp_py_replica_vars_init(PyObject *module);
PyObject *mp_py_variable_read(PyObject *o);      /* autocast + tape, new Tensor */
PyObject *mp_py_wrap_variable(mp_variable *v);   /* steals the reference */
int mp_py_variable_type_init(PyObject *module);

/* train.c */
int mp_py_train_init(PyObject *module);
int mp_py_custom_grad_init(PyObject *module);
int mp_py_graph_call_init(PyObject *module);
/* Re-raises a host call's pending Python exception (graph_call.c); 1 when it did. */
int mp_py_graph_call_reraise(void);
/* Re-raise the Python exception a custom gradient function raised (1), or 0 if none. */
int mp_py_custom_grad_reraise(void);
int mp_py_nn_init(PyObject *module);
/* slicing.c: tensor-bound slice ops */
int mp_py_slicing_init(PyObject *module);
int mp_py_math_init(PyObject *module); /* math.c: tf.math scans and segments */

/* collective.c: communicators (csrc/collective.h) */
extern PyObject *MpExc_Unavailable;        /* UnavailableError(OpError, RuntimeError) */
int mp_py_collective_init(PyObject *module);

/* dlpack.c */
PyObject *mp_py_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *mp_py_dlpack_device(PyObject *self, PyObject *unused);
PyObject *mp_py_from_dlpack(PyObject *mod, PyObject *obj);

/* graph.c */
int mp_py_graph_init(PyObject *module);
struct mp_graph;
/* The core graph of a _core.Graph object (borrowed), or NULL with TypeError (graph passes'
 * bindings take Graph objects through this). */
struct mp_graph *mp_py_graph_get(PyObject *o);
/* Every host read of a tensor's elements calls this: a traced value breaks the graph. */
void mp_py_note_host_read(const mp_tensor *t, const char *what);
/* Breaks the recording graph (if any) with this reason. */
void mp_py_graph_break(const char *reason);
/* The current Python exception as a core error (clears it): host callbacks in the core. */
mp_status mp_py_status_from_pyerr(const char *what);
/* Sets the tf.errors exception a host callback raised when `msg` (a core error message)
 * carries the one recorded for it; 1 then, else 0. Clears the record either way. */
int mp_py_restore_host_error(const char *msg);
/* graph_loop.c: _core.graph_loop (a traced loop's node) */
int mp_py_graph_loop_init(PyObject *module);
/* The graph of a _core.Graph, taken out of it (the caller owns it; the object is emptied). */
struct mp_graph *mp_py_graph_take(PyObject *o);

/* getitem.c */
PyObject *mp_py_getitem(PyObject *self, PyObject *key);
#endif
