"""mixprec.Variable: TensorFlow's constructor, assignment, copy-on-write, errors, operators,
and the AutoCastVariable behaviour of layer variables under a mixed policy (semantics §2.2,
tf-keras >= 2.18: ``dtype`` is the cast dtype inside the scope)."""

import copy
import ctypes

import numpy as np
import pytest

import mixprec as tf
from mixprec import _core
from mixprec._variable import autocast_scope


def _addr(t):
    """Address of a tensor's first element, on whatever device it lives (read from the
    DLPack capsule's DLTensor: data at offset 0, byte_offset at offset 40)."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    cap = t.__dlpack__()
    p = get(cap, b"dltensor")
    return ctypes.c_void_p.from_address(p).value + ctypes.c_uint64.from_address(p + 40).value


def _autocast_var(value, **kw):
    v = tf.Variable(value, **kw)
    v._autocast = True  # what Layer.add_weight does under a mixed policy
    return v


# --------------------------------------------------------------------------- constructor

def test_constructor_forms():
    v = tf.Variable(1.5)
    assert v.dtype == tf.float32 and v.shape == () and float(v) == 1.5
    assert tf.Variable([1, 2]).dtype == tf.int32
    assert tf.Variable([1, 2], dtype="float32").dtype == tf.float32
    assert tf.Variable(np.arange(6.0).reshape(2, 3)).dtype == tf.float64
    assert tf.Variable(np.float16(1)).dtype == tf.float16
    assert tf.Variable(tf.constant([1.0], "bfloat16")).dtype == tf.bfloat16
    c = tf.Variable(lambda: tf.ones([2, 2]))
    np.testing.assert_array_equal(c.numpy(), np.ones((2, 2)))
    w = tf.Variable(c)  # from another variable: a copy
    w.assign_add(tf.ones([2, 2]))
    np.testing.assert_array_equal(c.numpy(), np.ones((2, 2)))
    assert tuple(tf.Variable(tf.zeros([3, 4])).shape) == (3, 4)


def test_constructor_errors():
    with pytest.raises(ValueError, match="initial_value"):
        tf.Variable(None)
    with pytest.raises(ValueError, match="requested dtype float16 for Tensor with dtype float32"):
        tf.Variable(tf.constant(1.0), dtype="float16")
    with pytest.raises(ValueError, match="ON_READ"):
        tf.Variable(1.0, trainable=True, synchronization=tf.VariableSynchronization.ON_READ)


def test_names():
    assert tf.Variable(1.0).name == "Variable:0"
    assert tf.Variable(1.0, name="x").name == "x:0"
    assert tf.Variable(1.0, name="x:0").name == "x:0"
    assert tf.Variable(1.0, name="dense/kernel").name == "dense/kernel:0"


def test_trainable():
    assert tf.Variable(1.0).trainable
    assert not tf.Variable(1.0, trainable=False).trainable
    v = tf.Variable(1.0)
    v.trainable = False
    assert not v.trainable
    assert not tf.Variable(1.0, synchronization=tf.VariableSynchronization.ON_READ).trainable


# --------------------------------------------------------------------------- assignment

def test_assign_methods_return_the_variable():
    v = tf.Variable([1.0, 2.0])
    assert v.assign([3.0, 4.0]) is v
    np.testing.assert_array_equal(v.numpy(), [3, 4])
    assert v.assign_add([1.0, 1.0]) is v
    np.testing.assert_array_equal(v.numpy(), [4, 5])
    assert v.assign_sub(tf.constant([0.5, 0.5])) is v
    np.testing.assert_array_equal(v.numpy(), [3.5, 4.5])
    assert v.assign(0.0 * v.value() + 1.0, read_value=False) is None
    np.testing.assert_array_equal(v.numpy(), [1, 1])
    before = v._version
    v.assign([2.0, 2.0])
    assert v._version > before


def test_assign_integer_variable():
    v = tf.Variable(3, dtype="int64")
    v.assign_add(2)
    assert int(v) == 5 and v.dtype == tf.int64


def test_copy_on_write_keeps_earlier_reads():
    v = tf.Variable([1.0, 2.0])
    t = v.value()
    t2 = tf.identity(v)
    a = np.asarray(t)
    v.assign([5.0, 6.0])
    np.testing.assert_array_equal(t.numpy(), [1, 2])
    np.testing.assert_array_equal(t2.numpy(), [1, 2])
    np.testing.assert_array_equal(a, [1, 2])
    v.assign_add([1.0, 1.0])
    np.testing.assert_array_equal(t.numpy(), [1, 2])
    np.testing.assert_array_equal(v.numpy(), [6, 7])


def test_copy_on_write_under_the_optimizer():
    v = tf.Variable([1.0, 2.0])
    t = v.value()
    tf.keras.optimizers.SGD(1.0).apply_gradients([(tf.constant([1.0, 1.0]), v)])
    np.testing.assert_array_equal(t.numpy(), [1, 2])
    np.testing.assert_array_equal(v.numpy(), [0, 1])


def test_numpy_is_a_copy():
    v = tf.Variable([1.0, 2.0])
    a = v.numpy()
    a[0] = 100.0
    np.testing.assert_array_equal(v.numpy(), [1, 2])


def test_assign_wrong_dtype_names_both():
    v = tf.Variable(1.0)
    with pytest.raises(ValueError, match="dtype float32 for Tensor with dtype float16"):
        v.assign(tf.constant(1.0, "float16"))
    with pytest.raises(TypeError):  # InvalidDTypeError is both
        v.assign_add(tf.constant(1.0, "float64"))
    with pytest.raises(ValueError, match="float32.*float16"):
        v.assign_sub(tf.constant(1.0, "float16"))
    assert float(v) == 1.0


def test_assign_wrong_shape():
    v = tf.Variable([1.0, 2.0])
    with pytest.raises(ValueError, match="shapes are incompatible"):
        v.assign([1.0, 2.0, 3.0])
    with pytest.raises(ValueError):
        v.assign_add(tf.ones([2, 2]))
    np.testing.assert_array_equal(v.numpy(), [1, 2])


# --------------------------------------------------------------------------- protocols

def test_operators_read_the_value():
    v = tf.Variable([1.0, 2.0])
    np.testing.assert_array_equal((v + 1).numpy(), [2, 3])
    np.testing.assert_array_equal((1 - v).numpy(), [0, -1])
    np.testing.assert_array_equal((v * v).numpy(), [1, 4])
    np.testing.assert_array_equal((v / 2).numpy(), [0.5, 1])
    np.testing.assert_array_equal((v ** 2).numpy(), [1, 4])
    np.testing.assert_array_equal((-v).numpy(), [-1, -2])
    np.testing.assert_array_equal(abs(-v).numpy(), [1, 2])
    np.testing.assert_array_equal((v < 1.5).numpy(), [True, False])
    np.testing.assert_array_equal((v == v).numpy(), [True, True])
    m = tf.Variable([[1.0, 2.0]])
    np.testing.assert_array_equal((m @ tf.transpose(m)).numpy(), [[5]])
    assert float(v[1]) == 2.0 and len(v) == 2
    assert [float(x) for x in v] == [1.0, 2.0]
    assert float(tf.Variable(2.5)) == 2.5 and int(tf.Variable(3)) == 3
    np.testing.assert_array_equal(np.asarray(v), [1, 2])
    np.testing.assert_array_equal(tf.reduce_sum(v).numpy(), 3)


def test_bool_operators_read_the_value():
    b = tf.Variable([True, False])
    t = tf.constant([True, True])
    for got, want in (((b & t), [True, False]), ((b | t), [True, True]), ((b ^ t), [False, True]),
                      ((t ^ b), [False, True]), ((b ^ b), [False, False]),
                      ((True ^ b), [False, True]), ((~b), [False, True])):
        assert isinstance(got, tf.Tensor)
        np.testing.assert_array_equal(got.numpy(), want)


def test_repr():
    assert repr(tf.Variable(1.0, name="x")) == \
        "<tf.Variable 'x:0' shape=() dtype=float32, numpy=1.0>"
    # TensorFlow's numpy_text: one line unless NumPy's repr has several, a scalar's Python repr
    assert repr(tf.Variable([[1.0, 2.0]])) == ("<tf.Variable 'Variable:0' shape=(1, 2) "
                                              "dtype=float32, numpy=array([[1., 2.]], "
                                              "dtype=float32)>")
    r = repr(tf.Variable([[1.0, 2.0], [3.0, 4.0]]))
    assert r.startswith("<tf.Variable 'Variable:0' shape=(2, 2) dtype=float32, numpy=\n")
    assert repr(tf.Variable(0.1)).endswith("numpy=0.10000000149011612>")


def test_unhashable_and_ref():
    v = tf.Variable(1.0)
    with pytest.raises(TypeError, match="Variable is unhashable. Instead, use variable.ref()"):
        hash(v)
    with pytest.raises(TypeError):
        {v: 1}
    d = {v.ref(): 1}
    assert d[v.ref()] == 1 and v.ref().deref() is v
    assert v.ref() != tf.Variable(1.0).ref()


def test_copy_is_the_variable_and_deepcopy_a_new_one():
    v = tf.Variable([1.0, 2.0], name="w", trainable=False, dtype="float64")
    assert copy.copy(v) is v
    c = copy.deepcopy(v)
    assert isinstance(c, tf.Variable) and c is not v
    assert (c.name, c.trainable, c.dtype) == ("w:0", False, tf.float64)
    np.testing.assert_array_equal(c.numpy(), [1, 2])
    v.assign_add([1.0, 1.0])
    c.assign([9.0, 9.0])
    np.testing.assert_array_equal(v.numpy(), [2, 3])
    np.testing.assert_array_equal(c.numpy(), [9, 9])
    w = tf.Variable([1.0, 2.0])
    (w1, w2) = copy.deepcopy([w, w])  # one copy per variable, shared as in the original
    assert w1 is w2 and w1 is not w
    tf.keras.optimizers.SGD(1.0).apply_gradients([(tf.constant([1.0, 1.0]), w)])
    np.testing.assert_array_equal(w1.numpy(), [1, 2])
    a = _autocast_var([1.0, 2.0])
    with autocast_scope("float16"):
        ac = copy.deepcopy(a)  # the stored float32 value, not the cast read
        assert ac.value().dtype == tf.float16
    assert ac.true_dtype == tf.float32 and ac._autocast


# --------------------------------------------------------------------------- autocast

def test_autocast_reads():
    v = _autocast_var([1.0, 2.0])
    assert v.value().dtype == tf.float32
    with autocast_scope("float16"):
        assert v.value().dtype == tf.float16
        assert v.read_value().dtype == tf.float16
        assert (v * tf.constant(2.0, "float16")).dtype == tf.float16
        assert tf.identity(v).dtype == tf.float16
        assert v.dtype == tf.float16 and v.true_dtype == tf.float32
        assert v.numpy().dtype == np.float32  # numpy() shows the stored value
    with autocast_scope("bfloat16"):
        assert v.value().dtype == tf.bfloat16 and v.dtype == tf.bfloat16
    assert v.value().dtype == tf.float32
    assert v.dtype == tf.float32 and v.true_dtype == tf.float32


def test_non_autocast_and_non_float_variables_ignore_the_scope():
    plain = tf.Variable(1.0)
    ints = _autocast_var(3)
    with autocast_scope("float16"):
        assert plain.value().dtype == tf.float32 and plain.dtype == tf.float32
        assert ints.value().dtype == tf.int32 and ints.dtype == tf.int32


def test_autocast_scope_nests_and_restores():
    v = _autocast_var(1.0)
    with autocast_scope("float16"):
        with autocast_scope(None):
            assert v.value().dtype == tf.float32
        with autocast_scope("bfloat16"):
            assert v.value().dtype == tf.bfloat16
        assert v.value().dtype == tf.float16
    assert v.value().dtype == tf.float32


def test_autocast_repr():
    v = _autocast_var(1.0, name="x")
    assert repr(v) == ("<AutoCastVariable 'x:0' shape=() dtype=float32 "
                       "dtype_to_cast_to=float32, numpy=1.0>")
    with autocast_scope("float16"):
        assert repr(v) == ("<AutoCastVariable 'x:0' shape=() dtype=float32 "
                           "dtype_to_cast_to=float16, numpy=1.0>")


def test_assignment_inside_the_scope_keeps_float32_precision():
    # tf-keras test_assign_stays_in_true_dtype
    v = _autocast_var(1.0)
    small = 1 + 2 ** -11  # rounds to 1 in float16
    with autocast_scope("float16"):
        v.assign(small)
        assert v.value().numpy() == 1.0 and v.value().dtype == tf.float16
    assert v.value().numpy() == np.float32(small)
    v.assign(1.0)
    with autocast_scope("float16"):
        v.assign_add(tf.constant(2 ** -11, "float32"))
        assert v.value().numpy() == 1.0
    assert v.numpy() == np.float32(small)


def test_assign_the_cast_dtype_inside_the_scope():
    # tf-keras >= 2.18: assign* accept values of the cast dtype inside the scope
    v = _autocast_var([1.0, 2.0])
    with autocast_scope("float16"):
        v.assign(tf.constant([3.0, 4.0], "float16"))
        v.assign_add(tf.constant([1.0, 1.0], "float16"))
    assert v.true_dtype == tf.float32
    np.testing.assert_array_equal(v.numpy(), [4, 5])


def test_assign_float16_to_autocast_variable_outside_the_scope_raises():
    # semantics §2.2: outside the scope the variable is a plain float32 variable
    v = _autocast_var(1.0)
    with pytest.raises(ValueError, match="conversion requested dtype float32 for Tensor with "
                                         "dtype float16"):
        v.assign(tf.constant(2.0, "float16"))
    with pytest.raises(ValueError, match="dtype float32 for Tensor with dtype float16"):
        v.assign_add(tf.constant(2.0, "float16"))
    with autocast_scope("bfloat16"):  # only the scope's dtype is accepted
        with pytest.raises(ValueError, match="float32.*float16"):
            v.assign(tf.constant(2.0, "float16"))
    assert float(v) == 1.0


def test_cast_cache_reads_share_storage():
    v = _autocast_var([1.0, 2.0, 3.0])
    with autocast_scope("float16"):
        r1, r2 = v.value(), v.value()
        assert _addr(r1) == _addr(r2)  # the second read is not cast again
        v.assign([4.0, 5.0, 6.0])  # the assignment invalidates the cache
        r3 = v.value()
        assert _addr(r3) != _addr(r1)
        np.testing.assert_array_equal(r1.numpy(), [1, 2, 3])
        np.testing.assert_array_equal(r3.numpy(), [4, 5, 6])
        r4 = v.value()
        assert _addr(r4) == _addr(r3)
    with autocast_scope("bfloat16"):  # another dtype: another cast
        r5 = v.value()
        assert r5.dtype == tf.bfloat16
        np.testing.assert_array_equal(r5.numpy().astype(np.float32), [4, 5, 6])


def test_optimizer_refreshes_the_cast_copy_in_place():
    v = _autocast_var([1.0, 2.0, 3.0])
    with autocast_scope("float16"):
        r = v.value()
        addr = _addr(r)
        del r
    tf.keras.optimizers.SGD(0.5).apply_gradients([(tf.constant([1.0, 1.0, 1.0]), v)])
    with autocast_scope("float16"):
        r = v.value()
        assert _addr(r) == addr  # written by the fused update, not re-cast
        np.testing.assert_array_equal(r.numpy(), [0.5, 1.5, 2.5])


def test_optimizer_does_not_overwrite_a_live_cast_read():
    v = _autocast_var([1.0, 2.0])
    with autocast_scope("float16"):
        r = v.value()
    tf.keras.optimizers.SGD(0.5).apply_gradients([(tf.constant([1.0, 1.0]), v)])
    np.testing.assert_array_equal(r.numpy(), [1, 2])
    with autocast_scope("float16"):
        np.testing.assert_array_equal(v.value().numpy(), [0.5, 1.5])


def test_gradient_through_an_autocast_read_is_float32():
    v = _autocast_var([1.0, 2.0, 3.0])
    with tf.GradientTape() as t:
        with autocast_scope("float16"):
            y = tf.reduce_sum(v * tf.constant([1.0, 2.0, 3.0], "float16"))
    assert y.dtype == tf.float16
    g = t.gradient(y, v)
    assert g.dtype == tf.float32
    np.testing.assert_array_equal(g.numpy(), [1, 2, 3])


def test_gradient_of_a_variable_read_in_both_dtypes():
    v = _autocast_var(2.0)
    with tf.GradientTape() as t:
        a = v * 3.0
        with autocast_scope("float16"):
            b = v * tf.constant(5.0, "float16")
        y = a + tf.cast(b, "float32")
    g = t.gradient(y, v)
    assert g.dtype == tf.float32 and float(g) == 8.0


def test_sgd_step_on_float32_master_weight_is_not_lost():
    # tf-keras AutoCastVariable test_gradient: lr 2**-14, grad 1, v 1 -> exactly 1 - 2**-14
    v = _autocast_var(1.0)
    opt = tf.keras.optimizers.SGD(2.0 ** -14)
    with tf.GradientTape() as t:
        with autocast_scope("float16"):
            y = v * tf.constant(1.0, "float16")
    opt.apply_gradients([(t.gradient(y, v), v)])
    assert v.numpy() == np.float32(1 - 2 ** -14)
    with autocast_scope("float16"):
        assert v.value().numpy() == np.float16(1 - 2 ** -14)


def test_autocast_scope_is_per_thread():
    import threading

    v = _autocast_var(1.0)
    seen = []
    with autocast_scope("float16"):
        th = threading.Thread(target=lambda: seen.append(v.value().dtype))
        th.start()
        th.join()
        assert v.value().dtype == tf.float16
    assert seen == [tf.float32]


def test_core_autocast_returns_previous():
    prev = _core.autocast("float16")
    try:
        assert prev is None
        assert _core.autocast("bfloat16") == tf.float16
    finally:
        _core.autocast(prev)


def test_optimizer_steps_and_assigns_on_two_threads_do_not_corrupt_memory():
    # ASan found the optimizer (then running without the GIL) writing into a value that an
    # assign on another thread had just swapped out and freed. Variables now change only
    # under the GIL: the loop must finish with a variable holding one of the values.
    import threading
    import time

    v = tf.Variable(tf.zeros([1 << 14]))
    g, z = tf.ones([1 << 14]), tf.ones([1 << 14])
    opt = tf.keras.optimizers.Adam(0.001)
    stop = time.time() + 1.0

    def train():
        while time.time() < stop:
            opt.apply_gradients([(g, v)])

    def write():
        while time.time() < stop:
            t = v.value()  # shares the storage: the next assign swaps in a new value
            v.assign(z)
            del t

    threads = [threading.Thread(target=train), threading.Thread(target=write)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert np.isfinite(v.numpy()).all()


def test_a_variable_shares_its_initial_value_copy_on_write():
    """The initial tensor's memory is not copied (a fresh 4 GB kernel is held once); every
    write to the variable copies first while the initial tensor is alive, and memory
    borrowed from a read-only producer is never written."""
    n = 1 << 20
    tf.config.experimental.reset_memory_stats("CPU:0")
    before = tf.config.experimental.get_memory_info("CPU:0")["current"]
    v = tf.Variable(tf.zeros([n]))
    info = tf.config.experimental.get_memory_info("CPU:0")
    assert info["peak"] - before <= 4 * n + 4096  # one buffer, not two
    v.assign_add(tf.ones([n]))  # sole owner now: in place
    assert float(tf.reduce_sum(v)) == n

    a = tf.constant([1.0, 2.0])
    w = tf.Variable(a)
    w.assign_add([1.0, 1.0])
    tf.keras.optimizers.SGD(1.0).apply_gradients([(tf.constant([1.0, 1.0]), w)])
    assert a.numpy().tolist() == [1.0, 2.0] and w.numpy().tolist() == [1.0, 2.0]

    frozen = np.frombuffer(np.array([1, 2], np.float32).tobytes(), np.float32)
    b = tf.Variable(tf.constant(frozen))  # borrowed, read-only bytes
    b.assign([5.0, 6.0])
    c = tf.Variable(tf.constant(frozen))
    tf.keras.optimizers.SGD(1.0).apply_gradients([(tf.constant([1.0, 1.0]), c)])
    assert frozen.tolist() == [1.0, 2.0] and b.numpy().tolist() == [5.0, 6.0]
    assert c.numpy().tolist() == [0.0, 1.0]

    # the tape tells the initial tensor from reads of the variable
    x = tf.constant([3.0])
    y = tf.Variable(x)
    with tf.GradientTape() as tape:
        _ = y * 1.0
        out = x * 2.0
    assert tape.gradient(out, y) is None
