"""Fixtures for the Keras tests: every test starts and ends with the global policy it found,
so a test that sets one cannot leak it into another."""

import pytest

from mixprec.keras.mixed_precision import policy as _policy


@pytest.fixture(autouse=True)
def _restore_global_policy():
    saved = _policy._global_policy
    yield
    _policy._global_policy = saved
