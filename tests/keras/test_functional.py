"""Model building: keras.Input and the functional API (KerasTensors whose dtype and shape
are known before data flows, op layers for arithmetic on them), Sequential, and
subclassed Models with ``call``."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.keras import layers, mixed_precision
from mixprec.keras.engine.keras_tensor import KerasTensor

RNG = np.random.default_rng(1)


def data(*shape):
    return RNG.standard_normal(shape).astype("float32")


# --------------------------------------------------------------------------- Input


def test_input_is_symbolic_with_shape_and_dtype():
    x = keras.Input(shape=(784,), name="digits")
    assert isinstance(x, KerasTensor)
    assert tuple(x.shape) == (None, 784)
    assert x.dtype.name == "float32"
    assert x.name == "digits"
    assert keras.Input(shape=(3,), batch_size=8).shape.as_list() == [8, 3]
    assert keras.Input(shape=(2,), dtype="int32").dtype.name == "int32"
    assert keras.Input(shape=5).shape.as_list() == [None, 5]
    assert keras.backend.is_keras_tensor(x)
    with pytest.raises(TypeError):
        x.numpy()
    with pytest.raises(TypeError):
        bool(x)
    with pytest.raises(ValueError, match="shape"):
        keras.Input()


def test_input_stays_float32_under_mixed_policy():
    mixed_precision.set_global_policy("mixed_float16")
    x = keras.Input(shape=(4,))
    assert x.dtype.name == "float32"
    dense = layers.Dense(3)
    h = dense(x)
    # known before any data flows
    assert h.dtype.name == "float16"
    assert tuple(h.shape) == (None, 3)
    assert dense.kernel.dtype.name == "float32"
    out = layers.Activation("softmax", dtype="float32")(h)
    assert out.dtype.name == "float32"


# --------------------------------------------------------------------------- functional


def test_functional_model_runs_the_graph():
    inputs = keras.Input(shape=(6,))
    d1 = layers.Dense(5, activation="relu")
    d2 = layers.Dense(2)
    outputs = d2(d1(inputs))
    model = keras.Model(inputs=inputs, outputs=outputs)
    assert model.layers[1:] == [d1, d2]
    assert tuple(model.input_shape) == (None, 6) and tuple(model.output_shape) == (None, 2)
    assert len(model.trainable_variables) == 4
    x = data(3, 6)
    k1, b1, k2, b2 = model.get_weights()
    ref = np.maximum(x @ k1 + b1, 0) @ k2 + b2
    np.testing.assert_allclose(model(x).numpy(), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(model.predict(x, verbose=0), ref, rtol=1e-5, atol=1e-5)
    # positional arguments work as well
    assert keras.Model(inputs, outputs).outputs == [outputs]


def test_functional_model_mixed_dtypes_flow():
    mixed_precision.set_global_policy("mixed_float16")
    inputs = keras.Input(shape=(8,))
    h = layers.Dense(4, activation="relu")(inputs)
    logits = layers.Dense(3)(h)
    out = layers.Activation("softmax", dtype="float32")(logits)
    model = keras.Model(inputs, out)
    assert model.dtype_policy.name == "mixed_float16"
    y = model(data(5, 8))
    assert y.dtype.name == "float32"
    np.testing.assert_allclose(y.numpy().sum(-1), 1.0, rtol=1e-6)
    # float64 data is accepted and cast by the first layer
    assert model(data(2, 8).astype(np.float64)).dtype.name == "float32"


def test_data_is_cast_to_the_inputs_dtype():
    """tf-keras' _conform_to_reference_input: uint8 images feed a float32 Input."""
    mixed_precision.set_global_policy("mixed_float16")
    images = RNG.integers(0, 256, (3, 4, 4)).astype(np.uint8)
    inputs = keras.Input(shape=(4, 4))
    model = keras.Model(inputs, layers.Dense(2)(layers.Flatten()(inputs)))
    y = model(images)
    assert y.dtype.name == "float16"
    np.testing.assert_array_equal(y.numpy(), model(images.astype(np.float32)).numpy())
    seq = keras.Sequential([layers.Flatten(), layers.Dense(2)])  # built on first call
    assert seq(images).dtype.name == "float16"
    model.compile("sgd", "mse")
    model.fit(images, np.zeros((3, 2), np.float32), verbose=0)


def test_functional_shape_check():
    inputs = keras.Input(shape=(4,))
    model = keras.Model(inputs, layers.Dense(1)(inputs))
    with pytest.raises(ValueError, match="incompatible"):
        model(data(2, 5))
    with pytest.raises(ValueError, match="incompatible"):
        model(data(2, 4, 1))


def test_multiple_inputs_and_outputs():
    a = keras.Input(shape=(3,), name="a")
    b = keras.Input(shape=(3,), name="b")
    s = layers.Dense(2, name="s")(a + b)
    d = layers.Dense(1, name="d")(a - b)
    model = keras.Model(inputs=[a, b], outputs=[s, d])
    xa, xb = data(4, 3), data(4, 3)
    ys, yd = model([xa, xb])
    ks, bs, kd, bd = (w.numpy() for w in model.weights)
    np.testing.assert_allclose(ys.numpy(), (xa + xb) @ ks + bs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(yd.numpy(), (xa - xb) @ kd + bd, rtol=1e-5, atol=1e-5)
    preds = model.predict([xa, xb], batch_size=3, verbose=0)
    assert isinstance(preds, list) and [p.shape for p in preds] == [(4, 2), (4, 1)]
    with pytest.raises(ValueError, match="expects 2 input"):
        model(xa)


def test_dict_data_for_list_inputs_is_matched_by_input_name():
    z = keras.Input(shape=(2,), name="z")
    a = keras.Input(shape=(2,), name="a")  # names sort the other way round
    model = keras.Model([z, a], layers.Dense(1, kernel_initializer="ones",
                                             use_bias=False)(z - a))
    got = model({"a": np.zeros((1, 2), np.float32), "z": np.ones((1, 2), np.float32)})
    np.testing.assert_array_equal(got.numpy(), [[2.0]])
    np.testing.assert_array_equal(
        model.predict({"z": np.ones((3, 2), np.float32), "a": np.zeros((3, 2), np.float32)},
                      verbose=0), np.full((3, 1), 2.0, np.float32))


def test_model_input_and_output_properties():
    inputs = keras.Input(shape=(3,))
    outputs = layers.Dense(2)(inputs)
    model = keras.Model(inputs, outputs)
    assert model.input is inputs and model.output is outputs
    seq = keras.Sequential([layers.Dense(2, input_shape=(3,))])
    assert tuple(seq.input.shape) == (None, 3) and tuple(seq.output.shape) == (None, 2)


def test_dict_inputs():
    x1 = keras.Input(shape=(2,), name="x1")
    x2 = keras.Input(shape=(2,), name="x2")
    out = layers.Dense(1, kernel_initializer="ones")(x1 * x2)
    model = keras.Model({"x1": x1, "x2": x2}, out)
    y = model({"x1": np.full((1, 2), 2.0, np.float32), "x2": np.full((1, 2), 3.0, np.float32)})
    np.testing.assert_allclose(y.numpy(), [[12.0]])


def test_shared_layer_used_twice():
    a = keras.Input(shape=(3,))
    b = keras.Input(shape=(3,))
    shared = layers.Dense(2)
    model = keras.Model([a, b], shared(a) + shared(b))
    assert len(model.trainable_variables) == 2
    xa, xb = data(2, 3), data(2, 3)
    k, bias = shared.get_weights()
    np.testing.assert_allclose(model([xa, xb]).numpy(), xa @ k + xb @ k + 2 * bias, rtol=1e-5,
                               atol=1e-5)


def test_nested_functional_model():
    inner_in = keras.Input(shape=(4,))
    inner = keras.Model(inner_in, layers.Dense(3)(inner_in), name="inner")
    outer_in = keras.Input(shape=(4,))
    out = layers.Dense(1)(inner(outer_in))
    assert tuple(out.shape) == (None, 1)
    outer = keras.Model(outer_in, out)
    assert len(outer.trainable_variables) == 4
    x = data(2, 4)
    k1, b1, k2, b2 = outer.get_weights()
    np.testing.assert_allclose(outer(x).numpy(), (x @ k1 + b1) @ k2 + b2, rtol=1e-5, atol=1e-5)


def test_graph_disconnected_and_bad_inputs():
    a = keras.Input(shape=(2,))
    b = keras.Input(shape=(2,))
    out = layers.Dense(1)(a + b)
    with pytest.raises(ValueError, match="Graph disconnected"):
        keras.Model(a, out)
    with pytest.raises(ValueError):
        keras.Model(np.zeros((1, 2)), out)
    with pytest.raises(ValueError, match="both"):
        keras.Model(inputs=a)


def test_training_flag_reaches_dropout_in_functional_model():
    tf.random.set_seed(0)
    inputs = keras.Input(shape=(100,))
    model = keras.Model(inputs, layers.Dropout(0.5)(inputs))
    x = np.ones((4, 100), np.float32)
    np.testing.assert_array_equal(model(x).numpy(), x)
    np.testing.assert_array_equal(model(x, training=False).numpy(), x)
    dropped = model(x, training=True).numpy()
    assert (dropped == 0).any() and set(np.unique(dropped)) <= {0.0, 2.0}


def test_get_layer():
    inputs = keras.Input(shape=(2,))
    d = layers.Dense(1, name="the_dense")
    model = keras.Model(inputs, d(inputs))
    assert model.get_layer("the_dense") is d
    assert model.get_layer(index=1) is d
    with pytest.raises(ValueError, match="No such layer"):
        model.get_layer("missing")


# --------------------------------------------------------------------------- op layers


@pytest.mark.parametrize("policy", ["float32", "mixed_float16"])
def test_arithmetic_on_keras_tensors(policy):
    mixed_precision.set_global_policy(policy)
    inputs = keras.Input(shape=(4,))
    h = layers.Dense(4, kernel_initializer="ones")(inputs)
    compute = mixed_precision.Policy(policy).compute_dtype
    exprs = {
        "add": h + 1, "radd": 1 + h, "sub": h - 2, "rsub": 2 - h, "mul": h * 3,
        "rmul": 3 * h, "div": h / 2, "rdiv": 2 / (h + 10), "neg": -h, "abs": abs(h),
        "pow": h ** 2, "getitem": h[:, 0], "matmul": h @ np.eye(4, dtype=compute),
    }
    for name, kt in exprs.items():
        assert isinstance(kt, KerasTensor), name
        assert kt.dtype.name == compute, name
    assert tuple(exprs["getitem"].shape) == (None,)
    model = keras.Model(inputs, exprs)
    x = data(3, 4)
    hv = (x @ np.ones((4, 4), np.float32)).astype(np.float64)
    want = {"add": hv + 1, "radd": 1 + hv, "sub": hv - 2, "rsub": 2 - hv, "mul": hv * 3,
            "rmul": 3 * hv, "div": hv / 2, "rdiv": 2 / (hv + 10), "neg": -hv,
            "abs": np.abs(hv), "pow": hv ** 2, "getitem": hv[:, 0], "matmul": hv}
    got = model(x)
    tol = 1e-5 if compute == "float32" else 1e-2
    for name in want:
        assert got[name].dtype.name == compute, name
        np.testing.assert_allclose(np.asarray(got[name], np.float64), want[name], rtol=tol,
                                   atol=tol, err_msg=name)


def test_op_layers_do_not_autocast():
    mixed_precision.set_global_policy("mixed_float16")
    inputs = keras.Input(shape=(2,))  # float32
    assert (inputs * 2).dtype.name == "float32"
    with pytest.raises(TypeError):  # no implicit promotion, as TensorFlow
        inputs + layers.Dense(2)(inputs)


# --------------------------------------------------------------------------- Sequential


def test_sequential_with_input_shape_is_built():
    model = keras.Sequential([layers.Dense(4, input_shape=(3,), activation="relu"),
                              layers.Dense(2)])
    assert model.built
    assert tuple(model.output_shape) == (None, 2)
    assert len(model.layers) == 2
    x = data(5, 3)
    k1, b1, k2, b2 = model.get_weights()
    np.testing.assert_allclose(model(x).numpy(), np.maximum(x @ k1 + b1, 0) @ k2 + b2,
                               rtol=1e-5, atol=1e-5)


def test_sequential_deferred_build_add_pop():
    model = keras.Sequential()
    model.add(layers.Flatten())
    model.add(layers.Dense(3))
    assert not model.built
    with pytest.raises(ValueError, match="have not yet been created"):
        model.weights  # tf-keras 2.21: no misleading empty list
    y = model(data(2, 2, 2))
    assert tuple(y.shape) == (2, 3)
    assert model.built and len(model.weights) == 2
    model.pop()
    assert len(model.layers) == 1
    assert tuple(model(data(2, 2, 2)).shape) == (2, 4)
    with pytest.raises(TypeError, match="must be an instance of class Layer"):
        model.add("dense")


def test_sequential_with_input_and_policy():
    mixed_precision.set_global_policy("mixed_bfloat16")
    model = keras.Sequential([keras.Input(shape=(4,)), layers.Dense(3),
                              layers.Activation("softmax", dtype="float32")])
    assert [la.dtype_policy.name for la in model.layers] == ["mixed_bfloat16", "float32"]
    assert model.outputs[0].dtype.name == "float32"
    assert model(data(2, 4)).dtype.name == "float32"


def test_sequential_build_method():
    model = keras.Sequential([layers.Dense(2)])
    model.build((None, 5))
    assert model.layers[0].kernel.shape == (5, 2)


# --------------------------------------------------------------------------- subclassing


class MLP(keras.Model):
    def __init__(self, units=4, **kwargs):
        super().__init__(**kwargs)
        self.hidden = layers.Dense(units, activation="relu")
        self.drop = layers.Dropout(0.5)
        self.out = layers.Dense(2)
        self.softmax = layers.Activation("softmax", dtype="float32")

    def call(self, inputs, training=None):
        return self.softmax(self.out(self.drop(self.hidden(inputs), training=training)))


def test_subclassed_model():
    mixed_precision.set_global_policy("mixed_float16")
    model = MLP()
    assert model.dtype_policy.name == "mixed_float16"
    x = data(3, 5)
    y = model(x)
    assert y.dtype.name == "float32"
    assert len(model.trainable_variables) == 4
    assert all(v.dtype.name == "float32" for v in model.trainable_variables)
    np.testing.assert_allclose(y.numpy().sum(-1), 1.0, rtol=1e-6)
    # inference is deterministic; training=True reaches the Dropout inside call
    np.testing.assert_array_equal(model(x).numpy(), model(x, training=False).numpy())


def test_subclassed_model_without_call_raises():
    class Empty(keras.Model):
        pass

    with pytest.raises(NotImplementedError):
        Empty()(data(1, 2))


def test_subclassed_model_training_flag_propagates():
    seen = []

    class Spy(layers.Layer):
        def call(self, inputs, training=None):
            seen.append(training)
            return inputs

    class Outer(keras.Model):
        def __init__(self):
            super().__init__()
            self.spy = Spy()

        def call(self, inputs, training=None):
            return self.spy(inputs)

    m = Outer()
    m(data(1, 2), training=True)
    m(data(1, 2))
    assert seen == [True, None]


# --------------------------------------------------------------------------- symbolic shapes


def _peak_during(fn):
    tf.config.experimental.reset_memory_stats("CPU:0")
    before = tf.config.experimental.get_memory_info("CPU:0")["current"]
    out = fn()
    return out, tf.config.experimental.get_memory_info("CPU:0")["peak"] - before


def test_building_on_a_huge_input_allocates_no_sample():
    """Shapes come from compute_output_shape: a (None, 2**30) Input costs nothing (a sample
    of it was 4 GB), and Dense allocates only its own weights."""
    def build():
        x = keras.Input((2 ** 30,))
        h = layers.Dropout(0.5)(x)
        h = layers.Activation("relu")(h)
        h = layers.Reshape((2 ** 15, -1))(h)
        return layers.Flatten()(h)

    out, peak = _peak_during(build)
    assert out.shape.as_list() == [None, 2 ** 30] and out.dtype == tf.float32
    assert peak < 2 ** 20

    def dense():
        x = keras.Input((2 ** 22,))
        return keras.Model(x, layers.Dense(1)(x))

    model, peak = _peak_during(dense)
    kernel = 4 * 2 ** 22
    assert model.output_shape == (None, 1)
    assert peak <= 2 * kernel + 2 ** 16  # the kernel (its initial value and the variable)


def test_built_in_layers_are_not_run_when_called_on_keras_tensors():
    calls = []

    class Counting(layers.Dense):
        def call(self, inputs):
            calls.append(1)
            return super().call(inputs)

    x = keras.Input((3, 5), dtype="int32")
    y = Counting(4)(x)
    assert calls == [] and y.shape.as_list() == [None, 3, 4] and y.dtype == tf.float32
    model = keras.Model(x, y)
    assert model(np.ones((2, 3, 5), np.int32)).shape == (2, 3, 4) and calls == [1]


@pytest.mark.parametrize("layer,shape,dtype", [
    (lambda: layers.Dense(3), (4, 5), "float32"),
    (lambda: layers.Dense(3, dtype="mixed_float16"), (2, 4, 5), "float32"),
    (lambda: layers.Activation("softmax", dtype="float32"), (4, 5), "float16"),
    (lambda: layers.Dropout(0.3), (4, 5), "float32"),
    (lambda: layers.Flatten(), (4, 2, 3), "float32"),
    (lambda: layers.Flatten(), (4, 2, 3), "int32"),
    (lambda: layers.Reshape((3, -1)), (4, 6), "float32"),
    (lambda: layers.Reshape((2, 3)), (4, 6), "float32"),
])
def test_compute_output_shape_agrees_with_the_computed_output(layer, shape, dtype):
    x = keras.Input(shape[1:], dtype=dtype)
    kt = layer()(x)
    layer_obj = kt._keras_history[0]
    value = tf.ones(shape, tf.int32) if dtype == "int32" else tf.cast(tf.ones(shape), dtype)
    real = layer_obj(value)
    assert kt.shape.as_list() == [None] + list(real.shape[1:])
    assert kt.dtype == real.dtype
    assert tuple(layer_obj.compute_output_shape(tf.TensorShape(shape))) == tuple(real.shape)


def test_layers_without_compute_output_shape_still_build():
    class Twice(layers.Layer):  # no compute_output_shape: run once on placeholder data
        def call(self, inputs):
            return tf.concat([inputs, inputs], axis=-1)

    x = keras.Input((3,))
    y = Twice()(x)
    assert y.shape.as_list() == [None, 6]
    assert layers.Lambda(lambda t: t[:, :2])(x).shape.as_list() == [None, 2]
    assert (x * 2).shape.as_list() == [None, 3]


def test_symbolic_shape_errors_are_raised_at_construction():
    dense = layers.Dense(2)
    dense(keras.Input((4,)))
    with pytest.raises(ValueError, match="expected axis -1 of input shape to have value 4"):
        dense(keras.Input((5,)))
    with pytest.raises(ValueError, match="total size of new array must be unchanged"):
        layers.Reshape((4, 4))(keras.Input((6,)))
    with pytest.raises(ValueError, match="should be defined"):
        layers.Dense(2)(keras.Input((None,)))


def test_a_custom_compute_output_shape_is_used_and_a_failing_one_falls_back():
    calls = []

    class Pairs(layers.Layer):
        def call(self, inputs):
            calls.append(1)
            return tf.reshape(inputs, [-1, inputs.shape[1] // 2, 2])

        def compute_output_shape(self, input_shape):
            return (input_shape[0], input_shape[1] // 2, 2)

    class Broken(Pairs):
        def compute_output_shape(self, input_shape):
            return input_shape[0] + 1  # raises on None: the layer is run instead

    x = keras.Input((6,))
    assert Pairs()(x).shape.as_list() == [None, 3, 2] and calls == []
    assert Broken()(x).shape.as_list() == [None, 3, 2] and calls == [1]
