"""Shared fixtures of the foundation suite. The tolerance table lives in tolerances.py;
tests import it as ``from tolerances import assert_close`` (this directory is put on
sys.path here, since pytest runs with --import-mode=importlib)."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mixprec  # noqa: E402
from mixprec import _core  # noqa: E402


@pytest.fixture
def rng(request):
    """A NumPy generator seeded from the test's name: reproducible, different per test."""
    seed = sum(request.node.nodeid.encode()) * 7919 % (2**32)
    return np.random.default_rng(seed)


@pytest.fixture(params=["vectorised", "scalar"])
def cast_path(request):
    """Runs a test once with the run-time-selected (F16C/AVX2) casts and once with the
    scalar reference casts; restores the previous setting afterwards."""
    prev = _core.force_scalar_casts(request.param == "scalar")
    try:
        yield request.param
    finally:
        _core.force_scalar_casts(prev)


@pytest.fixture(autouse=True)
def _no_leaked_state():
    """Every test starts on the default device with vectorised casts."""
    yield
    assert _core.force_scalar_casts(False) is False, "a test left force_scalar_casts on"


def pytest_report_header(config):
    return "mixprec %s: casts %s, %d threads, BLAS %s" % (
        mixprec.__version__, _core.cast_isa(), _core.get_num_threads(),
        _core.blas_config().split()[0] if _core.blas_config() else "?")
