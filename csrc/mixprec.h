/* mixprec.h — the one public header of the C core.
 *
 * Owns: status codes, dtypes, devices, the tensor struct, the backend table and the
 * op entry points. It must not include Python.h: the core is plain C11 and is tested
 * through the bindings in csrc/python/ (or directly under sanitizers).
 *
 * Reading order: status -> dtype -> device -> tensor -> backend -> ops.
 */
#ifndef MIXPREC_H
#define MIXPREC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ status */

/* Every fallible core function returns an mp_status. On failure it has recorded a
 * message (with file:line) via mp_error_set; the binding turns it into an exception.
 * NOTE: values are append-only: csrc/python/errors.c maps them to Python classes. */
typedef enum mp_status {
    MP_OK = 0,
    MP_ERR_VALUE,          /* ValueError: a bad argument value */
    MP_ERR_TYPE,           /* TypeError: wrong kind of argument */
    MP_ERR_SHAPE,          /* InvalidArgumentError (ValueError): incompatible shapes */
    MP_ERR_DTYPE,          /* InvalidArgumentError (TypeError too): incompatible dtypes */
    MP_ERR_MEMORY,         /* MemoryError */
    MP_ERR_INDEX,          /* IndexError */
    MP_ERR_DEVICE,         /* a tensor on the wrong device, or no such device */
    MP_ERR_CUDA,           /* a CUDA / cuBLAS / cuDNN call failed */
    MP_ERR_INTERNAL,       /* a broken invariant: a bug in mixprec */
    MP_ERR_NOT_IMPLEMENTED,/* NotImplementedError */
    MP_ERR_NONFINITE,      /* check_numerics found inf/NaN */
    MP_ERR_UNAVAILABLE,    /* UnavailableError: a collective's peer is lost or timed out */
    MP_STATUS_COUNT
} mp_status;

/* Records `fmt` (printf-style) and the call site in a thread-local buffer; returns st. */
mp_status mp_error_set_at(const char *file, int line, mp_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
#define mp_error_set(st, ...) mp_error_set_at(__FILE__, __LINE__, (st), __VA_ARGS__)
/* The message recorded by the last failure on this thread ("" if none). */
const char *mp_error_message(void);
/* "file:line" of the last failure on this thread. */
const char *mp_error_where(void);
void mp_error_clear(void);

/* Propagate a failure: `MP_TRY(mp_foo(...));` returns the status if it is not MP_OK. */
#define MP_TRY(expr)                      \
    do {                                  \
        mp_status mp_try_st_ = (expr);    \
        if (mp_try_st_ != MP_OK)          \
            return mp_try_st_;            \
    } while (0)

/* ------------------------------------------------------------------- dtype */

/* NOTE: append-only; the Python DType objects carry these numbers. */
typedef enum mp_dtype {
    MP_F32 = 0,
    MP_F16 = 1,
    MP_BF16 = 2,
    MP_F64 = 3,
    MP_I32 = 4,
    MP_I64 = 5,
    MP_U8 = 6,
    MP_BOOL = 7,
    MP_I8 = 8,
    MP_STRING = 9, /* variable-length byte strings, host only: csrc/strings.h */
    MP_DTYPE_COUNT
} mp_dtype;

size_t mp_dtype_size(mp_dtype dt);
const char *mp_dtype_name(mp_dtype dt);
int mp_dtype_is_floating(mp_dtype dt);
int mp_dtype_is_integer(mp_dtype dt);
int mp_dtype_valid(int dt);

/* Scalar conversions; round-to-nearest-even, NaN and +-inf kept, subnormals exact. */
uint16_t mp_f32_to_f16(float f);
float mp_f16_to_f32(uint16_t h);
uint16_t mp_f32_to_bf16(float f);
float mp_bf16_to_f32(uint16_t b);
uint16_t mp_f64_to_f16(double d); /* single rounding, as NumPy's float64 -> float16 */
uint16_t mp_f64_to_bf16(double d); /* single rounding, as ml_dtypes' float64 -> bfloat16 */

/* Row conversions (n elements, no aliasing). Vectorised with F16C/AVX2 when the CPU has
 * them (picked once at run time), scalar otherwise; results are bit-identical. */
void mp_row_f16_to_f32(const uint16_t *src, float *dst, int64_t n);
void mp_row_f32_to_f16(const float *src, uint16_t *dst, int64_t n);
void mp_row_bf16_to_f32(const uint16_t *src, float *dst, int64_t n);
void mp_row_f32_to_bf16(const float *src, uint16_t *dst, int64_t n);
/* Any dtype to any dtype on host memory (n elements). Float -> int truncates toward
 * zero as C does; NaN/inf/out-of-range to int gives the saturated value (NaN -> 0),
 * never undefined behaviour. To bool: x != 0. */
mp_status mp_cast_host(const void *src, mp_dtype sdt, void *dst, mp_dtype ddt, int64_t n);
/* Which cast kernels are active: "avx2+f16c" or "scalar". */
const char *mp_cast_isa(void);
/* CRC-32C of n bytes, continuing crc (0 to start): crc32c.c. Thread-safe. */
uint32_t mp_crc32c_extend(uint32_t crc, const void *data, size_t n);
/* which exp the CPU kernels use: "libmvec-avx2" or "scalar" (csrc/vecmath.c) */
const char *mp_vecmath_isa(void);
/* Force the scalar path (tests compare both paths); returns the previous setting. */
int mp_cast_force_scalar(int on);

/* ------------------------------------------------------------------ device */

typedef enum mp_device_type { MP_DEV_CPU = 0, MP_DEV_CUDA = 1, MP_DEV_TYPE_COUNT } mp_device_type;

typedef struct mp_device {
    int type;  /* mp_device_type */
    int index; /* ordinal within the type */
} mp_device;

static inline int mp_device_eq(mp_device a, mp_device b) {
    return a.type == b.type && a.index == b.index;
}

/* ------------------------------------------------------------------ tensor */

#define MP_MAX_DIMS 8

/* A refcounted block of device memory. Tensors that view it share it. */
typedef struct mp_storage {
    int64_t refcount;   /* atomic */
    mp_device device;
    void *data;
    size_t nbytes;
    /* When non-NULL the memory is foreign (DLPack import): deleter(ctx) releases it. */
    void (*deleter)(void *ctx);
    void *deleter_ctx;
} mp_storage;

/* An immutable, contiguous, row-major n-d array. A view is storage + byte offset.
 * NOTE: kernels may assume contiguity; every op that changes layout copies. */
typedef struct mp_tensor {
    int64_t refcount;   /* atomic */
    mp_storage *storage;
    size_t offset;      /* bytes from storage->data */
    mp_dtype dtype;
    int ndim;
    int64_t shape[MP_MAX_DIMS];
    int64_t numel;
    int64_t id;         /* unique per tensor; the tape keys gradients by it */
    int amp_lowered;    /* a float32 value autocast computed in float16/bfloat16 (amp.c) */
    /* MP_STRING only: the byte arena the (offset, length) element records point into;
     * shared by views and by tensors gathered from this one (csrc/strings.h). */
    mp_storage *arena;
} mp_tensor;

static inline void *mp_tensor_data(const mp_tensor *t) {
    return (char *)t->storage->data + t->offset;
}
static inline size_t mp_tensor_nbytes(const mp_tensor *t) {
    return (size_t)t->numel * mp_dtype_size(t->dtype);
}
static inline mp_device mp_tensor_device(const mp_tensor *t) { return t->storage->device; }

/* New uninitialised tensor on `dev`. shape may be NULL when ndim == 0. */
mp_status mp_tensor_new(mp_dtype dt, int ndim, const int64_t *shape, mp_device dev, mp_tensor **out);
/* New tensor on `dev` sharing `base`'s storage at byte offset `offset` (view). */
mp_status mp_tensor_view(mp_tensor *base, size_t offset, mp_dtype dt, int ndim, const int64_t *shape,
                         mp_tensor **out);
/* Wrap foreign memory (DLPack). On failure the deleter is NOT called. */
mp_status mp_tensor_wrap(void *data, mp_dtype dt, int ndim, const int64_t *shape, mp_device dev,
                         void (*deleter)(void *), void *ctx, mp_tensor **out);
void mp_tensor_incref(mp_tensor *t);
void mp_tensor_decref(mp_tensor *t); /* NULL-safe */
/* Validates a shape: 0 <= ndim <= MP_MAX_DIMS, dims >= 0, numel fits int64. */
mp_status mp_shape_check(int ndim, const int64_t *shape, int64_t *numel_out);
/* A fresh id from the global counter (tensors and variables share the namespace). */
int64_t mp_next_id(void);
/* How many ids were issued so far (tensors created): tf.config uses it to tell whether the
 * runtime was used before logical devices are configured. */
int64_t mp_ids_issued(void);
/* Storage references (graph replay keeps its buffers between runs). NULL-safe. */
void mp_storage_incref(mp_storage *s);
void mp_storage_decref(mp_storage *s);
/* Offer s to the next mp_tensor_new on this thread: it is used (instead of a new
 * allocation) when it has exactly the bytes needed, the device, and refcount 1 (only the
 * offerer holds it); NULL withdraws the offer. Graph replay reuses buffers through it. */
void mp_storage_offer(mp_storage *s);
/* Is the storage shared with anyone else (copy-on-write test for in-place updates)? */
int mp_tensor_storage_shared(const mp_tensor *t);

/* ------------------------------------------------------------------ backend */

typedef enum mp_unary_kind {
#define MP_UNARY(NAME, name) MP_UNARY_##NAME,
#include "unary.def"
#undef MP_UNARY
    MP_UNARY_COUNT
} mp_unary_kind;

typedef enum mp_binary_kind {
#define MP_BINARY(NAME, name, is_cmp) MP_BINARY_##NAME,
#include "binary.def"
#undef MP_BINARY
    MP_BINARY_COUNT
} mp_binary_kind;

typedef enum mp_reduce_kind {
    MP_REDUCE_SUM = 0,
    MP_REDUCE_MEAN,
    MP_REDUCE_MAX,
    MP_REDUCE_MIN,
    MP_REDUCE_PROD,
    MP_REDUCE_ALL,   /* bool */
    MP_REDUCE_ANY,   /* bool */
    MP_REDUCE_COUNT
} mp_reduce_kind;

/* NOTE: new kinds go at the end (the Python module exports the numbers). */
typedef enum mp_optim_kind {
    MP_OPTIM_SGD = 0,
    MP_OPTIM_RMSPROP,
    MP_OPTIM_ADAM,
    MP_OPTIM_ADAGRAD,
    MP_OPTIM_ADADELTA,
    MP_OPTIM_ADAMAX,
    MP_OPTIM_NADAM,
    MP_OPTIM_FTRL,
    MP_OPTIM_LION,
    MP_OPTIM_COUNT
} mp_optim_kind;

typedef struct mp_optim_hparams {
    double lr;
    double momentum;  /* SGD, RMSprop */
    int nesterov;     /* SGD */
    double rho;       /* RMSprop, Adadelta */
    double epsilon;   /* RMSprop, Adam, Adagrad, Adadelta, Adamax, Nadam */
    int centered;     /* RMSprop */
    double beta_1, beta_2; /* Adam, Adamax, Nadam, Lion */
    int amsgrad;      /* Adam */
    /* SGD, RMSprop: the momentum slot and rule are used (fixed when the optimizer is made,
     * as TensorFlow; the momentum value may be 0 and may change between steps) */
    int use_momentum;
    /* tf-keras 2.21's decoupled weight decay (any rule; AdamW's): before the rule, every
     * variable not excluded (mp_optimizer_apply's no_decay) is w -= w * weight_decay * lr */
    int use_weight_decay;
    double weight_decay;
    /* Ftrl */
    double lr_power, l1, l2, l2_shrinkage, beta;
    /* Nadam's momentum schedule 0.96^(schedule_decay * t): 1 for tf-keras 2.21's Nadam,
     * the legacy Nadam's decay (0.004) for keras.optimizers.legacy.Nadam */
    double schedule_decay;
    /* Adagrad: epsilon outside the root (the legacy optimizer's ResourceApplyAdagradV2) */
    int eps_outside;
} mp_optim_hparams;

/* The per-step inputs of a fused optimizer update. The pointers are memory of the step's
 * device (host memory for the CPU backend) and are read by the backend, on the device, so
 * that a step needs no host synchronisation:
 *   gradient multiplier  grad_scale / *loss_scale   (grad_scale alone when loss_scale is NULL)
 *   Adam's step          t = *iterations + 1         (t = 1 when iterations is NULL), giving
 *                        lr_t = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t), in double
 *   skip                 nothing is written when found_inf is not NULL and *found_inf != 0 */
typedef struct mp_optim_step {
    mp_optim_hparams hp;
    double grad_scale;
    const float *loss_scale;   /* () float32, or NULL */
    const int64_t *iterations; /* () int64, or NULL */
    const uint8_t *found_inf;  /* () bool, or NULL */
    /* Nadam's running product of its momentum schedule (u_product, float32 ()): read, and
     * advanced once by a step that is not skipped; NULL for the other rules */
    float *state;
} mp_optim_step;

/* One variable's share of a fused optimizer update (memory of the step's device). */
typedef struct mp_optim_var {
    mp_dtype wdt;    /* the variable's dtype, and its gradient's */
    void *w;         /* (n) the variable */
    const void *g;   /* (n) its gradient */
    void *s[3];      /* (n) slots in the rule's order (optim.c), NULL when unused; of dtype
                      * mp_optim_slot_dtype(wdt): float64 for float64 variables, else float32 */
    int64_t n;
    mp_dtype cdt;    /* dtype of cache */
    void *cache;     /* (n) the low-precision copy layers read, refreshed from w; or NULL */
    int decay;       /* weight decay applies to this variable (hp.use_weight_decay, not excluded) */
} mp_optim_var;

/* A read-only run of n elements of dtype dt (multi-tensor kernels take arrays of these). */
typedef struct mp_span {
    mp_dtype dt;
    const void *p; /* (n) */
    int64_t n;
} mp_span;

/* The dynamic loss scale's constants (the state, scale and good-step count, is memory). */
typedef struct mp_loss_scale_params {
    int64_t growth_interval;
    double multiplier;
    double min_scale;
} mp_loss_scale_params;

/* Broadcast description for binary/ternary kernels, after collapsing: the output is
 * (shape[0], ..., shape[ndim-1]) contiguous; operand k is read at sum(i_d * stride[k][d])
 * (element strides, 0 where broadcast). ndim >= 1. */
typedef struct mp_bcast {
    int ndim;
    int64_t shape[MP_MAX_DIMS];
    int64_t stride[3][MP_MAX_DIMS];
    int64_t numel;
} mp_bcast;

/* Strided copy: dst[sum(i*dstride)] = src[sum(i*sstride)] over `shape` (element strides,
 * may be negative for src). Serves transpose, slicing, slice-grad, concat, broadcast_to. */
typedef struct mp_strided {
    int ndim;
    int64_t shape[MP_MAX_DIMS];
    int64_t sstride[MP_MAX_DIMS];
    int64_t dstride[MP_MAX_DIMS];
} mp_strided;

/* A 2-D sliding window (convolution or pooling) over NHWC or NCHW data, every size
 * resolved by ops.c (padding as TensorFlow computes it, possibly asymmetric). 1-D ops are
 * 2-D with height 1. Filters are TensorFlow's HWIO: (kh, kw, c / groups, oc), row-major. */
typedef struct mp_window {
    int64_t n, c, h, w;     /* input */
    int64_t oc, oh, ow;     /* output (pooling: oc == c) */
    int64_t kh, kw;         /* filter or pooling window */
    int64_t sh, sw;         /* strides, >= 1 */
    int64_t dh, dw;         /* dilations, >= 1 (pooling: 1) */
    int64_t pt, pb, pl, pr; /* zero padding: top, bottom, left, right */
    int64_t groups;         /* convolution: c / filter's input channels */
    int nchw;               /* 1: NCHW, 0: NHWC */
} mp_window;

typedef enum mp_conv_kind {
    MP_CONV_FWD = 0,        /* out y (n, oc, oh, ow)   from a = x, b = filter */
    MP_CONV_BWD_DATA,       /* out dx (n, c, h, w)     from a = filter, b = dy */
    MP_CONV_BWD_FILTER      /* out dfilter (HWIO)      from a = x, b = dy */
} mp_conv_kind;

/* The batch-statistics slot's kinds: x (outer, C, inner), statistics (2, C) in float32
 * (float64 for float64 x), N = outer * inner values per channel. */
typedef enum mp_stats_kind {
    MP_STATS_MOMENTS = 0,   /* out (2, C) = [mean, biased variance] of x */
    MP_STATS_GRAD_SUMS,     /* out (2, C) = [sum y, sum y (x - mean)] from y (x's shape and dtype), mean (C) */
    MP_STATS_MOMENTS_GRAD   /* out (x's shape and dtype) = (g[0] + 2 g[1] (x - mean)) / N from g (2, C), mean (C) */
} mp_stats_kind;

typedef enum mp_pool_kind {
    MP_POOL_MAX = 0,        /* out y from a = x (b unused) */
    MP_POOL_AVG,            /* out y from a = x; the count excludes padding (TensorFlow's SAME) */
    MP_POOL_MAX_BWD,        /* out dx from a = x, b = dy: dy goes to each window's first maximum */
    MP_POOL_AVG_BWD,        /* out dx from b = dy (a unused) */
    MP_POOL_MAX_GRADGRAD    /* out (y's shape) from a = x, b = g (x's shape): g at each window's first maximum */
} mp_pool_kind;

/* The linalg slot's computations on `batch` row-major matrices a (m, n) (square: m = n) and,
 * for the solves, right-hand sides b (m, k); each writes one result into out. Flags in
 * mp_linalg_call's i0/i1 as named per kind. */
typedef enum mp_linalg_kind {
    MP_LINALG_INV = 0, /* out (batch, n, n) = a^-1 (a^-H when i0 = adjoint); MP_ERR_SHAPE "Input is not invertible." on a zero pivot */
    MP_LINALG_DET,     /* out (batch) = det(a) by LU with partial pivoting (0 for a singular a) */
    MP_LINALG_CHOLESKY, /* out (batch, n, n) = L of a's lower triangle (upper zero); NaN in L's lower triangle when a is not positive definite */
    MP_LINALG_TRSOLVE,  /* out (batch, n, k) = a^-1 b with a's triangle (i0 lower, i1 adjoint: a^H); no singularity check */
    MP_LINALG_SOLVE,    /* out (batch, n, k) = a^-1 b (a^-H b when i0); MP_ERR_SHAPE "Input matrix is not invertible." */
    MP_LINALG_QR,       /* i0 full_matrices, i1 = 0: out q (m, full ? m : min(m, n)), 1: out r (full ? m : min(m, n), n) */
    MP_LINALG_EIGH,     /* a's lower triangle; i1 = 0: out eigenvalues (batch, n) ascending, 1: eigenvectors (batch, n, n) as columns */
    MP_LINALG_SVD,      /* i0 full_matrices, i1 = 0: s (batch, min(m, n)) descending, 1: u (m, full ? m : p), 2: v (n, full ? n : p) */
    MP_LINALG_SLOGDET,  /* i1 = 0: out sign(det a) (batch) (0 when singular), 1: log|det a| (batch) (-inf when singular) */
    MP_LINALG_BAND,     /* out (batch, m, n) = a where (i0 < 0 or i - j <= i0) and (i1 < 0 or j - i <= i1), else 0 */
    MP_LINALG_LU        /* getrf: i1 = 0 out (batch, n, n) L (unit, below) and U packed, 1: out (batch, n) the row order p
                         * (a[p] = L U) as exact floats; MP_ERR_SHAPE "Input is not invertible." on a zero pivot */
} mp_linalg_kind;

/* One call of the linalg slot: what it computes and on which host or device buffers.
 * The element counts let a backend without its own kernels copy the buffers (the CUDA
 * plugin's host round trip) without knowing each kind's shapes. */
typedef struct mp_linalg_call {
    mp_linalg_kind kind;
    mp_dtype dtype;         /* float32 or float64, every buffer */
    int64_t batch, m, n, k; /* a: (batch, m, n); b: (batch, m, k) */
    int64_t i0, i1;         /* the kind's flags */
    const void *a, *b;      /* b NULL when the kind has no right-hand side */
    void *out;
    int64_t a_count, b_count, out_count; /* elements of a, b and out */
} mp_linalg_call;

/* One table per device type, its slots listed in backend.def. Kernels see raw pointers,
 * sizes and dtypes; the op layer (ops.c) has already validated shapes and dtypes and
 * allocated outputs.
 * NOTE: ops never test the device type; they call through this table, always with
 * MP_BACKEND_CALL. A NULL slot means "not supported on this backend": the call reports
 * MP_ERR_NOT_IMPLEMENTED naming the slot, the backend and the device. */
typedef struct mp_backend {
    const char *name;
#define MP_BACKEND_SLOT(slot, ret, params, doc) ret(*slot) params;
#include "backend.def"
#undef MP_BACKEND_SLOT
} mp_backend;

/* The one funnel for calling a slot (every slot but `free`, which cannot fail and is
 * checked where memory is allocated): MP_BACKEND_CALL(be, slot, dev, args...) calls
 * be->slot(dev, args...), or, when the backend lacks the slot, records
 * MP_ERR_NOT_IMPLEMENTED ("the cuda backend does not implement conv (GPU:0)") and returns it. */
#define MP_BACKEND_FIRST_(a, ...) a
#define MP_BACKEND_CALL(be, slot, ...)                                                                      \
    ((be)->slot ? (be)->slot(__VA_ARGS__)                                                                    \
                : mp_backend_missing_slot((be), #slot, MP_BACKEND_FIRST_(__VA_ARGS__, 0)))
/* Records and returns MP_ERR_NOT_IMPLEMENTED for a slot `be` lacks on device dev. */
mp_status mp_backend_missing_slot(const mp_backend *be, const char *slot, mp_device dev);

enum { MP_RANDOM_UNIFORM = 0, MP_RANDOM_NORMAL = 1, MP_RANDOM_TRUNCATED_NORMAL = 2,
       /* TensorFlow's stateless conversions (csrc/philox_tf.h): floats are the standard
        * draw (a, b ignored: the caller scales, as TensorFlow does); integers lo + bits %
        * (b - a), or every bit when a == b == 0 */
       MP_RANDOM_TF_UNIFORM = 3, MP_RANDOM_TF_NORMAL = 4, MP_RANDOM_TF_TRUNCATED_NORMAL = 5,
       /* the same for a tf.random.Generator: the counter starts at a + b * 2^32 (a, b: its
        * 32-bit halves), integers are every bit */
       MP_RANDOM_TFG_UNIFORM = 6, MP_RANDOM_TFG_NORMAL = 7, MP_RANDOM_TFG_TRUNCATED_NORMAL = 8 };

/* The table for a device type, or NULL when that backend is absent. */
const mp_backend *mp_backend_get(int device_type);
/* Install a backend table (the CUDA plugin calls this when a GPU is present; NULL removes
 * it). The table must outlive the process's use of the device type. */
mp_status mp_backend_register(int device_type, const mp_backend *be, int device_count);
int mp_device_count(int device_type);
extern const mp_backend mp_backend_cpu;
/* The slots of backend.def by index (0 .. mp_backend_slot_count() - 1): the name (NULL past
 * the end) and, when doc is not NULL, its one-line doc; whether `be` has slot i. */
int mp_backend_slot_count(void);
const char *mp_backend_slot_info(int i, const char **doc);
int mp_backend_has_slot(const mp_backend *be, int i);
/* Device services through the table (MP_ERR_DEVICE for a device that is not there):
 * memory in use and its peak (backend.def, memory_stats), and waiting for queued work. */
mp_status mp_device_memory_stats(mp_device dev, int reset_peak, int64_t *current, int64_t *peak);
mp_status mp_device_synchronize(mp_device dev);
mp_status mp_device_host_syncs(mp_device dev, int64_t *count);
/* Test aid: registers the CPU kernels as device type CUDA (`on` "GPUs", usually one) so the
 * device plumbing runs on machines without a GPU; on = 0 removes it. Fails when a real backend is there.
 * `without`: NULL, or comma-separated slot names left NULL (to test unsupported slots).
 * Its host_syncs slot counts copies from that device to the host (the host
 * synchronisations a real GPU would have). */
mp_status mp_backend_emulate_gpu(int on, const char *without);
/* Test aid: emulated CUDA-graph slots on the emulated GPU (on = 0 removes them): the CPU
 * kernels run while "capturing", a first launch is a no-op and a re-launch fails, so the
 * core's capture bookkeeping and fallbacks run without a GPU (backend.c). */
mp_status mp_backend_emulate_graphs(int on);

/* The core's services for backend plugins. A plugin is a separate extension module: it
 * cannot link the core's symbols (extension modules are loaded RTLD_LOCAL), so _core
 * exports this table as the PyCapsule `mixprec._core._C_API` and a plugin calls through it.
 * NOTE: bump MP_C_API_VERSION whenever this struct, mp_backend or any struct they use
 * changes; a plugin built against another version refuses to register. */
#define MP_C_API_VERSION 18
#define MP_C_API_CAPSULE "mixprec._core._C_API"
typedef struct mp_c_api {
    int version;          /* MP_C_API_VERSION of the core */
    size_t backend_size;  /* sizeof(mp_backend) of the core */
    mp_status (*backend_register)(int device_type, const mp_backend *be, int device_count);
    mp_status (*error_set_at)(const char *file, int line, mp_status st, const char *fmt, ...);
    const char *(*error_message)(void);
    const char *(*dtype_name)(mp_dtype dt);
    const mp_backend *backend_cpu; /* the CPU's table: a plugin's host fallbacks (cuda/linalg_host.cpp) */
} mp_c_api;
extern const mp_c_api mp_c_api_table;

/* -------------------------------------------------------------- parallelism */

/* Runs fn(ctx, begin, end) over [0, n) in chunks of at least `grain`, on the calling
 * thread plus the pool's workers. Re-entrant: a call made while the pool is busy (another
 * Python thread, a nested call) runs serially on the caller. */
typedef void (*mp_range_fn)(void *ctx, int64_t begin, int64_t end);
void mp_parallel_for(int64_t n, int64_t grain, mp_range_fn fn, void *ctx);
int mp_num_threads(void);
void mp_set_num_threads(int n);
/* How long (us) pool workers and a waiting caller poll before sleeping (parallel.c; 0 off,
 * the default; MIXPREC_POOL_SPIN_US at start). us >= 0 sets it; returns the previous. */
int mp_pool_spin_us(int us);

/* --------------------------------------------------------------------- ops */

typedef enum mp_op {
#define MP_OP(NAME, tfname, pyname, nin, amp, family, kind) MP_OP_##NAME,
#include "ops.def"
#undef MP_OP
    MP_OP_COUNT
} mp_op;

/* Attributes of one op call; which fields mean what is documented per op in ops.def. */
typedef struct mp_attrs {
    int64_t ints[MP_MAX_DIMS]; /* axes, perm, shape, slice begin ... */
    int64_t ints2[MP_MAX_DIMS];/* slice end ... */
    int64_t ints3[MP_MAX_DIMS];/* slice step ... */
    int64_t ints4[MP_MAX_DIMS];/* slice-grad input shape ... */
    int n_ints;
    int64_t i0, i1, i2;        /* flags / scalars (keepdims, transpose_a, axis ...) */
    double f0, f1;             /* float scalars (fill value, on/off values ...) */
    int dtype;                 /* target dtype (cast, fill, one_hot ...) */
    mp_device device;          /* where ops without tensor inputs create their output */
} mp_attrs;

typedef enum mp_amp_class { MP_AMP_ALLOW, MP_AMP_INFER, MP_AMP_DENY, MP_AMP_CLEAR, MP_AMP_NONE } mp_amp_class;

typedef struct mp_op_info {
    const char *name;   /* TensorFlow's op name, e.g. "AddV2", "MatMul" */
    int n_inputs;       /* -1: variadic */
    mp_amp_class amp;
} mp_op_info;

const mp_op_info *mp_op_get_info(mp_op op);

/* Run one op: validates, allocates the output, calls the backend and, when a tape is
 * recording and an input is watched, records the call. `out` gets a new reference. */
mp_status mp_op_run(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at, mp_tensor **out);
/* mp_op_run without the recording (tapes, graphs): validate, allocate, dispatch. Graph
 * replay calls it; eager execution is it plus the recording. */
mp_status mp_op_exec(mp_op op, int n_in, mp_tensor *const *in, const mp_attrs *at, mp_tensor **out);

/* Conveniences over mp_op_run used by the core itself (backward rules, optimizers). */
mp_status mp_cast(mp_tensor *x, mp_dtype dt, mp_tensor **out);
mp_status mp_binary(mp_op op, mp_tensor *a, mp_tensor *b, mp_tensor **out);
mp_status mp_unary(mp_op op, mp_tensor *x, mp_tensor **out);
mp_status mp_reshape(mp_tensor *x, int ndim, const int64_t *shape, mp_tensor **out);
mp_status mp_full(mp_dtype dt, int ndim, const int64_t *shape, double value, mp_device dev,
                  mp_tensor **out);
mp_status mp_scalar(mp_dtype dt, double value, mp_device dev, mp_tensor **out);
mp_status mp_reduce_axes(mp_op op, mp_tensor *x, int naxes, const int64_t *axes, int keepdims,
                         mp_tensor **out);
mp_status mp_copy_to_device(mp_tensor *x, mp_device dev, mp_tensor **out);

/* check_numerics: while enabled (process-wide), every op that produces a floating tensor
 * with an inf or NaN fails with MP_ERR_NONFINITE naming the op, the scope, dtype and shape.
 * Returns the previous setting. */
int mp_check_numerics_set(int on);
/* The name (e.g. a Keras layer's) reported by check_numerics errors on this thread; the
 * string is copied. NULL clears it. Returns nothing: callers keep their own previous value. */
void mp_scope_set(const char *name);
const char *mp_scope_get(void);

/* Broadcast two shapes (NumPy rules). */
mp_status mp_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout,
                              int64_t *out);

/* Read element i of a host tensor as double (any dtype). */
double mp_tensor_get_f64(const mp_tensor *t, int64_t i);

/* ---------------------------------------------------------------- variables */

/* A mutable, refcounted slot holding a tensor (tf.Variable). Reads return the current
 * value (a new tensor header; copy-on-write keeps earlier reads unchanged); inside an
 * autocast scope a floating variable marked `autocast` reads as the scope's dtype, and the
 * cast copy is cached until the next assignment. */
typedef struct mp_variable {
    int64_t refcount;      /* atomic */
    int64_t id;            /* the tape keys this variable's gradient by it */
    mp_tensor *value;      /* current value, the variable's true dtype */
    mp_tensor *cast_cache; /* value cast to cast_cache->dtype, valid iff cache_version == version */
    int64_t version;       /* bumped by every assignment */
    int64_t cache_version;
    int trainable;
    int autocast;          /* reads follow the thread's autocast dtype (layer variables) */
} mp_variable;

mp_status mp_variable_new(mp_tensor *init, int trainable, mp_variable **out); /* copies init */
void mp_variable_incref(mp_variable *v);
void mp_variable_decref(mp_variable *v);
/* Read the value (autocast applies); records the read on recording tapes. */
mp_status mp_variable_read(mp_variable *v, mp_tensor **out);
/* A new header on the true-dtype value, no autocast, not taped; a recording graph records
 * it (a read at this point of the function), so a replay reads the value then current. */
mp_status mp_variable_read_raw(mp_variable *v, mp_tensor **out);
/* Read the true-dtype value without autocast and without tape recording. */
mp_tensor *mp_variable_peek(mp_variable *v); /* borrowed */
/* Replace the value: same shape; x must have the variable's dtype, or (autocast variables,
 * inside an autocast scope) the scope's dtype, which is cast to the variable's. */
mp_status mp_variable_assign(mp_variable *v, mp_tensor *x);
/* May a value of dtype dt be assigned to v right now (see mp_variable_assign)? */
int mp_variable_accepts(const mp_variable *v, mp_dtype dt);
/* Writable data of the value, on its device (copy-on-write if shared); bumps the version. */
mp_status mp_variable_data_for_write(mp_variable *v, void **data);
/* Moves the value to `dev` (an explicit copy; earlier reads keep theirs). No-op if there. */
mp_status mp_variable_move_to(mp_variable *v, mp_device dev);
/* The thread's autocast dtype (-1: none); returns the previous one. */
int mp_autocast_set(int dtype);
int mp_autocast_get(void);

/* --------------------------------------------------------------------- tape */

typedef struct mp_tape mp_tape;

mp_status mp_tape_new(int persistent, int watch_accessed_variables, mp_tape **out);
void mp_tape_free(mp_tape *t);
/* Push/pop on this thread's stack of recording tapes. */
mp_status mp_tape_push(mp_tape *t);
mp_status mp_tape_pop(mp_tape *t);
void mp_tape_set_recording(mp_tape *t, int on);
int mp_tape_is_recording(const mp_tape *t);
mp_status mp_tape_watch_tensor(mp_tape *t, const mp_tensor *x);
mp_status mp_tape_watch_variable(mp_tape *t, mp_variable *v);
/* Variables this tape watched (borrowed pointers valid while the tape lives). */
int mp_tape_watched_variables(const mp_tape *t, mp_variable ***vars);
/* Gradients of sum(targets[i] * seeds[i]) (seed NULL = ones) with respect to the ids in
 * src_ids. grads[j] is NULL when source j is not connected. A non-persistent tape frees
 * its record afterwards. */
mp_status mp_tape_gradient(mp_tape *t, int n_targets, mp_tensor *const *targets, mp_tensor *const *seeds,
                           int n_src, const int64_t *src_ids, mp_tensor **grads);
/* Called by variable reads: record that `out` was read from `v` (IDENTITY or CAST). */
mp_status mp_tape_record_read(mp_variable *v, mp_tensor *value, mp_tensor *out);
/* A custom backward (tf.custom_gradient): dx[k] (new references or NULL) for the inputs
 * with need[k], given dys[j] = dL/d(output j) (NULL: no gradient reached that output);
 * ctx is what mp_tape_record_custom was given. */
typedef mp_status (*mp_custom_backward_fn)(void *ctx, int n_out, mp_tensor *const *dys, int n_in,
                                           mp_tensor *const *inputs, const int *need, mp_tensor **dx);
typedef void (*mp_custom_ref_fn)(void *ctx, int delta); /* +1 / -1 on ctx's owner */
/* The tapes entered so far on this thread stop recording until mp_tape_resume_outer(the
 * returned value); tapes entered after still record (tf.recompute_grad's forward). */
int mp_tape_suspend_outer(void);
void mp_tape_resume_outer(int prev);
/* Record outs = f(in) with one custom backward on every recording tape that watches one
 * of in_ids (in_ids[k] is in[k]->id, or a variable's id for its value). The outs must be
 * fresh floating tensors no tape recorded. */
mp_status mp_tape_record_custom(int n_in, mp_tensor *const *in, const int64_t *in_ids, int n_out,
                                mp_tensor *const *outs, mp_custom_backward_fn fn, mp_custom_ref_fn ref,
                                void *ctx);

/* ------------------------------------------------------- optimizers, loss scale */

/* Dynamic or fixed loss scale; its state lives in two variables (so checkpoints and the
 * GPU see it): scale (float32 scalar) and good_steps (int64 scalar), on one device. A step
 * reads and updates them on the device of the variables it trains (they move there). */
typedef struct mp_loss_scale {
    int64_t refcount;
    int dynamic;
    mp_variable *scale;
    mp_variable *good_steps;
    mp_loss_scale_params params;
} mp_loss_scale;

/* A loss scale whose state starts on `dev`. */
mp_status mp_loss_scale_new(int dynamic, double initial, int64_t growth_interval, double multiplier,
                            double min_scale, mp_device dev, mp_loss_scale **out);
void mp_loss_scale_decref(mp_loss_scale *ls);
void mp_loss_scale_incref(mp_loss_scale *ls);
/* The current scale / good-step count, read to the host (this synchronises with a GPU). */
mp_status mp_loss_scale_value(const mp_loss_scale *ls, double *value);
mp_status mp_loss_scale_good_steps(const mp_loss_scale *ls, int64_t *good_steps);
/* The state machine, on the state's device: finite -> maybe grow; not finite -> shrink
 * (floored at min_scale). A fixed scale ignores it. */
mp_status mp_loss_scale_update(mp_loss_scale *ls, int finite);
/* Are all elements of all (non-NULL) tensors finite? (Reads the answer to the host.) */
mp_status mp_all_finite(int n, mp_tensor *const *ts, int *finite);

/* One fused step over n variables, issued to their device without waiting for it:
 * (optionally) check every gradient for inf/NaN into a device flag; apply, unless the flag
 * is set, each gradient times grad_scale (and times 1 / the loss scale when `unscale`) with
 * the update rule, refreshing the variables' low-precision cast copies; update a dynamic
 * loss scale from the flag; increment `iterations` (an int64 scalar variable) either way.
 * slots: n * slots_per_var variables (kind-specific order, see optim.c) of
 * mp_optim_slot_dtype(their variable's dtype).
 * Gradients, variables and slots must share one device; iterations and the loss-scale state
 * are moved to it. When check_finite and found_inf is not NULL, *found_inf receives a new
 * reference to the bool scalar flag (true = the step was skipped; reading it synchronises);
 * otherwise *found_inf is set to NULL.
 * state: the rule's per-optimizer scalar (Nadam: u_product, a float32 () variable; NULL
 * for the other rules). no_decay: (n) nonzero where a variable is excluded from weight
 * decay, or NULL. */
mp_status mp_optimizer_apply(mp_optim_kind kind, const mp_optim_hparams *hp, int n, mp_variable *const *vars,
                             mp_tensor *const *grads, mp_variable *const *slots, mp_variable *iterations,
                             mp_variable *state, const uint8_t *no_decay, mp_loss_scale *ls, int check_finite,
                             double grad_scale, int unscale, mp_tensor **found_inf);
int mp_optimizer_slots_per_var(mp_optim_kind kind, const mp_optim_hparams *hp);
/* The dtype of a variable's optimizer slots: float64 for float64 variables (as TensorFlow),
 * float32 for the rest (16-bit variables keep float32 moments, unlike TensorFlow). */
static inline mp_dtype mp_optim_slot_dtype(mp_dtype var_dtype) { return var_dtype == MP_F64 ? MP_F64 : MP_F32; }

/* The orthonormal factor of a (m, n) row-major float64 host matrix (m >= n), in place: Q of
 * its reduced QR decomposition with each column multiplied by the sign of R's diagonal
 * (keras.initializers.Orthogonal; csrc/linalg_qr.c, LAPACK from the vendored OpenBLAS). */
mp_status mp_linalg_qr_q(double *a, int64_t m, int64_t n);

#ifdef __cplusplus
}
#endif
#endif /* MIXPREC_H */
