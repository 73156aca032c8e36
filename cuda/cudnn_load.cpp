// cudnn_load.cpp — finds and opens libcudnn.so.9 at run time and resolves the functions of
// cudnn_load.h. Search order: $MIXPREC_CUDNN_LIBRARY (only it, when set); the pip wheel
// nvidia-cudnn-cu13/-cu12 beside mixprec (site-packages/nvidia/cudnn/lib); the loader's
// default search (LD_LIBRARY_PATH, ldconfig); the CUDA toolkit's library directory of the
// build. Must not be linked to cuDNN, print, or abort: a missing library is a recorded error.
#ifdef MP_WITH_CUDNN // (CMakeLists.txt: only when cuDNN's headers were found)
#include "cudnn_load.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mutex>

#define LIBNAME "libcudnn.so.9"

static mp_cudnn_api api_;
static const mp_cudnn_api *loaded = nullptr;
static std::once_flag once;
static char why[2048]; // the reason it is not loaded (the user's message)

// The directory of this plugin's file, with a trailing '/', or "" when unknown.
static void plugin_dir(char *out, size_t cap) {
    Dl_info info;
    out[0] = 0;
    if (!dladdr((void *)&plugin_dir, &info) || !info.dli_fname)
        return;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash || (size_t)(slash - info.dli_fname + 2) > cap)
        return;
    memcpy(out, info.dli_fname, (size_t)(slash - info.dli_fname + 1));
    out[slash - info.dli_fname + 1] = 0;
}

// Opens one candidate and resolves every function: 1, or 0 with the reason appended to err.
static int open_one(const char *path, mp_cudnn_api *a, void **handle, char *err, size_t cap) {
    size_t used = strlen(err);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(err + used, cap - used, "\n  %s: %s", path, e ? e : "not found");
        return 0;
    }
    memset(a, 0, sizeof *a);
#define MP_CUDNN_RESOLVE(name)                                                                                         \
    a->name = (decltype(a->name))dlsym(h, #name);                                                                      \
    if (!a->name) {                                                                                                    \
        snprintf(err + used, cap - used, "\n  %s: has no %s (not cuDNN 9?)", path, #name);                             \
        dlclose(h);                                                                                                    \
        return 0;                                                                                                      \
    }
    MP_CUDNN_FUNCS(MP_CUDNN_RESOLVE)
#undef MP_CUDNN_RESOLVE
    a->version = a->cudnnGetVersion();
    size_t rt = a->cudnnGetCudartVersion();
    if (a->version < 90000 || a->version >= 100000) {
        snprintf(err + used, cap - used, "\n  %s: is cuDNN %zu.%zu; mixprec needs cuDNN 9", path, a->version / 10000,
                 (a->version % 10000) / 100);
        dlclose(h);
        return 0;
    }
    if (rt / 1000 != CUDART_VERSION / 1000) {
        snprintf(err + used, cap - used, "\n  %s: was built for CUDA %zu but mixprec's GPU plugin for CUDA %d", path,
                 rt / 1000, CUDART_VERSION / 1000);
        dlclose(h);
        return 0;
    }
    Dl_info info;
    const char *where = dladdr((void *)a->cudnnGetVersion, &info) && info.dli_fname ? info.dli_fname : path;
    snprintf(a->path, sizeof a->path, "%s", where);
    *handle = h;
    return 1;
}

// Tries the search order (or only `path`); the message says what was tried and what to do.
static int search(const char *path, mp_cudnn_api *a, void **handle, char *err, size_t cap) {
    snprintf(err, cap, "cuDNN 9 (%s) was not found or not usable; tried:", LIBNAME);
    if (path)
        return open_one(path, a, handle, err, cap);
    const char *env = getenv("MIXPREC_CUDNN_LIBRARY");
    if (env && *env)
        return open_one(env, a, handle, err, cap);
    char dir[1024], cand[1200];
    plugin_dir(dir, sizeof dir);
    if (dir[0]) {
        snprintf(cand, sizeof cand, "%s../nvidia/cudnn/lib/" LIBNAME, dir);
        if (open_one(cand, a, handle, err, cap))
            return 1;
    }
    if (open_one(LIBNAME, a, handle, err, cap))
        return 1;
#ifdef MP_CUDA_LIBDIR
    if (open_one(MP_CUDA_LIBDIR "/" LIBNAME, a, handle, err, cap))
        return 1;
#endif
    return 0;
}

static const char *HOW =
    ". hint: install cuDNN 9 for CUDA %d with `pip install nvidia-cudnn-cu%d`, or put libcudnn.so.9 on "
    "LD_LIBRARY_PATH, or set MIXPREC_CUDNN_LIBRARY to its path; or run this op on the CPU (with "
    "mixprec.device('/CPU:0'): ...)";

static void load_once(void) {
    void *h = nullptr;
    if (search(nullptr, &api_, &h, why, sizeof why))
        loaded = &api_;
}

const mp_cudnn_api *mp_cudnn(const char *what) {
    std::call_once(once, load_once);
    if (!loaded) {
        char how[400];
        snprintf(how, sizeof how, HOW, CUDART_VERSION / 1000, CUDART_VERSION / 1000);
        MP_CUDA_FAIL(MP_ERR_NOT_IMPLEMENTED, "%s needs cuDNN: %s%s", what, why, how);
    }
    return loaded;
}

int mp_cudnn_probe(const char *path, size_t *version, char *msg, size_t cap) {
    mp_cudnn_api a;
    void *h = nullptr;
    char err[2048];
    if (!search(path, &a, &h, err, sizeof err)) {
        size_t used = strlen(err);
        snprintf(err + used, sizeof err - used, HOW, CUDART_VERSION / 1000, CUDART_VERSION / 1000);
        snprintf(msg, cap, "%s", err);
        return 0;
    }
    *version = a.version;
    snprintf(msg, cap, "%s", a.path);
    dlclose(h);
    return 1;
}

mp_status mp_cudnn_error(const char *file, int line, const char *expr, cudnnStatus_t s) {
    const char *name = loaded ? loaded->cudnnGetErrorString(s) : "?";
    char last[512] = "";
    if (loaded)
        loaded->cudnnGetLastErrorString(last, sizeof last);
    mp_status st = s == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
                           s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED
                       ? MP_ERR_MEMORY
                       : MP_ERR_CUDA;
    return mp_cuda_api->error_set_at(file, line, st, "cuDNN error %s (%d) in %s%s%s", name ? name : "?", (int)s, expr,
                                     last[0] ? ": " : "", last);
}
#endif
