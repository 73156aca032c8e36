"""tf.cond on a traced predicate: only the taken branch's state effects happen (variable
writes, prints), at every call and replay, and branch dtypes must match as in TensorFlow."""

import warnings

import numpy as np
import pytest

import mixprec as tf


def _run(f, v, preds):
    return [(float(f(tf.constant(p))), float(v.numpy())) for p in preds]


def test_cond_untaken_assign_does_not_happen_traced_equals_eager():
    preds = [1.0, -1.0, 2.0, -3.0, 4.0, -5.0]

    def make():
        v = tf.Variable(0.0)

        def body(x):
            return tf.cond(x > 0, lambda: v.assign_add(x) * 1.0, lambda: v.assign(x * 10) * 1.0)
        return v, body

    v_e, body_e = make()
    eager = _run(body_e, v_e, preds)
    v_t, body_t = make()
    f = tf.function(body_t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the one graph-break warning
        traced = _run(f, v_t, preds)
    assert traced == eager
    assert eager[0] == (1.0, 1.0) and eager[1] == (-10.0, -10.0)


@pytest.mark.parametrize("first", [1.0, -1.0])
def test_cond_assign_only_in_one_branch(first):
    v = tf.Variable(5.0)

    @tf.function
    def f(x):
        return tf.cond(x > 0, lambda: x + 1.0, lambda: v.assign(x) + 0.0)

    expect_v = 5.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for p in [first, -first, first, first, -first]:
            out = float(f(tf.constant(p)))
            if p < 0:
                expect_v = p
                assert out == p
            else:
                assert out == p + 1.0
            assert float(v.numpy()) == expect_v


def test_cond_print_in_untaken_branch_prints_nothing(capfd):
    @tf.function
    def f(x):
        def loud():
            tf.print("taken-true", x)
            return x * 2.0
        return tf.cond(x > 0, loud, lambda: -x)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        capfd.readouterr()
        for p in [-1.0, -2.0, -3.0]:
            assert float(f(tf.constant(p))) == -p
        assert "taken-true" not in "".join(capfd.readouterr())
        assert float(f(tf.constant(4.0))) == 8.0
        assert "taken-true 4" in "".join(capfd.readouterr())
        assert float(f(tf.constant(-5.0))) == 5.0
        assert "taken-true" not in "".join(capfd.readouterr())


def test_cond_without_effects_stays_traced():
    @tf.function
    def f(x):
        return tf.cond(x > 0, lambda: x * 2.0, lambda: -x)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no graph break
        assert [float(f(tf.constant(p))) for p in (3.0, -4.0, 5.0)] == [6.0, 4.0, 10.0]
    assert f.experimental_get_tracing_count() == 1


def test_cond_branch_dtypes_must_match():
    @tf.function
    def f(x):
        return tf.cond(x > 0, lambda: x * 2.0, lambda: tf.cast(x, tf.float64))

    with pytest.raises(TypeError, match="must have the same"):
        f(tf.constant(1.0))

    @tf.function
    def g(x):
        return tf.cond(x > 0, lambda: 1, lambda: 2.0)

    with pytest.raises(TypeError, match="must have the same"):
        g(tf.constant(1.0))

    @tf.function
    def h(x):
        return tf.cond(x > 0, lambda: (x, x), lambda: x)

    with pytest.raises((TypeError, ValueError), match="must have the same"):
        h(tf.constant(1.0))
    np.testing.assert_array_equal(tf.cond(tf.constant(True), lambda: 1, lambda: 2.0), 1)


def test_cond_gates_its_branches_prints_and_writes(capfd):
    v = tf.Variable(0)

    @tf.function
    def f(x):
        return tf.cond(x > 0, lambda: (tf.print("pos", x), v.assign_add(1))[1],
                       lambda: (tf.print("neg", x), v.assign_sub(1))[1])

    with warnings.catch_warnings():
        warnings.simplefilter("error")   # TensorFlow 2.21: no break, one trace
        for x in (1, -1, 2, 3):
            f(tf.constant(x))
    assert capfd.readouterr().err.split() == ["pos", "1", "neg", "-1", "pos", "2", "pos", "3"]
    assert int(v) == 2 and f.experimental_get_tracing_count() == 1
