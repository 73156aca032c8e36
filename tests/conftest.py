"""Fixtures for every test. The tolerance table lives in the package
(src/mixprec/testing/tolerances.py); tests import it as ``from tolerances import assert_close``
(this directory is put on sys.path here, since pytest runs with --import-mode=importlib).

Each test starts with the global random seed set to 0 (so weight initialisation and
shuffling are reproducible) and ends with the global dtype policy and random seed it found,
so a test that sets them (the guide does) cannot leak them."""

import gc
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mixprec  # noqa: E402
from mixprec import _core  # noqa: E402
from mixprec import random as _random  # noqa: E402
from mixprec.keras.mixed_precision import policy as _policy  # noqa: E402


@pytest.fixture
def policy(mixprec_policy):
    """mixprec's own suite says `policy` for the plugin's `mixprec_policy` (parametrized by
    the plugin: float32 and mixed_float16, or the test's `mixprec_policies` marker)."""
    return mixprec_policy


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


@pytest.fixture
def on_cpu():
    """New tensors go to the CPU for the test: for tests of host-memory interop (the buffer
    protocol, zero-copy NumPy views, DLPack with NumPy), which GPU tensors do not offer."""
    with mixprec.device("/CPU:0"):
        yield


@pytest.fixture
def any_gpu():
    """GPU:0 for the test: the real one when the CUDA backend is registered, otherwise the
    emulated one (the CPU kernels registered as a GPU, csrc/backend.c) — for tests of device
    plumbing (placement, copies, state on the device, host synchronisations), not of kernels.
    Yields the backend's name."""
    if _core.device_count(1) > 0:
        yield _core.backend_name(1)
        return
    _core._emulate_gpu(True)
    try:
        yield _core.backend_name(1)
    finally:
        gc.collect()
        _core._emulate_gpu(False)


def pytest_collection_modifyitems(config, items):
    """`gpu` tests need a GPU: skipped when mixprec.config.list_physical_devices('GPU') is
    empty (MIXPREC_EMULATE_GPU=1 runs them against the emulated GPU: a check of the tests
    themselves, not of any kernel)."""
    if mixprec.config.list_physical_devices("GPU"):
        return
    skip = pytest.mark.skip(reason="needs a GPU (mixprec.config.list_physical_devices('GPU') is empty)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _no_leaked_state():
    """Every test starts on the default device with vectorised casts."""
    yield
    assert _core.force_scalar_casts(False) is False, "a test left force_scalar_casts on"


@pytest.fixture(autouse=True)
def _restore_global_state():
    saved_policy = _policy._global_policy
    saved_seed = _random._global_seed
    _random.set_seed(0)
    yield
    _policy._global_policy = saved_policy
    _random.set_seed(saved_seed)
    # keras.utils.set_random_seed's generator (unseeded initializers take their seed from it)
    from mixprec.keras import backend as _kbackend

    _kbackend._SEED_GENERATOR.__dict__.pop("generator", None)


def pytest_report_header(config):
    return "mixprec %s: casts %s, %d threads, BLAS %s" % (
        mixprec.__version__, _core.cast_isa(), _core.get_num_threads(),
        _core.blas_config().split()[0] if _core.blas_config() else "?")
