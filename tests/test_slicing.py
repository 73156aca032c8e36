"""Tensor-bound slices (src/mixprec/_slicing.py, csrc/ops_slice_t.c): ``x[i:j]``, ``x[:, i]``,
``x[i, j]``, tf.slice and tf.strided_slice with traced bounds are ops that read their spec
at every replay (no graph break); results, tracing counts and errors as TensorFlow 2.21
printed them (literals recorded with TF 2.21 on the CPU), traced == eager, gradients against
float64 finite differences."""

import warnings

import numpy as np
import pytest

import mixprec as tf
from tolerances import tolerance

X = np.arange(24, dtype=np.float32).reshape(4, 6)
BOUNDS = [(1, 3), (0, 2), (2, 4), (-1, 3)]

# name: (function, TensorFlow 2.21's (shape, sum) per bounds of BOUNDS, or an error message)
CASES = {
    "x[i:]": (lambda x, i, j: x[i:], [([3, 6], 261.0), ([4, 6], 276.0), ([2, 6], 210.0),
                                      ([1, 6], 123.0)]),
    "x[i:j]": (lambda x, i, j: x[i:j], [([2, 6], 138.0), ([2, 6], 66.0), ([2, 6], 210.0),
                                        ([0, 6], 0.0)]),
    "x[:, i]": (lambda x, i, j: x[:, i], [([4], 40.0), ([4], 36.0), ([4], 44.0), ([4], 56.0)]),
    "x[i, j]": (lambda x, i, j: x[i, j], [([], 9.0), ([], 2.0), ([], 16.0), ([], 21.0)]),
    "x[i:j:2]": (lambda x, i, j: x[i:j:2], [([1, 6], 51.0), ([1, 6], 15.0), ([1, 6], 87.0),
                                            ([0, 6], 0.0)]),
    "x[-i:]": (lambda x, i, j: x[-i:], [([1, 6], 123.0), ([4, 6], 276.0), ([2, 6], 210.0),
                                        ([3, 6], 261.0)]),
    "x[..., i:j, None]": (lambda x, i, j: x[..., i:j, None],
                          [([4, 2, 1], 84.0), ([4, 2, 1], 76.0), ([4, 2, 1], 92.0),
                           ([4, 0, 1], 0.0)]),
    "tf.slice": (lambda x, i, j: tf.slice(x, tf.stack([i, j]), [1, -1]),
                 [([1, 3], 30.0), ([1, 4], 14.0), ([1, 2], 33.0),
                  "Expected begin[0] in [0, 4], but got -1"]),
    "tf.strided_slice": (lambda x, i, j: tf.strided_slice(x, tf.stack([i, 0]), tf.stack([j, 6]),
                                                          [1, 2]),
                         [([2, 3], 66.0), ([2, 3], 30.0), ([2, 3], 102.0), ([0, 3], 0.0)]),
    "x[j:i:-1]": (lambda x, i, j: x[j:i:-1], [([2, 6], 210.0), ([2, 6], 138.0), ([1, 6], 123.0),
                                              ([0, 6], 0.0)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_traced_tensor_bounds_match_tensorflow(name):
    fn, want = CASES[name]
    f = tf.function(fn)
    x = tf.constant(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no graph break
        for (i, j), w in zip(BOUNDS, want):
            args = (x, tf.constant(i), tf.constant(j))
            if isinstance(w, str):
                with pytest.raises(tf.errors.InvalidArgumentError, match=w.replace("[", r"\[")):
                    f(*args)
                with pytest.raises(tf.errors.InvalidArgumentError, match=w.replace("[", r"\[")):
                    fn(*args)
                continue
            got, eager = f(*args), fn(*args)
            assert list(got.shape) == w[0] and float(tf.reduce_sum(got)) == w[1]
            np.testing.assert_array_equal(got.numpy(), eager.numpy())
    assert f.experimental_get_tracing_count() == 1
    g = f.get_concrete_function(x, tf.constant(1), tf.constant(3)).graph
    ops = {n["op"] for n in g.nodes() if n["kind"] == "Op"}
    assert ops & {"StridedSlice", "Slice"}


def test_a_traced_index_out_of_range_is_tensorflows_error():
    f = tf.function(lambda x, i, j: x[i, j])
    x = tf.constant(X)
    assert float(f(x, tf.constant(1), tf.constant(2))) == 8.0
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"slice index 10 of dimension 1 out of bounds\."):
        f(x, tf.constant(1), tf.constant(10))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"strides\[0\] must be non-zero"):
        tf.function(lambda x, s: x[::s])(x, tf.constant(0))
    with pytest.raises(TypeError, match="are valid indices"):
        tf.function(lambda x, i: x[i:tf.constant(1.0)])(x, tf.constant(0))
    # int32 and int64 bounds mix (TensorFlow: one int64 spec)
    r = tf.function(lambda x, i, j: x[i:j])(x, tf.constant(1), tf.constant(3, tf.int64))
    assert r.shape == (2, 6)


def test_gradients_through_traced_bounds():
    """TensorFlow 2.21: one trace, the gradient of sum(x[i:j]**2) + sum(slice) per bounds."""
    @tf.function
    def g(x, i, j):
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.reduce_sum(x[i:j] * x[i:j]) + tf.reduce_sum(tf.slice(x, tf.stack([i, 1]), [1, 2]))
        return t.gradient(y, x)

    x = tf.constant(X)
    want = {(1, 3): [[0.0] * 6, [12.0, 15.0, 17.0, 18.0, 20.0, 22.0],
                     [24.0, 26.0, 28.0, 30.0, 32.0, 34.0], [0.0] * 6],
            (0, 1): [[0.0, 3.0, 5.0, 6.0, 8.0, 10.0], [0.0] * 6, [0.0] * 6, [0.0] * 6]}
    for _ in range(2):
        for (i, j), w in want.items():
            np.testing.assert_array_equal(g(x, tf.constant(i), tf.constant(j)).numpy(), w)
    assert g.experimental_get_tracing_count() == 1


def test_traced_bound_gradients_match_finite_differences():
    rtol, atol = tolerance("float64", "finite_difference")
    rng = np.random.default_rng(3)
    xv = rng.uniform(0.5, 2.0, (5, 4))

    @tf.function
    def grad(x, i, j, k):
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.reduce_sum(tf.sin(x[i:j, k]) * 3.0) + tf.reduce_sum(x[-j:, ::-1][:, k] ** 2)
        return t.gradient(y, x)

    def value(x, i, j, k):
        return np.sum(np.sin(x[i:j, k]) * 3.0) + np.sum(x[-j:, ::-1][:, k] ** 2)

    h = 1e-6
    for i, j, k in [(1, 4, 2), (0, 2, -1), (2, 5, 0), (1, 4, 2)]:
        got = grad(tf.constant(xv), tf.constant(i), tf.constant(j), tf.constant(k)).numpy()
        fd = np.zeros_like(xv)
        for idx in np.ndindex(xv.shape):
            e = np.zeros_like(xv)
            e[idx] = h
            fd[idx] = (value(xv + e, i, j, k) - value(xv - e, i, j, k)) / (2 * h)
        np.testing.assert_allclose(got, fd, rtol=rtol, atol=atol)
    assert grad.experimental_get_tracing_count() == 1


def test_a_graph_baking_a_slice_size_is_recorded_again_not_retraced():
    """A gradient broadcast or reshape sized from a tensor-bound slice: a replay at another
    size records the graph again (not a trace), and replays are right at every size."""
    calls = []

    @tf.function
    def f(x, n):
        calls.append(1)
        y = x[:n]
        return tf.reshape(y, [-1]), tf.reduce_sum(y)

    x = tf.constant(X)
    for n in (1, 3, 1, 3, 2):
        flat, s = f(x, tf.constant(n))
        np.testing.assert_array_equal(flat.numpy(), X[:n].reshape(-1))
        assert float(s) == X[:n].sum()
    assert f.experimental_get_tracing_count() == 1
    assert len(calls) == 3  # one recording per size the graph holds

    @tf.function
    def free(x, n):  # nothing sized from the slice: one recording replays every n
        calls.append(2)
        return tf.reduce_sum(x[:n] * 2.0, axis=0)

    for n in (1, 3, 2, 4):
        np.testing.assert_array_equal(free(x, tf.constant(n)).numpy(), (X[:n] * 2).sum(0))
    assert calls.count(2) == 1


def test_eager_tensor_bounds_and_state_in_the_function():
    x = tf.constant(X)
    np.testing.assert_array_equal(x[tf.constant(1):tf.constant(-1)].numpy(), X[1:-1])
    v = tf.Variable(tf.zeros([6]))

    @tf.function
    def acc(i):
        v.assign_add(x[i])
        v.assign_add(x[i + 1:][0])
        return v[i:]

    r = acc(tf.constant(0))
    np.testing.assert_array_equal(r.numpy(), X[0] + X[1])
    r = acc(tf.constant(2))
    np.testing.assert_array_equal(r.numpy(), (X[0] + X[1] + X[2] + X[3])[2:])
    assert acc.experimental_get_tracing_count() == 1


def test_tensor_bounds_in_a_tensor_loop():
    """TensorFlow 2.21: 10.0 and 35.0 (one trace); the gradient loop gives [88.0, 88.0]."""
    x = tf.range(6.0)

    @tf.function
    def prefix_sums(x, n):
        s = tf.constant(0.0)
        for i in tf.range(n):
            s += tf.reduce_sum(x[:i + 1])
        return s

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a loop node: the slice follows i
        assert float(prefix_sums(x, tf.constant(4))) == 10.0
        assert float(prefix_sums(x, tf.constant(6))) == 35.0
    assert prefix_sums.experimental_get_tracing_count() == 1

    @tf.function
    def grads(x, n):
        s = tf.zeros([2])
        for i in tf.range(n):
            with tf.GradientTape() as t:
                t.watch(x)
                y = tf.reduce_sum(x[i:] ** 2)
            s += tf.reduce_sum(t.gradient(y, x))
        return s

    # a body whose gradient is sized from the slice runs as Python's loop (a graph break)
    with pytest.warns(UserWarning, match="slice with tensor bounds"):
        assert grads(x, tf.constant(3)).numpy().tolist() == [88.0, 88.0]
    assert grads(x, tf.constant(2)).numpy().tolist() == [60.0, 60.0]


def test_a_variable_bound_is_read_at_every_call():
    """TensorFlow 2.21: x[v:], x[1:, v], x[None, v] follow the variable, one trace."""
    x = tf.reshape(tf.range(12.0), [3, 4])
    v = tf.Variable(1)

    @tf.function
    def f():
        return x[v:], x[1:, v], x[None, v]

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = [r.numpy().tolist() for r in f()]
        assert got == [[[4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0]], [5.0, 9.0],
                       [[4.0, 5.0, 6.0, 7.0]]]
        v.assign(2)
        got = [r.numpy().tolist() for r in f()]
        assert got == [[[8.0, 9.0, 10.0, 11.0]], [6.0, 10.0], [[8.0, 9.0, 10.0, 11.0]]]
    assert f.experimental_get_tracing_count() == 1
