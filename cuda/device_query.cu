// device_query.cu — the CUDA plugin module mixprec._cuda: finds the GPUs.
// Owns device enumeration only (name, compute capability, memory); the backend kernels
// arrive with the CUDA-backend issue. Must load on machines without a driver or GPU and
// then report none.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <cuda_runtime.h>

// devices() -> [{"name", "compute_capability": (major, minor), "memory_bytes"}]
static PyObject *py_devices(PyObject *, PyObject *) {
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    PyObject *lst = PyList_New(0);
    if (!lst)
        return NULL;
    if (err != cudaSuccess) { // no driver / no device: an empty list, not an error
        cudaGetLastError();
        return lst;
    }
    for (int i = 0; i < n; i++) {
        cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess) {
            cudaGetLastError();
            continue;
        }
        PyObject *d = Py_BuildValue("{s:s,s:(ii),s:K}", "name", p.name, "compute_capability", p.major, p.minor,
                                    "memory_bytes", (unsigned long long)p.totalGlobalMem);
        if (!d || PyList_Append(lst, d) < 0) {
            Py_XDECREF(d);
            Py_DECREF(lst);
            return NULL;
        }
        Py_DECREF(d);
    }
    return lst;
}

static PyObject *py_runtime_version(PyObject *, PyObject *) {
    int v = 0;
    cudaRuntimeGetVersion(&v);
    return PyLong_FromLong(v);
}

// register(_core._C_API) -> GPUs registered: none yet, the backend table is not written
static PyObject *py_register(PyObject *, PyObject *capsule) {
    if (!PyCapsule_GetPointer(capsule, "mixprec._core._C_API"))
        return NULL;
    return PyLong_FromLong(0);
}

static PyObject *py_set_tf32(PyObject *, PyObject *arg) {
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    Py_RETURN_TRUE;
}

static PyMethodDef methods[] = {
    {"register", py_register, METH_O, "register(_core._C_API) -> GPUs registered (none yet)."},
    {"set_tf32", py_set_tf32, METH_O, "TF32 for float32 matmuls (no GEMM yet)."},
    {"devices", py_devices, METH_NOARGS, "The CUDA devices this process can see."},
    {"runtime_version", py_runtime_version, METH_NOARGS, "CUDA runtime version (e.g. 13000)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "mixprec._cuda", "mixprec's CUDA plugin.", -1, methods};

PyMODINIT_FUNC PyInit__cuda(void) { return PyModule_Create(&moduledef); }
