"""tf.dtypes and the storage-less integer dtypes (expected values from TensorFlow 2.21)."""

import numpy as np
import pytest

import mixprec as tf


def test_dtypes_module_names():
    for n in ("DType", "as_dtype", "cast", "saturate_cast", "float32", "bfloat16", "int8",
              "int16", "uint16", "uint32", "uint64", "half", "double", "bool"):
        assert hasattr(tf.dtypes, n)
    assert tf.dtypes.float32 is tf.float32
    assert type(tf.float32) is tf.dtypes.DType or isinstance(tf.float32, tf.dtypes.DType)


@pytest.mark.parametrize("name,lo,hi,size,unsigned", [
    ("int16", -32768, 32767, 2, False), ("uint16", 0, 65535, 2, True),
    ("uint32", 0, 4294967295, 4, True), ("uint64", 0, 18446744073709551615, 8, True)])
def test_named_only_dtypes_describe_like_tf(name, lo, hi, size, unsigned):
    d = getattr(tf, name)
    assert repr(d) == "tf." + name and str(d) == "<dtype: '%s'>" % name
    assert d.is_integer and not d.is_floating and d.is_unsigned == unsigned
    assert (d.min, d.max, d.size) == (lo, hi, size)
    assert d.as_numpy_dtype is getattr(np, name)
    assert tf.as_dtype(name) is d and tf.as_dtype(getattr(np, name)) is d
    assert d == name and d != tf.int32


@pytest.mark.parametrize("make", [
    lambda: tf.constant([1, 2], tf.int16), lambda: tf.cast(tf.constant([1, 2]), tf.uint16),
    lambda: tf.zeros([2], tf.uint32), lambda: tf.ones([2], dtype="uint64")])
def test_named_only_dtypes_raise_typeerror_for_tensors(make):
    with pytest.raises(TypeError, match="is a dtype without mixprec tensor storage: tensor dtypes are float32"):
        make()


def test_saturate_cast_matches_tf():
    # TensorFlow 2.21: [3e9, -3e9, 1.7] float32 -> int32 gives [2147483520 -2147483648 1]
    r = tf.dtypes.saturate_cast(tf.constant([3e9, -3e9, 1.7]), tf.int32)
    assert r.dtype == tf.int32 and r.numpy().tolist() == [2147483520, -2147483648, 1]
    assert tf.dtypes.saturate_cast(tf.constant([300, -5]), tf.uint8).numpy().tolist() == [255, 0]
    assert tf.saturate_cast(tf.constant([70000.]), tf.float16).numpy().tolist() == [65504.0]
    r = tf.dtypes.saturate_cast(tf.constant([2 ** 40, -2 ** 40], tf.int64), tf.int32)
    assert r.numpy().tolist() == [2147483647, -2147483648]
