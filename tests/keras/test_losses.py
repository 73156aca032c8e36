"""Losses, as classes and functions: values against NumPy float64 references, from_logits,
reductions, sample weights, and the fused softmax-cross-entropy path (used when the
prediction comes from a softmax) agreeing with the probability path."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.keras import layers, losses

RNG = np.random.default_rng(7)
EPS = 1e-7  # keras.backend.epsilon()

LOGITS = (RNG.standard_normal((6, 5)) * 2).astype(np.float32)
LABELS = RNG.integers(0, 5, 6)
ONEHOT = np.eye(5, dtype=np.float32)[LABELS]


def softmax64(z):
    z = np.asarray(z, np.float64)
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def log_softmax64(z):
    z = np.asarray(z, np.float64)
    m = z.max(-1, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(-1, keepdims=True))


def probs_of(logits):
    """A softmax output (remembers its logits: losses take the fused path)."""
    return layers.Activation("softmax")(logits)


def close(got, want, tol=1e-5):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=tol, atol=tol)


# --------------------------------------------------------------------------- sparse CE


def test_sparse_categorical_crossentropy_from_logits_and_probabilities():
    want = -log_softmax64(LOGITS)[np.arange(6), LABELS]
    close(losses.sparse_categorical_crossentropy(LABELS, LOGITS, from_logits=True), want)
    close(losses.sparse_categorical_crossentropy(LABELS, probs_of(LOGITS)), want)
    p = softmax64(LOGITS).astype(np.float32)  # plain probabilities: the clipped log path
    close(losses.sparse_categorical_crossentropy(LABELS, p), want)
    close(losses.SparseCategoricalCrossentropy(from_logits=True)(LABELS, LOGITS), want.mean())
    close(losses.SparseCategoricalCrossentropy()(LABELS, p), want.mean())


def test_sparse_labels_shapes_and_dtypes():
    want = -log_softmax64(LOGITS)[np.arange(6), LABELS].mean()
    fn = losses.SparseCategoricalCrossentropy(from_logits=True)
    for labels in (LABELS, LABELS[:, None], LABELS.astype(np.float32), LABELS.astype(np.int32),
                   tf.constant(LABELS.astype(np.int64))):
        close(fn(labels, LOGITS), want)


def test_sparse_probability_path_normalizes_like_categorical():
    """tf-keras normalizes probabilities in both cross-entropies (sparse: through a
    log-softmax of the clipped log probabilities)."""
    p = np.array([[0.2, 0.2], [0.3, 0.1]], np.float32)  # rows do not sum to 1
    y = np.array([0, 1])
    want = -np.log((p / p.sum(-1, keepdims=True))[np.arange(2), y])
    close(losses.sparse_categorical_crossentropy(y, p), want)
    close(losses.categorical_crossentropy(np.eye(2)[y], p), want)


def test_sparse_probability_path_gradient():
    """d/dp of -log(p[y] / sum(p)) = 1 / sum(p) - onehot / p[y], inside the clip range."""
    p = tf.constant([[0.2, 0.2], [0.3, 0.1]])
    with tf.GradientTape() as tape:
        tape.watch(p)
        loss = losses.sparse_categorical_crossentropy([0, 1], p)
    close(tape.gradient(loss, p), [[1 / 0.4 - 1 / 0.2, 1 / 0.4], [1 / 0.4, 1 / 0.4 - 1 / 0.1]])


def test_fused_path_is_stable_where_the_probability_path_clips():
    logits = np.array([[100.0, -100.0, 0.0], [0.0, 0.0, 0.0]], np.float32)
    y = np.array([1, 2])
    fused = losses.sparse_categorical_crossentropy(y, probs_of(logits))
    close(fused, [200.0, np.log(3.0)])  # the exact value: no clipping to log(1e-7)
    probs = np.asarray(probs_of(logits))
    clipped = losses.sparse_categorical_crossentropy(y, probs)
    close(clipped, [-np.log(EPS), np.log(3.0)], tol=1e-4)


def test_ignore_class():
    y = np.array([0, 1, -1, 2])
    z = LOGITS[:4, :3]
    got = losses.sparse_categorical_crossentropy(y, z, from_logits=True, ignore_class=-1)
    ref = -log_softmax64(z)[np.arange(4), np.where(y < 0, 0, y)]
    ref[2] = 0.0
    close(got, ref)


@pytest.mark.parametrize("labels", [[5, 0], [0, -1]])
def test_out_of_range_labels_raise_on_every_path(labels):
    """As TensorFlow on the CPU: the probability path is the fused op on log(clip(p)) too,
    so it checks the labels (a one-hot of a bad label was a silent loss of 0)."""
    z = LOGITS[:2, :2]
    bad = max(labels) if max(labels) >= 2 else min(labels)
    msg = r"label value of %d which is outside the valid range of \[0, 2\)" % bad
    for pred, from_logits in ((z, True), (probs_of(z), False), (softmax64(z), False)):
        with pytest.raises(ValueError, match=msg):
            losses.sparse_categorical_crossentropy(labels, pred, from_logits=from_logits)
    model = keras.Sequential([layers.Dense(2)])
    model.compile("sgd", "sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match="outside the valid range"):
        model.fit(np.ones((2, 3), np.float32), np.array(labels), verbose=0)


def test_one_hot_labels_to_a_sparse_loss_say_so():
    onehot = np.eye(10, dtype=np.float32)[np.arange(32) % 10]
    msg = r"labels of shape \[32,10\] have the logits' shape: they look one-hot.*integer " \
          r"class ids of shape \[32\]\. Use categorical_crossentropy"
    with pytest.raises(tf.errors.InvalidArgumentError, match=msg):
        losses.SparseCategoricalCrossentropy(from_logits=True)(onehot, np.zeros((32, 10), "f"))
    with pytest.raises(tf.errors.InvalidArgumentError, match=msg):
        tf.nn.sparse_softmax_cross_entropy_with_logits(onehot.astype(np.int32),
                                                       np.zeros((32, 10), "f"))
    model = keras.Sequential([layers.Dense(10)])
    model.compile("sgd", "sparse_categorical_crossentropy")
    with pytest.raises(tf.errors.InvalidArgumentError, match="look one-hot"):
        model.fit(np.zeros((32, 4), "f"), onehot, verbose=0)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_label_raises_as_an_out_of_range_label(bad):
    """TensorFlow casts a NaN label to INT_MIN and refuses it; it must not train as class 0."""
    y = np.zeros(4, np.float32)
    y[1] = bad
    for pred, from_logits in ((LOGITS[:4], True), (softmax64(LOGITS[:4]), False)):
        with pytest.raises(tf.errors.InvalidArgumentError, match="outside the valid range"):
            losses.sparse_categorical_crossentropy(y, pred, from_logits=from_logits)
    model = keras.Sequential([layers.Dense(3)])
    model.compile("sgd", "sparse_categorical_crossentropy")
    with pytest.raises(tf.errors.InvalidArgumentError, match="outside the valid range"):
        model.fit(np.ones((4, 3), np.float32), y, verbose=0)


# --------------------------------------------------------------------------- categorical CE


def test_categorical_crossentropy():
    want = -(ONEHOT * log_softmax64(LOGITS)).sum(-1)
    close(losses.categorical_crossentropy(ONEHOT, LOGITS, from_logits=True), want)
    close(losses.categorical_crossentropy(ONEHOT, probs_of(LOGITS)), want)
    close(losses.categorical_crossentropy(ONEHOT, softmax64(LOGITS).astype(np.float32)), want)
    close(losses.CategoricalCrossentropy(from_logits=True)(ONEHOT, LOGITS), want.mean())


def test_categorical_soft_labels_and_label_smoothing():
    soft = softmax64(RNG.standard_normal((6, 5))).astype(np.float32)
    close(losses.categorical_crossentropy(soft, LOGITS, from_logits=True),
          -(soft * log_softmax64(LOGITS)).sum(-1))
    smooth = ONEHOT * 0.9 + 0.1 / 5
    close(losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1)(ONEHOT, LOGITS),
          -(smooth * log_softmax64(LOGITS)).sum(-1).mean())


# --------------------------------------------------------------------------- binary CE


def bce64(y, p):
    """tf-keras' backend.binary_crossentropy on probabilities: clip (in float32, as the
    model's dtype), then log(p + eps) and log(1 - p + eps)."""
    p = np.clip(np.asarray(p, np.float32), np.float32(EPS), np.float32(1 - EPS)).astype(np.float64)
    return -(y * np.log(p + EPS) + (1 - y) * np.log(1 - p + EPS)).mean(-1)


def test_binary_crossentropy():
    z = LOGITS[:, :3]
    y = (RNG.random((6, 3)) > 0.5).astype(np.float32)
    p = 1 / (1 + np.exp(-z.astype(np.float64)))
    exact = -(y * np.log(p) + (1 - y) * np.log(1 - p)).mean(-1)
    close(losses.binary_crossentropy(y, z, from_logits=True), exact)
    close(losses.binary_crossentropy(y, p.astype(np.float32)), bce64(y, p.astype(np.float32)))
    close(losses.BinaryCrossentropy(from_logits=True)(y, z), exact.mean())
    close(losses.BinaryCrossentropy(from_logits=True, label_smoothing=0.2)(y, z),
          (-((y * 0.8 + 0.1) * np.log(p) + (1 - (y * 0.8 + 0.1)) * np.log(1 - p))).mean())


def test_binary_crossentropy_saturated_probabilities_match_tf_keras():
    y = np.array([[1.0, 0.0]], np.float32)
    p = np.array([[0.0, 1.0]], np.float32)
    close(losses.binary_crossentropy(y, p), bce64(y, p), tol=1e-4)
    # from logits it stays exact for large logits
    close(losses.binary_crossentropy(y, np.array([[-60.0, 60.0]], np.float32), from_logits=True),
          [60.0])


# --------------------------------------------------------------------------- MSE


def test_mean_squared_error():
    a = RNG.standard_normal((4, 3)).astype(np.float32)
    b = RNG.standard_normal((4, 3)).astype(np.float32)
    want = ((a.astype(np.float64) - b) ** 2).mean(-1)
    for fn in (losses.mean_squared_error, losses.mse, losses.MSE, losses.get("mse"),
               losses.get("mean_squared_error")):
        close(fn(a, b), want)
    close(losses.MeanSquaredError()(a, b), want.mean())
    close(losses.mean_absolute_error(a, b), np.abs(a.astype(np.float64) - b).mean(-1))


# --------------------------------------------------------------------------- reductions


@pytest.mark.parametrize("cls,args,per_example", [
    (losses.SparseCategoricalCrossentropy, (LABELS, LOGITS),
     -log_softmax64(LOGITS)[np.arange(6), LABELS]),
    (losses.CategoricalCrossentropy, (ONEHOT, LOGITS), -(ONEHOT * log_softmax64(LOGITS)).sum(-1)),
    (losses.BinaryCrossentropy, (ONEHOT, LOGITS),
     (np.maximum(LOGITS, 0) - LOGITS * ONEHOT + np.log1p(np.exp(-np.abs(LOGITS)))).mean(-1)),
    (losses.MeanSquaredError, (ONEHOT, LOGITS),
     ((ONEHOT - LOGITS.astype(np.float64)) ** 2).mean(-1)),
])
def test_reductions_and_sample_weights(cls, args, per_example):
    kw = {} if cls is losses.MeanSquaredError else {"from_logits": True}
    sw = np.array([1.0, 0.0, 2.0, 0.5, 1.0, 3.0], np.float32)
    r = losses.Reduction
    close(cls(reduction=r.NONE, **kw)(*args), per_example)
    close(cls(reduction=r.SUM, **kw)(*args), per_example.sum())
    close(cls(reduction=r.SUM_OVER_BATCH_SIZE, **kw)(*args), per_example.mean())
    close(cls(reduction=r.AUTO, **kw)(*args), per_example.mean())
    close(cls(reduction=r.NONE, **kw)(*args, sample_weight=sw), per_example * sw)
    close(cls(reduction=r.SUM, **kw)(*args, sample_weight=sw), (per_example * sw).sum())
    # SUM_OVER_BATCH_SIZE divides by the number of examples, not by sum(sample_weight)
    close(cls(**kw)(*args, sample_weight=sw), (per_example * sw).sum() / 6)
    close(cls(**kw)(*args, sample_weight=sw[:, None]), (per_example * sw).sum() / 6)
    close(cls(**kw)(*args, sample_weight=2.0), per_example.mean() * 2)
    assert cls(reduction=r.NONE, **kw)(*args).shape == (6,)


def test_reduction_validation_and_names():
    with pytest.raises(ValueError, match="Invalid Reduction Key"):
        losses.SparseCategoricalCrossentropy(reduction="mean")
    assert sorted(losses.Reduction.all()) == ["auto", "none", "sum", "sum_over_batch_size"]
    assert losses.SparseCategoricalCrossentropy().name == "sparse_categorical_crossentropy"
    assert losses.MeanSquaredError().name == "mean_squared_error"
    cfg = losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1).get_config()
    assert cfg["from_logits"] is True and cfg["label_smoothing"] == 0.1
    again = losses.deserialize(losses.serialize(losses.BinaryCrossentropy(from_logits=True)))
    assert isinstance(again, losses.BinaryCrossentropy) and again.get_config()["from_logits"]


@pytest.mark.parametrize("name", ["sparse_categorical_crossentropy", "categorical_crossentropy",
                                  "binary_crossentropy", "mse", "mean_squared_error",
                                  "SparseCategoricalCrossentropy"])
def test_get_by_name(name):
    assert callable(losses.get(name))


def test_get_errors():
    with pytest.raises(ValueError, match="Unknown loss function"):
        losses.get("nope")
    with pytest.raises(ValueError):
        losses.get(3)
    assert losses.get(None) is None


# --------------------------------------------------------------------------- dtypes, gradients


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_logits_are_computed_stably(dtype):
    """float16/bfloat16 logits: the loss keeps their dtype (as TensorFlow) but is computed
    in float32 inside the fused op and rounded once."""
    z = tf.cast(tf.constant(LOGITS), dtype)
    got = losses.sparse_categorical_crossentropy(LABELS, z, from_logits=True)
    assert got.dtype.name == dtype
    exact = -log_softmax64(np.asarray(z, np.float64))[np.arange(6), LABELS]
    want = tf.cast(tf.constant(exact.astype(np.float32)), dtype).numpy().astype(np.float64)
    np.testing.assert_array_equal(np.asarray(got, np.float64), want)


def test_float32_softmax_after_float16_logits_is_float32_and_exact():
    """The guide's model: float16 logits, a float32 softmax layer, the fused loss."""
    z16 = tf.cast(tf.constant(LOGITS * 10), "float16")
    probs = layers.Activation("softmax", dtype="float32")(z16)
    got = losses.SparseCategoricalCrossentropy()(LABELS, probs)
    assert got.dtype.name == "float32"
    close(got, (-log_softmax64(np.asarray(z16, np.float64))[np.arange(6), LABELS]).mean())


def test_fused_and_probability_paths_have_the_same_gradient():
    z = tf.constant(LOGITS)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(z)
        fused = losses.SparseCategoricalCrossentropy()(LABELS, probs_of(z))
        plain = losses.SparseCategoricalCrossentropy()(LABELS, tf.nn.softmax(z))
        logits = losses.SparseCategoricalCrossentropy(from_logits=True)(LABELS, z)
    want = (softmax64(LOGITS) - np.eye(5)[LABELS]) / 6
    for loss in (fused, plain, logits):
        close(tape.gradient(loss, z), want, tol=1e-5)


def test_compiled_loss_objects_and_functions():
    inputs = keras.Input(shape=(5,))
    model = keras.Model(inputs, layers.Activation("softmax")(inputs))
    x = LOGITS
    for loss in ("sparse_categorical_crossentropy",
                 losses.SparseCategoricalCrossentropy(),
                 losses.sparse_categorical_crossentropy):
        model.compile("sgd", loss)
        close(model.evaluate(x, LABELS, verbose=0),
              (-log_softmax64(x)[np.arange(6), LABELS]).mean())
    model.compile("sgd", "categorical_crossentropy")
    close(model.evaluate(x, ONEHOT, verbose=0), (-(ONEHOT * log_softmax64(x)).sum(-1)).mean())
    model.compile("sgd", "binary_crossentropy")
    assert np.isfinite(model.evaluate(x, ONEHOT, verbose=0))
    model.compile("sgd", "mse")
    close(model.evaluate(x, ONEHOT, verbose=0), ((softmax64(x) - ONEHOT) ** 2).mean())


@pytest.mark.parametrize("loss", ["sparse_categorical_crossentropy",
                                  "categorical_crossentropy"])
def test_compiled_model_ending_in_softmax_uses_the_fused_op(loss):
    """Model.evaluate/fit on a softmax output: the exact loss (200), not the clipped one."""
    inputs = keras.Input(shape=(3,))
    model = keras.Model(inputs, layers.Activation("softmax", dtype="float32")(inputs))
    model.compile("sgd", loss)
    x = np.array([[100.0, -100.0, 0.0]], np.float32)
    y = np.array([1]) if loss.startswith("sparse") else np.array([[0.0, 1.0, 0.0]], np.float32)
    close(model.evaluate(x, y, verbose=0), 200.0)


def test_per_sample_weights_weigh_whole_rows_of_sequence_losses():
    # (N,) weights against (N, T) per-example losses expand to (N, 1), as tf-keras'
    # squeeze_or_expand_dimensions; they used to broadcast along T (wrong when T == N,
    # an incompatible-shapes error otherwise)
    rng = np.random.default_rng(0)
    for t in (4, 5):
        y, p = rng.random((4, t, 2), dtype=np.float32), rng.random((4, t, 2), dtype=np.float32)
        sw = np.array([1.0, 0.0, 2.0, 0.0], np.float32)
        per = ((p - y) ** 2).mean(-1)
        got = losses.MeanSquaredError()(y, p, sample_weight=sw)
        np.testing.assert_allclose(float(got), (per * sw[:, None]).sum() / per.size, rtol=1e-5)


def test_sigmoid_output_losses_use_its_logits_as_tf_keras():
    # tf-keras 2.21 caches the logits of keras.activations.sigmoid/softmax on the output
    # (_keras_logits) and every cross-entropy then computes from them (values recorded
    # from TensorFlow 2.21): a saturated sigmoid costs its logit, not the clipped 15.4
    import warnings

    from mixprec.testing.tolerances import TOLERANCE

    rtol, atol = TOLERANCE[("float32", "reduction")]
    z = tf.constant([[-30.0], [2.0], [40.0]])
    s = keras.activations.sigmoid(z)
    labels = np.array([[1.0], [0.0], [0.0]])
    np.testing.assert_allclose(keras.losses.binary_crossentropy(labels, s).numpy(),
                               [30.0, 2.1269280910491943, 40.0], rtol=rtol, atol=atol)
    np.testing.assert_allclose(float(keras.losses.BinaryCrossentropy()(labels, s)),
                               24.042306900024414, rtol=rtol, atol=atol)
    np.testing.assert_allclose(float(keras.metrics.BinaryCrossentropy()(labels, s)),
                               24.042306900024414, rtol=rtol, atol=atol)
    plain = tf.constant(s.numpy())  # the same probabilities without logits: clipped
    np.testing.assert_allclose(float(keras.losses.BinaryCrossentropy()(labels, plain)),
                               10.961705207824707, rtol=rtol, atol=atol)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = float(keras.losses.BinaryCrossentropy(from_logits=True)(labels, s))
    np.testing.assert_allclose(value, 24.042306900024414, rtol=rtol, atol=atol)
    assert ['"`binary_crossentropy` received `from_logits=True`, but the `output` argument '
            'was produced by a Sigmoid activation and thus does not represent logits. Was '
            'this intended?'] == [str(w.message) for w in caught]
    # any cross-entropy takes the cached logits: a categorical one on a sigmoid output
    # computes a softmax cross-entropy of the Dense layer's logits
    x = tf.constant([[1.0, 2.0, 30.0], [0.0, 0.0, -5.0]])
    sg = keras.layers.Dense(3, activation="sigmoid", kernel_initializer="ones")(x)
    np.testing.assert_allclose(
        float(keras.losses.CategoricalCrossentropy()(np.array([[1.0, 0, 0], [0, 0, 1.0]]), sg)),
        1.0986123085021973, rtol=rtol, atol=atol)
    sm = keras.layers.Activation("softmax")(x)
    np.testing.assert_allclose(
        float(keras.losses.SparseCategoricalCrossentropy()(np.array([0, 2]), sm)),
        17.348255157470703, rtol=rtol, atol=atol)
