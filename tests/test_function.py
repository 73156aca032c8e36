"""``mixprec.function`` (tf.function) with TensorFlow 2.21's semantics: a trace per input
signature (Python side effects then only), replays in C, retracing rules, input_signature,
reduce_retracing, tf.print at every call, variables on the first trace only, graph breaks,
methods, and training steps traced == eager."""

import re
import warnings

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras


def test_without_arguments():
    calls = []

    @tf.function
    def f(x, y=1.0):
        """adds"""
        calls.append(1)
        return x + y

    assert float(f(tf.constant(2.0))) == 3.0
    assert float(f(tf.constant(2.0), y=5.0)) == 7.0  # a new Python value: a new trace
    assert float(f(tf.constant(4.0), y=5.0)) == 9.0  # replayed
    assert f.__name__ == "f" and f.__doc__ == "adds"
    assert len(calls) == 2
    assert f.experimental_get_tracing_count() == 2


def test_with_arguments():
    @tf.function(jit_compile=True, reduce_retracing=True, input_signature=None)
    def g(x):
        return x * 2

    assert float(g(tf.constant(4.0))) == 8.0
    assert g.jit_compile is True
    assert tf.function(lambda x: x, jit_compile=False).jit_compile is False
    assert tf.function(experimental_relax_shapes=True)(lambda: 1)() == 1
    assert tf.function(autograph=False)(lambda: 2)() == 2


def test_python_function():
    def h(x):
        return x - 1

    f = tf.function(h)
    assert f.python_function is h
    cf = f.get_concrete_function(tf.TensorSpec([2], tf.float32))
    assert cf.structured_outputs == tf.TensorSpec([2], tf.float32)
    assert [s.shape.as_list() for s in cf.inputs] == [[2]]
    np.testing.assert_array_equal(cf(tf.constant([1.0, 2.0])).numpy(), [0.0, 1.0])
    assert f.experimental_get_tracing_count() == 1
    assert "h" in repr(f)


def test_side_effects_and_tracing_counts():
    seen = []

    @tf.function
    def f(x):
        seen.append(x.shape.as_list())
        return x * x

    f(tf.constant([1.0, 2.0]))
    f(tf.constant([3.0, 4.0]))
    assert seen == [[2]] and f.experimental_get_tracing_count() == 1
    f(tf.constant([1.0, 2.0, 3.0]))  # new shape
    assert f.experimental_get_tracing_count() == 2
    f(tf.constant([1, 2, 3]))  # new dtype
    assert f.experimental_get_tracing_count() == 3
    np.testing.assert_array_equal(f(tf.constant([5.0, 6.0])).numpy(), [25.0, 36.0])
    assert f.experimental_get_tracing_count() == 3


def test_python_ints_retrace_per_value():
    @tf.function
    def f(x, n):
        return x * n

    for n in (1, 2, 2, 3, 1):
        assert float(f(tf.constant(2.0), n)) == 2.0 * n
    assert f.experimental_get_tracing_count() == 3


def test_structure_is_part_of_the_signature():
    @tf.function
    def f(d):
        return d["a"] + d["b"]

    assert float(f({"a": tf.constant(1.0), "b": tf.constant(2.0)})) == 3.0
    assert float(f({"a": tf.constant(5.0), "b": tf.constant(2.0)})) == 7.0
    assert f.experimental_get_tracing_count() == 1


def test_input_signature():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def f(x):
        return x * 2

    for n in range(1, 5):
        assert f(tf.ones([n])).shape.as_list() == [n]
    assert f.experimental_get_tracing_count() == 1
    np.testing.assert_array_equal(f(np.array([1.0, 2.0])).numpy(), [2.0, 4.0])  # float64 -> float32
    for bad in (tf.constant([1.0], tf.float64), tf.constant([1], tf.int32), tf.ones([2, 2])):
        with pytest.raises(TypeError, match="Binding inputs to tf.function failed"):
            f(bad)
    with pytest.raises(TypeError, match="Binding inputs to tf.function failed"):
        f(tf.ones([2]), tf.ones([2]))
    assert f.experimental_get_tracing_count() == 1


def test_reduce_retracing_relaxes_shapes():
    @tf.function(reduce_retracing=True)
    def f(x):
        return tf.reduce_sum(x)

    for n in range(1, 6):
        assert float(f(tf.ones([n]))) == n
    assert f.experimental_get_tracing_count() == 2


def test_numpy_arrays_are_inputs():
    @tf.function
    def f(x):
        return x + 1.0

    np.testing.assert_array_equal(f(np.array([1.0], np.float32)).numpy(), [2.0])
    np.testing.assert_array_equal(f(np.array([5.0], np.float32)).numpy(), [6.0])
    assert f.experimental_get_tracing_count() == 1


def test_print_runs_at_every_call_on_stderr(capfd):
    @tf.function
    def f(x):
        tf.print("x =", x)
        return x + 1

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # printing is no graph break
        f(tf.constant(1))
        f(tf.constant(2))
    out, err = capfd.readouterr()
    assert err.splitlines() == ["x = 1", "x = 2"]
    assert out == ""
    assert f.experimental_get_tracing_count() == 1


def test_print_eagerly(capfd):
    tf.print("a", tf.constant([1.5, 2.0]), 3)
    assert capfd.readouterr().err == "a [1.5 2] 3\n"


def test_variables_only_on_the_first_call():
    @tf.function
    def bad(x):
        v = tf.Variable(1.0)
        return v + x

    with pytest.raises(ValueError, match="tf.function only supports singleton tf.Variables "
                                         "created on the first call"):
        bad(tf.constant(1.0))

    class M:
        v = None

    m = M()

    @tf.function
    def good(x):
        if m.v is None:
            m.v = tf.Variable(2.0)
        return m.v * x

    assert float(good(tf.constant(3.0))) == 6.0
    assert good.experimental_get_tracing_count() == 2  # TensorFlow traces such a call twice
    m.v.assign(5.0)
    assert float(good(tf.constant(3.0))) == 15.0
    n = []

    @tf.function
    def later(x):
        if n:  # a new variable at a later trace is refused as well
            tf.Variable(1.0)
        n.append(1)
        return x

    later(tf.constant(1.0))
    with pytest.raises(ValueError, match="singleton"):
        later(tf.constant([1.0, 2.0]))


def test_variable_state_changes_at_every_call():
    v = tf.Variable(0.0)

    @tf.function
    def inc(x):
        v.assign_add(x)
        return v.read_value()

    assert [float(inc(tf.constant(1.0))) for _ in range(3)] == [1.0, 2.0, 3.0]
    v.assign(10.0)
    assert float(inc(tf.constant(1.0))) == 11.0
    assert inc.experimental_get_tracing_count() == 1


def test_host_read_breaks_to_eager_with_one_warning():
    @tf.function
    def f(x):
        if x.numpy() > 0:  # needs the value: a graph break (a Python `if` on a tensor is
            return x * 2  # converted: tests/test_autograph.py)
        return -x

    with pytest.warns(UserWarning, match=r"graph break at .*test_function\.py:\d+"):
        assert float(f(tf.constant(3.0))) == 6.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(f(tf.constant(-4.0))) == 4.0  # eager for this signature, no new warning
        assert float(f(tf.constant(5.0))) == 10.0


def test_cond_on_a_traced_predicate():
    @tf.function
    def f(x):
        return tf.cond(x > 0, lambda: x * 2, lambda: -x)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(f(tf.constant(3.0))) == 6.0
        assert float(f(tf.constant(-4.0))) == 4.0
    assert f.experimental_get_tracing_count() == 1


def test_while_loop():
    i, s = tf.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s + i), (tf.constant(0),
                                                                             tf.constant(0)))
    assert int(i) == 5 and int(s) == 10

    @tf.function
    def f(n):
        return tf.while_loop(lambda i: i < n, lambda i: i + 1, [tf.constant(0)])

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a loop node: no graph break
        assert int(f(tf.constant(3))[0]) == 3
        assert int(f(tf.constant(7))[0]) == 7
    assert f.experimental_get_tracing_count() == 1


def test_for_over_a_dataset():
    ds = tf.data.Dataset.from_tensor_slices(np.arange(4, dtype=np.float32))

    @tf.function
    def total(ds):
        s = tf.constant(0.0)
        for x in ds:
            s += x
        return s

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a loop node: no graph break
        assert float(total(ds)) == 6.0
        assert float(total(ds)) == 6.0
    assert total.experimental_get_tracing_count() == 1


class _Model:
    def __init__(self, w):
        self.w = tf.Variable(w)
        self.traces = 0

    @tf.function
    def scale(self, x):
        self.traces += 1
        return x * self.w

    @tf.function(jit_compile=True)
    def shift(self, x, by=1.0):
        return x + by


def test_methods_keep_traces_per_instance():
    a, b = _Model(3.0), _Model(4.0)
    for _ in range(2):
        assert float(a.scale(tf.constant(2.0))) == 6.0
        assert float(b.scale(tf.constant(2.0))) == 8.0
    assert a.traces == 1 and b.traces == 1
    assert a.scale.experimental_get_tracing_count() == 1
    assert float(a.shift(tf.constant(2.0), by=3.0)) == 5.0
    assert _Model.scale.python_function(a, 2.0).numpy() == 6.0


def test_bound_method_python_function():
    m = _Model(3.0)
    bound = m.scale
    assert float(bound.python_function(tf.constant(1.0))) == 3.0
    assert float(bound(tf.constant(1.0))) == 3.0


def test_random_ops_draw_new_values_at_every_replay():
    @tf.function
    def f():
        return tf.random.uniform([4])

    tf.random.set_seed(3)
    a, b = f().numpy(), f().numpy()
    assert not np.array_equal(a, b)
    assert f.experimental_get_tracing_count() == 1


def test_training_step_in_a_function():
    # the guide's @tf.function train_step: tape, scaled loss, apply
    w = tf.Variable([1.0, -1.0])
    opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(0.5))

    @tf.function
    def train_step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(w * x))
            scaled = opt.get_scaled_loss(loss)
        grads = opt.get_unscaled_gradients(tape.gradient(scaled, [w]))
        opt.apply_gradients(zip(grads, [w]))
        return loss

    loss = train_step(tf.constant([1.0, 1.0]))
    assert float(loss) == 2.0
    np.testing.assert_allclose(w.numpy(), [0.0, 0.0])
    assert int(opt.iterations.numpy()) == 1


def _guide_model(seed):
    tf.random.set_seed(seed)
    return keras.Sequential([keras.layers.Dense(16, activation="relu", input_shape=(8,)),
                             keras.layers.Dense(4)])


@pytest.mark.parametrize("policy", ["float32", "mixed_float16"])
def test_traced_training_equals_eager(policy):
    keras.mixed_precision.set_global_policy(policy)
    try:
        rng = np.random.default_rng(0)
        x = rng.normal(size=(32, 8)).astype(np.float32)
        y = rng.integers(0, 4, 32)
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        results = []
        for traced in (False, True):
            model = _guide_model(1)
            opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.Adam(1e-2))

            def step(x, y):
                with tf.GradientTape() as tape:
                    loss = loss_fn(y, model(x, training=True))
                    scaled = opt.get_scaled_loss(loss)
                grads = opt.get_unscaled_gradients(tape.gradient(scaled, model.trainable_variables))
                opt.apply_gradients(zip(grads, model.trainable_variables))
                return loss

            fn = tf.function(step) if traced else step
            losses = [float(fn(tf.constant(x), tf.constant(y))) for _ in range(4)]
            opt.learning_rate = 1e-3  # a rate assigned between steps is used by the replay
            losses += [float(fn(tf.constant(x), tf.constant(y))) for _ in range(2)]
            results.append((losses, [v.numpy() for v in model.weights], int(opt.iterations),
                            float(opt.loss_scale)))
            if traced:
                assert fn.experimental_get_tracing_count() == 2  # variables made on the 1st call
        (le, we, ie, se), (lt, wt, it, st) = results
        assert le == lt and ie == it == 6 and se == st
        for a, b in zip(we, wt):
            np.testing.assert_array_equal(a, b)
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_dynamic_loss_scale_skips_on_the_device():
    w = tf.Variable([1.0])
    opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(1.0))

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = opt.get_scaled_loss(tf.reduce_sum(w * x))
        opt.apply_gradients(zip(opt.get_unscaled_gradients(tape.gradient(loss, [w])), [w]))

    step(tf.constant([1.0]))
    np.testing.assert_array_equal(w.numpy(), [0.0])
    before = float(opt.loss_scale)
    step(tf.constant([np.inf]))  # replayed: the skip is decided in the graph
    np.testing.assert_array_equal(w.numpy(), [0.0])
    assert float(opt.loss_scale) == before / 2
    kinds = [n["kind"] for n in step.get_concrete_function(tf.constant([1.0])).graph.nodes()]
    assert "OptimizerStep" in kinds and "ReadVariable" in kinds


def test_keras_model_call_in_a_function():
    model = _guide_model(2)

    @tf.function
    def predict(x):
        return model(x)

    x = np.ones((3, 8), np.float32)
    np.testing.assert_array_equal(predict(x).numpy(), model(x).numpy())
    model.layers[0].kernel.assign(model.layers[0].kernel * 2.0)
    np.testing.assert_array_equal(predict(x).numpy(), model(x).numpy())
    assert predict.experimental_get_tracing_count() == 1


def test_traced_values_print_symbolically():
    seen = []

    @tf.function
    def f(x):
        seen.append(str(x * 2))
        seen.append(repr(x * 2))
        return x

    f(tf.constant([1.0]))
    # TensorFlow: str Tensor("mul:0", shape=(1,), dtype=float32), repr <tf.Tensor 'mul:0' ...>
    assert re.match(r'Tensor\(".*", shape=\(1,\), dtype=float32\)', seen[0])
    assert re.match(r"<tf.Tensor '.*' shape=\(1,\) dtype=float32>", seen[1])


def test_errors_propagate():
    @tf.function
    def bad(x):
        return tf.matmul(x, x)

    with pytest.raises(ValueError):
        bad(tf.constant([1.0, 2.0]))


def test_dry_first_trace_when_a_pass_asks():
    from mixprec import _function
    v = tf.Variable(0.0)
    seen = []

    @tf.function
    def f(x):
        seen.append(1)
        v.assign_add(x)
        return v * 1.0

    always = lambda: True  # noqa: E731
    _function.dry_first_trace.append(always)
    try:
        assert float(f(tf.constant(2.0))) == 2.0  # the first replay gave it: applied once
        assert float(f(tf.constant(2.0))) == 4.0
        assert len(seen) == 1 and float(v) == 4.0

        @tf.function
        def g(x):
            seen.append(2)
            v.assign_add(x)
            return v * 2.0 if x.numpy() > 0 else v  # breaks: the dry trace changed nothing
        with pytest.warns(UserWarning, match="graph break"):
            assert float(g(tf.constant(1.0))) == 10.0
        assert float(v) == 5.0
    finally:
        _function.dry_first_trace.remove(always)  # the AMP rewrite's predicate stays


def test_gradients_through_a_replayed_function():
    w = tf.Variable([2.0, 3.0])

    @tf.function
    def f(x):
        return tf.reduce_sum(w * x * x)

    x = tf.constant([1.0, 4.0])
    f(x)  # traced
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)  # replayed: its ops record on the tape
    gx, gw = tape.gradient(y, [x, w])
    np.testing.assert_array_equal(gx.numpy(), [4.0, 24.0])
    np.testing.assert_array_equal(gw.numpy(), [1.0, 16.0])


def test_a_function_called_while_another_traces_is_inlined():
    @tf.function
    def inner(x):
        return x * 3.0

    @tf.function
    def outer(x):
        return inner(x) + 1.0

    inner(tf.constant(1.0))
    assert float(outer(tf.constant(2.0))) == 7.0
    assert float(outer(tf.constant(5.0))) == 16.0
    assert outer.experimental_get_tracing_count() == 1


def test_a_replayed_loss_scaled_step_never_reads_the_device(any_gpu):
    """The guide's step on GPU:0 (the emulated one without a GPU): once traced, a replay
    issues the whole step — forward, backward, finite check, skip decision, loss-scale
    update — without one copy back to the host."""
    from mixprec import _core
    if _core.device_count(1) and any_gpu != "emulated-gpu":
        pytest.skip("the copy counter is the emulated GPU's")
    with tf.device("/GPU:0"):
        model = _guide_model(3)
        opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.Adam(1e-3))
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        x = tf.constant(np.ones((8, 8), np.float32))
        y = tf.constant(np.zeros(8, np.int64))

        @tf.function
        def step(x, y):
            with tf.GradientTape() as tape:
                loss = opt.get_scaled_loss(loss_fn(y, model(x)))
            grads = opt.get_unscaled_gradients(tape.gradient(loss, model.trainable_variables))
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        step(x, y)
        step(x, y)
        before = _core.host_syncs(1, 0)
        for _ in range(3):
            step(x, y)
        assert _core.host_syncs(1, 0) == before
        assert int(opt.iterations.numpy()) == 5


def test_a_deferred_checkpoint_restore_inside_a_traced_step_happens_once(tmp_path):
    x = tf.constant(np.ones((4, 8), np.float32))
    y = tf.constant(np.zeros(4, np.int64))
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def make():
        model = _guide_model(4)
        opt = keras.optimizers.Adam(1e-2)

        def step(x, y):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x))
            opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                    model.trainable_variables))
            return loss
        return model, opt, step

    model, opt, step = make()
    step(x, y)
    path = tf.train.Checkpoint(model=model, optimizer=opt).save(str(tmp_path / "ck"))
    results = []
    for traced in (False, True):
        model, opt, step = make()
        tf.train.Checkpoint(model=model, optimizer=opt).restore(path)  # slots come later
        fn = tf.function(step) if traced else step
        for _ in range(3):
            fn(x, y)
        results.append([v.numpy() for v in opt.variables()])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_variable_arguments_are_traced_by_spec():
    @tf.function
    def bump(v, x):
        v.assign_add(x)
        return v.read_value() * 2.0

    a, b, c = tf.Variable(1.0), tf.Variable(10.0), tf.Variable([1.0, 2.0])
    assert float(bump(a, tf.constant(1.0))) == 4.0
    assert float(bump(b, tf.constant(1.0))) == 22.0   # same spec: replayed on b
    assert float(bump(a, tf.constant(1.0))) == 6.0
    assert float(a) == 3.0 and float(b) == 11.0
    assert bump.experimental_get_tracing_count() == 1
    np.testing.assert_array_equal(bump(c, tf.constant(1.0)).numpy(), [4.0, 6.0])
    assert bump.experimental_get_tracing_count() == 2  # another shape

    @tf.function
    def both(v, w):
        v.assign_add(1.0)
        return w.read_value()

    assert float(both(a, b)) == 11.0
    assert float(both(a, a)) == 5.0  # one variable twice: another signature
    assert both.experimental_get_tracing_count() == 2


def test_a_function_held_by_an_object_deep_copies_without_its_traces():
    import copy

    class Holder:
        def __init__(self):
            self.v = tf.Variable(1.0)
            self.step = tf.function(self._step)

        def _step(self, x):
            self.v.assign_add(x)
            return self.v.read_value()

    h = Holder()
    h.step(tf.constant(1.0))
    c = copy.deepcopy(h)
    assert float(c.step(tf.constant(5.0))) == 7.0 and float(h.v) == 2.0
    assert c.step.experimental_get_tracing_count() == 1


def test_concrete_function_graph_operations():
    v = tf.Variable([1.0, 2.0])

    @tf.function
    def f(x):
        return tf.matmul(x, tf.reshape(v, [2, 1]))

    cf = f.get_concrete_function(tf.TensorSpec([3, 2], tf.float32))
    types = [op.type for op in cf.graph.get_operations()]
    assert "MatMul" in types and "ReadVariableOp" in types and "Placeholder" in types


# library code reading a traced value's real size bakes it into the graph
_rows = eval(compile("lambda x: x.shape[0]", "<library stand-in>", "eval"),
             {"__name__": "mixprec._library_stand_in"})


def test_relaxed_shapes_replay_one_graph_when_no_shape_is_baked_in():
    side = []

    @tf.function(reduce_retracing=True)
    def f(x):
        side.append(1)
        return tf.reduce_sum(x * 2)

    for n in (2, 3, 4, 5, 3):
        assert float(f(tf.ones([n]))) == 2.0 * n
    # TensorFlow 2.21: an exact trace, then a relaxed one; Python runs for both only
    assert f.experimental_get_tracing_count() == 2 and len(side) == 2

    @tf.function(reduce_retracing=True)
    def mean(x):
        return tf.reduce_sum(x) / _rows(x)   # library code bakes the size into a constant

    for n in (2, 3, 4, 5):
        assert float(mean(tf.ones([n]) * n)) == float(n)
    assert mean.experimental_get_tracing_count() == 2

    @tf.function(reduce_retracing=True)
    def user_mean(x):
        return tf.reduce_sum(x) / x.shape[0]   # TensorFlow: None under the relaxed trace

    assert float(user_mean(tf.ones([2]) * 2)) == 2.0   # the exact first trace: (2,)
    with pytest.raises(TypeError):
        user_mean(tf.ones([3]))


def test_get_concrete_function_with_none_dims():
    side = []

    @tf.function
    def f(x):
        side.append(1)
        return tf.reduce_sum(x * 2)

    cf = f.get_concrete_function(tf.TensorSpec([None], tf.float32))
    assert f.experimental_get_tracing_count() == 1
    assert cf.structured_input_signature == ((tf.TensorSpec([None], tf.float32, name="x"),), {})
    assert [s.shape.as_list() for s in cf.inputs] == [[None]]
    assert float(f(tf.ones([3]))) == 6.0 and float(f(tf.ones([5]))) == 10.0
    assert float(cf(tf.ones([4]))) == 8.0
    assert f.experimental_get_tracing_count() == 1   # the calls fit the concrete function
    assert len(side) <= 2  # Python once more at the second shape (docs/function.md)
    with pytest.raises(TypeError):
        cf(tf.ones([2, 2]))


def test_datasets_are_traced_by_element_spec():
    side = []

    @tf.function
    def f(ds):
        side.append(1)
        s = tf.constant(0.0)
        for x in ds:
            s += tf.reduce_sum(x)
        return s

    ds1 = tf.data.Dataset.from_tensor_slices(np.zeros((10, 28, 28), np.float32)).batch(4)
    ds2 = tf.data.Dataset.from_tensor_slices(np.ones((6, 28, 28), np.float32)).batch(4)
    assert float(f(ds1)) == 0.0 and float(f(ds2)) == 6 * 28 * 28
    assert f.experimental_get_tracing_count() == 1 and len(side) == 1
    # TensorFlow 2.21: a (4, 28, 28) spec is a subtype of the traced (None, 28, 28)
    dropped = tf.data.Dataset.from_tensor_slices(np.ones((9, 28, 28), np.float32)).batch(
        4, drop_remainder=True)
    assert float(f(dropped)) == 8 * 28 * 28
    assert f.experimental_get_tracing_count() == 1
    # another element spec traces again
    other = tf.data.Dataset.from_tensor_slices(np.ones((4, 3), np.float32)).batch(2)
    assert float(f(other)) == 12.0 and f.experimental_get_tracing_count() == 2


def test_shape_and_size_replay_the_real_shape_under_a_relaxed_signature():
    side = []

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)])
    def h(x):
        side.append(1)
        return tf.shape(x), tf.size(x), tf.rank(x), tf.shape(x)[0] * 2

    # TensorFlow 2.21's values, and Python once
    for shape, want in [((2, 3), [[2, 3], 6, 2, 4]), ((4, 5), [[4, 5], 20, 2, 8]),
                        ((1, 7), [[1, 7], 7, 2, 2])]:
        assert [t.numpy().tolist() for t in h(tf.ones(shape))] == want
    assert len(side) == 1 and h.experimental_get_tracing_count() == 1

    @tf.function(reduce_retracing=True)
    def k(x):
        side.append(2)
        return tf.shape(x)[0], tf.reduce_sum(x) / tf.cast(tf.size(x), tf.float32)

    for n in (1, 2, 3, 4):
        a, b = k(tf.ones([n]))
        assert int(a) == n and float(b) == 1.0
    assert side.count(2) == 2 and k.experimental_get_tracing_count() == 2


def test_range_of_a_traced_bound_replays_for_another_bound():
    side = []

    @tf.function
    def r(n):
        side.append(1)
        return tf.reduce_sum(tf.range(n)), tf.range(1, n + 1, 2, dtype=tf.float32)

    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no graph break
        for v, total, odd in [(3, 3, [1, 3]), (5, 10, [1, 3, 5]), (0, 0, []), (8, 28, [1, 3, 5, 7])]:
            a, b = r(tf.constant(v))
            assert int(a) == total and b.numpy().tolist() == odd and b.dtype == tf.float32
    assert len(side) == 1 and r.experimental_get_tracing_count() == 1
    with pytest.raises(tf.errors.InvalidArgumentError, match="Requires start <= limit"):
        r(tf.constant(-2))


def test_python_scalars_are_keyed_by_value_and_numpy_scalars_are_tensors():
    seen = []

    @tf.function
    def f(x, k):
        seen.append(k)
        return x

    x = tf.constant(1.0)
    for k in [1, True, 1.0, 2, 2.0, np.float32(2.0), np.int64(2), False, 0, 0.0]:
        f(x, k)
    # TensorFlow 2.21: [1, 2, <float32 tensor k>, <int64 tensor k>, False]
    assert seen[:2] == [1, 2] and seen[4] is False and len(seen) == 5
    assert (seen[2].dtype, seen[3].dtype) == (tf.float32, tf.int64)


def test_python_numbers_in_results_are_tensors():
    @tf.function
    def h(x):
        return 1, 2.5, True, np.float64(1.5), None, "s", x

    out = h(tf.constant(1))
    assert [t.dtype.name for t in out[:4]] == ["int32", "float32", "bool", "float64"]
    assert out[4] is None and out[5] == "s"
    out = h(tf.constant(2))   # the replay
    assert float(out[1]) == 2.5 and int(out[6]) == 2


def test_concrete_functions_as_tensorflow():
    @tf.function
    def f(x, *, k):
        return x * k

    cf = f.get_concrete_function(tf.TensorSpec([2], tf.float32), k=tf.TensorSpec([], tf.float32))
    assert cf.structured_input_signature == (
        (tf.TensorSpec([2], tf.float32, name="x"),), {"k": tf.TensorSpec([], tf.float32, name="k")})
    assert cf(tf.ones([2]), k=tf.constant(3.0)).numpy().tolist() == [3.0, 3.0]
    assert f.get_concrete_function(tf.TensorSpec([2], tf.float32),
                                   k=tf.TensorSpec([], tf.float32)) is cf
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"input #0\(zero-based\) was expected to be a float tensor but is a "
                             r"int32 tensor"):
        cf(tf.ones([2], tf.int32), k=tf.constant(3.0))

    with pytest.raises(TypeError, match=r"got invalid args \[3\] with types \[<class 'int'>\]"):
        tf.function(lambda x: x, input_signature=[3])


def test_a_function_called_inside_another_counts_its_trace():
    @tf.function
    def inner(x):
        return x * 2

    @tf.function
    def outer(x):
        return inner(x) + 1

    assert float(outer(tf.constant(1.0))) == 3.0 and float(outer(tf.constant(2.0))) == 5.0
    assert inner.experimental_get_tracing_count() == 1   # TensorFlow 2.21
    assert outer.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("shapes,count", [
    # TensorFlow 2.21's tracing counts under reduce_retracing (its common supertypes)
    ([(1,), (2,), (3, 3), (4, 4), (5,)], 3),
    ([(1,), (2, 2)], 2),
    ([(1,), (2, 2), (3, 3)], 2),
    ([(1,), (2, 2), (3, 3, 3)], 2),
    ([(2, 2), (2, 3), (3, 3)], 3),
    ([(2, 2), (2, 3), (2, 5), (4, 3)], 3),
    ([(1,), (2,), (3,), (4,), (5,)], 2),
])
def test_reduce_retracing_traces_the_common_supertype(shapes, count):
    @tf.function(reduce_retracing=True)
    def f(x):
        return tf.reduce_sum(x)

    for s in shapes:
        assert float(f(tf.ones(s))) == float(np.prod(s))
    assert f.experimental_get_tracing_count() == count


def test_a_shape_read_on_the_host_bakes_it_instead_of_breaking():
    side = []

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def f(x):
        side.append(1)
        n = tf.shape(x)[0]
        return tf.ones(tf.shape(x)) * 2, tf.zeros([n, 2]), tf.range(n)

    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no graph break (TensorFlow has none)
        for k in (2, 3, 2, 5):
            a, b, c = f(tf.ones([k]))
            assert a.numpy().tolist() == [2.0] * k and b.shape.as_list() == [k, 2]
            assert c.numpy().tolist() == list(range(k))
    # the sizes baked into the fills keep a graph per length (Python again per length)
    assert f.experimental_get_tracing_count() == 1 and len(side) == 3


def test_a_traced_argument_prints_with_its_placeholder_name(capsys):
    @tf.function
    def f(x, y, pair):
        print("Tracing with", x, y, pair)
        return x

    f(tf.constant(1), tf.constant([1.0]), [tf.constant(2), tf.constant(3)])

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="inp"),
                                  tf.TensorSpec([], tf.int32)])
    def g(a, b):
        print(a, b)
        return a

    g(tf.ones([2]), tf.constant(1))
    # TensorFlow 2.21 prints (mixprec prints the same)
    assert capsys.readouterr().out.splitlines() == [
        'Tracing with Tensor("x:0", shape=(), dtype=int32) Tensor("y:0", shape=(1,), '
        "dtype=float32) [<tf.Tensor 'pair:0' shape=() dtype=int32>, "
        "<tf.Tensor 'pair_1:0' shape=() dtype=int32>]",
        'Tensor("inp:0", shape=(None,), dtype=float32) Tensor("b:0", shape=(), dtype=int32)']


def test_input_signature_nesting_must_match():
    @tf.function(input_signature=[(tf.TensorSpec([2]), tf.TensorSpec([]))])
    def f(p):
        return p[0] * p[1]

    assert f((tf.ones([2]), tf.constant(3.0))).numpy().tolist() == [3.0, 3.0]
    with pytest.raises(TypeError, match="Binding inputs to tf.function failed due to `Can not "
                                        "cast"):
        f([tf.ones([2]), tf.constant(3.0)])   # a list for the signature's tuple (TF 2.21)
    assert f.experimental_get_tracing_count() == 1


def test_frequent_retracing_warns_as_tensorflow(caplog):
    import logging

    @tf.function
    def f(x):
        return x

    logger = tf.get_logger()
    logger.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.WARNING, logger="mixprec"):
            for i in range(7):   # a Python int per call: a trace per call
                f(i)
            f(1)                 # a replay
    finally:
        logger.removeHandler(caplog.handler)
    msgs = [r.getMessage() for r in caplog.records if "triggered tf.function retracing" in
            r.getMessage()]
    # TensorFlow 2.21: at the 5th and 6th traces, then no more for this function
    assert [m.split(" calls to ")[0] for m in msgs] == ["5 out of the last 5",
                                                         "6 out of the last 6"]
    assert "<function test_frequent_retracing_warns_as_tensorflow.<locals>.f at" in msgs[0]
    assert msgs[0].endswith("https://www.tensorflow.org/api_docs/python/tf/function for  more "
                            "details.")
