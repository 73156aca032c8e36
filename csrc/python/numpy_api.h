/* numpy_api.h — the one place that configures the NumPy C API for this extension.
 * module.c includes it plainly (and calls import_array); every other file defines
 * NO_IMPORT_ARRAY first. */
#ifndef MP_NUMPY_API_H
#define MP_NUMPY_API_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_21_API_VERSION
#define NPY_TARGET_VERSION NPY_1_23_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL mixprec_ARRAY_API
#include <numpy/arrayobject.h>
#endif
