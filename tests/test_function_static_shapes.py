"""Static shapes inside traced functions (issue 13): a relaxed dimension is None while
tracing, as TensorFlow 2.21 shows it. The expected lines are TensorFlow 2.21's printed
output for the same code (run with TF_USE_LEGACY_KERAS=1)."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras


def test_input_signature_dims_are_none_and_ops_propagate_them():
    out = []

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def sig(x):
        out.append(" ".join(map(str, (
            x.shape, x.shape[0] is None, x.shape.as_list(), x.get_shape(), x.shape.rank,
            x.shape.is_compatible_with([5, 3]), x.shape.is_fully_defined(),
            x.shape.num_elements()))))
        out.append(repr(x.shape))
        y = tf.matmul(x, tf.ones([3, 4]))
        out.append(" ".join(map(str, (
            tf.reduce_sum(x, axis=1).shape, tf.reduce_mean(x, 0, keepdims=True).shape, y.shape,
            (x * 2.0 + tf.ones([3])).shape, tf.reshape(x, [-1]).shape,
            tf.reshape(x, [-1, 1, 3]).shape))))
        out.append(" ".join(map(str, (
            x[:, 1:].shape, x[0].shape, x[1:].shape, x[..., None].shape,
            tf.concat([x, x], 0).shape, tf.concat([x, x], 1).shape, tf.stack([x, x]).shape,
            tf.expand_dims(x, -1).shape, tf.transpose(x).shape, tf.nn.softmax(x).shape,
            tf.argmax(x, 1).shape, tf.gather(x, [0, 1]).shape,
            tf.gather(x, [0, 2], axis=1).shape, tf.cast(x, tf.int32).shape,
            tf.where(x > 0, x, 0.0).shape, tf.shape(x).shape))))
        return y

    a = sig(tf.ones([5, 3]))
    b = sig(tf.ones([2, 3]))
    # traced == eager, and the one trace serves both shapes
    np.testing.assert_array_equal(a.numpy(), np.full((5, 4), 3.0, np.float32))
    np.testing.assert_array_equal(b.numpy(), np.full((2, 4), 3.0, np.float32))
    assert sig.experimental_get_tracing_count() == 1
    assert out[:4] == [
        "(None, 3) True [None, 3] (None, 3) 2 True False None",
        "TensorShape([None, 3])",
        "(None,) (1, 3) (None, 4) (None, 3) (None,) (None, 1, 3)",
        "(None, 2) (3,) (None, 3) (None, 3, 1) (None, 3) (None, 6) (2, None, 3) (None, 3, 1) "
        "(3, None) (None, 3) (None,) (2, 3) (None, 2) (None, 3) (None, 3) (2,)",
    ]


def test_windows_keep_a_none_batch():
    out = []

    @tf.function(input_signature=[tf.TensorSpec([None, 8, 8, 3], tf.float32)])
    def conv(x):
        c = tf.nn.conv2d(x, tf.ones([3, 3, 3, 4]), 1, "SAME")
        out.append(" ".join(map(str, (
            c.shape, tf.nn.max_pool2d(c, 2, 2, "VALID").shape,
            tf.nn.avg_pool2d(x, 2, 2, "SAME").shape, tf.reduce_mean(c, [1, 2]).shape))))
        return c

    assert conv(tf.ones([2, 8, 8, 3])).shape == (2, 8, 8, 4)
    assert out[0] == "(None, 8, 8, 4) (None, 4, 4, 4) (None, 4, 4, 3) (None, 4)"


def test_reduce_retracing_shows_the_relaxed_dims():
    out = []

    @tf.function(reduce_retracing=True)
    def rr(x):
        out.append(str(x.shape))
        return x + 1

    for shape in ([2, 3], [4, 3], [5, 3], [5, 2]):
        np.testing.assert_array_equal(rr(tf.ones(shape)).numpy(), np.full(shape, 2.0))
    assert rr.experimental_get_tracing_count() == 3
    assert out == ["(2, 3)", "(None, 3)", "(None, None)"]


def test_get_concrete_function_output_shapes():
    out = []

    @tf.function
    def gcf(x):
        out.append(str(x.shape))
        return {"a": x * 2, "b": tf.reduce_sum(x)}

    cf = gcf.get_concrete_function(tf.TensorSpec([None], tf.float32))
    assert out == ["(None,)"]
    assert str(cf.output_shapes) == "{'a': TensorShape([None]), 'b': TensorShape([])}"
    assert str(cf.structured_outputs["a"].shape) == "(None,)"
    assert str(cf.structured_outputs["b"].shape) == "()"
    assert cf.output_dtypes == {"a": tf.float32, "b": tf.float32}
    assert float(cf(tf.ones([4]))["b"]) == 4.0


def test_a_dataset_loop_body_sees_the_element_spec():
    out = []

    @tf.function
    def loop(ds):
        tot = tf.constant(0, tf.int64)
        for x in ds:
            out.append(str(x.shape))
            tot += tf.reduce_sum(x)
        return tot

    assert int(loop(tf.data.Dataset.range(10).batch(3))) == 45
    # a fixed batch size fits the trace made for None (TensorFlow's trace subtyping)
    assert int(loop(tf.data.Dataset.range(9).batch(3, drop_remainder=True))) == 36
    assert out == ["(None,)"]

    seen = []

    @tf.function
    def fixed(ds):
        for x in ds:
            seen.append(str(x.shape))
        return 0

    fixed(tf.data.Dataset.range(9).batch(3, drop_remainder=True))
    assert seen == ["(3,)"]


def test_python_arithmetic_on_a_none_dim_is_a_type_error():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def bad(x):
        return x.shape[0] * 2

    # TensorFlow 2.21: TypeError: unsupported operand type(s) for *: 'NoneType' and 'int'
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \*: 'NoneType' "
                                        r"and 'int'"):
        bad(tf.ones([3]))


def test_printing_a_traced_tensor_shows_none():
    out = []

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def pr(x):
        out.append(str(x))
        out.append(str(x * 2).replace("traced:0", "mul:0"))   # (op names differ)
        return tf.shape(x)

    assert pr(tf.ones([4, 3])).numpy().tolist() == [4, 3]
    assert out == ['Tensor("x:0", shape=(None, 3), dtype=float32)',
                   'Tensor("mul:0", shape=(None, 3), dtype=float32)']


def test_tf_shape_stays_dynamic_and_replays_every_shape():
    side = []

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)])
    def f(x):
        side.append(x.shape.as_list())
        n = tf.cast(tf.shape(x)[0] * tf.shape(x)[1], tf.float32)
        return tf.reduce_sum(x) / n

    for shape in ([2, 3], [4, 5], [1, 7]):
        v = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        assert float(f(v)) == pytest.approx(float(v.mean()))
    assert side == [[None, None]]


def test_gradients_and_dense_on_rank_3_keep_none():
    out = []
    layer = keras.layers.Dense(2)

    @tf.function(input_signature=[tf.TensorSpec([None, 4, 3], tf.float32)])
    def f(x):
        with tf.GradientTape() as t:
            t.watch(x)
            y = layer(x)
            loss = tf.reduce_sum(y * y)
        g = t.gradient(loss, x)
        out.append(str(y.shape))
        out.append(str(g.shape))
        return g

    g = f(tf.ones([2, 4, 3]))
    assert g.shape == (2, 4, 3)
    # (a layer that creates variables is traced twice on its first call, as TensorFlow's)
    assert out == ["(None, 4, 2)", "(None, 4, 3)"] * 2

    out.clear()
    flatten, reshape = keras.layers.Flatten(), keras.layers.Reshape((-1, 2))

    @tf.function(input_signature=[tf.TensorSpec([None, 2, 3, 2], tf.float32)])
    def h(x):
        out.extend(str(s) for s in (flatten(x).shape, reshape(x).shape,
                                    keras.layers.Reshape((6, 2))(x).shape))
        return flatten(x)

    assert h(tf.ones([1, 2, 3, 2])).shape == (1, 12)   # (a batch of 1: still None)
    assert out == ["(None, 12)", "(None, 6, 2)", "(None, 6, 2)"]


def test_keras_fit_traces_a_none_batch():
    class Show(keras.layers.Layer):
        def call(self, x):
            seen.append(str(x.shape))
            return x

    seen = []
    model = keras.Sequential([keras.Input((4,)), Show(), keras.layers.Dense(2)])
    model.compile("sgd", "mse")
    x = np.ones((10, 4), np.float32)
    y = np.ones((10, 2), np.float32)
    seen.clear()
    h = model.fit(x, y, batch_size=4, epochs=2, verbose=0)
    # TensorFlow 2.21: (None, 4) in every traced call of the layer
    assert seen and set(seen) == {"(None, 4)"}
    seen.clear()
    model.evaluate(x, y, batch_size=4, verbose=0)
    model.predict(x, batch_size=4, verbose=0)
    assert seen and set(seen) == {"(None, 4)"}
    assert np.isfinite(h.history["loss"]).all()

    inp = keras.Input((3,))
    fm = keras.Model(inp, keras.layers.Dense(2)(Show()(inp)))
    fm.compile("adam", "mse")
    seen.clear()
    fm.fit(np.ones((6, 3), np.float32), np.ones((6, 2), np.float32), batch_size=4, verbose=0)
    assert seen and set(seen) == {"(None, 3)"}


def test_set_shape_checks_and_refines_the_static_shape():
    out = []

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def f(x):
        for bad in ([5], [None, 2]):
            try:
                x.set_shape(bad)
            except ValueError as e:
                out.append(str(e))
        y = x * 2
        y.set_shape([4, 3])
        out.append(str(y.shape))
        try:
            y.set_shape([5, 3])
        except ValueError as e:
            out.append(str(e))
        return y

    assert f(tf.ones([4, 3])).shape == (4, 3)
    assert out == [
        "Shapes must be equal rank, but are 2 and 1",
        "Dimension 1 in both shapes must be equal, but are 3 and 2. Shapes are [?,3] and [?,2].",
        "(4, 3)",
        "Dimension 0 in both shapes must be equal, but are 4 and 5. Shapes are [4,3] and [5,3].",
    ]
    with pytest.raises(ValueError, match=r"^Tensor's shape \(4, 3\) is not compatible with "
                                         r"supplied shape \(5, 3\)\.$"):
        tf.ones([4, 3]).set_shape([5, 3])


def test_library_helpers_report_static_shapes():
    out = []

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def f(x):
        out.extend(str(v) for v in (
            tf.zeros_like(x).shape, tf.ones([2]).shape, tf.TensorSpec.from_tensor(x),
            keras.backend.int_shape(x), tf.range(4).shape, tf.ones_like(x[0]).shape))
        return x

    f(tf.ones([2, 3]))
    # TensorFlow 2.21's lines
    assert out == ["(None, 3)", "(2,)", "TensorSpec(shape=(None, 3), dtype=tf.float32, name='x')",
                   "(None, 3)", "(4,)", "(3,)"]


def test_library_size_reads_do_not_blur_later_user_shapes():
    out = []
    dense = keras.layers.Dense(2)

    @tf.function(input_signature=[tf.TensorSpec([None, 3, 4], tf.float32)])
    def f(x):
        a = tf.einsum("bij->b", x)
        y = dense(x)
        out.extend(str(s) for s in (
            a.shape, tf.einsum("...ij,...jk->...ik", x, tf.ones([4, 2])).shape,
            tf.ones([2]).shape, y.shape, tf.range(3).shape, tf.random.uniform([2, 2]).shape))
        return y

    assert f(tf.ones([2, 3, 4])).shape == (2, 3, 2)
    # TensorFlow 2.21's lines (the layer creates its variables: traced twice)
    assert out == ["(None,)", "(None, 3, 2)", "(2,)", "(None, 3, 2)", "(3,)", "(2, 2)"] * 2


def test_keras_layers_under_fit_show_a_none_batch():
    seen = []

    class Show(keras.layers.Layer):
        def __init__(self, tag, **kw):
            super().__init__(**kw)
            self.tag = tag

        def call(self, x):
            if tf.inside_function():
                seen.append("%s %s" % (self.tag, x.shape))
            return x

    rng = np.random.default_rng(0)
    m = keras.Sequential([
        keras.Input((8, 8, 3)), keras.layers.Conv2D(4, 3, padding="same"), Show("conv"),
        keras.layers.BatchNormalization(), Show("bn"), keras.layers.MaxPooling2D(), Show("pool"),
        keras.layers.Flatten(), Show("flat"), keras.layers.Dense(3), Show("dense")])
    m.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
    m.fit(rng.random((10, 8, 8, 3), np.float32), rng.integers(0, 3, 10), batch_size=4, verbose=0)
    # TensorFlow 2.21's shapes
    assert sorted(set(seen)) == ["bn (None, 8, 8, 4)", "conv (None, 8, 8, 4)", "dense (None, 3)",
                                 "flat (None, 64)", "pool (None, 4, 4, 4)"]
    seen.clear()
    e = keras.Sequential([
        keras.Input((5,), dtype="int32"), keras.layers.Embedding(10, 4), Show("emb"),
        keras.layers.LSTM(6, return_sequences=True), Show("lstm"),
        keras.layers.GlobalAveragePooling1D(), Show("gap"), keras.layers.Dense(1)])
    e.compile("sgd", "mse")
    e.fit(rng.integers(0, 10, (6, 5)), np.ones((6, 1), np.float32), batch_size=4, verbose=0)
    assert sorted(set(seen)) == ["emb (None, 5, 4)", "gap (None, 6)", "lstm (None, 5, 6)"]
    seen.clear()
    inp = keras.Input((6, 8))
    att = keras.layers.MultiHeadAttention(2, 4)(inp, inp)
    am = keras.Model(inp, keras.layers.Dense(1)(Show("mha")(att)))
    am.compile("sgd", "mse")
    am.fit(np.ones((5, 6, 8), np.float32), np.ones((5, 6, 1), np.float32), batch_size=2,
           verbose=0)
    assert sorted(set(seen)) == ["mha (None, 6, 8)"]
