"""keras.regularizers and the losses they put in ``layer.losses``/``model.losses``.

What is checked (semantics.md, last section; tf-keras 2.21): factor defaults ('l2' is
L2(0.01) stored as float32, L1L2() is 0/0, the string 'l1_l2' is 0.01/0.01), configs and
lookup, weight losses recomputed from the float32 variable on every access (float32 under
mixed policies), activity losses per call divided by the batch size, ``fit``/``evaluate``
adding ``sum(model.losses)`` to the logged loss, and constraints applied after updates.
"""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.keras import layers, mixed_precision, regularizers
from mixprec.testing.tolerances import TOLERANCE

RTOL, ATOL = TOLERANCE[("float32", "reduction")]


def test_defaults_and_float32_factors():
    assert float(regularizers.L2().l2) == pytest.approx(0.01)
    assert regularizers.L2().get_config() == {"l2": 0.009999999776482582}
    assert regularizers.L1().get_config() == {"l1": 0.009999999776482582}
    assert regularizers.L1L2().get_config() == {"l1": 0.0, "l2": 0.0}
    assert regularizers.l1_l2().get_config() == {"l1": 0.009999999776482582,
                                                  "l2": 0.009999999776482582}
    assert regularizers.get("l1_l2").get_config() == regularizers.l1_l2().get_config()
    assert isinstance(regularizers.get("l2"), regularizers.L2)
    assert isinstance(regularizers.get("l1"), regularizers.L1)
    assert isinstance(regularizers.get("L1L2"), regularizers.L1L2)
    assert regularizers.l2 is regularizers.L2 and regularizers.l1 is regularizers.L1
    assert regularizers.L2(l=0.5).get_config() == {"l2": 0.5}  # the old 'l' spelling
    assert regularizers.get(None) is None


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "x", [0.1]])
def test_bad_factors(bad):
    with pytest.raises(ValueError, match="not a valid regularization penalty number"):
        regularizers.L2(bad)


def test_bad_identifiers():
    with pytest.raises(TypeError, match="Argument\\(s\\) not recognized"):
        regularizers.L2(0.1, foo=1)
    with pytest.raises(ValueError, match="Unknown regularizer"):
        regularizers.get("l3")
    with pytest.raises(ValueError, match="Could not interpret regularizer identifier"):
        regularizers.get(42)
    with pytest.raises(NotImplementedError):
        regularizers.Regularizer().get_config()


def test_serialize_round_trip():
    r = regularizers.L1L2(l1=0.25, l2=0.5)
    s = regularizers.serialize(r)
    assert s == {"module": "keras.regularizers", "class_name": "L1L2",
                 "config": {"l1": 0.25, "l2": 0.5}, "registered_name": None}
    back = regularizers.deserialize(s)
    assert isinstance(back, regularizers.L1L2) and back.get_config() == r.get_config()
    assert regularizers.get({"class_name": "L2", "config": {"l2": 0.125}}).get_config() == \
        {"l2": 0.125}
    assert regularizers.serialize(None) is None


def test_values_against_numpy():
    x = np.random.default_rng(1).standard_normal((4, 5)).astype("float32")
    t = tf.constant(x)
    np.testing.assert_allclose(float(regularizers.L1(0.3)(t)), 0.3 * np.abs(x).sum(),
                               rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(float(regularizers.L2(0.2)(t)), 0.2 * (x ** 2).sum(),
                               rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(float(regularizers.L1L2(0.3, 0.2)(t)),
                               0.3 * np.abs(x).sum() + 0.2 * (x ** 2).sum(), rtol=RTOL,
                               atol=ATOL)
    assert float(regularizers.L1L2()(t)) == 0.0


def test_dense_weight_losses_recomputed_on_access():
    d = layers.Dense(3, kernel_regularizer=regularizers.L2(0.5), bias_regularizer="l1",
                     bias_initializer="ones")
    d.build((None, 4))
    assert len(d.losses) == 2
    k = d.kernel.numpy()
    np.testing.assert_allclose(float(d.losses[0]), 0.5 * (k.astype(np.float64) ** 2).sum(),
                               rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(float(d.losses[1]), 0.01 * 3, rtol=RTOL)
    d.kernel.assign(np.zeros((4, 3), "float32"))
    assert float(d.losses[0]) == 0.0  # recomputed from the variable, not cached


def test_custom_callable_regularizer_gets_the_variable():
    seen = []

    def reg(w):
        seen.append(w)
        return tf.reduce_sum(w) * 0.0 + 7.0

    d = layers.Dense(2, kernel_regularizer=reg)
    d.build((None, 3))
    assert [float(v) for v in d.losses] == [7.0]
    assert seen[-1] is d.kernel


def test_losses_float32_under_mixed_policy():
    mixed_precision.set_global_policy("mixed_float16")
    d = layers.Dense(3, kernel_regularizer="l2", activity_regularizer=regularizers.L2(1.0))
    y = d(np.ones((2, 4), "float32"))
    assert y.dtype == tf.float16
    weight_loss, activity = d.losses[1], d.losses[0]
    assert weight_loss.dtype == tf.float32  # computed from the float32 variable
    k = d.kernel.numpy().astype(np.float64)
    np.testing.assert_allclose(float(weight_loss), 0.01 * (k ** 2).sum(), rtol=1e-5)
    yy = y.numpy().astype(np.float64)
    np.testing.assert_allclose(float(activity), (yy ** 2).sum() / 2,
                               rtol=TOLERANCE[("float16", "reduction")][0] * 4)


def test_activity_losses_cleared_each_call():
    d = layers.Dense(2, activity_regularizer="l1", kernel_initializer="ones")
    d(np.ones((2, 3), "float32"))
    d(np.ones((4, 3), "float32"))
    assert len(d.losses) == 1  # only the last call's
    np.testing.assert_allclose(float(d.losses[0]), 0.01 * 3 * 2 * 4 / 4, rtol=1e-6)


def test_add_loss_tensor_and_callable():
    layer = layers.Dense(1)
    layer.add_loss(lambda: tf.constant(2.0))
    layer.add_loss(3.0)
    assert sorted(float(v) for v in layer.losses) == [2.0, 3.0]
    assert all(v.dtype == tf.float32 for v in layer.losses)


def test_model_losses_collects_nested_layers_and_config():
    m = keras.Sequential([keras.Input((4,)),
                          layers.Dense(3, kernel_regularizer=regularizers.L1L2(0.1, 0.2)),
                          layers.Dense(2, kernel_regularizer="l2")])
    assert len(m.losses) == 2
    cfg = m.layers[0].get_config()
    assert cfg["kernel_regularizer"]["class_name"] == "L1L2"
    assert cfg["bias_regularizer"] is None and cfg["activity_regularizer"] is None
    clone = layers.Dense.from_config(cfg)
    assert isinstance(clone.kernel_regularizer, regularizers.L1L2)
    assert clone.get_config()["kernel_regularizer"] == cfg["kernel_regularizer"]


def _reg_model(factor):
    tf.random.set_seed(0)
    return keras.Sequential([keras.Input((8,)),
                             layers.Dense(16, activation="relu",
                                          kernel_regularizer=regularizers.L2(factor)),
                             layers.Dense(1, kernel_regularizer=regularizers.L2(factor))])


def test_evaluate_and_train_on_batch_include_regularization():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 8)).astype("float32")
    y = rng.standard_normal((32, 1)).astype("float32")
    m = _reg_model(0.1)
    m.compile("sgd", "mse")
    pred = m.predict(x, verbose=0).astype(np.float64)
    mse = ((pred - y) ** 2).mean()
    reg = sum(float(v) for v in m.losses)
    assert reg > 0
    np.testing.assert_allclose(m.evaluate(x, y, verbose=0), mse + reg, rtol=1e-5)
    np.testing.assert_allclose(m.test_on_batch(x, y), mse + reg, rtol=1e-5)
    before = [w.numpy() for w in m.trainable_weights]
    loss = m.train_on_batch(x, y)
    np.testing.assert_allclose(loss, mse + reg, rtol=1e-5)  # the logged loss includes it
    assert any(not np.array_equal(a, w.numpy()) for a, w in zip(before, m.trainable_weights))


def test_fit_with_huge_l2_shrinks_weights():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 8)).astype("float32")
    y = rng.standard_normal((64, 1)).astype("float32")
    norms = []
    for factor in (0.0, 10.0):
        m = _reg_model(factor)
        m.compile(keras.optimizers.SGD(0.01), "mse")
        m.fit(x, y, epochs=5, batch_size=16, verbose=0)
        norms.append(np.abs(m.layers[0].kernel.numpy()).sum())
    assert norms[1] < 0.2 * norms[0]


def test_kernel_constraint_applied_after_update():
    m = keras.Sequential([keras.Input((3,)),
                          layers.Dense(2, kernel_constraint=keras.constraints.NonNeg(),
                                       kernel_initializer="ones")])
    m.compile(keras.optimizers.SGD(10.0), "mse")
    m.train_on_batch(np.ones((4, 3), "float32"), -100 * np.ones((4, 2), "float32"))
    assert (m.layers[0].kernel.numpy() >= 0).all()
    assert m.layers[0].get_config()["kernel_constraint"]["class_name"] == "NonNeg"


def test_orthogonal_regularizer_and_radial_constraint_match_tf_keras():
    import mixprec as tf
    from mixprec import keras
    w = tf.constant(np.arange(12, dtype="float32").reshape(3, 4) - 5)
    rows = keras.regularizers.OrthogonalRegularizer(0.1, mode="rows")
    cols = keras.regularizers.OrthogonalRegularizer(0.1, mode="columns")
    rtol, atol = TOLERANCE[("float32", "reduction")]
    np.testing.assert_allclose(float(rows(w)), 0.052617643028497696, rtol=rtol, atol=atol)
    np.testing.assert_allclose(float(cols(w)), 0.08707685023546219, rtol=rtol, atol=atol)
    assert keras.regularizers.serialize(rows) == {
        "module": "keras.regularizers", "class_name": "OrthogonalRegularizer",
        "config": {"factor": 0.10000000149011612, "mode": "rows"}, "registered_name": None}
    with pytest.raises(ValueError, match=r'Expected one of \{"rows", "columns"\}'):
        keras.regularizers.OrthogonalRegularizer(mode="x")
    with pytest.raises(ValueError, match="must have rank 2"):
        rows(tf.zeros([2, 2, 2]))
    k = tf.constant(np.arange(18, dtype="float32").reshape(3, 3, 2, 1))
    out = keras.constraints.RadialConstraint()(k).numpy()[..., 0, 0]
    assert out.tolist() == [[8.0, 8.0, 8.0], [8.0, 0.0, 8.0], [8.0, 8.0, 8.0]]
    k = tf.constant(np.arange(32, dtype="float32").reshape(4, 4, 1, 2))
    out = keras.constraints.get("radial_constraint")(k).numpy()[..., 0, 1]
    assert out.tolist() == [[31.0] * 4, [31.0, 11.0, 11.0, 31.0], [31.0, 11.0, 11.0, 31.0],
                            [31.0] * 4]
    with pytest.raises(ValueError, match="must have rank 4"):
        keras.constraints.RadialConstraint()(tf.zeros([3, 3]))
