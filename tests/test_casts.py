"""Casts: bit-exact against NumPy (float16) and ml_dtypes (bfloat16), on both the
vectorised (F16C/AVX2) and the scalar path, plus the integer and bool rules
(float -> int saturates with NaN -> 0, int -> int wraps, x -> bool is x != 0)."""

import itertools
import warnings

import ml_dtypes
import numpy as np
import pytest

import mixprec as tf
from mixprec import _core
from tolerances import assert_bits_equal

# NaN and out-of-range casts are what these tests are about: NumPy's warnings are noise
pytestmark = [pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")]

BF16 = np.dtype(ml_dtypes.bfloat16)
ALL_F16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


def cast_np(x, dtype):
    """mixprec.cast of the NumPy array x, back as a NumPy array."""
    out = tf.cast(tf.constant(x), dtype).numpy()
    return np.asarray(out)


def f32_bits(u32):
    return np.asarray(u32, dtype=np.uint32).view(np.float32)


def random_f32_patterns(rng, n):
    """n float32 bit patterns: half uniform over all 2**32 (NaN payloads, infinities,
    huge and tiny values), half with exponents around float16's range (-30 .. 17)."""
    anybits = rng.integers(0, 1 << 32, n // 2, dtype=np.uint64).astype(np.uint32)
    exp = rng.integers(127 - 30, 127 + 17, n - n // 2).astype(np.uint32)
    mant = rng.integers(0, 1 << 23, n - n // 2).astype(np.uint32)
    sign = rng.integers(0, 2, n - n // 2).astype(np.uint32) << 31
    near = sign | (exp << 23) | mant
    return f32_bits(np.concatenate([anybits, near]))


F16_SPECIALS_F32 = np.array([
    0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan,
    65504.0, -65504.0, 65519.99, 65520.0, -65520.0, 65519.998, 65536.0, 1e6, 3.4e38,
    2.0**-14, 2.0**-24, -(2.0**-24), 2.0**-25, -(2.0**-25), 2.0**-26,
    np.nextafter(np.float32(2.0**-25), np.float32(1)), np.nextafter(np.float32(2.0**-25), np.float32(0)),
    3 * 2.0**-25, 5 * 2.0**-25, 1.5 * 2.0**-24, 2.0**-14 - 2.0**-25, 2.0**-14 - 2.0**-24,
    1e-5, 0.1, 1 / 3, 2049.0, 2051.0, 2047.5, 1.0 + 2.0**-11, 1.0 + 3 * 2.0**-11,
    np.nextafter(np.float32(65520.0), np.float32(0)), 1e-45, -1e-45, 1.17e-38,
], dtype=np.float32)
# NaNs with payloads (signalling and quiet, both signs) and payloads that vanish when
# shifted to 10 bits (NumPy keeps the NaN by setting the lowest bit)
F32_NANS = f32_bits([0x7f800001, 0xff800001, 0x7fc00000, 0xffc00000, 0x7fa00000, 0x7f801fff,
                     0x7fffe000, 0x7fffffff, 0xffffffff, 0x7f802000])


# ------------------------------------------------------------------ float32 <-> float16

def test_f32_to_f16_roundtrips_every_f16_value(cast_path):
    h = ALL_F16.view(np.float16)
    f = h.astype(np.float32)  # exact, NaN payloads kept
    got = cast_np(f, "float16")
    assert got.dtype == np.float16
    assert_bits_equal(got, f.astype(np.float16), "(float32 -> float16 of every float16)")
    assert_bits_equal(got, h, "(round trip)")


def test_f16_to_f32_every_pattern(cast_path):
    h = ALL_F16.view(np.float16)
    got = cast_np(h, "float32")
    assert got.dtype == np.float32
    assert_bits_equal(got, h.astype(np.float32), "(float16 -> float32)")


def test_f32_to_f16_random_bit_patterns(cast_path, rng):
    x = random_f32_patterns(rng, 1 << 21)
    with np.errstate(all="ignore"):
        expected = x.astype(np.float16)
    assert_bits_equal(cast_np(x, "float16"), expected, "(random float32 -> float16)")


@pytest.mark.parametrize("values", [F16_SPECIALS_F32, F32_NANS], ids=["specials", "nans"])
def test_f32_to_f16_specials(cast_path, values):
    with np.errstate(all="ignore"):
        expected = values.astype(np.float16)
    # every special also at each position of an 8-lane vector and in the scalar tail
    for pad in range(9):
        x = np.concatenate([np.zeros(pad, np.float32), values, np.ones(pad, np.float32)])
        with np.errstate(all="ignore"):
            exp_pad = x.astype(np.float16)
        assert_bits_equal(cast_np(x, "float16"), exp_pad, "(pad %d)" % pad)
    assert_bits_equal(cast_np(values, "float16"), expected)


def test_f16_semantics_facts():
    """The float16 facts of the guide (reference/semantics.md section 4)."""
    c = lambda v: float(tf.cast(tf.constant(v, "float32"), "float16"))  # noqa: E731
    assert c(65504.0) == 65504.0
    assert c(65519.99) == 65504.0
    assert c(65520.0) == np.inf and c(-65520.0) == -np.inf
    assert c(2.0**-24) == 2.0**-24
    assert c(2.0**-25) == 0.0  # tie -> even (zero)
    assert c(float(np.nextafter(np.float32(2.0**-25), np.float32(1)))) == 2.0**-24
    assert c(2049.0) == 2048.0 and c(2051.0) == 2052.0
    assert c(0.1) == 0.0999755859375
    assert c(1e-5) == 1.0013580322265625e-05
    neg0 = tf.cast(tf.constant(-0.0), "float16").numpy()
    assert np.signbit(neg0) and neg0 == 0


# ------------------------------------------------------------------ float32 <-> bfloat16

def test_bf16_to_f32_every_pattern(cast_path):
    b = ALL_F16.view(BF16)
    got = cast_np(b, "float32")
    assert got.dtype == np.float32
    assert_bits_equal(got, b.astype(np.float32), "(bfloat16 -> float32)")


def test_f32_to_bf16_roundtrips_every_bf16_value(cast_path):
    b = ALL_F16.view(BF16)
    f = b.astype(np.float32)
    got = cast_np(f, "bfloat16")
    assert got.dtype == BF16
    assert_bits_equal(got, f.astype(BF16), "(float32 -> bfloat16 of every bfloat16)")


def test_f32_to_bf16_random_bit_patterns(cast_path, rng):
    x = random_f32_patterns(rng, 1 << 21)
    assert_bits_equal(cast_np(x, "bfloat16"), x.astype(BF16), "(random float32 -> bfloat16)")


def test_f32_to_bf16_specials(cast_path):
    x = np.concatenate([F16_SPECIALS_F32, F32_NANS, np.array(
        [3.4028235e38, -3.4028235e38, 3.3961e38, 3.3895314e38, 1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8,
         2.0**-126, 2.0**-133, 2.0**-134, 9.18e-41], np.float32)])
    for pad in range(9):
        xp = np.concatenate([np.zeros(pad, np.float32), x])
        assert_bits_equal(cast_np(xp, "bfloat16"), xp.astype(BF16), "(pad %d)" % pad)


def test_bf16_semantics_facts():
    c = lambda v: float(tf.cast(tf.constant(v, "float32"), "bfloat16"))  # noqa: E731
    assert c(1 / 3) == 0.333984375
    assert c(0.1) == 0.10009765625
    assert c(1.0 + 2.0**-8) == 1.0
    assert c(1.0 + 3 * 2.0**-8) == 1.015625
    assert c(3.4028234663852886e38) == np.inf
    nan = tf.cast(tf.constant(f32_bits([0x7f800001, 0xff800001])), "bfloat16").numpy()
    assert nan.view(np.uint16).tolist() == [0x7FC0, 0xFFC0]


# ------------------------------------------------------------------ float64 -> 16 bit

def random_f64(rng, n):
    exp = rng.integers(1023 - 30, 1023 + 17, n).astype(np.uint64)
    mant = rng.integers(0, 1 << 52, n, dtype=np.uint64)
    sign = rng.integers(0, 2, n).astype(np.uint64) << np.uint64(63)
    near = (sign | (exp << np.uint64(52)) | mant).view(np.float64)
    anybits = rng.integers(0, 1 << 63, n, dtype=np.uint64).view(np.float64)
    # exact float16 ties nudged by less than a float32 ulp: single vs double rounding
    h = rng.integers(0, 0x7BFF, n // 4).astype(np.uint16).view(np.float16).astype(np.float64)
    ulp = np.spacing(h.astype(np.float16)).astype(np.float64)
    ties = np.concatenate([h + ulp / 2, h + ulp / 2 + ulp * 2.0**-30, h + ulp / 2 - ulp * 2.0**-30])
    return np.concatenate([near, anybits, ties])


F64_SPECIALS = np.array([
    0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 65519.999999, 65520.0, 65519.99999999999,
    2.0**-24, 2.0**-25, 2.0**-25 + 2.0**-60, 2.0**-25 - 2.0**-60, 3 * 2.0**-25, 2.0**-14 - 2.0**-25,
    1.0 + 2.0**-11 + 2.0**-40, 1.0 + 2.0**-11 - 2.0**-40, 1e-300, 1e300, -1e300, 5e-324,
    1.0 + 2.0**-8 + 2.0**-30, 3.3961e38, 3.5e38, 1.0 / 3,
])
F64_NANS = np.array([0x7FF0000000000001, 0xFFF8000000000000, 0x7FF4000000000000,
                     0x7FF00000000003FF, 0x7FFFFC0000000000], np.uint64).view(np.float64)


def test_f64_to_f16_matches_numpy(cast_path, rng):
    x = np.concatenate([random_f64(rng, 1 << 18), F64_SPECIALS, F64_NANS])
    with np.errstate(all="ignore"):
        expected = x.astype(np.float16)
    assert_bits_equal(cast_np(x, "float16"), expected, "(float64 -> float16)")


def test_f64_to_bf16_matches_ml_dtypes(cast_path, rng):
    x = np.concatenate([random_f64(rng, 1 << 18), F64_SPECIALS, F64_NANS])
    with np.errstate(all="ignore"):
        expected = x.astype(BF16)
    # NaN payloads included: quiet NaN 0x7fc0 with the sign, as ml_dtypes
    assert_bits_equal(cast_np(x, "bfloat16"), expected, "(float64 -> bfloat16)")


def test_16bit_to_f64_exact(cast_path):
    for src in (np.float16, BF16):
        x = ALL_F16.view(src)
        got = cast_np(x, "float64")
        with np.errstate(all="ignore"):
            expected = x.astype(np.float64)
        ok = ~np.isnan(expected)
        assert_bits_equal(got[ok], expected[ok])
        assert np.isnan(got[~ok]).all()


def test_f16_bf16_between_each_other(cast_path):
    h = ALL_F16.view(np.float16)
    got = cast_np(h, "bfloat16")
    expected = h.astype(np.float32).astype(BF16)
    assert_bits_equal(got, expected, "(float16 -> bfloat16)")
    b = ALL_F16.view(BF16)
    got = cast_np(b, "float16")
    with np.errstate(all="ignore"):
        expected = b.astype(np.float32).astype(np.float16)
    assert_bits_equal(got, expected, "(bfloat16 -> float16)")


def test_f32_f64_roundtrip(rng):
    x = random_f64(rng, 4096)
    with np.errstate(all="ignore"):
        expected = x.astype(np.float32)
    ok = ~np.isnan(x)
    assert_bits_equal(cast_np(x, "float32")[ok], expected[ok])
    f = random_f32_patterns(rng, 4096)
    ok = ~np.isnan(f)
    assert_bits_equal(cast_np(f, "float64")[ok], f.astype(np.float64)[ok])


# ------------------------------------------------------------------ both paths agree

@pytest.mark.parametrize("src,dst", [("float32", "float16"), ("float16", "float32"),
                                     ("float32", "bfloat16"), ("bfloat16", "float32"),
                                     ("float16", "bfloat16"), ("bfloat16", "float16")])
def test_vectorised_and_scalar_paths_agree(src, dst, rng):
    if src == "float32":
        x = random_f32_patterns(rng, 1 << 16)
    else:
        x = ALL_F16.view(np.float16 if src == "float16" else BF16)
    t = tf.constant(x)
    vec = tf.cast(t, dst).numpy()
    prev = _core.force_scalar_casts(True)
    try:
        assert _core.cast_isa() == "scalar"
        sca = tf.cast(t, dst).numpy()
    finally:
        _core.force_scalar_casts(prev)
    assert_bits_equal(vec, sca, "(%s -> %s: vectorised vs scalar)" % (src, dst))


def test_force_scalar_casts_returns_previous():
    assert _core.force_scalar_casts(True) is False
    assert _core.force_scalar_casts(True) is True
    assert _core.force_scalar_casts(False) is True
    assert _core.cast_isa() in ("avx2+f16c", "scalar")


# ------------------------------------------------------------------ lengths and offsets

@pytest.mark.parametrize("src,dst", [("float32", "float16"), ("float16", "float32"),
                                     ("float32", "bfloat16"), ("bfloat16", "float32")])
def test_odd_lengths_and_offsets(cast_path, src, dst, rng):
    """Tails that are not a multiple of 8 and starts that are not vector aligned
    (a slice of whole rows is a view at an element offset)."""
    base = np.concatenate([F16_SPECIALS_F32, F32_NANS, rng.standard_normal(600).astype(np.float32)])
    base = base.astype(np.float16 if src == "float16" else BF16 if src == "bfloat16" else np.float32)
    t = tf.constant(base)
    npdst = {"float16": np.float16, "bfloat16": BF16, "float32": np.float32}[dst]
    for n in list(range(0, 34)) + [63, 64, 65, 127, 129, 255, 257, 511, 513]:
        for off in (0, 1, 3, 7, 8, 9):
            piece = t[off:off + n]
            with np.errstate(all="ignore"):
                expected = base[off:off + n].astype(np.float32).astype(npdst) if src != "float32" \
                    else base[off:off + n].astype(npdst)
            got = tf.cast(piece, dst).numpy()
            assert got.shape == (min(n, len(base) - off),)
            assert_bits_equal(got, expected, "(n=%d off=%d)" % (n, off))


def test_large_cast_is_threaded_and_exact(rng):
    """Large enough to be split across the host pool; chunk borders must not matter."""
    x = rng.standard_normal((1 << 20) + 13).astype(np.float32) * 1000
    assert_bits_equal(cast_np(x, "float16"), x.astype(np.float16))
    assert_bits_equal(cast_np(x, "bfloat16"), x.astype(BF16))
    x64 = x.astype(np.float64) * 1.0000001
    assert_bits_equal(cast_np(x64, "float16"), x64.astype(np.float16))


def test_cast_of_multidimensional_keeps_shape():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
    got = tf.cast(tf.constant(x), "float16")
    assert got.shape == (2, 3, 4)
    assert_bits_equal(got.numpy(), x.astype(np.float16))
    e = tf.cast(tf.zeros([0, 3]), "bfloat16")
    assert e.shape == (0, 3) and e.dtype == tf.bfloat16


def test_cast_to_same_dtype_is_a_new_tensor_with_same_values():
    t = tf.constant([1.5, 2.5], "float16")
    u = tf.cast(t, "float16")
    assert u is not t and u._id != t._id
    assert_bits_equal(u.numpy(), t.numpy())


def test_cast_accepts_dtype_spellings():
    t = tf.constant([1.0])
    for spelling in (tf.float16, "float16", "half", np.float16, np.dtype("float16")):
        assert tf.cast(t, spelling).dtype == tf.float16
    assert tf.cast(t, ml_dtypes.bfloat16).dtype == tf.bfloat16
    assert tf.cast([1, 2], "float32").dtype == tf.float32  # non-tensor input is converted


# ------------------------------------------------------------------ integers

INT_INFO = {d: np.iinfo(d) for d in ("int8", "uint8", "int32", "int64")}


def saturate_ref(x, dst):
    """Float -> int: NaN -> 0, clamp to the type's range, truncate toward zero."""
    info = INT_INFO[dst]
    x = np.asarray(x, np.float64)
    out = np.where(np.isnan(x), 0.0, np.trunc(x))
    out = np.clip(out, float(info.min), float(info.max))
    res = np.empty(x.shape, dtype=dst)
    big = out >= float(info.max)
    small = out <= float(info.min)
    mid = ~(big | small)
    res[mid] = out[mid].astype(dst)
    res[big] = info.max
    res[small] = info.min
    return res


FLOAT_TO_INT_VALUES = np.array([
    np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 0.99, -0.99, 1.5, -1.5, 2.5, -2.5,
    127.0, 127.9, 128.0, -128.0, -128.9, -129.0, 255.0, 255.5, 256.0, 300.0, -1.0, -300.0,
    2.0**31 - 1, 2.0**31, -(2.0**31), -(2.0**31) - 1, 3e9, -3e9, 2.0**53 + 2, 2.0**62, 2.0**63,
    -(2.0**63), 1e19, -1e19, 1e30, -1e30, 65504.0, -65504.0,
])


@pytest.mark.parametrize("src", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("dst", ["int8", "uint8", "int32", "int64"])
def test_float_to_int_saturates(src, dst):
    npsrc = {"float16": np.float16, "bfloat16": BF16, "float32": np.float32, "float64": np.float64}[src]
    with np.errstate(all="ignore"):
        x = FLOAT_TO_INT_VALUES.astype(npsrc)
    got = cast_np(x, dst)
    assert got.dtype == np.dtype(dst)
    expected = saturate_ref(x.astype(np.float64), dst)
    np.testing.assert_array_equal(got, expected, err_msg="%s -> %s" % (src, dst))


def test_float_to_int_truncates_toward_zero(rng):
    x = rng.uniform(-1000, 1000, 10007).astype(np.float32)
    np.testing.assert_array_equal(cast_np(x, "int32"), np.trunc(x).astype(np.int32))
    np.testing.assert_array_equal(cast_np(x, "int64"), np.trunc(x).astype(np.int64))
    np.testing.assert_array_equal(cast_np(x.astype(np.float16), "int32"),
                                  np.trunc(x.astype(np.float16)).astype(np.int32))


@pytest.mark.parametrize("src", ["int8", "uint8", "int32", "int64"])
@pytest.mark.parametrize("dst", ["int8", "uint8", "int32", "int64"])
def test_int_to_int_wraps(src, dst, rng):
    info = INT_INFO[src]
    x = np.concatenate([
        np.array([info.min, info.max, 0, 1, -1 if info.min < 0 else 2, 127, 128, 255, 256],
                 dtype=np.int64).clip(info.min, info.max),
        rng.integers(info.min, info.max, 1000, endpoint=True, dtype=np.int64)]).astype(src)
    got = cast_np(x, dst)
    np.testing.assert_array_equal(got, x.astype(dst), err_msg="%s -> %s" % (src, dst))


@pytest.mark.parametrize("src", ["int8", "uint8", "int32", "int64"])
@pytest.mark.parametrize("dst", ["float16", "bfloat16", "float32", "float64"])
def test_int_to_float_rounds_once(src, dst, rng):
    info = INT_INFO[src]
    special = [int(info.min), int(info.max), 0, 1, 2049, 2051, 16777217, 65519, 65520, 65535,
               2**53 + 1, 2**62 + 2**39 + 1, 2**63 - 2**39 - 1]
    special = np.array([v for v in special if info.min <= v <= info.max], dtype=np.int64)
    x = np.concatenate([special, rng.integers(info.min, info.max, 4000, endpoint=True,
                                              dtype=np.int64)]).astype(src)
    npdst = {"float16": np.float16, "bfloat16": BF16, "float32": np.float32, "float64": np.float64}[dst]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = x.astype(npdst)
    assert_bits_equal(cast_np(x, dst), expected, "(%s -> %s)" % (src, dst))


# ------------------------------------------------------------------ bool

@pytest.mark.parametrize("src", ["float16", "bfloat16", "float32", "float64", "int8", "uint8",
                                 "int32", "int64"])
def test_to_bool_is_nonzero(src):
    vals = [0, 1, 2, 255, 100, 7] if src == "uint8" else [0, 1, -1, 2, -128, 100, 7]
    if src.startswith("float") or src == "bfloat16":
        vals = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-3, np.nan, np.inf, -np.inf, 2.0**-24]
    npsrc = BF16 if src == "bfloat16" else np.dtype(src)
    x = np.array(vals).astype(npsrc)
    got = cast_np(x, "bool")
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, x.astype(np.float64) != 0)


@pytest.mark.parametrize("dst", ["float16", "bfloat16", "float32", "float64", "int8", "uint8",
                                 "int32", "int64", "bool"])
def test_from_bool(dst):
    x = np.array([True, False, True, True, False])
    got = cast_np(x, dst)
    assert got.dtype == (BF16 if dst == "bfloat16" else np.dtype(dst))
    np.testing.assert_array_equal(got.astype(np.float64), x.astype(np.float64))


def test_cast_matrix_of_small_integers():
    """Every dtype to every dtype on values all of them represent exactly."""
    names = ["float32", "float16", "bfloat16", "float64", "int32", "int64", "uint8", "bool", "int8"]
    base = np.array([0, 1, 2, 3, 7, 100, 1, 0, 127], dtype=np.float64)
    for src, dst in itertools.product(names, names):
        npsrc = BF16 if src == "bfloat16" else np.dtype(src)
        x = (base != 0 if src == "bool" else base).astype(npsrc)
        got = cast_np(x, dst)
        expected = x.astype(np.float64)
        if dst == "bool":
            expected = expected != 0
        np.testing.assert_array_equal(got.astype(np.float64), expected.astype(np.float64),
                                      err_msg="%s -> %s" % (src, dst))
        assert tf.cast(tf.constant(x), dst).dtype.name == dst


# ------------------------------------------------------------------ saturate_cast

def test_saturate_cast_clamps_to_the_target_range():
    f = tf.constant([-1e300, -70000.0, -1.5, 0.0, 65504.0, 65519.0, 1e6, np.inf, np.nan], "float64")
    got = tf.saturate_cast(f, "float16").numpy().astype(np.float64)
    np.testing.assert_array_equal(got[:-1], [-65504, -65504, -1.5, 0, 65504, 65504, 65504, 65504])
    assert np.isnan(got[-1])
    b = tf.constant([1e5, -1e5, 3e38, 100.0], "bfloat16")
    np.testing.assert_array_equal(tf.saturate_cast(b, "float16").numpy(),
                                  np.array([65504, -65504, 65504, 100], np.float16))
    assert float(tf.saturate_cast(tf.constant(1e300, "float64"), "bfloat16")) == float(tf.bfloat16.max)
    assert float(tf.saturate_cast(tf.constant(1e300, "float64"), "float32")) == float(np.finfo(np.float32).max)
    i = tf.constant([-1000, -129, -1, 0, 127, 128, 300, 2**31 - 1], "int32")
    np.testing.assert_array_equal(tf.saturate_cast(i, "int8").numpy(), [-128, -128, -1, 0, 127, 127, 127, 127])
    np.testing.assert_array_equal(tf.saturate_cast(i, "uint8").numpy(), [0, 0, 0, 0, 127, 128, 255, 255])
    np.testing.assert_array_equal(tf.saturate_cast(tf.constant([2**40, -(2**40)], "int64"), "int32").numpy(),
                                  [2**31 - 1, -(2**31)])
    np.testing.assert_array_equal(tf.saturate_cast(tf.constant([1e6, -5.0], "float32"), "float16").numpy(),
                                  np.array([65504, -5], np.float16))
    np.testing.assert_array_equal(tf.saturate_cast(tf.constant([100000], "int32"), "float16").numpy(),
                                  np.array([65504], np.float16))
    # TensorFlow 2.21 clamps in float32 at the largest float32 below 2**31: 2147483520
    np.testing.assert_array_equal(tf.saturate_cast(tf.constant([3e9, np.nan, -3e9]), "int32").numpy(),
                                  [2147483520, 0, -(2**31)])
    np.testing.assert_array_equal(tf.saturate_cast(tf.constant([200], "uint8"), "int8").numpy(), [127])
    np.testing.assert_array_equal(tf.saturate_cast(tf.constant([-5], "int8"), "uint8").numpy(), [0])
    assert tf.saturate_cast(tf.constant([1, 2], "int32"), "int64").dtype == tf.int64
    assert tf.saturate_cast([1.5], "float16").dtype == tf.float16
