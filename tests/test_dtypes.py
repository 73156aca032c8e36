"""DType objects (tf.dtypes.DType) and as_dtype."""

import pickle

import ml_dtypes
import numpy as np
import pytest

import mixprec as tf
from mixprec import _core

NAMES = ("float32", "float16", "bfloat16", "float64", "int32", "int64", "uint8", "bool", "int8")


def test_names_and_aliases():
    for n in NAMES:
        d = getattr(tf, n)
        assert d.name == n and tf.as_dtype(n) is d
        assert str(d) == "<dtype: '%s'>" % n and repr(d) == "tf." + n  # TensorFlow: tf.float32
    assert tf.half is tf.float16 and tf.double is tf.float64
    assert tf.as_dtype("half") is tf.float16 and tf.as_dtype("float") is tf.float32
    assert tf.as_dtype("double") is tf.float64


def test_enum_order_matches_the_core():
    """DType._enum is the C core's mp_dtype code: a tensor made in each dtype reports it."""
    for n in NAMES:
        d = getattr(tf, n)
        t = tf.zeros([1], d)
        assert t.dtype is d
        assert tf.cast(t, n).dtype is d


def test_float16_properties():
    f = tf.float16
    assert f.is_floating and not f.is_integer and not f.is_bool and not f.is_complex
    assert f.max == 65504 and f.min == -65504
    assert isinstance(f.max, np.float16)
    assert f.size == 2 and f.itemsize == 2
    assert f.as_numpy_dtype is np.float16
    assert f.limits == (f.min, f.max)
    assert f.base_dtype is f and f.real_dtype is f


@pytest.mark.parametrize("name,lo,hi,size", [
    ("float32", -3.4028235e38, 3.4028235e38, 4), ("float64", -1.7976931348623157e308, 1.7976931348623157e308, 8),
    ("bfloat16", -3.3895313892515355e38, 3.3895313892515355e38, 2), ("int32", -(2**31), 2**31 - 1, 4),
    ("int64", -(2**63), 2**63 - 1, 8), ("uint8", 0, 255, 1), ("int8", -128, 127, 1), ("bool", False, True, 1),
])
def test_limits(name, lo, hi, size):
    d = getattr(tf, name)
    assert d.min == lo and d.max == hi and d.size == size
    assert d.is_floating == (name in ("float32", "float64", "bfloat16"))
    assert d.is_integer == (name in ("int32", "int64", "uint8", "int8"))
    assert d.is_unsigned == (name in ("uint8", "bool"))
    assert d.is_bool == (name == "bool")
    if name == "bfloat16":
        assert d.as_numpy_dtype is ml_dtypes.bfloat16 and isinstance(d.max, ml_dtypes.bfloat16)


def test_as_dtype_accepts_every_spelling():
    assert tf.as_dtype(tf.float16) is tf.float16
    assert tf.as_dtype(np.float16) is tf.float16
    assert tf.as_dtype(np.dtype("float16")) is tf.float16
    assert tf.as_dtype(ml_dtypes.bfloat16) is tf.bfloat16
    assert tf.as_dtype(np.dtype(ml_dtypes.bfloat16)) is tf.bfloat16
    assert tf.as_dtype(np.int32) is tf.int32 and tf.as_dtype(np.bool_) is tf.bool
    assert tf.as_dtype(np.uint8) is tf.uint8 and tf.as_dtype("int8") is tf.int8
    # Python types, as TensorFlow: float -> float32, bool -> bool; int -> int64 (NumPy's)
    assert tf.as_dtype(float) is tf.float32
    assert tf.as_dtype(bool) is tf.bool
    assert tf.as_dtype(int) is tf.int64


# (int16/uint16/uint32/uint64 are DTypes without tensor storage: tests/test_dtypes_module.py)
@pytest.mark.parametrize("bad", [None, "float8", "strings", np.complex64, str, bytes, 3,
                                 [1], {"a": 1}, "Float32", "", "f2"])
def test_as_dtype_type_error(bad):
    with pytest.raises(TypeError, match="Cannot convert .* to a mixprec DType"):
        tf.as_dtype(bad)


def test_equality_hash_and_pickle():
    assert tf.float16 == "float16" and tf.float16 == np.float16 and tf.float16 != tf.float32
    assert tf.float16 != "nonsense" and tf.float16 != None  # noqa: E711
    assert not (tf.float16 == 3)
    assert {tf.float16: 1}[tf.as_dtype("half")] == 1
    assert hash(tf.float16) == hash(tf.as_dtype(np.float16))
    assert pickle.loads(pickle.dumps(tf.bfloat16)) is tf.bfloat16
    assert tf.float32.is_compatible_with("float32") and not tf.float32.is_compatible_with(tf.float16)
    assert not tf.float32.is_compatible_with("bogus")


def test_dtype_arguments_of_ops_accept_every_spelling():
    for spelling in (tf.bfloat16, "bfloat16", ml_dtypes.bfloat16, np.dtype(ml_dtypes.bfloat16)):
        assert tf.zeros([1], spelling).dtype is tf.bfloat16
        assert tf.constant([1.0], dtype=spelling).dtype is tf.bfloat16
        assert tf.random.normal([1], dtype=spelling).dtype is tf.bfloat16
    assert tf.cast(tf.constant([1]), float).dtype is tf.float32
    assert _core.constant(1, "int64").dtype is tf.int64
