"""keras.backend's tensor functions against tf-keras 2.21's on the same data
(golden/tf_backend.npz, written by golden/make_tf_backend.py), plus their argument errors
and the graph-mode-only names."""

import os
import sys

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.testing.tolerances import TOLERANCE

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
sys.path.insert(0, HERE)
from backend_cases import CASES, data  # noqa: E402

GOLD = np.load(os.path.join(HERE, "tf_backend.npz"))
K = keras.backend


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tf_keras(name):
    scope = {k: tf.constant(v) for k, v in data(np.random.default_rng(3)).items()}
    scope["K"] = K
    got = eval(CASES[name], scope)
    got = np.asarray(got.numpy() if hasattr(got, "numpy") else got)
    want = GOLD[name]
    assert got.shape == want.shape, name
    assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
    kind = "matmul" if name.startswith(("dot", "batch_dot", "conv", "batch_norm")) else "reduction"
    rtol, atol = TOLERANCE[("float32", kind)]
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=name)
    else:
        np.testing.assert_array_equal(got, want, err_msg=name)


def test_errors_as_tf_keras():
    x = tf.ones([2, 3, 4])
    with pytest.raises(ValueError, match="rank < 2"):
        K.batch_dot(tf.ones([3]), x)
    with pytest.raises(ValueError, match="different batch sizes"):
        K.batch_dot(x, tf.ones([3, 4, 2]))
    with pytest.raises(ValueError, match="axis 0"):
        K.batch_dot(x, x, axes=0)
    with pytest.raises(ValueError, match="Multiple target dimensions"):
        K.batch_dot(x, x, axes=[[1, 2], [1, 2]])
    with pytest.raises(ValueError, match="Unknown data_format"):
        K.bias_add(x, tf.ones([4]), data_format="nhwc")
    with pytest.raises(ValueError, match="Unknown padding"):
        K.conv2d(tf.ones([1, 4, 4, 1]), tf.ones([2, 2, 1, 1]), padding="full")
    with pytest.raises(ValueError, match="pooling mode"):
        K.pool2d(tf.ones([1, 4, 4, 1]), (2, 2), pool_mode="sum")
    with pytest.raises(ValueError, match="Rank of `condition`"):
        K.switch(tf.ones([2, 3, 4]) > 0, tf.ones([2, 3]), tf.ones([2, 3]))
    with pytest.raises(RuntimeError, match="GradientTape"):
        K.gradients(x, [x])
    with pytest.raises(RuntimeError, match="keras.Input"):
        K.placeholder(shape=(None, 3))
    with pytest.raises(ValueError, match="0 or 1"):
        K.learning_phase_scope(2)


def test_state_helpers():
    v = K.variable(np.ones((2, 2)), name="kv")
    assert v.dtype == tf.float32 and K.dtype(v) == "float32"
    K.update_add(v, np.ones((2, 2)))
    K.update_sub(v, 0.5 * np.ones((2, 2)))
    np.testing.assert_array_equal(K.get_value(v), np.full((2, 2), 1.5, "float32"))
    K.moving_average_update(v, tf.zeros([2, 2]), 0.9)
    np.testing.assert_allclose(K.eval(v), np.full((2, 2), 1.35, "float32"),
                               *TOLERANCE[("float32", "elementwise")])
    K.batch_set_value([(v, np.zeros((2, 2)))])
    assert K.batch_get_value([v])[0].sum() == 0
    with K.learning_phase_scope(1):
        assert K.learning_phase() == 1
    assert K.learning_phase() == 0
    assert K.get_uid("x") + 1 == K.get_uid("x")
    K.reset_uids()
    assert K.get_uid("x") == 1
    inp = keras.Input((3,))
    out = keras.layers.Dense(2, kernel_initializer="ones")(inp)
    f = K.function([inp], [out])
    np.testing.assert_array_equal(f([np.ones((1, 3), "float32")])[0], [[3.0, 3.0]])
