"""THE tolerance table: every numeric comparison of mixprec's tests, of its users' tests
(``mixprec.testing.assert_allclose_dtype``) and of CPU-vs-GPU parity takes its (rtol, atol)
from here, so a precision decision is made once and can be read in one place.

``TOLERANCE[(dtype_name, kind)] -> (rtol, atol)``. The reference is NumPy computed in
float64 and rounded once to the dtype (``round_to``), or, where the op is defined by a
lower-precision computation (16-bit matmul accumulates in float32), that computation.
An entry of (0, 0) means bit-exact.

Kinds:
  exact           casts, copies, layout ops, comparisons, + - * / on 16-bit types
  elementwise     arithmetic computed in float32 (16-bit) and rounded once: <= 1 ulp
  transcendental  libm functions (exp, log, tanh, erf ...): a few ulp of float32 plus
                  one rounding to the dtype
  reduction       sums/means/products of up to ~1e4 terms of one sign
  matmul          K <= 256 products, random-sign data: relative to the result and to
                  the size of the terms (atol)
  convolution     convolutions and their backprops (up to a few hundred products per
                  output, random-sign data; 16-bit: float32 accumulation, one rounding):
                  relative to the result and to the size of the terms, as matmul
  softmax         softmax / log_softmax rows
  decomposition   factorizations, solves and their compositions (tf.linalg: cholesky, qr,
                  eigh, svd, lstsq, expm ...) of well-conditioned matrices (cond <~ 100), n <= 8:
                  LAPACK in float64, rounded once, against NumPy's float64; float32 results that
                  go through float32 ops (lstsq's normal equations, expm) lose a few more digits
  random_moment   sample moments of random ops (absolute, checked with n >= 2**16)
  finite_difference  a tape gradient against central differences of the same function
                  (float64, step 1e-6; float32: a float64 function rounded through float32
                  on the way, step 1e-2)
  backprop        a short chain of ops (matmul, relu, sigmoid) differentiated in the dtype
                  against the same chain differentiated in float64
  optimizer       six optimizer steps against a float64 NumPy reimplementation of
                  TensorFlow's kernels (float32 variables: float32 arithmetic throughout)
"""

import ml_dtypes
import numpy as np

# unit roundoff per dtype: half an ulp at 1.0
_EPS = {
    "float16": 2.0**-11,
    "bfloat16": 2.0**-8,
    "float32": 2.0**-24,
    "float64": 2.0**-53,
}
# smallest positive subnormal: the atol floor where results underflow
_TINY = {
    "float16": 2.0**-24,
    "bfloat16": 2.0**-133,
    "float32": 2.0**-149,
    "float64": 5e-324,
}


def _row(dt, ulps, atol_ulps=0.0, atol_abs=0.0):
    u = 2 * _EPS[dt]  # one ulp at 1.0
    return (ulps * u, max(atol_ulps * u, atol_abs, 2 * _TINY[dt]))


TOLERANCE = {}
for _dt in ("float16", "bfloat16", "float32", "float64"):
    TOLERANCE[(_dt, "exact")] = (0.0, 0.0)
# 16-bit: computed in float32 (correctly rounded for + - * /) and rounded once: the
# float64 reference rounded once differs by at most one ulp.
TOLERANCE[("float16", "elementwise")] = _row("float16", 1)
TOLERANCE[("bfloat16", "elementwise")] = _row("bfloat16", 1)
TOLERANCE[("float32", "elementwise")] = _row("float32", 2)
TOLERANCE[("float64", "elementwise")] = _row("float64", 4)
# glibc's float32 libm is within ~2 ulp; 16-bit adds its final rounding. Results near
# zero (sin near pi, expm1/log1p cancellation avoided by the tests) need a small atol.
TOLERANCE[("float16", "transcendental")] = _row("float16", 2, atol_abs=2.0**-20)
TOLERANCE[("bfloat16", "transcendental")] = _row("bfloat16", 2, atol_abs=2.0**-20)
TOLERANCE[("float32", "transcendental")] = _row("float32", 8, atol_abs=1e-7)
# float64 atol: the fused gradients cancel O(1) terms near their zeros
TOLERANCE[("float64", "transcendental")] = _row("float64", 64, atol_abs=1e-13)
# Sums accumulate in double (float32 lanes of 32 terms for float32 input) and round once.
TOLERANCE[("float16", "reduction")] = _row("float16", 2)
TOLERANCE[("bfloat16", "reduction")] = _row("bfloat16", 2)
TOLERANCE[("float32", "reduction")] = (2e-6, 1e-6)
TOLERANCE[("float64", "reduction")] = (1e-13, 1e-13)
# 16-bit matmul: float32 accumulation in another order than NumPy's, then one rounding.
TOLERANCE[("float16", "matmul")] = (2.0**-9, 2.0**-9)
TOLERANCE[("bfloat16", "matmul")] = (2.0**-6, 2.0**-6)
TOLERANCE[("float32", "matmul")] = (1e-5, 1e-5)
TOLERANCE[("float64", "matmul")] = (1e-12, 1e-12)
# softmax: float32 math (expf, one normalisation), output rounded once
for _dt in ("float16", "bfloat16", "float32", "float64"):
    TOLERANCE[(_dt, "convolution")] = TOLERANCE[(_dt, "matmul")]
TOLERANCE[("float16", "softmax")] = _row("float16", 2, atol_abs=2.0**-20)
TOLERANCE[("bfloat16", "softmax")] = _row("bfloat16", 2, atol_abs=2.0**-20)
TOLERANCE[("float32", "softmax")] = (2e-6, 1e-7)
TOLERANCE[("float64", "softmax")] = (1e-13, 1e-15)
# tf.linalg decompositions: conditioning times the dtype's rounding
TOLERANCE[("float16", "decomposition")] = (1e-2, 1e-2)
TOLERANCE[("bfloat16", "decomposition")] = (5e-2, 5e-2)
TOLERANCE[("float32", "decomposition")] = (1e-4, 1e-5)
TOLERANCE[("float64", "decomposition")] = (1e-9, 1e-10)
# sample moments of n >= 2**16 draws: ~5 standard errors, plus the dtype's rounding
TOLERANCE[("float16", "random_moment")] = (0.0, 0.03)
TOLERANCE[("bfloat16", "random_moment")] = (0.0, 0.04)
TOLERANCE[("float32", "random_moment")] = (0.0, 0.025)
TOLERANCE[("float64", "random_moment")] = (0.0, 0.025)

# gradients (tests/test_tape.py): truncation error O(h^2) and rounding O(eps/h)
TOLERANCE[("float16", "finite_difference")] = (1e-2, 1e-2)
TOLERANCE[("bfloat16", "finite_difference")] = (5e-2, 5e-2)
TOLERANCE[("float32", "finite_difference")] = (1e-5, 1e-5)
TOLERANCE[("float64", "finite_difference")] = (1e-6, 1e-7)
# every op of the chain rounds to the dtype, forward and backward
TOLERANCE[("float16", "backprop")] = (1e-2, 1e-2)
TOLERANCE[("bfloat16", "backprop")] = (5e-2, 5e-2)
TOLERANCE[("float32", "backprop")] = (1e-6, 1e-6)
TOLERANCE[("float64", "backprop")] = (1e-12, 1e-12)
# optimizers (tests/keras/optimizers): float32 slots and weights drift by a few ulp per step
TOLERANCE[("float16", "optimizer")] = (2.0**-9, 2.0**-11)
TOLERANCE[("bfloat16", "optimizer")] = (2.0**-6, 2.0**-8)
TOLERANCE[("float32", "optimizer")] = (2e-5, 1e-6)
TOLERANCE[("float64", "optimizer")] = (1e-12, 1e-13)

# replicas (tests/distribute): N replicas x B/N examples against 1 replica x B after a step:
# the gradient is summed as N partial sums instead of one (a few ulp of the gradient), which
# the update then carries into the weights; Adam's first step divides by sqrt(v) ~ |g|,
# which keeps that relative
TOLERANCE[("float16", "replicas")] = (2.0**-9, 2.0**-11)
TOLERANCE[("bfloat16", "replicas")] = (2.0**-6, 2.0**-8)
TOLERANCE[("float32", "replicas")] = (1e-5, 1e-6)
TOLERANCE[("float64", "replicas")] = (1e-12, 1e-13)

KINDS = ("exact", "elementwise", "transcendental", "reduction", "matmul", "convolution", "softmax",
         "decomposition", "random_moment", "finite_difference", "backprop", "optimizer", "replicas")
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")

NP_DTYPE = {
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "int8": np.dtype(np.int8),
    "uint8": np.dtype(np.uint8),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "bool": np.dtype(np.bool_),
}


def dtype_name(dtype):
    """'float16' from a mixprec DType, a NumPy dtype/type or a name."""
    name = getattr(dtype, "name", None)
    if isinstance(name, str) and not isinstance(dtype, np.dtype):
        return name
    if isinstance(dtype, str):
        return dtype
    return np.dtype(dtype).name


def tolerance(dtype, kind):
    """(rtol, atol) for ``dtype`` and ``kind``; integer and bool dtypes are exact."""
    name = dtype_name(dtype)
    if kind not in KINDS:
        raise KeyError("unknown tolerance kind %r (one of %s)" % (kind, ", ".join(KINDS)))
    if name not in FLOAT_DTYPES:
        return (0.0, 0.0)
    return TOLERANCE[(name, kind)]


def round_to(x, dtype):
    """A float64 reference rounded once to ``dtype`` (NumPy / ml_dtypes rounding)."""
    return np.asarray(x).astype(NP_DTYPE[dtype_name(dtype)])


def _as_f64(a):
    if hasattr(a, "numpy") and not isinstance(a, np.ndarray):
        a = a.numpy()
    a = np.asarray(a)
    if a.dtype == np.bool_ or a.dtype.kind in "iu":
        return a
    return a.astype(np.float64)


def assert_close(actual, expected, dtype, kind, err_msg=""):
    """Asserts |actual - expected| <= atol + rtol * |expected| elementwise with the table's
    tolerance, NaN where expected is NaN, and identical infinities. Shapes must match."""
    rtol, atol = tolerance(dtype, kind)
    a = _as_f64(actual)
    e = _as_f64(expected)
    assert a.shape == e.shape, "shape %s != expected %s %s" % (a.shape, e.shape, err_msg)
    if a.dtype.kind in "biu" or e.dtype.kind in "biu" or (rtol == 0 and atol == 0):
        np.testing.assert_array_equal(a, e, err_msg=err_msg)
        return
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=True,
                               err_msg="%s (dtype %s, kind %s)" % (err_msg, dtype_name(dtype), kind))


def assert_bits_equal(actual, expected, err_msg=""):
    """Bit-for-bit equality of two arrays of the same itemsize (NaN payloads included)."""
    a = np.ascontiguousarray(np.asarray(actual))
    e = np.ascontiguousarray(np.asarray(expected))
    assert a.shape == e.shape, "shape %s != %s %s" % (a.shape, e.shape, err_msg)
    assert a.dtype.itemsize == e.dtype.itemsize
    view = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    ab, eb = a.view(view).ravel(), e.view(view).ravel()
    bad = np.flatnonzero(ab != eb)
    if bad.size:
        i = bad[:8]
        raise AssertionError(
            "%d of %d elements differ in their bits %s; first at %s: got %s, expected %s" % (
                bad.size, ab.size, err_msg, i.tolist(), [hex(v) for v in ab[i]],
                [hex(v) for v in eb[i]]))


# ------------------------------------------------------------------ CPU vs GPU
# The backend-parity suite (tests/test_cuda_parity.py) compares the GPU's result with the
# CPU backend's, not with NumPy. Two backends each within TOLERANCE of the exact result are
# within twice that of each other; "exact" stays exact: the CUDA kernels repeat the CPU's
# arithmetic operation for operation (scalar_cast.h conversions, IEEE + - * / and sqrt, no
# FMA contraction), so casts, copies, layout ops, comparisons and those operations agree
# bit for bit. Kinds that exist only here:
#   matmul_tf32     float32 products on TF32 tensor cores (inputs rounded to 10 mantissa
#                   bits, float32 accumulation): relative to the result and the terms' size
#   random_normal   Box-Muller draws: the same counter-based bits, through CUDA's logf,
#                   sqrtf, sinf, cosf instead of glibc's (a few float32 ulp)
GPU_TOLERANCE = {key: (2 * rtol, 2 * atol) for key, (rtol, atol) in TOLERANCE.items()}
for _dt in FLOAT_DTYPES:
    GPU_TOLERANCE[(_dt, "exact")] = (0.0, 0.0)
    GPU_TOLERANCE[(_dt, "random_normal")] = GPU_TOLERANCE[(_dt, "transcendental")]
GPU_TOLERANCE[("float32", "matmul_tf32")] = (2.0**-8, 2.0**-8)
GPU_KINDS = KINDS + ("matmul_tf32", "random_normal")


def gpu_tolerance(dtype, kind):
    """(rtol, atol) between the GPU's and the CPU's results; integer and bool are exact."""
    name = dtype_name(dtype)
    if kind not in GPU_KINDS:
        raise KeyError("unknown CPU-vs-GPU tolerance kind %r (one of %s)" % (kind, ", ".join(GPU_KINDS)))
    if name not in FLOAT_DTYPES:
        return (0.0, 0.0)
    return GPU_TOLERANCE.get((name, kind), (0.0, 0.0))


def assert_gpu_close(gpu, cpu, dtype, kind, err_msg=""):
    """The GPU's result against the CPU backend's under GPU_TOLERANCE; NaN where the CPU has
    NaN, identical infinities, bit equality for the exact kind (NaN payloads aside)."""
    rtol, atol = gpu_tolerance(dtype, kind)
    a, e = _as_f64(gpu), _as_f64(cpu)
    assert a.shape == e.shape, "shape %s != CPU's %s %s" % (a.shape, e.shape, err_msg)
    if a.dtype.kind in "biu" or e.dtype.kind in "biu" or (rtol == 0 and atol == 0):
        np.testing.assert_array_equal(a, e, err_msg="GPU vs CPU %s" % err_msg)
        return
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=True,
                               err_msg="GPU vs CPU %s (dtype %s, kind %s)" % (err_msg, dtype_name(dtype), kind))
