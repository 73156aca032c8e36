"""AutoGraph's common case (src/mixprec/_autograph.py): a Python ``if`` on a traced tensor
inside a ``mixprec.function`` traces both branches once and replays with the device's
choice; a Python condition keeps Python's semantics; what is not converted still breaks
the graph with one warning."""

import warnings

import numpy as np
import pytest

import mixprec as tf
from mixprec.testing.tolerances import assert_close


def test_if_on_a_tensor_traces_once_both_outcomes():
    trace_log = []

    def f(x):
        if tf.reduce_sum(x) > 0:
            trace_log.append("true")
            y = x * 2.0
        else:
            trace_log.append("false")
            y = -x
        return y + 1.0

    tf_f = tf.function(f)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for v in ([1.0, 2.0], [-3.0, 1.0], [0.5, 0.5], [-1.0, -1.0]):
            x = tf.constant(v)
            np.testing.assert_array_equal(tf_f(x).numpy(), f(x).numpy())
    assert tf_f.experimental_get_tracing_count() == 1
    assert trace_log.count("true") == 3 and trace_log.count("false") == 3  # 1 trace + 2 eager


def test_returns_in_branches_and_elif_chains():
    @tf.function
    def relu_or_neg(x):
        if x > 0:
            return x
        return -x

    @tf.function
    def sign(x):
        if x > 0:
            s = tf.constant(1.0)
        elif x < 0:
            s = tf.constant(-1.0)
        else:
            s = tf.constant(0.0)
        return s

    @tf.function
    def nested(x, y):
        if x > 0:
            if y > 0:
                r = x + y
            else:
                r = x - y
        else:
            r = x * y
        return r

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(relu_or_neg(tf.constant(-3.0))) == 3.0
        assert float(relu_or_neg(tf.constant(4.0))) == 4.0
        assert [float(sign(tf.constant(v))) for v in (2.0, -2.0, 0.0)] == [1.0, -1.0, 0.0]
        got = [float(nested(tf.constant(a), tf.constant(b)))
               for a, b in ((1.0, 2.0), (1.0, -2.0), (-1.0, 3.0))]
    assert got == [3.0, 3.0, -3.0]
    for fn in (relu_or_neg, sign, nested):
        assert fn.experimental_get_tracing_count() == 1


def test_if_without_else_keeps_the_previous_value():
    @tf.function
    def clip(x):
        y = x
        if x > 1.0:
            y = tf.constant(1.0)
        return y

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [float(clip(tf.constant(v))) for v in (3.0, 0.5, 7.0)] == [1.0, 0.5, 1.0]
    assert clip.experimental_get_tracing_count() == 1


def test_python_bool_conditions_keep_python_semantics():
    ran = []

    @tf.function
    def f(x, training):
        if training:
            ran.append("training")
            x = x * 0.5
        else:
            ran.append("inference")
        return x

    assert float(f(tf.constant(4.0), True)) == 2.0
    assert ran == ["training"]  # only the branch taken
    assert float(f(tf.constant(4.0), False)) == 4.0
    assert ran == ["training", "inference"]
    assert f.experimental_get_tracing_count() == 2


def test_a_name_bound_in_one_branch_only():
    @tf.function
    def f(x):
        if x > 0:
            y = x
        return y  # noqa: F821 - used after: TensorFlow's error

    with pytest.raises(ValueError, match="'y' must also be initialized in the else branch"):
        f(tf.constant(1.0))

    @tf.function
    def g(x):
        if x > 0:
            tmp = x * 3.0  # not used after the if: no error
            x = tmp
        return x

    assert float(g(tf.constant(2.0))) == 6.0 and float(g(tf.constant(-2.0))) == -2.0

    @tf.function
    def k(x):
        if x > 0:
            pass
        else:
            w = x
        return w  # noqa: F821

    with pytest.raises(ValueError, match="'w' must also be initialized in the main branch"):
        k(tf.constant(1.0))

    @tf.function
    def h(x, flag):
        if flag:
            z = x
        return z  # noqa: F821 - a Python condition: Python's own error

    with pytest.raises(NameError):
        h(tf.constant(1.0), False)


def test_python_numbers_that_differ_become_tensors():
    @tf.function
    def f(x):
        if x > 0:
            n = 1
        else:
            n = 2
        return x * tf.cast(n, tf.float32), n

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y, n = f(tf.constant(3.0))
        assert float(y) == 3.0 and int(n) == 1 and n.dtype == tf.int32
        y, n = f(tf.constant(-3.0))
        assert float(y) == -6.0 and int(n) == 2
    assert f.experimental_get_tracing_count() == 1


def test_python_values_that_differ_break_the_graph():
    @tf.function
    def f(x):
        if x > 0:
            label, arr = "pos", np.array([1.0, 2.0])
        else:
            label, arr = "neg", np.array([3.0, 4.0])
        return x, label, arr

    with pytest.warns(UserWarning, match="differs between the branches"):
        out = f(tf.constant(1.0))
    assert out[1] == "pos" and list(np.asarray(out[2])) == [1.0, 2.0]
    out = f(tf.constant(-1.0))
    assert out[1] == "neg" and list(np.asarray(out[2])) == [3.0, 4.0]


def test_attribute_writes_in_branches_stay_python():
    class Box:
        pass

    box = Box()

    @tf.function
    def f(x):
        if x > 0:
            box.last = "pos"  # not converted: bool(x) breaks the graph, Python's if runs
        else:
            box.last = "neg"
        return x

    with pytest.warns(UserWarning, match="graph break"):
        f(tf.constant(1.0))
    assert box.last == "pos"
    f(tf.constant(-1.0))
    assert box.last == "neg"


def test_unconvertible_code_still_breaks_with_one_warning():
    @tf.function
    def f(x):
        if x > 0:
            try:  # not converted: the if stays Python, bool(x) breaks the graph
                y = x * 2.0
            except ValueError:
                y = x
            return y
        return -x

    with pytest.warns(UserWarning, match=r"graph break at .*test_autograph\.py:\d+"):
        assert float(f(tf.constant(3.0))) == 6.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(f(tf.constant(-4.0))) == 4.0


def test_autograph_false_and_do_not_convert():
    def body(x):
        if x > 0:
            return x
        return -x

    for fn in (tf.function(body, autograph=False),
               tf.function(tf.autograph.experimental.do_not_convert(
                   lambda x: x if x > 0 else -x)),
               tf.function(tf.autograph.experimental.do_not_convert(body))):
        with pytest.warns(UserWarning, match="graph break"):
            assert float(fn(tf.constant(-2.0))) == 2.0
    assert "if_stmt" in tf.autograph.to_code(_plain_if)
    assert float(tf.autograph.to_graph(_plain_if)(tf.constant(-5.0))) == 5.0


def _plain_if(x):
    if x > 0:
        return x
    return -x


def test_both_branches_traced_side_effects_and_state():
    log = []
    v = tf.Variable(0.0)

    @tf.function
    def f(x):
        if x > 0:
            log.append("a")
            v.assign_add(1.0)  # a variable write under a traced if: gated on x > 0
        else:
            log.append("b")
            v.assign_sub(1.0)
        return v.read_value()

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # TensorFlow's cond: no break
        assert float(f(tf.constant(1.0))) == 1.0  # only the taken branch changed state
        assert sorted(log) == ["a", "b"]  # both branches traced
        assert float(f(tf.constant(-1.0))) == 0.0
        assert float(f(tf.constant(-1.0))) == -1.0 and float(f(tf.constant(3.0))) == 0.0
    assert float(v) == 0.0 and sorted(log) == ["a", "b"]
    assert f.experimental_get_tracing_count() == 1

    u = tf.Variable(0.0)

    @tf.function
    def g(x, y):
        if x > 0:
            z = x
        else:
            if y > 0:  # taken by its own predicate, inside the outer branch not taken
                u.assign(5.0)
            z = y
        return z

    # an effect under two traced conditions is not gated: a graph break
    with pytest.warns(UserWarning, match="graph break"):
        assert float(g(tf.constant(1.0), tf.constant(1.0))) == 1.0
    assert float(u) == 0.0


def test_print_in_a_branch_runs_only_when_taken(capfd):
    @tf.function
    def f(x):
        if x > 0:
            tf.print("pos")
        return x

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(tf.constant(-1.0))
        f(tf.constant(2.0))
        f(tf.constant(-3.0))
        f(tf.constant(4.0))
    assert capfd.readouterr().err.split() == ["pos", "pos"]
    assert f.experimental_get_tracing_count() == 1


def test_gradients_flow_through_a_converted_if():
    @tf.function
    def grad(w, x):
        with tf.GradientTape() as tape:
            tape.watch(w)
            if tf.reduce_sum(x) > 0:
                y = tf.reduce_sum(tf.square(w * x))
            else:
                y = tf.reduce_sum(tf.exp(w) * x)
        return y, tape.gradient(y, w)

    w = tf.constant([0.3, -0.7])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for xv in ([1.0, 2.0], [-1.0, -2.0]):
            x = tf.constant(xv)
            y, g = grad(w, x)
            wn, xn = np.array([0.3, -0.7]), np.array(xv)

            def ref(wv):
                return np.sum((wv * xn) ** 2) if xn.sum() > 0 else np.sum(np.exp(wv) * xn)
            eps = 1e-6
            fd = np.array([(ref(wn + eps * e) - ref(wn - eps * e)) / (2 * eps)
                           for e in np.eye(2)])
            assert_close(g.numpy(), fd, "float32", "finite_difference")
            assert_close(y.numpy(), ref(wn), "float32", "transcendental")
    assert grad.experimental_get_tracing_count() == 1


def _helper_abs(x):
    if x > 0:
        return x
    return -x


def test_user_functions_called_while_tracing_are_converted():
    class Model:
        def branch(self, x):
            if x > 1.0:
                x = x * 10.0
            return x

    model = Model()

    @tf.function
    def f(x):
        return model.branch(_helper_abs(x)) + tf.reduce_sum(tf.ones([2]))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(f(tf.constant(-3.0))) == 32.0
        assert float(f(tf.constant(0.5))) == 2.5
    assert f.experimental_get_tracing_count() == 1
    assert float(_helper_abs(tf.constant(-2.0))) == 2.0  # the original is untouched


def test_methods_closures_and_nested_functions():
    scale = tf.constant(3.0)

    class M:
        def __init__(self):
            self.bias = 1.0

        @tf.function
        def call(self, x):
            if x > 0:
                out = x * scale + self.bias
            else:
                out = x
            return out

    @tf.function
    def inner(x):
        if x > 0:
            x = x + 100.0
        return x

    @tf.function
    def outer(x):
        return inner(x) * 2.0

    m = M()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(m.call(tf.constant(2.0))) == 7.0
        assert float(m.call(tf.constant(-2.0))) == -2.0
        assert float(outer(tf.constant(1.0))) == 202.0
        assert float(outer(tf.constant(-1.0))) == -2.0
    assert outer.experimental_get_tracing_count() == 1


def test_loops_keep_python_semantics_and_datasets_break():
    @tf.function
    def f(x):
        for i in range(3):  # a Python loop unrolls; the if inside on a tensor converts
            if x > i:
                x = x - 1.0
        return x

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(f(tf.constant(5.0))) == 2.0
        assert float(f(tf.constant(0.5))) == -0.5
    assert f.experimental_get_tracing_count() == 1

    ds = tf.data.Dataset.from_tensor_slices(np.arange(4, dtype=np.float32))

    @tf.function
    def total(ds):
        s = tf.constant(0.0)
        for x in ds:  # a loop node; the if inside it a selection
            if x > 1.0:
                s += x
        return s

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(total(ds)) == 5.0
        assert float(total(ds)) == 5.0
    assert total.experimental_get_tracing_count() == 1


def test_keras_call_and_train_step_are_converted():
    from mixprec import keras

    class Gate(keras.layers.Layer):
        def call(self, x):
            if tf.reduce_sum(x) > 0:
                y = x * 2.0
            else:
                y = x * 0.0
            return y

    layer = Gate()

    @tf.function
    def f(x):
        return layer(x)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(f(tf.constant([1.0, 2.0])).numpy(), [2.0, 4.0])
        np.testing.assert_array_equal(f(tf.constant([-1.0, -2.0])).numpy(), [0.0, 0.0])
    assert f.experimental_get_tracing_count() == 1

    class M(keras.Model):
        def train_step(self, data):
            x, y = data[0], data[1]
            with tf.GradientTape() as tape:
                pred = self(x, training=True)
                loss = tf.reduce_mean(tf.square(pred - y))
                if loss > 1e6:  # converted: no graph break in the traced step
                    loss = loss * 0.0
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
            return {"loss": loss}

    inp = keras.Input((2,))
    model = M(inp, keras.layers.Dense(1)(inp))
    model.compile(optimizer="sgd", loss="mse")
    x = np.ones((8, 2), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hist = model.fit(x, np.zeros((8, 1), np.float32), batch_size=4, epochs=1, verbose=0)
    assert np.isfinite(hist.history["loss"][0])


def test_boolean_operators_and_conditional_expressions_on_tensors():
    side = []

    @tf.function
    def f(x):
        side.append(1)
        y = x if x > 0 else -x
        if x > 0 and x < 10:
            z = x
        elif not x > -5 or x == -7:
            z = x * 0
        else:
            z = -x
        return y, z

    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no graph break: converted as TensorFlow's AutoGraph
        for v, want in [(5.0, (5.0, 5.0)), (20.0, (20.0, -20.0)), (-2.0, (2.0, 2.0)),
                        (-7.0, (7.0, -0.0)), (-9.0, (9.0, -0.0))]:
            assert tuple(float(t) for t in f(tf.constant(v))) == want
    assert len(side) == 1 and f.experimental_get_tracing_count() == 1

    @tf.function
    def g(x, flag):
        # Python values keep Python's short-circuit semantics
        a = flag and x
        b = None or x
        return (a if flag else x * 2), b, not flag

    out = g(tf.constant(3.0), False)
    assert float(out[0]) == 6.0 and float(out[1]) == 3.0 and bool(out[2]) is True


def test_a_tensorshape_result_is_a_tensor():
    @tf.function
    def f():
        return tf.zeros([2, 3]).shape

    r = f()   # TensorFlow 2.21: tf.Tensor([2 3], shape=(2,), dtype=int32)
    assert r.dtype == tf.int32 and r.numpy().tolist() == [2, 3]


def test_float_int_and_len_of_traced_tensors_are_ops():
    @tf.function
    def g(x):
        return float(x[0]), int(x[0]), len(x)

    with warnings.catch_warnings():
        warnings.simplefilter("error")   # TensorFlow's AutoGraph: casts, no host read
        for v in ([2.5, 1.0], [-3.75, 0.0, 1.0]):
            a, b, n = g(tf.constant(v))
            assert (a.dtype, b.dtype, n.dtype) == (tf.float32, tf.int32, tf.int32)
            assert float(a) == v[0] and int(b) == int(v[0]) and int(n) == len(v)
    assert g.experimental_get_tracing_count() == 2
