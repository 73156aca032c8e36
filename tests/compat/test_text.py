"""tf.compat's text and version helpers (values as TensorFlow 2.21 returns them)."""

import numbers

import numpy as np
import pytest

import mixprec as tf


def test_bytes_and_text():
    assert tf.compat.as_bytes("h\u00e9llo") == b"h\xc3\xa9llo"
    assert tf.compat.as_bytes(bytearray(b"ab")) == b"ab"
    assert tf.compat.as_text(b"abc") == "abc" and tf.compat.as_str(b"x") == "x"
    assert tf.compat.as_str_any(3) == "3" and tf.compat.as_str_any(b"z") == "z"
    with pytest.raises(TypeError, match="Expected binary or unicode string, got 3"):
        tf.compat.as_bytes(3)
    import pathlib
    assert tf.compat.path_to_str(pathlib.Path("/x")) == "/x"


def test_types_dimensions_and_horizon():
    assert tf.compat.integral_types == (numbers.Integral, np.integer)
    assert tf.compat.real_types == (numbers.Real, np.integer, np.floating)
    assert tf.compat.complex_types == (numbers.Complex, np.number)
    assert tf.compat.bytes_or_text_types == (bytes, str)
    shape = tf.TensorShape([None, 3])
    assert tf.compat.dimension_value(shape[1]) == 3
    assert tf.compat.dimension_at_index(shape, 0) is None
    assert tf.compat.forward_compatible(2021, 1, 1)
    with tf.compat.forward_compatibility_horizon(2020, 1, 1):
        assert not tf.compat.forward_compatible(2021, 1, 1)
    assert tf.compat.v2 is tf
