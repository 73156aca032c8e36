"""Every op of csrc/ops.def against NumPy: one parametrised row per elementwise op (NumPy
in float64, rounded once to the dtype, tolerance from tolerances.py), dedicated tests for
the others, and a tripwire that fails when an op is added without a test."""

import itertools
import math
import re
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import mixprec as tf
from mixprec import _core
from tolerances import NP_DTYPE, assert_bits_equal, assert_close, round_to

FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("int8", "uint8", "int32", "int64")
BF16 = np.dtype(ml_dtypes.bfloat16)
SQRT2 = math.sqrt(2.0)
_erf = np.vectorize(math.erf, otypes=[np.float64])

SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan])


def np_of(dt):
    return NP_DTYPE[dt]


# ------------------------------------------------------------------ input domains

def uniform(lo, hi, specials=True):
    def gen(rng, n, nin):
        out = []
        for _ in range(nin):
            x = rng.uniform(lo, hi, n)
            if specials:
                x = np.concatenate([x, SPECIALS, [lo, hi, 1.0, -1.0, 0.5, 2.0]])
            out.append(x)
        if specials and nin == 2:  # every special against every special
            a = np.repeat(SPECIALS, len(SPECIALS))
            b = np.tile(SPECIALS, len(SPECIALS))
            out = [np.concatenate([out[0], a]), np.concatenate([out[1], b])]
        return out
    return gen


def nonzero(lo, hi, specials=True):
    base = uniform(lo, hi, specials)

    def gen(rng, n, nin):
        xs = base(rng, n, nin)
        xs[-1] = np.where(xs[-1] == 0, 1.5, xs[-1])
        if specials:
            xs[-1][-5:] = [0.0, -0.0, np.inf, -np.inf, np.nan]
        return xs
    return gen


def int_domain(lo=None, hi=None, nonzero_last=False, nonneg_last_max=None):
    def gen(rng, n, nin, dt):
        info = np.iinfo(dt)
        a, b = (info.min, info.max) if lo is None else (max(lo, info.min), min(hi, info.max))
        xs = [rng.integers(a, b, n, endpoint=True).astype(dt) for _ in range(nin)]
        edge = np.array([info.min, info.max, 0, 1, info.max - 1], dtype=np.int64)
        edge = edge[(edge >= a) & (edge <= b)].astype(dt)
        xs = [np.concatenate([x, edge]) for x in xs]
        if nonneg_last_max is not None:
            xs[-1] = rng.integers(0, nonneg_last_max, len(xs[-1]), endpoint=True).astype(dt)
        if nonzero_last:
            xs[-1] = np.where(xs[-1] == 0, 3, xs[-1]).astype(dt)
            xs[-1] = np.where(xs[-1] == -1, 5, xs[-1]).astype(dt)  # INT_MIN // -1: own test
        return xs
    return gen


# ------------------------------------------------------------------ references (float64)

def floordiv_ref(dt):
    def ref(a, b):
        if dt == "float64":
            return np.floor(a / b)
        # computed in float32 by the kernel for float32 and the 16-bit types (as TensorFlow)
        return np.floor(a.astype(np.float32) / b.astype(np.float32)).astype(np.float64)
    return ref


def floormod_ref(a, b):
    r = np.fmod(a, b)
    adjust = (r != 0) & ((r < 0) != (b < 0))
    return np.where(adjust, r + b, r)


def gelu_ref(x):
    return 0.5 * x * (1.0 + _erf(x / SQRT2))


def gelu_tanh_ref(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def gelu_grad_ref(x, dy):
    return dy * (0.5 * (1 + _erf(x / SQRT2)) + x / math.sqrt(2 * math.pi) * np.exp(-0.5 * x * x))


def gelu_tanh_grad_ref(x, dy):
    u = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
    t = np.tanh(u)
    du = math.sqrt(2 / math.pi) * (1 + 3 * 0.044715 * x * x)
    return dy * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du)


def sigmoid_ref(x):
    return 1.0 / (1.0 + np.exp(-x))


SELU_SCALE = 1.0507009873554804934193349852946
SELU_ALPHA = 1.6732632423543772848170429916717


def _lgamma(v):
    if math.isnan(v):
        return v
    if math.isinf(v) or (v <= 0 and v == math.floor(v)):
        return math.inf
    return math.lgamma(v)


def truncatediv_ref(dt):
    def ref(a, b):
        if dt == "float64":
            return np.trunc(a / b)
        return np.trunc(a.astype(np.float32) / b.astype(np.float32)).astype(np.float64)
    return ref


def int_truncdiv(a, b):
    a, b = a.astype(object), b.astype(object)
    q = np.array([abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1) for x, y in zip(a, b)], dtype=object)
    return np.array([int(v) for v in q], dtype=np.int64) if len(q) else q


def int_truncmod(a, b):
    a64, b64 = a.astype(object), b.astype(object)
    q = int_truncdiv(a, b).astype(object)
    return np.array([int(x - y * z) for x, y, z in zip(a64, q, b64)], dtype=np.int64)


class Row:
    """One elementwise op: how to call it, its float64 reference, its input domain, the
    dtypes it supports and the tolerance kind."""

    def __init__(self, name, ref, domain, kind, nin=1, floats=FLOATS, ints=(), int_domain_=None,
                 call=None, bool_out=False, int_ref=None, ref_by_dtype=None):
        self.name, self.ref, self.domain, self.kind, self.nin = name, ref, domain, kind, nin
        self.floats, self.ints, self.int_domain = floats, ints, int_domain_ or int_domain()
        self.call = call or getattr(_core, name)
        self.bool_out, self.int_ref, self.ref_by_dtype = bool_out, int_ref, ref_by_dtype

    def __repr__(self):
        return self.name


ELEMENTWISE = [
    # unary
    Row("neg", np.negative, uniform(-100, 100), "exact", ints=INTS),
    Row("abs", np.abs, uniform(-100, 100), "exact", ints=INTS),
    Row("exp", np.exp, uniform(-12, 12), "transcendental"),
    Row("log", np.log, uniform(-1, 100), "transcendental"),
    Row("sqrt", np.sqrt, uniform(-1, 1000), "elementwise"),
    Row("square", np.square, uniform(-200, 200), "elementwise", ints=INTS),
    Row("relu", lambda x: np.maximum(x, 0), uniform(-10, 10), "exact", ints=INTS),
    Row("sigmoid", sigmoid_ref, uniform(-20, 20), "transcendental"),
    Row("tanh", np.tanh, uniform(-6, 6), "transcendental"),
    Row("rsqrt", lambda x: 1 / np.sqrt(x), uniform(-1, 1000), "elementwise"),
    Row("reciprocal", lambda x: 1 / x, nonzero(-100, 100), "elementwise"),
    Row("floor", np.floor, uniform(-100, 100), "exact"),
    Row("ceil", np.ceil, uniform(-100, 100), "exact"),
    Row("round", np.rint, lambda rng, n, nin: [np.concatenate(
        [rng.uniform(-50, 50, n), np.arange(-10.5, 11), SPECIALS])], "exact"),
    Row("sign", np.sign, uniform(-10, 10), "exact", ints=INTS),
    Row("log1p", np.log1p, uniform(-1.5, 100), "transcendental"),
    Row("expm1", np.expm1, uniform(-12, 12), "transcendental"),
    Row("elu", lambda x: np.where(x > 0, x, 1.0 * np.expm1(x)), uniform(-10, 10), "transcendental",
        call=lambda x: tf.nn.elu(x)),
    Row("softplus", lambda x: np.logaddexp(0, x), uniform(-20, 20), "transcendental"),
    Row("gelu", gelu_ref, lambda rng, n, nin: [np.concatenate([rng.uniform(-6, 6, n), [0, -0.0, np.nan]])],
        "transcendental", call=lambda x: tf.nn.gelu(x)),
    Row("sin", np.sin, uniform(-10, 10), "transcendental"),
    Row("cos", np.cos, uniform(-10, 10), "transcendental"),
    Row("is_finite", np.isfinite, uniform(-10, 10), "exact", bool_out=True),
    Row("is_nan", np.isnan, uniform(-10, 10), "exact", bool_out=True),
    Row("is_inf", np.isinf, uniform(-10, 10), "exact", bool_out=True),
    Row("leaky_relu", lambda x: np.where(x > 0, x, 0.2 * x), uniform(-10, 10), "elementwise",
        call=lambda x: tf.nn.leaky_relu(x)),
    # binary
    Row("add", np.add, uniform(-100, 100), "elementwise", 2, ints=INTS),
    Row("subtract", np.subtract, uniform(-100, 100), "elementwise", 2, ints=INTS),
    Row("multiply", np.multiply, uniform(-100, 100), "elementwise", 2, ints=INTS),
    Row("realdiv", np.divide, nonzero(-100, 100), "elementwise", 2),
    Row("floordiv", None, nonzero(-100, 100), "exact", 2, ints=INTS,
        int_domain_=int_domain(nonzero_last=True), ref_by_dtype=floordiv_ref, int_ref=np.floor_divide),
    Row("floormod", floormod_ref, nonzero(-100, 100), "elementwise", 2, ints=INTS,
        int_domain_=int_domain(nonzero_last=True), int_ref=np.mod),
    Row("pow", np.power, lambda rng, n, nin: [
        np.concatenate([rng.uniform(0.25, 4, n), SPECIALS, [-2.0, -2.0, -0.5]]),
        np.concatenate([rng.uniform(-5, 5, n), SPECIALS, [3.0, 0.5, -3.0]])],
        "transcendental", 2, ints=INTS, int_domain_=int_domain(-6, 6, nonneg_last_max=9)),
    Row("maximum", np.maximum, uniform(-100, 100), "exact", 2, ints=INTS),
    Row("minimum", np.minimum, uniform(-100, 100), "exact", 2, ints=INTS),
    Row("squared_difference", lambda a, b: np.square(a - b), uniform(-100, 100), "elementwise", 2,
        ints=INTS),
    Row("equal", np.equal, uniform(-3, 3), "exact", 2, ints=INTS, bool_out=True),
    Row("not_equal", np.not_equal, uniform(-3, 3), "exact", 2, ints=INTS, bool_out=True),
    Row("less", np.less, uniform(-3, 3), "exact", 2, ints=INTS, bool_out=True),
    Row("less_equal", np.less_equal, uniform(-3, 3), "exact", 2, ints=INTS, bool_out=True),
    Row("greater", np.greater, uniform(-3, 3), "exact", 2, ints=INTS, bool_out=True),
    Row("greater_equal", np.greater_equal, uniform(-3, 3), "exact", 2, ints=INTS, bool_out=True),
    # fused activation gradients: (forward input or output, upstream gradient)
    Row("relu_grad", lambda x, dy: np.where(x > 0, dy, np.zeros_like(dy)), uniform(-10, 10, False), "exact", 2,
        ints=INTS),
    Row("sigmoid_grad", lambda y, dy: dy * y * (1 - y), uniform(0, 1, False), "transcendental", 2),
    Row("tanh_grad", lambda y, dy: dy * (1 - y * y), uniform(-1, 1, False), "transcendental", 2),
    Row("elu_grad", lambda y, dy: np.where(y > 0, dy, dy * (y + 1.0)), uniform(-1, 5, False),
        "transcendental", 2, call=lambda y, dy: _core.elu_grad(y, dy, alpha=1.0)),
    Row("softplus_grad", lambda x, dy: dy * sigmoid_ref(x), uniform(-10, 10, False),
        "transcendental", 2),
    Row("gelu_grad", gelu_grad_ref, uniform(-5, 5, False), "transcendental", 2),
    Row("gelu_tanh_grad", gelu_tanh_grad_ref, uniform(-5, 5, False), "transcendental", 2),
    Row("rsqrt_grad", lambda y, dy: dy * -0.5 * y**3, uniform(0.1, 4, False), "transcendental", 2),
    Row("sqrt_grad", lambda y, dy: dy * 0.5 / y, uniform(0.1, 4, False), "transcendental", 2),
    Row("leaky_relu_grad", lambda x, dy: np.where(x > 0, dy, 0.3 * dy), uniform(-10, 10, False),
        "elementwise", 2, call=lambda x, dy: _core.leaky_relu_grad(x, dy, alpha=0.3)),
    # tf.math's functions (csrc/special_math.h); erfinv, ndtri, digamma and the two-argument
    # special functions have no NumPy reference: test_special_functions_match_tensorflow
    Row("tan", np.tan, uniform(-1.5, 1.5), "transcendental"),
    Row("asin", np.arcsin, uniform(-1.2, 1.2), "transcendental"),
    Row("acos", np.arccos, uniform(-1.2, 1.2), "transcendental"),
    Row("atan", np.arctan, uniform(-100, 100), "transcendental"),
    Row("sinh", np.sinh, uniform(-10, 10), "transcendental"),
    Row("cosh", np.cosh, uniform(-10, 10), "transcendental"),
    Row("asinh", np.arcsinh, uniform(-100, 100), "transcendental"),
    Row("acosh", np.arccosh, uniform(0.5, 100), "transcendental"),
    Row("atanh", np.arctanh, uniform(-1.2, 1.2), "transcendental"),
    Row("erf", _erf, uniform(-5, 5), "transcendental"),
    Row("erfc", np.vectorize(math.erfc, otypes=[np.float64]), uniform(-5, 9), "transcendental"),
    Row("lgamma", lambda x: np.vectorize(_lgamma, otypes=[np.float64])(x), uniform(-10, 50), "transcendental"),
    Row("softsign", lambda x: x / (1 + np.abs(x)), uniform(-100, 100), "elementwise"),
    Row("selu", lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x)), uniform(-10, 10),
        "transcendental"),
    Row("atan2", np.arctan2, uniform(-100, 100), "transcendental", 2),
    Row("truncatediv", None, nonzero(-100, 100), "exact", 2, ints=INTS,
        int_domain_=int_domain(nonzero_last=True), ref_by_dtype=truncatediv_ref, int_ref=int_truncdiv),
    Row("truncatemod", np.fmod, nonzero(-100, 100), "elementwise", 2, ints=INTS,
        int_domain_=int_domain(nonzero_last=True), int_ref=int_truncmod),
    Row("xlogy", lambda a, b: np.where(a == 0, 0.0, a * np.log(b)), uniform(-1, 100), "transcendental", 2),
    Row("xdivy", lambda a, b: np.where(a == 0, 0.0, a / b), uniform(-100, 100), "elementwise", 2),
    Row("xlog1py", lambda a, b: np.where(a == 0, 0.0, a * np.log1p(b)), uniform(-1.5, 100), "transcendental", 2),
    Row("div_no_nan", lambda a, b: np.where(b == 0, 0.0, a / b), uniform(-100, 100), "elementwise", 2),
    Row("mul_no_nan", lambda a, b: np.where(b == 0, 0.0, a * b), uniform(-100, 100), "elementwise", 2),
    Row("nextafter", None, uniform(-100, 100), "exact", 2, floats=("float32", "float64"),
        ref_by_dtype=lambda dt: lambda a, b: np.nextafter(a.astype(dt), b.astype(dt)).astype(np.float64)),
]
BOOL_ROWS = [
    Row("logical_not", np.logical_not, None, "exact", floats=(), bool_out=True),
    Row("logical_and", np.logical_and, None, "exact", 2, floats=(), bool_out=True),
    Row("logical_or", np.logical_or, None, "exact", 2, floats=(), bool_out=True),
]
ROWS = {r.name: r for r in ELEMENTWISE + BOOL_ROWS}

CASES = [(r, dt) for r in ELEMENTWISE for dt in r.floats + r.ints]


@pytest.mark.parametrize("row,dt", CASES, ids=["%s-%s" % (r.name, dt) for r, dt in CASES])
def test_elementwise_matches_numpy(row, dt, rng):
    if dt in FLOATS:
        xs64 = row.domain(rng, 1000, row.nin)
        xs = [round_to(x, dt) for x in xs64]
        ref = row.ref_by_dtype(dt) if row.ref_by_dtype else row.ref
        with np.errstate(all="ignore"):
            expected64 = ref(*[x.astype(np.float64) for x in xs])
            expected = expected64 if row.bool_out else round_to(expected64, dt)
    else:
        xs = row.int_domain(rng, 1000, row.nin, dt)
        ref = row.int_ref or row.ref
        with np.errstate(all="ignore"):
            expected = ref(*xs)
        if not row.bool_out:
            expected = np.asarray(expected).astype(dt)
    got = row.call(*[tf.constant(x) for x in xs])
    out_dt = "bool" if row.bool_out else dt
    assert got.dtype.name == out_dt
    assert got.shape == expected.shape
    assert_close(got, expected, dt if not row.bool_out else "bool", row.kind,
                 err_msg="%s on %s" % (row.name, dt))


@pytest.mark.parametrize("dt", FLOATS)
def test_activation_parameters(dt, rng):
    """The attributes of the elementwise activations: gelu's tanh form, elu's and
    leaky_relu's alpha."""
    x = round_to(np.concatenate([rng.uniform(-6, 6, 500), [0.0, -0.0, np.nan]]), dt)
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        cases = [
            (tf.nn.gelu(tf.constant(x), approximate=True), gelu_tanh_ref(x64), "transcendental"),
            (_core.elu(tf.constant(x), alpha=0.5), np.where(x64 > 0, x64, 0.5 * np.expm1(x64)), "transcendental"),
            (tf.nn.leaky_relu(tf.constant(x), alpha=0.01), np.where(x64 > 0, x64, 0.01 * x64), "elementwise"),
            (tf.nn.relu6(tf.constant(x)), np.minimum(np.maximum(x64, 0), 6), "exact"),
            (tf.nn.silu(tf.constant(x)), x64 * sigmoid_ref(x64), "transcendental"),
        ]
    for got, expected, kind in cases:
        assert got.dtype.name == dt
        assert_close(got, round_to(expected, dt), dt, kind)


@pytest.mark.parametrize("row", BOOL_ROWS, ids=lambda r: r.name)
def test_logical_ops(row):
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    args = [a] if row.nin == 1 else [a, b]
    got = row.call(*[tf.constant(x) for x in args])
    assert got.dtype == tf.bool
    np.testing.assert_array_equal(got.numpy(), row.ref(*args))
    # operators
    ta, tb = tf.constant(a), tf.constant(b)
    np.testing.assert_array_equal((ta & tb).numpy(), a & b)
    np.testing.assert_array_equal((ta | tb).numpy(), a | b)
    np.testing.assert_array_equal((ta ^ tb).numpy(), a ^ b)
    np.testing.assert_array_equal((~ta).numpy(), ~a)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "realdiv"])
def test_16bit_arithmetic_is_bit_exact(op, dt, rng):
    """float16 + - * / equal NumPy's float16 (ml_dtypes' bfloat16) results bit for bit:
    widen to float32, compute, round once."""
    npdt = np_of(dt)
    a = (rng.standard_normal(5000) * 100).astype(npdt)
    b = (rng.standard_normal(5000) * 100).astype(npdt)
    specials = np.array([0, -0.0, np.inf, -np.inf, 65504, 1e-7, 2**-24], np.float32).astype(npdt)
    a = np.concatenate([a, np.repeat(specials, len(specials))])
    b = np.concatenate([b, np.tile(specials, len(specials))])
    npop = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "realdiv": np.divide}[op]
    with np.errstate(all="ignore"):
        expected = npop(a.astype(np.float32), b.astype(np.float32)).astype(npdt)
    got = getattr(_core, op)(tf.constant(a), tf.constant(b)).numpy()
    ok = ~np.isnan(expected.astype(np.float32))
    assert_bits_equal(got[ok], expected[ok], "(%s %s)" % (op, dt))
    assert np.isnan(got[~ok].astype(np.float32)).all()


def test_guide_facts():
    """The mixed precision guide's float16 examples (semantics.md section 4)."""
    big = tf.constant(256, "float16") ** 2
    assert big.dtype == tf.float16 and np.isinf(big.numpy()) and big.numpy() > 0
    small = tf.constant(1e-5, "float16") ** 2
    assert small.dtype == tf.float16 and small.numpy() == 0
    assert float(tf.constant(1e-5, "float16")) == 1.0013580322265625e-05
    assert float(tf.constant(65504, "float16") + 15) == 65504
    assert np.isinf(float(tf.constant(65504, "float16") + 16))  # 65520: the tie goes to inf (even)
    assert float(tf.constant(2048, "float16") + 1) == 2048
    assert float(tf.constant(1, "bfloat16") + 2.0**-8) == 1.0
    assert repr(big) == "<tf.Tensor: shape=(), dtype=float16, numpy=inf>"


def test_integer_division_edge_cases():
    for dt in ("int32", "int64", "int8"):
        lo = np.iinfo(dt).min
        x = tf.constant(np.array([lo, lo, 7, -7, 7, -7], dt))
        y = tf.constant(np.array([-1, 1, 2, 2, -2, -2], dt))
        np.testing.assert_array_equal((x // y).numpy(), np.array([lo, lo, 3, -4, -4, 3], dt))
        np.testing.assert_array_equal((x % y).numpy(), np.array([0, 0, 1, 1, -1, -1], dt))
    with pytest.raises(ValueError, match="division by zero"):
        tf.constant([1, 2]) // tf.constant([1, 0])
    with pytest.raises(ValueError, match="division by zero"):
        tf.constant([1, 2]) % 0


def test_integer_pow():
    x = tf.constant([2, -3, 0, 1, 7], "int32")
    np.testing.assert_array_equal((x ** 3).numpy(), [8, -27, 0, 1, 343])
    np.testing.assert_array_equal((x ** 0).numpy(), [1, 1, 1, 1, 1])
    np.testing.assert_array_equal(tf.pow(tf.constant([3], "int32"), 40).numpy(),
                                  np.array([3**40 % 2**32], np.uint32).astype(np.int32))
    with pytest.raises(ValueError, match="negative integer powers"):
        x ** -1


def test_integer_overflow_wraps():
    big = tf.constant([2**31 - 1], "int32")
    assert int((big + 1)[0]) == -(2**31)
    assert int((tf.constant([-(2**31)], "int32") - 1)[0]) == 2**31 - 1
    assert int((-tf.constant([-(2**31)], "int32"))[0]) == -(2**31)
    assert int(abs(tf.constant([-(2**63)], "int64"))[0]) == -(2**63)
    assert int((tf.constant([200], "uint8") + tf.constant([100], "uint8"))[0]) == 44
    assert int((tf.constant([100], "int8") * 3)[0]) == np.int8(np.int64(300).astype(np.int8))


def test_nan_propagating_max_min():
    a = tf.constant([np.nan, 1.0, np.nan, -np.inf, 2.0])
    b = tf.constant([1.0, np.nan, np.nan, np.nan, -0.0])
    np.testing.assert_array_equal(np.isnan(tf.maximum(a, b).numpy()), [True] * 4 + [False])
    np.testing.assert_array_equal(np.isnan(tf.minimum(a, b).numpy()), [True] * 4 + [False])
    assert tf.maximum(a, b).numpy()[-1] == 2.0
    assert tf.minimum(a, b).numpy()[-1] == 0.0


# ------------------------------------------------------------------ broadcasting

BCAST_SHAPES = [
    ((), ()), ((), (5,)), ((4,), ()), ((3, 4), (4,)), ((4,), (3, 4)), ((3, 1), (1, 4)),
    ((5, 1), (5,)), ((2, 3, 4), (3, 1)), ((2, 1, 4), (1, 3, 1)), ((1,), (2, 3)),
    ((0,), ()), ((0, 3), (3,)), ((2, 0), (1,)), ((0, 1), (1, 5)), ((2, 1, 3, 1, 2), (4, 1, 1, 2)),
    ((1, 1, 1), (1, 1)), ((2, 3, 4, 5, 1, 1, 1, 2), (2,)), ((7, 1, 300), (1, 5, 300)),
]


@pytest.mark.parametrize("sa,sb", BCAST_SHAPES, ids=[str(s) for s in BCAST_SHAPES])
@pytest.mark.parametrize("dt", ["float32", "float16", "int32"])
def test_broadcasting(sa, sb, dt, rng):
    npdt = np_of(dt)
    a = (rng.standard_normal(sa) * 10).astype(npdt)
    b = (rng.standard_normal(sb) * 10).astype(npdt)
    for op, npop in ((tf.add, np.add), (tf.subtract, np.subtract), (tf.maximum, np.maximum)):
        got = op(tf.constant(a), tf.constant(b))
        assert got.shape == np.broadcast_shapes(sa, sb)
        expected = npop(a.astype(np.float64), b.astype(np.float64))
        assert_close(got, round_to(expected, dt) if dt != "int32" else expected.astype(npdt),
                     dt, "elementwise")
    got = tf.less(tf.constant(a), tf.constant(b))
    np.testing.assert_array_equal(got.numpy(), a < b)


def test_broadcasting_with_python_scalars_and_lists():
    t = tf.constant([[1.0, 2.0], [3.0, 4.0]], "float16")
    for r in (t + 1, 1 + t, t * 0.5, 0.5 * t, t - [1, 2], [1, 2] - t, t / 2, 2 / t):
        assert r.dtype == tf.float16 and r.shape == (2, 2)
    np.testing.assert_array_equal((t - [1, 2]).numpy(), np.array([[0, 0], [2, 2]], np.float16))
    np.testing.assert_array_equal((10 - t).numpy(), 10 - t.numpy())
    np.testing.assert_array_equal((2 ** tf.constant([1.0, 3.0])).numpy(), [2.0, 8.0])


# ------------------------------------------------------------------ where

@pytest.mark.parametrize("sc,sx,sy", [((4,), (4,), (4,)), ((3, 1), (1, 4), ()), ((), (2, 3), (2, 3)),
                                      ((2, 1, 3), (4, 1), (1,)), ((0, 3), (3,), (1, 3)),
                                      ((300, 257), (257,), (300, 1))])
@pytest.mark.parametrize("dt", ["float32", "bfloat16", "int64", "bool", "uint8"])
def test_where(sc, sx, sy, dt, rng):
    c = rng.random(sc) > 0.5
    x = (rng.standard_normal(sx) * 5).astype(np_of(dt))
    y = (rng.standard_normal(sy) * 5).astype(np_of(dt))
    got = tf.where(tf.constant(c), tf.constant(x), tf.constant(y))
    expected = np.where(c, x, y)
    assert got.dtype.name == dt and got.shape == expected.shape
    assert_bits_equal(got.numpy(), expected.astype(np_of(dt)))


def test_where_python_values_and_single_argument():
    got = tf.where([True, False, True], tf.constant([1, 2, 3], "int64"), 0)
    assert got.dtype == tf.int64
    np.testing.assert_array_equal(got.numpy(), [1, 0, 3])
    coords = tf.where(tf.constant([[True, False], [False, True]]))
    assert coords.dtype == tf.int64
    np.testing.assert_array_equal(coords.numpy(), [[0, 0], [1, 1]])


# ------------------------------------------------------------------ reductions

REDUCE_REFS = {
    "reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max, "reduce_min": np.min,
    "reduce_prod": np.prod,
}
AXES_3D = [None] + [list(c) for k in range(0, 4) for c in itertools.combinations(range(3), k)]


def _reduce_input(name, dt, rng, shape):
    if dt in FLOATS:
        if name in ("reduce_sum", "reduce_mean"):
            x = rng.uniform(0.5, 2.0, shape)  # one sign: the tolerance is relative
        elif name == "reduce_prod":
            x = rng.uniform(0.8, 1.25, shape)
        else:
            x = rng.standard_normal(shape) * 100
        return round_to(x, dt)
    info = np.iinfo(dt)
    if name == "reduce_prod":
        return rng.choice(np.array([-1, 1, 2, 3], np.int64) if info.min < 0 else np.array([1, 2, 3]),
                          shape).astype(dt)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dt)


def _int_reduce_ref(name, x, axis, keepdims, dt):
    ax = None if axis is None else tuple(axis)
    x64 = x.astype(np.int64)
    if name == "reduce_mean":
        s = np.sum(x64, axis=ax, keepdims=keepdims)
        n = x.size if ax is None else int(np.prod([x.shape[a] for a in ax]))
        q = np.abs(s) // max(n, 1) * np.sign(s)  # C division truncates toward zero
        return np.asarray(q).astype(dt)
    fn = {"reduce_sum": np.sum, "reduce_prod": np.prod, "reduce_max": np.max, "reduce_min": np.min}[name]
    return np.asarray(fn(x64, axis=ax, keepdims=keepdims)).astype(dt)  # wraps as the kernel


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dt", FLOATS + ("int32", "int64", "int8", "uint8"))
@pytest.mark.parametrize("name", sorted(REDUCE_REFS))
def test_reductions_every_axis_subset(name, dt, keepdims, rng):
    shape = (3, 4, 5)
    x = _reduce_input(name, dt, rng, shape)
    t = tf.constant(x)
    fn = getattr(tf, name)
    for axis in AXES_3D + [[-1], [0, -1], -2, [2, 0]]:
        got = fn(t, axis=axis, keepdims=keepdims)
        norm = axis if axis is None else sorted({a % 3 for a in np.atleast_1d(axis).tolist()})
        if dt in FLOATS:
            expected = REDUCE_REFS[name](x.astype(np.float64), axis=None if norm is None else tuple(norm),
                                         keepdims=keepdims)
            expected = round_to(expected, dt)
            kind = "exact" if name in ("reduce_max", "reduce_min") else "reduction"
        else:
            expected = _int_reduce_ref(name, x, norm, keepdims, dt)
            kind = "exact"
        assert got.dtype.name == dt
        assert got.shape == np.shape(expected), (axis, keepdims, got.shape, np.shape(expected))
        assert_close(got, expected, dt, kind, err_msg="%s axis=%s keepdims=%s" % (name, axis, keepdims))


@pytest.mark.parametrize("shape, axis", [
    ((1024, 3), 0), ((1500, 64), 0), ((8192, 10), 0), ((3, 2049, 5), 1), ((2, 1030, 300), 1),
    ((1025, 2, 3), (0, 1)), ((4097, 1), 0),
])
@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("name", ["reduce_sum", "reduce_mean"])
def test_sums_down_a_long_axis(name, dt, shape, axis, rng):
    # the blocked path (cpu_reduce.c colsum_reduce): >= 1024 rows summed in 512-row blocks
    x = _reduce_input(name, dt, rng, shape)
    got = getattr(tf, name)(tf.constant(x), axis=axis)
    expected = round_to(REDUCE_REFS[name](x.astype(np.float64), axis=axis), dt)
    assert_close(got, expected, dt, "reduction")


def test_long_sums_do_not_depend_on_the_thread_count(rng):
    x = tf.constant(rng.standard_normal((5000, 33)).astype(np.float32))
    before = tf.config.threading.get_intra_op_parallelism_threads()
    try:
        tf.config.threading.set_intra_op_parallelism_threads(1)
        one = [tf.reduce_sum(x, 0).numpy(), tf.reduce_mean(x, 0).numpy()]
        tf.config.threading.set_intra_op_parallelism_threads(2)
        two = [tf.reduce_sum(x, 0).numpy(), tf.reduce_mean(x, 0).numpy()]
    finally:
        tf.config.threading.set_intra_op_parallelism_threads(before)
    for a, b in zip(one, two):
        assert_bits_equal(a, b)


@pytest.mark.parametrize("name", ["reduce_all", "reduce_any"])
def test_bool_reductions_every_axis_subset(name, rng):
    x = rng.random((3, 4, 5)) > 0.3
    x[0, :, 1] = True
    x[1, 2, :] = False
    ref = np.all if name == "reduce_all" else np.any
    for keepdims in (False, True):
        for axis in AXES_3D:
            got = getattr(tf, name)(tf.constant(x), axis=axis, keepdims=keepdims)
            expected = ref(x, axis=None if axis is None else tuple(axis), keepdims=keepdims)
            assert got.dtype == tf.bool
            np.testing.assert_array_equal(got.numpy(), expected)


def test_empty_reductions():
    e = tf.zeros([0, 3])
    np.testing.assert_array_equal(tf.reduce_sum(e, 0).numpy(), [0, 0, 0])
    np.testing.assert_array_equal(tf.reduce_prod(e, 0).numpy(), [1, 1, 1])
    np.testing.assert_array_equal(tf.reduce_max(e, 0).numpy(), [-np.inf] * 3)
    np.testing.assert_array_equal(tf.reduce_min(e, 0).numpy(), [np.inf] * 3)
    assert np.isnan(tf.reduce_mean(e, 0).numpy()).all()
    assert tf.reduce_sum(e, 1).shape == (0,)
    assert tf.reduce_sum(e, 1, keepdims=True).shape == (0, 1)
    assert float(tf.reduce_sum(e)) == 0.0 and tf.reduce_sum(e).shape == ()
    assert tf.reduce_sum(e, keepdims=True).shape == (1, 1)
    ei = tf.zeros([0, 2], "int32")
    np.testing.assert_array_equal(tf.reduce_max(ei, 0).numpy(), [np.iinfo(np.int32).min] * 2)
    np.testing.assert_array_equal(tf.reduce_min(ei, 0).numpy(), [np.iinfo(np.int32).max] * 2)
    eb = tf.constant(np.zeros((0, 2), bool))
    np.testing.assert_array_equal(tf.reduce_all(eb, 0).numpy(), [True, True])
    np.testing.assert_array_equal(tf.reduce_any(eb, 0).numpy(), [False, False])
    for dt in ("float16", "bfloat16"):
        assert tf.reduce_max(tf.zeros([0], dt)).numpy() == -np.inf


def test_16bit_sums_round_once():
    """The double-precision sum is rounded to float16 once: 1 + 2**-11 + 2**-24 lies just
    above a float16 tie and must round up (through float32 it would tie and round down)."""
    x = np.array([1.0, 2.0**-11, 2.0**-24], np.float16)
    assert float(tf.reduce_sum(tf.constant(x))) == 1.0 + 2.0**-10
    cols = np.stack([x, x], axis=1)  # the strided (inner > 1) path
    np.testing.assert_array_equal(tf.reduce_sum(tf.constant(cols), 0).numpy(), [1.0 + 2.0**-10] * 2)
    m = np.array([3.0, 3 * 2.0**-11, 3 * 2.0**-24], np.float16)
    assert float(tf.reduce_mean(tf.constant(m))) == float(np.float16(m.astype(np.float64).mean()))


def test_reduction_nan_propagates():
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], np.float32)
    for dt in FLOATS:
        t = tf.constant(x.astype(np_of(dt)))
        for fn in (tf.reduce_max, tf.reduce_min, tf.reduce_sum, tf.reduce_mean, tf.reduce_prod):
            got = fn(t, axis=1).numpy().astype(np.float64)
            assert np.isnan(got[0]) and not np.isnan(got[1]), (fn, dt)
            got0 = fn(t, axis=0).numpy().astype(np.float64)
            assert np.isnan(got0[1]) and not np.isnan(got0[0])


def test_reduction_no_axes_and_scalars():
    t = tf.constant([[1.0, 2.0]])
    r = tf.reduce_sum(t, axis=[])
    assert r.shape == (1, 2)
    np.testing.assert_array_equal(r.numpy(), t.numpy())
    s = tf.constant(3.0)
    assert float(tf.reduce_sum(s)) == 3.0 and tf.reduce_sum(s).shape == ()
    assert float(tf.reduce_max(s, keepdims=True)) == 3.0


def test_large_reductions_are_threaded_and_accurate(rng):
    x = rng.uniform(0.5, 1.5, (1 << 20) + 7).astype(np.float32)
    assert_close(tf.reduce_sum(tf.constant(x)), np.float32(x.astype(np.float64).sum()), "float32",
                 "reduction")
    h = (x / 64).astype(np.float16)  # the sum (~16384) stays finite in float16
    assert_close(tf.reduce_sum(tf.constant(h)), round_to(h.astype(np.float64).sum(), "float16"),
                 "float16", "reduction")
    m = rng.standard_normal((700, 900)).astype(np.float32)
    for axis in (0, 1):
        assert_close(tf.reduce_max(tf.constant(m), axis), m.max(axis), "float32", "exact")
        assert_close(tf.reduce_mean(tf.constant(np.abs(m)), axis),
                     np.abs(m).astype(np.float64).mean(axis), "float32", "reduction")


# ------------------------------------------------------------------ argmax / argmin

@pytest.mark.parametrize("dt", FLOATS + ("int32", "int64", "int8", "uint8"))
def test_argmax_argmin(dt, rng):
    x = rng.integers(0, 5, (4, 6, 5)).astype(np_of(dt))  # many ties: the first index wins
    t = tf.constant(x)
    for axis in (0, 1, 2, -1, -3):
        for fn, ref in ((tf.argmax, np.argmax), (tf.argmin, np.argmin)):
            got = fn(t, axis=axis)
            assert got.dtype == tf.int64
            np.testing.assert_array_equal(got.numpy(), ref(x, axis=axis))
    got = tf.argmax(t, axis=1, output_type=tf.int32)
    assert got.dtype == tf.int32
    np.testing.assert_array_equal(got.numpy(), np.argmax(x, axis=1))
    np.testing.assert_array_equal(tf.argmax(t).numpy(), np.argmax(x, axis=0))  # default axis 0


def test_argmax_with_nan_returns_first_nan():
    x = np.array([[1.0, np.nan, 5.0, np.nan], [np.nan, 2.0, 3.0, 0.0], [1.0, 2.0, 9.0, -1.0]],
                 np.float32)
    for dt in FLOATS:
        t = tf.constant(x.astype(np_of(dt)))
        np.testing.assert_array_equal(tf.argmax(t, 1).numpy(), np.argmax(x, 1))
        np.testing.assert_array_equal(tf.argmin(t, 1).numpy(), np.argmin(x, 1))
        np.testing.assert_array_equal(tf.argmax(t, 0).numpy(), np.argmax(x, 0))


# ------------------------------------------------------------------ matmul

MATMUL_SHAPES = [
    ((3, 4), (4, 5)), ((1, 7), (7, 1)), ((64, 128), (128, 32)), ((2, 3, 4), (2, 4, 5)),
    ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 6)), ((1, 3, 4), (6, 4, 2)),
    ((2, 1, 3, 8), (1, 4, 8, 2)), ((0, 4), (4, 3)), ((3, 0), (0, 5)), ((2, 0, 3), (3, 4)),
    ((5, 256), (256, 3)), ((1, 1), (1, 1)),
]


def _matmul_ref(a, b, ta, tb, accum):
    a = np.swapaxes(a, -1, -2) if ta else a
    b = np.swapaxes(b, -1, -2) if tb else b
    return np.matmul(a.astype(accum), b.astype(accum))


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("dt", FLOATS)
def test_matmul(dt, ta, tb, rng):
    for sa, sb in MATMUL_SHAPES:
        sa_t = sa[:-2] + (sa[-1], sa[-2]) if ta else sa
        sb_t = sb[:-2] + (sb[-1], sb[-2]) if tb else sb
        a = round_to(rng.standard_normal(sa_t), dt)
        b = round_to(rng.standard_normal(sb_t), dt)
        got = tf.matmul(tf.constant(a), tf.constant(b), transpose_a=ta, transpose_b=tb)
        if dt in ("float16", "bfloat16"):
            # float32 accumulation of the same 16-bit inputs, rounded once
            expected = round_to(_matmul_ref(a, b, ta, tb, np.float32), dt)
        else:
            expected = round_to(_matmul_ref(a, b, ta, tb, np.float64), dt)
        assert got.dtype.name == dt
        assert got.shape == expected.shape, (sa, sb, ta, tb)
        assert_close(got, expected, dt, "matmul", err_msg="%s x %s ta=%s tb=%s" % (sa, sb, ta, tb))


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("act", [0, 1])
def test_matmul_bias_act(dt, ta, tb, act):
    """MatMul + bias (+ ReLU) as one op against float64 NumPy: 16-bit sums the product and
    the bias in float32 and rounds once; bad shapes and activations are refused; the Keras
    Dense layer (relu or linear, with a bias) gives the unfused chain's values."""
    rng = np.random.default_rng(16)
    a = round_to(rng.standard_normal((6, 5)), dt)
    b = round_to(rng.standard_normal((5, 4)), dt)
    c = round_to(rng.standard_normal(4), dt)
    A, B = (a.T if ta else a), (b.T if tb else b)
    t = lambda v: tf.constant(np.ascontiguousarray(v).astype(NP_DTYPE[dt]))  # noqa: E731
    y = _core.matmul_bias_act(t(A), t(B), t(c), ta, tb, act)
    e = np.asarray(a, np.float64) @ np.asarray(b, np.float64) + np.asarray(c, np.float64)
    if act:
        e = np.maximum(e, 0)
    assert y.dtype == dt and tuple(y.shape) == (6, 4)
    assert_close(y, round_to(e, dt), dt, "matmul")
    with pytest.raises(ValueError, match=r"bias must have shape \[4\]"):
        _core.matmul_bias_act(t(A), t(B), t(c[:3]), ta, tb, act)
    with pytest.raises(ValueError, match="activation"):
        _core.matmul_bias_act(t(A), t(B), t(c), ta, tb, 3)
    with pytest.raises(ValueError, match="size-incompatible"):
        _core.matmul_bias_act(t(A), t(B[:-1] if not tb else B[:, :-1]), t(c), ta, tb, act)


def test_dense_layer_runs_the_fused_op():
    from mixprec import keras

    x = tf.constant(np.random.default_rng(17).standard_normal((3, 5)).astype(np.float32))
    for act in ("relu", None):
        layer = keras.layers.Dense(4, activation=act, bias_initializer="random_normal")
        with tf.GradientTape() as tape:
            y = layer(x)
            loss = tf.reduce_sum(y * y)
        g = tape.gradient(loss, layer.trainable_variables)
        k, bb = tf.constant(layer.kernel.numpy()), tf.constant(layer.bias.numpy())
        with tf.GradientTape() as tape:
            tape.watch([k, bb])
            r = tf.matmul(x, k) + bb
            r = tf.nn.relu(r) if act else r
            loss = tf.reduce_sum(r * r)
        gr = tape.gradient(loss, [k, bb])
        assert_close(y, r.numpy(), "float32", "matmul")
        for u, v in zip(g, gr):
            assert_close(u, v.numpy(), "float32", "matmul")


def test_matmul_16bit_accumulates_in_float32():
    """A float16 accumulation of 4096 ones stalls at 2048; float32 does not."""
    a = tf.ones([1, 4096], "float16")
    b = tf.ones([4096, 1], "float16")
    assert float(tf.matmul(a, b)[0, 0]) == 4096.0
    a = tf.ones([1, 1024], "bfloat16")
    b = tf.ones([1024, 1], "bfloat16")
    assert float(tf.matmul(a, b)[0, 0]) == 1024.0  # bfloat16 accumulation would stall at 256


@pytest.mark.parametrize("dt", ["int32", "int64", "int8", "uint8"])
def test_matmul_integers(dt, rng):
    a = rng.integers(-5, 6 if dt != "uint8" else 6, (2, 3, 4)).astype(dt) if dt != "uint8" else \
        rng.integers(0, 6, (2, 3, 4)).astype(dt)
    b = rng.integers(0, 6, (4, 5)).astype(dt)
    got = tf.matmul(tf.constant(a), tf.constant(b))
    np.testing.assert_array_equal(got.numpy(), np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(dt))
    got = tf.matmul(tf.constant(a), tf.constant(b.T.copy()), transpose_b=True)
    np.testing.assert_array_equal(got.numpy(), np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(dt))


def test_matmul_operator_and_adjoint():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal((tf.constant(a) @ tf.constant(b)).numpy(), a @ b)
    np.testing.assert_array_equal(tf.matmul(tf.constant(a.T.copy()), b, adjoint_a=True).numpy(), a @ b)


# ------------------------------------------------------------------ softmax

def _softmax_ref(x, axis, log):
    x = x.astype(np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(x - m)
    s = np.sum(e, axis=axis, keepdims=True)
    return (x - m - np.log(s)) if log else e / s


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dt", FLOATS)
def test_softmax_along_axes(dt, log, rng):
    x = round_to(rng.standard_normal((3, 4, 1100)) * 4, dt)  # > 1024 columns: heap row buffer
    x[0, 0, :5] = [50, 60, -np.inf, 0, 55]  # large values and a -inf entry in one row
    fn = tf.nn.log_softmax if log else tf.nn.softmax
    for axis in (-1, 0, 1, 2, -2):
        got = fn(tf.constant(x), axis=axis)
        with np.errstate(all="ignore"):
            expected = round_to(_softmax_ref(x, axis, log), dt)
        assert got.dtype.name == dt and got.shape == x.shape
        assert_close(got, expected, dt, "softmax", err_msg="axis=%d" % axis)
    small = round_to(rng.standard_normal((5, 7)), dt)
    assert_close(fn(tf.constant(small)), round_to(_softmax_ref(small, -1, log), dt), dt, "softmax")


def test_softmax_rows_sum_to_one_and_edge_rows():
    x = tf.constant([[1.0, 2.0, 3.0], [-np.inf, 0.0, -np.inf], [1000.0, 1000.0, -1000.0]])
    s = tf.nn.softmax(x).numpy()
    np.testing.assert_allclose(s.sum(-1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(s[1], [0, 1, 0])
    np.testing.assert_allclose(s[2], [0.5, 0.5, 0], atol=1e-7)
    allinf = tf.nn.softmax(tf.constant([[-np.inf, -np.inf]])).numpy()
    assert np.isnan(allinf).all()  # as TensorFlow: 0/0
    assert tf.nn.softmax(tf.zeros([0, 3])).shape == (0, 3)
    assert tf.nn.softmax(tf.zeros([2, 0])).shape == (2, 0)


# ------------------------------------------------------------------ layout ops

def test_reshape(rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    t = tf.constant(x)
    for shape in ([24], [4, 6], [-1], [2, -1], [-1, 4], [2, 3, 4], [1, 24, 1], [4, 3, -1, 1], (6, 4)):
        got = tf.reshape(t, shape)
        np.testing.assert_array_equal(got.numpy(), x.reshape(shape))
    assert tf.reshape(tf.constant([5.0]), []).shape == ()
    assert tf.reshape(tf.constant(5.0), [1, 1]).shape == (1, 1)
    assert tf.reshape(tf.zeros([0, 3]), [-1, 3]).shape == (0, 3)
    assert tf.reshape(t, tf.constant([4, 6])).shape == (4, 6)
    r = tf.reshape(t, [24])
    assert r._id != t._id  # a view with a new id


def test_transpose(rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float16)
    t = tf.constant(x)
    for perm in itertools.permutations(range(3)):
        np.testing.assert_array_equal(tf.transpose(t, perm).numpy(), np.transpose(x, perm))
    np.testing.assert_array_equal(tf.transpose(t).numpy(), x.T)
    y = rng.standard_normal((2, 1, 3, 2, 2)).astype(np.float64)
    for perm in [(4, 3, 2, 1, 0), (0, 2, 1, 4, 3), (1, 0, 2, 3, 4)]:
        np.testing.assert_array_equal(tf.transpose(tf.constant(y), perm).numpy(), np.transpose(y, perm))
    big = rng.standard_normal((513, 300)).astype(np.float32)
    np.testing.assert_array_equal(tf.transpose(tf.constant(big)).numpy(), big.T)
    assert tf.transpose(tf.constant(3.0)).shape == ()


@pytest.mark.parametrize("dt", ["float32", "bfloat16", "int8", "bool", "float64"])
def test_concat(dt, rng):
    parts = [(rng.standard_normal((2, n, 3)) * 3).astype(np_of(dt)) for n in (1, 0, 4, 2)]
    for axis in (1, -2):
        got = tf.concat([tf.constant(p) for p in parts], axis)
        assert_bits_equal(got.numpy(), np.concatenate(parts, axis))
    a = (rng.standard_normal((2, 3)) * 3).astype(np_of(dt))
    b = (rng.standard_normal((4, 3)) * 3).astype(np_of(dt))
    assert_bits_equal(tf.concat([a, tf.constant(b)], 0).numpy(), np.concatenate([a, b], 0))
    c = (rng.standard_normal((2, 5)) * 3).astype(np_of(dt))
    assert_bits_equal(tf.concat([tf.constant(a), c], axis=-1).numpy(), np.concatenate([a, c], -1))
    assert_bits_equal(tf.concat([tf.constant(a)], 0).numpy(), a)


@pytest.mark.parametrize("dt", ["float32", "float16", "int64", "bool"])
def test_stack_and_unstack(dt, rng):
    parts = [(rng.standard_normal((3, 4)) * 3).astype(np_of(dt)) for _ in range(5)]
    for axis in (0, 1, 2, -1, -3):
        got = tf.stack([tf.constant(p) for p in parts], axis=axis)
        assert_bits_equal(got.numpy(), np.stack(parts, axis))
        back = tf.unstack(got, axis=axis)
        assert len(back) == 5
        for u, p in zip(back, parts):
            assert_bits_equal(u.numpy(), p)
    scal = tf.stack([tf.constant(1.0), tf.constant(2.0)])
    assert scal.shape == (2,)
    assert tf.stack([1, 2, 3]).dtype == tf.int32


def test_expand_dims_and_squeeze():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = tf.constant(x)
    for axis in (0, 1, 2, -1, -2, -3):
        np.testing.assert_array_equal(tf.expand_dims(t, axis).numpy(), np.expand_dims(x, axis))
    y = np.zeros((1, 2, 1, 3, 1), np.float32)
    u = tf.constant(y)
    assert tf.squeeze(u).shape == (2, 3)
    assert tf.squeeze(u, 0).shape == (2, 1, 3, 1)
    assert tf.squeeze(u, [2, -1]).shape == (1, 2, 3)
    assert tf.squeeze(tf.constant([[5.0]])).shape == ()
    assert tf.squeeze(u, np.int64(0)).shape == (2, 1, 3, 1)


@pytest.mark.parametrize("src,dst", [((), (2, 3)), ((3,), (2, 3)), ((2, 1), (2, 4)), ((1, 3), (0, 3)),
                                     ((2, 1, 3), (4, 2, 5, 3)), ((3,), (3,)), ((1,), (1, 1, 1))])
def test_broadcast_to(src, dst, rng):
    x = rng.standard_normal(src).astype(np.float16)
    got = tf.broadcast_to(tf.constant(x), dst)
    assert got.shape == dst
    assert_bits_equal(got.numpy(), np.broadcast_to(x, dst))


def test_strided_slice_via_getitem(rng):
    """StridedSlice has no function of its own: indexing reaches it (more in test_tensor)."""
    x = rng.standard_normal((5, 6, 7)).astype(np.float32)
    t = tf.constant(x)
    for key in [(slice(1, 4), slice(None, None, 2)), (Ellipsis, slice(None, None, -1)), (2, slice(1, -1), 3),
                (slice(None, None, -2), None, 1)]:
        np.testing.assert_array_equal(t[key].numpy(), x[key])


# ------------------------------------------------------------------ creation ops

ALL_DTYPES = ("float32", "float16", "bfloat16", "float64", "int32", "int64", "uint8", "bool", "int8")


@pytest.mark.parametrize("dt", ALL_DTYPES)
def test_fill_zeros_ones(dt):
    npdt = np_of(dt)
    z = tf.zeros([2, 3], dt)
    o = tf.ones((2, 3), dt)
    assert z.dtype.name == dt and o.dtype.name == dt
    np.testing.assert_array_equal(z.numpy(), np.zeros((2, 3), npdt))
    np.testing.assert_array_equal(o.numpy(), np.ones((2, 3), npdt))
    t = tf.constant(np.arange(4).reshape(2, 2).astype(npdt))
    np.testing.assert_array_equal(tf.zeros_like(t).numpy(), np.zeros((2, 2), npdt))
    np.testing.assert_array_equal(tf.ones_like(t).numpy(), np.ones((2, 2), npdt))
    assert tf.zeros_like(t).dtype.name == dt
    assert tf.ones_like(t, dtype="float32").dtype == tf.float32
    v = True if dt == "bool" else 7
    f = tf.fill([3], v, dt) if dt != "bool" else tf.fill([3], True)
    np.testing.assert_array_equal(f.numpy(), np.full(3, v, npdt))
    assert tf.zeros([], dt).shape == () and tf.zeros([0, 4], dt).shape == (0, 4)


def test_fill_value_rules():
    assert tf.fill([2], 1.5).dtype == tf.float32
    assert tf.fill([2], 3).dtype == tf.int32
    assert tf.fill([2], 2**40).dtype == tf.int64
    np.testing.assert_array_equal(tf.fill([2], 2**62 + 1).numpy(), [2**62 + 1] * 2)  # exact int64
    assert tf.fill([2, 2], tf.constant(2.5, "bfloat16")).dtype == tf.bfloat16
    np.testing.assert_array_equal(tf.fill(3, 0.25, "float16").numpy(), np.full(3, 0.25, np.float16))
    assert tf.zeros(3).shape == (3,)


def test_range():
    np.testing.assert_array_equal(tf.range(5).numpy(), np.arange(5))
    assert tf.range(5).dtype == tf.int32
    np.testing.assert_array_equal(tf.range(2, 11, 3).numpy(), np.arange(2, 11, 3))
    np.testing.assert_array_equal(tf.range(10, 0, -2).numpy(), np.arange(10, 0, -2))
    r = tf.range(0.0, 1.0, 0.25)
    assert r.dtype == tf.float32
    np.testing.assert_array_equal(r.numpy(), np.arange(0, 1, 0.25, dtype=np.float32))
    assert tf.range(3, dtype="float16").dtype == tf.float16
    assert tf.range(3, dtype=tf.int64).numpy().dtype == np.int64
    assert tf.range(0).shape == (0,)
    assert tf.range(5, 5).shape == (0,)
    np.testing.assert_allclose(tf.range(0.0, 1.0, 0.1).numpy(), np.arange(0, 1, 0.1, dtype=np.float32),
                               rtol=1e-6)
    assert len(tf.range(0.0, 1.0, 0.1).numpy()) == 10
    np.testing.assert_array_equal(tf.range(2**40, 2**40 + 3, dtype="int64").numpy(),
                                  np.arange(2**40, 2**40 + 3))


def test_range_dtypes_follow_tensorflow():
    # each bound converts on its own (int32, or int64 past int32), then the widest wins
    r = tf.range(2**31, 2**31 + 3)
    assert r.dtype == tf.int64
    np.testing.assert_array_equal(r.numpy(), np.arange(2**31, 2**31 + 3))
    assert tf.range(np.float64(0), 2).dtype == tf.float64
    assert tf.range(tf.constant(3, tf.int64)).dtype == tf.int64
    assert tf.range(1, 2.5).dtype == tf.float32
    # a float tensor asked for as integers is cast toward zero, as TensorFlow's cast
    np.testing.assert_array_equal(tf.range(tf.constant(3.7), dtype=tf.int32).numpy(), [0, 1, 2])
    edge = tf.range(2**53 - 3, 2**53, dtype=tf.int64).numpy()
    np.testing.assert_array_equal(edge, np.arange(2**53 - 3, 2**53))


@pytest.mark.parametrize("args, kw, err, match", [
    ((0, 3, 0.5), {"dtype": "int64"}, TypeError, "Cannot convert 0.5"),
    ((0, 10, 0.5), {"dtype": "int32"}, TypeError, "Cannot convert 0.5"),
    ((300,), {"dtype": "uint8"}, TypeError, "Cannot convert 300"),
    ((1e19, 1e19 + 10), {"dtype": "int64"}, TypeError, "Cannot convert 1e"),
    ((2**60, 2**60 + 3), {"dtype": "int64"}, ValueError, "2\\*\\*53"),
    ((-2**63, 2**63 - 1, 2**62), {"dtype": "int64"}, ValueError, "2\\*\\*53"),
    ((2**64,), {}, ValueError, "does not fit in int64"),
    ((0, 5, 0), {}, tf.errors.InvalidArgumentError, "delta != 0"),
    ((5, 0, 1), {}, tf.errors.InvalidArgumentError, "start <= limit"),
    (("a",), {}, TypeError, "must be a number"),
    ((3,), {"dtype": "bool"}, TypeError, "bool"),
])
def test_range_refuses_what_it_cannot_produce_exactly(args, kw, err, match):
    with pytest.raises(err, match=match):
        tf.range(*args, **kw)


@pytest.mark.parametrize("idx_dt", ["int32", "int64", "uint8", "int8"])
def test_one_hot(idx_dt):
    idx = np.array([[0, 2], [1, 5]], idx_dt) if idx_dt == "uint8" else np.array([[0, 2], [-1, 5]], idx_dt)
    got = tf.one_hot(tf.constant(idx), 4)
    assert got.dtype == tf.float32 and got.shape == (2, 2, 4)
    expected = (idx.astype(np.int64)[..., None] == np.arange(4)).astype(np.float32)
    np.testing.assert_array_equal(got.numpy(), expected)  # out of range (and negative) -> all off
    got = tf.one_hot(tf.constant(idx), 3, on_value=5, off_value=-1, dtype="int32")
    assert got.dtype == tf.int32
    np.testing.assert_array_equal(got.numpy(), np.where(idx.astype(np.int64)[..., None] == np.arange(3), 5, -1))
    h = tf.one_hot([1, 0], 2, dtype="bfloat16")
    assert h.dtype == tf.bfloat16
    np.testing.assert_array_equal(h.numpy().astype(np.float32), [[0, 1], [1, 0]])
    assert tf.one_hot(tf.constant(3), 5).shape == (5,)
    assert tf.one_hot([1, 2], 0).shape == (2, 0)


def test_clip_by_value():
    x = np.array([-3.0, -1.0, 0.0, 0.5, 2.0, 9.0, np.nan], np.float32)
    for dt in FLOATS:
        got = tf.clip_by_value(tf.constant(x.astype(np_of(dt))), -1.0, 2.0)
        assert got.dtype.name == dt
        np.testing.assert_array_equal(got.numpy().astype(np.float32), np.clip(x, -1.0, 2.0))
    gi = tf.clip_by_value(tf.constant([-5, 0, 5, 10]), 0, 6)
    np.testing.assert_array_equal(gi.numpy(), [0, 0, 5, 6])
    gt = tf.clip_by_value(tf.constant([[1.0, 5.0]]), tf.constant([0.0, 0.0]), tf.constant([2.0, 3.0]))
    np.testing.assert_array_equal(gt.numpy(), [[1.0, 3.0]])


def test_identity_stop_gradient_and_cast():
    t = tf.constant([1.0, 2.0], "bfloat16")
    for fn in (tf.identity, tf.stop_gradient):
        u = fn(t)
        assert u is not t and u._id != t._id and u.dtype == t.dtype
        assert_bits_equal(u.numpy(), t.numpy())
    assert_bits_equal(tf.cast(t, "float32").numpy(), np.array([1.0, 2.0], np.float32))  # the rest: test_casts


# ------------------------------------------------------------------ random

@pytest.fixture
def seeded():
    tf.random.set_seed(1234)
    yield
    tf.random.set_seed(None)


def test_random_reproducible_with_set_seed(seeded):
    tf.random.set_seed(7)
    a1, b1 = tf.random.normal([100]), tf.random.uniform([100])
    c1 = tf.random.normal([100], seed=3)
    tf.random.set_seed(7)
    a2, b2 = tf.random.normal([100]), tf.random.uniform([100])
    c2 = tf.random.normal([100], seed=3)
    assert_bits_equal(a1.numpy(), a2.numpy())
    assert_bits_equal(b1.numpy(), b2.numpy())
    assert_bits_equal(c1.numpy(), c2.numpy())
    assert not np.array_equal(a1.numpy(), tf.random.normal([100]).numpy())  # next call: fresh values
    tf.random.set_seed(8)
    assert not np.array_equal(a1.numpy(), tf.random.normal([100]).numpy())
    # op seeds pick independent sequences; repeated op-seeded calls advance
    tf.random.set_seed(7)
    d1 = tf.random.normal([50], seed=1)
    d2 = tf.random.normal([50], seed=1)
    assert not np.array_equal(d1.numpy(), d2.numpy())


def test_random_prefix_independent_of_size_and_threads(seeded):
    """Element i depends only on (seed, stream, i): a longer draw extends a shorter one."""
    tf.random.set_seed(5)
    short = tf.random.normal([1000]).numpy()
    tf.random.set_seed(5)
    long = tf.random.normal([300000]).numpy()  # threaded
    assert_bits_equal(long[:1000], short)
    prev = _core.get_num_threads()
    try:
        _core.set_num_threads(1)
        tf.random.set_seed(5)
        single = tf.random.normal([300000]).numpy()
    finally:
        _core.set_num_threads(prev)
    assert_bits_equal(single, long)


@pytest.mark.parametrize("dt", FLOATS)
def test_random_moments_and_bounds(dt, seeded):
    n = 1 << 18
    u = tf.random.uniform([n], dtype=dt)
    assert u.dtype.name == dt and u.shape == (n,)
    x = u.numpy().astype(np.float64)
    assert x.min() >= 0.0 and x.max() < 1.0, (x.min(), x.max())
    assert_close(np.array([x.mean(), x.var()]), np.array([0.5, 1 / 12]), dt, "random_moment")
    u2 = tf.random.uniform([n], minval=-3, maxval=5, dtype=dt).numpy().astype(np.float64)
    assert u2.min() >= -3 and u2.max() < 5
    assert_close(np.array([u2.mean() / 8, u2.std() / 8]), np.array([1 / 8, 1 / math.sqrt(12)]), dt,
                 "random_moment")
    z = tf.random.normal([n], mean=2.0, stddev=3.0, dtype=dt).numpy().astype(np.float64)
    assert np.isfinite(z).all()
    assert_close(np.array([(z.mean() - 2) / 3, z.std() / 3]), np.array([0.0, 1.0]), dt, "random_moment")
    t = tf.random.truncated_normal([n], mean=-1.0, stddev=0.5, dtype=dt).numpy().astype(np.float64)
    assert t.min() >= -1.0 - 2 * 0.5 - 1e-2 and t.max() <= -1.0 + 2 * 0.5 + 1e-2
    # standard normal truncated to [-2, 2]: std = 0.8796
    assert_close(np.array([(t.mean() + 1) / 0.5, t.std() / 0.5]), np.array([0.0, 0.87962566]), dt,
                 "random_moment")


def test_random_integers_and_shapes(seeded):
    for dt in ("int32", "int64"):
        r = tf.random.uniform([20000], minval=-3, maxval=4, dtype=dt)
        assert r.dtype.name == dt
        v = r.numpy()
        assert v.min() == -3 and v.max() == 3
        counts = np.bincount(v + 3)
        assert counts.min() > 20000 / 7 * 0.85
    assert tf.random.normal([2, 3, 4]).shape == (2, 3, 4)
    assert tf.random.normal([0, 3]).shape == (0, 3)
    assert tf.random.uniform(5).shape == (5,)
    assert tf.random.uniform([]).shape == ()
    assert tf.random.normal([2], dtype=tf.float64).dtype == tf.float64


# ------------------------------------------------------------------ threads

def test_large_elementwise_ops_are_threaded_and_exact(rng):
    a = rng.standard_normal((1024, 300)).astype(np.float32)
    b = rng.standard_normal(300).astype(np.float32)
    assert_bits_equal((tf.constant(a) + tf.constant(b)).numpy(), a + b)
    assert_bits_equal((tf.constant(a) * tf.constant(a[:1])).numpy(), a * a[:1])
    h = a.astype(np.float16)
    assert_bits_equal(tf.abs(tf.constant(h)).numpy(), np.abs(h))
    assert_close(tf.exp(tf.constant(h)), round_to(np.exp(h.astype(np.float64)), "float16"), "float16",
                 "transcendental")


def test_ops_read_views_at_their_offset(rng):
    """Slices of whole rows and reshapes are views at a byte offset into shared storage:
    every kind of op must read them from that offset."""
    base = rng.standard_normal((9, 4, 6)).astype(np.float32)
    t = tf.constant(base)
    v = t[3:7]  # a view: storage offset 3 * 24 elements
    x = base[3:7]
    assert_bits_equal((v + 1).numpy(), x + 1)
    assert_close(tf.exp(v), np.exp(x.astype(np.float64)), "float32", "transcendental")
    assert_close(tf.reduce_sum(v, [0, 2]), x.astype(np.float64).sum((0, 2)), "float32", "reduction")
    assert_bits_equal(tf.reduce_max(v, 1).numpy(), x.max(1))
    assert_bits_equal(tf.transpose(v, [2, 0, 1]).numpy(), x.transpose(2, 0, 1))
    assert_bits_equal(tf.cast(v, "float16").numpy(), x.astype(np.float16))
    assert_bits_equal(tf.concat([v, t[:1]], 0).numpy(), np.concatenate([x, base[:1]]))
    assert_close(tf.matmul(v, tf.transpose(v, [0, 2, 1])), x @ x.transpose(0, 2, 1), "float32", "matmul")
    assert_close(tf.nn.softmax(v), round_to(_softmax_ref(x, -1, False), "float32"), "float32", "softmax")
    np.testing.assert_array_equal(tf.argmax(v, 2).numpy(), x.argmax(2))
    assert_bits_equal(tf.where(v > 0, v, -v).numpy(), np.abs(x))
    assert_bits_equal(v[1:3, ::2, ::-1].numpy(), x[1:3, ::2, ::-1])
    assert_bits_equal(tf.broadcast_to(v[1:2], [3, 4, 6]).numpy(), np.broadcast_to(x[1:2], (3, 4, 6)))
    if v.device.endswith("CPU:0"):  # a GPU tensor has no host buffer, and NumPy reads host DLPack only
        assert_bits_equal(np.asarray(memoryview(v)), x)
        assert_bits_equal(np.from_dlpack(v), x)
    r = tf.reshape(v, [-1])[5:]  # a view of a view
    assert_bits_equal(r.numpy(), x.reshape(-1)[5:])
    assert_bits_equal(tf.stack([r, r]).numpy(), np.stack([x.reshape(-1)[5:]] * 2))


def test_concurrent_ops_from_python_threads(rng):
    """Heavy ops release the GIL; several Python threads share the host pool (a caller
    that finds it busy runs serially) and must all get exact results."""
    import threading

    a = rng.standard_normal((512, 512)).astype(np.float32)
    h = a.astype(np.float16)
    expected_add = a + a[::-1]
    expected_cast = a.astype(np.float16)
    expected_max = a.max(0)
    errors = []

    def work():
        try:
            ta, th = tf.constant(a), tf.constant(h)
            for _ in range(10):
                assert_bits_equal((ta + tf.constant(a[::-1])).numpy(), expected_add)
                assert_bits_equal(tf.cast(ta, "float16").numpy(), expected_cast)
                assert_bits_equal(tf.reduce_max(ta, 0).numpy(), expected_max)
                assert_bits_equal(tf.abs(th).numpy(), np.abs(h))
                try:
                    tf.constant([1, 2]) // 0
                except ValueError as e:
                    assert "division by zero" in str(e)  # errors are per thread
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert not any(th.is_alive() for th in threads), "a thread hung"
    assert not errors, errors[0]


def test_first_threaded_op_in_a_fresh_process_completes(tmp_path):
    """Regression: the first op large enough for the host pool used to deadlock."""
    code = ("import mixprec as tf, numpy as np; tf._core.set_num_threads(2);"
            "x = tf.random.uniform([1 << 20]); print(float(tf.reduce_sum(x)) > 0)")
    # run outside the source tree, so that the installed package is imported
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"


# ------------------------------------------------------------------ the tripwire

DEDICATED = {
    "all_reduce": "test_all_reduce_op",
    "batch_norm": "test_batch_norm_op",
    "cast": "test_identity_stop_gradient_and_cast",  # bit-exactness: test_casts.py
    "identity": "test_identity_stop_gradient_and_cast",
    "stop_gradient": "test_identity_stop_gradient_and_cast",
    "where": "test_where",
    "reduce_sum": "test_reductions_every_axis_subset",
    "reduce_mean": "test_reductions_every_axis_subset",
    "reduce_max": "test_reductions_every_axis_subset",
    "reduce_min": "test_reductions_every_axis_subset",
    "reduce_prod": "test_reductions_every_axis_subset",
    "reduce_all": "test_bool_reductions_every_axis_subset",
    "reduce_any": "test_bool_reductions_every_axis_subset",
    "argmax": "test_argmax_argmin",
    "argmin": "test_argmax_argmin",
    "matmul": "test_matmul",
    "matmul_bias_act": "test_matmul_bias_act",
    "softmax": "test_softmax_along_axes",
    "log_softmax": "test_softmax_along_axes",
    "reshape": "test_reshape",
    "transpose": "test_transpose",
    "concat": "test_concat",
    "stack": "test_stack_and_unstack",
    "broadcast_to": "test_broadcast_to",
    "fill": "test_fill_zeros_ones",
    "range": "test_range",
    "one_hot": "test_one_hot",
}
# ops reached without a function of their own in mixprec._core
NO_PYTHON_ENTRY = {
    "strided_slice": "test_strided_slice_via_getitem",
    "strided_slice_grad": None,  # backward of StridedSlice: tested with the tape
    "random_uniform": "test_random_moments_and_bounds",
    "random_normal": "test_random_moments_and_bounds",
    "truncated_normal": "test_random_moments_and_bounds",
    # convolution and pooling: _core.window_op; grids in tests/test_nn_conv.py
    "conv2d_bias_act": "test_conv2d_bias_act_op",
    "batch_moments": "test_batch_stats_ops",
    "batch_moments_grad": "test_batch_stats_ops",
    "batch_norm_grad_sums": "test_batch_stats_ops",
    "conv2d": "test_window_ops",
    "conv2d_backprop_input": "test_window_ops",
    "conv2d_backprop_filter": "test_window_ops",
    "max_pool": "test_window_ops",
    "max_pool_grad": "test_window_ops",
    "avg_pool": "test_window_ops",
    "avg_pool_grad": "test_window_ops",
    "max_pool_grad_grad": "test_window_ops",
}


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("channels_first", [False, True])
def test_batch_norm_op(dt, channels_first):
    """BatchNorm(x, scale, offset, mean, variance): float32 statistics (float64 for float64
    x), one rounding into x's dtype; bad statistics are refused."""
    rng = np.random.default_rng(12)
    x = round_to(rng.standard_normal((2, 3, 4, 5)) * 2, dt)
    c = x.shape[1] if channels_first else x.shape[-1]
    sdt = np.float64 if dt == "float64" else np.float32
    s, o, m = (rng.standard_normal(c).astype(sdt) for _ in range(3))
    v = rng.uniform(0.5, 2, c).astype(sdt)
    y = _core.batch_norm(tf.constant(x.astype(np_of(dt))), s, o, m, v, 1e-3, channels_first)
    shape = (1, c, 1, 1) if channels_first else (c,)
    a = (1 / np.sqrt(v.astype(np.float64) + 1e-3) * s).reshape(shape)
    e = x * a + (o.reshape(shape) - m.reshape(shape) * a)
    assert y.dtype == dt
    assert_close(y, round_to(e, dt), dt, "convolution")
    with pytest.raises(ValueError, match=r"mean must have shape"):
        _core.batch_norm(tf.constant(x.astype(np_of(dt))), s, o, m[:-1], v, 1e-3, channels_first)
    if dt != "float64":
        with pytest.raises(TypeError, match="float32"):
            _core.batch_norm(tf.constant(x.astype(np_of(dt))), s, o, tf.constant(m.astype(np.float64)), v, 1e-3,
                             channels_first)


def test_window_ops():
    """Each convolution/pooling op of ops.def once through _core.window_op (float64) against
    NumPy; the backprop ops against the adjoint identity <op(a), b> = <a, op^T(b)>."""
    from test_nn_conv import ref_conv2d, ref_pool

    codes = {row[2]: row[0] for row in _core.op_table()}
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 5, 6, 4))
    f = rng.standard_normal((3, 2, 2, 6))  # two groups
    pads = (1, 1, 0, 1)  # SAME for a 3x2 window, stride 1
    run = lambda name, ins, win, shape=None: _core.window_op(  # noqa: E731
        codes[name], ins, (1, 1), win, 1, (0, 0, 0, 0), False, shape).numpy()
    y = run("conv2d", (tf.constant(x), tf.constant(f)), (1, 1))
    np.testing.assert_allclose(y, ref_conv2d(x, f, (1, 1), (1, 1), pads, False), rtol=1e-12, atol=1e-12)
    dy = rng.standard_normal(y.shape)
    dx = run("conv2d_backprop_input", (tf.constant(f), tf.constant(dy)), (1, 1), x.shape)
    df = run("conv2d_backprop_filter", (tf.constant(x), tf.constant(dy)), (1, 1), f.shape)
    assert math.isclose(np.sum(y * dy), np.sum(x * dx), rel_tol=1e-12)
    assert math.isclose(np.sum(y * dy), np.sum(f * df), rel_tol=1e-12)
    for kind in ("max", "avg"):
        p = run(kind + "_pool", (tf.constant(x),), (3, 2))
        np.testing.assert_allclose(p, ref_pool(x, (3, 2), (1, 1), pads, False, kind), rtol=1e-12)
        dp = rng.standard_normal(p.shape)
        if kind == "avg":  # linear: the adjoint identity
            g = run("avg_pool_grad", (tf.constant(dp),), (3, 2), x.shape)
            assert math.isclose(np.sum(p * dp), np.sum(x * g), rel_tol=1e-12)
        else:  # piecewise linear: the same identity holds at x
            g = run("max_pool_grad", (tf.constant(x), tf.constant(p), tf.constant(dp)), (3, 2))
            assert math.isclose(np.sum(p * dp), np.sum(x * g), rel_tol=1e-12)
            gx = rng.standard_normal(x.shape)  # MaxPoolGradGrad is MaxPoolGrad's adjoint in dy
            gg = run("max_pool_grad_grad", (tf.constant(x), tf.constant(gx)), (3, 2))
            assert gg.shape == p.shape
            assert math.isclose(np.sum(gg * dp), np.sum(gx * g), rel_tol=1e-12)


def test_all_reduce_op():
    """AllReduce (CollectiveReduceV2): the replicas' sum, every replica the same bits; one
    replica is the identity; only floats; the rank must belong to the communicator.
    Gradients: tests/test_tape.py and tests/distribute/test_keras.py."""
    import threading

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    one = _core.comm_threads(1, 30.0)
    np.testing.assert_array_equal(_core.all_reduce(one, 0, tf.constant(x)).numpy(), x)
    with pytest.raises(tf.errors.InvalidArgumentError, match="floating-point"):
        _core.all_reduce(one, 0, tf.constant([1, 2]))
    with pytest.raises(ValueError, match="rank 1"):
        _core.all_reduce(one, 1, tf.constant(x))
    two = _core.comm_threads(2, 30.0)
    parts = [x, x * 0.5 - 1]
    outs = [None, None]

    def replica(r):
        outs[r] = _core.all_reduce(two, r, tf.constant(parts[r], "float64")).numpy()

    threads = [threading.Thread(target=replica, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for o in outs:
        np.testing.assert_array_equal(o, parts[0].astype(np.float64) + parts[1])


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("nchw", [False, True])
@pytest.mark.parametrize("act", [0, 1])
def test_conv2d_bias_act_op(dt, nchw, act):
    """Conv2D + bias (+ ReLU) in one op against a float64 NumPy reference of the same chain
    (grouped, strided, dilated, explicit padding): 16-bit accumulates, adds and activates in
    float32 and rounds once; NaN and infinities of x reach the output."""
    from test_nn_conv import ref_conv2d

    code = {row[2]: row[0] for row in _core.op_table()}["conv2d_bias_act"]
    rng = np.random.default_rng(13)
    x = round_to(rng.standard_normal((2, 4, 7, 6) if nchw else (2, 7, 6, 4)), dt)
    f = round_to(rng.standard_normal((3, 2, 2, 6)) * 0.5, dt)  # two groups
    b = round_to(rng.standard_normal(6), dt)
    pads = (1, 0, 2, 1)
    t = lambda a: tf.constant(a.astype(NP_DTYPE[dt]))  # noqa: E731
    y = _core.window_op(code, (t(x), t(f), t(b)), (2, 1), (1, 2), 2, pads, nchw, None, act)
    e = ref_conv2d(x, f, (2, 1), (1, 2), pads, nchw) + b.reshape((1, 6, 1, 1) if nchw else (6,))
    if act:
        e = np.maximum(e, 0)
    assert y.dtype == dt
    assert_close(y, round_to(e, dt), dt, "convolution")
    with pytest.raises(ValueError, match=r"bias must have shape \[6\]"):
        _core.window_op(code, (t(x), t(f), t(b[:5])), (2, 1), (1, 2), 2, pads, nchw, None, act)
    with pytest.raises(ValueError, match="activation"):
        _core.window_op(code, (t(x), t(f), t(b)), (2, 1), (1, 2), 2, pads, nchw, None, 7)
    xn = x.copy()
    xn[0, 0, 0, 0] = np.inf  # an infinity reaches the output (ReLU keeps +inf)
    yn = _core.window_op(code, (t(xn), t(np.abs(f)), t(b)), (1, 1), (1, 1), 1, (0, 0, 0, 0), nchw,
                         None, act).numpy().astype(np.float64)
    assert np.isinf(yn).any() and np.isfinite(yn).sum() < yn.size


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("channels_first", [False, True])
def test_batch_stats_ops(dt, channels_first):
    """BatchMoments, BatchNormGradSums and BatchMomentsGrad against float64 NumPy: float64
    sums, statistics in float32 (float64 for float64 x), values rounded once; bad statistics
    are refused."""
    codes = {row[2]: row[0] for row in _core.op_table()}
    rng = np.random.default_rng(15)
    x = round_to(rng.standard_normal((3, 4, 5, 2)) * 2 + 1, dt)
    dy = round_to(rng.standard_normal(x.shape), dt)
    axes = (0, 2, 3) if channels_first else (0, 1, 2)
    c = x.shape[1] if channels_first else x.shape[-1]
    n = x.size // c
    sdt = np.float64 if dt == "float64" else np.float32
    shape = (1, c, 1, 1) if channels_first else (c,)
    t = lambda a: tf.constant(a.astype(NP_DTYPE[dt]))  # noqa: E731
    run = lambda name, ins: _core.batch_stats(codes[name], ins, channels_first)  # noqa: E731
    x64, dy64 = np.asarray(x, np.float64), np.asarray(dy, np.float64)
    st = run("batch_moments", (t(x),))
    assert st.dtype == sdt and tuple(st.shape) == (2, c)
    e = np.stack([x64.mean(axes), x64.var(axes)])
    assert_close(st, round_to(e, "float64" if dt == "float64" else "float32"), "float64" if dt == "float64" else "float32", "reduction")
    m = e[0].astype(sdt)
    sums = run("batch_norm_grad_sums", (t(x), t(dy), tf.constant(m)))
    es = np.stack([dy64.sum(axes), (dy64 * (x64 - m.astype(np.float64).reshape(shape))).sum(axes)])
    assert_close(sums, round_to(es, "float64" if dt == "float64" else "float32"),
                 "float64" if dt == "float64" else "float32", "reduction")
    g = rng.standard_normal((2, c)).astype(sdt)
    dx = run("batch_moments_grad", (t(x), tf.constant(np.stack([m, m]).astype(sdt)), tf.constant(g)))
    ed = (g[0].astype(np.float64).reshape(shape) +
          2 * g[1].astype(np.float64).reshape(shape) * (x64 - m.astype(np.float64).reshape(shape))) / n
    assert dx.dtype == dt
    assert_close(dx, round_to(ed, dt), dt, "reduction")  # three roundings before the last
    with pytest.raises(ValueError, match="must hold"):
        run("batch_norm_grad_sums", (t(x), t(dy), tf.constant(m[:-1])))
    with pytest.raises(ValueError, match="x's shape"):
        run("batch_norm_grad_sums", (t(x), t(dy[:1]), tf.constant(m)))


def test_conv2d_layer_runs_the_fused_op():
    """Keras Conv2D with a bias and relu/linear calls Conv2D+bias+ReLU as one op; its values
    and gradients match the unfused chain."""
    from mixprec import keras

    rng = np.random.default_rng(14)
    x = tf.constant(rng.standard_normal((2, 6, 6, 3)).astype(np.float32))
    for act in ("relu", None):
        layer = keras.layers.Conv2D(4, 3, activation=act, bias_initializer="random_normal")
        with tf.GradientTape() as tape:
            y = layer(x)
            loss = tf.reduce_sum(y * y)
        g = tape.gradient(loss, layer.trainable_variables)
        k, b = tf.constant(layer.kernel.numpy()), tf.constant(layer.bias.numpy())
        with tf.GradientTape() as tape:
            tape.watch([k, b])
            r = tf.nn.bias_add(tf.nn.conv2d(x, k, 1, "VALID"), b)
            r = tf.nn.relu(r) if act else r
            loss = tf.reduce_sum(r * r)
        gr = tape.gradient(loss, [k, b])
        assert_close(y, r.numpy(), "float32", "convolution")
        for a, b in zip(g, gr):
            assert_close(a, b.numpy(), "float32", "convolution")


def test_every_op_in_ops_def_has_a_test():
    table = _core.op_table()
    assert len(table) == len({row[2] for row in table})
    names = {row[2] for row in table}
    missing = []
    for code, tfname, pyname, nin, amp in table:
        if pyname in NO_PYTHON_ENTRY:
            assert not hasattr(_core, pyname), (
                "%s now has a Python entry: give it a row in ROWS or DEDICATED" % pyname)
            test = NO_PYTHON_ENTRY[pyname]
        elif pyname in ROWS:
            assert ROWS[pyname].call is not None
            test = "test_elementwise_matches_numpy" if pyname in {r.name for r in ELEMENTWISE} \
                else "test_logical_ops"
        else:
            test = DEDICATED.get(pyname)
            if test is None:
                missing.append("%s (%s)" % (pyname, tfname))
                continue
        if test is not None:
            assert callable(globals().get(test)), "%s names a missing test %s" % (pyname, test)
    assert not missing, "ops without a test row: " + ", ".join(missing)
    stale = (set(ROWS) | set(DEDICATED) | set(NO_PYTHON_ENTRY)) - names
    assert not stale, "test rows for ops that no longer exist: %s" % sorted(stale)


# ------------------------------------------------------------------ fused softmax cross-entropy


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_softmax_cross_entropy_matches_numpy(dtype):
    rng = np.random.default_rng(7)
    logits = (rng.standard_normal((37, 11)) * 4).astype(np.float32)
    labels = rng.integers(0, 11, 37)
    x = tf.cast(tf.constant(logits), dtype)
    lx = np.asarray(x.numpy(), np.float64)
    lse = np.log(np.exp(lx - lx.max(-1, keepdims=True)).sum(-1)) + lx.max(-1)
    want = lse - lx[np.arange(37), labels]
    got = _core.sparse_softmax_cross_entropy_with_logits(labels, x)
    assert got.dtype.name == dtype and got.shape == (37,)
    assert_close(got.numpy(), want, dtype, "softmax")
    onehot = np.eye(11)[labels]
    soft = 0.7 * onehot + 0.3 / 11
    want_dense = (soft * (lse[:, None] - lx)).sum(-1)
    got_dense = _core.softmax_cross_entropy_with_logits(tf.cast(soft, dtype), x)
    assert_close(got_dense.numpy(), want_dense, dtype, "softmax")


def test_softmax_cross_entropy_errors():
    logits = tf.zeros([4, 3])
    with pytest.raises(ValueError, match="label value of 3"):
        _core.sparse_softmax_cross_entropy_with_logits([0, 1, 2, 3], logits)
    with pytest.raises(tf.errors.InvalidArgumentError, match="do not match"):
        _core.sparse_softmax_cross_entropy_with_logits([0, 1], logits)
    with pytest.raises(tf.errors.InvalidDTypeError, match="integer class ids"):
        _core.sparse_softmax_cross_entropy_with_logits([0.0, 1.0, 2.0, 0.0], logits)
    with pytest.raises(tf.errors.InvalidDTypeError):
        _core.softmax_cross_entropy_with_logits(tf.zeros([4, 3], "float16"), logits)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, -3])
def test_softmax_cross_entropy_axis(axis):
    """The class axis is moved to the end: the other dimensions keep their order (a swap
    with the last one gave a (4, 3) result for (2, 3, 4) logits and axis 0)."""
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((2, 3, 4)).astype(np.float32)
    labels = rng.uniform(0, 1, (2, 3, 4)).astype(np.float32)
    lx = logits.astype(np.float64)
    m = lx.max(axis, keepdims=True)
    log_softmax = lx - m - np.log(np.exp(lx - m).sum(axis, keepdims=True))
    want = -(labels * log_softmax).sum(axis)
    got = tf.nn.softmax_cross_entropy_with_logits(labels, logits, axis=axis)
    assert got.shape == want.shape
    assert_close(got.numpy(), want, "float32", "softmax")


DEDICATED["sparse_softmax_cross_entropy_with_logits"] = \
    "test_softmax_cross_entropy_matches_numpy"
DEDICATED["softmax_cross_entropy_with_logits"] = "test_softmax_cross_entropy_matches_numpy"


def test_set_num_threads_shrinks_and_grows_the_pool():
    prev = _core.get_num_threads()
    try:
        _core.set_num_threads(2)
        assert _core._threads_used(2) == 2  # the pool is up with one worker
        _core.set_num_threads(1)
        assert _core._threads_used(2) == 1  # the started worker sits the loop out
        _core.set_num_threads(2)
        assert _core._threads_used(2) == 2
    finally:
        _core.set_num_threads(prev)


def test_concat_of_one_tensor_is_that_tensor():
    # TensorFlow wraps a lone value in a list; iterating it joined its rows: (2, 3) -> (6,)
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    for axis in (0, 1, -1):
        got = tf.concat(tf.constant(x), axis)
        assert got.shape == (2, 3)
        np.testing.assert_array_equal(got.numpy(), x)
    np.testing.assert_array_equal(tf.concat([tf.constant(x)] * 2, 1).numpy(), np.concatenate([x, x], 1))


@pytest.mark.parametrize("kw", [dict(on_value=300, dtype="uint8"), dict(off_value=-1, dtype="uint8"),
                                dict(on_value=0.5, dtype="int32"), dict(on_value=2**60, dtype="int64")])
def test_one_hot_values_must_convert_exactly_to_an_integer_dtype(kw):
    # 300 as uint8 used to saturate to 255, 2**53 + 1 to round
    with pytest.raises(TypeError, match="does not convert exactly"):
        tf.one_hot([1, 0], 3, **kw)


# ------------------------------------------------------------------ Shape and Range of tensor bounds


def test_shape_op_and_range_of_tensor_bounds():
    x = tf.zeros([2, 0, 5], tf.float16)
    for dt in ("int32", "int64"):
        s = _core.shape_op(x, dt)
        assert s.dtype.name == dt and s.numpy().tolist() == [2, 0, 5]
    assert _core.shape_op(tf.constant(3.0)).numpy().tolist() == []
    with pytest.raises(tf.errors.InvalidArgumentError, match="out_type must be int32 or int64"):
        _core.shape_op(x, "float32")
    cases = [(0, 5, 1, "int32"), (1, 10, 3, "int64"), (5, -2, -2, "int32"), (0.5, 2.0, 0.4, "float32"),
             (3, 3, 1, "int32"), (-1.0, 1.0, 0.5, "float64")]
    for s, l, d, dt in cases:
        got = _core.range_t(*(tf.constant(v, dt) for v in (s, l, d)))
        want = tf.range(*(tf.constant(v, dt) for v in (s, l, d)))  # the eager op, host bounds
        assert got.dtype.name == dt and got.shape == want.shape
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        if dt.startswith("int"):
            np.testing.assert_array_equal(got.numpy(), np.arange(s, l, d))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Requires delta != 0"):
        _core.range_t(tf.constant(0), tf.constant(3), tf.constant(0))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Requires start <= limit"):
        _core.range_t(tf.constant(4), tf.constant(3), tf.constant(1))
    with pytest.raises(tf.errors.InvalidArgumentError, match="limit has dtype int64"):
        _core.range_t(tf.constant(0), tf.constant(3, tf.int64), tf.constant(1))
    with pytest.raises(ValueError, match="must be a scalar"):
        _core.range_t(tf.constant(0), tf.constant([3]), tf.constant(1))


def test_index_of_a_tensor_index():
    x = tf.constant(np.arange(12, dtype=np.float32).reshape(4, 3))
    for i, dt in [(0, "int32"), (3, "int64"), (-1, "int32"), (-4, "int64")]:
        np.testing.assert_array_equal(_core.index_t(x, tf.constant(i, dt)).numpy(), x.numpy()[i])
    for i in (4, -5):   # TensorFlow's message for x[i] out of range
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="slice index %d of dimension 0 out of bounds." % i):
            _core.index_t(x, tf.constant(i))
    with pytest.raises(TypeError, match="must be int32 or int64"):
        _core.index_t(x, tf.constant(1.0))
    with pytest.raises(tf.errors.InvalidArgumentError, match="only 0 dims"):
        _core.index_t(tf.constant(1.0), tf.constant(0))


DEDICATED["index_t"] = "test_index_of_a_tensor_index"
DEDICATED["shape_op"] = "test_shape_op_and_range_of_tensor_bounds"
DEDICATED["range_t"] = "test_shape_op_and_range_of_tensor_bounds"


def test_gather_matches_numpy():
    """tf.gather (GatherV2, batch_dims 0) for every dtype, axis and index rank, against
    np.take; its dense gradient op (gather_grad) against np.add.at; TensorFlow's errors."""
    rng = np.random.default_rng(3)
    params = rng.uniform(-4, 4, (4, 5, 3))
    for dt in ("float16", "bfloat16", "float32", "float64", "int32", "int64", "uint8", "bool"):
        p = params.astype(NP_DTYPE[dt]) if dt != "bool" else params > 0
        for axis in (0, 1, 2, -1, -3):
            n = p.shape[axis]
            for ind in ([1, 0, 1], [[n - 1, 0], [2, 2]], 2, np.zeros((0,), np.int64)):
                for idt in ("int32", "int64"):
                    i = np.asarray(ind).astype(idt)
                    got = tf.gather(tf.constant(p), tf.constant(i), axis=axis)
                    want = np.take(p, i, axis=axis)
                    assert got.dtype.name == dt
                    assert got.shape == want.shape
                    np.testing.assert_array_equal(np.asarray(got.numpy()), want)
    # python lists and a scalar axis tensor
    np.testing.assert_array_equal(tf.gather([10, 20, 30], [2, 2, 0]).numpy(), [30, 30, 10])
    np.testing.assert_array_equal(tf.nn.embedding_lookup(tf.constant(params), [[3], [0]]).numpy(),
                                  params[[[3], [0]]])
    # the gradient op: slices of dy summed into zeros of the params' shape (repeats add)
    dy = rng.uniform(-1, 1, (2, 3, 3))
    idx = np.array([2, 2, 0])
    for dt in ("float16", "bfloat16", "float32", "float64"):
        got = _core.gather_grad(tf.constant(dy.astype(NP_DTYPE[dt])), tf.constant(idx), 1, 5)
        want = np.zeros((2, 5, 3))
        np.add.at(want, (slice(None), idx), dy.astype(NP_DTYPE[dt]).astype(np.float64))
        assert got.dtype.name == dt
        assert_close(got.numpy(), want.astype(NP_DTYPE[dt]), dt, "reduction")
    # TensorFlow's errors
    x = tf.constant(np.arange(12.0).reshape(4, 3))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = 5 is not in \[0, 4\)"):
        tf.gather(x, [1, 5])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[0,1\] = -1 is not in \[0, 4\)"):
        tf.gather(x, [[0, -1]])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = 3 is not in \[0, 3\)"):
        tf.gather(x, [0, 3], axis=1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="at least rank 3 but is rank 2"):
        tf.gather(x, [0], axis=2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Expected axis in the range"):
        tf.gather(x, [0], axis=-3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Tindices"):
        tf.gather(x, tf.constant([0.5]))
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.gather(tf.constant(1.0), [0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="should be equal to indices.shape"):
        tf.gather(x, [[0]], batch_dims=1)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[0\] = 7 is not in \[0, 4\)"):
        tf.nn.embedding_lookup(x, [7])
    with pytest.raises(tf.errors.InvalidArgumentError, match="does not match"):
        _core.gather_grad(tf.constant(dy), tf.constant([0, 1]), 1, 5)


DEDICATED["gather"] = "test_gather_matches_numpy"
DEDICATED["gather_grad"] = "test_gather_matches_numpy"
DEDICATED["cumsum"] = "test_cumsum_op_matches_numpy"

ARRAY_DTYPES = ("float16", "bfloat16", "float32", "float64", "int32", "int64", "uint8", "int8")


def _arr(rng, shape, dt):
    a = rng.integers(-3, 4, shape) if dt != "uint8" else rng.integers(0, 7, shape)
    return a.astype(NP_DTYPE[dt]) if dt in NP_DTYPE else a.astype(dt)


def test_array_ops_match_numpy():
    """The array ops of csrc/ops_array.c and csrc/ops_sort.c on every dtype against NumPy
    (the TensorFlow-facing checks: tests/test_array_extra.py): GatherNd, TensorScatter*,
    TopKV2's stable order, Unique, Where, ReverseV2, Roll."""
    rng = np.random.default_rng(11)
    for dt in ARRAY_DTYPES:
        p = _arr(rng, (4, 3, 2), dt)
        i = np.array([[[3, 0], [1, 2]], [[0, 0], [3, 2]]])
        got = tf.gather_nd(tf.constant(p), tf.constant(i))
        assert got.dtype.name == dt
        np.testing.assert_array_equal(np.asarray(got.numpy()), p[i[..., 0], i[..., 1]])
        rows = np.array([[2], [0], [2], [3]])
        upd = _arr(rng, (4, 3, 2), dt)
        for mode, fn in (("update", None), ("add", np.add), ("sub", np.subtract),
                         ("min", np.minimum), ("max", np.maximum)):
            want = p.astype(np.float64)
            for j, r in enumerate(rows[:, 0]):
                want[r] = upd[j] if fn is None else fn(want[r], upd[j].astype(np.float64))
            got = getattr(tf, "tensor_scatter_nd_" + mode)(tf.constant(p), tf.constant(rows),
                                                            tf.constant(upd))
            assert got.dtype.name == dt
            if dt in ("float16", "bfloat16"):  # rounded after each update, as TensorFlow
                assert_close(got.numpy(), want.astype(NP_DTYPE[dt]), dt, "reduction")
            elif dt in ("uint8", "int8", "int32"):
                np.testing.assert_array_equal(got.numpy(), want.astype(np.int64).astype(dt))
            else:
                np.testing.assert_array_equal(got.numpy(), want.astype(NP_DTYPE.get(dt, dt)))
        x = _arr(rng, (3, 7), dt)
        for desc in (0, 1):
            key = -x.astype(np.float64) if desc else x.astype(np.float64)
            want = np.argsort(key, axis=-1, kind="stable")
            got = _core.array_op("top_k_indices", [tf.constant(x)], 7, desc, tf.int32, None)
            assert got.dtype == tf.int32
            np.testing.assert_array_equal(got.numpy(), want)
        v = _arr(rng, (9,), dt)
        y, idx = tf.unique(tf.constant(v))
        first = sorted(np.unique(v.astype(np.float64), return_index=True)[1])
        np.testing.assert_array_equal(np.asarray(y.numpy()), v[first])
        np.testing.assert_array_equal(np.asarray(y.numpy())[idx.numpy()], v)
        np.testing.assert_array_equal(tf.where(tf.constant(p)).numpy(), np.argwhere(p))
        np.testing.assert_array_equal(np.asarray(tf.reverse(tf.constant(p), [0, 2]).numpy()),
                                      p[::-1, :, ::-1])
        np.testing.assert_array_equal(np.asarray(tf.roll(tf.constant(p), [5, -1], [0, 1]).numpy()),
                                      np.roll(p, (5, -1), (0, 1)))
    # NaN sorts above +inf in both directions' orders, ties keep their positions
    x = tf.constant([1.0, np.nan, -np.inf, 1.0, np.inf])
    np.testing.assert_array_equal(tf.argsort(x).numpy(), [2, 0, 3, 4, 1])
    np.testing.assert_array_equal(tf.argsort(x, direction="DESCENDING").numpy(), [1, 4, 0, 3, 2])


for _n in ("gather_nd", "tensor_scatter_update", "tensor_scatter_add", "tensor_scatter_sub",
           "tensor_scatter_min", "tensor_scatter_max", "top_k_indices", "unique", "where_indices",
           "reverse", "roll"):
    DEDICATED[_n] = "test_array_ops_match_numpy"


def test_cumsum_op_matches_numpy():
    """_core.cumsum (tf.cumsum; the wider checks: tests/test_array_ops.py): sequential sums,
    integers exact with wrap, 16-bit rounded once from a float64 sum."""
    x = np.arange(1, 25, dtype=np.int32).reshape(2, 3, 4)
    for axis in (0, 1, 2, -1):
        np.testing.assert_array_equal(_core.cumsum(x, axis).numpy(), np.cumsum(x, axis, dtype=np.int32))
    big = np.array([2**31 - 1, 1], np.int32)
    np.testing.assert_array_equal(_core.cumsum(big).numpy(), [2**31 - 1, -2**31])  # wraps as int32
    h = np.full(4096, 0.1, np.float16)
    want = np.cumsum(h.astype(np.float64)).astype(np.float16)
    np.testing.assert_array_equal(_core.cumsum(h).numpy(), want)
    np.testing.assert_array_equal(_core.cumsum(np.zeros((0, 3), np.float32), 0).numpy().shape, (0, 3))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Cumsum"):
        _core.cumsum(np.array([True]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"range \[-3, 3\), but got 3"):
        _core.cumsum(x, 3)


def test_tensor_bound_slices():
    """tf.strided_slice / tf.slice (STRIDED_SLICE_T, SLICE_T: the spec read from tensors) and
    their gradient op: values and errors as TensorFlow 2.21 printed them (literals)."""
    x = tf.reshape(tf.range(24, dtype=tf.float32), [4, 6])
    xn = x.numpy()
    ss = tf.strided_slice
    cases = [  # (result, TensorFlow's shape, numpy reference)
        (ss(x, [1, 0], [3, 6], [1, 2]), (2, 3), xn[1:3, 0:6:2]),
        (ss(x, [1, 0], [3, 6]), (2, 6), xn[1:3]),
        (ss(x, [1, 0], [2, 6], shrink_axis_mask=1), (6,), xn[1]),
        (ss(x, [0, 1, 0], [0, 2, 6], new_axis_mask=1), (1, 1, 6), xn[None, 1:2]),
        (ss(x, [0, 1], [0, 3], ellipsis_mask=1), (4, 2), xn[..., 1:3]),
        (ss(x, [1, 2], [3, 4], begin_mask=1, end_mask=2), (3, 4), xn[:3, 2:]),
        (ss(x, [-1, 0], [-5, 6], [-1, 3]), (4, 2), xn[::-1, ::3]),
        (ss(x, [-1, 0], [0, 6], shrink_axis_mask=1), (6,), xn[-1]),
        (ss(x, [1], [3]), (2, 6), xn[1:3]),
        (ss(x, [-10, 2], [10, 100]), (4, 4), xn[:, 2:]),
        (ss(x, [0, 1], [1, 2], new_axis_mask=1, shrink_axis_mask=1), (1, 1, 6), xn[None, 1:2]),
        (ss(x, tf.constant([1], tf.int64), tf.constant([3], tf.int64), tf.constant([1], tf.int64)),
         (2, 6), xn[1:3]),
        (tf.slice(x, [1, 2], [2, 3]), (2, 3), xn[1:3, 2:5]),
        (tf.slice(x, [1, 2], [-1, -1]), (3, 4), xn[1:, 2:]),
        (tf.slice(x, tf.constant([1, 2]), tf.constant([1, 1])), (1, 1), xn[1:2, 2:3]),
        (tf.slice(tf.zeros([0, 3]), [0, 1], [0, 2]), (0, 2), np.zeros((0, 2))),
    ]
    for got, shape, want in cases:
        assert tuple(got.shape) == shape and got.dtype == tf.float32
        np.testing.assert_array_equal(got.numpy(), want)
    IA = tf.errors.InvalidArgumentError
    bad = [
        (lambda: tf.slice(x, [1, 2], [4, 1]), IA, "Expected size[0] in [0, 3], but got 4"),
        (lambda: tf.slice(x, [-1, 2], [1, 1]), IA, "Expected begin[0] in [0, 4], but got -1"),
        (lambda: tf.slice(x, [1, 2], [-2, 1]), IA, "Expected size[0] in [0, 3], but got -2"),
        (lambda: tf.slice(x, [1], [1, 1]), IA, "Expected begin and size arguments to be 1-D tensors "
         "of size 2, but got shapes [1] and [2] instead."),
        (lambda: tf.slice(x, [1.0, 2.0], [1, 1]), IA, "Value for attr 'Index' of float is not in the "
         "list of allowed values: int32, int64"),
        (lambda: tf.slice(x, tf.constant([1, 2]), tf.constant([1, 1], tf.int64)), IA,
         "cannot compute Slice as input #2(zero-based) was expected to be a int32 tensor but is a "
         "int64 tensor"),
        (lambda: tf.slice(tf.zeros([0, 3]), [1, 0], [0, 1]), IA,
         "Expected begin[0] == 0 (got 1) and size[0] == 0 (got 0) when input.dim_size(0) == 0"),
        (lambda: ss(x, [0, 0], [1, 1], [0, 1]), IA, "strides[0] must be non-zero"),
        (lambda: ss(x, [0, 0], [1], [1, 1]), IA, "Expected begin, end, and strides to be 1D equal size "
         "tensors, but got shapes [2], [1], and [2] instead."),
        (lambda: ss(x, [9, 0], [10, 6], shrink_axis_mask=1), IA,
         "slice index 9 of dimension 0 out of bounds."),
        (lambda: ss(x, [0, 0], [1, 1], ellipsis_mask=3), IA, "Multiple ellipses in slice spec not allowed"),
        (lambda: ss(x, [0, 0, 0], [1, 1, 1]), IA, "Index out of range using input dim 2; input has only 2 dims"),
        (lambda: ss(x, [1.0], [3.0]), IA, "Value for attr 'Index' of float is not in the list of allowed "
         "values: int16, int32, int64"),
        (lambda: ss(x, 1, 3), IA, "but got shapes [], [], and [] instead."),
        (lambda: ss(x, [[1]], [[3]]), IA, "but got shapes [1,1], [1,1], and [1,1] instead."),
        (lambda: x[::0], IA, "strides[0] must be non-zero"),
    ]
    for f, exc, msg in bad:
        with pytest.raises(exc, match=re.escape(msg)):
            f()
    # the gradient op: dy into zeros of x's shape at the slice (Slice's form: strides None)
    dy = tf.ones([2, 3])
    g = _core.strided_slice_t_grad(dy, x, [1, 0], [3, 6], [1, 2])
    want = np.zeros((4, 6), np.float32)
    want[1:3, 0:6:2] = 1
    np.testing.assert_array_equal(g.numpy(), want)
    g = _core.strided_slice_t_grad(dy, x, [1, 2], [2, 3])
    want = np.zeros((4, 6), np.float32)
    want[1:3, 2:5] = 1
    np.testing.assert_array_equal(g.numpy(), want)


DEDICATED["strided_slice_t"] = "test_tensor_bound_slices"
DEDICATED["slice_t"] = "test_tensor_bound_slices"
DEDICATED["strided_slice_t_grad"] = "test_tensor_bound_slices"
# ------------------------------------------------------------------ tf.math special functions, scans, segments

def test_special_functions_match_tensorflow():
    """erfinv, ndtri, digamma, igamma(c), zeta and polygamma: TensorFlow 2.21's float32 outputs
    (recorded) including its edge values, and float64 identities with libm's erf / lgamma."""
    f32 = "float32"
    cases = [
        (_core.erfinv, ([-1.0, 1.0, 1.5, 0.0, np.nan, 0.5],), [-np.inf, np.inf, np.nan, 0.0, np.nan, 0.47693628]),
        (_core.ndtri, ([0.0, 1.0, 1.5, 0.5, 0.025],), [-np.inf, np.inf, np.nan, 0.0, -1.9599639]),
        (_core.digamma, ([0.0, -1.0, -0.5, 1.0, np.inf, -np.inf, -2.5, 1e-3],),
         [np.nan, np.nan, 3.64899635e-02, -5.77215910e-01, np.inf, np.nan, 1.10315681e+00, -1.00057556e+03]),
        (_core.lgamma, ([0.0, -1.0, -0.5, 1.0, np.inf, -np.inf, -2.5],),
         [np.inf, np.inf, 1.2655121, 0.0, np.inf, np.inf, -0.05624371]),
        (_core.polygamma, ([0.0, 1.0, 2.0, 1.5, -1.0, 1.0], [1.0, 0.0, 2.5, 2.0, 2.0, -1.5]),
         [-0.5772159, np.inf, -0.23620404, np.nan, np.nan, 9.379247]),
        (_core.zeta, ([2.0, 2.0, 3.0, 2.0, 1.0, 2.0, 7.0, -7.0], [1.0, 0.0, -2.5, -2.0, 2.0, np.inf, 2.0, 2.0]),
         [1.644934, np.inf, 0.05410208, np.inf, np.inf, 0.0, 0.00834928, np.nan]),
        (_core.igamma, ([1.0, 0.0, 2.0, 0.5, np.inf, 1.0, 7.0, 0.0], [1.0, 1.0, 0.0, np.inf, 2.0, -1.0, 2.0, 0.0]),
         [0.6321205, np.nan, 0.0, 1.0, 0.0, np.nan, 0.00453381, 0.0]),
        (_core.igammac, ([1.0, 0.0, 2.0, 0.5, np.inf, 1.0, 7.0], [1.0, 1.0, 0.0, np.inf, 2.0, -1.0, 2.0]),
         [0.36787945, np.nan, 1.0, 0.0, 1.0, np.nan, 0.9954662]),
    ]
    for fn, args, want in cases:
        got = fn(*[tf.constant(np.array(a, np.float32)) for a in args])
        assert got.dtype.name == f32
        np.testing.assert_allclose(got.numpy(), np.array(want, np.float32), rtol=4e-6, atol=1e-7,
                                   err_msg=fn.__name__)
    # IgammaGradA (float64, TensorFlow's values), the series and the continued-fraction regimes
    got = _core.igamma_grad_a(tf.constant([0.5, 1.0, 2.5, 7.0, 3.0, 100.0, 0.2], "float64"),
                              tf.constant([1.0, 1e-3, 4.0, 2.0, 50.0, 90.0, 30.0], "float64"))
    np.testing.assert_allclose(got.numpy(), [-0.3898372643285106, -0.00732712545464492, -0.14765686908718975,
                                             -0.006164942014766201, -7.552056917446361e-19, -0.02461191684397851,
                                             -1.140501438159358e-14], rtol=1e-9)
    x = np.linspace(-0.999999, 0.999999, 2001)
    y = _core.erfinv(tf.constant(x)).numpy()
    assert_close(_erf(y), x, "float64", "transcendental")
    p = np.concatenate([np.logspace(-300, -1, 300), np.linspace(0.01, 0.99, 99)])
    z = _core.ndtri(tf.constant(p)).numpy()
    assert_close(0.5 * np.vectorize(math.erfc)(-z / SQRT2), p, "float64", "transcendental")
    # digamma is lgamma's derivative; zeta(2, 1) = pi^2 / 6; polygamma(1, 1) = zeta(2)
    xs = np.array([0.3, 1.7, 4.2, 12.5, -0.4, -3.7])
    h = 1e-6
    lg = np.vectorize(math.lgamma)
    fd = (lg(xs + h) - lg(xs - h)) / (2 * h)
    np.testing.assert_allclose(_core.digamma(tf.constant(xs)).numpy(), fd, rtol=1e-7, atol=1e-7)
    assert abs(float(_core.zeta(tf.constant(2.0, "float64"), tf.constant(1.0, "float64"))) - math.pi**2 / 6) < 1e-14
    # 16-bit: computed in float32, rounded once
    for dt in ("float16", "bfloat16"):
        got = _core.erfinv(tf.constant(np.array([0.5, -0.25], np_of(dt))))
        assert got.dtype.name == dt
        assert_close(got, round_to(np.array([0.47693628, -0.22531206]), dt), dt, "transcendental")
    with pytest.raises(tf.errors.InvalidArgumentError, match="not in the list of allowed values"):
        _core.zeta(tf.constant([2.0], "float16"), tf.constant([1.0], "float16"))
    with pytest.raises(tf.errors.InvalidArgumentError, match="not in the list of allowed values"):
        _core.nextafter(tf.constant([2.0], "bfloat16"), tf.constant([1.0], "bfloat16"))
    with pytest.raises(tf.errors.InvalidArgumentError):
        _core.erf(tf.constant([1, 2]))
    with pytest.raises(ValueError, match="division by zero"):
        tf.truncatediv(tf.constant([7]), tf.constant([0]))
    np.testing.assert_array_equal(tf.truncatediv(tf.constant([-2**31], "int32"), tf.constant([-1], "int32")).numpy(),
                                  [-2**31])


def _math_op(name, *inputs_and_attrs):
    code = {r[2]: r[0] for r in _core.op_table()}[name]
    n = 2 if name == "segment_reduce" else 1
    return _core.math_op(code, tuple(inputs_and_attrs[:n]), *inputs_and_attrs[n:])


def test_scan_ops_match_numpy():
    """Cumprod and CumulativeLogsumexp on every dtype they take, each axis, exclusive and
    reverse; TensorFlow's errors."""
    rng = np.random.default_rng(7)
    x = rng.uniform(0.5, 1.5, (3, 4, 5))
    for dt in FLOATS + ("int32", "int64", "int8", "uint8"):
        xd = round_to(x, dt) if dt in FLOATS else rng.integers(1, 4, x.shape).astype(dt)
        for axis in (0, 1, 2, -1):
            for ex in (0, 1):
                for rev in (0, 1):
                    w = np.flip(xd, axis) if rev else xd
                    if dt in FLOATS:
                        w = w.astype(np.float64)
                    want = np.cumprod(w, axis=axis, dtype=np.float64 if dt in FLOATS else np.int64)
                    if ex:
                        one = np.ones_like(np.take(want, [0], axis=axis))
                        want = np.concatenate([one, np.delete(want, -1, axis=axis)], axis=axis)
                    want = np.flip(want, axis) if rev else want
                    got = _math_op("cumprod", tf.constant(xd), axis, ex, rev)
                    assert got.dtype.name == dt
                    if dt in FLOATS:
                        assert_close(got, round_to(want, dt), dt, "reduction")
                        if dt != "float64" or True:
                            w2 = np.flip(xd, axis) if rev else xd
                            lse = np.logaddexp.accumulate(w2.astype(np.float64), axis=axis)
                            if ex:
                                ninf = np.full_like(np.take(lse, [0], axis=axis), -np.inf)
                                lse = np.concatenate([ninf, np.delete(lse, -1, axis=axis)], axis=axis)
                            lse = np.flip(lse, axis) if rev else lse
                            got = _math_op("cumulative_logsumexp", tf.constant(xd), axis, ex, rev)
                            assert_close(got, round_to(lse, dt), dt, "reduction")
                    else:
                        np.testing.assert_array_equal(got.numpy(), want.astype(dt))
    got = tf.math.cumulative_logsumexp(tf.constant([-np.inf, -np.inf, 1.0, np.inf, 2.0]))
    np.testing.assert_array_equal(got.numpy(), [-np.inf, -np.inf, 1.0, np.inf, np.inf])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"range \[-2, 2\), but got 2"):
        tf.math.cumprod(tf.ones([2, 3]), axis=2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="not in the list"):
        tf.math.cumulative_logsumexp(tf.constant([1, 2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="not in the list"):
        tf.math.cumprod(tf.constant([True]))


def test_segment_reduce_op():
    """Every kind, sorted and unsorted, against NumPy; TensorFlow's empty-segment values and
    errors (recorded from TensorFlow 2.21)."""
    rng = np.random.default_rng(5)
    data = rng.uniform(-3, 3, (7, 3))
    ids = np.array([0, 0, 2, 2, 2, 3, 5])
    refs = {0: np.sum, 1: np.mean, 2: np.max, 3: np.min, 4: np.prod,
            5: lambda v, axis: np.sum(v, axis) / np.sqrt(len(v))}
    for dt in FLOATS + ("int32", "int64"):
        d = round_to(data, dt) if dt in FLOATS else rng.integers(-5, 6, data.shape).astype(dt)
        for kind, ref in refs.items():
            if kind == 5 and dt not in FLOATS:
                continue
            for is_sorted in (1, 0):
                nseg = 7
                got = _math_op("segment_reduce", tf.constant(d), tf.constant(ids), kind, nseg, is_sorted)
                rows = 6 if is_sorted else nseg
                assert got.shape == (rows, 3) and got.dtype.name == dt
                for s in range(rows):
                    sel = d[ids == s]
                    if len(sel) == 0:
                        if kind == 4:
                            want = np.ones(3)
                        elif kind in (2, 3) and not is_sorted:
                            info = ml_dtypes.finfo(np_of(dt)) if dt in FLOATS else np.iinfo(dt)
                            want = np.full(3, info.min if kind == 2 else info.max,
                                           np.float64 if dt in FLOATS else np.int64)
                        else:
                            want = np.zeros(3)
                    elif dt in FLOATS:
                        want = ref(sel.astype(np.float64), axis=0)
                    else:
                        want = np.trunc(np.sum(sel.astype(np.int64), 0) / len(sel)) if kind == 1 else \
                            ref(sel.astype(np.int64), axis=0)
                    if dt in FLOATS:
                        assert_close(got.numpy()[s], round_to(np.asarray(want), dt), dt, "reduction")
                    else:
                        np.testing.assert_array_equal(got.numpy()[s], np.asarray(want).astype(dt))
    # NaN: TensorFlow's max keeps a NaN only when it comes last
    got = tf.math.unsorted_segment_max(tf.constant([np.nan, 1.0, 2.0, np.nan]), [0, 0, 1, 1], 2)
    np.testing.assert_array_equal(np.isnan(got.numpy()), [False, True])
    assert got.numpy()[0] == 1.0
    with pytest.raises(tf.errors.InvalidArgumentError, match="segment ids are not increasing"):
        tf.math.segment_sum(tf.ones([3, 2]), [1, 0, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"segment_ids\[1\] = 5 is out of range \[0, 2\)"):
        tf.math.unsorted_segment_sum(tf.ones([3, 2]), [0, 5, 0], 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="does not start with"):
        tf.math.unsorted_segment_sum(tf.ones([3, 2]), [0, 1], 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="must not be negative"):
        tf.math.unsorted_segment_sum(tf.ones([3, 2]), [0, 1, 0], -1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="same size as dimension 0"):
        tf.math.segment_sum(tf.ones([3, 2]), [0, 0])


DEDICATED["cumprod"] = "test_scan_ops_match_numpy"
DEDICATED["cumulative_logsumexp"] = "test_scan_ops_match_numpy"
DEDICATED["segment_reduce"] = "test_segment_reduce_op"
for _n in ("erfinv", "ndtri", "digamma", "igamma", "igammac", "zeta", "polygamma", "igamma_grad_a"):
    DEDICATED[_n] = "test_special_functions_match_tensorflow"


def test_bessel_functions_match_tensorflow():
    """bessel_i0 / i0e / i1 / i1e against TensorFlow 2.21's float64 outputs (recorded), the
    series / asymptotic boundary at |x| = 30 included; +-inf as TF (i0, i1: NaN)."""
    x = np.array([0.0, 0.5, -1.0, 30.0, -50.0, 700.0, 1e-3, np.inf, -np.inf, np.nan])
    want = {
        "bessel_i0": [1.0, 1.0634833707413238, 1.2660658777520082, 781672297823.9774, 2.9325537838493355e+20,
                      1.5295933476718735e+302, 1.0000002500000156, np.nan, np.nan, np.nan],
        "bessel_i0e": [1.0, 0.6450352704491502, 0.46575960759364043, 0.07314594648223728, 0.056561626647454184,
                       0.015081295651531355, 0.9990007495835154, 0.0, 0.0, np.nan],
        "bessel_i1": [0.0, 0.2578943053908962, -0.565159103992485, 768532038938.9568, -2.9030785901035566e+20,
                      1.5285003902339004e+302, 0.0005000000625000026, np.nan, np.nan, np.nan],
        "bessel_i1e": [0.0, 0.15642080318487162, -0.20791041534970844, 0.07191633059864753, -0.0559931238928954,
                       0.015070519444716844, 0.0004995003123542213, 0.0, -0.0, np.nan],
    }
    for name, w in want.items():
        got = getattr(_core, name)(tf.constant(x))
        assert_close(got, np.array(w), "float64", "transcendental", err_msg=name)
        for dt in ("float32", "float16", "bfloat16"):
            xs = round_to(np.array([0.25, -2.0, 3.5]), dt)
            ref = getattr(_core, name)(tf.constant(xs.astype(np.float64))).numpy()
            got = getattr(_core, name)(tf.constant(xs))
            assert got.dtype.name == dt
            assert_close(got, round_to(ref, dt), dt, "transcendental", err_msg="%s %s" % (name, dt))
    # continuous across the series / asymptotic switch at |x| = 30
    for name in want:
        a, b = getattr(_core, name)(tf.constant([30.0, np.nextafter(30.0, 31.0)])).numpy()
        assert abs(a - b) <= 1e-13 * abs(a), name


for _n in ("bessel_i0", "bessel_i0e", "bessel_i1", "bessel_i1e"):
    DEDICATED[_n] = "test_bessel_functions_match_tensorflow"
def test_linalg_ops_match_numpy():
    """_core.matrix_inverse / matrix_determinant (tf.linalg.inv / det; the wider checks:
    tests/test_linalg_lapack.py): LAPACK against NumPy's, batched, float32 and float64."""
    from tolerances import assert_close

    r = np.random.default_rng(3)
    for dt in ("float32", "float64"):
        x = (r.standard_normal((2, 3, 4, 4)) + 4 * np.eye(4)).astype(dt)
        assert_close(_core.matrix_inverse(x).numpy(), np.linalg.inv(x.astype(np.float64)), dt, "matmul")
        assert_close(_core.matrix_inverse(x, True).numpy(),
                     np.swapaxes(np.linalg.inv(x.astype(np.float64)), -1, -2), dt, "matmul")
        assert_close(_core.matrix_determinant(x).numpy(), np.linalg.det(x.astype(np.float64)), dt, "matmul")
    with pytest.raises(tf.errors.InvalidArgumentError, match="MatrixInverse|allowed values"):
        _core.matrix_inverse(np.eye(2, dtype=np.int32))


DEDICATED["matrix_inverse"] = "test_linalg_ops_match_numpy"
DEDICATED["matrix_determinant"] = "test_linalg_ops_match_numpy"


def test_image_projective_transform_op():
    """_core.image_projective_transform (ImageProjectiveTransformV3; TensorFlow's values and
    the layers: tests/keras/test_image_augmentation.py): the identity transform, a pure
    integer shift against NumPy, shapes and TensorFlow's errors."""
    x = np.arange(2 * 4 * 5 * 3, dtype=np.float32).reshape(2, 4, 5, 3)
    ident = np.array([[1, 0, 0, 0, 1, 0, 0, 0]], np.float32)
    for interp in (0, 1):
        for fill in range(4):
            out = _core.image_projective_transform(x, ident, [4, 5], interp, fill, 0.0).numpy()
            np.testing.assert_array_equal(out, x)
    shift = np.array([[1, 0, 2, 0, 1, 1, 0, 0]], np.float32)  # reads x[r + 1, c + 2]
    want = np.full_like(x, -3.0)
    want[:, :3, :3] = x[:, 1:, 2:]
    out = _core.image_projective_transform(x, np.repeat(shift, 2, 0), [4, 5], 1, 2, -3.0)
    np.testing.assert_array_equal(out.numpy(), want)
    assert _core.image_projective_transform(x, ident, [3, 7], 0, 2, 0.0).shape == (2, 3, 7, 3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="must have rank 4"):
        _core.image_projective_transform(x[0], ident, [4, 5], 1, 0, 0.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="num_images x 8 or 1 x 8"):
        _core.image_projective_transform(x, np.zeros((3, 8), np.float32), [4, 5], 1, 0, 0.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="two elements"):
        _core.image_projective_transform(x, ident, [4], 1, 0, 0.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="must be positive"):
        _core.image_projective_transform(x, ident, [0, 5], 1, 0, 0.0)
    with pytest.raises((TypeError, tf.errors.InvalidArgumentError), match="int32"):
        _core.image_projective_transform(x.astype(np.int32), ident, [4, 5], 1, 0, 0.0)
    with pytest.raises(ValueError, match="fill_mode"):
        _core.image_projective_transform(x, ident, [4, 5], 1, 7, 0.0)


DEDICATED["image_projective_transform"] = "test_image_projective_transform_op"


def test_linalg_decomposition_ops_match_numpy():
    """_core's decomposition ops (one node per TensorFlow output; the wider checks:
    tests/test_linalg_decomp.py): LAPACK against NumPy's, batched, float32 and float64."""
    from tolerances import assert_close

    r = np.random.default_rng(5)
    for dt in ("float32", "float64"):
        x = (r.standard_normal((2, 4, 4)) + 4 * np.eye(4)).astype(dt)
        x64 = x.astype(np.float64)
        spd = (x64 @ np.swapaxes(x64, -1, -2)).astype(dt)
        b = r.standard_normal((2, 4, 3)).astype(dt)
        assert_close(_core.cholesky(spd).numpy(), np.linalg.cholesky(spd.astype(np.float64)), dt, "decomposition")
        assert_close(_core.matrix_solve(x, b).numpy(), np.linalg.solve(x64, b), dt, "decomposition")
        assert_close(_core.matrix_triangular_solve(x, b, True, False).numpy(), np.linalg.solve(np.tril(x64), b),
                     dt, "decomposition")
        nq, nr = np.linalg.qr(x64)
        assert_close(_core.qr(x, False, 0).numpy(), nq, dt, "decomposition")
        assert_close(_core.qr(x, False, 1).numpy(), nr, dt, "decomposition")
        assert_close(_core.self_adjoint_eig(spd, 0).numpy(), np.linalg.eigvalsh(spd.astype(np.float64)), dt,
                     "decomposition")
        assert _core.self_adjoint_eig(spd, 1).shape == (2, 4, 4)
        assert_close(_core.svd(x, False, 0).numpy(), np.linalg.svd(x64, compute_uv=False), dt, "decomposition")
        assert _core.svd(x[:, :3], True, 1).shape == (2, 3, 3) and _core.svd(x[:, :3], True, 2).shape == (2, 4, 4)
        sg, la = np.linalg.slogdet(x64)
        assert_close(_core.log_matrix_determinant(x, 0).numpy(), sg, dt, "exact")
        assert_close(_core.log_matrix_determinant(x, 1).numpy(), la, dt, "decomposition")
        assert_close(_core.matrix_band_part(x, 1, 0).numpy(), np.tril(np.triu(x64, -1)), dt, "exact")
        lu, perm = _core.lu(x, 0).numpy(), _core.lu(x, 1).numpy().astype(int)
        lo = np.tril(lu, -1) + np.eye(4)
        assert_close(lo @ np.triu(lu), np.take_along_axis(x64, perm[..., None], 1), dt, "decomposition")


for _n in ("cholesky", "matrix_triangular_solve", "matrix_solve", "qr", "self_adjoint_eig", "svd",
           "log_matrix_determinant", "matrix_band_part", "lu"):
    DEDICATED[_n] = "test_linalg_decomposition_ops_match_numpy"
