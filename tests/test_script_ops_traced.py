"""tf.py_function / tf.numpy_function inside a traced tf.function: a host-call node of the
graph (csrc/graph.h MP_GNODE_CALL) that calls Python at every replay, with TensorFlow
2.21's graph behaviour (results checked against Tout, the function's exception mapped to
TensorFlow's op error, py_function differentiable through the forward's own tape)."""

import warnings

import numpy as np
import pytest

import mixprec as tf
from mixprec import errors
from test_tape import H, _numeric_grads
from tolerances import tolerance


def _no_break(fn, *args):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = fn(*args)
    assert not any("graph break" in str(m.message) for m in w), [str(m.message) for m in w]
    return out


def test_py_function_runs_at_every_replay_with_the_replays_values():
    seen = []

    def f(x):
        seen.append(x.numpy().copy())
        return x * 2

    @tf.function
    def g(x):
        return tf.py_function(f, [x], tf.float32) + 1

    # TensorFlow 2.21: [3, 5] then [7, 5]; the function ran once per call
    np.testing.assert_array_equal(_no_break(g, tf.constant([1., 2.])).numpy(), [3., 5.])
    np.testing.assert_array_equal(g(tf.constant([3., 2.])).numpy(), [7., 5.])
    assert len(seen) == 2 and g.experimental_get_tracing_count() == 1
    np.testing.assert_array_equal(seen[1], [3., 2.])
    graph = next(iter(next(iter(g._traces.values())).shapes.values()))
    assert [n["kind"] for n in graph.nodes()].count("HostCall") == 1


def test_result_shapes_may_change_between_replays():
    @tf.function
    def g(x, n):
        return tf.py_function(lambda a, k: tf.fill([int(k)], float(a)), [x, n], tf.float32)

    assert g(tf.constant(2.), tf.constant(3)).numpy().tolist() == [2., 2., 2.]
    assert g(tf.constant(5.), tf.constant(1)).numpy().tolist() == [5.]
    assert g.experimental_get_tracing_count() == 1


def test_several_results_and_dtypes_as_tensorflow():
    @tf.function
    def g(x):
        return tf.numpy_function(lambda a: (a, (a * 2).astype(np.int32)), [x],
                                 [tf.float32, tf.int32])

    a, b = _no_break(g, tf.constant(2.0))
    assert (float(a), int(b), b.dtype) == (2.0, 4, tf.int32)
    a, b = g(tf.constant(3.0))
    assert (float(a), int(b)) == (3.0, 6)

    @tf.function
    def h(x):  # py_function converts Python values to Tout (TensorFlow: 1.0, 2 int64)
        return tf.py_function(lambda a: [1.0, 2], [x], [tf.float32, tf.int64])
    a, b = h(tf.constant(0.))
    assert (float(a), int(b), b.dtype) == (1.0, 2, tf.int64)


def test_numpy_function_result_of_another_dtype_is_tensorflows_error():
    @tf.function
    def g(x):
        return tf.numpy_function(lambda a: np.array([1.0, 2.0]), [x], tf.float32)

    # TensorFlow 2.21: InvalidArgumentError "0-th value returned by pyfunc_1 is double,
    # but expects float"
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"0-th value returned by pyfunc_\d+ is double, but expects float"):
        g(tf.constant(1.))


def test_an_exception_at_a_replay_is_tensorflows_op_error():
    n = [0]

    def f(x):
        n[0] += 1
        if n[0] > 1:
            raise ValueError("second call")
        return x

    @tf.function
    def g(x):
        return tf.py_function(f, [x], tf.float32)

    assert float(g(tf.constant(1.))) == 1.0
    with pytest.raises(errors.InvalidArgumentError, match="ValueError: second call") as e:
        g(tf.constant(1.))
    assert isinstance(e.value.__cause__, ValueError)
    with pytest.raises(errors.UnknownError, match="KeyError"):
        tf.function(lambda x: tf.py_function(lambda a: {}["k"], [x], tf.float32))(
            tf.constant(1.))


def test_py_function_gradient_inside_the_function_as_tensorflow():
    @tf.function
    def g(x):
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.py_function(lambda a: a * a * 3.0, [x], tf.float32)
        return y, t.gradient(y, x)

    # TensorFlow 2.21: 12.0 and 18.0
    y, d = _no_break(g, tf.constant(2.0))
    assert (float(y), float(d)) == (12.0, 12.0)
    y, d = g(tf.constant(3.0))
    assert (float(y), float(d)) == (27.0, 18.0)
    assert g.experimental_get_tracing_count() == 1


def test_py_function_gradient_matches_finite_differences_float64():
    def f(a, b):
        return tf.sin(a) * b + tf.exp(b)

    @tf.function
    def grads(a, b):
        with tf.GradientTape() as t:
            t.watch([a, b])
            y = tf.reduce_sum(tf.py_function(f, [a, b], tf.float64))
        return t.gradient(y, [a, b])

    rng = np.random.default_rng(0)
    rtol, atol = tolerance("float64", "finite_difference")
    for _ in range(2):
        a, b = rng.standard_normal(4), rng.standard_normal(4)
        ga, gb = grads(tf.constant(a), tf.constant(b))
        na, nb = _numeric_grads(lambda x, y: tf.reduce_sum(f(x, y)), [a, b], 1.0, H)
        np.testing.assert_allclose(ga.numpy(), na, rtol=rtol, atol=atol)
        np.testing.assert_allclose(gb.numpy(), nb, rtol=rtol, atol=atol)
    assert grads.experimental_get_tracing_count() == 1


def test_a_function_creating_variables_calls_python_once_on_its_first_call():
    calls = []
    holder = []

    @tf.function
    def g(x):
        if not holder:
            holder.append(tf.Variable(1.0))
        y = tf.py_function(lambda a: (calls.append(1), a + 1)[1], [x], tf.float32)
        return y * holder[0]

    assert float(g(tf.constant(1.))) == 2.0      # traced twice (TensorFlow's rule) ...
    assert len(calls) == 1                        # ... the Python function ran once
    assert float(g(tf.constant(2.))) == 3.0 and len(calls) == 2


def test_under_an_outer_tape_the_call_runs_python_so_gradients_flow():
    @tf.function
    def g(x):
        return tf.py_function(lambda a: a * a, [x], tf.float32) * 2

    x = tf.constant(3.0)
    g(x)
    with tf.GradientTape() as t:
        t.watch(x)
        y = g(x)
    assert float(y) == 18.0 and float(t.gradient(y, x)) == 12.0


def test_host_calls_inside_traced_loops_run_every_iteration():
    calls = []

    def f(a):
        calls.append(float(a))
        return a * 2

    @tf.function
    def g(n):
        s = tf.constant(0.0)
        for i in tf.range(n):
            s += tf.py_function(f, [tf.cast(i, tf.float32)], tf.float32)
        return s

    assert float(_no_break(g, tf.constant(3))) == 6.0
    assert float(g(tf.constant(4))) == 12.0
    assert calls == [0.0, 1.0, 2.0, 0.0, 1.0, 2.0, 3.0]
    assert g.experimental_get_tracing_count() == 1

    ds = tf.data.Dataset.from_tensor_slices(np.arange(4, dtype=np.float32)).batch(2)

    @tf.function
    def h(ds):
        s = tf.constant(0.0)
        for x in ds:
            s += tf.reduce_sum(tf.numpy_function(lambda a: a * 10, [x], tf.float32))
        return s

    assert float(_no_break(h, ds)) == 60.0 and float(h(ds)) == 60.0

    def bad(a):
        if float(a) > 1:
            raise ValueError("too big")
        return a

    @tf.function
    def k(n):
        s = tf.constant(0.0)
        for i in tf.range(n):
            s += tf.py_function(bad, [tf.cast(i, tf.float32)], tf.float32)
        return s

    assert float(k(tf.constant(2))) == 1.0
    with pytest.raises(errors.InvalidArgumentError, match="ValueError: too big"):
        k(tf.constant(3))   # raised in the loop's third iteration, at a replay


def test_py_function_gradient_of_unused_inputs_and_outputs_as_tensorflow():
    @tf.function
    def g(x, y):
        with tf.GradientTape() as t:
            t.watch([x, y])
            z = tf.py_function(lambda a, b: a * 3.0, [x, y], tf.float32)
        return t.gradient(z, [x, y])

    # TensorFlow 2.21: [3.0, 0.0] (an input the function does not use gets zeros)
    assert [float(v) for v in g(tf.constant(2.0), tf.constant(1.0))] == [3.0, 0.0]

    @tf.function
    def h(x):
        with tf.GradientTape() as t:
            t.watch(x)
            a, _ = tf.py_function(lambda v: (v * 2.0, v * v), [x], [tf.float32, tf.float32])
        return t.gradient(a, x)

    # TensorFlow 2.21: 2.0 (an output no gradient reached counts as zeros)
    assert float(h(tf.constant(3.0))) == 2.0 and float(h(tf.constant(5.0))) == 2.0


def test_a_host_call_in_a_branch_runs_only_on_its_side_of_a_traced_if():
    calls = []

    def f(a):
        calls.append(float(a))
        return a * 10

    @tf.function
    def g(x):
        if x > 0:
            y = tf.py_function(f, [x], tf.float32)
        else:
            y = -x
        return y

    assert float(_no_break(g, tf.constant(2.0))) == 20.0
    assert float(g(tf.constant(-3.0))) == 3.0      # the branch not taken: not called
    assert float(g(tf.constant(5.0))) == 50.0
    assert calls == [2.0, 5.0] and g.experimental_get_tracing_count() == 1
