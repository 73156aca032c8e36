"""The example script: ``python -m mixprec.examples.mixed_precision_guide`` end to end on the
embedded subset (one epoch), through its ``main``."""

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys

import pytest

from mixprec.examples import mixed_precision_guide


def run(argv):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = mixed_precision_guide.main(argv)
    lines = [ln.replace("\b", "").split("\r")[-1].rstrip()
             for ln in buf.getvalue().split("\n") if ln]
    return rc, lines


def test_main_embedded_one_epoch():
    rc, lines = run(["--embedded", "--epochs", "1"])
    assert rc == 0
    text = "\n".join(lines)
    for expected in ("Compute dtype: float16", "Variable dtype: float32", "x.dtype: float16",
                     "dense1.kernel.dtype: float32", "Outputs dtype: float32",
                     "Batch size: 256", "Custom training loop (LossScaleOptimizer)"):
        assert expected in lines, expected
    assert any(ln.startswith("Data: the Fashion-MNIST subset embedded in mixprec (6000 "
                             "training, 1000 test images; requested)") for ln in lines)
    assert "Epoch 1/1" not in text  # one epoch: no header
    assert re.search(r"^19/19 \[={30}\] - \d+s \d+(s|ms|us)/step - loss: \d\.\d{4} - "
                     r"accuracy: \d\.\d{4} - val_loss: \d\.\d{4} - val_accuracy: \d\.\d{4}$",
                     text, re.M)
    assert re.search(r"^32/32 - \d+s - loss: \d\.\d{4} - accuracy: \d\.\d{4} - "
                     r"\d+(s|ms|us)/epoch - \d+(s|ms|us)/step$", text, re.M)  # tf-keras 2.21
    acc = float(re.search(r"^Test accuracy: (\S+)$", text, re.M).group(1))
    assert acc > 0.5  # one epoch on the subset; chance is 0.1
    assert re.search(r"^Loss scale after fit: \d+\.0 \(good steps: \d+\)$", text, re.M)
    m = re.search(r"^Epoch 0: loss=(\S+), test accuracy=(\S+)$", text, re.M)
    assert m and float(m.group(2)) > 0.5
    assert lines[-1] == m.group(0)


def test_main_other_policies_and_options():
    rc, lines = run(["--embedded", "--epochs", "1", "--policy", "mixed_bfloat16",
                     "--units", "16", "--batch-size", "512", "--no-custom-loop"])
    assert rc == 0
    assert "Compute dtype: bfloat16" in lines and "x.dtype: bfloat16" in lines
    assert not any(ln.startswith("Loss scale after fit") for ln in lines)  # no LSO
    assert not any("Custom training loop" in ln for ln in lines)
    assert any(ln.startswith("10/10 [") for ln in lines)  # 4800 / 512


def test_the_run_says_what_accuracy_to_expect():
    rc, lines = run(["--embedded", "--epochs", "1", "--no-custom-loop", "--units", "8"])
    assert rc == 0
    expect = [ln for ln in lines if ln.startswith("(expected on ")]
    assert expect and "0.77-0.80" in expect[0] and "MNIST" in expect[0]


def test_epochs_default_from_the_environment(monkeypatch):
    monkeypatch.setenv("MIXPREC_GUIDE_EPOCHS", "2")
    rc, lines = run(["--embedded", "--no-custom-loop", "--units", "8"])
    assert rc == 0
    assert "Epoch 2/2" in lines and "Epoch 3/3" not in lines
    monkeypatch.setenv("MIXPREC_GUIDE_EPOCHS", "zero")
    with pytest.raises(SystemExit, match="MIXPREC_GUIDE_EPOCHS must be a positive integer"):
        mixed_precision_guide.main(["--embedded"])



def test_installed_command_and_module_run_from_a_source_checkout_root(tmp_path):
    # a newcomer runs the README's command in the clone's root, where `python -m` puts the
    # working directory first on sys.path: the installed package must still be the one found
    import mixprec

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, MIXPREC_GUIDE_EPOCHS="1")
    r = subprocess.run([sys.executable, "-m", "mixprec.examples.mixed_precision_guide",
                        "--embedded", "--no-custom-loop", "--units", "8"], cwd=root, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Outputs dtype: float32" in r.stdout
    script = shutil.which("mixprec-guide", path=os.path.dirname(sys.executable))
    assert script, "the mixprec-guide console script is not installed next to %s" % sys.executable
    r = subprocess.run([script, "--help"], cwd=root, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "--epochs" in r.stdout
    assert mixprec.__file__
