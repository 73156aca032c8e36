"""``mixprec.function`` (tf.function): accepted everywhere the guide puts it; for now the
function runs eagerly (see mixprec/_function.py)."""

import numpy as np
import pytest

import mixprec as tf


def test_without_arguments():
    calls = []

    @tf.function
    def f(x, y=1.0):
        """adds"""
        calls.append(1)
        return x + y

    assert float(f(tf.constant(2.0))) == 3.0
    assert float(f(tf.constant(2.0), y=5.0)) == 7.0
    assert f.__name__ == "f" and f.__doc__ == "adds"
    assert len(calls) == 2  # eager: the Python body runs on every call


def test_with_arguments():
    @tf.function(jit_compile=True, reduce_retracing=True, input_signature=None)
    def g(x):
        return x * 2

    assert float(g(tf.constant(4.0))) == 8.0
    assert g.jit_compile is True
    assert tf.function(lambda x: x, jit_compile=False).jit_compile is False
    assert tf.function(experimental_relax_shapes=True)(lambda: 1)() == 1
    assert tf.function(autograph=False)(lambda: 2)() == 2


def test_python_function():
    def h(x):
        return x - 1

    f = tf.function(h)
    assert f.python_function is h
    assert f.get_concrete_function() is not None
    assert "h" in repr(f)


class _Model:
    def __init__(self):
        self.w = tf.Variable(3.0)

    @tf.function
    def scale(self, x):
        return x * self.w

    @tf.function(jit_compile=True)
    def shift(self, x, by=1.0):
        return x + by


def test_methods():
    m = _Model()
    assert float(m.scale(tf.constant(2.0))) == 6.0
    assert float(m.shift(tf.constant(2.0), by=3.0)) == 5.0
    assert _Model.scale.python_function(m, 2.0).numpy() == 6.0


def test_bound_method_python_function():
    m = _Model()
    bound = m.scale
    assert float(bound.python_function(tf.constant(1.0))) == 3.0
    assert float(bound(tf.constant(1.0))) == 3.0


def test_training_step_in_a_function():
    # the guide's @tf.function train_step: tape, scaled loss, apply
    w = tf.Variable([1.0, -1.0])
    opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(0.5))

    @tf.function
    def train_step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(w * x))
            scaled = opt.get_scaled_loss(loss)
        grads = opt.get_unscaled_gradients(tape.gradient(scaled, [w]))
        opt.apply_gradients(zip(grads, [w]))
        return loss

    loss = train_step(tf.constant([1.0, 1.0]))
    assert float(loss) == 2.0
    np.testing.assert_allclose(w.numpy(), [0.0, 0.0])


def test_errors_propagate():
    @tf.function
    def bad(x):
        return tf.matmul(x, x)

    with pytest.raises(ValueError):
        bad(tf.constant([1.0, 2.0]))
