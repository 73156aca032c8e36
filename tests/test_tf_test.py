"""``tf.test`` (mixprec/test.py): TestCase's assertions and seeding, compute_gradient's
Jacobians (values printed by TensorFlow 2.21 for the same functions), device queries."""

import numpy as np
import pytest

import mixprec as tf


class _Case(tf.test.TestCase):
    def runTest(self):  # noqa: N802 - unittest's name
        pass


@pytest.fixture
def case():
    c = _Case()
    c.setUp()
    return c


def test_all_close_nested_and_failures(case):
    case.assertAllClose([1.0, 2.0], tf.constant([1.0, 2.0000001]))
    case.assertAllClose({"a": [1.0], "b": (tf.constant(2.0),)}, {"a": [1.0], "b": (2.0,)})
    case.assertAllClose(np.array([np.nan]), [np.nan])
    with pytest.raises(AssertionError, match="not close where"):
        case.assertAllClose([1.0, 2.0], [1.0, 2.1])
    with pytest.raises(AssertionError, match=r"Shape mismatch: expected \(2,\), got \(1,\)"):
        case.assertAllClose([1.0, 2.0], [1.0])
    with pytest.raises(AssertionError, match="mismatched keys"):
        case.assertAllClose({"a": 1.0}, {"b": 1.0})
    case.assertNotAllClose([1.0], [2.0])
    case.assertAllCloseAccordingToType(tf.constant([1.0], tf.float16),
                                       np.array([1.0005], np.float16))
    with pytest.raises(AssertionError):
        case.assertAllClose(np.array([1.0], np.float16), np.array([1.0005], np.float16))
    bf = tf.constant([1.0], tf.bfloat16)
    case.assertAllCloseAccordingToType(bf, [1.005])


def test_equality_order_and_shapes(case):
    case.assertAllEqual(tf.constant([1, 2]), [1, 2])
    with pytest.raises(AssertionError, match="not equal where"):
        case.assertAllEqual([1, 2], [1, 3])
    with pytest.raises(AssertionError, match="Shape mismatch"):
        case.assertAllEqual([1, 2], [1, 2, 3])
    case.assertNotAllEqual([1, 2], [1, 3])
    case.assertAllInRange(tf.constant([0.5, 1.0]), 0.0, 1.0)
    with pytest.raises(AssertionError, match=r"outside the range \[0.0, 1.0\)"):
        case.assertAllInRange([0.5, 1.0], 0.0, 1.0, open_upper_bound=True)
    with pytest.raises(AssertionError, match="are NaN"):
        case.assertAllInRange([np.nan], 0.0, 1.0)
    case.assertAllInSet([1, 2, 1], {1, 2})
    case.assertAllGreater(tf.constant([2, 3]), 1)
    case.assertAllLessEqual([2, 3], 3)
    case.assertShapeEqual(np.zeros((2, 3)), tf.zeros((2, 3)))
    case.assertDTypeEqual(tf.constant(1.0), np.float32)
    case.assertNear(1.0, 1.05, 0.1)
    case.assertArrayNear([1.0, 2.0], [1.01, 2.0], 0.02)
    case.assertStartsWith("mixprec", "mix")


def test_evaluate_session_errors_and_seeds(case):
    assert case.evaluate({"x": tf.constant(3)}) == {"x": 3}
    with case.cached_session() as sess:
        assert sess.run(tf.constant(2)) == 2
    with case.assertRaisesOpError("Incompatible shapes"):
        tf.constant([1, 2]) + tf.constant([1, 2, 3])
    with case.assertRaisesIncompatibleShapesError():
        tf.constant([1, 2]) * tf.constant([1, 2, 3])
    a = tf.random.uniform([3]).numpy()
    case.setUp()
    np.testing.assert_array_equal(a, tf.random.uniform([3]).numpy())
    assert case.get_temp_dir() == case.get_temp_dir()


def test_compute_gradient_matches_tensorflow():
    th, nu = tf.test.compute_gradient(lambda x, y: x * x * y,
                                      [np.array([1.0, 2.0], np.float32), np.array(3.0, np.float32)])
    assert [a.tolist() for a in th] == [[[6.0, 0.0], [0.0, 12.0]], [[1.0], [4.0]]]
    assert [a.tolist() for a in nu] == [[[6.0, 0.0], [0.0, 12.0]], [[1.0], [4.0]]]
    th, nu = tf.test.compute_gradient(tf.nn.softmax, [np.array([[1.0, 2.0, 0.5]])])
    assert np.round(th[0], 6).tolist() == [[0.177759, -0.145332, -0.032428],
                                           [-0.145332, 0.23348, -0.088148],
                                           [-0.032428, -0.088148, 0.120576]]
    assert tf.test.max_error(th, nu) < 1e-6
    with pytest.raises(ValueError, match="must be a list or tuple"):
        tf.test.compute_gradient(tf.nn.softmax, np.ones(3))


def test_device_queries():
    gpus = tf.config.list_physical_devices("GPU")
    assert tf.test.gpu_device_name() == ("/device:GPU:0" if gpus else "")
    assert tf.test.is_gpu_available() == bool(gpus)
    assert tf.test.is_built_with_cuda() and not tf.test.is_built_with_rocm()


class TestAsAUserWould(tf.test.TestCase):
    """A TestCase subclass collected by pytest, as users write them."""

    def test_square(self):
        self.assertAllClose(tf.square(tf.constant([2.0, 3.0])), [4.0, 9.0])

    def test_session_helper_is_not_a_test(self):
        assert getattr(tf.test.TestCase.test_session, "__test__", True) is False
