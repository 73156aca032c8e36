"""Loops inside tf.function (src/mixprec/_loops.py, csrc/graph_loop.c): a ``for`` over a
dataset, an iterator or a tensor, ``for i in tf.range(n)``, ``while`` on a tensor and
``tf.while_loop`` trace their body once and replay it per iteration in C. Expected values,
tracing counts and side-effect counts were recorded on TensorFlow 2.21."""

import warnings

import numpy as np
import pytest

import mixprec as tf
from mixprec.testing.tolerances import TOLERANCE

# Library code reading a traced value's real size (as a Keras layer's bookkeeping does)
# bakes it into the graph, which tf.function then keeps per element shape; user code sees
# TensorFlow's static shape (None for an open batch: tests/test_function_static_shapes.py).
_rows = eval(compile("lambda x: x.shape[0]", "<library stand-in>", "eval"),
             {"__name__": "mixprec._library_stand_in"})




def test_for_over_a_dataset_traces_the_body_once(capfd):
    side = []
    ds = tf.data.Dataset.range(9).batch(3)

    @tf.function
    def f(ds):
        n = 0
        tot = tf.constant(0, tf.int64)
        for x in ds:
            side.append(1)                 # Python: once, at the trace
            tf.print("x", x)               # every iteration of every call
            tot += tf.reduce_sum(x)
            n += 1                         # a Python int loop variable becomes a tensor
        return tot, n

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            tot, n = f(ds)
            assert int(tot) == 36 and int(n) == 3 and n.dtype == tf.int32
    assert len(side) == 1 and f.experimental_get_tracing_count() == 1
    err = capfd.readouterr().err
    assert err.count("x [0 1 2]") == 3 and err.count("x [6 7 8]") == 3


def test_a_last_partial_batch_replays_the_one_body_trace():
    side = []
    ds = tf.data.Dataset.range(10).batch(3)   # [3], [3], [3], [1]

    @tf.function
    def f(ds):
        tot = tf.constant(0, tf.int64)
        n = tf.constant(0)
        for x in ds:
            side.append(1)
            tot += tf.reduce_sum(x * x)
            n += tf.shape(x)[0]                # the batch's real size at every replay
        return tot, n

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):
            tot, n = f(ds)
            assert int(tot) == 285 and int(n) == 10
        # TensorFlow 2.21: the body traced once (element spec (None,)); another dataset of
        # the same spec, with another last batch, replays the trace
        tot, n = f(tf.data.Dataset.range(8).batch(3))
        assert int(tot) == 140 and int(n) == 8
    assert len(side) == 1 and f.experimental_get_tracing_count() == 1


def test_a_body_that_bakes_a_shape_gets_a_trace_per_element_shape():
    side = []
    ds = tf.data.Dataset.range(10).batch(3)

    @tf.function
    def f(ds):
        tot = tf.constant(0.0)
        for x in ds:
            side.append(1)
            tot += tf.reduce_sum(tf.cast(x, tf.float32)) / _rows(x)   # a baked size
        return tot

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(f(ds)) == 3.0 * 4 + 9.0 and float(f(ds)) == 21.0
    # a size baked by library code is a constant, so the last batch gets its own body
    assert len(side) == 2 and f.experimental_get_tracing_count() == 1


def test_while_on_a_tensor_condition():
    side = []

    @tf.function
    def g(n):
        i = 0
        s = 0.0
        while i < n:
            side.append(1)
            s += tf.cast(i, tf.float32)
            i += 1
        return i, s

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        i, s = g(tf.constant(4))
        assert int(i) == 4 and float(s) == 6.0 and i.dtype == tf.int32
        i, s = g(tf.constant(6))
        assert int(i) == 6 and float(s) == 15.0
        i, s = g(tf.constant(0))
        assert int(i) == 0 and float(s) == 0.0
    assert len(side) == 1 and g.experimental_get_tracing_count() == 1


def test_for_over_tf_range_with_a_traced_bound():
    @tf.function
    def h(n):
        s = tf.constant(0.0)
        for i in tf.range(n):
            s += tf.cast(i, tf.float32)
        return s

    @tf.function
    def down(n):
        s = tf.constant(0)
        for i in tf.range(n, 0, -2):
            s += i
        return s

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(h(tf.constant(5))) == 10.0
        assert float(h(tf.constant(0))) == 0.0
        assert int(down(tf.constant(7))) == 7 + 5 + 3 + 1
    assert h.experimental_get_tracing_count() == 1


def test_tf_while_loop_traced_with_maximum_iterations():
    @tf.function
    def w(n):
        return tf.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s * 2.0),
                             (0, tf.constant(1.0)), maximum_iterations=5)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        i, s = w(tf.constant(3))
        assert int(i) == 3 and float(s) == 8.0
        i, s = w(tf.constant(10))
        assert int(i) == 5 and float(s) == 32.0
    assert w.experimental_get_tracing_count() == 1


def test_loop_variables_keep_dtype_and_shape():
    @tf.function
    def grows(n):
        x = tf.zeros([1])
        for _ in tf.range(n):
            x = tf.concat([x, [1.0]], 0)
        return x

    with pytest.raises(ValueError, match=r"'x' has shape \(1,\) before the loop, but shape "
                                         r"\(2,\) after one iteration"):
        grows(tf.constant(3))

    @tf.function
    def retypes(n):
        x = tf.constant(0)
        for _ in tf.range(n):
            x = tf.cast(x, tf.float32) + 1.5
        return x

    with pytest.raises(TypeError, match="'x' has dtype int32 before the loop, but dtype "
                                        "float32"):
        retypes(tf.constant(3))


def _epoch_setup():
    rs = np.random.RandomState(0)
    x = rs.rand(12, 3).astype(np.float32)
    y = rs.rand(12, 1).astype(np.float32)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(4)
    w = tf.Variable(np.ones((3, 1), np.float32))
    b = tf.Variable(np.zeros((1,), np.float32))
    opt = tf.keras.optimizers.SGD(0.1)

    def epoch(ds):
        total = tf.constant(0.0)
        for a, t in ds:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.matmul(a, w) + b - t))
            g = tape.gradient(loss, [w, b])
            opt.apply_gradients(zip(g, [w, b]))
            total += loss
        return total
    return ds, w, epoch


def test_gradients_and_optimizer_steps_inside_a_loop_body():
    ds, w, epoch = _epoch_setup()
    eager = [float(epoch(ds)) for _ in range(3)]
    w_eager = w.numpy()
    ds, w, epoch = _epoch_setup()
    traced = tf.function(epoch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = [float(traced(ds)) for _ in range(3)]
    assert traced.experimental_get_tracing_count() == 1
    rtol, atol = TOLERANCE[("float32", "elementwise")]
    np.testing.assert_allclose(got, eager, rtol=rtol, atol=atol)
    np.testing.assert_allclose(w.numpy(), w_eager, rtol=rtol, atol=atol)


def test_nested_loops_an_if_and_variable_writes():
    v = tf.Variable(0.0)

    @tf.function
    def nested(n):
        s = tf.constant(0.0)
        i = tf.constant(0)
        while i < n:
            for j in tf.range(i):
                s += tf.cast(j, tf.float32)
                v.assign_add(1.0)
            if s > 3.0:
                s = s - 1.0
            i += 1
        return s

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(nested(tf.constant(4))) == 3.0     # TensorFlow 2.21: 3.0, 17.0, v 21
        assert float(nested(tf.constant(6))) == 17.0
    assert float(v) == 21.0 and nested.experimental_get_tracing_count() == 1


def test_for_over_the_rows_of_a_tensor_and_an_iterator():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)

    @tf.function
    def rows(m):
        acc = tf.zeros([3])
        for r in m:
            acc = acc + r * 2.0
        return acc

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(rows(tf.constant(x)).numpy(), x.sum(0) * 2)
        np.testing.assert_array_equal(rows(tf.constant(x[:2])).numpy(), x[:2].sum(0) * 2)
    assert rows.experimental_get_tracing_count() == 2  # a new shape: a new trace (TF too)

    ds = tf.data.Dataset.from_tensor_slices(x).batch(2)

    @tf.function
    def through_iter(ds):
        it = iter(ds)
        s = tf.constant(0.0)
        for b in it:
            s += tf.reduce_sum(b)
        return s

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(through_iter(ds)) == x.sum() and float(through_iter(ds)) == x.sum()


def test_a_graph_break_inside_a_loop_body_names_its_line():
    ds = tf.data.Dataset.from_tensor_slices(np.arange(4, dtype=np.float32))

    @tf.function
    def f(ds):
        s = tf.constant(0.0)
        for x in ds:
            s += x.numpy()  # needs the value: a graph break
        return s

    with pytest.warns(UserWarning, match=r"graph break at .*test_loops\.py:\d+"):
        assert float(f(ds)) == 6.0
    assert float(f(ds)) == 6.0  # this signature runs eagerly now


def test_effects_in_a_loop_under_a_traced_if_break_the_graph():
    v = tf.Variable(0.0)

    @tf.function
    def f(x, n):
        if x > 0:
            for _ in tf.range(n):
                v.assign_add(1.0)
        return v.read_value()

    with pytest.warns(UserWarning, match="graph break"):
        assert float(f(tf.constant(1.0), tf.constant(3))) == 3.0
    assert float(f(tf.constant(-1.0), tf.constant(3))) == 3.0
    assert float(f(tf.constant(1.0), tf.constant(2))) == 5.0


def test_a_pure_loop_under_a_traced_if_is_selected():
    @tf.function
    def f(x, n):
        y = x
        if x > 0:
            for _ in tf.range(n):
                y = y * 2.0
        return y

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(f(tf.constant(1.0), tf.constant(3))) == 8.0
        assert float(f(tf.constant(-1.0), tf.constant(3))) == -1.0
    assert f.experimental_get_tracing_count() == 1


def test_get_concrete_function_traces_a_loop_without_running_it():
    v = tf.Variable(0.0)

    @tf.function
    def f(n):
        i = tf.constant(0)
        while i < n:
            v.assign_add(1.0)
            i += 1
        return i

    cf = f.get_concrete_function(tf.TensorSpec([], tf.int32))
    assert float(v) == 0.0 and f.experimental_get_tracing_count() == 1
    assert [s.dtype for s in cf.outputs] == [tf.int32]
    assert int(f(tf.constant(4))) == 4 and float(v) == 4.0
    assert f.experimental_get_tracing_count() == 1


def test_variables_created_on_the_first_call_with_a_loop():
    holder = []
    ds = tf.data.Dataset.from_tensor_slices(np.ones((4, 2), np.float32)).batch(2)

    @tf.function
    def f(ds):
        if not holder:
            holder.append(tf.Variable(0.0))
        for x in ds:
            holder[0].assign_add(tf.reduce_sum(x))
        return holder[0].read_value()

    assert float(f(ds)) == 8.0  # traced twice on the first call (TF), the effects once
    assert float(f(ds)) == 16.0
    assert f.experimental_get_tracing_count() == 2


def test_gradient_of_a_replayed_loop_under_an_outer_tape():
    @tf.function
    def power(x, n):
        y = tf.constant(1.0)
        for _ in tf.range(n):
            y = y * x
        return y

    x = tf.constant(3.0)
    power(x, tf.constant(3))  # traced
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = power(x, tf.constant(3))  # replayed: the body's ops are on the tape
    assert float(y) == 27.0 and float(tape.gradient(y, x)) == 27.0


def test_loops_over_python_values_stay_python():
    @tf.function
    def f(x):
        out = []
        for k in range(3):           # a Python loop: unrolled at the trace
            out.append(x * k)
        i = 0
        while i < 2:                 # a Python condition
            i += 1
        return tf.add_n(out) + i, k

    y, k = f(tf.constant(2.0))
    assert float(y) == 8.0 and k == 2


def test_autograph_to_code_shows_the_loop_conversion():
    def f(ds):
        s = 0
        for x in ds:
            s += x
        return s

    code = tf.autograph.to_code(f)
    assert "ag__.for_stmt" in code


def test_break_and_continue_on_traced_conditions():
    side = []
    ds = tf.data.Dataset.range(10)

    @tf.function
    def f(ds, lim):
        s = tf.constant(0, tf.int64)
        for x in ds:
            side.append(1)
            if x % 2 == 0:
                continue
            if x > lim:
                break
            s += x
        return s

    @tf.function
    def g(n):
        i = tf.constant(0)
        s = tf.constant(0)
        while i < n:
            i += 1
            if i == 4:
                continue
            if s > 10:
                break
            s += i
        return i, s

    @tf.function
    def h(n):
        s = tf.constant(0)
        for i in tf.range(n):
            if i * i > 20:
                break
            s += i
        return s

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # TensorFlow 2.21: 9, 25; (6, 11), (3, 6); 10, 3
        assert int(f(ds, tf.constant(6, tf.int64))) == 9
        assert int(f(ds, tf.constant(100, tf.int64))) == 25
        assert [int(t) for t in g(tf.constant(100))] == [6, 11]
        assert [int(t) for t in g(tf.constant(3))] == [3, 6]
        assert int(h(tf.constant(10))) == 10 and int(h(tf.constant(3))) == 3
    assert len(side) == 1 and f.experimental_get_tracing_count() == 1

    def python_loop():
        out = []
        for k in range(6):
            if k == 1:
                continue
            if k == 4:
                break
            out.append(k)
        return out

    assert tf.function(python_loop)() == [0, 2, 3]


def test_break_before_a_state_write_gates_the_write():
    v = tf.Variable(0.0)
    ds = tf.data.Dataset.from_tensor_slices(np.arange(6, dtype=np.float32))

    @tf.function
    def f(ds):
        for x in ds:
            if x > 2.0:
                break
            v.assign_add(x)   # moved into the branch that falls through: gated on it
        return v.read_value()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(f(ds)) == 3.0
        assert float(f(ds)) == 6.0
    assert f.experimental_get_tracing_count() == 1


def test_an_optimizer_step_under_a_traced_condition_falls_back_with_one_warning():
    v = tf.Variable(1.0)
    opt = tf.keras.optimizers.SGD(0.5)

    @tf.function
    def f(x):
        if x > 0:
            opt.apply_gradients([(tf.constant(1.0), v)])   # not gated: a graph break
        return v.read_value()

    with pytest.warns(UserWarning, match="graph break"):
        assert float(f(tf.constant(1.0))) == 0.5
    assert float(f(tf.constant(-1.0))) == 0.5 and float(f(tf.constant(1.0))) == 0.0


def test_enumerate_a_dataset_range_of_a_tensor_and_take():
    ds = tf.data.Dataset.from_tensor_slices(np.arange(6, dtype=np.float32)).batch(2)

    @tf.function
    def f(ds):
        s = tf.constant(0.0)
        for step, x in enumerate(ds):   # dataset.enumerate(), as AutoGraph
            s += tf.cast(step, tf.float32) * tf.reduce_sum(x)
        return s

    @tf.function
    def g(n):
        s = 0
        for i in range(n):              # range of a tensor: tf.range, a loop node
            s += i
        return s

    @tf.function
    def k(ds):
        s = tf.constant(0.0)
        for x in ds.take(2):
            s += tf.reduce_sum(x)
        return s

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(f(ds)) == 23.0 and float(f(ds)) == 23.0   # TensorFlow 2.21: 23, 23
        assert int(g(tf.constant(5))) == 10 and int(g(tf.constant(3))) == 3
        assert float(k(ds)) == 6.0
    assert g.experimental_get_tracing_count() == 1


def test_tapes_and_loops():
    @tf.function
    def power(x, n):
        y = tf.constant(1.0)
        for _ in tf.range(n):
            y = y * x
        return y

    x = tf.constant(2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with tf.GradientTape() as tape:   # outside the function: the tracing call's
            tape.watch(x)                 # iterations are on the tape
            y = power(x, tf.constant(4))
    assert float(y) == 16.0 and float(tape.gradient(y, x)) == 32.0

    @tf.function
    def grad_of_power(x, n):
        with tf.GradientTape() as tape:   # inside, across the loop: the loop stays Python
            tape.watch(x)
            y = tf.constant(1.0)
            for _ in tf.range(n):
                y = y * x
        return tape.gradient(y, x)

    with pytest.warns(UserWarning, match="graph break"):
        assert float(grad_of_power(tf.constant(2.0), tf.constant(3))) == 12.0
    assert float(grad_of_power(tf.constant(3.0), tf.constant(2))) == 6.0


def test_while_condition_side_effects_and_relaxed_shape_invariants():
    calls = []

    def check(i, n):
        calls.append(1)
        return i < n

    @tf.function
    def f(n):
        i = tf.constant(0)
        while check(i, n):
            i += 1
        return i

    assert int(f(tf.constant(3))) == 3 and int(f(tf.constant(5))) == 5
    assert len(calls) == 2  # TensorFlow 2.21: the condition runs twice while tracing

    @tf.function
    def grow(n):
        x = tf.zeros([1])
        _, x = tf.while_loop(lambda i, x: i < n,
                             lambda i, x: (i + 1, tf.concat([x, [1.0]], 0)),
                             (tf.constant(0), x),
                             shape_invariants=(tf.TensorShape([]), tf.TensorShape([None])))
        return x

    # a loop variable allowed to change shape cannot be a loop node: Python's loop
    with pytest.warns(UserWarning, match="graph break"):
        np.testing.assert_array_equal(grow(tf.constant(3)).numpy(), [0, 1, 1, 1])
    np.testing.assert_array_equal(grow(tf.constant(2)).numpy(), [0, 1, 1])


def test_set_loop_options():
    @tf.function
    def f(n):
        s = tf.constant(0)
        for i in tf.range(n):
            tf.autograph.experimental.set_loop_options(maximum_iterations=3)
            s += i
        return s

    @tf.function
    def g(n):
        x = tf.zeros([1])
        for _ in tf.range(n):
            tf.autograph.experimental.set_loop_options(
                shape_invariants=[(x, tf.TensorShape([None]))])
            x = tf.concat([x, [1.0]], 0)
        return x

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert int(f(tf.constant(10))) == 3 and int(f(tf.constant(2))) == 1  # TF: 3, 1
    with pytest.warns(UserWarning, match=r"graph break at .*changes shape"):
        np.testing.assert_array_equal(g(tf.constant(3)).numpy(), [0, 1, 1, 1])
    np.testing.assert_array_equal(g(tf.constant(1)).numpy(), [0, 1])


def test_an_unconvertible_loop_breaks_with_one_warning_naming_its_line():
    ds = tf.data.Dataset.from_tensor_slices(np.arange(5, dtype=np.float32))

    @tf.function
    def first_big(ds):
        for x in ds:        # a `return` in the body: left as Python's loop
            if x > 2.0:
                return x
        return tf.constant(-1.0)

    with pytest.warns(UserWarning, match=r"graph break at .*test_loops\.py:\d+") as w:
        assert float(first_big(ds)) == 3.0
    assert len([m for m in w if "graph break" in str(m.message)]) == 1
    assert float(first_big(ds)) == 3.0


def test_an_element_shape_first_seen_at_a_replay():
    extra = [0]
    ds = tf.data.Dataset.range(20).filter(lambda x: x < 5 + extra[0]).batch(4)

    @tf.function
    def f(ds):
        tot = tf.constant(0, tf.int64)
        for x in ds:
            tot += tf.reduce_sum(x * x)
        return tot

    assert int(f(ds)) == 30                # batches [4] and [1]: two bodies, alike
    extra[0] = 1
    assert int(f(ds)) == 55                # a last batch of 2, never traced: replayed

    @tf.function
    def mean_by_static_size(ds):
        tot = tf.constant(0.0)
        for x in ds:
            tot += tf.reduce_sum(tf.cast(x, tf.float32)) / _rows(x)   # bakes the size
        return tot

    extra[0] = 0
    assert float(mean_by_static_size(ds)) == 1.5 + 4.0
    extra[0] = 1
    # a new shape at a replay: the body is traced for it then (never a stale size)
    assert float(mean_by_static_size(ds)) == 1.5 + 4.5
    assert mean_by_static_size.experimental_get_tracing_count() == 1


def test_a_dry_trace_then_a_partial_batch():
    ds = tf.data.Dataset.from_tensor_slices(np.ones((5, 2), np.float32)).batch(2)

    @tf.function
    def g(ds):
        s = tf.constant(0.0)
        for x in ds:
            s += tf.reduce_sum(x) * tf.cast(tf.shape(x)[0], tf.float32)
        return s

    g.get_concrete_function(ds)            # a dry trace: no iteration runs
    assert float(g(ds)) == 18.0            # the partial batch's body is traced at the call
    assert float(g(ds)) == 18.0

    holder = []

    @tf.function
    def f(ds):
        if not holder:
            holder.append(tf.Variable(0.0))  # traced twice on the first call, the second dry
        for x in ds:
            holder[0].assign_add(tf.reduce_sum(x))
        return holder[0].read_value()

    assert float(f(ds)) == 10.0 and float(f(ds)) == 20.0
    assert f.experimental_get_tracing_count() == 2


def test_an_iterator_argument_continues_and_is_traced_by_its_dataset():
    ds = tf.data.Dataset.from_tensor_slices(np.arange(6, dtype=np.float32)).batch(2)

    @tf.function
    def f(it):
        s = tf.constant(0.0)
        for x in it:
            s += tf.reduce_sum(x)
        return s

    it = iter(ds)
    next(it)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(f(it)) == 14.0   # the rest of it
        assert float(f(it)) == 0.0    # exhausted
        assert float(f(iter(ds))) == 15.0  # a new iterator over the same dataset: replayed
    assert f.experimental_get_tracing_count() == 1   # TensorFlow 2.21: 14, 0, 15; 1 trace


def test_the_mixed_precision_rewrite_reaches_loop_bodies():
    from mixprec._amp import graph_pass
    tf.train.experimental.enable_mixed_precision_graph_rewrite(tf.keras.optimizers.SGD(0.1))
    try:
        x = tf.constant([[1 + 2**-12]])
        w = tf.Variable([[1.0]])
        ds = tf.data.Dataset.from_tensors(x).repeat(3)

        @tf.function
        def f(ds):
            s = tf.zeros([1, 1])
            e = tf.zeros([1, 1])
            for a in ds:
                s += tf.matmul(a, w)   # allowlisted: float16 (1 + 2**-12 rounds to 1)
                e += tf.exp(a)         # denylisted: float32
            return s, e

        s, e = f(ds)
        assert float(s) == 3.0
        np.testing.assert_allclose(float(e), 3 * np.exp(1 + 2**-12),
                                   *TOLERANCE[("float32", "transcendental")])
        assert "MatMul" in graph_pass.last_summary["converted_nodes"]
    finally:
        tf.train.experimental.disable_mixed_precision_graph_rewrite()


def test_a_late_body_never_reads_an_outer_tensor_as_a_stale_constant():
    """A body traced at a replay (an element shape first met then) that reads a tensor of
    the function the first body never read cannot know its replayed value: a clear error,
    never the tracing call's value. Reads the first body made are replayed correctly."""
    extra = [0]
    ds = tf.data.Dataset.range(20).filter(lambda x: x < 5 + extra[0]).batch(4)

    @tf.function
    def same_reads(ds, k):
        w = k * 2                              # computed from an input: replayed per call
        tot = tf.constant(0, tf.int64)
        for x in ds:
            tot += tf.reduce_sum(x) * w
        return tot

    assert int(same_reads(ds, tf.constant(1, tf.int64))) == 20
    extra[0] = 1
    assert int(same_reads(ds, tf.constant(3, tf.int64))) == 90   # a late body: w replayed

    @tf.function
    def reads_by_shape(ds, k):
        w, v = k * 2, k * 5
        tot = tf.constant(0, tf.int64)
        for x in ds:
            # the size is baked into the graph (bodies per shape), and picks what is read
            tot += tf.reduce_sum(x) * (w if _rows(x) != 2 else v) + _rows(x)
        return tot

    extra[0] = 0
    assert int(reads_by_shape(ds, tf.constant(1, tf.int64))) == 20 + 5
    extra[0] = 1                               # a last batch of 2: its body reads v
    with pytest.raises(ValueError, match="did not read"):
        reads_by_shape(ds, tf.constant(3, tf.int64))


def test_a_keras_model_and_a_reshape_in_a_loop_body_trace_once():
    from mixprec import keras
    model = keras.Sequential([keras.layers.Dense(3, activation="relu", kernel_initializer="ones"),
                              keras.layers.Dense(1, kernel_initializer="ones")])
    model.build((None, 4))
    side = []

    @tf.function
    def predict_all(ds):
        tot, cnt, flat = tf.constant(0.0), tf.constant(0), tf.constant(0.0)
        for x in ds:
            side.append(1)
            y = model(x)
            tot += tf.reduce_sum(y)
            cnt += tf.shape(y)[0]
            flat += tf.reduce_sum(tf.reshape(x, [-1]) * 2.0)   # the -1 inferred at every run
        return tot, cnt, flat

    data = np.arange(40, dtype=np.float32).reshape(10, 4) / 10
    ds = tf.data.Dataset.from_tensor_slices(data).batch(4)        # 4, 4, 2
    ds2 = tf.data.Dataset.from_tensor_slices(data[:7]).batch(4)   # 4, 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # TensorFlow 2.21's values; the body traced once (element spec (None, 4))
        assert [round(float(t), 3) for t in predict_all(ds)] == [234.0, 10.0, 156.0]
        assert [round(float(t), 3) for t in predict_all(ds2)] == [113.4, 7.0, 75.6]
    assert len(side) == 1 and predict_all.experimental_get_tracing_count() == 1
