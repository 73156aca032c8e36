"""tf.debugging assertions eagerly and at every call of a traced function; the messages
are TensorFlow 2.21's (printed by /tmp/tfenv's TensorFlow for the same calls)."""

import pytest

import mixprec as tf

D = tf.debugging
IAE = tf.errors.InvalidArgumentError


def _msg(fn):
    with pytest.raises(IAE) as e:
        fn()
    return str(e.value)


def test_binary_asserts_eager_messages():
    x, y = tf.constant([1, 2]), tf.constant([1, 3])
    assert D.assert_equal(x, x) is None
    assert _msg(lambda: D.assert_equal(x, y, message="msg")) == (
        "msg\nCondition x == y did not hold.\nIndices of first 1 different values:\n[[1]]\n"
        "Corresponding x values:\n[2]\nCorresponding y values:\n[3]\nFirst 2 elements of x:\n"
        "[1 2]\nFirst 2 elements of y:\n[1 3]")
    assert _msg(lambda: tf.assert_greater(x, y)).startswith(
        "Condition x > y did not hold.\nIndices of first 2 different values:\n[[0]\n [1]]")
    assert "Condition x != y did not hold." in _msg(lambda: D.assert_none_equal(x, y))
    assert D.assert_none_equal(x, y + 5) is None
    assert D.assert_greater_equal(y, x) is None
    assert "Condition x < y" in _msg(lambda: tf.assert_less(x, y))
    assert "Condition x <= y" in _msg(lambda: D.assert_less_equal(y, x))
    assert _msg(lambda: D.assert_equal(tf.constant([[1, 2], [3, 4]]), 1)) == (
        "Condition x == y did not hold.\nFirst 3 elements of x:\n[1 2 3]\n"
        "First 1 elements of y:\n[1]")
    m = _msg(lambda: D.assert_equal(tf.range(10), tf.range(10) * 0, summarize=3))
    assert m.startswith("Condition x == y did not hold.\nIndices of first 3 different values:")


def test_sign_asserts_eager_messages():
    assert _msg(lambda: D.assert_negative(tf.constant([1, 2]))) == (
        "\nCondition x < 0 did not hold element-wise:\nx (shape=(2,) dtype=int32) = \n"
        "['1', '2']")
    assert _msg(lambda: D.assert_positive(tf.constant([1.0, -1.0]))) == (
        "\nCondition x > 0 did not hold element-wise:\nx (shape=(2,) dtype=float32) = \n"
        "['1.0', '-1.0']")
    assert "Condition x >= 0" in _msg(lambda: D.assert_non_negative(tf.constant([1, -1])))
    # TensorFlow's assert_non_positive joins two of its message lines
    assert _msg(lambda: D.assert_non_positive(tf.constant([1, 2]), message="m",
                                              summarize=1)) == (
        "m.  \nCondition x <= 0 did not hold element-wise:x (shape=(2,) dtype=int32) = \n"
        "['1', '...']")
    assert D.assert_positive(tf.constant([1.0])) is None


def test_assert_near_and_Assert_eager():
    assert D.assert_near(tf.constant([1.0, 2.0]), tf.constant([1.0, 2.000001])) is None
    assert _msg(lambda: D.assert_near(tf.constant([1.0, 2.0]), tf.constant([1.0, 2.1]))) == (
        "Expected 'tf.Tensor(False, shape=(), dtype=bool)' to be true. Summarized data: b''\n"
        "b'x and y not equal to tolerance rtol = tf.Tensor(1.1920929e-06, shape=(), "
        "dtype=float32), atol = tf.Tensor(1.1920929e-06, shape=(), dtype=float32)'\n"
        "b'x (shape=(2,) dtype=float32) = '\n1.0, 2.0\nb'y (shape=(2,) dtype=float32) = '\n"
        "1.0, 2.1")
    assert D.assert_near(tf.constant([1.0, 2.0], tf.float16),
                         tf.constant([1.0, 2.01], tf.float16)) is None
    with pytest.raises(ValueError, match="not inexact"):
        D.assert_near(tf.constant([1]), tf.constant([1]))
    assert _msg(lambda: tf.Assert(False, ["a", tf.range(10), 3.5, tf.constant([1.5, 2.0])],
                                  summarize=3)) == (
        "Expected 'False' to be true. Summarized data: b'a'\n0, 1, 2, ...\n3.5\n1.5, 2.0")
    assert _msg(lambda: D.Assert(tf.constant(False), ["nope", tf.constant([1, 2])])) == (
        "Expected 'tf.Tensor(False, shape=(), dtype=bool)' to be true. Summarized data: "
        "b'nope'\n1, 2")
    assert tf.Assert(True, ["x"]) is None and tf.Assert(tf.constant([True]), ["a"]) is None


def test_static_asserts():
    x = tf.constant([1, 2])
    with pytest.raises(ValueError, match=r"^Tensor  must have rank 2\.  Received rank 1, "
                                         r"shape \(2,\)$"):
        D.assert_rank(x, 2)
    with pytest.raises(ValueError, match=r"^mm\.  Tensor  must have rank 3"):
        tf.assert_rank(x, 3, message="mm")
    with pytest.raises(ValueError, match="must have rank at least 2"):
        D.assert_rank_at_least(x, 2)
    with pytest.raises(ValueError, match=r"must have rank in \(0, 2\)"):
        D.assert_rank_in(x, [0, 2])
    assert D.assert_rank_in(x, [0, 1]) is None and D.assert_rank(x, 1) is None
    with pytest.raises(ValueError, match=r"Expected scalar shape, saw shape: \(2,\)\."):
        D.assert_scalar(x)
    assert D.assert_scalar(tf.constant(1)) is None
    with pytest.raises(TypeError, match="tensor must be of type tf.float32; got tf.int32"):
        D.assert_type(x, tf.float32)
    with pytest.raises(TypeError, match='Expected "x" to be integer type.  Found: tensor of '
                                        "dtype <dtype: 'float32'>"):
        D.assert_integer(tf.constant(1.0))
    assert D.assert_integer(x) is None and D.assert_type(x, tf.int32) is None


def test_assert_shapes_and_dtype_helpers():
    x, y = tf.constant([1, 2]), tf.ones((3,))
    assert D.assert_shapes([(x, ("N",)), (tf.constant([3, 4]), ("N",))]) is None
    with pytest.raises(ValueError) as e:
        D.assert_shapes([(x, ("N",)), (y, ("N",))])
    assert str(e.value) == (
        "Specified by tensor shape=(2,) dtype=int32 dimension 0.  Tensor shape=(3,) "
        "dtype=float32 dimension 0 must have size 2.  Received size 3, shape (3,)")
    with pytest.raises(ValueError, match=r"^Specified explicitly\.  Tensor shape=\(2,\) "
                                         r"dtype=int32 dimension 0 must have size 3\."):
        D.assert_shapes([(x, (3,))])
    with pytest.raises(ValueError, match="must have rank 2"):
        D.assert_shapes([(x, ("N", "M"))])
    assert D.assert_shapes([(tf.ones((4, 2, 3)), ("...", "N", 3))]) is None
    assert D.assert_same_float_dtype([tf.constant(1.0), tf.constant(2.0)]) == tf.float32
    assert D.assert_same_float_dtype() == tf.float32
    with pytest.raises(ValueError, match="must be of the same type"):
        D.assert_same_float_dtype([tf.constant(1.0), tf.constant(2.0, tf.float16)])
    with pytest.raises(ValueError, match="Expected floating point type, got <dtype: 'int32'>."):
        D.assert_same_float_dtype([x])
    with pytest.raises(TypeError, match='to be a "proper" iterable.  Found: <class \'str\'>'):
        D.assert_proper_iterable("abc")
    with pytest.raises(TypeError, match="proper"):
        D.assert_proper_iterable(x)
    assert D.assert_proper_iterable([1]) is None
    assert D.is_numeric_tensor(x) and not D.is_numeric_tensor(tf.constant(True))
    assert not D.is_numeric_tensor(1)


def test_asserts_in_function_check_every_call():
    traces = []

    @tf.function
    def f(x, y):
        traces.append(1)
        D.assert_equal(x, y, message="m")
        D.assert_positive(x)
        tf.Assert(tf.reduce_all(x < 100), ["big", x])
        return x + 1

    assert f(tf.constant([1, 2]), tf.constant([1, 2])).numpy().tolist() == [2, 3]
    assert _msg(lambda: f(tf.constant([1, 2]), tf.constant([1, 3]))) == (
        "assertion failed: [m] [Condition x == y did not hold element-wise:] [x (x:0) = ] "
        "[1 2] [y (y:0) = ] [1 3]")
    assert _msg(lambda: f(tf.constant([1, -2]), tf.constant([1, -2]))) == (
        "assertion failed: [] [Condition x > 0 did not hold element-wise:] [x (x:0) = ] "
        "[1 -2]")
    assert _msg(lambda: f(tf.constant([1, 200]), tf.constant([1, 200]))) == (
        "assertion failed: [big] [1 200]")
    assert f(tf.constant([3, 4]), tf.constant([3, 4])).numpy().tolist() == [4, 5]
    assert len(traces) == 1  # the failures were replays, not retraces


def test_static_asserts_in_function():
    @tf.function
    def r(x):
        D.assert_rank(x, 1)
        return x

    with pytest.raises(ValueError, match=r"Tensor x:0 must have rank 1\.  Received rank 2"):
        r(tf.constant([[1]]))


def test_debugging_flags():
    assert D.is_traceback_filtering_enabled()
    D.disable_traceback_filtering()
    assert not D.is_traceback_filtering_enabled()
    D.enable_traceback_filtering()
    assert D.is_traceback_filtering_enabled()
    assert D.get_log_device_placement() is False


def test_log_device_placement_writes_tensorflows_line(capfd):
    a = tf.constant([1.0, 2.0])
    try:
        D.set_log_device_placement(True)
        assert D.get_log_device_placement() is True
        _ = a + 1
    finally:
        D.set_log_device_placement(False)
    _ = a + 2
    err = capfd.readouterr().err
    line = "Executing op AddV2 in device /job:localhost/replica:0/task:0/device:"
    assert err.count(line) == 1
