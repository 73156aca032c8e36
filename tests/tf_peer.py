"""The TensorFlow peer of the interop tests: this interpreter when it has TensorFlow, else
the Python named in MIXPREC_TF_PYTHON (e.g. a venv with tensorflow-cpu and tf-keras); the
calling test skips when there is neither."""

import importlib.util
import os
import sys

import pytest


def tf_python():
    if importlib.util.find_spec("tensorflow") is not None:
        return sys.executable
    exe = os.environ.get("MIXPREC_TF_PYTHON")
    if exe and os.path.exists(exe):
        return exe
    pytest.skip("TensorFlow is not importable (set MIXPREC_TF_PYTHON to a Python that has it)")
