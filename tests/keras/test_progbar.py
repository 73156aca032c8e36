"""keras.utils.Progbar and the fit/evaluate progress output: exact strings of tf-keras'
text format (distribute.md §4.1), with a fake clock so times are known.

    6/6 [==============================] - 0s 54ms/step - loss: 0.7149 - accuracy: 0.7891
"""

import types

import numpy as np
import pytest

from mixprec import keras
from mixprec.keras import layers
from mixprec.keras.utils import progbar as progbar_module
from mixprec.keras.utils.progbar import Progbar


class Clock:
    def __init__(self, t=1000.0):
        self.t = t

    def time(self):
        return self.t


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(progbar_module, "time", types.SimpleNamespace(time=c.time))
    return c


def bar(current, target, width=30):
    """The expected bar, computed independently of the implementation."""
    digits = len(str(target))
    filled = width * current // target
    inside = "=" * filled if current >= target else ("=" * (filled - 1) + ">" if filled else "")
    return "%*d/%d [%s%s]" % (digits, current, target, inside, "." * (width - filled))


# --------------------------------------------------------------------------- the bar


@pytest.mark.parametrize("current,target,expected", [
    (1, 6, "1/6 [====>.........................]"),
    (3, 6, "3/6 [==============>...............]"),
    (6, 6, "6/6 [==============================]"),
    (1, 313, "  1/313 [..............................]"),
    (11, 313, " 11/313 [>.............................]"),
    (312, 313, "312/313 [============================>.]"),
    (313, 313, "313/313 [==============================]"),
    (5, 10, " 5/10 [==============>...............]"),
    (9, 10, " 9/10 [==========================>...]"),
])
def test_bar_arithmetic(clock, capsys, current, target, expected):
    assert bar(current, target) == expected
    p = Progbar(target)
    p._dynamic_display = False
    clock.t += 1
    p.update(current, finalize=False)
    out = capsys.readouterr().out
    assert out.startswith("\n" + expected + " - ")


def test_in_progress_line_with_eta_and_values(clock, capsys):
    p = Progbar(6)
    clock.t += 0.5
    p.update(1, [("loss", 0.5), ("accuracy", 0.25)])
    out = capsys.readouterr().out
    line = " - ETA: 2s - loss: 0.5000 - accuracy: 0.2500"  # 0.5 s/step x 5 steps left
    assert out == "\r" + bar(1, 6) + line
    clock.t += 0.5
    p.update(2, [("loss", 0.3), ("accuracy", 0.75)])
    out = capsys.readouterr().out
    # redrawn in place: backspaces over the previous line, then \r
    prev = len(bar(1, 6) + line)
    # non-stateful values are averaged over steps: (0.5 + 0.3) / 2, (0.25 + 0.75) / 2
    assert out == "\b" * prev + "\r" + bar(2, 6) + " - ETA: 2s - loss: 0.4000 - accuracy: 0.5000"


def test_final_line(clock, capsys):
    p = Progbar(6, stateful_metrics=["loss", "accuracy"])
    for step in range(1, 7):
        clock.t += 0.054
        p.update(step, [("loss", 0.7149), ("accuracy", 0.7891)])
    out = capsys.readouterr().out
    last = out.split("\r")[-1]
    assert last == ("6/6 [==============================] - 0s 54ms/step - loss: 0.7149 - "
                    "accuracy: 0.7891\n")


def test_shorter_redraw_is_padded(clock, capsys):
    p = Progbar(10)
    clock.t += 1
    p.update(1, [("loss", 1234.5678)])
    line1 = bar(1, 10) + " - ETA: 9s - loss: 1234.5678"
    assert capsys.readouterr().out == "\r" + line1
    clock.t += 1
    p.update(2, [("loss", -1234.5678)])  # average 0: %.4e, one character longer
    line2 = bar(2, 10) + " - ETA: 8s - loss: 0.0000e+00"
    assert capsys.readouterr().out == "\b" * len(line1) + "\r" + line2
    clock.t += 1
    p.update(3, [("loss", 9.0)])  # average 3: four characters shorter, padded with spaces
    line3 = bar(3, 10) + " - ETA: 7s - loss: 3.0000"
    assert capsys.readouterr().out == "\b" * len(line2) + "\r" + line3 + " " * 4


@pytest.mark.parametrize("value,text", [
    (0.0, "0.0000e+00"), (1e-3, "1.0000e-03"), (0.0011, "0.0011"), (-0.5, "-0.5000"),
    (-0.0005, "-5.0000e-04"), (1234.56789, "1234.5679"), (2e-7, "2.0000e-07"), (0.71494, "0.7149"),
])
def test_value_format(clock, capsys, value, text):
    p = Progbar(1, stateful_metrics=["m"])
    clock.t += 1
    p.update(1, [("m", value)])
    assert capsys.readouterr().out.endswith(" - m: %s\n" % text)


@pytest.mark.parametrize("seconds_per_step,text", [
    (0.0, "0s/step"), (2.0, "2s/step"), (1.0, "1s/step"), (0.054, "54ms/step"),
    (0.002, "2ms/step"), (0.0005, "500us/step"), (3e-6, "3us/step"),
])
def test_time_per_step_format(clock, capsys, seconds_per_step, text):
    p = Progbar(4)
    for step in range(1, 5):
        clock.t += seconds_per_step
        p.update(step)
    last = capsys.readouterr().out.split("\r")[-1]
    assert last == "%s - %ds %s\n" % (bar(4, 4), round(4 * seconds_per_step), text)


@pytest.mark.parametrize("per_step,eta", [(1.0, "9s"), (10.0, "1:30"), (500.0, "1:15:00"),
                                          (7.0, "1:03")])
def test_eta_format(clock, capsys, per_step, eta):
    p = Progbar(10)
    clock.t += per_step
    p.update(1)
    assert capsys.readouterr().out == "\r" + bar(1, 10) + " - ETA: " + eta


def test_first_step_excluded_from_the_estimate(clock, capsys):
    p = Progbar(4)
    clock.t += 10.0  # a slow first step (warm-up)
    p.update(1)
    for step in (2, 3, 4):
        clock.t += 0.02
        p.update(step)
    assert capsys.readouterr().out.endswith(" - 10s 20ms/step\n")


def test_unknown_target(clock, capsys):
    p = Progbar(None)
    clock.t += 1
    p.update(3, [("loss", 1.5)])
    assert capsys.readouterr().out == "\r      3/Unknown - 1s 333ms/step - loss: 1.5000"


def test_interval_throttles_but_final_always_prints(clock, capsys):
    p = Progbar(3, interval=0.05)
    clock.t += 1
    p.update(1)
    capsys.readouterr()
    clock.t += 0.01
    p.update(2)  # within 0.05 s of the last draw: skipped
    assert capsys.readouterr().out == ""
    clock.t += 0.01
    p.update(3)
    assert capsys.readouterr().out.endswith(bar(3, 3) + " - 1s 10ms/step\n")


def test_add_and_stateful_metrics(clock, capsys):
    p = Progbar(8, stateful_metrics=["acc"])
    clock.t += 1
    p.add(2, [("loss", 1.0), ("acc", 0.1)])
    clock.t += 1
    p.add(6, [("loss", 3.0), ("acc", 0.9)])  # loss weighted by steps: (2*1 + 6*3) / 8
    out = capsys.readouterr().out
    assert out.endswith(" - loss: 2.5000 - acc: 0.9000\n")


def test_non_dynamic_display_one_line_per_update(clock, capsys):
    p = Progbar(2)
    p._dynamic_display = False
    clock.t += 0.1
    p.update(1, [("loss", 1.0)])
    clock.t += 0.1
    p.update(2, [("loss", 1.0)])
    assert capsys.readouterr().out == ("\n" + bar(1, 2) + " - ETA: 0s - loss: 1.0000"
                                       "\n" + bar(2, 2) + " - 0s 100ms/step - loss: 1.0000\n")


def test_verbose_2_prints_only_the_final_line(clock, capsys):
    p = Progbar(6, verbose=2)
    for step in range(1, 6):
        clock.t += 0.2
        p.update(step, [("loss", 0.5)])
    assert capsys.readouterr().out == ""
    clock.t += 0.2
    p.update(6, [("loss", 0.5)])
    assert capsys.readouterr().out == "6/6 - 1s - loss: 0.5000 - 1s/epoch - 200ms/step\n"
    q = Progbar(313, verbose=2)  # evaluate's line: timed too in tf-keras 2.21
    clock.t += 1.0
    q.update(313, [("loss", 0.1547), ("accuracy", 0.9521), ("cos", -0.5)])
    # verbose=2 tests the signed value: a negative one prints %.4e, as tf-keras 2.21
    assert capsys.readouterr().out == ("313/313 - 1s - loss: 0.1547 - accuracy: 0.9521 - cos: "
                                       "-5.0000e-01 - 1s/epoch - 3ms/step\n")


def test_verbose_0_prints_nothing(clock, capsys):
    p = Progbar(2, verbose=0)
    p.update(1)
    p.update(2)
    assert capsys.readouterr().out == ""


# --------------------------------------------------------------------------- through fit


def _model():
    inputs = keras.Input(shape=(2,))
    out = layers.Activation("softmax")(layers.Dense(2)(inputs))
    model = keras.Model(inputs, out)
    model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def fmt(v):
    """tf-keras' value format: %.4f, or %.4e when |v| <= 1e-3 (an accuracy of 0 included)."""
    return "%.4f" % v if abs(v) > 1e-3 else "%.4e" % v


DATA = (np.random.default_rng(0).standard_normal((12, 2)).astype("float32"),
        np.arange(12) % 2)


@pytest.mark.parametrize("epochs", [1, 3])
def test_epoch_header_only_when_more_than_one_epoch(clock, capsys, epochs):
    history = _model().fit(*DATA, batch_size=4, epochs=epochs, verbose=1)
    out = capsys.readouterr().out
    headers = [ln for ln in out.split("\n") if ln.startswith("Epoch")]
    assert headers == (["Epoch %d/%d" % (i + 1, epochs) for i in range(epochs)]
                       if epochs > 1 else [])
    # the final line (padded over the longer in-progress one it replaces)
    finals = [ln.split("\r")[-1].rstrip(" ") for ln in out.split("\n") if "3/3 [=====" in ln]
    assert len(finals) == epochs
    for i, ln in enumerate(finals):
        assert ln == "3/3 [==============================] - 0s 0s/step - loss: %s - " \
            "accuracy: %s" % (fmt(history.history["loss"][i]), fmt(history.history["accuracy"][i]))


def test_fit_verbose_2_and_validation(clock, capsys):
    history = _model().fit(*DATA, batch_size=4, epochs=2, verbose=2, validation_split=0.25)
    out = capsys.readouterr().out
    h = history.history
    assert out == "".join(
        "Epoch %d/2\n3/3 - 0s - loss: %s - accuracy: %s - val_loss: %s - "
        "val_accuracy: %s - 0s/epoch - 0s/step\n" % (
            e + 1, fmt(h["loss"][e]), fmt(h["accuracy"][e]), fmt(h["val_loss"][e]),
            fmt(h["val_accuracy"][e]))
        for e in range(2))


def test_evaluate_verbose_1(clock, capsys):
    loss, acc = _model().evaluate(*DATA, batch_size=5, verbose=1)
    final = capsys.readouterr().out.split("\r")[-1]
    assert final == "3/3 [==============================] - 0s 0s/step - loss: %s - " \
        "accuracy: %s\n" % (fmt(loss), fmt(acc))
