"""tf.case and tf.switch_case, eager and traced, against TensorFlow 2.21's results and
messages."""

import pytest

import mixprec as tf


def _branches(kind=float):
    return [lambda: tf.constant(kind(10)), lambda: tf.constant(kind(20)),
            lambda: tf.constant(kind(30))]


def test_switch_case_eager_and_traced():
    assert int(tf.switch_case(tf.constant(1), _branches(int))) == 20
    # out of range: the last branch (no default) or the default
    assert int(tf.switch_case(tf.constant(7), _branches(int)[:2])) == 20
    assert int(tf.switch_case(tf.constant(7), {0: lambda: tf.constant(10),
                                               1: lambda: tf.constant(20)},
                              default=lambda: tf.constant(-1))) == -1

    @tf.function
    def f(i):
        return tf.switch_case(i, _branches())
    assert [float(f(tf.constant(k))) for k in (0, 1, 2, 5, -1)] == [10, 20, 30, 30, 30]
    assert f.experimental_get_tracing_count() == 1
    with pytest.raises(TypeError, match=r"^'branch_index' must be a Tensor, got <class 'int'>$"):
        tf.switch_case(1, _branches())
    with pytest.raises(ValueError, match=r"contiguous range of \[0 to 2\) but found \{0,2\}"):
        tf.switch_case(tf.constant(0), {0: lambda: 1, 2: lambda: 2})


def test_case_eager_and_traced():
    x = tf.constant(5)
    pairs = lambda v: [(v < 3, lambda: tf.constant(1)), (v < 10, lambda: tf.constant(2))]  # noqa: E731
    assert int(tf.case(pairs(x), default=lambda: tf.constant(3))) == 2

    @tf.function
    def g(v):
        return tf.case(pairs(v), default=lambda: tf.constant(3))
    assert [int(g(tf.constant(k))) for k in (1, 5, 20)] == [1, 2, 3]
    assert g.experimental_get_tracing_count() == 1
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        tf.case([(x > 30, lambda: tf.constant(1)), (x > 40, lambda: tf.constant(2))])
    assert str(info.value) == ("Expected 'tf.Tensor(False, shape=(), dtype=bool)' to be true. "
                               "Summarized data: b'Input error: None of conditions evaluated "
                               "as True:'\nFalse, False")
    # as TensorFlow 2.21 eagerly: exclusive is not enforced, the first true pair runs
    assert int(tf.case([(x > 3, lambda: tf.constant(1)), (x > 4, lambda: tf.constant(2))],
                       exclusive=True)) == 1
    with pytest.raises(TypeError, match="pred must be a Tensor"):
        tf.case([(True, lambda: 1)])
