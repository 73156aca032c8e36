/* image_ops.c — the binding of ImageProjectiveTransformV3 (ops_image.c):
 * _core.image_projective_transform(images, transforms, (height, width), interpolation,
 * fill_mode, fill_value) with the modes as the op's integers. Argument conversion only; the
 * TensorFlow-facing names and checks are mixprec/_image_transform.py's. */
#include "mp_py.h"

PyObject *mp_py_image_projective_transform(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
    (void)m;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "image_projective_transform(images, transforms, output_shape, "
                                         "interpolation, fill_mode, fill_value) takes 6 arguments");
        return NULL;
    }
    mp_attrs at = {0};
    PyObject *seq = PySequence_Fast(args[2], "image_projective_transform: output_shape must be a sequence");
    if (!seq)
        return NULL;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < k && i < MP_MAX_DIMS; i++) {
        long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return NULL;
        }
        at.ints[i] = v;
    }
    at.n_ints = (int)(k < MP_MAX_DIMS ? k : MP_MAX_DIMS);
    Py_DECREF(seq);
    int64_t interp, fill;
    if (mp_py_parse_int(args[3], &interp, "interpolation") || mp_py_parse_int(args[4], &fill, "fill_mode"))
        return NULL;
    at.i0 = interp;
    at.i1 = fill;
    at.f0 = PyFloat_AsDouble(args[5]);
    if (at.f0 == -1.0 && PyErr_Occurred())
        return NULL;
    mp_tensor *x[2] = {NULL, NULL};
    PyObject *r = NULL;
    if (!mp_py_to_tensor(args[0], MP_NO_DTYPE, 0, &x[0]) && !mp_py_to_tensor(args[1], MP_NO_DTYPE, 0, &x[1]))
        r = mp_py_run_wrap(MP_OP_IMAGE_PROJECTIVE_TRANSFORM, 2, x, &at);
    for (int i = 0; i < 2; i++)
        if (x[i])
            mp_tensor_decref(x[i]);
    return r;
}
