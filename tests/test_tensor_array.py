"""tf.TensorArray: TensorFlow 2.21's eager results and messages (recorded), and use inside
a traced function."""

import warnings

import pytest

import mixprec as tf


def test_write_read_stack_gather_concat():
    ta = tf.TensorArray(tf.float32, size=3)
    ta = ta.write(0, 1.0).write(1, 2.0).write(2, 3.0)
    assert ta.stack().numpy().tolist() == [1.0, 2.0, 3.0]
    assert int(ta.size()) == 3 and float(ta.read(1)) == 2.0 and ta.element_shape == []
    d = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    for i in range(4):
        d = d.write(i, tf.ones([2]) * i)
    assert d.stack().numpy().tolist() == [[0, 0], [1, 1], [2, 2], [3, 3]]
    assert d.gather([3, 0]).numpy().tolist() == [[3, 3], [0, 0]]
    assert d.concat().numpy().tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    u = tf.TensorArray(tf.float32, size=3).unstack(tf.constant([[1.0, 2.0], [3.0, 4.0],
                                                                 [5.0, 6.0]]))
    assert u.read(2).numpy().tolist() == [5.0, 6.0] and int(u.size()) == 3
    z = tf.TensorArray(tf.int32, size=3, element_shape=[2]).write(1, [1, 2])
    assert z.stack().numpy().tolist() == [[0, 0], [1, 2], [0, 0]]   # unwritten: zeros


def test_errors_as_tensorflow():
    with pytest.raises(tf.errors.OutOfRangeError, match="Tried to write to index 2 but array is "
                                                        "not resizeable and size is: 2"):
        tf.TensorArray(tf.float32, size=2).write(2, 1.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="TensorArray dtype is float32 but "
                                                             "Op is trying to write dtype int32"):
        tf.TensorArray(tf.float32, size=2).write(0, tf.constant(1))
    with pytest.raises(ValueError, match=r"Incompatible shape for value \(\(3,\)\), expected "
                                         r"\(\(2,\)\)"):
        tf.TensorArray(tf.float32, size=2).write(0, tf.ones([2])).write(1, tf.ones([3]))
    with pytest.raises(ValueError, match="Size must be declared for TensorArrays when eager "
                                         "execution is enabled."):
        tf.TensorArray(tf.float32)
    with pytest.raises(ValueError, match="Cannot convert a partially known TensorShape "
                                         "<unknown> to a Tensor."):
        tf.TensorArray(tf.float32, size=2).read(0)


def test_inside_a_traced_function():
    @tf.function
    def f(n):
        ta = tf.TensorArray(tf.int32, size=0, dynamic_size=True)
        for i in range(3):   # a Python loop: unrolled while tracing
            ta = ta.write(i, n + i)
        return ta.stack()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert f(tf.constant(10)).numpy().tolist() == [10, 11, 12]
        assert f(tf.constant(20)).numpy().tolist() == [20, 21, 22]

    @tf.function
    def g(x):
        ta = tf.TensorArray(tf.float32, size=3)
        for i in tf.range(3):   # writes at a traced index: host calls of the graph
            ta = ta.write(i, x * tf.cast(i, tf.float32))
        return ta.stack()

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no graph break
        assert g(tf.constant(2.0)).numpy().tolist() == [0.0, 2.0, 4.0]
        assert g(tf.constant(3.0)).numpy().tolist() == [0.0, 3.0, 6.0]
    assert g.experimental_get_tracing_count() == 1
    assert not any(t.eager for t in g._traces.values())


def test_dynamic_size_writes_in_a_range_loop_trace_and_replay():
    """TensorFlow 2.21: the stacked rows, the size, one trace (a TensorList in its loop)."""
    @tf.function
    def h(x, n):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        for i in tf.range(n):
            ta = ta.write(i, x[i] * 2.0)
        return ta.stack(), ta.size()

    x = tf.constant([1., 2., 3., 4.])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s, n = h(x, tf.constant(3))
        assert s.numpy().tolist() == [2., 4., 6.] and int(n) == 3
        s, n = h(x, tf.constant(4))   # a replay: the list grows to 4 rows
        assert s.numpy().tolist() == [2., 4., 6., 8.] and int(n) == 4
    assert h.experimental_get_tracing_count() == 1


def test_unstack_read_and_running_sums_in_a_range_loop():
    @tf.function
    def cumulative(x):
        ta = tf.TensorArray(tf.float32, size=tf.shape(x)[0]).unstack(x)
        out = tf.TensorArray(tf.float32, size=tf.shape(x)[0])
        s = tf.constant(0.0)
        for i in tf.range(tf.shape(x)[0]):
            s += ta.read(i)
            out = out.write(i, s)
        return out.stack()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cumulative(tf.constant([1., 2., 3.])).numpy().tolist() == [1., 3., 6.]
        assert cumulative(tf.constant([4., 5., 6.])).numpy().tolist() == [4., 9., 15.]
    assert cumulative.experimental_get_tracing_count() == 1


def test_under_a_tape_it_stays_list_backed_and_differentiable():
    @tf.function
    def f(x):
        with tf.GradientTape() as t:
            t.watch(x)
            ta = tf.TensorArray(tf.float32, size=2)
            ta = ta.write(0, x * 2.0).write(1, x * x)
            y = tf.reduce_sum(ta.stack())
        return t.gradient(y, x)

    assert float(f(tf.constant(3.0))) == 8.0
    assert float(f(tf.constant(1.0))) == 4.0


def test_size_from_an_argument_and_a_conditional_value_in_the_loop():
    @tf.function
    def alternate(x, n):
        ta = tf.TensorArray(tf.float32, size=n)   # the size read at every call
        for i in tf.range(n):
            v = x * tf.cast(i, tf.float32) if i % 2 == 0 else -x
            ta = ta.write(i, v)
        return ta.stack()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert alternate(tf.constant(2.0), tf.constant(4)).numpy().tolist() == [0., -2., 4., -2.]
        assert alternate(tf.constant(3.0), tf.constant(5)).numpy().tolist() == \
            [0., -3., 6., -3., 12.]
    assert alternate.experimental_get_tracing_count() == 1


def test_indices_out_of_the_list_in_a_traced_loop_are_tensorflows_graph_errors():
    @tf.function
    def write_past(n):
        ta = tf.TensorArray(tf.float32, size=2)
        for i in tf.range(n):
            ta = ta.write(i - 1, 1.0)
        return ta.stack()

    @tf.function
    def read_past(n):
        ta = tf.TensorArray(tf.float32, size=2).write(0, 1.0).write(1, 2.0)
        s = tf.constant(0.0)
        for i in tf.range(n):
            s += ta.read(i)
        return s

    # TensorFlow 2.21 (TensorList ops in its while loop): InvalidArgumentError
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Trying to modify element -1 in a list with 2 elements\."):
        write_past(tf.constant(1))
    assert float(read_past(tf.constant(2))) == 3.0
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Trying to access element 2 in a list with 2 elements\."):
        read_past(tf.constant(3))   # at a replay, in the loop's third iteration
