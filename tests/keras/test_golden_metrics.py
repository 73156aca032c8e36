"""tf-keras 2.21's threshold metrics (TruePositives…, AUC, the "X at Y" metrics, Precision and
Recall with top_k/class_id), score metrics (F1/FBeta, R2, the IoU family, MeanRelativeError,
MeanTensor, the hinge metrics) and the hinge and focal losses against the results recorded
from tf-keras 2.21 on the same data (golden/tf_metrics.npz, written by
golden/make_tf_metrics.py), update after update."""

import os
import sys

import numpy as np
import pytest

from mixprec import errors, keras
from mixprec.testing.tolerances import TOLERANCE

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
sys.path.insert(0, HERE)
from metric_cases import LOSSES, METRICS, data  # noqa: E402

GOLD = np.load(os.path.join(HERE, "tf_metrics.npz"))
D = data(np.random.default_rng(7))
SCOPE = {"M": keras.metrics, "Lo": keras.losses}
# sums of up to 40 weighted products, then ratios: float32 reduction tolerance
RTOL, ATOL = TOLERANCE[("float32", "reduction")]


@pytest.mark.parametrize("name", sorted(METRICS))
def test_metric_matches_tf_keras(name):
    src, calls = METRICS[name]
    m = eval(src, SCOPE)
    for i, (yt, yp, sw) in enumerate(calls):
        w = None if sw is None else D[sw]
        if yp is None:
            m.update_state(D[yt], sample_weight=w)
        else:
            m.update_state(D[yt], D[yp], sample_weight=w)
        want = GOLD["%s/%d" % (name, i)]
        got = np.asarray(m.result().numpy(), "float64")
        assert got.shape == want.shape, (name, i)
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg="%s/%d" % (name, i))
    m.reset_state()
    if not name.startswith("mean_tensor"):
        assert all(float(np.abs(v.numpy()).sum()) == 0 for v in m.variables)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_matches_tf_keras(name):
    src, yt, yp, sw = LOSSES[name]
    loss = eval(src, SCOPE)
    got = loss(D[yt], D[yp], sample_weight=None if sw is None else D[sw]).numpy()
    np.testing.assert_allclose(np.asarray(got, "float64"), GOLD[name], rtol=RTOL, atol=ATOL)


def test_losses_by_name_and_round_trip():
    for name in ("squared_hinge", "categorical_hinge", "binary_focal_crossentropy",
                 "categorical_focal_crossentropy"):
        assert keras.losses.get(name) is getattr(keras.losses, name)
        assert keras.metrics.get(name) is getattr(keras.metrics, name)
    loss = keras.losses.BinaryFocalCrossentropy(alpha=0.3, gamma=1.0)
    again = keras.losses.deserialize(keras.losses.serialize(loss))
    assert type(again) is type(loss) and again.get_config() == loss.get_config()
    for cls in ("AUC", "F1Score", "TruePositives", "FalseNegatives", "R2Score"):
        assert type(keras.metrics.get(cls)).__name__ == cls


def test_metric_configs_round_trip():
    for m in (keras.metrics.AUC(num_thresholds=10, curve="PR", multi_label=True, num_labels=3),
              keras.metrics.AUC(thresholds=[0.2, 0.7]),
              keras.metrics.PrecisionAtRecall(0.4, num_thresholds=11, class_id=1),
              keras.metrics.IoU(3, [1]), keras.metrics.BinaryIoU([0], 0.3),
              keras.metrics.FBetaScore("macro", 0.5), keras.metrics.R2Score(None, 2),
              keras.metrics.Precision(top_k=3, class_id=0)):
        again = type(m).from_config(m.get_config())
        assert again.get_config() | {"name": m.name} == m.get_config()


def test_gradients_flow_through_focal_losses():
    import mixprec as tf

    x = tf.Variable(D["lm"])
    with tf.GradientTape() as tape:
        loss = keras.losses.BinaryFocalCrossentropy(from_logits=True)(D["ym"], x)
    g = tape.gradient(loss, x)
    assert g is not None and np.isfinite(g.numpy()).all() and np.abs(g.numpy()).sum() > 0


def test_auc_in_fit_and_traced():
    import mixprec as tf

    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4)).astype("float32")
    y = (x[:, :1] + 0.3 * rng.standard_normal((64, 1)) > 0).astype("float32")
    model = keras.Sequential([keras.layers.Dense(1, activation="sigmoid")])
    model.compile("adam", "binary_crossentropy",
                  metrics=[keras.metrics.AUC(name="auc"), keras.metrics.TruePositives(),
                           keras.metrics.PrecisionAtRecall(0.5)])
    hist = model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    assert 0.0 <= hist.history["auc"][-1] <= 1.0
    m = keras.metrics.AUC()

    @tf.function
    def step(a, b):
        m.update_state(a, b)
        return m.result()

    eager = keras.metrics.AUC()
    for i in range(2):
        got = step(D["yb"], D["pb"] if i == 0 else D["pb2"])
        eager.update_state(D["yb"], D["pb"] if i == 0 else D["pb2"])
        np.testing.assert_allclose(got.numpy(), eager.result().numpy(), rtol=RTOL, atol=ATOL)
    assert step.experimental_get_tracing_count() == 1


def test_bad_arguments_raise_as_tf_keras():
    with pytest.raises(ValueError, match="num_thresholds"):
        keras.metrics.AUC(num_thresholds=1)
    with pytest.raises(ValueError, match="curve"):
        keras.metrics.AUC(curve="XY")
    with pytest.raises(ValueError, match="summation"):
        keras.metrics.AUC(summation_method="trapezoid")
    with pytest.raises(ValueError, match="num_labels"):
        keras.metrics.AUC(num_labels=3)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        keras.metrics.TruePositives(thresholds=[0.2, 1.5])
    with pytest.raises(ValueError, match="recall"):
        keras.metrics.PrecisionAtRecall(1.5)
    with pytest.raises(ValueError, match="average"):
        keras.metrics.F1Score(average="sum")
    with pytest.raises(ValueError, match="beta"):
        keras.metrics.FBetaScore(beta=2)
    with pytest.raises(ValueError, match="2D inputs"):
        keras.metrics.F1Score()(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="out of range"):
        keras.metrics.IoU(2, [0, 3])
    with pytest.raises(errors.InvalidArgumentError, match="out of bound"):
        keras.metrics.MeanIoU(2)([0, 5], [0, 1])
    with pytest.raises(errors.InvalidArgumentError, match="non-negative"):
        keras.metrics.AUC(label_weights=[1.0, -1.0])
    with pytest.raises(ValueError, match="incompatible"):
        keras.metrics.TruePositives()(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="must always have the same shape"):
        mt = keras.metrics.MeanTensor()
        mt.update_state(np.ones(3))
        mt.update_state(np.ones(4))
