"""tf.custom_gradient and tf.recompute_grad inside a traced tf.function: the forward is
recorded like any ops, the user's gradient function runs when tape.gradient is traced and
its ops are recorded, so a replay runs no Python. Traced steps equal the eager ones bit for
bit; gradients checked against float64 finite differences."""

import warnings

import numpy as np

import mixprec as tf
from mixprec import keras
from test_tape import H, _numeric_grads
from tolerances import tolerance


def _no_break(fn, *args):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = fn(*args)
    assert not any("graph break" in str(m.message) for m in w), [str(m.message) for m in w]
    return out


def _softclip_layer():
    """A layer whose activation has a custom gradient (clipped, as a straight-through
    estimator), reading the layer's variables inside the custom function."""
    calls = []

    @tf.custom_gradient
    def clipped_square(x):
        y = tf.square(x)

        def grad(dy):
            calls.append(1)
            return tf.clip_by_value(dy * 2.0 * x, -1.0, 1.0)
        return y, grad
    return clipped_square, calls


def _train(step_fn, w0, b0, xs, ys, opt_cls):
    w = tf.Variable(w0)
    b = tf.Variable(b0)
    opt = opt_cls(0.05)
    f, calls = _softclip_layer()

    def step(x, y):
        with tf.GradientTape() as tape:
            h = f(tf.matmul(x, w) + b)
            loss = tf.reduce_mean(tf.square(h - y))
        grads = tape.gradient(loss, [w, b])
        opt.apply_gradients(zip(grads, [w, b]))
        return loss

    run = step_fn(step)
    losses = [run(tf.constant(x), tf.constant(y)).numpy() for x, y in zip(xs, ys)]
    return losses, w.numpy(), b.numpy(), run, calls


def test_custom_gradient_in_a_traced_train_step_equals_the_eager_step_bitwise():
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((3, 2)).astype(np.float32)
    b0 = rng.standard_normal(2).astype(np.float32)
    xs = [rng.standard_normal((4, 3)).astype(np.float32) for _ in range(4)]
    ys = [rng.standard_normal((4, 2)).astype(np.float32) for _ in range(4)]
    for opt_cls in (keras.optimizers.SGD, keras.optimizers.Adam):
        le, we, be, _, ce = _train(lambda s: s, w0, b0, xs, ys, opt_cls)
        with warnings.catch_warnings(record=True) as wrn:
            warnings.simplefilter("always")
            lt, wt, bt, run, ct = _train(tf.function, w0, b0, xs, ys, opt_cls)
        assert not any("graph break" in str(m.message) for m in wrn)
        # Adam makes its slots at the first call: traced twice then (TensorFlow's rule for
        # variables made by the first call), never again; grad_fn runs once per trace
        n = run.experimental_get_tracing_count()
        assert n == (2 if opt_cls is keras.optimizers.Adam else 1)
        assert len(ce) == 4 and len(ct) == n
        np.testing.assert_array_equal(np.array(lt), np.array(le))
        np.testing.assert_array_equal(wt, we)
        np.testing.assert_array_equal(bt, be)


def test_traced_custom_gradient_matches_finite_differences_float64():
    @tf.custom_gradient
    def f(x, y):
        out = tf.sin(x) * y

        def grad(dz):
            return dz * tf.cos(x) * y, dz * tf.sin(x)
        return out, grad

    @tf.function
    def grads(x, y):
        with tf.GradientTape() as t:
            t.watch([x, y])
            z = tf.reduce_sum(f(x, y) * f(y, x))
        return t.gradient(z, [x, y])

    rtol, atol = tolerance("float64", "finite_difference")
    rng = np.random.default_rng(1)
    for _ in range(3):  # the first call traces, the others replay
        a, b = rng.standard_normal(5), rng.standard_normal(5)
        ga, gb = _no_break(grads, tf.constant(a), tf.constant(b))
        na, nb = _numeric_grads(lambda x, y: tf.reduce_sum(tf.sin(x) * y * tf.sin(y) * x),
                                [a, b], 1.0, H)
        np.testing.assert_allclose(ga.numpy(), na, rtol=rtol, atol=atol)
        np.testing.assert_allclose(gb.numpy(), nb, rtol=rtol, atol=atol)
    assert grads.experimental_get_tracing_count() == 1


def test_custom_gradient_with_variables_traced():
    v = tf.Variable([1.5, -0.5])

    @tf.custom_gradient
    def scaled(x):
        y = x * v

        def grad(dy, variables=None):
            return dy * v * 3.0, [tf.reduce_sum(dy * x, axis=0) * 3.0]
        return y, grad

    def step(x):
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.reduce_sum(scaled(x))
        return t.gradient(y, [x, v])

    traced = tf.function(step)
    for k in range(3):
        x = tf.constant([[1.0, 2.0], [3.0, 4.0 + k]])
        e = step(x)
        t = _no_break(traced, x)
        for a, b in zip(e, t):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(t[1].numpy(), [12.0, 24.0])  # 3 * column sums


def test_recompute_grad_traced_equals_eager():
    w = tf.Variable([[1., 2.], [3., 4.]])

    @tf.recompute_grad
    def layer(x):
        return tf.tanh(tf.matmul(x, w))

    def step(x):
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.reduce_sum(layer(x))
        return t.gradient(y, [x, w])

    traced = tf.function(step)
    gx, gw = _no_break(traced, tf.constant([[0.1, 0.2]]))
    # TensorFlow 2.21 (tests/test_custom_gradient.py)
    np.testing.assert_allclose(gx.numpy(), [[1.4746882915496826, 3.584116220474243]],
                               *tolerance("float32", "transcendental"))
    for x in ([[0.3, -0.2]], [[0.5, 0.1]]):
        e, t = step(tf.constant(x)), traced(tf.constant(x))
        for a, b in zip(e, t):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert traced.experimental_get_tracing_count() == 1


def test_gradient_taken_outside_the_function_uses_the_custom_gradient():
    @tf.custom_gradient
    def ste(x):  # straight-through: the forward rounds, the gradient is the identity
        def grad(dy):
            return dy
        return tf.round(x), grad

    @tf.function
    def f(x):
        return ste(x) * 2.0

    x = tf.constant([0.4, 1.6])
    np.testing.assert_array_equal(f(x).numpy(), [0.0, 4.0])
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.reduce_sum(f(x))
    np.testing.assert_array_equal(t.gradient(y, x).numpy(), [2.0, 2.0])


def test_two_outputs_second_order_and_errors_as_tensorflow():
    @tf.custom_gradient
    def two(x):
        def grad(da, db):
            return da * 2.0 + db * 3.0
        return (x * 2.0, x * 3.0), grad

    @tf.function
    def f(x):
        with tf.GradientTape() as t:
            t.watch(x)
            a, b = two(x)
            z = a + b * b
        return t.gradient(z, x)

    # TensorFlow 2.21: 20.0 and 38.0
    assert float(_no_break(f, tf.constant(1.0))) == 20.0 and float(f(tf.constant(2.0))) == 38.0

    @tf.custom_gradient
    def cube(x):
        def grad(dy):
            return dy * 3.0 * x * x
        return x * x * x, grad

    @tf.function
    def f2(x):
        with tf.GradientTape() as t2:
            t2.watch(x)
            with tf.GradientTape() as t1:
                t1.watch(x)
                y = cube(x)
            d = t1.gradient(y, x)
        return d, t2.gradient(d, x)

    # TensorFlow 2.21: [12, 12] then [27, 18] (the gradient function's ops differentiated)
    assert [float(v) for v in _no_break(f2, tf.constant(2.0))] == [12.0, 12.0]
    assert [float(v) for v in f2(tf.constant(3.0))] == [27.0, 18.0]

    @tf.custom_gradient
    def bad(x):
        def grad(dy):
            raise ValueError("nope")
        return x * 1.0, grad

    @tf.function
    def f3(x):
        with tf.GradientTape() as t:
            t.watch(x)
            y = bad(x)
        return t.gradient(y, x)

    import pytest
    with pytest.raises(ValueError, match="nope"):  # TensorFlow 2.21: ValueError at the trace
        f3(tf.constant(1.0))
