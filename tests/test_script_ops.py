"""tf.py_function and tf.numpy_function (src/mixprec/_script_ops.py): TensorFlow 2.21's
eager results, packing and errors; a traced function records a host call that calls the
Python function at every call (tests/test_script_ops_traced.py)."""

import warnings

import numpy as np
import pytest

import mixprec as tf

X = [1., 2.]


def test_py_function_values_and_packing_as_tensorflow():
    x = tf.constant(X)
    y = tf.py_function(lambda a: a * 2, [x], tf.float32)
    assert isinstance(y, tf.Tensor)
    np.testing.assert_array_equal(y.numpy(), [2., 4.])
    ys = tf.py_function(lambda a: a * 2, [x], [tf.float32])
    assert isinstance(ys, list) and len(ys) == 1
    np.testing.assert_array_equal(tf.py_function(lambda a: np.array(X), [x], tf.float32).numpy(),
                                  X)
    three = tf.py_function(lambda a: 3, [x], tf.float32)
    assert three.dtype == tf.float32 and three.numpy() == 3.0
    a, b = tf.py_function(lambda a: (a, a), [x], [tf.float32, tf.float32])
    np.testing.assert_array_equal(b.numpy(), X)
    first = tf.py_function(lambda a: (a, a * 3), [x], tf.float32)   # a single Tout: the first
    np.testing.assert_array_equal(first.numpy(), X)
    assert tf.py_function(lambda a: None, [x], []) == []
    one = tf.py_function(lambda a: [1, 2], [x], tf.int32)
    assert one.dtype == tf.int32 and one.numpy() == 1
    np.testing.assert_array_equal(tf.py_function(func=lambda a: a, inp=[x],
                                                 Tout=tf.float32).numpy(), X)


def test_py_function_errors_as_tensorflow():
    x = tf.constant(X)
    with pytest.raises(tf.errors.InvalidArgumentError, match="TypeError: .*takes 1 positional"):
        tf.py_function(lambda a: a, x, tf.float32)   # inp is iterated: two rows, two args
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Tensor conversion requested dtype float32 for Tensor with dtype "
                             "float64"):
        tf.py_function(lambda a: tf.cast(a, tf.float64), [x], tf.float32)


def test_py_function_is_differentiable_numpy_function_is_not():
    x = tf.constant(X)
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.py_function(lambda a: a * a, [x], tf.float32)
    np.testing.assert_array_equal(t.gradient(y, x).numpy(), [2., 4.])
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.numpy_function(lambda a: a * a, [x], tf.float32)
    assert t.gradient(y, x) is None


def test_numpy_function_sees_arrays_and_keeps_their_dtype_as_tensorflow_eager():
    x = tf.constant(X)
    seen = []
    y = tf.numpy_function(lambda a: (seen.append(type(a)), a * 2)[1], [x], tf.float32)
    assert seen == [np.ndarray]
    np.testing.assert_array_equal(y.numpy(), [2., 4.])
    # TensorFlow 2.21 eager: the returned values keep their own dtype
    assert tf.numpy_function(lambda a: a.astype(np.float64), [x], tf.float32).dtype == tf.float64
    assert tf.numpy_function(lambda a: 3.0, [x], tf.float32).dtype == tf.float32
    assert tf.numpy_function(lambda a: 3, [x], tf.float32).dtype == tf.int32
    a, b = tf.numpy_function(lambda a: (a, a), [x], [tf.float32, tf.float32])
    np.testing.assert_array_equal(a.numpy(), X)


@pytest.mark.parametrize("op", ["py_function", "numpy_function"])
def test_traced_function_records_a_host_call_that_runs_every_time(op):
    calls = []

    def body(b):
        calls.append(1)
        return b + 1

    @tf.function
    def f(a):
        return getattr(tf, op)(body, [a], tf.float32) * 2
    x = tf.constant(X)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        y1 = f(x)
        y2 = f(x + 1)
    assert not any("graph break" in str(m.message) for m in w)
    assert f.experimental_get_tracing_count() == 1
    np.testing.assert_array_equal(y1.numpy(), [4., 6.])
    np.testing.assert_array_equal(y2.numpy(), [6., 8.])
    assert len(calls) == 2


@pytest.mark.parametrize("exc,cls", [
    (KeyError("k"), "UnknownError"), (NotImplementedError("n"), "UnimplementedError"),
    (StopIteration(), "OutOfRangeError"), (MemoryError("m"), "ResourceExhaustedError"),
    (RuntimeError("r"), "UnknownError"), (ValueError("v"), "InvalidArgumentError")])
def test_the_functions_exception_maps_to_tensorflows_op_error(exc, cls):
    def f(a):
        raise exc
    with pytest.raises(getattr(tf.errors, cls), match=type(exc).__name__ + ":"):
        tf.py_function(f, [tf.constant([1.])], tf.float32)
