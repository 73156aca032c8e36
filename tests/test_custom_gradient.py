"""tf.custom_gradient and tf.recompute_grad: Python backward functions on the C tape
(src/mixprec/_custom_gradient.py, csrc/python/custom_grad.c). Expected values are
TensorFlow 2.21's results for the same code."""

import warnings

import numpy as np
import pytest

import mixprec as tf
from test_tape import check_grad
from tolerances import assert_close


@tf.custom_gradient
def log1pexp(x):
    e = tf.exp(x)

    def grad(upstream):
        return upstream * (1 - 1 / (1 + e))
    return tf.math.log(1 + e), grad


def test_log1pexp_numerically_stable_gradient_as_tensorflow():
    x = tf.constant([0., 100., -3.])
    with tf.GradientTape() as t:
        t.watch(x)
        y = log1pexp(x)
    g = t.gradient(y, x)
    # TensorFlow 2.21: y [0.6931472, inf, 0.04858733], dy/dx [0.5, 1.0, 0.04742587]
    assert_close(y.numpy()[[0, 2]], [0.6931471824645996, 0.04858732968568802], "float32",
                 "transcendental")
    assert np.isinf(y.numpy()[1])
    assert_close(g.numpy(), [0.5, 1.0, 0.04742586612701416], "float32", "transcendental")


def test_custom_gradient_matches_finite_differences_float64():
    @tf.custom_gradient
    def f(x, y):
        out = tf.sin(x) * y

        def grad(dz):
            return dz * tf.cos(x) * y, dz * tf.sin(x)
        return out, grad
    rng = np.random.default_rng(0)
    check_grad(f, rng.standard_normal((2, 3)), rng.standard_normal((2, 3)))


def test_clip_gradient_by_norm_example_and_none_gradient():
    @tf.custom_gradient
    def clip_gradient_by_norm(x, norm):
        y = tf.identity(x)

        def grad_fn(dresult):
            return [tf.clip_by_norm(dresult, norm), None]
        return y, grad_fn
    x = tf.constant([3., 4.])
    with tf.GradientTape() as t:
        t.watch(x)
        y = clip_gradient_by_norm(x, 1.0) * 10.
    # TensorFlow 2.21: [0.70710677, 0.70710677]
    assert_close(t.gradient(y, x).numpy(), [0.7071067690849304] * 2, "float32", "elementwise")


def test_variables_get_gradients_through_the_variables_keyword():
    v = tf.Variable([1., 2.])

    @tf.custom_gradient
    def f(x):
        y = x * v

        def grad(dy, variables=None):
            assert len(variables) == 1 and variables[0] is v
            return dy * v * 2, [dy * x * 3]
        return y, grad
    x = tf.constant([5., 7.])
    with tf.GradientTape() as t:
        t.watch(x)
        y = f(x)
    gx, gv = t.gradient(y, [x, v])
    np.testing.assert_array_equal(gx.numpy(), [2., 4.])     # TensorFlow 2.21
    np.testing.assert_array_equal(gv.numpy(), [15., 21.])


def test_grad_fn_without_variables_keyword_is_a_type_error():
    v = tf.Variable([1., 2.])

    @tf.custom_gradient
    def g(x):
        return x * v, lambda dy: dy
    with tf.GradientTape() as t:
        x = tf.constant([5., 7.])
        t.watch(x)
        with pytest.raises(TypeError, match="must accept keyword argument 'variables'"):
            g(x)


def test_wrong_number_of_gradients_is_tensorflows_value_error():
    @tf.custom_gradient
    def bad(x):
        return x * 1., lambda dy: [dy, dy]
    x = tf.constant([5., 7.])
    with tf.GradientTape() as t:
        t.watch(x)
        y = bad(x)
    with pytest.raises(ValueError, match="expected to return 1 gradients, but returned 2"):
        t.gradient(y, x)


def test_two_outputs_unconnected_one_gets_zeros():
    calls = []

    @tf.custom_gradient
    def two(x):
        def grad(da, db):
            calls.append(1)
            return da * 2. + db * 3.
        return (x * 1., x * 2.), grad
    x = tf.constant([5., 7.])
    with tf.GradientTape() as t:
        t.watch(x)
        a, b = two(x)
        s = tf.reduce_sum(a)
    np.testing.assert_array_equal(t.gradient(s, x).numpy(), [2., 2.])   # TensorFlow 2.21
    with tf.GradientTape() as t:
        t.watch(x)
        a, b = two(x)
    np.testing.assert_array_equal(t.gradient([a, b], x).numpy(), [5., 5.])
    assert len(calls) == 2   # one grad_fn call per gradient, as TensorFlow


def test_nested_tapes_second_order():
    @tf.custom_gradient
    def sq(x):
        def grad(dy):
            return dy * 2. * x
        return x * x, grad
    x = tf.constant([5., 7.])
    with tf.GradientTape() as t2:
        t2.watch(x)
        with tf.GradientTape() as t1:
            t1.watch(x)
            y = sq(x)
        g1 = t1.gradient(y, x)
    np.testing.assert_array_equal(g1.numpy(), [10., 14.])   # TensorFlow 2.21
    np.testing.assert_array_equal(t2.gradient(g1, x).numpy(), [2., 2.])


def test_exception_in_grad_fn_propagates_as_raised():
    @tf.custom_gradient
    def f(x):
        def grad(dy):
            raise KeyError("boom")
        return x * 2., grad
    x = tf.constant([1.])
    with tf.GradientTape() as t:
        t.watch(x)
        y = f(x)
    with pytest.raises(KeyError, match="boom"):
        t.gradient(y, x)


def test_no_tape_just_returns_the_value():
    np.testing.assert_allclose(log1pexp(tf.constant([0.])).numpy(), [np.log(2.)], rtol=1e-6)


def test_inside_tf_function_traces_without_a_break_and_replays_in_c():
    calls = []

    @tf.custom_gradient
    def log1pexp_counted(x):
        e = tf.exp(x)

        def grad(upstream):
            calls.append(1)  # Python: runs when tape.gradient is traced, not at replays
            return upstream * (1 - 1 / (1 + e))
        return tf.math.log(1 + e), grad

    @tf.function
    def fn(x):
        with tf.GradientTape() as t:
            t.watch(x)
            y = log1pexp_counted(x)
        return t.gradient(y, x)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        g1 = fn(tf.constant([1., 100.]))
        g2 = fn(tf.constant([-3., 100.]))
    assert not any("graph break" in str(m.message) for m in w)
    assert fn.experimental_get_tracing_count() == 1 and len(calls) == 1
    # TensorFlow 2.21: [0.7310586, 1.0]
    assert_close(g1.numpy(), [0.7310585975646973, 1.0], "float32", "transcendental")
    assert_close(g2.numpy(), [0.04742586612701416, 1.0], "float32", "transcendental")


def test_recompute_grad_gradients_as_tensorflow():
    w = tf.Variable([[1., 2.], [3., 4.]])

    @tf.recompute_grad
    def layer(x):
        return tf.tanh(tf.matmul(x, w))
    x = tf.constant([[0.1, 0.2]])
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.reduce_sum(layer(x))
    gx, gw = t.gradient(y, [x, w])
    # TensorFlow 2.21
    assert_close(gx.numpy(), [[1.4746882915496826, 3.584116220474243]], "float32",
                 "transcendental")
    assert_close(gw.numpy(), [[0.06347396224737167, 0.041997432708740234],
                              [0.12694792449474335, 0.08399486541748047]], "float32",
                 "transcendental")


def test_recompute_grad_matches_finite_differences_float64():
    rng = np.random.default_rng(1)
    check_grad(tf.recompute_grad(lambda a, b: tf.tanh(tf.matmul(a, b))),
               rng.standard_normal((2, 3)), rng.standard_normal((3, 2)))


def test_custom_gradient_on_a_method_binds_self():
    class Scale:
        factor = 3.

        @tf.custom_gradient
        def __call__(self, x):
            return x * self.factor, lambda dy: dy * 10.
    x = tf.constant([1., 2.])
    with tf.GradientTape() as t:
        t.watch(x)
        y = Scale()(x)
    np.testing.assert_array_equal(y.numpy(), [3., 6.])
    np.testing.assert_array_equal(t.gradient(y, x).numpy(), [10., 10.])


def test_persistent_tape_jacobian_and_float16_through_custom_gradient():
    x = tf.constant([1., 2., 3.])
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = log1pexp(x)
    j = t.jacobian(y, x)
    sig = 1 / (1 + np.exp(-np.array([1., 2., 3.])))
    assert_close(j.numpy(), np.diag(sig), "float32", "transcendental")
    assert_close(t.gradient(y, x).numpy(), sig, "float32", "transcendental")
    h = tf.constant([1., 2.], tf.float16)
    with tf.GradientTape() as t:
        t.watch(h)
        y = log1pexp(h)
    g = t.gradient(y, h)
    assert y.dtype == tf.float16 and g.dtype == tf.float16
    assert_close(g.numpy(), sig[:2], "float16", "transcendental")


def test_recompute_grad_keeps_the_outer_tape_off_the_forward_and_reruns_it():
    runs = []
    w = tf.Variable([2., 3.])

    @tf.recompute_grad
    def seg(x, unused):
        runs.append(1)
        return tf.sin(x) * w
    x = tf.constant([0.5, 1.0])
    u = tf.constant([7.])
    with tf.GradientTape(persistent=True) as t:
        t.watch([x, u])
        y = seg(x, u)
        inner = tf.sin(x)   # recorded: the outer tape is back on after the segment
    gx, gu, gw = t.gradient(y, [x, u, w])
    assert len(runs) == 2   # the forward, then the re-run at the backward pass
    assert_close(gx.numpy(), np.cos([0.5, 1.0]) * [2., 3.], "float32", "transcendental")
    assert_close(gw.numpy(), np.sin([0.5, 1.0]), "float32", "transcendental")
    np.testing.assert_array_equal(gu.numpy(), [0.])   # unconnected: zeros (TensorFlow)
    assert t.gradient(inner, x) is not None
