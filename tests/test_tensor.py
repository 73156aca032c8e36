"""The Tensor type: construction and dtype inference (TensorFlow's rules), NumPy interop
(.numpy, __array__, buffer protocol, DLPack), Python protocols, indexing, printing."""

import gc
import weakref

import ml_dtypes
import numpy as np
import pytest

import mixprec as tf
from mixprec import _core
from tolerances import NP_DTYPE, assert_bits_equal

ALL_DTYPES = ("float32", "float16", "bfloat16", "float64", "int32", "int64", "uint8", "bool", "int8")
BF16 = np.dtype(ml_dtypes.bfloat16)


# ------------------------------------------------------------------ construction

@pytest.mark.parametrize("dt", ALL_DTYPES)
def test_constant_from_numpy_keeps_dtype_and_bits(dt, rng):
    x = (rng.standard_normal((3, 4)) * 50).astype(NP_DTYPE[dt])
    t = tf.constant(x)
    assert t.dtype.name == dt and t.shape == (3, 4) and t.ndim == 2
    out = t.numpy()
    assert out.dtype == NP_DTYPE[dt]
    assert_bits_equal(out, x)
    assert_bits_equal(tf.constant(x[::2, ::-1]).numpy(), x[::2, ::-1])  # non-contiguous input
    assert_bits_equal(tf.constant(np.asfortranarray(x)).numpy(), x)
    s = tf.constant(x[0, 0])  # NumPy scalar
    assert s.dtype.name == dt and s.shape == ()


@pytest.mark.parametrize("dt", ALL_DTYPES)
def test_constant_with_dtype(dt):
    vals = [[1, 0], [1, 1]] if dt == "bool" else [[1, 2], [3, 4]]
    if dt == "bool":
        vals = [[True, False], [True, True]]
    t = tf.constant(vals, dtype=dt)
    assert t.dtype.name == dt
    np.testing.assert_array_equal(t.numpy(), np.array(vals).astype(NP_DTYPE[dt]))
    assert tf.constant(vals, dtype=getattr(tf, dt)).dtype.name == dt


def test_constant_from_non_native_byte_order():
    for code in (">f4", ">f8", ">i4", ">i8", "<f4", ">f2"):
        x = np.array([1.5, -2.0, 3.0], dtype=code)
        t = tf.constant(x)
        assert t.dtype.name == x.dtype.newbyteorder("=").name
        np.testing.assert_array_equal(t.numpy(), x)
        np.testing.assert_array_equal(tf.constant(x, dtype="float64").numpy(), x.astype(np.float64))


def test_dtype_inference_from_python_values():
    assert tf.constant(1.5).dtype == tf.float32
    assert tf.constant(1).dtype == tf.int32
    assert tf.constant(2**31 - 1).dtype == tf.int32
    assert tf.constant(-(2**31)).dtype == tf.int32
    assert tf.constant(2**31).dtype == tf.int64
    assert tf.constant(-(2**31) - 1).dtype == tf.int64
    assert tf.constant(True).dtype == tf.bool
    assert tf.constant([1, 2, 3]).dtype == tf.int32
    assert tf.constant([1, 2**40]).dtype == tf.int64
    assert tf.constant([1, 2.5]).dtype == tf.float32
    assert tf.constant([[True], [False]]).dtype == tf.bool
    assert tf.constant((1.0, 2.0)).dtype == tf.float32
    assert tf.constant(np.float64(1.0)).dtype == tf.float64  # NumPy values keep their dtype
    assert tf.constant(np.array([1.0])).dtype == tf.float64
    assert tf.constant(np.int64(3)).dtype == tf.int64
    assert tf.constant([]).dtype == tf.float32 and tf.constant([]).shape == (0,)
    assert tf.constant([[], []]).shape == (2, 0)
    assert float(tf.constant(0.1)) == float(np.float32(0.1))  # rounded to float32 once
    assert int(tf.constant(2**62 + 1)) == 2**62 + 1  # exact


def test_constant_of_tensors_and_lists_of_tensors():
    t = tf.constant([1.0, 2.0], "float16")
    assert tf.constant(t) is not None and tf.constant(t).dtype == tf.float16
    assert tf.constant(t, dtype="float32").dtype == tf.float32  # a cast
    s = tf.constant([tf.constant(1.0), tf.constant(2.0)])
    np.testing.assert_array_equal(s.numpy(), [1.0, 2.0])
    assert tf.convert_to_tensor(t) is t or tf.convert_to_tensor(t)._id == t._id
    assert tf.convert_to_tensor([1, 2], dtype_hint="float32").dtype == tf.float32
    assert tf.convert_to_tensor([1.5], dtype_hint="int32").dtype == tf.float32  # hint dropped
    assert tf.convert_to_tensor(3, dtype="int64").dtype == tf.int64


def test_constant_shape_argument():
    t = tf.constant(0.0, shape=[2, 3])
    assert t.shape == (2, 3) and np.all(t.numpy() == 0)
    t = tf.constant([1, 2, 3, 4], shape=(2, 2))
    np.testing.assert_array_equal(t.numpy(), [[1, 2], [3, 4]])
    t = tf.constant(7, dtype="float16", shape=[3])
    assert t.dtype == tf.float16
    np.testing.assert_array_equal(t.numpy(), np.full(3, 7, np.float16))
    t = tf.constant([5.0], shape=[2, 2])  # one element broadcasts
    np.testing.assert_array_equal(t.numpy(), np.full((2, 2), 5.0, np.float32))
    assert tf.constant(1.0, shape=[]).shape == ()
    assert tf.constant([], shape=[0, 3]).shape == (0, 3)
    with pytest.raises(TypeError, match="elements"):
        tf.constant([1, 2, 3], shape=[2, 2])


def test_conversion_rules_for_values_given_a_dtype():
    assert tf.constant(3, dtype="float16").dtype == tf.float16
    assert tf.constant([1.0, 2.0], dtype="int32").dtype == tf.int32  # integral floats from Python
    with pytest.raises(TypeError):
        tf.constant(1.5, dtype="int32")
    with pytest.raises(TypeError):
        tf.constant([1.5], dtype="int32")
    with pytest.raises(TypeError):
        tf.constant(1, dtype="bool")
    # TensorFlow 2.21: booleans are 0/1 for float16/32/64 and int32/64, refused for
    # bfloat16 and uint8 (and numbers are refused as bool)
    assert tf.constant(True, dtype="float32").numpy() == 1.0
    assert tf.constant([True, False], dtype="float16").numpy().tolist() == [1.0, 0.0]
    assert tf.constant(np.array([True]), dtype="int64").numpy().tolist() == [1]
    assert float(tf.constant(1.5) * True) == 1.5 and int(tf.constant(2) + False) == 2
    for dt in ("bfloat16", "uint8"):
        with pytest.raises(TypeError, match="Cannot convert"):
            tf.constant([True], dtype=dt)
        with pytest.raises(TypeError, match="Cannot convert"):
            tf.constant(True, dtype=dt)
    with pytest.raises(TypeError):
        tf.constant(300, dtype="uint8")
    with pytest.raises(TypeError):
        tf.constant(np.array([1.0, 2.0]), dtype="int32")  # NumPy floats are never truncated


# ------------------------------------------------------------------ numpy out

def test_numpy_returns_the_right_types():
    assert tf.constant([1.0], "float16").numpy().dtype == np.float16
    assert tf.constant([1.0], "bfloat16").numpy().dtype == BF16
    s = tf.constant(1.5).numpy()
    assert isinstance(s, np.float32) and not isinstance(s, np.ndarray)
    assert isinstance(tf.constant(1.5, "float16").numpy(), np.float16)
    assert isinstance(tf.constant(1.5, "bfloat16").numpy(), ml_dtypes.bfloat16)
    assert isinstance(tf.constant(3).numpy(), np.int32)
    assert isinstance(tf.constant(True).numpy(), np.bool_)
    a = tf.constant([1.0, 2.0]).numpy()
    a[0] = 9  # a copy: writable, and the tensor is unchanged
    t = tf.constant([1.0, 2.0])
    t.numpy()[0] = 9
    assert t.numpy()[0] == 1.0


@pytest.mark.usefixtures("on_cpu")  # host-memory interop
def test_array_protocol():
    t = tf.constant([1.5, 2.5], "float16")
    a = np.asarray(t)
    assert a.dtype == np.float16
    np.testing.assert_array_equal(a, [1.5, 2.5])
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert np.array(tf.constant([1.0], "bfloat16")).dtype == BF16
    v = np.asarray(t, copy=False)  # through the buffer protocol: a read-only view
    assert not v.flags.writeable and _addr(v) == _addr(np.asarray(memoryview(t)))
    with pytest.raises(ValueError, match="copy"):
        np.asarray(tf.constant([1.0], "bfloat16"), copy=False)  # no buffer: __array__ copies
    assert np.array(t, copy=True).dtype == np.float16
    assert np.add(t, 1).dtype == np.float16  # NumPy ufuncs see an array
    r = np.array([1.0, 2.0], np.float16) + t  # the tensor's operator wins (__array_priority__)
    assert isinstance(r, tf.Tensor) and r.dtype == tf.float16
    for r in (np.float32(2) * t, t * np.float64(2), np.array([1.0, 2.0]) - t):  # NumPy values take t's dtype
        assert isinstance(r, tf.Tensor) and r.dtype == tf.float16
    assert (np.array([1.0, 2.0], np.float16) == t).dtype == tf.bool


@pytest.mark.usefixtures("on_cpu")  # the buffer protocol exists for host tensors only
@pytest.mark.parametrize("dt,fmt", [("float32", "f"), ("float16", "e"), ("float64", "d"), ("int32", "i"),
                                    ("int64", "q"), ("uint8", "B"), ("int8", "b"), ("bool", "?")])
def test_buffer_protocol(dt, fmt):
    x = np.arange(6).reshape(2, 3).astype(NP_DTYPE[dt])
    t = tf.constant(x)
    m = memoryview(t)
    assert m.readonly and m.format == fmt and m.shape == (2, 3)
    assert m.itemsize == x.itemsize and m.nbytes == x.nbytes
    assert m.strides == x.strides and m.c_contiguous
    assert m.tobytes() == x.tobytes()
    view = np.asarray(m)
    np.testing.assert_array_equal(view, x)
    assert not view.flags.writeable
    del t
    gc.collect()
    np.testing.assert_array_equal(view, x)  # the view keeps the storage alive
    m.release()
    s = memoryview(tf.constant(x[0, 0]))
    assert s.shape == () and s.ndim == 0


@pytest.mark.usefixtures("on_cpu")  # host-memory interop
def test_buffer_protocol_refusals():
    with pytest.raises(BufferError, match="bfloat16"):
        memoryview(tf.constant([1.0], "bfloat16"))
    import ctypes

    t = tf.constant([1.0, 2.0])
    with pytest.raises((BufferError, TypeError)):
        (ctypes.c_float * 2).from_buffer(t)  # needs a writable buffer


# ------------------------------------------------------------------ DLPack

def _addr(a):
    return a.__array_interface__["data"][0]


@pytest.mark.usefixtures("on_cpu")  # host-memory interop
def test_dlpack_export_to_numpy_is_zero_copy_and_read_only():
    t = tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4))
    assert t.__dlpack_device__() == (1, 0)
    a = np.from_dlpack(t)
    assert a.shape == (3, 4) and a.dtype == np.float32
    np.testing.assert_array_equal(a, np.arange(12).reshape(3, 4))
    assert not a.flags.writeable
    assert _addr(a) == _addr(np.asarray(memoryview(t)))  # same memory
    del t
    gc.collect()
    np.testing.assert_array_equal(a, np.arange(12).reshape(3, 4))  # kept alive by the capsule
    for dt in ("float16", "float64", "int8", "uint8", "int32", "int64", "bool"):
        x = np.arange(5).astype(NP_DTYPE[dt])
        assert_bits_equal(np.from_dlpack(tf.constant(x)), x)


@pytest.mark.usefixtures("on_cpu")  # host-memory interop
def test_dlpack_export_capsule_variants():
    t = tf.constant([1.0, 2.0])
    cap = t.__dlpack__()
    assert "dltensor" in repr(cap)
    cap2 = t.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(cap2)
    del cap, cap2  # unconsumed capsules release their reference
    c = np.from_dlpack(t, copy=True)
    assert _addr(c) != _addr(np.asarray(memoryview(t)))
    with pytest.raises(TypeError):
        t.__dlpack__(1)
    with pytest.raises(TypeError):
        t.__dlpack__(bogus=1)
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(2, 0))
    b = tf.constant([1.0], "bfloat16")
    assert "dltensor" in repr(b.__dlpack__())


def test_from_dlpack_numpy_is_zero_copy_and_lifetime_safe():
    a = np.arange(10, dtype=np.float32)
    ref = weakref.ref(a)
    t = _core.from_dlpack(a)
    assert t.dtype == tf.float32 and t.shape == (10,)
    assert _addr(np.asarray(memoryview(t))) == _addr(a)  # shared memory
    a[0] = 42.0
    assert float(t[0]) == 42.0
    del a
    gc.collect()
    assert ref() is not None  # the tensor keeps the exporter's memory alive
    np.testing.assert_array_equal(t.numpy()[1:], np.arange(1, 10))
    u = t + 1  # ops read the imported memory
    assert float(u[9]) == 10.0
    v = tf.reshape(t, [2, 5])  # a view shares the imported storage
    del t
    gc.collect()
    assert ref() is not None
    assert float(v[1, 4]) == 9.0
    del v
    gc.collect()
    assert ref() is None  # released through the producer's deleter


def test_from_dlpack_read_only_array():
    a = np.arange(6, dtype=np.float32)
    a.setflags(write=False)  # exported as a versioned capsule with the read-only flag
    t = _core.from_dlpack(a)
    np.testing.assert_array_equal(t.numpy(), a)
    assert _addr(np.asarray(memoryview(t))) == _addr(a)


@pytest.mark.parametrize("dt", ["float32", "float16", "float64", "int8", "uint8", "int32", "int64", "bool"])
def test_from_dlpack_dtypes(dt):
    x = np.arange(6).reshape(2, 3).astype(NP_DTYPE[dt])
    t = _core.from_dlpack(x)
    assert t.dtype.name == dt
    assert_bits_equal(t.numpy(), x)


@pytest.mark.usefixtures("on_cpu")  # host-memory interop
def test_from_dlpack_strided_and_roundtrip():
    x = np.arange(24, dtype=np.float64).reshape(4, 6)
    s = x[:, ::2]  # strided: imported by copy
    t = _core.from_dlpack(s)
    np.testing.assert_array_equal(t.numpy(), s)
    x[0, 0] = -1
    assert float(t[0, 0]) == 0.0
    u = tf.constant([1.0, 2.0], "float16")
    assert _core.from_dlpack(u) is u
    back = _core.from_dlpack(np.from_dlpack(u))
    assert_bits_equal(back.numpy(), u.numpy())
    r = _core.from_dlpack(np.zeros((0, 3), np.float32))
    assert r.shape == (0, 3)
    z = _core.from_dlpack(np.array(3.5, np.float32))  # 0-d
    assert z.shape == () and float(z) == 3.5


# ------------------------------------------------------------------ Python protocols

def test_scalar_conversions():
    assert float(tf.constant(1.5, "bfloat16")) == 1.5
    assert int(tf.constant(7.9)) == 7
    assert int(tf.constant([[-3]], "int64")) == -3
    assert bool(tf.constant(0.0)) is False and bool(tf.constant([2], "int8")) is True
    assert bool(tf.constant(True)) is True
    assert float(tf.constant(np.nan)) != float(tf.constant(np.nan))
    assert [10, 20, 30][tf.constant(1)] == 20  # __index__
    with pytest.raises(TypeError):
        [1, 2][tf.constant(1.0)]
    with pytest.raises(TypeError):
        float(tf.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(tf.constant([True, False]))
    assert f"{tf.constant(2.5):.2f}" == "2.50"
    assert f"{tf.constant(2.5, 'float16'):.1f}" == "2.5"


def test_len_and_iteration():
    x = np.arange(6, dtype=np.int32).reshape(3, 2)
    t = tf.constant(x)
    assert len(t) == 3
    rows = list(t)
    assert len(rows) == 3 and all(isinstance(r, tf.Tensor) for r in rows)
    np.testing.assert_array_equal(np.stack([r.numpy() for r in rows]), x)
    assert [int(v) for v in tf.constant([4, 5, 6])] == [4, 5, 6]
    assert list(tf.zeros([0, 2])) == []
    with pytest.raises(TypeError):
        len(tf.constant(1.0))
    with pytest.raises(TypeError):
        iter(tf.constant(1.0))
    a, b = tf.constant([1.0, 2.0])  # unpacking
    assert float(a) == 1.0 and float(b) == 2.0


def test_attributes():
    t = tf.constant(np.zeros((2, 3, 4), np.float16))
    assert t.shape == (2, 3, 4) and t.shape == [2, 3, 4]
    assert t.shape.as_list() == [2, 3, 4] and t.shape.rank == 3 and t.get_shape() == (2, 3, 4)
    assert t.ndim == 3 and t._numel == 24 and t._nbytes == 48
    assert t.dtype is tf.float16
    # the default device: GPU:0 when one is registered (TensorFlow's placement), else CPU:0
    assert t.device.endswith("device:GPU:0" if tf.config.list_physical_devices("GPU") else "device:CPU:0")
    with tf.device("/CPU:0"):
        assert tf.constant(1.0).device.endswith("device:CPU:0")
    assert isinstance(t._id, int) and tf.constant(1.0)._id != tf.constant(1.0)._id
    with pytest.raises(AttributeError):
        t.shape = (24,)
    with pytest.raises(TypeError):
        tf.Tensor()
    assert tf.is_tensor(t) and not tf.is_tensor(np.zeros(2))
    assert tf.shape(t).numpy().tolist() == [2, 3, 4] and tf.rank(t).numpy() == 3 and tf.size(t).numpy() == 24


# ------------------------------------------------------------------ indexing

INDEX_KEYS = [
    0, -1, 3, slice(None), slice(1, 3), slice(None, None, 2), slice(None, None, -1), slice(-2, None),
    slice(4, 1, -1), slice(10, 20), slice(-100, 100), slice(3, 3), (1, 2), (1, 2, 3), (-1, -1, -1),
    (slice(None), 1), (Ellipsis, 0), (0, Ellipsis), (Ellipsis,), (None,), (None, 0), (0, None, 1),
    (Ellipsis, None), (slice(1, None), None, slice(None, None, -2)), (slice(None), slice(None), slice(1, 5, 3)),
    (1, Ellipsis, None, 2), (), (slice(None, None, 3), -2), (np.int64(1),), (slice(0, 4, 2), slice(None, None, -1)),
    (slice(None, None, -3), Ellipsis, slice(None, None, -2)),
]


@pytest.mark.parametrize("key", INDEX_KEYS, ids=[repr(k) for k in INDEX_KEYS])
def test_indexing_matches_numpy(key, rng):
    x = (rng.standard_normal((4, 5, 6)) * 10).astype(np.float16)
    t = tf.constant(x)
    got = t[key]
    expected = x[key]
    assert got.shape == expected.shape
    assert_bits_equal(np.asarray(got.numpy()), np.asarray(expected))


def test_indexing_with_tensors_and_views():
    x = np.arange(24, dtype=np.int64).reshape(4, 6)
    t = tf.constant(x)
    np.testing.assert_array_equal(t[tf.constant(2)].numpy(), x[2])
    np.testing.assert_array_equal(t[tf.constant(1, "int64"), tf.constant(-1)].numpy(), x[1, -1])
    rows = t[1:3]  # whole rows: a zero-copy view with its own id
    assert rows._id != t._id
    np.testing.assert_array_equal(rows.numpy(), x[1:3])
    s = tf.constant(5.0)
    assert float(s[...]) == 5.0 and s[None].shape == (1,)
    e = tf.zeros([0, 3])
    assert e[:, 1:].shape == (0, 2) and e[::-1].shape == (0, 3)


@pytest.mark.parametrize("key", [4, -5, (0, 6), (0, 0, 0), (1, -7), 100])
def test_indexing_out_of_range_raises_index_error(key):
    t = tf.constant(np.zeros((4, 6)))
    with pytest.raises(IndexError):
        t[key]


# ------------------------------------------------------------------ printing

def test_repr_str_format_exact():
    assert repr(tf.constant(256, "float16") ** 2) == "<tf.Tensor: shape=(), dtype=float16, numpy=inf>"
    assert repr(tf.constant(1.5)) == "<tf.Tensor: shape=(), dtype=float32, numpy=1.5>"
    assert repr(tf.constant(3)) == "<tf.Tensor: shape=(), dtype=int32, numpy=3>"
    assert repr(tf.constant(True)) == "<tf.Tensor: shape=(), dtype=bool, numpy=True>"
    # a scalar's repr is its Python value's, as TensorFlow's numpy_text (str stays NumPy's)
    assert repr(tf.constant(0.1, "float16")) == \
        "<tf.Tensor: shape=(), dtype=float16, numpy=0.0999755859375>"
    assert repr(tf.constant(0.1)) == \
        "<tf.Tensor: shape=(), dtype=float32, numpy=0.10000000149011612>"
    assert repr(tf.constant(0.1, "bfloat16")) == \
        "<tf.Tensor: shape=(), dtype=bfloat16, numpy=0.10009765625>"
    assert repr(tf.constant(65504, "float16")) == \
        "<tf.Tensor: shape=(), dtype=float16, numpy=65504.0>"
    assert str(tf.constant(0.1, "float16")) == "tf.Tensor(0.1, shape=(), dtype=float16)"
    assert repr(tf.constant(1.5, "bfloat16")) == "<tf.Tensor: shape=(), dtype=bfloat16, numpy=1.5>"
    # one line when NumPy's repr is one line, as TensorFlow
    assert repr(tf.constant([1.0, 2.0])) == \
        "<tf.Tensor: shape=(2,), dtype=float32, numpy=array([1., 2.], dtype=float32)>"
    assert repr(tf.constant([1, 2], "int64")) == \
        "<tf.Tensor: shape=(2,), dtype=int64, numpy=array([1, 2])>"
    assert repr(tf.constant([[1.0, 2.0], [3.0, 4.0]])) == (
        "<tf.Tensor: shape=(2, 2), dtype=float32, numpy=\n"
        "array([[1., 2.],\n       [3., 4.]], dtype=float32)>")
    assert str(tf.constant([1.0, 2.0])) == "tf.Tensor([1. 2.], shape=(2,), dtype=float32)"
    assert str(tf.constant(2.0, "float16")) == "tf.Tensor(2.0, shape=(), dtype=float16)"
    assert str(tf.constant([[1, 2], [3, 4]])) == "tf.Tensor(\n[[1 2]\n [3 4]], shape=(2, 2), dtype=int32)"
    assert repr(tf.zeros([0, 2])) == \
        "<tf.Tensor: shape=(0, 2), dtype=float32, numpy=array([], shape=(0, 2), dtype=float32)>"
    assert format(tf.constant(3.14159), ".2f") == "3.14"
    assert format(tf.constant(3.5, "bfloat16"), "") == "3.5"
    assert "{}".format(tf.constant([1.0])) == str(tf.constant([1.0]))


# ------------------------------------------------------------------ hashing and equality

def test_hash_raises_and_ref_works():
    t = tf.constant([1.0])
    with pytest.raises(TypeError, match="unhashable"):
        hash(t)
    with pytest.raises(TypeError):
        {t: 1}
    u = tf.constant([1.0])
    d = {t.ref(): "t", u.ref(): "u"}
    assert d[t.ref()] == "t" and d[u.ref()] == "u"
    assert t.ref() == t.ref() and t.ref() != u.ref()
    assert t.ref().deref() is t
    assert t.experimental_ref() == t.ref()
    assert "Reference wrapping" in repr(t.ref())


def test_equality_semantics():
    a = tf.constant([1.0, 2.0, np.nan])
    b = tf.constant([1.0, 3.0, np.nan])
    eq = a == b
    assert isinstance(eq, tf.Tensor) and eq.dtype == tf.bool
    np.testing.assert_array_equal(eq.numpy(), [True, False, False])
    np.testing.assert_array_equal((a != b).numpy(), [False, True, True])
    np.testing.assert_array_equal((a == 2.0).numpy(), [False, True, False])
    np.testing.assert_array_equal((2.0 == a).numpy(), [False, True, False])
    assert (a == None) is False and (a != None) is True  # noqa: E711
    assert (a == "abc") is False
    assert (a == tf.constant([1.0, 2.0])) is False  # incompatible shapes are not equal
    assert (a == tf.constant([1, 2, 3])) is False  # other dtype: not equal (no promotion)
    np.testing.assert_array_equal((tf.constant([1, 2]) < 2).numpy(), [True, False])
    np.testing.assert_array_equal((tf.constant([1, 2]) >= tf.constant([2, 2])).numpy(), [False, True])
    assert a is not b and a in [a]


# ------------------------------------------------------------------ operators

@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32", "float64", "int32", "int64", "int8", "uint8"])
def test_operators_with_python_scalars_take_the_tensor_dtype(dt):
    t = tf.constant(np.array([1, 2, 4]).astype(NP_DTYPE[dt]))
    for r in (t + 1, 1 + t, t - 1, 5 - t, t * 2, 2 * t, t // 2, 9 // t, t % 3, 7 % t, t ** 2, 2 ** t,
              -t, abs(t), +t, t + [1, 1, 1], tf.maximum(t, 2), tf.minimum(3, t)):
        assert r.dtype.name == dt, r
    if dt.startswith("float") or dt == "bfloat16":
        for r in (t / 2, 2 / t, t + 0.5, 0.5 * t):
            assert r.dtype.name == dt
        np.testing.assert_array_equal((t * 0.5).numpy().astype(np.float64), [0.5, 1.0, 2.0])
    else:
        with pytest.raises(TypeError):
            t + 0.5
    np.testing.assert_array_equal((t + 1).numpy().astype(np.int64), [2, 3, 5])
    np.testing.assert_array_equal((10 - t).numpy().astype(np.int64) if dt != "uint8" else (10 - t).numpy(),
                                  [9, 8, 6])


def test_truediv_of_integers():
    for dt, out in (("int32", tf.float64), ("int64", tf.float64), ("int8", tf.float32), ("uint8", tf.float32)):
        t = tf.constant(np.array([7, 8, 9]).astype(NP_DTYPE[dt]))
        r = t / tf.constant(np.array([2, 2, 2]).astype(NP_DTYPE[dt]))
        assert r.dtype == out
        np.testing.assert_array_equal(r.numpy(), [3.5, 4.0, 4.5])
        assert (t / 2).dtype == out and (18 / t).dtype == out
    assert tf.truediv(tf.constant([1]), tf.constant([3])).dtype == tf.float64
    assert tf.divide(1, 4).dtype == tf.float64 and float(tf.divide(1, 4)) == 0.25
    np.testing.assert_array_equal((tf.constant([1, 2]) / 0).numpy(), [np.inf, np.inf])


def test_bitwise_operators_need_bool():
    i = tf.constant([1, 2])
    for op in (lambda: i & i, lambda: i | i, lambda: i ^ i, lambda: ~i):
        with pytest.raises(TypeError):
            op()
    with pytest.raises(TypeError):
        pow(tf.constant(2.0), 2, 3)


def test_pickle_and_copy():
    import copy
    import pickle

    t = tf.constant([1.5, 2.5], "bfloat16")
    u = pickle.loads(pickle.dumps(t))
    assert u.dtype == tf.bfloat16
    assert_bits_equal(u.numpy(), t.numpy())
    assert copy.copy(t) is t and copy.deepcopy(t) is t  # immutable


def test_weakref_and_set_shape():
    t = tf.constant([1.0])
    r = weakref.ref(t)
    assert r() is t
    t.set_shape([1])
    t.set_shape([None])
    with pytest.raises(ValueError):
        t.set_shape([2])
    del t
    gc.collect()
    assert r() is None


@pytest.mark.parametrize("step", [2**62, 2**63, -(2**63), 2**63 - 1, 10**30, -(10**30)])
def test_slicing_with_a_huge_step_takes_one_element(step):
    # the step times the stride must not overflow in the core (UBSan found it)
    x = np.arange(24).reshape(2, 3, 4)
    t = tf.constant(x)
    np.testing.assert_array_equal(t[::step].numpy(), x[::step])
    np.testing.assert_array_equal(t[:, ::step, 1::step].numpy(), x[:, ::step, 1::step])
    v = tf.Variable(tf.cast(t, tf.float32))
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(v[::step, ::step])
    g = tape.gradient(y, v).numpy()
    want = np.zeros_like(g)
    want[::step, ::step] = 1
    np.testing.assert_array_equal(g, want)
