"""tf.linalg compositions (src/mixprec/_linalg_extra.py): literal results and errors recorded
from TensorFlow 2.21, gradients against float64 finite differences, traced == eager."""

import numpy as np
import pytest

import mixprec as tf
from test_tape import check_grad

rng = np.random.default_rng(11)
X = tf.reshape(tf.range(1., 13.), [2, 2, 3])
IAE = tf.errors.InvalidArgumentError

# (call, TensorFlow 2.21's dtype, shape and value)
LITERALS = [
    (lambda: tf.linalg.diag([[1, 2], [3, 4]]), "int32", [[[1, 0], [0, 2]], [[3, 0], [0, 4]]]),
    (lambda: tf.linalg.diag([1., 2.], num_rows=3, padding_value=9), "float32",
     [[1., 9.], [9., 2.], [9., 9.]]),
    (lambda: tf.linalg.diag([1., 2.], num_cols=4), "float32", [[1., 0., 0., 0.], [0., 2., 0., 0.]]),
    (lambda: tf.linalg.diag([1., 2.], k=1), "float32", [[0., 1., 0.], [0., 0., 2.], [0., 0., 0.]]),
    (lambda: tf.linalg.diag_part(X), "float32", [[1., 5.], [7., 11.]]),
    (lambda: tf.linalg.set_diag(X, [[0., 0.], [-1., -2.]]), "float32",
     [[[0., 2., 3.], [4., 0., 6.]], [[-1., 8., 9.], [10., -2., 12.]]]),
    (lambda: tf.linalg.set_diag(tf.reshape(tf.range(6.), [3, 2]), [9., 8.]), "float32",
     [[9., 1.], [2., 8.], [4., 5.]]),
    (lambda: tf.linalg.band_part(tf.reshape(tf.range(16.), [4, 4]), 1, 0), "float32",
     [[0., 0., 0., 0.], [4., 5., 0., 0.], [0., 9., 10., 0.], [0., 0., 14., 15.]]),
    (lambda: tf.linalg.band_part(tf.reshape(tf.range(12), [3, 4]), -1, 1), "int32",
     [[0, 1, 0, 0], [4, 5, 6, 0], [8, 9, 10, 11]]),
    (lambda: tf.linalg.band_part(tf.reshape(tf.range(12.), [4, 3]), 0, -1), "float32",
     [[0., 1., 2.], [0., 4., 5.], [0., 0., 8.], [0., 0., 0.]]),
    (lambda: tf.linalg.band_part(tf.reshape(tf.range(12.), [4, 3]), -2, 0), "float32",
     [[0., 0., 0.], [3., 4., 0.], [6., 7., 8.], [9., 10., 11.]]),
    (lambda: tf.linalg.band_part(tf.reshape(tf.range(12.), [4, 3]), 1, 3), "float32",
     [[0., 1., 2.], [3., 4., 5.], [0., 7., 8.], [0., 0., 11.]]),
    (lambda: tf.linalg.trace(X), "float32", [6., 18.]),
    (lambda: tf.linalg.trace([[1, 2], [3, 4]]), "int32", 5),
    (lambda: tf.linalg.trace(tf.ones([2, 2], tf.float16)), "float16", 2.),
    (lambda: tf.eye(2, 3, batch_shape=[2], dtype=tf.int32), "int32",
     [[[1, 0, 0], [0, 1, 0]], [[1, 0, 0], [0, 1, 0]]]),
    (lambda: tf.linalg.tensor_diag([[1, 2], [3, 4]]), "int32",
     [[[[1, 0], [0, 0]], [[0, 2], [0, 0]]], [[[0, 0], [3, 0]], [[0, 0], [0, 4]]]]),
    (lambda: tf.linalg.tensor_diag_part(tf.reshape(tf.range(16), [2, 2, 2, 2])), "int32",
     [[0, 5], [10, 15]]),
    (lambda: tf.linalg.matrix_transpose(X), "float32",
     [[[1., 4.], [2., 5.], [3., 6.]], [[7., 10.], [8., 11.], [9., 12.]]]),
    (lambda: tf.linalg.adjoint(tf.constant([[1, 2, 3]])), "int32", [[1], [2], [3]]),
    (lambda: tf.linalg.matvec(X, [1., 0., -1.]), "float32", [[-2., -2.], [-2., -2.]]),
    (lambda: tf.linalg.matvec(X, [1., -1.], transpose_a=True), "float32",
     [[-3., -3., -3.], [-3., -3., -3.]]),
    (lambda: tf.linalg.cross([[1., 2., 3.], [0., 1., 0.]], [[4., 5., 6.], [0., 0., 1.]]),
     "float32", [[-3., 6., -3.], [1., 0., 0.]]),
    (lambda: tf.linalg.cross([1, 2, 3], [4, 5, 6]), "int32", [-3, 6, -3]),
    (lambda: tf.linalg.l2_normalize([3., 4.]), "float32", [0.6000000238418579, 0.800000011920929]),
    (lambda: tf.linalg.norm([[3., 4.], [1., 1.]], axis=[-2, -1]), "float32", 5.196152210235596),
    (lambda: tf.linalg.norm([[3., 4.], [1., 1.]], ord=1, axis=[-2, -1]), "float32", 5.0),
    (lambda: tf.linalg.tensordot([[1., 2.]], [[3.], [4.]], 1), "float32", [[11.]]),
]


@pytest.mark.parametrize("i", range(len(LITERALS)))
def test_linalg_literals_as_tensorflow(i):
    call, dtype, want = LITERALS[i]
    got = call()
    assert got.dtype.name == dtype
    want = np.asarray(want)
    assert tuple(got.shape) == want.shape
    np.testing.assert_array_equal(got.numpy(), want.astype(got.numpy().dtype))


# (call, exception class, TensorFlow 2.21's message)
ERRORS = [
    (lambda: tf.linalg.diag(3.0), IAE, "diagonal must be at least 1-dim, received shape: []"),
    (lambda: tf.linalg.diag([True, False]), TypeError, "Cannot convert 0 to EagerTensor of dtype bool"),
    (lambda: tf.linalg.diag([1., 2.], num_rows=3, num_cols=4), IAE,
     "The number of rows or columns is not consistent with the specified d_lower, d_upper, and diagonal."),
    (lambda: tf.linalg.diag([1., 2.], num_rows=1, num_cols=1), IAE, "The number of rows is too small."),
    (lambda: tf.linalg.diag_part([1., 2.]), IAE, "input must be at least 2-dim, received shape: [2]"),
    (lambda: tf.linalg.set_diag(X, [[0., 0., 0.], [-1., -2., 3.]]), IAE,
     "Either first dimensions of diagonal don't match input.shape[:-2], or diagonal.shape[:-1] is "
     "not equal to the longests diagonal in range [lower_diag_index:upper_diag_index]."),
    (lambda: tf.linalg.band_part(tf.reshape(tf.range(12.), [4, 3]), 7, 0), IAE,
     "num_lower must be negative or less or equal to number of rows (4) got: 7"),
    (lambda: tf.linalg.band_part(tf.range(3.), 1, 0), IAE,
     "input must be at least 2-dim, received shape: [3]"),
    (lambda: tf.linalg.band_part(tf.ones([2, 2]), 1.0, 0), TypeError,
     "Cannot convert 1.0 to EagerTensor of dtype int64"),
    (lambda: tf.linalg.trace([1., 2.]), IAE, "input must be at least 2-dim, received shape: [2]"),
    (lambda: tf.eye(-1), IAE, "Dimension -1 must be >= 0"),
    (lambda: tf.linalg.tensor_diag_part(tf.reshape(tf.range(6), [2, 3])), IAE,
     "Invalid shape [2,3]: dimensions 0 and 1 do not match."),
    (lambda: tf.linalg.tensor_diag_part(tf.reshape(tf.range(8), [2, 2, 2])), IAE,
     "even and positive, got shape [2,2,2]"),
    (lambda: tf.linalg.matrix_transpose([1., 2.]), ValueError,
     "Argument `a` should be a (batch) matrix with rank >= 2."),
    (lambda: tf.linalg.matvec(X, [1., -1.]), IAE,
     "Matrix size-incompatible: In[0]: [2,2,3], In[1]: [2,1]"),
    (lambda: tf.linalg.cross([[1., 2., 3.], [0., 1., 0.]], [4., 5., 6.]), IAE,
     "Both inputs must be of same shape: [2,3] vs. [3]"),
    (lambda: tf.linalg.cross([1., 2.], [3., 4.]), tf.errors.FailedPreconditionError,
     "Cross-products are only defined for 3-element vectors."),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_linalg_errors_as_tensorflow(i):
    call, cls, msg = ERRORS[i]
    with pytest.raises(cls) as e:
        call()
    assert msg in str(e.value)


GRADS = [
    ("diag", lambda d: tf.linalg.diag(d), [(2, 3)]),
    ("diag_k", lambda d: tf.linalg.diag(d, k=-1), [(3,)]),
    ("diag_part", lambda x: tf.linalg.diag_part(x), [(2, 3, 4)]),
    ("diag_part_k", lambda x: tf.linalg.diag_part(x, k=1), [(3, 4)]),
    ("set_diag", lambda x, d: tf.linalg.set_diag(x, d), [(2, 4, 3), (2, 3)]),
    ("band_part", lambda x: tf.linalg.band_part(x, 1, 0), [(2, 4, 4)]),
    ("trace", lambda x: tf.linalg.trace(x), [(2, 3, 3)]),
    ("tensor_diag", lambda d: tf.linalg.tensor_diag(d), [(2, 2)]),
    ("tensor_diag_part", lambda x: tf.linalg.tensor_diag_part(x), [(2, 3, 2, 3)]),
    ("matrix_transpose", lambda x: tf.linalg.matrix_transpose(x), [(2, 3, 4)]),
    ("matvec", lambda a, b: tf.linalg.matvec(a, b), [(2, 3, 4), (2, 4)]),
    ("cross", lambda a, b: tf.linalg.cross(a, b), [(4, 3), (4, 3)]),
    ("norm_fro", lambda x: tf.linalg.norm(x, axis=[0, 1]), [(3, 4)]),
    ("tensordot", lambda a, b: tf.linalg.tensordot(a, b, [[0, 2], [1, 0]]), [(2, 3, 4), (4, 2, 5)]),
]


@pytest.mark.parametrize("name,f,shapes", GRADS, ids=[g[0] for g in GRADS])
def test_linalg_gradients_match_finite_differences(name, f, shapes):
    check_grad(f, *[rng.standard_normal(s) for s in shapes])


@pytest.mark.parametrize("name,f,shapes", GRADS, ids=[g[0] for g in GRADS])
def test_linalg_traced_equals_eager(name, f, shapes):
    xs = [tf.constant(rng.standard_normal(s).astype(np.float32)) for s in shapes]
    eager = f(*xs).numpy()
    traced = tf.function(f)(*xs).numpy()
    np.testing.assert_array_equal(traced, eager)


def test_linalg_names_and_top_level_aliases_as_tensorflow():
    for n in ("eye", "norm", "tensordot", "matmul", "einsum"):
        assert getattr(tf, n) is getattr(tf.linalg, n)
    assert tf.linalg.l2_normalize is tf.math.l2_normalize
    # TensorFlow keeps these in tf.linalg only
    for n in ("band_part", "diag", "trace", "cross", "matvec", "set_diag", "adjoint"):
        assert n not in tf.__dict__
