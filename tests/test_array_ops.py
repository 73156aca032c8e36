"""tf.tile, tf.pad, tf.split and tf.cumsum (src/mixprec/_array_ops.py: compositions of core
ops): values against NumPy for every dtype, gradients against float64 finite differences,
TensorFlow 2.21's errors (checked on its CPU), and a traced call equal to the eager one."""

import numpy as np
import pytest

import mixprec as tf
from test_tape import check_grad
from tolerances import NP_DTYPE, assert_close

DTYPES = ("float16", "bfloat16", "float32", "float64", "int32", "int64")
R = np.random.default_rng(11)


def _x(dt, shape=(3, 4)):
    return R.uniform(-5, 5, shape).astype(NP_DTYPE[dt])


def _eq(got, want):
    assert got.dtype.name == str(want.dtype) if want.dtype != object else True
    assert tuple(got.shape) == want.shape
    np.testing.assert_array_equal(np.asarray(got.numpy()), want)


@pytest.mark.parametrize("dt", DTYPES + ("bool",))
def test_tile_matches_numpy(dt):
    x = _x(dt) if dt != "bool" else R.integers(0, 2, (3, 4)).astype(bool)
    for m in ([1, 1], [2, 3], [0, 2], [3, 1]):
        _eq(tf.tile(tf.constant(x), m), np.tile(x, m))
    _eq(tf.tile(tf.constant(x[0]), tf.constant([3])), np.tile(x[0], 3))
    with pytest.raises(tf.errors.InvalidArgumentError, match="vector of length 2 but got length 1"):
        tf.tile(tf.constant(x), [2])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"multiples\[0\] >= 0, but got -1"):
        tf.tile(tf.constant(x), [-1, 1])


@pytest.mark.parametrize("dt", DTYPES)
def test_pad_matches_numpy(dt):
    x = _x(dt)
    p = [[1, 2], [0, 3]]
    _eq(tf.pad(tf.constant(x), p), np.pad(x, p))
    _eq(tf.pad(tf.constant(x), p, constant_values=3), np.pad(x, p, constant_values=3))
    _eq(tf.pad(tf.constant(x), [[2, 2], [3, 1]], "REFLECT"), np.pad(x, [[2, 2], [3, 1]], "reflect"))
    _eq(tf.pad(tf.constant(x), [[3, 1], [4, 4]], "symmetric"),
        np.pad(x, [[3, 1], [4, 4]], "symmetric"))
    with pytest.raises(tf.errors.InvalidArgumentError, match="must be the rank of inputs"):
        tf.pad(tf.constant(x), [[1, 1]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Paddings must be non-negative: 0 -1"):
        tf.pad(tf.constant(x), [[0, -1], [0, 0]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="3, 0 not less than 3"):
        tf.pad(tf.constant(x), [[3, 0], [0, 0]], "REFLECT")
    with pytest.raises(tf.errors.InvalidArgumentError, match="4, 0 greater than 3"):
        tf.pad(tf.constant(x), [[4, 0], [0, 0]], "SYMMETRIC")
    with pytest.raises(ValueError, match="Received `mode` = FOO"):
        tf.pad(tf.constant(x), p, "foo")


@pytest.mark.parametrize("dt", DTYPES)
def test_split_matches_numpy(dt):
    x = _x(dt, (4, 6))
    for got, want in zip(tf.split(tf.constant(x), 3, axis=1), np.split(x, 3, axis=1)):
        _eq(got, want)
    parts = tf.split(tf.constant(x), [1, -1, 2], axis=-1)
    for got, want in zip(parts, np.split(x, [1, 4], axis=1)):
        _eq(got, want)
    _eq(tf.split(tf.constant(x), [4])[0], x)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"split_dim 1 \(size = 6\) and num_split 4"):
        tf.split(tf.constant(x), 4, axis=1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Got: 5"):
        tf.split(tf.constant(x), [2, 3], axis=1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="only be one -1"):
        tf.split(tf.constant(x), [-1, -1], axis=1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="but got 2"):
        tf.split(tf.constant(x), 2, axis=2)


@pytest.mark.parametrize("dt", DTYPES)
def test_cumsum_matches_numpy(dt):
    x = _x(dt, (5, 13)) if dt.startswith("int") else R.uniform(-1, 1, (5, 13)).astype(NP_DTYPE[dt])
    kind = "reduction"
    for axis in (0, 1, -1):
        for exclusive in (False, True):
            for reverse in (False, True):
                w = x.astype(np.float64) if not dt.startswith("int") else x
                w = np.flip(w, axis) if reverse else w
                want = np.cumsum(w, axis=axis)
                if exclusive:
                    want = want - w
                want = np.flip(want, axis) if reverse else want
                got = tf.cumsum(tf.constant(x), axis=axis, exclusive=exclusive, reverse=reverse)
                assert got.dtype.name == dt
                if dt.startswith("int"):
                    _eq(got, want.astype(x.dtype))
                else:
                    assert_close(np.asarray(got.numpy(), np.float64),
                                 want.astype(NP_DTYPE[dt]).astype(np.float64), dt, kind)
    assert tf.math.cumsum is tf.cumsum
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"axis in the range \[-2, 2\), but got 2"):
        tf.cumsum(tf.constant(x), axis=2)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.cumsum(tf.constant([True, False]))


GRADS = {
    "tile": (lambda x: tf.tile(x, [2, 3]), (2, 3)),
    "pad": (lambda x: tf.pad(x, [[1, 2], [2, 0]], constant_values=1.5), (2, 3)),
    "pad_reflect": (lambda x: tf.pad(x, [[2, 1], [1, 2]], "REFLECT"), (3, 4)),
    "pad_symmetric": (lambda x: tf.pad(x, [[3, 1], [0, 2]], "SYMMETRIC"), (3, 4)),
    "split": (lambda x: tf.concat([p * float(i + 1) for i, p in
                                    enumerate(tf.split(x, [1, -1, 2], axis=1))], 1), (2, 6)),
    "cumsum": (lambda x: tf.cumsum(x, axis=1), (2, 7)),
    "cumsum_exclusive_reverse": (lambda x: tf.cumsum(x, axis=0, exclusive=True, reverse=True),
                                 (5, 2)),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_match_finite_differences(name):
    f, shape = GRADS[name]
    check_grad(f, R.uniform(-2, 2, shape))


@pytest.mark.parametrize("name", sorted(GRADS))
def test_traced_equals_eager(name):
    f, shape = GRADS[name]
    g = tf.function(f)
    for _ in range(2):
        x = tf.constant(R.uniform(-2, 2, shape))
        np.testing.assert_array_equal(g(x).numpy(), f(x).numpy())
