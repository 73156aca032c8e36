"""tf.einsum (src/mixprec/_einsum.py): equations against NumPy's einsum in float64 and
TensorFlow 2.21's literal results and errors; gradients against finite differences; the
contraction is a MatMul the AMP rewrite colours (Einsum is on TensorFlow's allow list)."""

import numpy as np
import pytest

import mixprec as tf
from test_tape import check_grad
from tolerances import assert_close

rng = np.random.default_rng(7)

CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,jk->...ik", [(2, 2, 3, 4), (4, 5)]),
    ("bij,jk->bik", [(2, 3, 4), (4, 5)]),
    ("ij->ji", [(2, 3)]),
    ("ba", [(2, 3)]),
    ("abc->cab", [(2, 3, 4)]),
    ("ij->", [(2, 3)]),
    ("ij->j", [(2, 3)]),
    ("i,j->ij", [(2,), (3,)]),
    ("i,i->", [(4,)] * 2),
    ("ij,ij->i", [(2, 3)] * 2),
    ("ij,ij->ij", [(2, 3)] * 2),
    ("bqhd,bkhd->bhqk", [(2, 3, 2, 4), (2, 5, 2, 4)]),
    ("bhqk,bkhd->bqhd", [(2, 2, 3, 5), (2, 5, 2, 4)]),
    ("abc,cd->abd", [(2, 3, 4), (4, 5)]),
    ("abc,cde->abde", [(2, 3, 4), (4, 2, 3)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("ijk,jk->i", [(2, 3, 4), (3, 4)]),
]


@pytest.mark.parametrize("eq,shapes", CASES, ids=[c[0] for c in CASES])
def test_einsum_matches_numpy_float64(eq, shapes):
    xs = [rng.standard_normal(s) for s in shapes]
    got = tf.einsum(eq, *[tf.constant(x) for x in xs])
    want = np.einsum(eq, *xs)
    assert got.dtype == tf.float64 and tuple(got.shape) == want.shape
    assert_close(got.numpy(), want, "float64", "matmul")


@pytest.mark.parametrize("eq,shapes", [c for c in CASES if c[0] in (
    "ij,jk->ik", "bij,bjk->bik", "...ij,jk->...ik", "ij->ji", "i,j->ij", "ij,ij->i",
    "bqhd,bkhd->bhqk", "ii->i", "ij,jk,kl->il")], ids=lambda c: str(c))
def test_einsum_gradients_match_finite_differences(eq, shapes):
    check_grad(lambda *ts: tf.einsum(eq, *ts), *[rng.standard_normal(s) for s in shapes])


def test_einsum_literal_results_as_tensorflow():
    a = tf.constant(np.arange(6.).reshape(2, 3), tf.float32)
    b = tf.constant(np.arange(12.).reshape(3, 4), tf.float32)
    np.testing.assert_array_equal(tf.einsum("ab,bc", a, b).numpy(),
                                  [[20., 23., 26., 29.], [56., 68., 80., 92.]])
    np.testing.assert_array_equal(tf.einsum("ba", a).numpy(), [[0., 3.], [1., 4.], [2., 5.]])
    assert tf.einsum("ab->", a).numpy() == 15.0
    assert tf.einsum("ab,ab->", a, a).numpy() == 55.0
    np.testing.assert_array_equal(tf.einsum("ii->i", tf.constant([[1., 2.], [3., 4.]])).numpy(),
                                  [1., 4.])
    h = tf.einsum("ab,bc->ac", tf.constant([[1.]], tf.float16), tf.constant([[2.]], tf.float16))
    assert h.dtype == tf.float16
    assert tf.linalg.einsum is tf.einsum


def test_einsum_errors_as_tensorflow():
    a = tf.ones([2, 3])
    b = tf.ones([3, 4])
    with pytest.raises(ValueError, match="Output subscripts contain the label d not present"):
        tf.einsum("ab,bc->ad", a, b)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Expected dimension 3 at axis 0 of the input shaped \[2,3\] but "
                             r"got dimension 2"):
        tf.einsum("ab,bc->ac", a, a)
    with pytest.raises(ValueError, match='Got 1 inputs for equation "ab,bc", expecting 2'):
        tf.einsum("ab,bc", a)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Expected input 0 to have rank 3 but got: 2"):
        tf.einsum("abc->a", a)
    with pytest.raises(ValueError, match="Output subscripts contain a label appearing more "
                                         "than once: ab,bc->aac"):
        tf.einsum("ab,bc->aac", a, b)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"cannot compute Einsum as input #1\(zero-based\) was expected to "
                             r"be a half tensor but is a float tensor"):
        tf.einsum("ab,bc->ac", tf.constant([[1.]], tf.float16), tf.constant([[2.]]))


def test_einsum_contraction_is_coloured_by_the_amp_rewrite():
    x = np.array([[1 + 2.0**-12]], np.float32)

    @tf.function
    def f(x, w):
        return tf.einsum("ab,bc->ac", x, w)
    tf.config.optimizer.set_experimental_options({"auto_mixed_precision": True})
    try:
        out = f(tf.constant(x), tf.constant([[1.0]]))
    finally:
        tf.config.optimizer.set_experimental_options({"auto_mixed_precision": False})
    assert out.dtype == tf.float32
    assert float(out.numpy()[0, 0]) == 1.0  # the product ran in float16 (allow list)


def test_einsum_in_a_traced_function_with_reduce_retracing():
    @tf.function(reduce_retracing=True)
    def f(a, b):
        return tf.einsum("bij,jk->bik", a, b)
    for n in (2, 3, 4):
        a = rng.standard_normal((n, 3, 4)).astype(np.float32)
        b = rng.standard_normal((4, 5)).astype(np.float32)
        assert_close(f(tf.constant(a), tf.constant(b)).numpy(), np.einsum("bij,jk->bik", a, b),
                     "float32", "matmul")
