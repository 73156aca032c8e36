// cudnn_load.h — cuDNN 9 opened at run time (dlopen), never linked: the few entry points the
// plugin calls, resolved by name into one table, and the message that tells a user what to
// install when it is missing. Types come from cudnn_graph.h (headers only).
// NOTE: nothing else in the plugin may call a cudnn* function directly (it would make
// libcudnn a link-time dependency and the plugin would not import without it).
#ifndef MP_CUDNN_LOAD_H
#define MP_CUDNN_LOAD_H
#include <cudnn_graph.h>

#include "mp_cuda.h"

// Every cuDNN function the plugin uses, with the header's own signature.
#define MP_CUDNN_FUNCS(X)                                                                                              \
    X(cudnnGetVersion)                                                                                                 \
    X(cudnnGetCudartVersion)                                                                                           \
    X(cudnnGetErrorString)                                                                                             \
    X(cudnnGetLastErrorString)                                                                                         \
    X(cudnnCreate)                                                                                                     \
    X(cudnnDestroy)                                                                                                    \
    X(cudnnSetStream)                                                                                                  \
    X(cudnnBackendCreateDescriptor)                                                                                    \
    X(cudnnBackendDestroyDescriptor)                                                                                   \
    X(cudnnBackendFinalize)                                                                                            \
    X(cudnnBackendSetAttribute)                                                                                        \
    X(cudnnBackendGetAttribute)                                                                                        \
    X(cudnnBackendExecute)

struct mp_cudnn_api {
#define MP_CUDNN_FIELD(name) decltype(&::name) name;
    MP_CUDNN_FUNCS(MP_CUDNN_FIELD)
#undef MP_CUDNN_FIELD
    size_t version; // cudnnGetVersion(), e.g. 91900
    char path[512]; // where it was loaded from
};

// The loaded library, opened on first call (thread-safe, tried once). NULL when there is none:
// then MP_ERR_NOT_IMPLEMENTED is recorded, naming `what` (e.g. "conv2d on GPU:0"), the places
// tried and what to install.
const mp_cudnn_api *mp_cudnn(const char *what);

// Tries to open one library at `path` (or, when path is NULL, the default search) without
// keeping it: 1 and its version and path in msg, or 0 and the reason (the message a user
// would see) in msg. For tests and mixprec._cuda.cudnn_probe.
int mp_cudnn_probe(const char *path, size_t *version, char *msg, size_t cap);

// Builds and finalizes the cuDNN tensors and operations of one conv slot call (conv_cudnn.cpp;
// kind: mp_conv_kind, or 3/4 for the forward with bias / bias and ReLU fused) without a handle,
// a plan or a GPU: a check of the descriptions anywhere.
mp_status mp_cudnn_conv_describe(int kind, mp_dtype dt, const mp_window *win);

// A failed cuDNN call: its status name and cuDNN's last error text, recorded with file:line.
mp_status mp_cudnn_error(const char *file, int line, const char *expr, cudnnStatus_t s);
#define MP_CUDNN_CHECK(api, expr)                                                                                      \
    do {                                                                                                               \
        cudnnStatus_t mp_cudnn_s_ = (api)->expr;                                                                       \
        if (mp_cudnn_s_ != CUDNN_STATUS_SUCCESS)                                                                       \
            return mp_cudnn_error(__FILE__, __LINE__, #expr, mp_cudnn_s_);                                             \
    } while (0)

#endif
