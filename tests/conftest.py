"""Fixtures for every test: each test starts with the global random seed set to 0 (so
weight initialisation and shuffling are reproducible) and ends with the global dtype policy
and random seed it found, so a test that sets them (the guide does) cannot leak them."""

import pytest

from mixprec import random as _random
from mixprec.keras.mixed_precision import policy as _policy


@pytest.fixture(autouse=True)
def _restore_global_state():
    saved_policy = _policy._global_policy
    saved_seed = _random._global_seed
    _random.set_seed(0)
    yield
    _policy._global_policy = saved_policy
    _random.set_seed(saved_seed)
