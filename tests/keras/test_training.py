"""Model.compile / fit / evaluate / predict / train_on_batch, callbacks and History,
validation_split, save_weights / load_weights.

The compile wrapping rules are tf-keras' (semantics.md §3.4): under a ``mixed_float16``
model policy the optimizer (strings included) is wrapped in a dynamic LossScaleOptimizer;
``mixed_bfloat16`` and float32 are not wrapped; an LSO passed in is kept with its settings;
under the experimental API the policy's ``loss_scale`` is used.
"""

import contextlib
import io
import os
import re
import zipfile

import numpy as np
import pytest
from tolerances import assert_close

import mixprec as tf
from mixprec import keras
from mixprec.keras import layers, mixed_precision
from mixprec.keras.mixed_precision import experimental
from mixprec.keras.mixed_precision.loss_scale_optimizer import (LossScaleOptimizer,
                                                                 LossScaleOptimizerV1)
from mixprec.mixed_precision.experimental import DynamicLossScale, FixedLossScale

N_FEATURES, N_CLASSES = 8, 3


def make_data(n=96, seed=0):
    """Three well separated Gaussian blobs: a 2-layer MLP learns them in a few epochs."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((N_CLASSES, N_FEATURES)) * 3
    y = rng.integers(0, N_CLASSES, n)
    x = (centers[y] + rng.standard_normal((n, N_FEATURES))).astype("float32")
    return x, y.astype("int64")


def make_model(policy=None, units=16, optimizer="adam", metrics=("accuracy",), compile=True):
    if policy is not None:
        mixed_precision.set_global_policy(policy)
    inputs = keras.Input(shape=(N_FEATURES,))
    h = layers.Dense(units, activation="relu")(inputs)
    h = layers.Dense(N_CLASSES)(h)
    outputs = layers.Activation("softmax", dtype="float32")(h)
    model = keras.Model(inputs, outputs)
    if compile:
        model.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy",
                      metrics=list(metrics))
    return model


def fmt(v):
    """tf-keras' value format: %.4f, or %.4e when |v| <= 1e-3 (an accuracy of 0 included)."""
    return "%.4f" % v if abs(v) > 1e-3 else "%.4e" % v


def quiet(fn, *args, **kwargs):
    """Runs fn with stdout captured; returns (result, text)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        out = fn(*args, **kwargs)
    return out, buf.getvalue()


# --------------------------------------------------------------------------- compile


@pytest.mark.parametrize("opt", ["sgd", "adam", "rmsprop", keras.optimizers.SGD])
def test_compile_wraps_under_mixed_float16(opt):
    model = make_model("mixed_float16", optimizer=opt() if isinstance(opt, type) else opt)
    assert isinstance(model.optimizer, LossScaleOptimizer)
    assert model.optimizer.dynamic
    assert float(model.optimizer.loss_scale) == 2.0 ** 15
    assert model.optimizer.dynamic_growth_steps == 2000
    inner = model.optimizer.inner_optimizer
    want = {"sgd": keras.optimizers.SGD, "adam": keras.optimizers.Adam,
            "rmsprop": keras.optimizers.RMSprop}.get(opt, keras.optimizers.SGD)
    assert type(inner) is want


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "float32"])
@pytest.mark.parametrize("opt", ["rmsprop", keras.optimizers.Adam])
def test_compile_does_not_wrap_other_policies(policy, opt):
    optimizer = opt() if isinstance(opt, type) else opt
    model = make_model(policy, optimizer=optimizer)
    assert isinstance(model.optimizer, keras.optimizers.Optimizer)
    if not isinstance(opt, str):
        assert model.optimizer is optimizer


def test_compile_keeps_a_loss_scale_optimizer_passed_in():
    lso = mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(), initial_scale=8.0,
                                             dynamic_growth_steps=3)
    model = make_model("mixed_float16", optimizer=lso)
    assert model.optimizer is lso
    assert float(lso.loss_scale) == 8.0 and lso.dynamic_growth_steps == 3
    fixed = mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(), dynamic=False,
                                               initial_scale=64)
    model = make_model("float32", optimizer=fixed)  # kept under float32 too
    assert model.optimizer is fixed


def test_compile_uses_the_models_policy_not_the_global_one():
    model = make_model("float32", compile=False)
    mixed_precision.set_global_policy("mixed_float16")
    model.compile("sgd", "sparse_categorical_crossentropy")
    assert not isinstance(model.optimizer, LossScaleOptimizer)


def test_compile_experimental_policy_loss_scale():
    experimental.set_policy("mixed_float16")
    model = make_model()
    policy = model.dtype_policy
    assert isinstance(model.optimizer, LossScaleOptimizerV1)
    assert isinstance(model.optimizer.loss_scale, DynamicLossScale)
    assert model.optimizer.loss_scale is policy.loss_scale  # TF-exp shares the object

    experimental.set_policy(experimental.Policy("mixed_float16", loss_scale=1024))
    model = make_model()
    assert isinstance(model.optimizer.loss_scale, FixedLossScale)
    assert float(model.optimizer.loss_scale()) == 1024.0

    for p in (experimental.Policy("mixed_float16", loss_scale=None),
              experimental.Policy("mixed_bfloat16"), experimental.Policy("float32")):
        experimental.set_policy(p)
        model = make_model()
        assert isinstance(model.optimizer, keras.optimizers.Optimizer), p

    experimental.set_policy("mixed_float16")
    lso = experimental.LossScaleOptimizer(keras.optimizers.RMSprop(), loss_scale=128)
    assert make_model(optimizer=lso).optimizer is lso


def test_fit_requires_compile():
    model = make_model(compile=False)
    x, y = make_data(8)
    with pytest.raises(RuntimeError, match="compile"):
        model.fit(x, y, verbose=0)
    with pytest.raises(RuntimeError, match="compile"):
        model.evaluate(x, y, verbose=0)


# --------------------------------------------------------------------------- fit


@pytest.mark.parametrize("policy", ["float32", "mixed_float16", "mixed_bfloat16"])
def test_fit_learns_and_returns_history(policy):
    tf.random.set_seed(0)
    x, y = make_data()
    model = make_model(policy, optimizer=keras.optimizers.Adam(0.02))
    history = model.fit(x, y, batch_size=16, epochs=4, verbose=0)
    assert isinstance(history, keras.callbacks.History)
    assert model.history is history
    assert history.model is model
    assert history.epoch == [0, 1, 2, 3]
    assert history.params == {"verbose": 0, "epochs": 4, "steps": 6}
    assert sorted(history.history) == ["accuracy", "loss"]
    losses = history.history["loss"]
    assert len(losses) == 4 and all(isinstance(v, float) for v in losses)
    assert losses[-1] < losses[0]
    assert history.history["accuracy"][-1] > 0.8
    # the weights stayed float32 and the model still computes in its policy
    assert all(v.dtype.name == "float32" for v in model.trainable_variables)
    if policy == "mixed_float16":
        assert int(model.optimizer.iterations.numpy()) == 24


def test_fit_history_equals_evaluate_of_running_means():
    """The epoch's logged loss is the mean of the per-batch losses (equal batches)."""
    x, y = make_data(64)
    seen = []

    class Record(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(logs["loss"])

    model = make_model(optimizer=keras.optimizers.SGD(0.0))  # lr 0: the loss is constant
    history = model.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False,
                        callbacks=[Record()])
    per_batch = [model.evaluate(x[i:i + 16], y[i:i + 16], verbose=0)[0] for i in range(0, 64, 16)]
    # logs hold running means: batch k's log is the mean of the first k+1 batch losses
    np.testing.assert_allclose(seen, np.cumsum(per_batch) / np.arange(1, 5), rtol=1e-5)
    np.testing.assert_allclose(history.history["loss"][0], np.mean(per_batch), rtol=1e-5)


def test_fit_batches_and_shuffle():
    x = np.arange(10, dtype="float32").reshape(10, 1)
    y = np.zeros(10, "int64")
    batches = []

    class Spy(keras.Model):
        def __init__(self):
            super().__init__()
            self.d = layers.Dense(1)

        def call(self, inputs):
            return self.d(inputs)

        def train_step(self, data):
            batches.append(data[0].numpy()[:, 0].astype(int).tolist())
            return super().train_step(data)

    model = Spy()
    model.compile("sgd", "mse")
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    assert batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    batches.clear()
    tf.random.set_seed(5)
    model.fit(x, y, batch_size=4, epochs=2, shuffle=True, verbose=0)
    assert [len(b) for b in batches] == [4, 4, 2, 4, 4, 2]
    first, second = sum(batches[:3], []), sum(batches[3:], [])
    assert sorted(first) == sorted(second) == list(range(10))
    assert first != list(range(10)) or second != list(range(10))
    batches.clear()
    model.fit(x, y, epochs=1, verbose=0, shuffle=False)  # default batch_size 32
    assert batches == [list(range(10))]


def test_validation_split_takes_the_last_fraction_before_shuffling():
    x = np.arange(20, dtype="float32").reshape(20, 1)
    y = np.zeros(20, "int64")
    seen = {"train": set(), "val": set()}

    class Spy(keras.Model):
        def __init__(self):
            super().__init__()
            self.d = layers.Dense(1)

        def call(self, inputs):
            return self.d(inputs)

        def train_step(self, data):
            seen["train"].update(data[0].numpy()[:, 0].astype(int).tolist())
            return super().train_step(data)

        def test_step(self, data):
            seen["val"].update(data[0].numpy()[:, 0].astype(int).tolist())
            return super().test_step(data)

    model = Spy()
    model.compile("sgd", "mse")
    history = model.fit(x, y, batch_size=3, epochs=2, validation_split=0.25, shuffle=True,
                        verbose=0)
    assert seen["train"] == set(range(15))
    assert seen["val"] == set(range(15, 20))
    assert sorted(history.history) == ["loss", "val_loss"]
    assert history.params["steps"] == 5  # ceil(15 / 3)
    # val_loss is the loss of the held-out tail with the epoch's final weights
    np.testing.assert_allclose(history.history["val_loss"][-1],
                               model.evaluate(x[15:], y[15:], verbose=0), rtol=1e-5)


def test_validation_split_errors():
    model = make_model()
    x, y = make_data(3)
    with pytest.raises(ValueError, match="not sufficient"):
        model.fit(x[:1], y[:1], validation_split=0.5, verbose=0)  # floor(1 * 0.5) == 0
    with pytest.raises(ValueError, match="validation_split"):
        model.fit(x, y, validation_split=1.0, verbose=0)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(2)
    with pytest.raises(ValueError, match="validation_split"):
        model.fit(ds, validation_split=0.5, verbose=0)


def test_validation_data_tuple_and_dataset():
    x, y = make_data(48)
    vx, vy = make_data(16, seed=1)
    model = make_model()
    h1 = model.fit(x, y, batch_size=16, validation_data=(vx, vy), verbose=0)
    np.testing.assert_allclose(h1.history["val_loss"][0], model.evaluate(vx, vy, verbose=0)[0],
                               rtol=1e-5)
    vds = tf.data.Dataset.from_tensor_slices((vx, vy)).batch(5)
    h2 = model.fit(x, y, batch_size=16, validation_data=vds, verbose=0)
    np.testing.assert_allclose(h2.history["val_accuracy"][0],
                               model.evaluate(vx, vy, verbose=0)[1], rtol=1e-5)


def test_fit_accepts_a_dataset():
    x, y = make_data(40)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(40, seed=1).batch(8)
    model = make_model()
    history = model.fit(ds, epochs=2, verbose=0)
    assert history.params["steps"] == 5
    with pytest.raises(ValueError, match="`y` argument is not supported"):
        model.fit(ds, y, verbose=0)
    infinite = tf.data.Dataset.from_tensor_slices((x, y)).batch(8).repeat()
    with pytest.raises(ValueError, match="steps_per_epoch"):
        model.fit(infinite, verbose=0)
    history = model.fit(infinite, epochs=2, steps_per_epoch=3, verbose=0)
    assert history.params["steps"] == 3


def test_fit_evaluate_predict_run_a_finite_dataset_of_unknown_length_to_its_end():
    """filter/unbatch give an unknown cardinality, which is not an infinite one: as in
    tf-keras, every pass runs to the end of the data; only repeat() needs steps."""
    x, y = make_data(40)
    known = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
    filtered = tf.data.Dataset.from_tensor_slices((x, y)).filter(lambda a, b: True).batch(8)
    unbatched = known.unbatch().batch(8)
    assert int(filtered.cardinality()) == int(unbatched.cardinality()) == \
        tf.data.experimental.UNKNOWN_CARDINALITY
    model = make_model()
    want = model.evaluate(known, verbose=0)
    for ds in (filtered, unbatched):
        np.testing.assert_array_equal(model.evaluate(ds, verbose=0), want)
        assert model.predict(ds.map(lambda a, b: a), verbose=0).shape == (40, N_CLASSES)
    history = model.fit(filtered, epochs=2, verbose=0)
    assert history.params["steps"] is None  # as tf-keras: not known before the first pass
    assert len(history.history["loss"]) == 2
    assert int(model.optimizer.iterations.numpy()) == 10
    # the bars count up, then show the steps seen
    _, text = quiet(model.fit, unbatched, epochs=2, verbose=2)
    assert re.findall(r"^(\d+)/(\d+) - ", text, re.M) == [("5", "5"), ("5", "5")]
    _, text = quiet(model.evaluate, filtered, verbose=1)
    assert "1/Unknown" in text and "5/5 [=====" in text
    _, text = quiet(model.predict, filtered, verbose=1)
    assert "5/5 [=====" in text
    # the first pass sets the epoch's length: a later, shorter pass runs out of data and
    # ends training after its epoch (tf-keras' DataHandler)
    passes = []

    def fewer_each_pass(a, b):
        passes.append(1)
        return len(passes) <= 40 or len(passes) % 2 == 0
    shrinking = tf.data.Dataset.from_tensor_slices((x, y)).filter(fewer_each_pass).batch(8)
    start = int(model.optimizer.iterations.numpy())
    history = model.fit(shrinking, epochs=3, verbose=0)
    assert len(history.history["loss"]) == 2
    assert int(model.optimizer.iterations.numpy()) == start + 5 + 3
    nothing = tf.data.Dataset.from_tensor_slices((x, y)).filter(lambda a, b: False).batch(8)
    with pytest.raises(ValueError, match="Empty logs"):
        model.fit(nothing, verbose=0)
    # an infinite dataset still needs the number of steps, named as the method names it
    with pytest.raises(ValueError, match="specify a `steps_per_epoch` value"):
        model.fit(known.repeat(), verbose=0)
    with pytest.raises(ValueError, match="specify a `validation_steps` value"):
        model.fit(known, validation_data=known.repeat(), verbose=0)
    with pytest.raises(ValueError, match="specify a `steps` value"):
        model.evaluate(known.repeat(), verbose=0)
    np.testing.assert_array_equal(model.evaluate(filtered.repeat(), steps=5, verbose=0),
                                  model.evaluate(known, verbose=0))


def test_sample_weight_weights_the_loss():
    x, y = make_data(8)
    model = make_model(metrics=())
    sw = np.array([1, 0, 0, 0, 2, 0, 0, 0], "float32")
    probs = model.predict(x, verbose=0).astype(np.float64)
    nll = -np.log(probs[np.arange(8), y])
    want = (nll * sw).sum() / 8  # SUM_OVER_BATCH_SIZE: divided by the batch, not by sum(sw)
    got = model.evaluate(x, y, sample_weight=sw, batch_size=8, verbose=0)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_multiple_outputs_losses_by_name_and_weights():
    inputs = keras.Input(shape=(2,))
    z = layers.Dense(1, name="z", kernel_initializer="zeros")(inputs)
    a = layers.Dense(3, name="a", kernel_initializer="zeros")(inputs)
    model = keras.Model(inputs, [z, a])  # outputs 0 everywhere
    x = np.ones((4, 2), np.float32)
    yz, ya = np.full((4, 1), 2.0, np.float32), np.ones((4, 3), np.float32)
    model.compile("sgd", loss={"z": "mse", "a": "mae"})
    # mse(2, 0) + mae(1, 0); a dict of targets is matched to the outputs by name;
    # [loss, z_loss, a_loss] as tf-keras returns for several outputs
    assert model.evaluate(x, [yz, ya], verbose=0) == [5.0, 4.0, 1.0]
    assert model.evaluate(x, {"z": yz, "a": ya}, verbose=0) == [5.0, 4.0, 1.0]
    model.compile("sgd", loss=["mse", "mae"], loss_weights=[0.5, 2.0])
    assert model.evaluate(x, [yz, ya], verbose=0) == [4.0, 4.0, 1.0]  # the total weighted, the outputs not
    model.fit(x, {"a": ya, "z": yz}, verbose=0)


def test_fit_and_evaluate_refuse_empty_data():
    """As tf-keras: a fit whose first epoch runs no step raises instead of returning an
    empty History; evaluate raises instead of returning [] for a loss (predict did)."""
    model = make_model()
    x, y = make_data(0)
    ds = tf.data.Dataset.from_tensor_slices(make_data(8)).batch(4)
    for data in [(x, y), (ds.take(0),), (ds.repeat().take(0),)]:
        with pytest.raises(ValueError, match=r"Unexpected result of `train_function` "
                                             r"\(Empty logs\).*training data is empty"):
            model.fit(*data, epochs=3, verbose=0)
        with pytest.raises(ValueError, match=r"Unexpected result of `test_function` "
                                             r"\(Empty logs\).*evaluation data is empty"):
            model.evaluate(*data, verbose=0)
    with pytest.raises(ValueError, match="`test_function`.*evaluation data is empty"):
        model.fit(*make_data(8), validation_data=(x, y), verbose=0)
    assert int(model.optimizer.iterations.numpy()) == 1  # that fit trained, then refused
    # no epoch to run is not an error (tf-keras neither): an empty History
    assert model.fit(*make_data(8), epochs=0, verbose=0).history == {}
    assert model.fit(*make_data(8), epochs=2, initial_epoch=2, verbose=0).history == {}


def test_multiple_outputs_loss_and_loss_weights_conform_to_the_outputs():
    """tf-keras' rules: a list has one entry per output, a dict is keyed by output names
    (a name left out has no loss / weight 1), a single value applies to every output."""
    inputs = keras.Input(shape=(2,))
    z = layers.Dense(1, name="z", kernel_initializer="zeros")(inputs)
    a = layers.Dense(3, name="a", kernel_initializer="zeros")(inputs)
    model = keras.Model(inputs, [z, a])  # outputs 0 everywhere
    x = np.ones((4, 2), np.float32)
    ys = [np.full((4, 1), 2.0, np.float32), np.ones((4, 3), np.float32)]  # mse 4, 1
    for loss_weights, want in [({"z": 0.5, "a": 2.0}, 4.0), ({"a": 3.0}, 7.0),
                               ([0.25, 1.0], 2.0), (0.5, 2.5), (None, 5.0)]:
        model.compile("sgd", loss="mse", loss_weights=loss_weights)
        assert model.evaluate(x, ys, verbose=0)[0] == want, loss_weights
    model.compile("sgd", loss={"a": "mse"}, loss_weights={"a": 2.0})
    assert model.evaluate(x, ys, verbose=0) == [2.0, 1.0]  # [loss, a_loss (unweighted)]
    model.compile("sgd", loss=[None, "mse"])
    assert model.evaluate(x, ys, verbose=0) == [1.0, 1.0]
    for kwargs, match in [
            (dict(loss="mse", loss_weights=[1.0]),
             r"list as `loss_weights`.*2 output\(s\).*loss_weights=\[1.0\]"),
            (dict(loss="mse", loss_weights=[1.0, 2.0, 3.0]), "list as `loss_weights`"),
            (dict(loss=["mse"]), r"list as `loss`.*2 output\(s\).*loss=\['mse'\]"),
            (dict(loss=["mse", "mse", "mae"]), "list as `loss`"),
            (dict(loss={"z": "mse", "b": "mae"}), r"unexpected keys .*`loss`: \['b'\]"),
            (dict(loss="mse", loss_weights={"zz": 1.0}), "unexpected keys .*`loss_weights`")]:
        model.compile("sgd", **kwargs)
        with pytest.raises(ValueError, match=match):
            model.fit(x, ys, verbose=0)
        with pytest.raises(ValueError, match=match):
            model.evaluate(x, ys, verbose=0)


def test_batch_size_takes_any_integral():
    x, y = make_data(10)
    model = make_model(metrics=())
    history = model.fit(x, y, batch_size=np.int64(4), validation_data=(x, y),
                        validation_batch_size=np.int32(5), verbose=0)
    assert history.params["steps"] == 3
    assert model.evaluate(x, y, batch_size=np.uint8(3), verbose=0) == \
        model.evaluate(x, y, batch_size=3, verbose=0)
    for bad in (0, -2, 2.0, "4", True, np.float32(4)):
        with pytest.raises(ValueError, match="batch_size must be a positive integer"):
            model.fit(x, y, batch_size=bad, verbose=0)


def test_nested_python_lists_are_one_array():
    """tf-keras' ListsOfScalarsDataAdapter: lists of numbers are converted as one array
    (a list of arrays stays a list of inputs)."""
    x, y = make_data(8)
    model = make_model(metrics=())
    want = model.evaluate(x, y, verbose=0)
    assert model.evaluate(x.tolist(), y.tolist(), verbose=0) == want
    np.testing.assert_array_equal(model.predict(x.tolist(), verbose=0),
                                  model.predict(x, verbose=0))
    assert model.test_on_batch(x.tolist(), y.tolist()) == model.test_on_batch(x, y)
    model.fit(x.tolist(), y.tolist(), sample_weight=[1.0] * 8, validation_split=0.25,
              verbose=0)
    model.train_on_batch(x.tolist(), y.tolist())
    with pytest.raises(ValueError, match="`x` holds a scalar"):
        model.fit(3.0, y, verbose=0)


def test_data_cardinality_mismatch():
    model = make_model()
    x, y = make_data(10)
    with pytest.raises(ValueError, match="cardinality"):
        model.fit(x, y[:9], verbose=0)


# --------------------------------------------------------------------------- evaluate, predict


def test_evaluate_return_forms():
    x, y = make_data(20)
    model = make_model()
    loss, acc = model.evaluate(x, y, verbose=0)
    assert isinstance(loss, float) and isinstance(acc, float)
    d = model.evaluate(x, y, verbose=0, return_dict=True)
    assert d == {"loss": loss, "accuracy": acc}
    assert model.metrics_names == ["loss", "accuracy"]
    probs = model.predict(x, verbose=0)
    np.testing.assert_allclose(acc, np.mean(probs.argmax(-1) == y), rtol=1e-6)
    np.testing.assert_allclose(loss, -np.log(probs[np.arange(20), y].astype(np.float64)).mean(),
                               rtol=1e-5)
    model.compile("sgd", "sparse_categorical_crossentropy")
    assert isinstance(model.evaluate(x, y, verbose=0), float)  # no metrics: a scalar


def test_predict_concatenates_batches_and_matches_call():
    x, _ = make_data(37)
    model = make_model()
    p = model.predict(x, batch_size=8, verbose=0)
    assert isinstance(p, np.ndarray) and p.shape == (37, N_CLASSES) and p.dtype == np.float32
    np.testing.assert_allclose(p, model(x).numpy(), rtol=1e-6)
    np.testing.assert_allclose(model.predict_on_batch(x[:4]), p[:4], rtol=1e-6)
    with pytest.raises(ValueError):
        model.predict(np.zeros((0, N_FEATURES), "float32"), verbose=0)


def test_mixed_model_predict_outputs_float32():
    x, _ = make_data(10)
    model = make_model("mixed_float16")
    assert model.predict(x, verbose=0).dtype == np.float32


@pytest.mark.parametrize("policy", ["float32", "mixed_float16"])
def test_train_on_batch(policy):
    x, y = make_data(32)
    model = make_model(policy)
    before = model.get_weights()
    loss, acc = model.train_on_batch(x, y)
    assert isinstance(loss, float) and 0 <= acc <= 1
    logs = model.train_on_batch(x, y, return_dict=True)
    assert set(logs) == {"loss", "accuracy"}
    assert int(model.optimizer.iterations.numpy()) == 2
    for _ in range(8):  # under mixed_float16 the first steps may be skipped (scale too high)
        model.train_on_batch(x, y)
    assert any(not np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
    loss2, _ = model.test_on_batch(x, y)
    assert isinstance(loss2, float)


def test_train_on_batch_overflow_skips_the_step_and_halves_the_scale():
    """The automatic LossScaleOptimizer really is in the training path: a huge scale makes
    the float16 gradients overflow, so the step is skipped and the scale halves."""
    x, y = make_data(16)
    lso = mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.1), initial_scale=2.0 ** 60)
    model = make_model("mixed_float16", optimizer=lso)
    before = model.get_weights()
    model.train_on_batch(x, y)
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert float(lso.loss_scale) == 2.0 ** 59
    assert int(lso.iterations.numpy()) == 1
    # after enough halvings training proceeds
    for _ in range(60):
        model.train_on_batch(x, y)
    assert float(lso.loss_scale) < 2.0 ** 20
    assert any(not np.array_equal(a, b) for a, b in zip(before, model.get_weights()))


def test_fit_under_mixed_float16_counts_good_steps():
    tf.random.set_seed(0)
    x, y = make_data(32)
    model = make_model("mixed_float16")
    # small inputs: no float16 gradient overflows at the default scale of 2**15, so every
    # step is a good step and the scale stays (it grows only after 2000 good steps)
    model.fit(x / 100, y, batch_size=8, epochs=2, verbose=0)
    assert int(model.optimizer.iterations.numpy()) == 8
    assert int(model.optimizer.dynamic_counter.numpy()) == 8
    assert float(model.optimizer.loss_scale) == 2.0 ** 15


def test_fit_records_the_loss_scale_per_step_in_history():
    tf.random.set_seed(0)
    x, y = make_data(48)
    model = make_model("mixed_float16", optimizer=LossScaleOptimizer(
        keras.optimizers.SGD(0.01), initial_scale=2.0 ** 22, dynamic_growth_steps=3))
    history = model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    steps = history.steps
    assert len(steps["loss_scale"]) == len(steps["skipped"]) == 12
    assert steps["epoch"] == [0] * 6 + [1] * 6
    assert steps["loss_scale"][0] == 2.0 ** 22
    # 2**22 overflows float16 gradients: the first steps are skipped until the scale fits
    assert steps["skipped"][0] and not all(steps["skipped"])
    # the state machine, read off the record: a skip halves, 3 good steps in a row double
    good = 0
    for i in range(1, 12):
        prev, now = steps["loss_scale"][i - 1], steps["loss_scale"][i]
        if steps["skipped"][i - 1]:
            good = 0
            assert now == prev / 2
        else:
            good += 1
            assert now == (prev * 2 if good == 3 else prev)
            good %= 3
    # the record ends where the optimizer is
    last = steps["loss_scale"][-1]
    expected = last / 2 if steps["skipped"][-1] else last
    assert float(model.optimizer.loss_scale) in (expected, expected * 2)


def test_fit_without_loss_scaling_records_no_steps():
    x, y = make_data(16)
    history = make_model("mixed_bfloat16").fit(x, y, batch_size=8, epochs=1, verbose=0)
    assert history.steps == {}
    assert len(history.history["loss"]) == 1


def test_a_callback_may_switch_the_optimizer_mid_fit():
    """A callback that compiles the model again changes the optimizer of the next step:
    from loss scaling to none (that step used to ask SGD for its loss scale) and back
    (History.steps records exactly the loss-scaled steps)."""
    x = np.ones((16, N_FEATURES), "float32")
    y = np.zeros(16, "int64")

    class Recompile(keras.callbacks.Callback):
        def __init__(self, plan):
            super().__init__()
            self.plan = plan

        def on_train_batch_end(self, batch, logs=None):
            if batch in self.plan:
                self.model.compile(self.plan[batch], "sparse_categorical_crossentropy")

    model = make_model(optimizer=LossScaleOptimizer(keras.optimizers.SGD()), metrics=())
    history = model.fit(x, y, batch_size=4, epochs=1, verbose=0,
                        callbacks=[Recompile({1: keras.optimizers.SGD()})])
    assert len(history.steps["loss_scale"]) == 2
    assert int(model.optimizer.iterations.numpy()) == 2  # the new SGD took steps 3 and 4
    model = make_model(optimizer="sgd", metrics=())
    history = model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[Recompile(
        {0: LossScaleOptimizer(keras.optimizers.SGD(), dynamic=False, initial_scale=8.0)})])
    assert history.steps["loss_scale"] == [8.0, 8.0, 8.0]


# --------------------------------------------------------------------------- callbacks


def test_callback_hooks_order_and_params():
    x, y = make_data(20)
    calls = []

    class Log(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            calls.append(("train_begin", self.params["epochs"], self.params["steps"]))

        def on_epoch_begin(self, epoch, logs=None):
            calls.append(("epoch_begin", epoch))

        def on_train_batch_end(self, batch, logs=None):
            calls.append(("batch_end", batch, sorted(logs)))

        def on_epoch_end(self, epoch, logs=None):
            calls.append(("epoch_end", epoch, sorted(logs)))

        def on_train_end(self, logs=None):
            calls.append(("train_end",))

    cb = Log()
    model = make_model()
    model.fit(x, y, batch_size=10, epochs=2, validation_split=0.5, verbose=0, callbacks=[cb])
    assert cb.model is model
    keys = ["accuracy", "loss"]
    val = ["accuracy", "loss", "val_accuracy", "val_loss"]
    assert calls == [("train_begin", 2, 1),
                     ("epoch_begin", 0), ("batch_end", 0, keys), ("epoch_end", 0, val),
                     ("epoch_begin", 1), ("batch_end", 0, keys), ("epoch_end", 1, val),
                     ("train_end",)]


def test_validation_freq_every_n_epochs_or_the_epochs_named():
    x, y = make_data(16)
    model = make_model(metrics=())

    def validated(freq, epochs=4, initial_epoch=0):
        seen = []
        record = keras.callbacks.LambdaCallback(
            on_epoch_end=lambda epoch, logs: seen.append(epoch + 1) if "val_loss" in logs
            else None)
        model.fit(x, y, epochs=epochs, initial_epoch=initial_epoch, validation_data=(x, y),
                  validation_freq=freq, callbacks=[record], verbose=0)
        return seen

    assert validated(1) == [1, 2, 3, 4]
    assert validated(np.int64(2)) == [2, 4]
    assert validated([1, 3]) == [1, 3]
    assert validated((4,)) == [4]
    assert validated(range(2, 5)) == [2, 3, 4]
    assert validated([2, 4], epochs=5, initial_epoch=2) == [4]  # epochs count from 1
    for bad, match in [(0, "at least 1"), (-1, "at least 1"), (1.5, "list or int"),
                       ("2", "list or int"), (None, "list or int"), ([0, 1], "counted from 1"),
                       ([1.0], "counted from 1")]:
        with pytest.raises(ValueError, match=match):
            model.fit(x, y, validation_data=(x, y), validation_freq=bad, verbose=0)


def test_callbacks_may_be_one_callback_a_tuple_or_a_callback_list():
    """tf-keras flattens ``callbacks=``: one callback is taken as a list of one."""
    x, y = make_data(8)
    model = make_model(metrics=())
    seen = []
    record = keras.callbacks.LambdaCallback(on_epoch_end=lambda e, logs: seen.append("fit"),
                                            on_test_end=lambda logs: seen.append("evaluate"),
                                            on_predict_end=lambda logs: seen.append("predict"))
    history = keras.callbacks.History()
    model.fit(x, y, epochs=2, callbacks=history, verbose=0)
    assert len(history.history["loss"]) == 2
    model.fit(x, y, callbacks=record, verbose=0)
    model.fit(x, y, callbacks=(record,), verbose=0)
    model.fit(x, y, callbacks=keras.callbacks.CallbackList([record]), verbose=0)
    model.evaluate(x, y, callbacks=record, verbose=0)
    model.predict(x, callbacks=record, verbose=0)
    assert seen == ["fit"] * 3 + ["evaluate", "predict"]
    for bad in (5, [record, "history"]):
        with pytest.raises(TypeError, match="callbacks must be keras.callbacks.Callback"):
            model.fit(x, y, callbacks=bad, verbose=0)


def test_every_hook_gets_its_logs_positionally():
    """As tf-keras: a hook without logs gets None, so a LambdaCallback written in tf-keras'
    documented form (``on_train_begin=lambda logs: ...``) works for every hook."""
    x, y = make_data(8)
    model = make_model(metrics=())
    calls = []

    def one(name):
        return lambda logs: calls.append((name, logs is None or isinstance(logs, dict)))

    def two(name):
        return lambda n, logs: calls.append((name, logs is None or isinstance(logs, dict)))

    hooks = {"on_%s_%s" % (mode, when): one("%s_%s" % (mode, when))
             for mode in ("train", "test", "predict") for when in ("begin", "end")}
    hooks.update({"on_%s_batch_%s" % (mode, when): two("%s_batch_%s" % (mode, when))
                  for mode in ("train", "test", "predict") for when in ("begin", "end")})
    hooks.update(on_epoch_begin=two("epoch_begin"), on_epoch_end=two("epoch_end"))
    record = keras.callbacks.LambdaCallback(**hooks)
    model.fit(x, y, batch_size=8, callbacks=[record], verbose=0)
    model.evaluate(x, y, batch_size=8, callbacks=[record], verbose=0)
    model.predict(x, batch_size=8, callbacks=[record], verbose=0)
    assert calls == [(name, True) for name in (
        "train_begin", "epoch_begin", "train_batch_begin", "train_batch_end", "epoch_end",
        "train_end", "test_begin", "test_batch_begin", "test_batch_end", "test_end",
        "predict_begin", "predict_batch_begin", "predict_batch_end", "predict_end")]


def test_early_stopping_and_stop_training():
    x, y = make_data(16)
    model = make_model(optimizer=keras.optimizers.SGD(0.0))  # nothing improves
    es = keras.callbacks.EarlyStopping(monitor="loss", patience=2)
    history = model.fit(x, y, epochs=20, verbose=0, callbacks=[es])
    assert len(history.epoch) == 3
    assert es.stopped_epoch == 2

    class StopAfterOne(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            self.model.stop_training = True

    history = model.fit(x, y, batch_size=4, epochs=5, verbose=0, callbacks=[StopAfterOne()])
    assert history.epoch == [0]


def test_early_stopping_never_stops_an_improving_run():
    x, y = make_data(32)
    model = make_model(optimizer=keras.optimizers.SGD(0.05))
    es = keras.callbacks.EarlyStopping(monitor="loss")  # patience=0, the default
    history = model.fit(x, y, epochs=4, verbose=0, callbacks=[es])
    assert all(b < a for a, b in zip(history.history["loss"], history.history["loss"][1:]))
    assert history.epoch == [0, 1, 2, 3] and es.stopped_epoch == 0


def test_early_stopping_restores_best_weights():
    x, y = make_data(32)
    model = make_model(optimizer=keras.optimizers.SGD(0.05))
    seen = []

    class Worse(keras.callbacks.Callback):  # after epoch 0 the monitored value only grows
        def on_epoch_end(self, epoch, logs=None):
            logs["score"] = float(epoch)
            seen.append(self.model.get_weights())

    es = keras.callbacks.EarlyStopping(monitor="score", mode="min", patience=1,
                                       restore_best_weights=True)
    history = model.fit(x, y, epochs=10, verbose=0, callbacks=[Worse(), es])
    assert history.epoch == [0, 1] and es.stopped_epoch == 1 and es.best_epoch == 0
    for u, v in zip(model.get_weights(), seen[0]):
        np.testing.assert_array_equal(u, v)


def test_lambda_callback_checkpoint_and_scheduler(tmp_path):
    x, y = make_data(16)
    model = make_model(optimizer=keras.optimizers.SGD(0.1))
    ends = []
    path = str(tmp_path / "w_{epoch:02d}.npz")
    sched = keras.callbacks.LearningRateScheduler(lambda epoch, lr: 0.1 / (epoch + 1))
    model.fit(x, y, epochs=2, verbose=0, callbacks=[
        keras.callbacks.LambdaCallback(on_epoch_end=lambda e, logs: ends.append(e)),
        keras.callbacks.ModelCheckpoint(path, monitor="loss", save_weights_only=True), sched])
    assert ends == [0, 1]
    assert sorted(os.listdir(tmp_path)) == ["w_01.npz", "w_02.npz"]
    np.testing.assert_allclose(float(model.optimizer.learning_rate.numpy()), 0.05, rtol=1e-6)
    other = make_model()
    other.load_weights(str(tmp_path / "w_02.npz"))
    np.testing.assert_allclose(other.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6)


# --------------------------------------------------------------------------- progress output


def _lines(text):
    """What a terminal finally shows: redraws (\\b...\\r) collapse to the last one."""
    out = []
    for line in text.split("\n"):
        line = line.replace("\b", "")
        out.append(line.split("\r")[-1].rstrip())
    return [o for o in out if o]


FINAL = re.compile(r"^(\d+)/(\d+) \[=+\] - \d+s \d+(s|ms|us)/step - (.*)$")


def test_fit_verbose_1_prints_the_running_means_it_returns():
    x, y = make_data(40)
    model = make_model()
    history, text = quiet(model.fit, x, y, batch_size=8, epochs=2, validation_split=0.2)
    lines = _lines(text)
    assert lines[0] == "Epoch 1/2" and lines[2] == "Epoch 2/2"
    for epoch, line in zip((0, 1), (lines[1], lines[3])):
        m = FINAL.match(line)
        assert m, line
        assert m.group(1) == m.group(2) == "4"
        want = " - ".join("%s: %s" % (k, fmt(history.history[k][epoch]))
                          for k in ("loss", "accuracy", "val_loss", "val_accuracy"))
        assert m.group(4) == want


def test_fit_verbose_0_and_2():
    x, y = make_data(24)
    model = make_model()
    _, text = quiet(model.fit, x, y, batch_size=8, epochs=1, verbose=0)
    assert text == ""
    history, text = quiet(model.fit, x, y, batch_size=8, epochs=2, verbose=2)
    lines = text.split("\n")
    assert lines[0] == "Epoch 1/2" and lines[2] == "Epoch 2/2" and lines[4] == ""
    for epoch, line in zip((0, 1), (lines[1], lines[3])):
        want = r"3/3 - \d+s - loss: %s - accuracy: %s - \d+(s|ms|us)/epoch - \d+(s|ms|us)/step" % (
            re.escape(fmt(history.history["loss"][epoch])),
            re.escape(fmt(history.history["accuracy"][epoch])))
        assert re.fullmatch(want, line), line
    _, text = quiet(model.fit, x, y, batch_size=8, epochs=1, verbose=1)
    assert "Epoch" not in text  # the header only when epochs > 1


def test_evaluate_verbose_2_line():
    x, y = make_data(24)
    model = make_model()
    (loss, acc), text = quiet(model.evaluate, x, y, batch_size=8, verbose=2)
    # tf-keras 2.21: the per-epoch timing ends evaluate's line too
    assert re.fullmatch(r"3/3 - \d+s - loss: %s - accuracy: %s - \d+(s|ms|us)/epoch - "
                        r"\d+(s|ms|us)/step\n" % (re.escape(fmt(loss)), re.escape(fmt(acc))),
                        text), text


def test_predict_verbose():
    x, _ = make_data(10)
    model = make_model()
    _, text = quiet(model.predict, x, batch_size=5)
    assert re.fullmatch(r"2/2 \[=+\] - \d+s \d+(s|ms|us)/step", _lines(text)[-1]), text
    _, text = quiet(model.predict, x, verbose=0)
    assert text == ""


# --------------------------------------------------------------------------- summary


# tf-keras 2.21's output for the same models (print_fn gets each line)
SUMMARY_SEQ = """\
Model: "seq"
_________________________________________________________________
 Layer (type)                Output Shape              Param #   
=================================================================
 d1 (Dense)                  (None, 4)                 16        
                                                                 
 bn (BatchNormalization)     (None, 4)                 16        
                                                                 
 act (Activation)            (None, 4)                 0         
                                                                 
=================================================================
Total params: 32 (128.00 Byte)
Trainable params: 24 (96.00 Byte)
Non-trainable params: 8 (32.00 Byte)
_________________________________________________________________"""


def test_summary_is_tf_keras_table():
    keras.mixed_precision.set_global_policy("mixed_float16")
    m = keras.Sequential([layers.Dense(4, input_shape=(3,), name="d1"),
                          layers.BatchNormalization(name="bn"),
                          layers.Activation("softmax", dtype="float32", name="act")], name="seq")
    lines = []
    m.summary(print_fn=lines.append)
    assert "\n".join(lines) == SUMMARY_SEQ
    _, printed = quiet(m.summary)
    assert printed == SUMMARY_SEQ + "\n"


def test_summary_of_a_branching_model_shows_connections():
    a, b = keras.Input((4,), name="a"), keras.Input((4,), name="b")
    h1, h2 = layers.Dense(3, name="h1")(a), layers.Dense(3, name="h2")(b)
    o = layers.Dense(1, name="o")(layers.Lambda(lambda t: t[0] + t[1], name="cat")([h1, h2]))
    lines = []
    keras.Model([a, b], o, name="two").summary(print_fn=lines.append, show_trainable=True)
    assert len(lines[1]) == 98 + 11
    assert lines[2].split() == ["Layer", "(type)", "Output", "Shape", "Param", "#",
                                "Connected", "to", "Trainable"]
    cat = next(i for i, ln in enumerate(lines) if ln.startswith(" cat (Lambda)"))
    # a list of connections wraps after "'," as tf-keras'
    assert lines[cat].split()[-2:] == ["['h1[0][0]',", "Y"]
    assert lines[cat + 1].strip() == "'h2[0][0]']"
    assert lines[-4] == "Total params: 34 (136.00 Byte)"


def test_summary_of_an_unbuilt_model_raises():
    class Sub(keras.Model):
        def __init__(self):
            super().__init__()
            self.d = layers.Dense(2)

        def call(self, inputs):
            return self.d(inputs)

    for model in (Sub(), keras.Sequential([layers.Dense(2)])):
        with pytest.raises(ValueError, match="not yet been built"):
            model.summary()
        model(np.ones((1, 3), np.float32))
        lines = []
        model.summary(print_fn=lines.append)
        assert "Total params: 8 (32.00 Byte)" in lines


def test_summary_wraps_long_names():
    inputs = keras.Input(shape=(2,), name="in")
    out = layers.Activation("relu", name="a_rather_long_activation_name")(inputs)
    lines = []
    keras.Model(inputs, out, name="m").summary(print_fn=lines.append)
    assert len({len(ln) for ln in lines[1:-1] if not ln.startswith(("Total", "Trainable",
                                                                     "Non-"))}) == 1
    # tf-keras' widths: 65 characters, the first column wrapped at 26
    row = lines.index(" a_rather_long_activation_n  (None, 2)                 0         ")
    assert lines[row + 1] == " ame (Activation)".ljust(65)


# --------------------------------------------------------------------------- weights files


def test_get_set_weights_model():
    a, b = make_model(), make_model()
    b.set_weights(a.get_weights())
    x, _ = make_data(5)
    np.testing.assert_array_equal(a.predict(x, verbose=0), b.predict(x, verbose=0))
    with pytest.raises(ValueError):
        b.set_weights(a.get_weights()[:-1])


def test_save_load_weights_roundtrip_between_separately_built_models(tmp_path):
    """Layer names are auto-numbered per process ('dense_7'); weights still load by
    position into a second model of the same architecture."""
    x, y = make_data(16)
    a = make_model()
    a.fit(x, y, epochs=1, verbose=0)
    path = tmp_path / "w.npz"
    a.save_weights(path)
    b = make_model()
    assert [w.name for w in a.weights] != [w.name for w in b.weights]
    b.load_weights(path)
    for u, v in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(u, v)
    c = make_model(compile=False)  # no optimizer yet: the model weights still load
    c.load_weights(str(path))
    np.testing.assert_array_equal(c.predict(x, verbose=0), a.predict(x, verbose=0))


def test_mixed_float16_model_loads_float32_weights(tmp_path):
    x, y = make_data(64)
    f32 = make_model("float32")
    f32.fit(x, y, batch_size=16, epochs=3, verbose=0)
    f32.save_weights(tmp_path / "f32.npz")
    mixed = make_model("mixed_float16")
    mixed.load_weights(tmp_path / "f32.npz")
    for u, v in zip(f32.get_weights(), mixed.get_weights()):
        assert v.dtype == np.float32
        np.testing.assert_array_equal(u, v)
    p32, p16 = f32.predict(x, verbose=0), mixed.predict(x, verbose=0)
    # float16 inputs/weights/activations: ~3 significant digits through two layers; the
    # probabilities (float32 softmax of float16 logits) agree to within 1e-2 absolute
    np.testing.assert_allclose(p16, p32, atol=1e-2)
    assert np.mean(p16.argmax(-1) == p32.argmax(-1)) > 0.95
    # and back: a mixed model's weights load into a float32 one
    mixed.save_weights(tmp_path / "mixed.npz")
    back = make_model("float32")
    back.load_weights(tmp_path / "mixed.npz")
    np.testing.assert_array_equal(back.predict(x, verbose=0), p32)


@pytest.mark.parametrize("policy", ["float32", "mixed_float16"])
def test_save_load_restores_optimizer_and_loss_scale_state(tmp_path, policy):
    """A model restored from a file continues training exactly as the original would."""
    x, y = make_data(32)
    mixed_precision.set_global_policy(policy)

    def build():
        opt = keras.optimizers.Adam(0.01)
        if policy == "mixed_float16":  # a non-default scale state: halved, then good steps
            opt = mixed_precision.LossScaleOptimizer(opt, initial_scale=2.0 ** 20,
                                                     dynamic_growth_steps=1000)
        return make_model(optimizer=opt)

    a = build()
    for _ in range(16):
        a.train_on_batch(x, y)
    a.save_weights(tmp_path / "state.npz")
    b = build()
    b.load_weights(tmp_path / "state.npz")
    assert int(b.optimizer.iterations.numpy()) == int(a.optimizer.iterations.numpy())
    if policy == "mixed_float16":
        assert float(b.optimizer.loss_scale) == float(a.optimizer.loss_scale) < 2.0 ** 60
        assert int(b.optimizer.dynamic_counter.numpy()) == \
            int(a.optimizer.dynamic_counter.numpy()) > 0
    for _ in range(2):
        a.train_on_batch(x, y)
        b.train_on_batch(x, y)
    for u, v in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(u, v)
    for u, v in zip(a.optimizer.get_weights(), b.optimizer.get_weights()):
        np.testing.assert_array_equal(u, v)


def test_weights_file_format_is_documented_npz_without_pickles(tmp_path):
    import json

    model = make_model()
    model.train_on_batch(*make_data(8))
    path = tmp_path / "w.npz"
    model.save_weights(path)
    assert zipfile.is_zipfile(path)
    with np.load(path, allow_pickle=False) as z:
        manifest = json.loads(bytes(z["__manifest__"]).decode())
        assert manifest["format"] == "mixprec-weights-1"
        keys = [e["key"] for e in manifest["entries"]]
        assert keys[0].startswith("model/0/") and "optimizer/iterations" in keys
        for e in manifest["entries"]:
            arr = z[e["array"]]
            assert list(arr.shape) == e["shape"], e
            assert arr.dtype == np.dtype(e["dtype"]) or e["dtype"] == "bfloat16"
        it = [e for e in manifest["entries"] if e["key"] == "optimizer/iterations"][0]
        assert z[it["array"]].shape == () and int(z[it["array"]]) == 1


def test_bfloat16_variables_roundtrip(tmp_path):
    model = make_model("bfloat16")
    assert model.weights[0].dtype.name == "bfloat16"
    model.save_weights(tmp_path / "bf.npz")
    other = make_model("bfloat16")
    other.load_weights(tmp_path / "bf.npz")
    for u, v in zip(model.get_weights(), other.get_weights()):
        np.testing.assert_array_equal(u.view(np.uint16), v.view(np.uint16))


def test_load_weights_errors(tmp_path):
    model = make_model()
    model.save_weights(tmp_path / "good.npz")
    good = (tmp_path / "good.npz").read_bytes()
    cases = {
        "missing.npz": None,
        "garbage.npz": b"not a zip file at all",
        "truncated.npz": good[: len(good) // 2],
        "empty.npz": b"",
    }
    for name, content in cases.items():
        if content is not None:
            (tmp_path / name).write_bytes(content)
        with pytest.raises(ValueError, match="Unable to load weights") as info:
            model.load_weights(tmp_path / name)
        assert "hint" in str(info.value)
    np.savez(tmp_path / "other.npz", a=np.zeros(3))
    with pytest.raises(ValueError, match="Unable to load weights"):
        model.load_weights(tmp_path / "other.npz")
    # a pickled object array is refused, never unpickled
    np.save(tmp_path / "pickle.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="Unable to load weights"):
        model.load_weights(tmp_path / "pickle.npy")
    with pytest.raises(ValueError, match="containing 4 weights into a model with 2"):
        inputs = keras.Input(shape=(N_FEATURES,))
        keras.Model(inputs, layers.Dense(2)(inputs)).load_weights(tmp_path / "good.npz")
    wide = make_model(units=17)
    with pytest.raises(ValueError, match="Shape mismatch"):
        wide.load_weights(tmp_path / "good.npz")
    with pytest.raises(FileExistsError):
        model.save_weights(tmp_path / "good.npz", overwrite=False)


def test_load_weights_by_name(tmp_path):
    inputs = keras.Input(shape=(4,))
    a = keras.Model(inputs, layers.Dense(2, name="shared_name")(inputs))
    a.save_weights(tmp_path / "a.npz")
    inputs = keras.Input(shape=(4,))
    h = layers.Dense(4, name="new_layer")(inputs)
    b = keras.Model(inputs, layers.Dense(2, name="unrelated")(h))
    before = b.get_weights()
    b.load_weights(tmp_path / "a.npz", by_name=True)  # nothing matches: nothing changes
    for u, v in zip(before, b.get_weights()):
        np.testing.assert_array_equal(u, v)


def test_fit_without_targets_says_what_is_missing():
    x, _ = make_data(16)
    model = make_model()
    with pytest.raises(ValueError, match="no targets `y` were given"):
        model.fit(x, batch_size=8, verbose=0)
    with pytest.raises(ValueError, match="no targets"):
        model.evaluate(x, verbose=0)


def _batch_ids(model, ds, epochs, steps, caplog=None):
    seen = []

    class Record(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            seen.append([])

    orig = model.train_step

    def step(data):
        seen[-1].append(int(data[0].numpy()[0, 0]))
        return orig(data)

    model.train_step = step
    model.fit(ds, epochs=epochs, steps_per_epoch=steps, verbose=0, callbacks=[Record()])
    return seen


def test_fit_keeps_one_iterator_across_epochs_when_steps_per_epoch_is_given():
    # tf-keras' rule: with steps_per_epoch different from the dataset's length, the epochs
    # continue one pass of the data instead of restarting it
    x = np.repeat(np.arange(8, dtype="float32")[:, None], N_FEATURES, axis=1)
    y = np.zeros(8, "int64")
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(2)  # batches start 0, 2, 4, 6
    model = make_model(metrics=())
    assert _batch_ids(model, ds.repeat(), 3, 3) == [[0, 2, 4], [6, 0, 2], [4, 6, 0]]
    # steps_per_epoch equal to the length: a fresh pass per epoch
    assert _batch_ids(model, ds, 2, 4) == [[0, 2, 4, 6], [0, 2, 4, 6]]


def test_fit_stops_when_a_finite_dataset_runs_out(caplog):
    x = np.zeros((8, N_FEATURES), "float32")
    ds = tf.data.Dataset.from_tensor_slices((x, np.zeros(8, "int64"))).batch(2)  # 4 batches
    model = make_model(metrics=())
    history = model.fit(ds, epochs=3, steps_per_epoch=3, verbose=0)
    assert "ran out of data" in caplog.text and "9 batches" in caplog.text
    assert len(history.history["loss"]) == 2  # 3 steps, then 1 step and the stop
    assert int(model.optimizer.iterations.numpy()) == 4


def _rewrite_manifest(src, dst, edit):
    """Copies the weights file ``src`` to ``dst`` with its manifest replaced by
    ``edit(manifest)``; the arrays stay as they are."""
    import json

    with np.load(src) as z:
        manifest = json.loads(bytes(z["__manifest__"]).decode())
        arrays = {k: z[k] for k in z.files if k != "__manifest__"}
    np.savez(dst, __manifest__=np.frombuffer(json.dumps(edit(manifest)).encode(), np.uint8),
             **arrays)
    return dst


def _with_key(manifest, old, new):
    for e in manifest["entries"]:
        if e["key"] == old:
            e["key"] = new
    return manifest


def _drop_field(manifest, field):
    for e in manifest["entries"]:
        e.pop(field, None)
    return manifest


def _first_slot(manifest):
    return next(e["key"] for e in manifest["entries"] if e["key"].startswith("optimizer/slot/"))


MALFORMED_MANIFESTS = {
    "a list": lambda m: [1, 2],
    "entries not a list": lambda m: dict(m, entries=5),
    "entries of numbers": lambda m: dict(m, entries=[1]),
    "entries null": lambda m: dict(m, entries=None),
    "no dtype": lambda m: _drop_field(m, "dtype"),
    "no shape": lambda m: _drop_field(m, "shape"),
    "key not a string": lambda m: dict(m, entries=[dict(e, key=5) for e in m["entries"]]),
    "shape of strings": lambda m: dict(m, entries=[dict(e, shape=["4"]) for e in m["entries"]]),
    "unknown dtype": lambda m: dict(m, entries=[dict(e, dtype="float99")
                                                for e in m["entries"]]),
    "dtype not the array's": lambda m: dict(m, entries=[dict(e, dtype="float16")
                                                        for e in m["entries"]]),
    "shape not the array's": lambda m: dict(m, entries=[dict(e, shape=[7] * len(e["shape"]))
                                                        for e in m["entries"]]),
    "missing array": lambda m: dict(m, entries=[dict(e, array="nope")
                                                for e in m["entries"]]),
    "position not a number": lambda m: _with_key(m, "model/1/dense/bias", "model/abc/x"),
    "negative position": lambda m: _with_key(m, "model/1/dense/bias", "model/-1/x"),
    "duplicate position": lambda m: _with_key(m, "model/1/dense/bias", "model/0/zz"),
    "gap in positions": lambda m: _with_key(m, "model/1/dense/bias", "model/5/x"),
    "duplicate key": lambda m: dict(m, entries=m["entries"] + m["entries"][:1]),
    "slot key too short": lambda m: _with_key(m, _first_slot(m), "optimizer/slot/0"),
    "negative slot position": lambda m: _with_key(m, _first_slot(m), "optimizer/slot/-1/m"),
    "slot beyond the weights": lambda m: _with_key(m, _first_slot(m), "optimizer/slot/9/m"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED_MANIFESTS))
def test_load_weights_refuses_a_malformed_manifest(tmp_path, case):
    """Every way a manifest can break the documented format is the same clear ValueError
    naming the file, and nothing is loaded."""
    inputs = keras.Input(shape=(4,))
    model = keras.Model(inputs, layers.Dense(3, name="dense")(inputs))
    model.compile("adam", "mse")
    model.train_on_batch(np.ones((2, 4), "float32"), np.ones((2, 3), "float32"))
    model.save_weights(tmp_path / "good.npz")
    before = model.get_weights()
    for w in model.weights:
        w.assign(np.zeros(w.shape, "float32"))
    zeros = model.get_weights()
    bad = _rewrite_manifest(tmp_path / "good.npz", tmp_path / "bad.npz",
                            MALFORMED_MANIFESTS[case])
    with pytest.raises(ValueError, match="Unable to load weights from .*bad.npz.*hint"):
        model.load_weights(bad)
    for u, v in zip(zeros, model.get_weights()):
        np.testing.assert_array_equal(u, v)
    model.load_weights(tmp_path / "good.npz")  # the good file still loads
    for u, v in zip(before, model.get_weights()):
        np.testing.assert_array_equal(u, v)


def _zip_member_data_offset(path, member):
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(member)
    raw = path.read_bytes()
    name_len, extra_len = np.frombuffer(raw[info.header_offset + 26:info.header_offset + 30],
                                        "<u2")
    return info.header_offset + 30 + int(name_len) + int(extra_len), info.compress_size


def test_load_weights_refuses_corrupt_or_forged_arrays(tmp_path):
    model = make_model()
    model.save_weights(tmp_path / "good.npz")

    def refused(path):
        with pytest.raises(ValueError, match="Unable to load weights from .*%s.*hint"
                           % re.escape(path.name)):
            model.load_weights(path)

    # a plain .npy file (np.load returns an array, not an archive)
    np.save(tmp_path / "plain.npy", np.zeros(3))
    refused(tmp_path / "plain.npy")
    # compressed members whose deflate data is broken: a zlib error inside zipfile
    with np.load(tmp_path / "good.npz") as z:
        arrays = {k: z[k] for k in z.files}
    np.savez_compressed(tmp_path / "deflate.npz", **arrays)
    start, size = _zip_member_data_offset(tmp_path / "deflate.npz", "a0.npy")
    raw = bytearray((tmp_path / "deflate.npz").read_bytes())
    raw[start:start + size] = b"\xff" * size  # block type 3: invalid deflate
    (tmp_path / "deflate.npz").write_bytes(bytes(raw))
    refused(tmp_path / "deflate.npz")
    # a member whose header declares a huge array over a few bytes: refused before any
    # allocation (np.load would ask for exabytes)
    for k, shape in enumerate([(2 ** 60,), (2 ** 62, 4), (3,)]):
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(
            header, {"descr": "<f4", "fortran_order": False, "shape": shape})
        path = tmp_path / ("forged_%d.npz" % k)
        with zipfile.ZipFile(tmp_path / "good.npz") as src, zipfile.ZipFile(path, "w") as dst:
            for info in src.infolist():
                data = src.read(info)
                if info.filename == "a0.npy":
                    data = header.getvalue() + b"\0" * 8
                dst.writestr(info.filename, data)
        refused(path)


@pytest.mark.parametrize("how", ["skip_mismatch", "by_name"])
def test_load_weights_from_another_size_keeps_the_optimizer_consistent(tmp_path, how):
    """Optimizer slots saved for weights of another shape are skipped with their weights
    (they used to be queued and crash the next step with an InternalError)."""
    x, y = np.ones((8, 4), "float32"), np.ones((8, 2), "float32")

    def build(units):
        inputs = keras.Input(shape=(4,))
        h = layers.Dense(units, name="hidden")(inputs)
        model = keras.Model(inputs, layers.Dense(2, name="head")(h))
        model.compile("adam", "mse")
        return model

    small = build(3)
    small.fit(x, y, verbose=0)
    small.save_weights(tmp_path / "small.npz")
    wide = build(50)
    before = wide.get_weights()
    wide.load_weights(tmp_path / "small.npz", **{how: True, "skip_mismatch": True})
    head_bias = 3  # the only weight of the same shape in both models
    for i, (u, v) in enumerate(zip(before, wide.get_weights())):
        np.testing.assert_array_equal(v, small.get_weights()[i] if i == head_bias else u)
    wide.fit(x, y, verbose=0)  # the slots of the head's bias are the saved ones
    if how == "by_name":
        with pytest.raises(ValueError, match="Shape mismatch for hidden/kernel"):
            build(50).load_weights(tmp_path / "small.npz", by_name=True)


def test_load_weights_by_name_restores_the_slots_of_the_matched_variables(tmp_path):
    """by_name: a weight's optimizer slots follow it by name, not by position."""
    x, y = np.ones((8, 4), "float32"), np.ones((8, 2), "float32")
    inputs = keras.Input(shape=(4,))
    a = keras.Model(inputs, layers.Dense(2, name="out")(inputs))
    a.compile("adam", "mse")
    a.fit(x, y, verbose=0)
    a.save_weights(tmp_path / "a.npz")
    inputs = keras.Input(shape=(4,))  # 'out' is at positions 2 and 3 here, 0 and 1 in a
    b = keras.Model(inputs, [layers.Dense(3, name="other")(inputs),
                             layers.Dense(2, name="out")(inputs)])
    b.compile("adam", "mse")
    b.load_weights(tmp_path / "a.npz", by_name=True)
    # the 'other' output's loss does not reach 'out': its step is a's step exactly when
    # its Adam moments (and the iteration count) are a's
    a.fit(x, y, verbose=0)
    b.fit(x, [np.ones((8, 3), "float32"), y], verbose=0)
    for u, v in zip(a.get_layer("out").get_weights(), b.get_layer("out").get_weights()):
        np.testing.assert_array_equal(u, v)


def _two_output_model():
    inp = keras.Input(shape=(4,))
    a = keras.layers.Dense(3, activation="softmax", name="a")(inp)
    b = keras.layers.Dense(1, activation="sigmoid", name="b")(inp)
    return keras.Model(inp, [a, b])


@pytest.mark.parametrize("metrics, names", [
    (["accuracy"], ["a_accuracy", "b_accuracy"]),        # a flat list: every output
    ({"b": "accuracy"}, ["b_accuracy"]),                 # by output name
    ([["accuracy"], []], ["a_accuracy"]),                # one list per output
])
def test_metrics_of_a_multi_output_model_follow_tf_keras(metrics, names):
    rng = np.random.default_rng(0)
    x = rng.random((16, 4), dtype=np.float32)
    ya, yb = rng.integers(0, 3, 16), rng.integers(0, 2, (16, 1))
    m = _two_output_model()
    m.compile("adam", ["sparse_categorical_crossentropy", "binary_crossentropy"], metrics=metrics)
    logs = m.evaluate(x, [ya, yb], verbose=0, return_dict=True)
    assert sorted(k for k in logs if not k.endswith("loss")) == names
    # each accuracy measures its own output (the second used to be the first's again)
    pa, pb = m.predict(x, verbose=0)
    if "a_accuracy" in logs:
        np.testing.assert_allclose(logs["a_accuracy"], np.mean(pa.argmax(-1) == ya), rtol=1e-6)
    if "b_accuracy" in logs:
        np.testing.assert_allclose(logs["b_accuracy"], np.mean((pb > 0.5) == yb), rtol=1e-6)


def test_a_per_output_metrics_list_must_match_the_outputs():
    m = _two_output_model()
    m.compile("adam", ["sparse_categorical_crossentropy", "binary_crossentropy"],
              metrics=[["accuracy"]])
    with pytest.raises(ValueError, match="one entry per model output"):
        m.evaluate(np.ones((4, 4), np.float32), [np.zeros(4), np.zeros((4, 1))], verbose=0)


def test_a_multi_output_model_logs_each_outputs_unweighted_loss():
    rng = np.random.default_rng(1)
    x = rng.random((16, 4), dtype=np.float32)
    ya, yb = rng.integers(0, 3, 16), rng.integers(0, 2, (16, 1))
    m = _two_output_model()
    m.compile("adam", ["sparse_categorical_crossentropy", "binary_crossentropy"],
              loss_weights=[1.0, 0.5], metrics=["accuracy"])
    h = m.fit(x, [ya, yb], batch_size=8, epochs=1, verbose=0)
    assert list(h.history) == ["loss", "a_loss", "b_loss", "a_accuracy", "b_accuracy"]
    assert m.metrics_names == ["loss", "a_loss", "b_loss", "a_accuracy", "b_accuracy"]
    logs = m.evaluate(x, [ya, yb], verbose=0, return_dict=True)
    np.testing.assert_allclose(logs["loss"], logs["a_loss"] + 0.5 * logs["b_loss"], rtol=1e-5)
    pa, pb = m.predict(x, verbose=0)
    np.testing.assert_allclose(logs["a_loss"], -np.log(pa[np.arange(16), ya]).mean(), rtol=1e-4)
    assert len(m.evaluate(x, [ya, yb], verbose=0)) == 5  # [loss, a_loss, b_loss, metrics...]


@pytest.mark.parametrize("keyed", [True, False])
def test_extra_keys_in_dict_inputs_are_ignored_with_a_warning(keyed):
    ia, ib = keras.Input(shape=(2,), name="a"), keras.Input(shape=(3,), name="b")
    out = layers.Dense(1, kernel_initializer="ones")(ia)
    m = keras.Model({"a": ia, "b": ib} if keyed else [ia, ib], out)
    data = {"b": np.ones((2, 3), np.float32), "a": np.ones((2, 2), np.float32),
            "zz": np.ones((2,), np.float32)}
    with pytest.warns(UserWarning, match=r"keys \['zz'\] which did not match any model input"):
        y = m(data)
    np.testing.assert_array_equal(y.numpy(), [[2.0], [2.0]])


# --------------------------------------------------------------------------- target ranks


@pytest.mark.parametrize("loss,activation", [("mse", None), ("mae", None),
                                             ("binary_crossentropy", "sigmoid")])
def test_targets_of_shape_n_against_n_by_1_outputs_are_expanded(loss, activation):
    """tf-keras' match_dtype_and_rank: y of shape (n,) against (n, 1) outputs becomes (n, 1);
    nothing broadcasts to (n, n)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 2)).astype("f")
    y = rng.integers(0, 2, 8).astype("f")
    model = keras.Sequential([keras.layers.Dense(1, activation=activation)])
    model.compile("sgd", loss, metrics=["mae", "accuracy"])
    p = model.predict(x, verbose=0)[:, 0]
    got = model.evaluate(x, y, verbose=0, return_dict=True)
    ref = {"mse": np.mean((p - y) ** 2), "mae": np.mean(np.abs(p - y)),
           "binary_crossentropy": np.mean(-(y * np.log(p) + (1 - y) * np.log(1 - p)))}[loss]
    assert_close(got["loss"], ref, "float32", "matmul")
    assert_close(got["mae"], np.mean(np.abs(p - y)), "float32", "matmul")
    assert_close(got["accuracy"], np.mean((p > 0.5) == y), "float32", "matmul")
    hist = model.fit(x, y, epochs=1, verbose=0, sample_weight=np.ones(8, "f"))
    assert np.isfinite(hist.history["loss"][0])


def test_loss_objects_squeeze_a_trailing_axis_of_tensors():
    y = tf.constant([1.0, 2.0, 3.0])
    p = tf.constant([[1.5], [2.0], [2.0]])
    assert_close(keras.losses.MeanSquaredError()(y, p).numpy(), (0.25 + 1) / 3, "float32",
                 "reduction")
    assert_close(keras.losses.MeanSquaredError()(p, y).numpy(), (0.25 + 1) / 3, "float32",
                 "reduction")
