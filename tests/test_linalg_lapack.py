"""tf.linalg.inv / tf.linalg.det (csrc/ops_linalg.c, csrc/cpu_linalg.c: LAPACK through the
linalg slot): TensorFlow 2.21's recorded results and errors, NumPy in float64, gradients
against float64 finite differences, traced == eager."""

import numpy as np
import pytest

import mixprec as tf
from test_tape import check_grad
from tolerances import assert_close

rng = np.random.default_rng(17)
IAE = tf.errors.InvalidArgumentError
A = [[4., 7.], [2., 6.]]


def test_inv_and_det_literals_as_tensorflow():
    got = tf.linalg.inv(A)
    assert got.dtype == tf.float32
    assert_close(got.numpy(), [[0.6, -0.7], [-0.2, 0.4]], "float32", "matmul")
    # TensorFlow 2.21: [[0.5999999, -0.19999996], [-0.69999987, 0.39999995]]
    assert_close(tf.linalg.inv(A, adjoint=True).numpy(), [[0.6, -0.2], [-0.7, 0.4]], "float32", "matmul")
    b = tf.constant([[[2., 0.], [0., 4.]], [[1., 2.], [3., 4.]]], tf.float64)
    assert_close(tf.linalg.inv(b).numpy(), [[[0.5, 0.], [0., 0.25]], [[-2., 1.], [1.5, -0.5]]],
                 "float64", "matmul")
    assert_close(tf.linalg.det(b).numpy(), [8., -2.], "float64", "matmul")
    assert tf.linalg.det(A).numpy() == pytest.approx(10.0, rel=1e-6)
    assert tf.linalg.det([[1., 2.], [2., 4.]]).numpy() == 0.0  # singular: 0, no error
    e = tf.linalg.inv(tf.ones([0, 0]))
    assert e.shape == (0, 0) and e.dtype == tf.float32
    assert tf.linalg.det(tf.ones([0, 0])).numpy() == 1.0
    assert tf.linalg.det(tf.constant([[2., -1., 0.], [-1., 2., -1.], [0., -1., 2.]])).numpy() == \
        pytest.approx(4.0, rel=1e-6)
    h = tf.linalg.inv(tf.constant(A, tf.float16))  # TensorFlow has a half kernel
    assert h.dtype == tf.float16
    assert_close(h.numpy(), [[0.6, -0.7], [-0.2, 0.4]], "float16", "matmul")


ERRORS = [
    (lambda: tf.linalg.inv([[1., 2.], [2., 4.]]), IAE, "Input is not invertible."),
    (lambda: tf.linalg.inv(tf.ones([2, 2], tf.float16)), IAE, "Input is not invertible."),
    (lambda: tf.linalg.inv(tf.ones([2, 2], tf.int32)), IAE,
     "Value for attr 'T' of int32 is not in the list of allowed values: double, float, half, "
     "complex64, complex128"),
    (lambda: tf.linalg.inv(tf.ones([2, 3])), IAE, "Input matrix must be square."),
    (lambda: tf.linalg.inv(tf.ones([2])), IAE, "Input tensor 0 must have rank >= 2, got 1"),
    (lambda: tf.linalg.det(tf.ones([2, 3])), IAE, "Input matrix must be square."),
    (lambda: tf.linalg.det(tf.ones([2, 2], tf.float16)), tf.errors.NotFoundError,
     "Could not find device for node: {{node MatrixDeterminant}} = MatrixDeterminant[T=DT_HALF]"),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_inv_and_det_errors_as_tensorflow(i):
    call, cls, msg = ERRORS[i]
    with pytest.raises(cls) as e:
        call()
    assert msg in str(e.value)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_inv_and_det_match_numpy(dt):
    x = (rng.standard_normal((2, 3, 5, 5)) + 5 * np.eye(5)).astype(dt)
    assert_close(tf.linalg.inv(x).numpy(), np.linalg.inv(x.astype(np.float64)), dt, "matmul")
    assert_close(tf.linalg.det(x).numpy(), np.linalg.det(x.astype(np.float64)), dt, "matmul")


def test_inv_and_det_gradients_match_finite_differences():
    x = rng.standard_normal((2, 3, 3)) + 4 * np.eye(3)
    check_grad(lambda t: tf.linalg.inv(t), x)
    check_grad(lambda t: tf.linalg.inv(t, adjoint=True), x)
    check_grad(lambda t: tf.linalg.det(t), x)
    check_grad(lambda t: tf.linalg.det(tf.linalg.inv(t)), x)


def test_inv_and_det_traced_equal_eager():
    x = tf.constant((rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)).astype(np.float32))
    f = lambda t: (tf.linalg.inv(t), tf.linalg.det(t), tf.linalg.inv(t, adjoint=True))  # noqa: E731
    for e, g in zip(f(x), tf.function(f)(x)):
        np.testing.assert_array_equal(g.numpy(), e.numpy())


def test_inv_top_level_names_as_tensorflow():
    assert "inv" not in tf.__dict__ and "det" not in tf.__dict__
