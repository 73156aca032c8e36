"""mixprec.plot: the loss scale of a real fit, per-epoch curves, gradient histograms
(drawn off screen with matplotlib's Agg backend)."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras, plot
from mixprec.keras.mixed_precision.loss_scale_optimizer import LossScaleOptimizer

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _fit_with_overflows():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((48, 8)).astype("float32")
    y = rng.integers(0, 3, 48)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu",
                              dtype="mixed_float16"),
                              keras.layers.Dense(3, activation="softmax", dtype="mixed_float16")])
    opt = LossScaleOptimizer(keras.optimizers.SGD(0.01), initial_scale=2.0 ** 22,
                             dynamic_growth_steps=3)
    model.compile(opt, "sparse_categorical_crossentropy", metrics=["accuracy"])
    return model.fit(x, y, batch_size=8, epochs=2, verbose=0)


def test_plot_loss_scale_draws_a_fits_history():
    history = _fit_with_overflows()
    ax = plot.plot_loss_scale(history)
    line = ax.get_lines()[0]
    np.testing.assert_array_equal(line.get_ydata(), history.steps["loss_scale"])
    np.testing.assert_array_equal(line.get_xdata(), np.arange(1, 13))
    assert ax.get_yscale() == "log"
    # one red cross per skipped step, at that step's scale
    marks = ax.collections[0].get_offsets()
    skipped = np.flatnonzero(history.steps["skipped"])
    assert len(marks) == len(skipped) > 0
    np.testing.assert_array_equal(np.asarray(marks)[:, 0], skipped + 1)


def test_plot_loss_scale_from_a_dict_and_a_list():
    ax = plot.plot_loss_scale({"loss_scale": [4.0, 2.0, 2.0], "skipped": [True, False, False]})
    assert len(ax.collections[0].get_offsets()) == 1
    ax = plot.plot_loss_scale([1.0, 2.0, 4.0])
    np.testing.assert_array_equal(ax.get_lines()[0].get_ydata(), [1, 2, 4])
    assert not ax.collections


def test_plot_history_draws_training_and_validation_curves():
    h = {"loss": [1.0, 0.5], "accuracy": [0.5, 0.8], "val_loss": [1.1, 0.7]}
    ax = plot.plot_history(h)
    labels = [l.get_label() for l in ax.get_lines()]
    assert labels == ["loss", "val_loss", "accuracy"]


def test_plot_gradient_histogram_marks_the_float16_range():
    grads = [tf.constant(np.logspace(-30, 0, 200, base=2).astype("float32")),
             np.zeros(3), None]
    ax = plot.plot_gradient_histogram(grads, loss_scale=2.0 ** 10)
    labels = [p.get_label() for p in ax.patches if not p.get_label().startswith("_")]
    assert "flushed to 0 in float16" in labels and "float16 subnormal" in labels
    with pytest.raises(ValueError, match="float16"):
        plot.plot_gradient_histogram(grads, dtype="int8")


def test_loss_scale_of_a_fit_without_loss_scaling_says_why():
    m = keras.Sequential([keras.layers.Dense(1, input_shape=(2,))])
    m.compile("sgd", "mse")
    h = m.fit(np.ones((4, 2), np.float32), np.ones((4, 1), np.float32), verbose=0)
    with pytest.raises(ValueError, match="LossScaleOptimizer"):
        plot.plot_loss_scale(h)


def test_missing_matplotlib_says_pip_install_matplotlib(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pip install matplotlib$"):
        plot.plot_history({"loss": [1.0]})


def test_plot_underflow_marks_zero_bars_and_keeps_a_short_label(tmp_path):
    from mixprec import testing

    inputs = keras.Input(shape=(16,))
    model = keras.Model(inputs, keras.layers.Dense(4, name="d")(inputs))
    model.compile(optimizer="sgd", loss="mse")
    x = np.full((8, 16), 1e-4, np.float32)
    report = testing.gradient_underflow_report(model, x, np.zeros((8, 4), np.float32))
    ax = plot.plot_underflow(report)
    bars = [p for p in ax.patches]
    assert len(bars) == 2 * len(list(report))
    heights = [b.get_height() for b in bars]
    zeros = sum(h == 0 for h in heights)
    assert zeros > 0  # the scaled bars are all 0 here ...
    texts = [t for t in ax.texts if t.get_text() == "0"]
    assert len(texts) == zeros  # ... and each is marked
    assert len(ax.get_ylabel()) <= 24  # a long label squashed the axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["d/kernel", "d/bias"]
    ax.figure.savefig(tmp_path / "underflow.png")


def test_loss_scale_plots_of_fit_and_of_a_custom_loop_mark_skips_alike():
    """A custom loop recording as History.steps does (the scale the step ran with) draws the
    same plot as fit: a cross on the overflowing scale, the line then at its half."""
    history = _fit_with_overflows()
    a = plot.plot_loss_scale(history)
    b = plot.plot_loss_scale({"loss_scale": history.steps["loss_scale"],
                              "skipped": history.steps["skipped"]})
    np.testing.assert_array_equal(a.collections[0].get_offsets(), b.collections[0].get_offsets())
    marks = np.asarray(a.collections[0].get_offsets())
    scales = np.asarray(history.steps["loss_scale"])
    for step, value in marks:
        i = int(step) - 1
        assert value == scales[i]
        if i + 1 < len(scales):
            assert scales[i + 1] == scales[i] / 2


def test_no_message_sends_users_to_an_extra_of_an_unpublished_package():
    """mixprec is not on a package index: 'pip install "mixprec[plot]"' cannot work."""
    import pathlib

    root = pathlib.Path(plot.__file__).resolve().parents[1]
    texts = [p.read_text(errors="ignore") for p in (root / "mixprec").rglob("*.py")]
    texts += [p.read_text(errors="ignore") for p in (root / "docs").glob("*.md")]
    assert texts and not any("mixprec[plot]" in t for t in texts)
