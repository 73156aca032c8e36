"""LossScaleOptimizer, both generations: the stable tf-keras API (semantics §3.3) and TF
2.1-2.3's experimental LossScaleOptimizer(opt, loss_scale) (§3.2)."""

import warnings

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.keras.mixed_precision import experimental as kexp
from mixprec.mixed_precision.experimental import DynamicLossScale, FixedLossScale

LSO = keras.mixed_precision.LossScaleOptimizer
LSOV1 = kexp.LossScaleOptimizer
SGD = keras.optimizers.SGD


def _step(opt, var, grad):
    """apply_gradients with an (unscaled) gradient, after the guide's two calls."""
    opt.get_scaled_loss(tf.constant(1.0))
    opt.get_unscaled_gradients([])
    opt.apply_gradients([(tf.constant(grad, var.dtype), var)])


# --------------------------------------------------------------------------- attributes

def test_attributes_dynamic():
    inner = SGD(0.1)
    lso = LSO(inner)
    assert lso.dynamic is True
    assert lso.inner_optimizer is inner
    assert lso.initial_scale == 32768.0 and isinstance(lso.initial_scale, float)
    assert lso.dynamic_growth_steps == 2000 and isinstance(lso.dynamic_growth_steps, int)
    assert isinstance(lso.loss_scale, tf.Tensor)
    assert lso.loss_scale.dtype == tf.float32 and float(lso.loss_scale) == 32768.0
    assert lso.loss_scale.shape == ()
    assert isinstance(lso.dynamic_counter, tf.Variable)
    assert lso.dynamic_counter.dtype == tf.int64 and int(lso.dynamic_counter) == 0


def test_attributes_custom_dynamic():
    lso = LSO(SGD(), initial_scale=8, dynamic_growth_steps=3)
    assert lso.initial_scale == 8.0 and lso.dynamic_growth_steps == 3
    assert float(lso.loss_scale) == 8.0


def test_attributes_fixed():
    lso = LSO(SGD(), dynamic=False, initial_scale=400)
    assert lso.dynamic is False
    assert lso.loss_scale.dtype == tf.float32 and float(lso.loss_scale) == 400.0
    assert lso.initial_scale == 400.0 and isinstance(lso.initial_scale, float)
    assert lso.dynamic_counter is None and lso.dynamic_growth_steps is None


def test_attributes_are_read_only():
    lso = LSO(SGD())
    for name in ("loss_scale", "dynamic_counter", "dynamic", "initial_scale",
                 "dynamic_growth_steps"):
        with pytest.raises(AttributeError):
            setattr(lso, name, 2.0)


# --------------------------------------------------------------------------- errors

def test_error_when_nesting():
    lso = LSO(SGD())
    with pytest.raises(TypeError, match="LossScaleOptimizer cannot wrap another "
                                        "LossScaleOptimizer, but got: "):
        LSO(lso)


def test_error_wrapping_the_same_optimizer_twice():
    inner = SGD()
    LSO(inner)
    with pytest.raises(ValueError, match='"inner_optimizer" is already wrapped by a '
                                         "LossScaleOptimizer. An optimizer can only be wrapped "
                                         "by a single LossScaleOptimizer"):
        LSO(inner)


def test_error_wrapping_a_non_optimizer():
    with pytest.raises(TypeError, match=r'"inner_optimizer" must be an instance of '
                                        r"`tf.keras.optimizers.Optimizer` or "
                                        r"`tf.keras.optimizers.experimental.Optimizer`, but got: "
                                        r"1\."):
        LSO(1)


def test_dynamic_must_be_bool():
    with pytest.raises(TypeError, match='"dynamic" argument to LossScaleOptimizer.__init__ must '
                                        "be a bool, but got: 'dynamic'"):
        LSO(SGD(), dynamic="dynamic")


def test_invalid_args_with_fixed_loss_scale():
    with pytest.raises(ValueError, match='"initial_scale" must be specified if "dynamic" is '
                                         "False"):
        LSO(SGD(), dynamic=False)
    with pytest.raises(ValueError, match='"dynamic_growth_steps" must be None if "dynamic" is '
                                         "False, but got: 2"):
        LSO(SGD(), dynamic=False, initial_scale=1, dynamic_growth_steps=2)


@pytest.mark.parametrize("dynamic", [False, True])
def test_initial_scale_float32_cannot_hold_is_refused(dynamic):
    with pytest.raises(ValueError, match=r"initial_scale must be a finite float32 \(at most "
                                         r"3.4028235e\+38\), got 1e\+300"):
        LSO(SGD(), dynamic=dynamic, initial_scale=1e300)
    with pytest.raises(ValueError, match=r"initial_scale must be a finite float32, got 1e-300"):
        LSO(SGD(), dynamic=dynamic, initial_scale=1e-300)
    assert float(LSO(SGD(), dynamic=dynamic, initial_scale=0.5).loss_scale) == 0.5


# --------------------------------------------------------------------------- scaling

def test_get_scaled_loss():
    lso = LSO(SGD(), initial_scale=8)
    s = lso.get_scaled_loss(tf.constant(3.0))
    assert float(s) == 24.0 and s.dtype == tf.float32
    s16 = lso.get_scaled_loss(tf.constant(3.0, "float16"))
    assert s16.dtype == tf.float16 and float(s16) == 24.0
    f = lso.get_scaled_loss(lambda: tf.constant(2.0))
    assert callable(f) and float(f()) == 16.0


def test_get_scaled_loss_float16_overflow():
    # semantics §4: a scale >= 65520 cast to float16 is inf
    lso = LSO(SGD(), initial_scale=2 ** 16)
    assert np.isinf(float(lso.get_scaled_loss(tf.constant(1.0, "float16"))))


def test_get_unscaled_gradients():
    lso = LSO(SGD(), initial_scale=4)
    grads = [tf.constant([8.0, 4.0]), None, tf.constant(2.0, "float16"),
             tf.constant([1.0], "bfloat16"), tf.constant(12.0, "float64")]
    out = lso.get_unscaled_gradients(grads)
    assert isinstance(out, list) and out[1] is None
    assert [g.dtype for g in out if g is not None] == [tf.float32, tf.float16, tf.bfloat16,
                                                       tf.float64]
    np.testing.assert_array_equal(out[0].numpy(), [2, 1])
    assert float(out[2]) == 0.5 and float(out[3][0]) == 0.25 and float(out[4]) == 3.0


# --------------------------------------------------------------------------- applying

def test_apply_gradients_unscaled_step():
    v = tf.Variable([1.0, 2.0])
    lso = LSO(SGD(1.0), initial_scale=16)
    with tf.GradientTape() as t:
        loss = tf.reduce_sum(v * tf.constant([0.5, 0.25]))
        scaled = lso.get_scaled_loss(loss)
    scaled_grads = t.gradient(scaled, [v])
    np.testing.assert_array_equal(scaled_grads[0].numpy(), [8, 4])
    grads = lso.get_unscaled_gradients(scaled_grads)
    lso.apply_gradients(zip(grads, [v]))
    np.testing.assert_array_equal(v.numpy(), [0.5, 1.75])
    assert int(lso.iterations) == 1 and int(lso.dynamic_counter) == 1


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_apply_gradients_skips_nonfinite_and_halves(bad):
    v = tf.Variable([1.0, 2.0])
    lso = LSO(SGD(1.0), initial_scale=16, dynamic_growth_steps=2)
    _step(lso, v, [1.0, 1.0])
    assert int(lso.dynamic_counter) == 1
    _step(lso, v, [bad, 1.0])
    np.testing.assert_array_equal(v.numpy(), [0, 1])  # the bad step changed nothing
    assert float(lso.loss_scale) == 8.0 and int(lso.dynamic_counter) == 0
    assert int(lso.iterations) == 2  # skipped steps still count (testIterationsIncremented)
    _step(lso, v, [1.0, 1.0])
    _step(lso, v, [1.0, 1.0])
    assert float(lso.loss_scale) == 16.0 and int(lso.dynamic_counter) == 0


def test_one_bad_variable_skips_all():
    a, b = tf.Variable([1.0]), tf.Variable([1.0])
    lso = LSO(SGD(1.0), initial_scale=2)
    lso.get_scaled_loss(1.0)
    lso.get_unscaled_gradients([])
    lso.apply_gradients([(tf.constant([1.0]), a), (tf.constant([np.nan]), b)])
    assert float(a.numpy()[0]) == 1.0 and float(b.numpy()[0]) == 1.0
    assert float(lso.loss_scale) == 1.0


def test_scale_is_floored_at_one():
    v = tf.Variable([1.0])
    lso = LSO(SGD(1.0), initial_scale=2)
    for _ in range(3):
        _step(lso, v, [np.inf])
    assert float(lso.loss_scale) == 1.0


def test_fixed_scale_applies_nonfinite_gradients():
    v = tf.Variable([1.0])
    lso = LSO(SGD(1.0), dynamic=False, initial_scale=4)
    _step(lso, v, [np.inf])
    assert np.isneginf(v.numpy()[0])
    assert float(lso.loss_scale) == 4.0 and int(lso.iterations) == 1


def test_none_gradients_are_filtered():
    a, b = tf.Variable([1.0]), tf.Variable([1.0], name="b")
    lso = LSO(SGD(1.0), initial_scale=2)
    lso.get_scaled_loss(1.0)
    grads = lso.get_unscaled_gradients([tf.constant([2.0]), None])
    with pytest.warns(UserWarning, match="Gradients do not exist"):
        lso.apply_gradients(zip(grads, [a, b]))
    assert float(a.numpy()[0]) == 0.0 and float(b.numpy()[0]) == 1.0


def test_minimize():
    v = tf.Variable([1.0, 2.0])
    lso = LSO(SGD(0.5), initial_scale=64)
    lso.minimize(lambda: tf.reduce_sum(v * v), [v])
    np.testing.assert_allclose(v.numpy(), [0, 0])
    assert int(lso.iterations) == 1 and int(lso.dynamic_counter) == 1
    with tf.GradientTape() as t:
        loss = tf.reduce_sum(v + 1.0)
    lso.minimize(loss, [v], tape=t)
    np.testing.assert_allclose(v.numpy(), [-0.5, -0.5])


def test_minimize_skips_on_overflow():
    v = tf.Variable([1.0])
    lso = LSO(SGD(0.5), initial_scale=2.0 ** 20)
    lso.minimize(lambda: tf.reduce_sum(tf.cast(v, "float16") * tf.constant(100.0, "float16")),
                 [v])  # 100 * 2**20 overflows float16
    assert float(v.numpy()[0]) == 1.0 and float(lso.loss_scale) == 2.0 ** 19


@pytest.mark.parametrize("clip", [{"clipnorm": 1.0}, {"global_clipnorm": 1.0},
                                  {"clipvalue": 1.0}])
def test_minimize_clips_unscaled_gradients(clip):
    # tf-keras: minimize unscales, then the inner optimizer clips the unscaled gradients
    v = tf.Variable([0.3, 0.4])
    lso = LSO(SGD(1.0, **clip))
    lso.minimize(lambda: tf.reduce_sum(v * tf.constant([0.3, 0.4])), [v])  # grad norm 0.5
    np.testing.assert_allclose(v.numpy(), [0, 0], atol=1e-7)
    w = tf.Variable([0.0, 0.0])
    lso = LSO(SGD(1.0, **clip))
    lso.minimize(lambda: tf.reduce_sum(w * tf.constant([3.0, 4.0])), [w])
    expected = {"clipnorm": [-0.6, -0.8], "global_clipnorm": [-0.6, -0.8],
                "clipvalue": [-1.0, -1.0]}[next(iter(clip))]
    np.testing.assert_allclose(w.numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("clip", [{"clipnorm": 1.0}, {"global_clipnorm": 1.0},
                                  {"clipvalue": 1.0}])
def test_inf_gradients_are_skipped_not_clipped(clip):
    # tf-keras testClipping: the finite check runs before the inner optimizer clips
    v = tf.Variable([1.0, 1.0])
    lso = LSO(SGD(1.0, **clip), initial_scale=8)
    _step(lso, v, [np.inf, 0.5])
    np.testing.assert_array_equal(v.numpy(), [1, 1])
    assert float(lso.loss_scale) == 4.0 and int(lso.iterations) == 1
    _step(lso, v, [3.0, 4.0])  # finite: clipped as usual
    expected = {"clipnorm": [0.4, 0.2], "global_clipnorm": [0.4, 0.2],
                "clipvalue": [0.0, 0.0]}[next(iter(clip))]
    np.testing.assert_allclose(v.numpy(), expected, rtol=1e-6, atol=1e-7)


def test_iterations_counted_on_skipped_steps():
    v = tf.Variable([1.0])
    lso = LSO(SGD(1.0))
    for g in ([np.nan], [1.0], [np.inf]):
        _step(lso, v, g)
    assert int(lso.iterations) == 3 and int(lso.inner_optimizer.iterations) == 3


# --------------------------------------------------------------------------- warnings

def _logged(caplog, fn):
    with caplog.at_level("WARNING", logger="mixprec"):
        fn()
    return [r.getMessage() for r in caplog.records if "You forgot" in r.getMessage()]


def test_warning_when_neither_method_was_called(caplog):
    # tf-keras 2.21 logs it (tf_logging.warning), with an example and a link
    v = tf.Variable(1.0)
    lso = LSO(SGD(0.1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a log line, not a Python warning
        (msg,) = _logged(caplog, lambda: lso.apply_gradients([(tf.constant(1.0), v)]))
    assert msg.startswith("You forgot to call LossScaleOptimizer.get_scaled_loss() and "
                          "LossScaleOptimizer.get_unscaled_gradients() before calling "
                          "LossScaleOptimizer.apply_gradients(). This will likely result in "
                          "worse model quality, so please call them in the correct places! "
                          "For example:\n    with tf.GradientTape() as tape:\n")
    assert msg.endswith("    opt.apply_gradients([(grads, var)])\nFor more information, see "
                        "https://www.tensorflow.org/api_docs/python/tf/tf_keras/"
                        "mixed_precision/LossScaleOptimizer")


def test_warning_when_one_method_was_not_called(caplog):
    v = tf.Variable(1.0)
    lso = LSO(SGD(0.1))
    lso.get_scaled_loss(tf.constant(1.0))
    (msg,) = _logged(caplog, lambda: lso.apply_gradients([(tf.constant(1.0), v)]))
    assert msg.startswith("You forgot to call LossScaleOptimizer.get_unscaled_gradients() "
                          "before calling LossScaleOptimizer.apply_gradients() (you did call "
                          "get_scaled_loss() however).")
    caplog.clear()
    lso = LSO(SGD(0.1))
    lso.get_unscaled_gradients([tf.constant(1.0)])
    (msg,) = _logged(caplog, lambda: lso.apply_gradients([(tf.constant(1.0), v)]))
    assert msg.startswith("You forgot to call LossScaleOptimizer.get_scaled_loss() before "
                          "calling LossScaleOptimizer.apply_gradients() (you did call "
                          "get_unscaled_gradients() however).")


def test_no_warning_in_the_guide_loop():
    v = tf.Variable(1.0)
    lso = LSO(SGD(0.1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _step(lso, v, 1.0)
        lso.minimize(lambda: v * v, [v])


# --------------------------------------------------------------------------- delegation

def test_hyperparameter_delegation():
    inner = keras.optimizers.Adam(0.01, beta_1=0.5)
    lso = LSO(inner)
    assert lso.learning_rate is inner.learning_rate and lso.lr is inner.learning_rate
    np.testing.assert_allclose(float(lso.beta_1), 0.5)
    lso.learning_rate = 0.2
    np.testing.assert_allclose(float(inner.learning_rate), 0.2, rtol=1e-6)
    lso.beta_1 = 0.25
    np.testing.assert_allclose(float(inner.beta_1), 0.25)
    it = lso.iterations
    assert it is inner.iterations
    lso.iterations = 5
    assert int(inner.iterations) == 5


def test_non_hyperparameters_are_not_delegated():
    inner = SGD(0.1, momentum=0.5, nesterov=True)
    lso = LSO(inner)
    # tf-keras 2.21's message names the class LossScaleOptimizer(...) makes
    with pytest.raises(AttributeError, match="'LossScaleOptimizerV3' object has no attribute "
                                             "'nesterov'"):
        lso.nesterov
    lso.nesterov = False  # sets it on the wrapper only
    assert inner.nesterov is True and lso.nesterov is False


def test_clipping_attributes_delegate():
    lso = LSO(SGD(clipnorm=2.0, clipvalue=3.0))
    assert lso.clipnorm == 2.0 and lso.clipvalue == 3.0 and lso.global_clipnorm is None


def test_weights_and_slots_delegate():
    v = tf.Variable([1.0, 2.0])
    inner = SGD(0.1, momentum=0.9)
    lso = LSO(inner, initial_scale=4)
    _step(lso, v, [1.0, 1.0])
    assert lso.get_slot_names() == ["momentum"]
    assert lso.get_slot(v, "momentum") is inner.get_slot(v, "momentum")
    w = lso.get_weights()
    # the inner optimizer's weights, then the loss scale and its counter
    assert len(w) == len(inner.get_weights()) + 2
    assert float(w[-2]) == 4.0 and int(w[-1]) == 1
    lso2 = LSO(SGD(0.1, momentum=0.9), initial_scale=4)
    _step(lso2, tf.Variable([0.0, 0.0]), [0.0, 0.0])
    lso2.set_weights(w)
    for a, b in zip(lso.get_weights(), lso2.get_weights()):
        np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------------------- configs

def test_config_round_trip():
    lso = LSO(keras.optimizers.Adam(0.25), initial_scale=64, dynamic_growth_steps=11)
    config = lso.get_config()
    assert set(config) == {"inner_optimizer", "dynamic", "initial_scale",
                           "dynamic_growth_steps"}
    assert config["dynamic"] is True and config["initial_scale"] == 64.0
    assert config["dynamic_growth_steps"] == 11
    assert config["inner_optimizer"]["class_name"] == "Adam"
    again = LSO.from_config(config)
    assert again.get_config() == config
    fixed = LSO(SGD(), dynamic=False, initial_scale=5)
    fc = fixed.get_config()
    assert fc["dynamic"] is False and fc["dynamic_growth_steps"] is None
    assert LSO.from_config(fc).get_config() == fc
    ser = keras.optimizers.serialize(lso)
    # tf-keras 2.21: LossScaleOptimizer(opt) is a LossScaleOptimizerV3, serialized as such
    assert ser["class_name"] == "LossScaleOptimizerV3"
    assert ser["module"] == "tf_keras.src.mixed_precision.loss_scale_optimizer"
    assert ser["config"]["inner_optimizer"]["module"] == "keras.optimizers"
    again = keras.optimizers.deserialize(ser)
    assert type(again).__name__ == "LossScaleOptimizerV3"
    assert again.get_config() == config


def test_from_tf_2_3_config():
    inner = keras.optimizers.serialize(SGD(0.5))
    lso = LSO.from_config({"optimizer": inner, "loss_scale": {
        "class_name": "FixedLossScale", "config": {"loss_scale_value": 12.0}}})
    assert lso.dynamic is False and float(lso.loss_scale) == 12.0
    lso = LSO.from_config({"optimizer": inner, "loss_scale": {
        "class_name": "DynamicLossScale",
        "config": {"initial_loss_scale": 256.0, "increment_period": 9, "multiplier": 2.0}}})
    assert lso.dynamic and lso.initial_scale == 256.0 and lso.dynamic_growth_steps == 9
    np.testing.assert_allclose(float(lso.learning_rate), 0.5)
    ser = {"class_name": "LossScaleOptimizerV1", "config": {"optimizer": inner, "loss_scale": {
        "class_name": "FixedLossScale", "config": {"loss_scale_value": 3.0}}}}
    assert float(keras.optimizers.deserialize(ser).loss_scale) == 3.0


def test_from_tf_2_3_config_with_multiplier_not_2():
    with pytest.raises(ValueError, match=r"Cannot deserialize LossScaleOptimizer with a "
                                         r"DynamicLossScale whose multiplier is not 2. Got "
                                         r"DynamicLossScale: DynamicLossScale\("):
        LSO.from_config({"optimizer": keras.optimizers.serialize(SGD()), "loss_scale": {
            "class_name": "DynamicLossScale",
            "config": {"initial_loss_scale": 2.0, "increment_period": 3, "multiplier": 3.0}}})


# --------------------------------------------------------------------------- experimental

def test_experimental_dynamic():
    opt = LSOV1(SGD(1.0), "dynamic")
    assert isinstance(opt.loss_scale, DynamicLossScale)
    assert float(opt.loss_scale()) == 32768.0
    v = tf.Variable([1.0])
    _step(opt, v, [np.nan])
    assert float(opt.loss_scale()) == 16384.0 and float(v.numpy()[0]) == 1.0
    _step(opt, v, [1.0])
    assert float(v.numpy()[0]) == 0.0


def test_experimental_number_and_object():
    opt = LSOV1(SGD(), 128)
    assert repr(opt.loss_scale) == "FixedLossScale(128.0)"
    ls = DynamicLossScale(initial_loss_scale=4, increment_period=1, multiplier=2)
    opt = LSOV1(SGD(1.0), ls)
    assert opt.loss_scale is ls
    _step(opt, tf.Variable([1.0]), [1.0])
    assert float(ls()) == 8.0
    fixed = LSOV1(SGD(1.0), FixedLossScale(2))
    v = tf.Variable([1.0])
    _step(fixed, v, [np.nan])  # FixedLossScale.update says apply, even for NaN
    assert np.isnan(v.numpy()[0])


def test_experimental_errors():
    with pytest.raises(ValueError, match="loss_scale cannot be None."):
        LSOV1(SGD(), None)
    with pytest.raises(ValueError, match='"optimizer" must be an instance of OptimizerV2, but '
                                         "got: 1"):
        LSOV1(1, "dynamic")
    with pytest.raises(ValueError, match="LossScaleOptimizer does not support wrapping "
                                         "optimizers with a clipnorm. Optimizer .* has clipnorm "
                                         "1.0"):
        LSOV1(SGD(clipnorm=1.0), "dynamic")
    with pytest.raises(ValueError, match="LossScaleOptimizer does not support wrapping "
                                         "optimizers with a clipvalue"):
        LSOV1(SGD(clipvalue=1.0), "dynamic")
    with pytest.raises(ValueError, match="Could not interpret loss scale identifier"):
        LSOV1(SGD(), "static")
    with pytest.raises(TypeError, match="cannot wrap another LossScaleOptimizer"):
        LSOV1(LSO(SGD()), "dynamic")


def test_experimental_config_round_trip():
    opt = LSOV1(SGD(0.5), DynamicLossScale(initial_loss_scale=16, increment_period=4))
    config = opt.get_config()
    assert config["loss_scale"] == {"class_name": "DynamicLossScale", "config": {
        "initial_loss_scale": 16.0, "increment_period": 4, "multiplier": 2.0}}
    again = LSOV1.from_config(config)
    assert again.get_config() == config


# --------------------------------------------------------------------------- float16 fact

def test_float16_gradient_underflow_is_rescued_by_scaling():
    """A float16 computation whose weight gradient (~1e-8) underflows to 0 unscaled
    survives with a loss scale of 2**15, unscaled in float32."""
    from mixprec._variable import autocast_scope

    w = tf.Variable(1.0)
    w._autocast = True  # a layer weight under mixed_float16
    a = tf.constant(1e-4, "float16")

    def loss_fn():
        with autocast_scope("float16"):
            return (w * a) * a  # d loss / dw = a * a ~ 1e-8 < 2**-25

    with tf.GradientTape() as t:
        loss = loss_fn()
    g = t.gradient(loss, w)
    assert g.dtype == tf.float32 and float(g) == 0.0  # underflowed in float16

    lso = LSO(SGD(1.0), initial_scale=2 ** 15)
    with tf.GradientTape() as t:
        loss = loss_fn()
        scaled = lso.get_scaled_loss(loss)
    (sg,) = lso.get_unscaled_gradients(t.gradient(scaled, [w]))
    assert sg.dtype == tf.float32
    expected = float(np.float16(1e-4)) ** 2
    np.testing.assert_allclose(float(sg), expected, rtol=2e-3)


def test_a_good_step_counter_at_the_int64_maximum_grows_the_scale():
    # the rule computed good + 1 (UBSan: signed overflow); the counter accepts any int64,
    # and load_weights can restore one
    opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.1))
    v = tf.Variable([1.0, 2.0])
    opt.dynamic_counter.assign(2**63 - 1)
    before = float(opt.loss_scale)
    with tf.GradientTape() as t:
        loss = opt.get_scaled_loss(tf.reduce_sum(v * v))
    opt.apply_gradients(zip(opt.get_unscaled_gradients(t.gradient(loss, [v])), [v]))
    assert float(opt.loss_scale) == 2 * before and int(opt.dynamic_counter) == 0
