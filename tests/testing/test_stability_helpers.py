"""mixprec.testing catches real failures: a model that breaks in float16, gradients that
underflow without loss scaling, the first op producing inf, non-finite tensors."""

import subprocess
import sys

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras, testing
from mixprec.keras import layers
from mixprec.keras.mixed_precision import policy as _policy


@pytest.fixture(scope="module")
def data():
    (x, y), (xt, yt) = keras.datasets.fashion_mnist.load_embedded()
    x = x[:1500].reshape(-1, 784).astype("float32") / 255
    xt = xt[:500].reshape(-1, 784).astype("float32") / 255
    return (x, y[:1500]), (xt, yt[:500])


def mlp(scale=1.0):
    def build():
        inputs = keras.Input(shape=(784,))
        x = inputs
        if scale != 1.0:
            x = layers.Lambda(lambda t: t * scale, name="amplify")(x)
        x = layers.Dense(32, activation="relu")(x)
        x = layers.Dense(10)(x)
        out = layers.Activation("softmax", dtype="float32")(x)
        model = keras.Model(inputs, out)
        model.compile(optimizer=keras.optimizers.Adam(1e-3),
                      loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        return model
    return build


def test_assert_trains_like_passes_for_a_healthy_model(data):
    result = testing.assert_trains_like(mlp(), data, policies=("float32", "mixed_float16"),
                                        epochs=2, tolerance=0.05)
    assert set(result) == {"float32", "mixed_float16"}
    assert result["float32"]["metric"] > 0.5  # well above chance (0.1)
    assert "mixed_float16" in str(result)


def test_assert_trains_like_catches_a_model_that_breaks_in_float16(data):
    # Inputs amplified past float16's range: the mixed model's activations overflow to inf,
    # every step is skipped by the loss scaler and the model never learns.
    with pytest.raises(AssertionError) as e:
        testing.assert_trains_like(mlp(scale=1e5), data, policies=("float32", "mixed_float16"),
                                   epochs=2, tolerance=0.05)
    msg = str(e.value)
    assert "mixed_float16 differs from float32" in msg and "<-- beyond" in msg


def test_assert_trains_like_returns_what_it_documents(data, capsys):
    (x, y), (xt, yt) = data
    result = testing.assert_trains_like(mlp(), ((x[:320], y[:320]), (xt, yt)), epochs=1,
                                        tolerance=1.0, fit_kwargs={"verbose": 2})
    assert isinstance(result, testing.TrainingComparison) and isinstance(result, dict)
    assert result.metric == "accuracy" and result.reference == "float32"
    for row in result.values():
        assert set(row) == {"metric", "loss", "history", "steps", "skipped"}
        assert isinstance(row["metric"], float) and isinstance(row["loss"], float)
        assert row["history"]["loss"][-1] == pytest.approx(row["loss"])
        assert row["steps"] == 10 and row["skipped"] == 0
    # fit_kwargs may set verbose (it was 'got multiple values for keyword argument')
    assert capsys.readouterr().out.count("10/10 - ") == 2


def test_failure_table_says_when_the_mixed_run_skipped_steps(data):
    (x, y), _ = data
    with pytest.raises(AssertionError) as e:
        testing.assert_trains_like(mlp(scale=1e5), (x[:320], y[:320]), epochs=1,
                                   tolerance=0.05)
    msg = str(e.value)
    assert "skipped steps" in msg
    assert "10 of 10" in msg
    assert "mixed_float16 skipped steps for inf/NaN gradients" in msg


def test_assert_trains_like_needs_a_compiled_model(data):
    def build():
        inputs = keras.Input(shape=(784,))
        return keras.Model(inputs, layers.Dense(10)(inputs))
    with pytest.raises(ValueError, match="uncompiled"):
        testing.assert_trains_like(build, data)


def test_assert_trains_like_says_when_there_is_nothing_to_train_on(data):
    (x, y), _ = data
    with pytest.raises(ValueError, match="Empty logs.*training data is empty"):
        testing.assert_trains_like(mlp(), (x[:0], y[:0]))
    with pytest.raises(ValueError, match="Empty logs.*evaluation data is empty"):
        testing.assert_trains_like(mlp(), (x[:64], y[:64], x[:0], y[:0]), epochs=1)
    for epochs in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="epochs must be a positive integer"):
            testing.assert_trains_like(mlp(), data, epochs=epochs)


def _tiny_gradient_model():
    # A model whose loss is scaled down so its gradients are ~1e-9: representable in
    # float32, flushed to zero in float16 unless the loss is scaled up first.
    inputs = keras.Input(shape=(16,))
    out = layers.Dense(4, kernel_initializer="ones", bias_initializer="zeros")(inputs)
    model = keras.Model(inputs, out)
    return model


def test_gradient_underflow_report_finds_flushed_gradients():
    model = _tiny_gradient_model()
    x = np.full((8, 16), 1e-3, np.float32)
    y = np.zeros((8, 4), np.float32)

    def loss(y_true, y_pred):
        return tf.reduce_mean(tf.square(y_pred - y_true)) * 1e-6

    report = testing.gradient_underflow_report(model, x, y, loss=loss)
    assert report.loss_scale == 2.0 ** 15
    assert report.fraction("zero") == 1.0          # every gradient flushes unscaled
    assert report.fraction("zero", scaled=True) == 0.0  # none with the loss scale
    assert "kernel" in report.worst()["name"]
    text = str(report)
    assert "gradient underflow in float16" in text and "100.00%" in text


def test_gradient_underflow_report_uses_the_optimizers_scale_and_sees_overflow():
    model = _tiny_gradient_model()
    model.compile(optimizer=keras.mixed_precision.LossScaleOptimizer(
        keras.optimizers.SGD(), dynamic=False, initial_scale=1e12), loss="mse")
    x = np.ones((8, 16), np.float32)
    y = np.zeros((8, 4), np.float32)
    report = testing.gradient_underflow_report(model, x, y)
    assert report.loss_scale == np.float32(1e12)  # the scale is a float32 variable
    assert report.fraction("zero") == 0.0
    assert all(r["scaled_overflow"] == 1.0 for r in report)


def test_check_numerics_names_the_op_and_the_layer():
    with _policy.policy_scope(_policy.Policy("mixed_float16")):
        inputs = keras.Input(shape=(4,))
        out = layers.Lambda(lambda t: t * 1e5, name="blow_up")(inputs)
        model = keras.Model(inputs, out)
    x = np.ones((2, 4), np.float32)
    model(x)  # outside the block: inf is produced silently
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        with testing.check_numerics():
            model(x)
    msg = str(e.value)
    assert '"Mul"' in msg and '"blow_up"' in msg and "float16" in msg
    assert not tf.debugging.is_check_numerics_enabled()
    with testing.check_numerics():
        tf.constant([1.0, 2.0]) * 3.0  # finite: fine


def test_assert_all_finite():
    testing.assert_all_finite([tf.constant([1.0, 2.0]), None, tf.Variable(3.0), tf.constant(1)])
    bad = tf.constant([1.0, float("nan"), float("inf")], "float16")
    with pytest.raises(AssertionError, match=r"(?s)1 of 2 tensors hold inf/NaN.*1 NaN, 1 inf of 3"):
        testing.assert_all_finite([tf.constant([1.0]), bad])


def test_assert_allclose_dtype_uses_the_table():
    a = tf.constant([1.0, 2.0], "float16")
    testing.assert_allclose_dtype(a, np.array([1.0, 2.0 + 2.0 ** -10]))  # 1 ulp: fine
    with pytest.raises(AssertionError):
        testing.assert_allclose_dtype(a, np.array([1.0, 2.01]))
    rtol, atol = testing.tolerance("bfloat16", "matmul")
    assert rtol > testing.tolerance("float32", "matmul")[0]


@pytest.mark.mixprec_policies("float32", "mixed_bfloat16")
def test_policy_fixture_sets_the_global_policy(mixprec_policy, mixprec_seed):
    assert keras.mixed_precision.global_policy() is mixprec_policy
    assert mixprec_policy.name in ("float32", "mixed_bfloat16")
    assert mixprec_seed == 0
    layer = layers.Dense(2)
    assert layer.dtype_policy is mixprec_policy


def test_policy_fixture_defaults(mixprec_policy):
    assert mixprec_policy.name in ("float32", "mixed_float16")


def test_gradient_underflow_report_reduces_per_example_losses():
    # A compiled string loss is a per-example function: the report must use its batch mean
    # (as fit does), not the sum, or gradients look batch-size times larger.
    model = _tiny_gradient_model()
    model.compile(optimizer="sgd", loss="mse")
    x = np.ones((64, 16), np.float32)
    y = np.zeros((64, 4), np.float32)
    with tf.GradientTape() as tape:
        value = tf.reduce_mean(keras.losses.mean_squared_error(y, model(x)))
    g = tape.gradient(value, model.trainable_variables[0])
    big = 65504.0 / 2.0 ** 15  # scaled gradients above this overflow float16
    report = testing.gradient_underflow_report(model, x, y)
    expected = float(np.mean(np.abs(g.numpy()) > big))
    assert report.rows[0]["scaled_overflow"] == pytest.approx(expected)


@pytest.mark.parametrize("mixprec_policy", ["mixed_bfloat16"])
def test_a_tests_own_policy_parameter_wins_over_the_fixture(mixprec_policy):
    # the plugin must not parametrize its fixture a second time (pytest would refuse to collect)
    assert mixprec_policy == "mixed_bfloat16"


PROJECT_TESTS = """
import pytest

@pytest.fixture(params=["a", "b", "c"])
def policy(request):
    return request.param

@pytest.fixture
def seed():
    return 42

def test_own_fixtures(policy, seed):
    assert policy in ("a", "b", "c") and seed == 42

@pytest.mark.policies("x")
def test_own_marker_named_policies(policy):
    assert policy in ("a", "b", "c")
"""


def test_another_projects_policy_and_seed_fixtures_run_unchanged(tmp_path):
    # the plugin is active in every pytest run of this environment: a project with its own
    # `policy`/`seed` fixtures must see exactly its own parametrization (3 runs, not 6)
    (tmp_path / "test_project.py").write_text(PROJECT_TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    policies: theirs\n")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        str(tmp_path)], cwd=str(tmp_path), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "6 passed" in r.stdout, r.stdout
